"""What the services do with an update, where the resource schemas cannot say it.

A schema knows which properties replace a resource. It does not know that a changed launch
template makes an Auto Scaling group with ``AutoScalingReplacingUpdate`` build a whole new group,
that a changed AMI makes AWS Batch replace every instance under running jobs, or that SageMaker
refuses to change the instance type of a variant Application Auto Scaling manages. Each rule here
encodes one such behaviour, with the page it comes from. Adding a service rule: write a function
with the :data:`ServiceRule` signature and list it in :data:`SERVICE_RULES` under its type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

READ_ON = "2026-12-01"


@dataclass(frozen=True)
class Source:
    title: str
    url: str
    read_on: str = READ_ON

    def cite(self) -> str:
        return f"{self.title}, {self.url} (read {self.read_on})"


UPDATE_POLICY = Source(
    "UpdatePolicy attribute, CloudFormation template reference",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-updatepolicy.html",
)
CREATION_POLICY = Source(
    "CreationPolicy attribute, CloudFormation template reference",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-creationpolicy.html",
)
INSTANCE_REFRESH = Source(
    "RefreshPreferences, Amazon EC2 Auto Scaling API Reference (MinHealthyPercentage default 90; "
    "MaxHealthyPercentage 100 to 200, over 100 launches before it terminates)",
    "https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RefreshPreferences.html",
)
BATCH_UPDATES = Source(
    "Updating compute environments, AWS Batch User Guide",
    "https://docs.aws.amazon.com/batch/latest/userguide/updating-compute-environments.html",
)
BATCH_INFRASTRUCTURE_UPDATES = Source(
    "Perform infrastructure updates, AWS Batch User Guide",
    "https://docs.aws.amazon.com/batch/latest/userguide/infrastructure-updates.html",
)
KMS_KEY = Source(
    "AWS::KMS::Key, CloudFormation template reference (a change of KeySpec, KeyUsage, Origin or MultiRegion "
    "on an existing key fails, whatever the UpdateReplacePolicy)",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-kms-key.html",
)
BATCH_UPDATE_POLICY = Source(
    "UpdatePolicy, AWS Batch API Reference (jobExecutionTimeoutMinutes: 1 to 7200, default 30)",
    "https://docs.aws.amazon.com/batch/latest/APIReference/API_UpdatePolicy.html",
)
BATCH_REPLACE = Source(
    "AWS::Batch::ComputeEnvironment ReplaceComputeEnvironment, CloudFormation template reference",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-batch-computeenvironment.html",
)
SAGEMAKER_SCALING_UPDATE = Source(
    "Update endpoints that use auto scaling, Amazon SageMaker AI Developer Guide",
    "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html",
)
SAGEMAKER_UPDATE = Source(
    "UpdateEndpoint, Amazon SageMaker API Reference",
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateEndpoint.html",
)
HYPERPOD_UPDATE = Source(
    "UpdateCluster, Amazon SageMaker API Reference",
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html",
)
HYPERPOD_LIFECYCLE_UPDATE = Source(
    "Update a cluster to run a new or updated lifecycle script, Amazon SageMaker AI Developer Guide",
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-lifecycle-best-practices-slurm-slurm-update-cluster-lifecycle.html",
)
HYPERPOD_CMK = Source(
    "Customer managed AWS KMS key encryption for SageMaker HyperPod, Amazon SageMaker AI Developer Guide "
    '("KMS key transition isn\'t currently supported")',
    "https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-cmk.html",
)
NAME_TYPE = Source(
    'Name type, CloudFormation template reference ("If you specify a name, you cannot perform updates that '
    'require replacement of this resource")',
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html",
)
DELETION_POLICY = Source(
    "DeletionPolicy attribute, CloudFormation template reference",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-deletionpolicy.html",
)

# What each stateful type holds: what a replacement or deletion loses. A type listed here is what
# "no common change replaces or deletes a stateful resource" protects.
STATEFUL: Mapping[str, str] = {
    "AWS::EFS::FileSystem": "its files",
    "AWS::FSx::FileSystem": "its files",
    "AWS::S3::Bucket": "its objects",
    "AWS::KMS::Key": "its key material: whatever it encrypted becomes unreadable once it is deleted",
    "AWS::Backup::BackupVault": "its recovery points",
    "AWS::Logs::LogGroup": "its log events",
    "AWS::DynamoDB::Table": "its items",
    "AWS::RDS::DBInstance": "its databases",
    "AWS::RDS::DBCluster": "its databases",
    "AWS::ECR::Repository": "its images",
    "AWS::EC2::Volume": "its blocks",
}

# Attributes whose value changes when the resource is updated in place (not only when it is
# replaced): a launch template's update is a new version.
VERSIONED_ATTRIBUTES: frozenset[tuple[str, str]] = frozenset(
    {
        ("AWS::EC2::LaunchTemplate", "LatestVersionNumber"),
        ("AWS::EC2::LaunchTemplate", "DefaultVersionNumber"),
    }
)

# Compute: named in "what restarts" when it is replaced or removed.
COMPUTE: Mapping[str, tuple[str, str]] = {
    # type: (what runs, what a replacement adds to "restarts")
    "AWS::EC2::Instance": ("the instance", ""),
    "AWS::AutoScaling::AutoScalingGroup": ("every instance of the group", ""),
    "AWS::AutoScaling::WarmPool": (
        "the warm pool",
        ": the new group's pool starts empty and fills once the group is in service, so scale-outs meanwhile "
        "start cold",
    ),
    "AWS::Batch::ComputeEnvironment": ("every instance of the compute environment", ""),
    "AWS::SageMaker::Endpoint": ("the endpoint", ": a new one (new name) serves once it is in service"),
    "AWS::SageMaker::Cluster": (
        "every node of the HyperPod cluster",
        ": a new cluster (new controller, empty Slurm queue) is created and the old one deleted; running and "
        "queued jobs are lost, only checkpoints on shared storage survive",
    ),
    "AWS::EC2::NatGateway": (
        "the NAT gateway",
        ": private subnets lose internet egress until the new one is up",
    ),
    # Not compute, but what runs through them stops: NFS clients keep a mount target's address, and a
    # load balancer's clients connect to a listener's port.
    "AWS::EFS::MountTarget": (
        "every NFS mount through it",
        ": clients mounted through the old mount target (running jobs, instances) lose their mount when it is "
        "deleted at clean-up; only new mounts reach the new one",
    ),
    "AWS::EFS::AccessPoint": (
        "every NFS mount through it",
        ": clients mounted through the old access point (running jobs) lose their mount when it is deleted "
        "at clean-up; drain the job queue first",
    ),
    "AWS::ElasticLoadBalancingV2::Listener": ("every connection to the listener's port", ""),
}
"""What runs in a resource of each type: what its replacement restarts, its removal stops."""


def replaced_restarts(kind: str) -> str | None:
    """What replacing a resource of ``kind`` restarts, or None: it runs nothing."""
    what, note = COMPUTE.get(kind, (None, ""))
    return what + note if what else None


def removed_stops(kind: str) -> str | None:
    """What removing a resource of ``kind`` from the stack stops, or None."""
    return f"removed from the stack: {COMPUTE[kind][0]} stops" if kind in COMPUTE else None


@dataclass(frozen=True)
class ServiceEffect:
    """What a service does with an update that the schema calls in-place."""

    source: Source
    replaces: bool = False
    restarts: str | None = None
    fails: str | None = None


Properties = Mapping[str, Any]
Path = tuple[str | int, ...]
ServiceRule = Callable[[Mapping[str, Any], Mapping[str, Any], frozenset[Path]], "ServiceEffect | None"]
"""(resource before, resource after, changed property paths) -> the service's behaviour, or None."""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _props(resource: Mapping[str, Any]) -> Properties:
    return _mapping(resource.get("Properties"))


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


