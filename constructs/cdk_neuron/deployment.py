"""What the ``cdk-neuron`` tools need to know about one deployment, in the library's own terms.

Plain Python (no ``aws_cdk``). The CLI plans, prices and preflights a :class:`Deployment`, never an
app's configuration: an app hands its environments to the CLI as Deployments, built from its own
configuration with the library's value objects (:class:`~cdk_neuron.training.Capacity`,
:class:`~cdk_neuron.serving.ModelSpec`, a :class:`~cdk_neuron.serving.ServingEngine`, the planner's
plans), each validated where it is defined. This repository's app does so from cdk.json
(``stacks/config.py``); see :mod:`cdk_neuron.cli.deployments` for how the CLI finds an app's
loader.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan, TrainingPlan
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.training.capacity import Capacity

PLACEHOLDER_ACCOUNT = "000000000000"
"""The account synthesis uses when none is configured and no credentials say one."""

TrainingEngineKind = Literal["batch", "auto-scaling-group", "hyperpod"]
ServingBackendKind = Literal["ec2", "sagemaker"]


@dataclass(frozen=True, kw_only=True)
class CheckpointSizing:
    """The model whose checkpoints the training writes (for the checkpoint advisor and ``cost``)."""

    model_parameters: int
    writers: int = 1
    master_weights_in_checkpoint: bool = False
    """The checkpoint also holds the fp32 master weights (NxD Training's ``use_master_weights_in_ckpt``)."""


@dataclass(frozen=True, kw_only=True)
class JobQueueLocation:
    """Where ``submit`` and ``list`` find the job queue and job definition in a deployed stack.

    By logical id when the cloud assembly names them (``cloudformation:DescribeStackResource``: the
    physical id of an ``AWS::Batch::JobQueue`` or ``AWS::Batch::JobDefinition`` is its ARN), else
    by the stack's outputs (``cloudformation:DescribeStacks``).
    """

    stack_name: str
    job_queue_output: str = "JobQueueArn"
    job_definition_output: str = "JobDefinitionArn"
    job_queue_logical_id: str | None = None
    """The job queue's logical id in the stack (read from the cloud assembly); None: use the output."""
    job_definition_logical_id: str | None = None
    """The job definition's logical id in the stack; None: use the output."""


@dataclass(frozen=True, kw_only=True)
class HyperPodLocation:
    """Where the job commands and ``scale`` find a HyperPod cluster: by logical id when the cloud
    assembly names it (``cloudformation:DescribeStackResource``), else from the stack's output
    (``cloudformation:DescribeStacks``), unless the app names the cluster itself.

    ``--cluster NAME_OR_ARN`` on the command line replaces both.
    """

    stack_name: str | None = None
    """The stack with the cluster-name output; None: ``cluster_name`` must be given."""
    cluster_name_output: str = "HyperPodClusterName"
    cluster_name: str | None = None
    """The cluster's name (or ARN) when the app knows it; None: read the stack."""
    cluster_logical_id: str | None = None
    """The ``AWS::SageMaker::Cluster``'s logical id in the stack (read from a cloud assembly): its
    physical id is the cluster's ARN (``cloudformation:DescribeStackResource``); None: use the output."""
    controller_instance_type: str = "ml.m5.xlarge"
    """The controller group's SageMaker type (``preflight`` counts it against its cluster quota)."""


@dataclass(frozen=True, kw_only=True)
class TrainingDeployment:
    """A training cluster: the instance, the most nodes it runs, its plan and how it buys capacity."""

    instance_type: str
    max_nodes: int
    plan: TrainingPlan
    capacity: Capacity = field(default_factory=Capacity.on_demand)
    engine: TrainingEngineKind = "batch"
    job_image: str | None = None
    checkpoint: CheckpointSizing | None = None
    jobs: JobQueueLocation | None = None
    """Where the Batch queue and definition are published (None: ``submit`` is not available)."""
    worker_count: int | None = None
    """HyperPod's running workers (they bill while the cluster exists); None with the other engines."""
    hyperpod: HyperPodLocation | None = None
    """Where the HyperPod cluster is found (None: the job commands need ``--cluster``)."""


@dataclass(frozen=True, kw_only=True)
class ServingDeployment:
    """An inference fleet: the backend, the engine, the model, its plan and the capacity bounds."""

    backend: ServingBackendKind
    engine: ServingEngine
    model: ModelSpec
    plan: ServingPlan
    min_capacity: int
    max_capacity: int
    warm_pool: bool = False
    warm_pool_size: int | None = None
    """Stopped instances the warm pool keeps at the minimum; None: max - min (PutWarmPool's default)."""
    instance_type: str | None = None
    """The instance type as configured; None when the planner chose the cheapest fit."""
    certificate_arn: str | None = None
    """The ACM certificate of the EC2 fleet's HTTPS listener (None: HTTP inside the VPC)."""
    token_secret: str | None = None
    """The Secrets Manager secret (name or ARN) holding the Hugging Face token the nodes read."""
    image: str | None = None
    """The serving container image as synthesized (read from a cloud assembly); None: the engine's
    image (``engine.image`` on EC2, ``engine.sagemaker_image`` on SageMaker)."""
    availability_zones: tuple[str, ...] = ()
    """AZ names the fleet is placed in, when known by name only (read from a cloud assembly); empty:
    the fleet spans the deployment's ``az_ids``."""
    artifact_manifest: ArtifactManifest | None = None
    """The local copy of the artifact's manifest the app checks the fleet against at synthesis (cdk.json
    ``serving.model.artifact_manifest``); preflight compares it with the one in S3. None: no copy."""

    @property
    def resolved_instance_type(self) -> str:
        """The EC2 name of the instance type the plan uses (``inf2.xlarge``, also for SageMaker)."""
        return self.plan.instance_type


@dataclass(frozen=True, kw_only=True)
class CompilationDeployment:
    """A ModelCompilation task (:mod:`cdk_neuron.compilation`): where ``cdk-neuron compile`` runs it."""

    stack_name: str
    runs_on: Literal["fargate", "training-cluster"] = "fargate"
    """``fargate``: a ModelCompilation task (``ecs:RunTask``); ``training-cluster``: a BatchModelCompilation
    job on the training cluster (``batch:SubmitJob``)."""
    cluster_logical_id: str = ""
    task_definition_logical_id: str = ""
    security_group_logical_id: str = ""
    subnets: tuple[object, ...] = ()
    """Each a literal subnet id or the template's ``{"Ref": logical id}`` of a subnet in the stack (Fargate)."""
    job_queue_logical_id: str = ""
    """The compile job queue (training-cluster)."""
    job_definition_logical_id: str = ""
    """The compile job definition (training-cluster)."""
    instance_type: str | None = None
    """The instance a training-cluster compile runs on (its facts size the export and its price the compile)."""
    engine: str = "optimum-neuron"
    checkpoints: bool = False
    """Whether the CheckpointStore is mounted (``checkpoint:`` sources)."""
    image: str | None = None
    """The image the task's export container runs (``<registry>/<repository>:<tag>``); None in records
    written before it was kept."""
    artifact_bucket: str | None = None
    """The bucket the task writes to; None when its name is a token or the record predates it."""
    artifact_prefix: str | None = None
    """The key prefix the task is granted (``compiled/``); None in records written before it was kept."""
    aws_cli_image: str | None = None
    """The fetch and upload steps' image (on the training cluster: its job image); None when unknown at synthesis."""
    aws_cli_cache_repository: str | None = None
    """The ECR pull-through cache repository that image comes through; None for an image used as is."""
    internet: bool = True
    """Whether the task's subnets route to the internet (a NAT): Hub sources need it."""


@dataclass(frozen=True, kw_only=True)
class StorageDeployment:
    one_zone: bool = False
    """An EFS One Zone checkpoint file system (priced at the Standard rate: no One Zone price on record)."""


@dataclass(frozen=True, kw_only=True)
class NetworkDeployment:
    """What the VPC bills by the hour: NAT devices and interface endpoints."""

    nat_gateways: int = 0
    """NAT devices (gateways, or instances when ``nat_instance_type`` is set)."""
    nat_instance_type: str | None = None
    interface_endpoints: tuple[str, ...] = ()
    """Service names (``ecr.api``) of the interface endpoints; the S3 gateway endpoint is free."""
    endpoint_azs: int = 0
    """AZs each interface endpoint is placed in (each is billed)."""


@dataclass(frozen=True, kw_only=True)
class StandingResources:
    """What bills by the month whatever runs: keys, alarms, dashboards, load balancers."""

    kms_keys: tuple[str, ...] = ()
    """What each customer-managed key protects."""
    alarms: int = 0
    dashboards: int = 0
    load_balancers: int = 0
    log_groups: int = 0
    """CloudWatch Logs groups (billed per GB ingested and stored: listed, not priced)."""
    flow_logs: int = 0
    """VPC flow logs (billed as the log data they deliver: listed, not priced)."""


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """One environment as the tools see it: where it deploys and what runs there."""

    name: str
    region: str
    az_ids: tuple[str, ...]
    """AZ IDs; the first is the training AZ. Empty when unknown (a cloud assembly whose AZs are
    tokens until deployment): the checks that need them then say so instead of failing."""
    training: TrainingDeployment | None = None
    """The training cluster; None when the deployment has none."""
    serving: ServingDeployment | None = None
    """The inference fleet; None when the deployment has none."""
    compilation: CompilationDeployment | None = None
    """The ModelCompilation task that compiles for the fleet; None when the app has none."""
    account: str | None = None
    """As configured; :meth:`resolve_account` applies the fallbacks."""
    storage: StorageDeployment = StorageDeployment()
    network: NetworkDeployment = NetworkDeployment()
    standing: StandingResources = StandingResources()
    construct_paths: tuple[str, ...] = ()
    """Construct paths of the stacks and workloads it was read from (a cloud assembly); empty for
    deployments an app's loader builds. ``--path`` selects by them."""
    ami_release: str | None = None
    """The Neuron AMI release the nodes boot (:mod:`cdk_neuron.ami`); None when unknown, or when they
    boot an AMI of their own."""

    def __post_init__(self) -> None:
        if self.training is None and self.serving is None:
            raise NeuronConfigError(
                f"{self.name}", None, "a deployment needs a training cluster, an inference fleet or both"
            )

    @property
    def training_az_id(self) -> str | None:
        """Training runs in one AZ (cluster placement group, EFA): the first AZ ID; None when unknown."""
        return self.az_ids[0] if self.az_ids else None

    def resolve_account(self, environ: Mapping[str, str] | None = None) -> str:
        """The configured account, else ``$CDK_DEFAULT_ACCOUNT``, else :data:`PLACEHOLDER_ACCOUNT`."""
        if self.account:
            return self.account
        environ = os.environ if environ is None else environ
        return environ.get("CDK_DEFAULT_ACCOUNT") or PLACEHOLDER_ACCOUNT


__all__ = [
    "PLACEHOLDER_ACCOUNT",
    "CheckpointSizing",
    "Deployment",
    "HyperPodLocation",
    "JobQueueLocation",
    "NetworkDeployment",
    "ServingDeployment",
    "StandingResources",
    "StorageDeployment",
    "TrainingDeployment",
]
