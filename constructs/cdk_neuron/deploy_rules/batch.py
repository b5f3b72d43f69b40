"""AWS Batch: compute environments, job queues and multi-node parallel job definitions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

CE = "AWS::Batch::ComputeEnvironment"
JOB_QUEUE = "AWS::Batch::JobQueue"
JOB_DEFINITION = "AWS::Batch::JobDefinition"


def _multinode_definitions(template: _base.Template) -> list[str]:
    return [
        name
        for name, res in template.of_type(JOB_DEFINITION)
        if str(_base.props(res).get("Type", "")).lower() == "multinode"
    ]


class ComputeEnvironmentSecurityGroupsWithLaunchTemplateInterfaces(_base.DeployRule):
    id = "E9101"
    shortdesc = (
        "Batch compute environment security groups and launch-template network interfaces are exclusive"
    )
    description = (
        "A managed compute environment must not set ComputeResources.SecurityGroupIds when its launch template "
        "defines NetworkInterfaces (as every EFA launch template does): Batch refuses the compute environment with "
        "'Either compute environment Security Groups or Network Interfaces in Launch template are exclusively "
        "allowed'. Put the security groups on the interfaces (Groups) and drop SecurityGroupIds."
    )
    source_url = "https://github.com/aws/aws-cdk/issues/21577"
    source_title = (
        "aws/aws-cdk#21577: Compute environments cannot be created with launch templates specifying network "
        "interface (fixed for the L2 in PR #21579)"
    )
    resource_types = (CE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        compute = _base.as_dict(_base.props(resource).get("ComputeResources")) or {}
        groups = compute.get("SecurityGroupIds")
        if groups is None or groups == []:
            return
        lt = _base.launch_template(template, compute.get("LaunchTemplate"))
        if lt is None:
            return
        interfaces = _base.as_list(_base.launch_template_data(lt[1]).get("NetworkInterfaces"))
        if not interfaces:
            return
        yield Finding(
            ("Properties", "ComputeResources", "SecurityGroupIds"),
            f"{name}: ComputeResources.SecurityGroupIds is set ({_describe(groups)}) while its launch template "
            f"{lt[0]} defines {len(interfaces)} NetworkInterfaces; Batch refuses this combination ('Either compute "
            "environment Security Groups or Network Interfaces in Launch template are exclusively allowed'). "
            "Fix: remove ComputeResources.SecurityGroupIds and keep the groups on the launch template's interfaces.",
        )


class ComputeEnvironmentLaunchTemplateVersion(_base.DeployRule):
    id = "W9102"
    shortdesc = "Batch compute environment launch template version must be pinned"
    description = (
        "A compute environment resolves a missing, $Default or $Latest launch template version once, when it is "
        "created; later launch template versions are never used. Pin the version with "
        "Fn::GetAtt <LaunchTemplate>.LatestVersionNumber so a new version updates the compute environment."
    )
    source_url = "https://github.com/aws/aws-cdk/issues/28137"
    source_title = (
        "aws/aws-cdk#28137: (aws_batch) The default value of Launch Template is default but should be latest"
    )
    resource_types = (CE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        compute = _base.as_dict(_base.props(resource).get("ComputeResources")) or {}
        spec = _base.as_dict(compute.get("LaunchTemplate"))
        if spec is None:
            return
        version = spec.get("Version")
        if version is None:
            yield Finding(
                ("Properties", "ComputeResources", "LaunchTemplate"),
                f"{name}: ComputeResources.LaunchTemplate has no Version, so Batch uses the default version that "
                "exists when the compute environment is created and never a later one. Fix: set Version to "
                "Fn::GetAtt <LaunchTemplate>.LatestVersionNumber.",
            )
        elif isinstance(version, str) and version in ("$Default", "$Latest"):
            yield Finding(
                ("Properties", "ComputeResources", "LaunchTemplate", "Version"),
                f"{name}: ComputeResources.LaunchTemplate.Version is {version!r}, which Batch resolves once at "
                "creation; later launch template versions are never used. Fix: set Version to "
                "Fn::GetAtt <LaunchTemplate>.LatestVersionNumber.",
            )


class MultiNodeOnSpotOrFargate(_base.DeployRule):
    id = "W9103"
    shortdesc = "Multi-node parallel jobs cannot run on Spot or Fargate compute environments"
    description = (
        "When a template defines a multi-node parallel job definition, every job queue in it should only order "
        "EC2 On-Demand compute environments: multi-node parallel jobs are not supported on compute environments "
        "that use Spot Instances, and Fargate does not support them at all."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html"
    source_title = "AWS Batch User Guide: Compute environment considerations for MNP with AWS Batch"
    resource_types = (JOB_QUEUE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        definitions = _multinode_definitions(template)
        if not definitions:
            return
        order = _base.as_list(_base.props(resource).get("ComputeEnvironmentOrder")) or []
        for index, entry in enumerate(order):
            entry = _base.as_dict(entry) or {}
            ce = template.target(entry.get("ComputeEnvironment"), CE)
            if ce is None:
                continue
            compute = _base.as_dict(_base.props(ce[1]).get("ComputeResources")) or {}
            kind = compute.get("Type")
            if isinstance(kind, str) and kind.upper() in ("SPOT", "FARGATE", "FARGATE_SPOT"):
                yield Finding(
                    ("Properties", "ComputeEnvironmentOrder", index, "ComputeEnvironment"),
                    f"{name}: compute environment {ce[0]} has ComputeResources.Type {kind!r}, but this template's "
                    f"multi-node parallel job definition(s) {', '.join(definitions)} cannot run on Spot or Fargate "
                    "capacity. Fix: order an EC2 (On-Demand) compute environment in this queue.",
                )


class EfaComputeEnvironmentPlacement(_base.DeployRule):
    id = "W9104"
    shortdesc = "EFA compute environments need a cluster placement group"
    description = (
        "All instances that use an EFA must be in the same cluster placement group, and MNP compute environments "
        "should use a cluster placement group in a single Availability Zone. Flags an EFA compute environment "
        "(its launch template has an efa/efa-only interface) without a PlacementGroup, or whose PlacementGroup "
        "resource in the same template has a Strategy other than cluster. Capacity Block launch templates are "
        "exempt: the block's capacity is already co-located."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/userguide/efa.html"
    source_title = "AWS Batch User Guide: Elastic Fabric Adapter"
    resource_types = (CE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        compute = _base.as_dict(_base.props(resource).get("ComputeResources")) or {}
        lt = _base.launch_template(template, compute.get("LaunchTemplate"))
        if lt is None:
            return
        data = _base.launch_template_data(lt[1])
        interfaces = _base.as_list(data.get("NetworkInterfaces")) or []
        efa = [
            i for i in interfaces if isinstance(i, dict) and str(i.get("InterfaceType", "")).startswith("efa")
        ]
        if not efa:
            return
        market = _base.as_dict(data.get("InstanceMarketOptions")) or {}
        if market.get("MarketType") == "capacity-block":
            return
        if "PlacementGroup" not in compute:
            placement = _base.as_dict(data.get("Placement")) or {}
            if "GroupName" in placement or "GroupId" in placement:
                return
            yield Finding(
                ("Properties", "ComputeResources"),
                f"{name}: launch template {lt[0]} has {len(efa)} EFA interface(s) but the compute environment has "
                "no PlacementGroup; all instances that use an EFA must be in the same cluster placement group. "
                "Fix: set ComputeResources.PlacementGroup to a placement group with Strategy cluster.",
            )
            return
        group = template.target(compute.get("PlacementGroup"), "AWS::EC2::PlacementGroup")
        if group is None:
            return
        strategy = _base.props(group[1]).get("Strategy")
        if isinstance(strategy, str) and strategy != "cluster":
            yield Finding(
                ("Properties", "ComputeResources", "PlacementGroup"),
                f"{name}: PlacementGroup {group[0]} has Strategy {strategy!r}; EFA instances must share a "
                "cluster placement group. Fix: use Strategy 'cluster'.",
            )


class MultiNodeSecurityGroupLimit(_base.DeployRule):
    id = "E9105"
    shortdesc = "MNP compute environments have at most five security groups"
    description = (
        "A compute environment that runs multi-node parallel jobs might have no more than five security groups; "
        "flags compute environments with more than five SecurityGroupIds in templates that define a multi-node "
        "job definition."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html"
    source_title = "AWS Batch User Guide: Compute environment considerations for MNP with AWS Batch"
    resource_types = (CE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        if not _multinode_definitions(template):
            return
        compute = _base.as_dict(_base.props(resource).get("ComputeResources")) or {}
        groups = _base.as_list(compute.get("SecurityGroupIds"))
        if groups is not None and len(groups) > 5:
            yield Finding(
                ("Properties", "ComputeResources", "SecurityGroupIds"),
                f"{name}: ComputeResources.SecurityGroupIds lists {len(groups)} security groups; a compute "
                "environment for multi-node parallel jobs may have at most 5. Fix: merge rules into 5 or fewer groups.",
            )


_RANGE = re.compile(r"^(\d*):(\d*)$|^(\d+)$")


def _node_range(value: Any, num_nodes: int) -> tuple[int, int] | None:
    if not isinstance(value, str):
        return None
    match = _RANGE.match(value.strip())
    if match is None:
        return None
    if match.group(3) is not None:
        index = int(match.group(3))
        return index, index
    start = int(match.group(1)) if match.group(1) else 0
    end = int(match.group(2)) if match.group(2) else num_nodes - 1
    return start, end


class MultiNodeRanges(_base.DeployRule):
    id = "E9106"
    shortdesc = "Multi-node node ranges must cover every node and use one instance type"
    description = (
        "For a multinode job definition: MainNode must be below NumNodes; each TargetNodes range must lie within "
        "0..NumNodes-1; the accumulated ranges must account for all nodes (0:n); and all node groups must use the "
        "same instance type. Nested ranges are allowed (the inner range overrides the outer)."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/APIReference/API_NodeRangeProperty.html"
    source_title = (
        "AWS Batch API Reference: NodeRangeProperty (targetNodes) and ContainerProperties (instanceType)"
    )
    resource_types = (JOB_DEFINITION,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        nodes = _base.as_dict(_base.props(resource).get("NodeProperties"))
        if nodes is None:
            return
        num_nodes = _base.as_int(nodes.get("NumNodes"))
        main = _base.as_int(nodes.get("MainNode"))
        if num_nodes is None:
            return
        if main is not None and not 0 <= main < num_nodes:
            yield Finding(
                ("Properties", "NodeProperties", "MainNode"),
                f"{name}: NodeProperties.MainNode is {main} but NumNodes is {num_nodes}; the main node index must "
                f"be between 0 and {num_nodes - 1}. Fix: set MainNode to 0.",
            )
        ranges = _base.as_list(nodes.get("NodeRangeProperties"))
        if ranges is None:
            return
        covered: set[int] = set()
        instance_types: dict[str, int] = {}
        complete = True
        for index, entry in enumerate(ranges):
            entry = _base.as_dict(entry)
            if entry is None:
                complete = False
                continue
            bounds = _node_range(entry.get("TargetNodes"), num_nodes)
            if bounds is None:
                complete = False
            else:
                start, end = bounds
                if start > end or end >= num_nodes:
                    yield Finding(
                        ("Properties", "NodeProperties", "NodeRangeProperties", index, "TargetNodes"),
                        f"{name}: TargetNodes {entry.get('TargetNodes')!r} is outside nodes 0..{num_nodes - 1} "
                        f"(NumNodes {num_nodes}). Fix: use a range within 0:{num_nodes - 1}.",
                    )
                covered.update(range(start, min(end, num_nodes - 1) + 1))
            container = _base.as_dict(entry.get("Container")) or {}
            instance_type = container.get("InstanceType")
            if isinstance(instance_type, str):
                instance_types.setdefault(instance_type, index)
        missing = sorted(set(range(num_nodes)) - covered)
        if complete and missing:
            yield Finding(
                ("Properties", "NodeProperties", "NodeRangeProperties"),
                f"{name}: node ranges leave node(s) {_spans(missing)} of {num_nodes} without properties; the "
                f"accumulated TargetNodes must account for all nodes. Fix: add a range such as '0:'.",
            )
        if len(instance_types) > 1:
            yield Finding(
                ("Properties", "NodeProperties", "NodeRangeProperties"),
                f"{name}: node groups use different instance types ({', '.join(sorted(instance_types))}); all node "
                "groups in a multi-node parallel job must use the same instance type. Fix: use one InstanceType.",
            )


def _spans(indices: list[int]) -> str:
    spans: list[str] = []
    start = prev = indices[0]
    following: list[int | None] = [*indices[1:], None]
    for i in following:
        if i is not None and i == prev + 1:
            prev = i
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(spans)


def _containers(props: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """Every container of a job definition: the single-node one and each node range's."""
    container = _base.as_dict(props.get("ContainerProperties"))
    if container is not None:
        yield ("Properties", "ContainerProperties"), container
    nodes = _base.as_dict(props.get("NodeProperties")) or {}
    for index, entry in enumerate(_base.as_list(nodes.get("NodeRangeProperties")) or []):
        entry = _base.as_dict(entry) or {}
        container = _base.as_dict(entry.get("Container"))
        if container is not None:
            yield ("Properties", "NodeProperties", "NodeRangeProperties", index, "Container"), container