# EC2 Auto Scaling: "AutoScalingReplacingUpdate and AutoScalingRollingUpdate apply only when you
# do one or more of the following: change the group's AWS::EC2::LaunchTemplate, ... change the
# group's VPCZoneIdentifier property, ... change the group's MixedInstancesPolicy, ... PlacementGroup"
# (UPDATE_POLICY).
ASG_UPDATE_TRIGGERS = frozenset(
    {
        "LaunchConfigurationName",
        "LaunchTemplate",
        "MixedInstancesPolicy",
        "PlacementGroup",
        "VPCZoneIdentifier",
    }
)


def auto_scaling_group(
    before: Mapping[str, Any], after: Mapping[str, Any], changed: frozenset[Path]
) -> ServiceEffect | None:
    """A replacing update builds a new group; an instance refresh or a rolling update replaces the
    instances of the group in place."""
    if not {path[0] for path in changed} & ASG_UPDATE_TRIGGERS:
        return None
    policy = _mapping(after.get("UpdatePolicy"))
    props = _props(after)
    replacing = _mapping(policy.get("AutoScalingReplacingUpdate"))
    if _truthy(replacing.get("WillReplace")):
        desired = props.get("DesiredCapacity")
        if desired is None:
            start = (
                f"the new group starts at MinSize {props.get('MinSize')}: any capacity above it is gone at "
                "the swap"
            )
        elif isinstance(desired, str | int):
            start = f"the new group starts at DesiredCapacity {desired}"
        else:
            start = (
                "the new group starts at the capacity the running group has (DesiredCapacity read at deploy)"
            )
        creation = _mapping(after.get("CreationPolicy"))
        percent = _mapping(creation.get("AutoScalingCreationPolicy")).get("MinSuccessfulInstancesPercent")
        count = _mapping(creation.get("ResourceSignal")).get("Count")
        if percent is not None:
            ready = f"{percent}% of its instances have signalled ready"
        elif count is not None:
            ready = f"{count} instance(s) have signalled ready"
        else:
            ready = "it is created (no readiness signal is awaited)"
        return ServiceEffect(
            UPDATE_POLICY,
            replaces=True,
            restarts=f"a new Auto Scaling group replaces the old one; {start}; the old group is deleted once {ready}",
        )
    refresh = policy.get("AutoScalingInstanceRefresh")
    if isinstance(refresh, dict):
        preferences = _mapping(refresh.get("Preferences"))
        low = preferences.get("MinHealthyPercentage", 90)
        high = preferences.get("MaxHealthyPercentage", 100)
        order = (
            "launching each replacement before terminating the instance it replaces"
            if (_number(high) or 100) > 100
            else "terminating before launching"
        )
        return ServiceEffect(
            INSTANCE_REFRESH,
            restarts=f"every instance, by an instance refresh keeping {low}% to {high}% of the desired capacity "
            f"healthy, {order}; the group and its capacity stay",
        )
    rolling = policy.get("AutoScalingRollingUpdate")
    if isinstance(rolling, dict):
        return ServiceEffect(
            UPDATE_POLICY,
            restarts=f"every instance, {rolling.get('MaxBatchSize', 1)} at a time, keeping "
            f"{rolling.get('MinInstancesInService', 0)} in service (rolling update)",
        )
    return ServiceEffect(
        UPDATE_POLICY,
        restarts="nothing at once: running instances keep the old configuration until they are replaced",
    )


