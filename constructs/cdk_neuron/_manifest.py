"""What each construct records in the cloud assembly for the ``cdk-neuron`` CLI, in any app.

At synthesis a construct's ``node.add_metadata`` entries land in its stack's metadata file
(``<stack>.metadata.json``, named by ``additionalMetadataFile`` in ``manifest.json``), keyed by the
construct path, with tokens resolved to CloudFormation intrinsics. The CLI
(:mod:`cdk_neuron.cli.assembly`) reads them back and builds :class:`~cdk_neuron.deployment.Deployment`
objects: an app needs no configuration file of ours for ``plan``, ``cost``, ``preflight`` or the job
commands. Records hold what the tools need and nothing secret: instance types, AZ IDs, capacity,
plans, the model, and the logical ids of the job queue and job definition (the CLI turns them into
ARNs with ``cloudformation:DescribeStackResource``).

The same records also go into the stack's template, under the ``cdk-neuron:workloads`` key of its
``Metadata`` section (construct path -> record), because a cloud assembly is gone once it is deployed
and the template is not: CloudFormation's ``GetTemplate`` returns it, so ``cdk-neuron impact
--deployed`` prices what is deployed against a new synthesis (the cost change ``make deploy`` shows).
The template ``Metadata`` section holds arbitrary JSON that CloudFormation does not interpret
("Metadata", AWS CloudFormation User Guide,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/metadata-section-structure.html,
read 2026-12-02).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

import aws_cdk as cdk
import jsii
from constructs import Construct

if TYPE_CHECKING:
    from cdk_neuron.planner import ServingPlan, TrainingPlan

WORKLOAD_METADATA = "cdk-neuron:workload"
"""The metadata type of every record."""
TEMPLATE_METADATA = "cdk-neuron:workloads"
"""The key of the template's ``Metadata`` section that holds the stack's records, by construct path."""
RECORD_VERSION = 1


class Capacity(Protocol):
    """What a training record keeps of :class:`~cdk_neuron.training.Capacity` (read, not imported:
    this module stands under the construct packages that record)."""

    @property
    def kind(self) -> str: ...
    @property
    def reservation_id(self) -> str | None: ...
    @property
    def resource_group_arn(self) -> str | None: ...
    @property
    def placement_group_name(self) -> str | None: ...
    @property
    def training_plan_arn(self) -> str | None: ...


class ModelSpec(Protocol):
    """What a serving record keeps of :class:`~cdk_neuron.serving.ModelSpec`."""

    @property
    def model_id(self) -> str | None: ...
    @property
    def artifact_uri(self) -> str | None: ...
    @property
    def parameters(self) -> int: ...
    @property
    def dtype(self) -> str: ...
    @property
    def sequence_length(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def tensor_parallel(self) -> int | None: ...


def _literal(value: object) -> object:
    """A value the record can keep: literals as they are, tokens (unknown until deployment) as None.

    CDK leaves None values out of metadata, so readers treat a missing key as None.
    """
    if isinstance(value, str) and cdk.Token.is_unresolved(value):
        return None
    return value


def _stack_records(stack: cdk.Stack) -> dict[str, Any]:
    """Every record of the constructs in ``stack`` (not in a nested stack), by construct path."""
    found: dict[str, Any] = {}
    for node in stack.node.find_all():
        if cdk.Stack.of(node).node.path != stack.node.path:
            continue
        for entry in node.node.metadata:
            if entry.type == WORKLOAD_METADATA:
                found["/" + node.node.path] = entry.data
    return found


@jsii.implements(cdk.IResolvable)
class _StackRecords:
    """The template's records, resolved when the template is rendered (after every construct of the
    stack has recorded itself)."""

    def __init__(self, stack: cdk.Stack) -> None:
        self._stack = stack

    @property
    def creation_stack(self) -> list[str]:
        return []

    def resolve(self, context: cdk.IResolveContext) -> Any:
        return _stack_records(self._stack)

    def to_string(self) -> str:
        return cdk.Token.as_string(self)


def _record(scope: Construct, kind: str, data: dict[str, Any]) -> None:
    scope.node.add_metadata(WORKLOAD_METADATA, {"kind": kind, "version": RECORD_VERSION, **data})
    stack = cdk.Stack.of(scope)
    if TEMPLATE_METADATA not in (stack.template_options.metadata or {}):
        stack.add_metadata(TEMPLATE_METADATA, _StackRecords(stack))


def _plan(plan: TrainingPlan) -> dict[str, Any]:
    record: dict[str, Any] = {
        "nodes": plan.nodes,
        "tensor_parallel": plan.tensor_parallel,
        "pipeline_parallel": plan.pipeline_parallel,
        "logical_nc_config": plan.logical_nc_config,
    }
    if plan.model is not None:  # what the plan's memory estimate was made for (a plan without one has none)
        record["model"] = {k: v for k, v in dataclasses.asdict(plan.model).items() if v is not None}
        record["zero1"] = plan.zero1
        record["activation_checkpointing"] = plan.activation_checkpointing
        if plan.recompute:
            record["recompute"] = list(plan.recompute)
    return record


def _capacity(capacity: Capacity) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": capacity.kind,
        "reservation_id": capacity.reservation_id,
        "resource_group_arn": capacity.resource_group_arn,
        "placement_group_name": capacity.placement_group_name,
    }
    if capacity.training_plan_arn is not None:  # HyperPod only; other records keep their keys
        record["training_plan_arn"] = _literal(capacity.training_plan_arn)
    return record


def record_training(
    scope: Construct,
    *,
    engine: str,
    instance_type: str,
    max_nodes: int,
    plan: TrainingPlan,
    capacity: Capacity,
    availability_zone_id: str | None,
    job_image: str | None = None,
    job_queue: cdk.CfnResource | None = None,
    job_definition: cdk.CfnResource | None = None,
    cluster: cdk.CfnResource | None = None,
    worker_count: int | None = None,
    controller_instance_type: str | None = None,
) -> None:
    """A training cluster: enough to plan it, price it, preflight it and submit jobs to it.

    ``cluster``, ``worker_count`` and ``controller_instance_type`` are HyperPod's (the
    ``AWS::SageMaker::Cluster``, whose physical id is its ARN; the workers running; the controller's
    type); they are recorded only when given, so the other engines' records keep their keys.
    """
    stack = cdk.Stack.of(scope)
    hyperpod: dict[str, Any] = {}
    if cluster is not None:
        hyperpod = {
            "cluster_logical_id": stack.get_logical_id(cluster),
            "worker_count": worker_count,
            "controller_instance_type": controller_instance_type,
        }
    _record(
        scope,
        "training",
        {
            "engine": engine,
            "instance_type": instance_type,
            "max_nodes": max_nodes,
            "plan": _plan(plan),
            "capacity": _capacity(capacity),
            "availability_zone_id": _literal(availability_zone_id),
            "job_image": _literal(job_image),
            "job_queue_logical_id": stack.get_logical_id(job_queue) if job_queue is not None else None,
            "job_definition_logical_id": stack.get_logical_id(job_definition)
            if job_definition is not None
            else None,
            **hyperpod,
        },
    )


def record_serving(
    scope: Construct,
    *,
    backend: str,
    engine: str,
    model: ModelSpec,
    plan: ServingPlan,
    min_capacity: int,
    max_capacity: int,
    availability_zones: tuple[str, ...],
    warm_pool: bool = False,
    warm_pool_size: int | None = None,
) -> None:
    """An inference fleet: the model, its plan and the capacity bounds (``warm_pool_size`` only where
    given, so records without it read as before)."""
    _record(
        scope,
        "serving",
        {
            "backend": backend,
            "engine": engine,
            "model": {
                "model_id": model.model_id,
                "artifact_uri": model.artifact_uri,
                "parameters": model.parameters,
                "dtype": model.dtype,
                "sequence_length": model.sequence_length,
                "batch_size": model.batch_size,
                "tensor_parallel": model.tensor_parallel,
            },
            "instance_type": plan.instance_type,
            "tensor_parallel": plan.tensor_parallel,
            "min_capacity": min_capacity,
            "max_capacity": max_capacity,
            "availability_zones": [z for z in availability_zones if _literal(z) is not None],
            "warm_pool": warm_pool,
            **({} if warm_pool_size is None else {"warm_pool_size": warm_pool_size}),
        },
    )


def record_checkpoints(
    scope: Construct,
    *,
    one_zone: bool,
    model_parameters: int | None,
    writers: int,
    master_weights_in_checkpoint: bool = False,
) -> None:
    """A checkpoint store: its kind and, when given, the model whose checkpoints it holds.
    ``master_weights_in_checkpoint`` is recorded only when true (absent means false)."""
    data: dict[str, Any] = {"one_zone": one_zone, "model_parameters": model_parameters, "writers": writers}
    if master_weights_in_checkpoint:
        data["master_weights_in_checkpoint"] = True
    _record(scope, "checkpoints", data)


def record_compilation(
    scope: Construct,
    *,
    engine: str,
    image: str,
    cluster: cdk.IResource,
    task_definition: cdk.IResource,
    security_group: cdk.IResource,
    subnets: list[str],
    checkpoints: bool,
    artifact_bucket: str,
    artifact_prefix: str,
    aws_cli_image: str | None = None,
    aws_cli_cache_repository: str | None = None,
    internet: bool = True,
) -> None:
    """A model compilation task: what ``cdk-neuron compile`` needs for ``ecs:RunTask``, and where it
    may write (the bucket's name when it is known at synthesis, and the prefix it is granted).

    ``aws_cli_image`` is the fetch and upload steps' image, ``aws_cli_cache_repository`` its
    pull-through cache repository (None for an image given as is), ``internet`` whether the task's
    subnets route to the internet (Hub sources need it).

    The cluster, task definition and security group are kept as logical ids (the CLI turns them into
    physical ids with ``cloudformation:DescribeStackResource``); subnets as the template resolves them
    (a ``Ref`` to a subnet of this stack, an import, or a literal id).
    """

    def logical_id(resource: cdk.IResource) -> str:
        child = resource.node.default_child
        assert isinstance(child, cdk.CfnResource)
        # The element's logical id token: it resolves at synthesis, after any override_logical_id.
        return child.logical_id

    _record(
        scope,
        "compilation",
        {
            "engine": engine,
            "image": _literal(image),
            "cluster_logical_id": logical_id(cluster),
            "task_definition_logical_id": logical_id(task_definition),
            "security_group_logical_id": logical_id(security_group),
            "subnets": subnets,
            "checkpoints": checkpoints,
            "artifact_bucket": _literal(artifact_bucket),
            "artifact_prefix": artifact_prefix,
            "aws_cli_image": _literal(aws_cli_image),
            "aws_cli_cache_repository": aws_cli_cache_repository,
            "internet": internet,
        },
    )


def record_batch_compilation(
    scope: Construct,
    *,
    engine: str,
    image: str,
    job_queue: object,
    job_definition: cdk.CfnResource,
    checkpoints: bool,
    artifact_bucket: str,
    artifact_prefix: str,
    tools_image: str,
    instance_type: str,
    internet: bool,
) -> None:
    """A model compilation on a Batch training cluster (``runs_on: training-cluster``): the job queue and
    job definition ``cdk-neuron compile`` submits to (logical ids, turned into ARNs with
    ``cloudformation:DescribeStackResource``), the instance type its export runs on, and the rest as
    :func:`record_compilation` keeps it."""
    assert isinstance(job_queue, cdk.CfnResource)
    _record(
        scope,
        "compilation",
        {
            "runs_on": "training-cluster",
            "engine": engine,
            "image": _literal(image),
            "job_queue_logical_id": job_queue.logical_id,
            "job_definition_logical_id": job_definition.logical_id,
            "checkpoints": checkpoints,
            "artifact_bucket": _literal(artifact_bucket),
            "artifact_prefix": artifact_prefix,
            "tools_image": _literal(tools_image),
            "instance_type": instance_type,
            "internet": internet,
        },
    )


__all__ = [
    "RECORD_VERSION",
    "TEMPLATE_METADATA",
    "WORKLOAD_METADATA",
    "record_batch_compilation",
    "record_checkpoints",
    "record_compilation",
    "record_serving",
    "record_training",
]
