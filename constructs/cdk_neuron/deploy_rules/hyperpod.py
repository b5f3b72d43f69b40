"""SageMaker HyperPod clusters (``AWS::SageMaker::Cluster``): what CreateCluster refuses that the schema allows.

The resource schema gives ``InstanceType`` no enum, lets ``OnCreate`` and ``OnInitComplete`` appear
together, accepts any ``SourceS3Uri`` and a volume key in any provisioning mode; the SageMaker API
refuses or breaks on each (sources on each rule; the facts are
:mod:`cdk_neuron.training.hyperpod_facts`). E9608's one-partition check repeats the schema's
``maxItems: 1`` for its message, which names the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding
from cdk_neuron.training import hyperpod_facts

CLUSTER = hyperpod_facts.RESOURCE_TYPE


def _groups(resource: dict[str, Any]) -> Iterator[tuple[_base.Path, dict[str, Any]]]:
    for index, group in enumerate(_base.as_list(_base.props(resource).get("InstanceGroups")) or []):
        group = _base.as_dict(group)
        if group is not None:
            yield ("Properties", "InstanceGroups", index), group


def _regions(cfn: Any) -> list[str]:
    regions = getattr(cfn, "regions", None)
    return [r for r in regions if isinstance(r, str)] if isinstance(regions, list) else []


class TrainiumInstanceType(_base.DeployRule):
    id = "E9606"
    shortdesc = "HyperPod Trainium groups use a type HyperPod accepts, in a region that sells it"
    description = (
        "CreateCluster accepts ml.trn1.32xlarge, ml.trn1n.32xlarge, ml.trn2.3xlarge and ml.trn2.48xlarge (the "
        "ClusterInstanceType enum; not ml.trn1.2xlarge, which cfn-lint's price-list enum lets through), and each "
        "only in the regions whose price list carries it (cfn-lint E3644's table), checked for every region the "
        "lint runs for. A group on a SageMaker training plan (TrainingPlanArn) skips the region check: the table "
        "follows published prices and can lag capacity that only training plans sell."
    )
    source_url = (
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html"
    )
    source_title = "Amazon SageMaker API Reference: ClusterInstanceGroupSpecification (InstanceType)"
    resource_types = (CLUSTER,)

    def match(self, cfn: Any) -> list[Any]:
        self._regions_now = _regions(cfn)
        return super().match(cfn)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        regions: list[str] = getattr(self, "_regions_now", [])
        for path, group in _groups(resource):
            instance_type = _base.as_str(group.get("InstanceType"))
            if instance_type is None or not instance_type.startswith("ml.trn"):
                continue
            catalog_name = instance_type.removeprefix("ml.")
            if catalog_name not in hyperpod_facts.HYPERPOD_TYPES:
                accepted = ", ".join(hyperpod_facts.ml_type(t) for t in hyperpod_facts.HYPERPOD_TYPES)
                yield Finding(
                    (*path, "InstanceType"),
                    f"{name}: InstanceGroups[{path[2]}].InstanceType is {instance_type}; HyperPod accepts {accepted}. "
                    "Fix: use one of them, or an EC2 engine (AWS Batch, Auto Scaling) for this type.",
                )
                continue
            if group.get("TrainingPlanArn") is not None:
                continue
            for region in regions:
                if catalog_name in hyperpod_facts.types_in(region):
                    continue
                where = ", ".join(hyperpod_facts.regions_for(catalog_name))
                yield Finding(
                    (*path, "InstanceType"),
                    f"{name}: InstanceGroups[{path[2]}].InstanceType is {instance_type}, which HyperPod does not sell "
                    f"in {region}. Fix: deploy in a region that sells it ({where}), or use a SageMaker training plan "
                    "that holds it (TrainingPlanArn).",
                )


class LifecycleBucketPrefix(_base.DeployRule):
    id = "E9607"
    shortdesc = "HyperPod lifecycle scripts readable by the nodes: a sagemaker-* bucket or an explicit grant"
    description = (
        "The managed AmazonSageMakerClusterInstanceRolePolicy reads only s3://sagemaker-* buckets, and nodes fail "
        "to start when they cannot read their scripts. A SourceS3Uri in another bucket is refused when the group's "
        "ExecutionRole is a role of the same template whose policies grant no s3:GetObject on that bucket; a role "
        "from outside the template is not judged. (AWS's HyperPod EKS sample keeps its scripts in another bucket "
        "and grants s3:GetObject explicitly: aws-samples/awsome-distributed-training "
        "1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/sagemaker-iam-role-stack.yaml.)"
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html"
    source_title = "Amazon SageMaker API Reference: ClusterLifeCycleConfig (SourceS3Uri)"
    resource_types = (CLUSTER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, group in _groups(resource):
            config = _base.as_dict(group.get("LifeCycleConfig"))
            if config is None:
                continue
            uri = self._uri(template, config.get("SourceS3Uri"))
            if uri is None or uri.startswith(f"s3://{hyperpod_facts.LIFECYCLE_BUCKET_PREFIX}"):
                continue
            role = template.target(group.get("ExecutionRole"), "AWS::IAM::Role")
            if role is None or _grants_get_object(template, role[0], role[1], config.get("SourceS3Uri")):
                continue
            yield Finding(
                (*path, "LifeCycleConfig", "SourceS3Uri"),
                f"{name}: InstanceGroups[{path[2]}].LifeCycleConfig.SourceS3Uri is {uri}; HyperPod's managed "
                f"instance policy reads only s3://sagemaker-* buckets and the execution role {role[0]} grants no "
                "s3:GetObject on this one. Fix: put the scripts in a bucket whose name starts with sagemaker-, or "
                "grant the role s3:GetObject (and s3:ListBucket) on the bucket.",
            )

    @staticmethod
    def _uri(template: _base.Template, value: Any) -> str | None:
        """The URI with a same-template bucket's literal ``BucketName`` filled in; None when unknown."""
        literal = _base.text(value)
        if literal is not None:
            return literal
        join = value.get("Fn::Join") if isinstance(value, dict) else None
        if not (isinstance(join, list) and len(join) == 2 and isinstance(join[1], list)):
            return None
        parts: list[str] = []
        for part in join[1]:
            known = _base.text(part)
            if known is None:
                bucket = template.target(part, "AWS::S3::Bucket")
                if bucket is None:
                    return None
                bucket_name = _base.props(bucket[1]).get("BucketName")
                # A bucket without a literal name gets a generated one from the stack name: not sagemaker-*.
                known = (
                    _base.text(bucket_name) if bucket_name is not None else f"<generated name of {bucket[0]}>"
                )
                if known is None:
                    return None
            parts.append(known)
        return str(join[0]).join(parts)