# AWS Batch: "infrastructure updates" replace the instances; scaling updates (vCPUs, state, service
# role) do not (BATCH_UPDATES).
BATCH_INFRASTRUCTURE = frozenset(
    {
        "AllocationStrategy",
        "BidPercentage",
        "Ec2Configuration",
        "Ec2KeyPair",
        "ImageId",
        "InstanceRole",
        "InstanceTypes",
        "LaunchTemplate",
        "PlacementGroup",
        "SecurityGroupIds",
        "Subnets",
        "Tags",
        "Type",
        "UpdateToLatestImageVersion",
    }
)
BATCH_DEFAULT_JOB_MINUTES = 30
# "Infrastructure updates require the AWSServiceRoleForBatch service-linked role and an allocation
# strategy of BEST_FIT_PROGRESSIVE, SPOT_CAPACITY_OPTIMIZED, or SPOT_PRICE_CAPACITY_OPTIMIZED"
# (BATCH_INFRASTRUCTURE_UPDATES); BEST_FIT is AllocationStrategy's default.
BATCH_INFRASTRUCTURE_STRATEGIES = frozenset(
    {"BEST_FIT_PROGRESSIVE", "SPOT_CAPACITY_OPTIMIZED", "SPOT_PRICE_CAPACITY_OPTIMIZED"}
)