_UVERBS = re.compile(r"^/dev/infiniband/uverbs\d+$")
_EFA_PERMISSIONS = {"READ", "WRITE", "MKNOD"}


class EfaDevicePermissions(_base.DeployRule):
    id = "E9107"
    shortdesc = "EFA device passthrough needs READ, WRITE and MKNOD"
    description = (
        "A job definition that passes an EFA device (/dev/infiniband/uverbsN) into the container must use the "
        "same containerPath as hostPath and, if permissions are set, set all of READ, WRITE and MKNOD."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/userguide/efa.html"
    source_title = "AWS Batch User Guide: Elastic Fabric Adapter"
    resource_types = (JOB_DEFINITION,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, container in _containers(_base.props(resource)):
            linux = _base.as_dict(container.get("LinuxParameters")) or {}
            short: list[tuple[int, str, list[str]]] = []
            for index, device in enumerate(_base.as_list(linux.get("Devices")) or []):
                device = _base.as_dict(device)
                if device is None:
                    continue
                host = device.get("HostPath")
                if not (isinstance(host, str) and _UVERBS.match(host)):
                    continue
                where = (*path, "LinuxParameters", "Devices", index)
                target = device.get("ContainerPath")
                if isinstance(target, str) and target != host:
                    yield Finding(
                        (*where, "ContainerPath"),
                        f"{name}: EFA device {host} is mapped to ContainerPath {target!r}; Batch requires the same "
                        f"path inside the container. Fix: set ContainerPath to {host!r}.",
                    )
                permissions = _base.as_list(device.get("Permissions"))
                if permissions is None or not all(isinstance(p, str) for p in permissions):
                    continue
                if not {p.upper() for p in permissions} >= _EFA_PERMISSIONS:
                    short.append((index, host, [str(p) for p in permissions]))
            if short:
                index, host, permissions = short[0]
                missing = ", ".join(sorted(_EFA_PERMISSIONS - {p.upper() for p in permissions}))
                devices = host if len(short) == 1 else f"{len(short)} EFA devices ({host} ...)"
                yield Finding(
                    (*path, "LinuxParameters", "Devices", index, "Permissions"),
                    f"{name}: {devices} have Permissions {permissions} (missing {missing}); the AWS Batch EFA "
                    "requirements say that if permissions are set they must be READ, WRITE and MKNOD. Fix: set "
                    "Permissions to ['READ', 'WRITE', 'MKNOD'] or omit them (the default is all three).",
                )


class ReservedEnvironmentVariables(_base.DeployRule):
    id = "E9108"
    shortdesc = "Job definition environment variables must not start with AWS_BATCH"
    description = (
        "AWS_BATCH is a protected environment variable prefix: job definitions and overrides cannot use it for "
        "their own variables."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/userguide/job_env_vars.html"
    source_title = "AWS Batch User Guide: AWS Batch job environment variables"
    resource_types = (JOB_DEFINITION,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, container in _containers(_base.props(resource)):
            for index, variable in enumerate(_base.as_list(container.get("Environment")) or []):
                variable = _base.as_dict(variable) or {}
                key = variable.get("Name")
                if isinstance(key, str) and key.startswith("AWS_BATCH"):
                    yield Finding(
                        (*path, "Environment", index, "Name"),
                        f"{name}: environment variable {key!r} uses the reserved AWS_BATCH prefix. Fix: rename it "
                        "(Batch sets AWS_BATCH_* itself).",
                    )


class RetryAndTimeoutLimits(_base.DeployRule):
    id = "E9109"
    shortdesc = "Job definition retry attempts 1-10 and timeout at least 60 seconds"
    description = "RetryStrategy.Attempts must be between 1 and 10, and Timeout.AttemptDurationSeconds at least 60 seconds."
    source_url = "https://docs.aws.amazon.com/batch/latest/APIReference/API_RetryStrategy.html"
    source_title = "AWS Batch API Reference: RetryStrategy (attempts) and JobTimeout (attemptDurationSeconds)"
    resource_types = (JOB_DEFINITION,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        props = _base.props(resource)
        attempts = _base.as_int((_base.as_dict(props.get("RetryStrategy")) or {}).get("Attempts"))
        if attempts is not None and not 1 <= attempts <= 10:
            yield Finding(
                ("Properties", "RetryStrategy", "Attempts"),
                f"{name}: RetryStrategy.Attempts is {attempts}; Batch accepts 1 to 10. Fix: use a value in 1..10.",
            )
        duration = _base.as_int((_base.as_dict(props.get("Timeout")) or {}).get("AttemptDurationSeconds"))
        if duration is not None and duration < 60:
            yield Finding(
                ("Properties", "Timeout", "AttemptDurationSeconds"),
                f"{name}: Timeout.AttemptDurationSeconds is {duration}; the minimum is 60 seconds. Fix: use 60 or more.",
            )


class JobQueueComputeEnvironments(_base.DeployRule):
    id = "E9110"
    shortdesc = "A job queue orders at most three compute environments of one kind"
    description = (
        "A job queue can use up to three compute environments, all EC2 (EC2 or SPOT) or all Fargate (FARGATE or "
        "FARGATE_SPOT); EC2 and Fargate compute environments can't be mixed. Order values must be distinct."
    )
    source_url = "https://docs.aws.amazon.com/batch/latest/APIReference/API_CreateJobQueue.html"
    source_title = "AWS Batch API Reference: CreateJobQueue (computeEnvironmentOrder)"
    resource_types = (JOB_QUEUE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        order = _base.as_list(_base.props(resource).get("ComputeEnvironmentOrder"))
        if order is None:
            return
        if len(order) > 3:
            yield Finding(
                ("Properties", "ComputeEnvironmentOrder"),
                f"{name}: ComputeEnvironmentOrder has {len(order)} entries; a job queue can use at most 3 compute "
                "environments. Fix: split the queue.",
            )
        kinds: dict[str, str] = {}
        orders: dict[int, int] = {}
        for index, entry in enumerate(order):
            entry = _base.as_dict(entry) or {}
            position = _base.as_int(entry.get("Order"))
            if position is not None:
                if position in orders:
                    yield Finding(
                        ("Properties", "ComputeEnvironmentOrder", index, "Order"),
                        f"{name}: Order {position} is used by entries {orders[position]} and {index}; each compute "
                        "environment needs its own order. Fix: give each entry a distinct Order.",
                    )
                orders.setdefault(position, index)
            ce = template.target(entry.get("ComputeEnvironment"), CE)
            if ce is None:
                continue
            compute = _base.as_dict(_base.props(ce[1]).get("ComputeResources")) or {}
            kind = compute.get("Type")
            if isinstance(kind, str):
                kinds[ce[0]] = "Fargate" if kind.upper().startswith("FARGATE") else "EC2"
        if len(set(kinds.values())) > 1:
            yield Finding(
                ("Properties", "ComputeEnvironmentOrder"),
                f"{name}: mixes EC2 and Fargate compute environments ({', '.join(f'{k}: {v}' for k, v in kinds.items())}); "
                "Batch refuses mixed job queues. Fix: use one queue per kind.",
            )


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} group(s)"
    return "a value"