def _bucket_refs(template: _base.Template, uri_value: Any) -> set[str]:
    """How a policy may name the URI's bucket: its same-template logical id, or its literal name."""
    found: set[str] = set()
    join = uri_value.get("Fn::Join") if isinstance(uri_value, dict) else None
    parts = (
        join[1] if isinstance(join, list) and len(join) == 2 and isinstance(join[1], list) else [uri_value]
    )
    for part in parts:
        target = template.target(part, "AWS::S3::Bucket")
        if target is not None:
            found.add(target[0])
            literal = _base.text(_base.props(target[1]).get("BucketName"))
            if literal:
                found.add(literal)
        literal = _base.text(part)
        if literal and literal.startswith("s3://"):
            found.add(literal.removeprefix("s3://").split("/", 1)[0])
    return found


def _grants_get_object(template: _base.Template, role_id: str, role: dict[str, Any], uri_value: Any) -> bool:
    """Whether the role's inline, attached or same-template policies allow s3:GetObject on the bucket."""
    inline = [_base.as_dict(p) for p in _base.as_list(_base.props(role).get("Policies")) or []]
    documents: list[Any] = [p.get("PolicyDocument") for p in inline if p is not None]
    for _name, policy in template.of_type("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        roles = _base.as_list(_base.props(policy).get("Roles")) or []
        if any(_base.ref_target(r) == role_id for r in roles):
            documents.append(_base.props(policy).get("PolicyDocument"))
    for managed in _base.as_list(_base.props(role).get("ManagedPolicyArns")) or []:
        target = template.target(managed, "AWS::IAM::ManagedPolicy")
        if target is not None:
            documents.append(_base.props(target[1]).get("PolicyDocument"))
    names = _bucket_refs(template, uri_value)
    for document in documents:
        for statement in _base.statements(document) or []:
            if statement.get("Effect") != "Allow" or not _base.actions_cover(
                statement.get("Action"), "s3:GetObject"
            ):
                continue
            resources = json.dumps(statement.get("Resource"))
            if '"*"' in resources or any(name in resources for name in names):
                return True
    return False


class LifecycleAndHealthChecks(_base.DeployRule):
    id = "E9608"
    shortdesc = "HyperPod groups: one lifecycle entry point, InstanceConnectivity on 2+ nodes, one partition"
    description = (
        "LifeCycleConfig takes OnCreate or OnInitComplete, not both; the InstanceConnectivity deep health check "
        "tests between nodes and needs at least two; a group's SlurmConfig names at most one partition."
    )
    source_url = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-sagemaker-cluster-clusterinstancegroup.html"
    source_title = "AWS CloudFormation Template Reference: AWS::SageMaker::Cluster ClusterInstanceGroup"
    resource_types = (CLUSTER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, group in _groups(resource):
            where = f"{name}: InstanceGroups[{path[2]}]"
            config = _base.as_dict(group.get("LifeCycleConfig")) or {}
            if "OnCreate" in config and "OnInitComplete" in config:
                yield Finding(
                    (*path, "LifeCycleConfig"),
                    f"{where}.LifeCycleConfig sets OnCreate and OnInitComplete; HyperPod takes one. Fix: keep "
                    "OnInitComplete to run after HyperPod's own setup, or OnCreate to set up everything yourself.",
                )
            checks = _base.as_list(group.get("OnStartDeepHealthChecks")) or []
            count = _base.as_int(group.get("InstanceCount"))
            refusal = hyperpod_facts.connectivity_refusal(count) if count is not None else None
            if "InstanceConnectivity" in checks and refusal is not None:
                yield Finding(
                    (*path, "OnStartDeepHealthChecks"),
                    f"{where} runs InstanceConnectivity with InstanceCount {count}; {refusal}. Fix: keep "
                    "InstanceStress only, or run 2 or more nodes (0, a group scaled down, runs no check).",
                )
            slurm = _base.as_dict(group.get("SlurmConfig")) or {}
            partitions = _base.as_list(slurm.get("PartitionNames")) or []
            if len(partitions) > 1:
                yield Finding(
                    (*path, "SlurmConfig", "PartitionNames"),
                    f"{where}.SlurmConfig.PartitionNames has {len(partitions)} partitions ({', '.join(map(str, partitions))}); "
                    "a group belongs to at most one. Fix: split the group, one partition each.",
                )


class VolumeKeyNeedsContinuousProvisioning(_base.DeployRule):
    id = "E9609"
    shortdesc = "HyperPod volume keys only with NodeProvisioningMode: Continuous"
    description = (
        "HyperPod supports a customer managed KMS key on a group's root or secondary EBS volume "
        "(InstanceStorageConfigs EbsVolumeConfig RootVolume / VolumeKmsKeyId) only on clusters in continuous node "
        "provisioning mode. The API reference documents that mode for EKS-orchestrated clusters only, so on a "
        "Slurm cluster the combination is outside what AWS documents either way."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-cmk.html"
    source_title = (
        "Amazon SageMaker AI Developer Guide: Customer managed AWS KMS key encryption for SageMaker HyperPod"
    )
    resource_types = (CLUSTER,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        mode = _base.as_str(_base.props(resource).get("NodeProvisioningMode"))
        if mode == hyperpod_facts.CONTINUOUS_PROVISIONING:
            return
        for path, group in _groups(resource):
            for index, config in enumerate(_base.as_list(group.get("InstanceStorageConfigs")) or []):
                volume = _base.as_dict((_base.as_dict(config) or {}).get("EbsVolumeConfig"))
                if volume is None:
                    continue
                if volume.get("VolumeKmsKeyId") is None and volume.get("RootVolume") is not True:
                    continue
                which = "root" if volume.get("RootVolume") is True else "secondary"
                yield Finding(
                    (*path, "InstanceStorageConfigs", index, "EbsVolumeConfig"),
                    f"{name}: InstanceGroups[{path[2]}].InstanceStorageConfigs[{index}] encrypts the {which} volume "
                    f"with a customer managed key, but NodeProvisioningMode is {mode or 'not set'}; HyperPod supports "
                    "volume keys only in continuous provisioning mode. Fix: drop RootVolume/VolumeKmsKeyId (the volume "
                    "uses an AWS owned key), or set NodeProvisioningMode: Continuous on an EKS-orchestrated cluster.",
                )