def batch_compute_environment(
    before: Mapping[str, Any], after: Mapping[str, Any], changed: frozenset[Path]
) -> ServiceEffect | None:
    """An infrastructure update: Batch replaces every instance, and running jobs get a deadline."""
    infrastructure = sorted(
        {
            str(p[1])
            for p in changed
            if len(p) > 1 and p[0] == "ComputeResources" and p[1] in BATCH_INFRASTRUCTURE
        }
    )
    if not infrastructure:
        return None
    props = _props(after)
    # ReplaceComputeEnvironment defaults to true: then CloudFormation replaces the whole compute
    # environment instead (BATCH_REPLACE).
    replace = props.get("ReplaceComputeEnvironment", True)
    if not (replace is False or str(replace).lower() == "false"):
        return ServiceEffect(
            BATCH_REPLACE,
            replaces=True,
            restarts=f"the compute environment is replaced ({', '.join(infrastructure)} changed, "
            "ReplaceComputeEnvironment is true): its jobs and instances go with it",
        )
    compute = _mapping(props.get("ComputeResources"))
    strategy = compute.get("AllocationStrategy", "BEST_FIT")
    if (isinstance(strategy, str) and strategy not in BATCH_INFRASTRUCTURE_STRATEGIES) or props.get(
        "ServiceRole"
    ) is not None:
        return ServiceEffect(
            BATCH_INFRASTRUCTURE_UPDATES,
            fails=f"an infrastructure update ({', '.join(infrastructure)}) needs the AWSServiceRoleForBatch "
            "service-linked role (no ServiceRole) and an allocation strategy of "
            f"{', '.join(sorted(BATCH_INFRASTRUCTURE_STRATEGIES))} (this one: {strategy}); with "
            "ReplaceComputeEnvironment false, Batch refuses it and the stack rolls back",
        )
    policy = _mapping(props.get("UpdatePolicy"))
    minutes = _number(policy.get("JobExecutionTimeoutMinutes")) or BATCH_DEFAULT_JOB_MINUTES
    if _truthy(policy.get("TerminateJobsOnUpdate")):
        deadline = "running jobs are terminated at once"
    else:
        deadline = f"running jobs may run {minutes} more minutes ({minutes / 60:g} h), then are terminated"
    return ServiceEffect(
        BATCH_UPDATES,
        restarts=f"a Batch infrastructure update ({', '.join(infrastructure)}): every instance is replaced; "
        f"{deadline}; queued jobs wait for the new instances",
    )


def sagemaker_endpoint(
    before: Mapping[str, Any], after: Mapping[str, Any], changed: frozenset[Path]
) -> ServiceEffect | None:
    """A new endpoint configuration: a blue/green update of the endpoint's instances."""
    if not any(path[:1] == ("EndpointConfigName",) for path in changed):
        return None
    return ServiceEffect(
        SAGEMAKER_UPDATE,
        restarts="every endpoint instance: SageMaker starts the new configuration's instances, shifts traffic, "
        "then stops the old ones (auto scaling is paused meanwhile)",
    )


def _groups_by_name(resource: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    groups = _props(resource).get("InstanceGroups")
    found: dict[str, Mapping[str, Any]] = {}
    for group in groups if isinstance(groups, list) else []:
        group = _mapping(group)
        if isinstance(group.get("InstanceGroupName"), str):
            found[group["InstanceGroupName"]] = group
    return found


def _volume_keys(group: Mapping[str, Any]) -> list[Any]:
    configs = group.get("InstanceStorageConfigs")
    return [
        _mapping(_mapping(config).get("EbsVolumeConfig")).get("VolumeKmsKeyId")
        for config in (configs if isinstance(configs, list) else [])
    ]


def _lifecycle_uris(groups: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {name: _mapping(group.get("LifeCycleConfig")).get("SourceS3Uri") for name, group in groups.items()}


def sagemaker_cluster(
    before: Mapping[str, Any], after: Mapping[str, Any], changed: frozenset[Path]
) -> ServiceEffect | None:
    """HyperPod updates its instance groups in place; fewer nodes (or a removed group) stop the jobs on the
    nodes it removes. Changed lifecycle scripts restart nothing, and reach only nodes created later."""
    if not any(path[:1] == ("InstanceGroups",) for path in changed):
        return None
    old, new = _groups_by_name(before), _groups_by_name(after)
    rekeyed = sorted(
        name for name, group in old.items() if name in new and _volume_keys(group) != _volume_keys(new[name])
    )
    if rekeyed:
        return ServiceEffect(
            HYPERPOD_CMK,
            fails=f"the volume key of {', '.join(rekeyed)} changes: HyperPod cannot move an existing group to "
            "another KMS key, and the update fails (create a new group with the key, then remove the old one)",
        )
    old_uris, new_uris = _lifecycle_uris(old), _lifecycle_uris(new)
    rescripted = sorted(name for name in old if name in new and old_uris[name] != new_uris[name])
    shrunk = [
        name
        for name, group in old.items()
        if name in new
        and (_number(new[name].get("InstanceCount")) or 0) < (_number(group.get("InstanceCount")) or 0)
    ]
    removed = [name for name in old if name not in new]
    if shrunk or removed:
        groups = ", ".join(sorted(shrunk + removed))
        return ServiceEffect(
            HYPERPOD_UPDATE,
            restarts=f"the nodes HyperPod removes from {groups}: Slurm jobs on them fail (scale down while the "
            "partition is idle, or let the jobs resume from their checkpoints)",
        )
    if rescripted:
        return ServiceEffect(
            HYPERPOD_LIFECYCLE_UPDATE,
            restarts=f"nothing now: the new lifecycle scripts of {', '.join(rescripted)} (settings, node programs, "
            "job image) reach only nodes HyperPod creates later, so running nodes keep the old ones; run "
            "`aws sagemaker update-cluster-software` to re-run them on every node (it replaces root volumes)",
        )
    return None


KMS_IMMUTABLE = ("KeySpec", "KeyUsage", "Origin", "MultiRegion")


def kms_key(
    before: Mapping[str, Any], after: Mapping[str, Any], changed: frozenset[Path]
) -> ServiceEffect | None:
    """KMS refuses to change what a key is: the update fails instead of replacing the key."""
    immutable = sorted({str(p[0]) for p in changed if p and p[0] in KMS_IMMUTABLE})
    if not immutable:
        return None
    return ServiceEffect(
        KMS_KEY,
        fails=f"{', '.join(immutable)} cannot change on an existing KMS key: the update fails (a new key, "
        "under a new logical id, and re-encrypting what the old one protects is the way)",
    )


SERVICE_RULES: Mapping[str, ServiceRule] = {
    "AWS::AutoScaling::AutoScalingGroup": auto_scaling_group,
    "AWS::Batch::ComputeEnvironment": batch_compute_environment,
    "AWS::KMS::Key": kms_key,
    "AWS::SageMaker::Endpoint": sagemaker_endpoint,
    "AWS::SageMaker::Cluster": sagemaker_cluster,
}

__all__ = [
    "ASG_UPDATE_TRIGGERS",
    "BATCH_INFRASTRUCTURE",
    "COMPUTE",
    "SERVICE_RULES",
    "STATEFUL",
    "VERSIONED_ATTRIBUTES",
    "ServiceEffect",
    "ServiceRule",
    "Source",
    "removed_stops",
    "replaced_restarts",
]
