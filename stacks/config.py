"""This app's per-environment configuration in ``cdk.json`` (context key ``environments``), parsed and checked.

App code, not in the wheel. Plain Python (no ``aws_cdk``): the stacks read it, and the ``cdk-neuron``
CLI reads it through :func:`deployments` (named in cdk.json as ``cdk-neuron:deployments``), so both
refuse the same mistakes with the same message. Values the library models are parsed straight into
the library's value objects (:class:`~cdk_neuron.serving.ModelSpec`,
:class:`~cdk_neuron.training.Capacity`, a :class:`~cdk_neuron.serving.ServingEngine`, the
planner's plans), so each has exactly one validator: the library's; this module adds the cdk.json
key path to its errors and checks only what is this app's own (network, names, environments).

Every value is checked before anything is synthesized. Unknown keys, wrong types and impossible
values raise :class:`~cdk_neuron.errors.NeuronConfigError` whose ``field`` is the full key path,
e.g. ``environments.prod.training.max_nodes``. Hardware facts (offerings, plans, sizes) come from
:mod:`cdk_neuron.catalog` and :mod:`cdk_neuron.planner`; this module restates none of them.

Schema (every key not marked *required* is optional; its default is given)::

    environments.<name>:                       name: letters, digits, '-'; starts with a letter
      account: null                            12 digits; null -> $CDK_DEFAULT_ACCOUNT -> "000000000000"
      region: required                         e.g. "us-east-1"
      az_ids: required                         AZ IDs of the region (not names); the first is the training AZ
      removal_policy: "retain"                 "retain" | "destroy"; an environment named "prod" must retain
      tags: {}                                 str -> str, applied to every resource of the environment
      network: {cidr: "10.0.0.0/16", nat_gateways: 0, nat_instance_type: null, endpoint_azs: "all",
                flow_log_retention_days: 365}
                                               cidr: private /16../22; nat_instance_type: null (NAT
                                               gateways) | e.g. "t4g.nano" (NAT instances);
                                               endpoint_azs: "all" | "training" | "none" (NAT only)
      training:
        instance_type: required                a Trainium type offered in az_ids[0]
        max_nodes: required                    >= plan.nodes
        plan: {nodes: required, tensor_parallel: required, pipeline_parallel: 1, logical_nc_config: null,
               allow_unlisted_tp: false,        TP from catalog.TRAINING_TP_DEGREES unless opted in
               model: null,                     {parameters: required, layers, hidden_size,
                                                  attention_heads, kv_heads, intermediate_size,
                                                  vocab_size: null (nearest reference model),
                                                  sequence_length: 4096, micro_batch_size: 1}
               zero1: true, activation_checkpointing: "none",
               recompute: null}                 with "selective": the modules recomputed, e.g.
                                                  ["CoreAttention", "LlamaMLP"] (the default)
                                               with a model, HBM per NeuronCore is estimated and a
                                               plan that cannot fit is refused (planner.TrainingMemory);
                                               without one it is not checked
        capacity: {type: "on-demand"}          | {type: "reservation", reservation_id: "cr-...",
                                                  placement_group_name: null}
                                               | {type: "reservation-group", resource_group_arn: "arn:...",
                                                  placement_group_name: null}
                                               (placement_group_name: the existing cluster placement
                                               group the reservations were created in)
                                               | {type: "capacity-block", reservation_id: "cr-..."}
                                               (capacity-block: engine auto-scaling-group only, AWS
                                               Batch ignores the market type; instance blocks of trn1.32xlarge and
                                               trn2.48xlarge, UltraServer blocks of trn2u.48xlarge)
                                               | {type: "training-plan", training_plan_arn: "arn:..."}
                                               (training-plan: a SageMaker training plan, hyperpod only;
                                               hyperpod refuses the EC2 reservation types)
        engine: "batch"                        | "auto-scaling-group" | "hyperpod"
        job_image: required with batch        pinned tag or digest; same-region ECR when nat_gateways is 0;
                   and hyperpod                hyperpod: pinned by tag (Enroot takes no digest); every job
                                               step runs in it (srun --container-image, Pyxis); refused
                                               with auto-scaling-group (no job containers)
        worker_count: null                     hyperpod only: workers running now; null: 0 in dev
                                               (HyperPod never scales to zero: only the controller bills),
                                               max_nodes elsewhere
        efs_utils_package: required with hyperpod  path of an amazon-efs-utils .deb for Ubuntu (efs-utils'
                                               ./build-deb.sh): the lifecycle script installs it from the
                                               cluster's own bucket, so no node needs internet
        efs_utils_release: "22.04"             hyperpod only: the Ubuntu release the package was built on;
                                               a node of another release fails its lifecycle script by name
        checkpoint: null                       {model_parameters: required, writers: 1,
                                               master_weights_in_checkpoint: false}
      storage: {one_zone: false, backup_retention_days: 35, infrequent_access_after_days: 30}
      serving:
        backend: "ec2"                         | "sagemaker" (needs min_capacity >= 1)
        engine: "optimum-neuron"               | "tgi" | "vllm-neuron"
        instance_type: null                    null lets size_model choose the cheapest Inf2 that fits
        min_capacity: 1, max_capacity: 2, warm_pool: false
        certificate_arn: null, hugging_face_token_secret: null
        model: {model_id: required, parameters: required, artifact_uri: null, dtype: "bf16",
                sequence_length: 4096, batch_size: 1, tensor_parallel: null,
                host_memory_override: null,    a reason to skip the host-memory check
                artifact_manifest: null}       path (relative to the app directory) of a copy of the
                                               artifact's cdk-neuron-artifact.json: the fleet is checked
                                               against it before synthesis (shape, engine, image SDK,
                                               artifact_uri); `cdk-neuron use-artifact` writes both keys
      compilation:                             the model compilation (cdk-neuron compile), in the Training stack
        enabled: <see right>                   default true when a compile path holds the fleet's model
                                               (optimum-neuron engine, an inf2/trn1/trn2 instance type, weights
                                               that fit runs_on) and the artifact bucket is known; true
                                               otherwise is refused, naming each reason
        runs_on: null                          fargate (ModelCompilation: up to 40 GiB of weights) or
                                               training-cluster (BatchModelCompilation on the batch training
                                               cluster's instances: trn1.32xlarge up to 152 GiB); null picks
                                               fargate when the weights fit it, else training-cluster
        artifact_bucket: null                  null: the bucket of serving.model.artifact_uri, where the fleet reads
        artifact_prefix: "compiled/"           the key prefix the task may write under (each compile a new prefix)
        aws_cli_image: null                    fargate only. null: public.ecr.aws/aws-cli/aws-cli through an ECR
                                               pull-through cache (private ECR in the region: no NAT needed); or a
                                               pinned image, ECR in the region when nat_gateways is 0 (on the
                                               training cluster, fetch and upload run in training.job_image)
        ecr_public_cache_prefix: "cdk-neuron-<env>"  fargate only: the cache rule's prefix (unique in an account and region)
        log_retention_days: 30                 the compile logs (CloudWatch Logs' periods)
                                               The task runs in the checkpoint store's subnets (the training subnet
                                               with one_zone), mounts it, writes to the compile cache, compiles in
                                               the fleet's image and reads the fleet's Hub token secret where the
                                               network has a NAT (hub: sources are refused without one).
      monitoring: {alarm_email: null}
      ami_release: cdk_neuron.ami.RELEASE        the ECS-optimized AL2023 Neuron AMI release every node boots
                                               (pinned: a new AMI is a reviewed change; cdk-neuron ami)
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

from cdk_neuron import ami, catalog, planner
from cdk_neuron.compilation.job import (
    COMPILE_ENGINES,
    EXPORT_TARGET_FAMILIES,
    FARGATE_MAX_WEIGHTS_GIB,
    HostCompile,
    check_artifact_prefix,
    export_memory_refusal,
)
from cdk_neuron.deployment import (
    PLACEHOLDER_ACCOUNT,
    CheckpointSizing,
    CompilationDeployment,
    Deployment,
    HyperPodLocation,
    JobQueueLocation,
    NetworkDeployment,
    ServingDeployment,
    StandingResources,
    StorageDeployment,
    TrainingDeployment,
)
from cdk_neuron.errors import ErrorCollector, NeuronConfigError, NeuronConfigErrors, one_of
from cdk_neuron.node_programs import reach
from cdk_neuron.planner import ServingPlan, TrainingPlan
from cdk_neuron.serving import start_paths
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec, parse_s3_uri
from cdk_neuron.training import hyperpod_containers
from cdk_neuron.training.capacity import BATCH_CAPACITY_BLOCK_FIX, Capacity
from cdk_neuron.validation import (
    ACCOUNT,
    AZ_ID,
    CERTIFICATE_ARN,
    EMAIL,
    IMAGE_URI,
    S3_BUCKET_NAME,
    SECRET,
    ecr_region,
    known_region,
    pinned_image,
)

# PLACEHOLDER_ACCOUNT (cdk_neuron.deployment) keeps synthesis working without credentials (the
# stacks stay environment-specific, which AZ-ID pinning needs); a template synthesized with it must
# not be deployed: `cdk deploy` with real credentials sets CDK_DEFAULT_ACCOUNT, or set `account`.

RemovalPolicy = Literal["retain", "destroy"]
CapacityType = Literal["on-demand", "reservation", "reservation-group", "capacity-block", "training-plan"]
TrainingEngine = Literal["batch", "auto-scaling-group", "hyperpod"]
ServingBackend = Literal["ec2", "sagemaker"]
ServingEngineName = Literal["optimum-neuron", "tgi", "vllm-neuron"]
EndpointAzs = Literal["all", "training", "none"]

REMOVAL_POLICIES: tuple[RemovalPolicy, ...] = ("retain", "destroy")
CAPACITY_TYPES: tuple[CapacityType, ...] = (
    "on-demand",
    "reservation",
    "reservation-group",
    "capacity-block",
    "training-plan",
)
TRAINING_ENGINES: tuple[TrainingEngine, ...] = ("batch", "auto-scaling-group", "hyperpod")
SERVING_BACKENDS: tuple[ServingBackend, ...] = ("ec2", "sagemaker")
SERVING_ENGINES: tuple[ServingEngineName, ...] = ("optimum-neuron", "tgi", "vllm-neuron")
ENDPOINT_AZS: tuple[EndpointAzs, ...] = ("all", "training", "none")
# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy).
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
# Environments with these names hold what must survive a `cdk destroy`; "destroy" is refused for them.
PROTECTED_ENVIRONMENTS = frozenset({"prod"})
# EFS lifecycle transitions the service accepts (EFS LifecyclePolicy TransitionToIA values).
EFS_IA_DAYS = (1, 7, 14, 30, 60, 90, 180, 270, 365)

_ENV_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,63}\Z")
# ECR CreatePullThroughCacheRule ecrRepositoryPrefix (2-30 characters).
_ECR_CACHE_PREFIX = re.compile(
    r"^(?=.{2,30}\Z)(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*\Z"
)
# NAT instances: burstable or general-purpose sizes up to xlarge (a NAT needs no more, and a
# typo such as "trn1.32xlarge" must not become a NAT).
_NAT_INSTANCE_TYPE = re.compile(
    r"^(t3|t3a|t4g|m6g|m7g|c6gn|c7gn|m6i|m7i|c6i|c7i)\.(nano|micro|small|medium|large|xlarge)\Z"
)


# --------------------------------------------------------------------------------------------
# The configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """The VPC.

    ``nat_gateways`` counts the NAT devices, one per AZ from the first (aws-cdk-lib's ``natGateways``
    has the same meaning for both kinds): 0 means no internet egress, and the nodes reach AWS through
    VPC endpoints only. ``nat_instance_type`` null makes them managed NAT gateways; an instance type
    (``"t4g.nano"``) makes them NAT instances (aws-cdk-lib ``NatProvider.instance_v2``): a tenth of
    the hourly price, for environments that can live with one instance's bandwidth and no failover.
    ``endpoint_azs`` "training" puts each interface endpoint in the training AZ only (other AZs reach
    it across AZs): a saving of one endpoint-hour per AZ and service; "all" for resilience; "none"
    creates no interface endpoint at all (only with NAT, which then carries every AWS API call).
    """

    cidr: str = "10.0.0.0/16"
    nat_gateways: int = 0
    nat_instance_type: str | None = None
    endpoint_azs: EndpointAzs = "all"
    flow_log_retention_days: int = 365

    @property
    def has_internet_egress(self) -> bool:
        return self.nat_gateways > 0

    @property
    def has_interface_endpoints(self) -> bool:
        return self.endpoint_azs != "none"


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    instance_type: str
    max_nodes: int
    plan: TrainingPlan
    """The validated layout (:func:`cdk_neuron.planner.plan_training`)."""
    job_image: str | None
    """The Batch job container; None with the auto-scaling-group engine, which runs no job containers."""
    capacity: Capacity = field(default_factory=Capacity.on_demand)
    engine: TrainingEngine = "batch"
    checkpoint: CheckpointSizing | None = None
    worker_count: int | None = None
    """HyperPod's running workers (0 to max_nodes); None with the other engines."""
    efs_utils_package: str | None = None
    """HyperPod only: the amazon-efs-utils .deb its lifecycle script installs."""
    efs_utils_release: str | None = None
    """HyperPod only: the Ubuntu release (VERSION_ID) ``efs_utils_package`` was built on."""

    def training_plan(self) -> TrainingPlan:
        return self.plan


@dataclass(frozen=True, kw_only=True)
class StorageConfig:
    """The checkpoint file system. One Zone lives in the training AZ (az_ids[0])."""

    one_zone: bool = False
    backup_retention_days: int = 35
    infrequent_access_after_days: int | None = 30


@dataclass(frozen=True, kw_only=True)
class ServingConfig:
    model: ModelSpec
    engine: ServingEngine
    plan: ServingPlan
    """The model sized for ``instance_type`` (or the cheapest Neuron instance that fits)."""
    backend: ServingBackend = "ec2"
    instance_type: str | None = None
    """EC2 name (``inf2.xlarge``) for both backends; an ``ml.`` prefix in cdk.json is dropped."""
    min_capacity: int = 1
    max_capacity: int = 2
    warm_pool: bool = False
    warm_pool_size: int | None = None
    """Stopped instances the warm pool keeps at ``min_capacity`` (None: max - desired)."""
    certificate_arn: str | None = None
    hugging_face_token_secret: str | None = None
    artifact_manifest: ArtifactManifest | None = None
    """The artifact's manifest (``serving.model.artifact_manifest``), checked against this fleet."""

    def serving_plan(self) -> ServingPlan:
        return self.plan

    @property
    def resolved_instance_type(self) -> str:
        """``instance_type``, or the one the planner chose."""
        return self.plan.instance_type


CompileRunsOn = Literal["fargate", "training-cluster"]
COMPILE_RUNS_ON: tuple[CompileRunsOn, ...] = ("fargate", "training-cluster")


@dataclass(frozen=True, kw_only=True)
class CompilationConfig:
    """The environment's ModelCompilation (``compilation`` in cdk.json); None when disabled."""

    artifact_bucket: str
    artifact_prefix: str = "compiled/"
    runs_on: CompileRunsOn = "fargate"
    """``fargate`` (ModelCompilation) or ``training-cluster`` (BatchModelCompilation on the training cluster)."""
    aws_cli_image: str | None = None
    """None: the AWS CLI image through the ECR Public pull-through cache."""
    ecr_public_cache_prefix: str = "cdk-neuron-ecr-public"
    """The parser's default is per environment (:func:`default_cache_prefix`)."""
    log_retention_days: int = 30


@dataclass(frozen=True, kw_only=True)
class MonitoringConfig:
    alarm_email: str | None = None


@dataclass(frozen=True, kw_only=True)
class EnvironmentConfig:
    """One deployment environment: a region, its AZ IDs and what runs there."""

    name: str
    account: str | None
    """As configured; :meth:`resolve_account` applies the fallbacks."""
    region: str
    az_ids: tuple[str, ...]
    training: TrainingConfig
    serving: ServingConfig
    removal_policy: RemovalPolicy = "retain"
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    network: NetworkConfig = NetworkConfig()
    storage: StorageConfig = StorageConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    compilation: CompilationConfig | None = None
    """The ModelCompilation task; None when the environment has none."""
    ami_release: str = ami.RELEASE
    """The ECS-optimized AL2023 Neuron AMI release the training nodes and EC2 serving instances boot."""

    @property
    def training_az_id(self) -> str:
        """Training runs in one AZ (cluster placement group, EFA): the first configured AZ ID."""
        return self.az_ids[0]

    def resolve_account(self, environ: Mapping[str, str] | None = None) -> str:
        """The configured account, else ``$CDK_DEFAULT_ACCOUNT``, else :data:`PLACEHOLDER_ACCOUNT`."""
        if self.account:
            return self.account
        environ = os.environ if environ is None else environ
        return environ.get("CDK_DEFAULT_ACCOUNT") or PLACEHOLDER_ACCOUNT


# --------------------------------------------------------------------------------------------
# Reading raw JSON values with the key path in every error
# --------------------------------------------------------------------------------------------

_T = TypeVar("_T")
_MISSING: Any = object()


# How an error names the JSON type a key needs (the only types _Section.get is asked for).
_TYPE_NAMES: Mapping[type, str] = {
    bool: "true/false",
    int: "a whole number",
    str: "a string",
    dict: "an object",
    list: "a list",
}


def _unknown_key_fix(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed)  # best match first
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key; {hint}valid keys here: {', '.join(allowed)}"


class _Collector(ErrorCollector):
    """Runs independent parsing steps and keeps every error, so one run reports them all."""

    def section(
        self, parent: _Section, key: str, allowed: tuple[str, ...], *, required: bool = False
    ) -> _Section | None:
        """``parent``'s sub-section ``key``, its unknown keys kept as errors beside the others."""
        return self.run(lambda: parent.section(key, allowed, required=required, found=self))


class _Section:
    """A JSON object at ``path``: refuses unknown keys, hands out typed values."""

    def __init__(
        self, path: str, raw: object, allowed: tuple[str, ...], *, found: _Collector | None = None
    ) -> None:
        """With ``found``, unknown keys are kept there and the known ones still read (every mistake of
        the section in one run); without it they are refused at once."""
        if not isinstance(raw, dict):
            raise NeuronConfigError(path, raw, f"must be an object with keys {one_of(allowed)}")
        unknown = [
            NeuronConfigError(f"{path}.{key}", raw[key], _unknown_key_fix(key, allowed))
            for key in sorted(set(raw) - set(allowed))
        ]
        if unknown and found is None:
            raise NeuronConfigErrors(unknown)
        if found is not None:
            found.errors.extend(unknown)
        self.path = path
        self.raw: dict[str, Any] = {k: v for k, v in raw.items() if k in allowed}

    def field(self, key: str) -> str:
        return f"{self.path}.{key}"

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def get(self, key: str, expected: type[_T], default: Any = _MISSING) -> _T:
        """The value of ``key``; ``null`` counts as absent. Without a default the key is required."""
        value = self.raw.get(key)
        if value is None:
            if default is _MISSING:
                raise NeuronConfigError(self.field(key), None, f"required: give {_TYPE_NAMES[expected]}")
            return cast(_T, default)
        # bool is an int subclass: refuse true/false where a number is meant.
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            if expected is int and isinstance(value, float) and value.is_integer():
                return cast(_T, int(value))  # JSON writers render 8e9 as 8000000000.0
            raise NeuronConfigError(self.field(key), value, f"wrong type: must be {_TYPE_NAMES[expected]}")
        return value

    def choice(self, key: str, choices: tuple[_T, ...], default: Any = _MISSING) -> _T:
        value = self.get(key, str, default)
        if value not in choices:
            raise NeuronConfigError(self.field(key), value, f"use one of {', '.join(map(str, choices))}")
        return cast(_T, value)

    def positive_int(self, key: str, default: Any = _MISSING, *, minimum: int = 1) -> int:
        value = self.get(key, int, default)
        if value is not None and value < minimum:
            raise NeuronConfigError(self.field(key), value, f"must be a whole number >= {minimum}")
        return value

    def matching(self, key: str, pattern: re.Pattern[str], what: str, default: Any = _MISSING) -> str:
        value = self.get(key, str, default)
        if value is not None and not pattern.match(value):
            raise NeuronConfigError(self.field(key), value, f"must be {what}")
        return value

    def section(
        self, key: str, allowed: tuple[str, ...], *, required: bool = False, found: _Collector | None = None
    ) -> _Section:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise NeuronConfigError(
                    self.field(key), None, f"required: an object with keys {one_of(allowed)}"
                )
            value = {}
        return _Section(self.field(key), value, allowed, found=found)


@contextmanager
def _planner_fields(prefix: str, mapping: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a planner error under the cdk.json key path the value came from."""
    try:
        yield
    except NeuronConfigError as error:
        errors = error.errors if isinstance(error, NeuronConfigErrors) else (error,)
        prefixed = [
            NeuronConfigError(f"{prefix}.{mapping.get(e.field, e.field)}", e.value, e.fix) for e in errors
        ]
        raise (NeuronConfigErrors(prefixed) if len(prefixed) > 1 else prefixed[0]) from error


# --------------------------------------------------------------------------------------------
# Parsers, one per section
# --------------------------------------------------------------------------------------------


def _az_ids(env: _Section, region: str | None) -> tuple[str, ...]:
    """``az_ids``; with the region refused (None), only each ID's shape and the duplicates are checked."""
    raw = env.get("az_ids", list)
    path = env.field("az_ids")
    if not raw:
        raise NeuronConfigError(path, raw, "give at least one AZ ID, e.g. use1-az6")
    # AZ IDs carry a region code (use1-az6 -> use1); the catalog knows the codes of its regions.
    known_prefixes = {
        az.split("-az")[0]
        for regions in catalog.OFFERINGS.values()
        for az in (regions.get(region, ()) if region is not None else ())
    }
    found = ErrorCollector()
    for index, az_id in enumerate(raw):
        item = f"{path}[{index}]"
        if not isinstance(az_id, str) or not AZ_ID.match(az_id):
            found.add(
                NeuronConfigError(
                    item,
                    az_id,
                    "must be an AZ ID such as use1-az6 (AZ names like us-east-1a differ per account)",
                )
            )
            continue
        home = catalog.region_of_az_id(az_id)
        if home is not None and region is not None and home != region:
            found.add(NeuronConfigError(item, az_id, f"is an AZ ID of {home}, not of region {region}"))
        elif known_prefixes and az_id.split("-az")[0] not in known_prefixes:
            found.add(
                NeuronConfigError(item, az_id, f"AZ IDs of {region} start with {one_of(known_prefixes)}-az")
            )
    found.raise_if_any()
    if len(set(raw)) != len(raw):
        raise NeuronConfigError(path, raw, "lists an AZ ID twice; each subnet needs its own AZ")
    return tuple(raw)


def _tags(env: _Section) -> Mapping[str, str]:
    raw = env.get("tags", dict, {})
    found = ErrorCollector()
    for key, value in raw.items():
        item = env.field(f"tags.{key}")
        if not isinstance(value, str):
            found.add(NeuronConfigError(item, value, "wrong type: tag values must be strings"))
        elif len(value) > 256:
            found.add(NeuronConfigError(item, value, "tag values are at most 256 characters"))
        if not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
            found.add(
                NeuronConfigError(item, key, "tag keys are 1-128 characters and may not start with 'aws:'")
            )
    found.raise_if_any()
    return MappingProxyType(dict(raw))


def _cidr(section: _Section) -> ipaddress.IPv4Network:
    cidr = section.get("cidr", str, NetworkConfig.cidr)
    try:
        network = ipaddress.IPv4Network(cidr)
    except ValueError as error:
        raise NeuronConfigError(section.field("cidr"), cidr, f"not an IPv4 CIDR block ({error})") from None
    # /22 is the smallest block that still leaves every AZ a private /25 and a public /27.
    if not 16 <= network.prefixlen <= 22 or not network.is_private:
        raise NeuronConfigError(
            section.field("cidr"), cidr, "use a private (RFC 1918) block from /16 to /22, e.g. 10.40.0.0/16"
        )
    return network


def _nat_instance_type(section: _Section) -> str | None:
    nat_instance_type = section.get("nat_instance_type", str, None)
    if nat_instance_type is not None and _NAT_INSTANCE_TYPE.match(nat_instance_type) is None:
        raise NeuronConfigError(
            section.field("nat_instance_type"),
            nat_instance_type,
            "a small general-purpose EC2 type such as t4g.nano or t3.micro, or null for NAT gateways",
        )
    return nat_instance_type


def _flow_log_retention(section: _Section) -> int:
    retention = section.positive_int("flow_log_retention_days", NetworkConfig.flow_log_retention_days)
    if retention not in LOG_RETENTION_DAYS:
        raise NeuronConfigError(
            section.field("flow_log_retention_days"),
            retention,
            f"CloudWatch Logs accepts {', '.join(map(str, LOG_RETENTION_DAYS))}",
        )
    return retention


def _network(env: _Section, az_count: int | None) -> NetworkConfig:
    """The ``network`` section; without a usable az_ids (``az_count`` None) the NAT count is not
    compared with the AZs, and every other key is still read."""
    found = _Collector()
    section = found.section(
        env,
        "network",
        ("cidr", "nat_gateways", "nat_instance_type", "endpoint_azs", "flow_log_retention_days"),
    )
    found.raise_if_any()
    assert section is not None
    network = found.run(lambda: _cidr(section))
    nat = found.run(lambda: section.positive_int("nat_gateways", NetworkConfig.nat_gateways, minimum=0))
    if nat is not None and az_count is not None and nat > az_count:
        found.add(
            NeuronConfigError(
                section.field("nat_gateways"),
                nat,
                f"at most one per AZ: 0..{az_count} for {az_count} AZ ID(s)",
            )
        )
    nat_instance_type = found.run(lambda: _nat_instance_type(section))
    if nat_instance_type is not None and nat == 0:
        found.add(
            NeuronConfigError(
                section.field("nat_instance_type"),
                nat_instance_type,
                "there is no NAT to run on it: set network.nat_gateways to 1 (or more), or remove the key",
            )
        )
    endpoint_azs = found.run(lambda: section.choice("endpoint_azs", ENDPOINT_AZS, "all"))
    if endpoint_azs == "none" and nat == 0:
        found.add(
            NeuronConfigError(
                section.field("endpoint_azs"),
                endpoint_azs,
                "with network.nat_gateways 0 the nodes reach AWS only through interface endpoints: "
                "use 'training' or 'all', or add a NAT",
            )
        )
    retention = found.run(lambda: _flow_log_retention(section))
    found.raise_if_any()
    assert network is not None and nat is not None and endpoint_azs is not None and retention is not None
    return NetworkConfig(
        cidr=str(network),
        nat_gateways=nat,
        nat_instance_type=nat_instance_type,
        endpoint_azs=endpoint_azs,
        flow_log_retention_days=retention,
    )


def _capacity(training: _Section, instance: catalog.NeuronInstance) -> Capacity:
    raw = training.raw.get("capacity") or {}
    path = training.field("capacity")
    kind = _Section(
        path,
        raw,
        ("type", "reservation_id", "resource_group_arn", "placement_group_name", "training_plan_arn"),
    ).choice("type", CAPACITY_TYPES, "on-demand")
    needs: dict[CapacityType, tuple[str, ...]] = {
        "on-demand": (),
        "training-plan": ("training_plan_arn",),
        "reservation": ("reservation_id", "placement_group_name"),
        "capacity-block": ("reservation_id",),
        "reservation-group": ("resource_group_arn", "placement_group_name"),
    }
    section = _Section(path, raw, ("type", *needs[kind]))
    placement_group = section.get("placement_group_name", str, None)
    # The ids a kind needs are required here (a missing one is "required", not the string 'None');
    # the library's Capacity validates them, and its errors get the cdk.json key path.
    if kind == "reservation":
        reservation = section.get("reservation_id", str)
        with _planner_fields(section.path, {}):
            capacity = Capacity.reservation(reservation, placement_group_name=placement_group)
    elif kind == "capacity-block":
        block = section.get("reservation_id", str)
        with _planner_fields(section.path, {}):
            capacity = Capacity.capacity_block(block)
    elif kind == "reservation-group":
        group = section.get("resource_group_arn", str)
        with _planner_fields(section.path, {}):
            capacity = Capacity.reservation_group(group, placement_group_name=placement_group)
    elif kind == "training-plan":
        arn = section.get("training_plan_arn", str)
        with _planner_fields(section.path, {}):
            capacity = Capacity.training_plan(arn)
    else:
        capacity = Capacity.on_demand()
    try:
        capacity.check_instance(instance)
    except NeuronConfigError as error:
        raise NeuronConfigError(section.field("type"), kind, error.fix) from error
    return capacity


def _job_image(training: _Section, region: str | None, network: NetworkConfig | None) -> str:
    image = training.get("job_image", str)
    path = training.field("job_image")
    pinned_image(path, image)
    match = IMAGE_URI.match(image)
    if match is None:
        raise NeuronConfigError(
            path, image, "must be registry/repository:tag or registry/repository@sha256:<digest>"
        )
    if (
        region is not None
        and network is not None
        and not network.has_internet_egress
        and ecr_region(match["registry"]) != region
    ):
        raise NeuronConfigError(
            path,
            image,
            f"with network.nat_gateways 0 the nodes reach only VPC endpoints: use an ECR image in {region} "
            f"(e.g. the Neuron DLC 763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training-neuronx:<tag>) "
            "or give the VPC a NAT gateway",
        )
    return image


def _training_instance(
    section: _Section, region: str | None, az_ids: tuple[str, ...] | None
) -> catalog.NeuronInstance:
    instance_type = section.get("instance_type", str)
    with _planner_fields(section.path, {}):
        instance = catalog.get_training_instance(instance_type)
    if region is None or az_ids is None:  # refused on their own keys: the offering is not checked
        return instance
    if catalog.offering_status(instance.name, az_ids[0]) == "not-offered":
        offered = catalog.offered_az_ids(instance.name, region)
        raise NeuronConfigError(
            section.field("instance_type"),
            instance_type,
            f"not offered in the training AZ az_ids[0]={az_ids[0]}; in {region} it is offered in "
            f"{one_of(offered) if offered else 'no AZ'} (catalog offerings; preflight checks the account)",
        )
    return instance


def _training_plan(
    found: _Collector, section: _Section, instance: catalog.NeuronInstance | None, max_nodes: int | None
) -> TrainingPlan | None:
    """The ``plan`` section: each key read on its own, then planned when all of them are usable."""
    plan_section = found.section(section, "plan", _PLAN_KEYS)
    if plan_section is None:
        return None
    before = len(found.errors)
    nodes = found.run(lambda: plan_section.positive_int("nodes"))
    if nodes is not None and max_nodes is not None and nodes > max_nodes:
        found.add(
            NeuronConfigError(
                plan_section.field("nodes"), nodes, f"the plan needs more nodes than max_nodes={max_nodes}"
            )
        )
    # Read (and type-check) every key before planning: these errors already name their cdk.json path,
    # which _planner_fields would prefix a second time.
    tensor_parallel = found.run(lambda: plan_section.positive_int("tensor_parallel"))
    pipeline_parallel = found.run(lambda: plan_section.positive_int("pipeline_parallel", 1))
    logical_nc_config = found.run(lambda: plan_section.get("logical_nc_config", int, None))
    allow_unlisted_tp = found.run(lambda: plan_section.get("allow_unlisted_tp", bool, False))
    zero1 = found.run(lambda: plan_section.get("zero1", bool, True))
    checkpointing = found.run(
        lambda: plan_section.choice("activation_checkpointing", planner.ACTIVATION_CHECKPOINTING, "none")
    )
    recompute = found.run(lambda: plan_section.get("recompute", list, None))
    model = _training_model(found, plan_section)
    if len(found.errors) > before or instance is None:
        return None
    assert nodes is not None and tensor_parallel is not None and pipeline_parallel is not None
    assert zero1 is not None and checkpointing is not None

    def planned() -> TrainingPlan:
        with _planner_fields(section.path, _PLAN_FIELDS):
            return planner.plan_training(
                instance.name,
                nodes,
                tensor_parallel,
                pipeline_parallel,
                logical_nc_config,
                allow_unlisted_tp=bool(allow_unlisted_tp),
                model=model,
                zero1=zero1,
                activation_checkpointing=checkpointing,
                recompute=recompute,
            )

    return found.run(planned)


def _checkpoint(found: _Collector, section: _Section, max_nodes: int | None) -> CheckpointSizing | None:
    ckpt = found.section(
        section, "checkpoint", ("model_parameters", "writers", "master_weights_in_checkpoint")
    )
    if ckpt is None:
        return None
    model_parameters = found.run(lambda: ckpt.positive_int("model_parameters"))
    writers = found.run(lambda: ckpt.positive_int("writers", 1))
    master = found.run(lambda: ckpt.get("master_weights_in_checkpoint", bool, False))
    if writers is not None and max_nodes is not None and writers > max_nodes:
        found.add(
            NeuronConfigError(
                ckpt.field("writers"), writers, f"at most one writer per node: <= max_nodes={max_nodes}"
            )
        )
    if model_parameters is None or writers is None or master is None:
        return None
    return CheckpointSizing(
        model_parameters=model_parameters, writers=writers, master_weights_in_checkpoint=bool(master)
    )


def _training(
    env: _Section, region: str | None, az_ids: tuple[str, ...] | None, network: NetworkConfig | None
) -> TrainingConfig:
    """The ``training`` section. With region, az_ids or network refused (None), every key is still
    read and only the checks that need them (offerings, the image's route) are skipped."""
    keys = (
        "instance_type",
        "max_nodes",
        "plan",
        "capacity",
        "engine",
        "job_image",
        "checkpoint",
        "worker_count",
        "efs_utils_package",
        "efs_utils_release",
    )
    found = _Collector()
    section = found.section(env, "training", keys, required=True)
    if section is None:
        found.raise_if_any()
    assert section is not None
    instance = found.run(lambda: _training_instance(section, region, az_ids))
    max_nodes = found.run(lambda: section.positive_int("max_nodes"))
    if instance is not None and max_nodes is not None and max_nodes > 1 and not instance.supports_efa:
        found.add(
            NeuronConfigError(section.field("max_nodes"), max_nodes, f"{instance.name} has no EFA: use 1")
        )
        plan = None  # planning multi-node without EFA would report the same cause a second time
    else:
        plan = _training_plan(found, section, instance, max_nodes)
    checkpoint = _checkpoint(found, section, max_nodes) if section.has("checkpoint") else None
    engine: TrainingEngine | None = found.run(lambda: section.choice("engine", TRAINING_ENGINES, "batch"))
    if engine == "auto-scaling-group" and section.has("job_image"):
        found.add(
            NeuronConfigError(
                section.field("job_image"),
                section.raw["job_image"],
                "the auto-scaling-group engine runs no job containers: remove job_image, or use engine batch "
                "or hyperpod",
            )
        )
    job_image = (
        found.run(lambda: _job_image(section, region, network)) if engine in ("batch", "hyperpod") else None
    )
    if engine == "hyperpod" and job_image is not None:
        # Enroot (which runs it on HyperPod) takes no digest: cdk_neuron.training.hyperpod_containers.
        found.run(lambda: hyperpod_containers.pyxis_image(section.field("job_image"), job_image))
    if engine == "hyperpod" and network is not None and not network.has_internet_egress:
        found.add(
            NeuronConfigError(
                section.field("engine"),
                "hyperpod",
                "with network.nat_gateways 0 the HyperPod nodes cannot install what runs the job image: the "
                "lifecycle script fetches Enroot and Pyxis from github.com and their dependencies from the "
                "Ubuntu archive, which no VPC endpoint serves. Set network.nat_gateways to 1 (a NAT instance "
                "is enough), or use engine batch, whose nodes need only VPC endpoints",
            )
        )
    capacity = found.run(lambda: _capacity(section, instance)) if instance is not None else None
    if engine == "batch" and capacity is not None and capacity.is_capacity_block:
        found.add(
            NeuronConfigError(f"{section.field('capacity')}.type", capacity.kind, BATCH_CAPACITY_BLOCK_FIX)
        )
    worker_count: int | None = None
    efs_utils_package: str | None = None
    efs_utils_release: str | None = None
    if engine == "hyperpod":
        if instance is not None and region is not None:
            found.run(lambda: _hyperpod_instance(section, instance.name, region))
        if capacity is not None and capacity.kind not in ("on-demand", "training-plan"):
            found.add(
                NeuronConfigError(
                    section.field("capacity") + ".type",
                    capacity.kind,
                    "AWS::SageMaker::Cluster has no capacity-reservation field: use a SageMaker training plan "
                    "(type training-plan, training_plan_arn) or on-demand",
                )
            )
        default_workers = 0 if env.path == "environments.dev" else max_nodes
        worker_count = found.run(
            lambda: (
                section.get("worker_count", int, default_workers)
                if section.has("worker_count")
                else default_workers
            )
        )
        if worker_count is not None and max_nodes is not None and not 0 <= worker_count <= max_nodes:
            found.add(
                NeuronConfigError(
                    section.field("worker_count"), worker_count, f"use 0 to max_nodes ({max_nodes})"
                )
            )
        efs_utils_package = found.run(lambda: _efs_utils_package(section))
        efs_utils_release = found.run(lambda: _efs_utils_release(section))
    else:
        for key in ("worker_count", "efs_utils_package", "efs_utils_release"):
            if section.has(key):
                found.add(
                    NeuronConfigError(
                        section.field(key), section.raw[key], "only the hyperpod engine takes it"
                    )
                )
        if capacity is not None and capacity.is_training_plan:
            found.add(
                NeuronConfigError(
                    section.field("capacity") + ".type",
                    "training-plan",
                    "a SageMaker training plan serves only HyperPod: use engine hyperpod, or EC2 capacity",
                )
            )
    found.raise_if_any()
    assert instance is not None and max_nodes is not None and plan is not None and engine is not None
    assert capacity is not None
    return TrainingConfig(
        instance_type=instance.name,
        max_nodes=max_nodes,
        plan=plan,
        job_image=job_image,
        capacity=capacity,
        engine=engine,
        checkpoint=checkpoint,
        worker_count=worker_count,
        efs_utils_package=efs_utils_package,
        efs_utils_release=efs_utils_release,
    )


def _hyperpod_instance(section: _Section, name: str, region: str) -> None:
    from cdk_neuron.training import hyperpod_facts

    if name not in hyperpod_facts.HYPERPOD_TYPES:
        raise NeuronConfigError(
            section.field("instance_type"),
            name,
            f"HyperPod runs {one_of(hyperpod_facts.HYPERPOD_TYPES)}: use one of them, or engine batch",
        )
    if name not in hyperpod_facts.types_in(region):
        raise NeuronConfigError(
            section.field("instance_type"),
            name,
            f"HyperPod does not sell {name} in {region} (it does in "
            f"{', '.join(hyperpod_facts.regions_for(name)) or 'no region'}): use another type or region",
        )


def _efs_utils_release(section: _Section) -> str:
    from cdk_neuron.training import hyperpod_facts

    release = section.get("efs_utils_release", str, hyperpod_facts.UBUNTU_RELEASE)
    if not hyperpod_facts.UBUNTU_RELEASE_PATTERN.match(release):
        raise NeuronConfigError(
            section.field("efs_utils_release"),
            release,
            "give the Ubuntu release efs_utils_package was built on, as /etc/os-release's VERSION_ID, e.g. "
            f"{hyperpod_facts.UBUNTU_RELEASE!r} (the HyperPod Slurm image's)",
        )
    return release


def _efs_utils_package(section: _Section) -> str:
    if not section.has("efs_utils_package"):
        raise NeuronConfigError(
            section.field("efs_utils_package"),
            None,
            "required with engine hyperpod: the checkpoint store mounts only with amazon-efs-utils (TLS and IAM), "
            "which HyperPod's Ubuntu image lacks and its archive does not carry. Build the .deb with "
            "efs-utils' ./build-deb.sh (https://github.com/aws/efs-utils) and give its path; the lifecycle "
            "script installs it from the cluster's bucket, so the nodes need no internet",
        )
    path = section.get("efs_utils_package", str)
    if not path.endswith(".deb"):
        raise NeuronConfigError(section.field("efs_utils_package"), path, "give the path of a .deb file")
    return path


_PLAN_KEYS = (
    "nodes",
    "tensor_parallel",
    "pipeline_parallel",
    "logical_nc_config",
    "allow_unlisted_tp",
    "model",
    "zero1",
    "activation_checkpointing",
    "recompute",
)
_TRAINING_MODEL_KEYS = (
    "parameters",
    "layers",
    "hidden_size",
    "attention_heads",
    "kv_heads",
    "intermediate_size",
    "vocab_size",
    "sequence_length",
    "micro_batch_size",
)
# A planner error names its own argument (tensor_parallel, or the model's sequence_length); cdk.json
# calls it plan.tensor_parallel, plan.model.sequence_length.
_PLAN_FIELDS = {k: f"plan.{k}" for k in _PLAN_KEYS} | {k: f"plan.model.{k}" for k in _TRAINING_MODEL_KEYS}


def _training_model(found: _Collector, plan: _Section) -> planner.TrainingModel | None:
    """plan.model: what is trained, read into the planner's TrainingModel (which checks the values)."""
    if not plan.has("model"):
        return None
    section = found.section(plan, "model", _TRAINING_MODEL_KEYS)
    if section is None:
        return None
    before = len(found.errors)
    values: dict[str, Any] = {"parameters": found.run(lambda: section.get("parameters", int))}
    for key in _TRAINING_MODEL_KEYS[1:]:
        if section.has(key):
            values[key] = found.run(functools.partial(section.get, key, int))
    if len(found.errors) > before:
        return None

    def checked() -> planner.TrainingModel:
        with _planner_fields(section.path, {}):
            return planner.TrainingModel(**values)

    return found.run(checked)


def _backup_retention(section: _Section) -> int:
    retention = section.positive_int("backup_retention_days", StorageConfig.backup_retention_days)
    if retention > 36500:
        raise NeuronConfigError(
            section.field("backup_retention_days"), retention, "AWS Backup keeps at most 36500 days"
        )
    return retention


def _ia_days(section: _Section) -> int | None:
    # Absent means the documented default (30 days); an explicit null keeps everything in Standard,
    # the one key where null is not "use the default" (docs/configuration.md).
    if "infrequent_access_after_days" in section.raw and section.raw["infrequent_access_after_days"] is None:
        return None
    ia_days = section.get("infrequent_access_after_days", int, StorageConfig.infrequent_access_after_days)
    if ia_days not in EFS_IA_DAYS:
        raise NeuronConfigError(
            section.field("infrequent_access_after_days"),
            ia_days,
            f"EFS accepts {', '.join(map(str, EFS_IA_DAYS))}",
        )
    return ia_days


def _storage(env: _Section) -> StorageConfig:
    found = _Collector()
    section = found.section(
        env, "storage", ("one_zone", "backup_retention_days", "infrequent_access_after_days")
    )
    found.raise_if_any()
    assert section is not None
    retention = found.run(lambda: _backup_retention(section))
    ia_days = found.run(lambda: _ia_days(section))
    one_zone = found.run(lambda: section.get("one_zone", bool, False))
    found.raise_if_any()
    assert retention is not None and one_zone is not None
    return StorageConfig(
        one_zone=one_zone, backup_retention_days=retention, infrequent_access_after_days=ia_days
    )


_MODEL_KEYS = (
    "model_id",
    "artifact_uri",
    "artifact_manifest",
    "parameters",
    "dtype",
    "sequence_length",
    "batch_size",
    "tensor_parallel",
    "host_memory_override",
)
_SERVING_KEYS = (
    "backend",
    "engine",
    "instance_type",
    "min_capacity",
    "max_capacity",
    "warm_pool",
    "warm_pool_size",
    "certificate_arn",
    "hugging_face_token_secret",
    "model",
)


def _model(serving: _Section) -> ModelSpec:
    """The library's ModelSpec, which alone decides what a model id and an artifact URI may be."""
    found = _Collector()
    section = found.section(serving, "model", _MODEL_KEYS, required=True)
    found.raise_if_any()
    assert section is not None
    model_id = found.run(lambda: section.get("model_id", str))
    artifact_uri = found.run(lambda: section.get("artifact_uri", str, None))
    parameters = found.run(lambda: section.get("parameters", int))
    dtype = found.run(lambda: section.get("dtype", str, "bf16"))
    sequence_length = found.run(lambda: section.get("sequence_length", int, 4096))
    batch_size = found.run(lambda: section.get("batch_size", int, 1))
    tensor_parallel = found.run(lambda: section.get("tensor_parallel", int, None))
    host_memory_override = found.run(lambda: section.get("host_memory_override", str, None))
    found.raise_if_any()
    assert (
        parameters is not None
        and dtype is not None
        and sequence_length is not None
        and batch_size is not None
    )
    with _planner_fields(section.path, {}):
        return ModelSpec(
            model_id=model_id,
            artifact_uri=artifact_uri,
            parameters=parameters,
            dtype=dtype,
            sequence_length=sequence_length,
            batch_size=batch_size,
            tensor_parallel=tensor_parallel,
            host_memory_override=host_memory_override,
        )


def _artifact_manifest(
    serving: _Section,
    model: ModelSpec | None,
    plan: ServingPlan | None,
    engine: ServingEngine | None,
    backend: ServingBackend | None,
) -> ArtifactManifest | None:
    """``serving.model.artifact_manifest``: read the local copy and check the fleet against it.

    Every difference is one error keyed ``...serving.model.artifact_manifest.<field>``, the fields the
    fleets use (``shape.batch_size``, ``engine``, ``image.neuron_sdk``, ``model.artifact_uri``), so a
    wrong shape is refused here, before synthesis, with the cdk.json key to change. The path is relative
    to the app directory (where ``cdk synth`` runs the app).
    """
    raw = serving.raw.get("model")
    if not isinstance(raw, Mapping) or raw.get("artifact_manifest") is None:
        return None
    key = f"{serving.field('model')}.artifact_manifest"
    path = raw["artifact_manifest"]
    if not isinstance(path, str) or not path.strip():
        raise NeuronConfigError(
            key,
            path,
            "give the path of a copy of the artifact's cdk-neuron-artifact.json (cdk-neuron use-artifact)",
        )
    try:
        manifest = ArtifactManifest.from_file(path)
    except NeuronConfigError as error:
        errors = error.errors if isinstance(error, NeuronConfigErrors) else (error,)
        prefixed = [
            NeuronConfigError(
                key, path, e.fix if e.field == "artifact_manifest" else f"{e.field}={e.value!r}: {e.fix}"
            )
            for e in errors
        ]
        raise (NeuronConfigErrors(prefixed) if len(prefixed) > 1 else prefixed[0]) from None
    if model is None or plan is None or engine is None or backend is None:
        return manifest  # the fleet's own errors are reported; it cannot be compared yet
    image = engine.sagemaker_image if backend == "sagemaker" else engine.image
    found = [
        NeuronConfigError(f"{key}.{e.field}", e.value, e.fix)
        for e in manifest.mismatches(model, plan, engine.name, image)
    ]
    if found:
        raise NeuronConfigErrors(found) if len(found) > 1 else found[0]
    return manifest


_ENGINES: Mapping[str, Any] = {
    "optimum-neuron": ServingEngine.optimum_neuron,
    "tgi": ServingEngine.tgi,
    "vllm-neuron": ServingEngine.vllm_neuron,
}


def _serving_instance_type(section: _Section) -> str | None:
    instance_type = section.get("instance_type", str, None)
    if instance_type is None:
        return None
    with _planner_fields(section.path, {}):
        return catalog.get_inference_instance(instance_type).name


def _certificate(section: _Section, region: str | None) -> str | None:
    certificate = section.matching("certificate_arn", CERTIFICATE_ARN, "an ACM certificate ARN", None)
    if certificate is not None:
        cert_region = CERTIFICATE_ARN.match(certificate)[1]  # type: ignore[index]
        if region is not None and cert_region != region:
            raise NeuronConfigError(
                section.field("certificate_arn"),
                certificate,
                f"a load balancer needs an ACM certificate in {region}",
            )
    return certificate


def _serving(
    env: _Section, region: str | None, az_ids: tuple[str, ...] | None, network: NetworkConfig | None
) -> ServingConfig:
    """The ``serving`` section; region, az_ids and network as :func:`_training` reads them."""
    found = _Collector()
    section = found.section(env, "serving", _SERVING_KEYS, required=True)
    if section is None:
        found.raise_if_any()
    assert section is not None
    backend: ServingBackend | None = found.run(lambda: section.choice("backend", SERVING_BACKENDS, "ec2"))
    before = len(found.errors)
    instance_type = found.run(lambda: _serving_instance_type(section))
    instance_type_usable = len(found.errors) == before  # None is usable: the planner picks the type
    min_capacity = found.run(lambda: section.positive_int("min_capacity", 1, minimum=0))
    max_capacity = found.run(lambda: section.positive_int("max_capacity", 2))
    if min_capacity is not None and max_capacity is not None and min_capacity > max_capacity:
        found.add(
            NeuronConfigError(
                section.field("min_capacity"), min_capacity, f"must not exceed max_capacity={max_capacity}"
            )
        )
    if backend == "sagemaker" and min_capacity is not None and min_capacity < 1:
        found.add(
            NeuronConfigError(
                section.field("min_capacity"),
                min_capacity,
                "a SageMaker real-time endpoint keeps >= 1 instance: use 1",
            )
        )
    certificate = found.run(lambda: _certificate(section, region))
    engine_name: ServingEngineName | None = found.run(
        lambda: section.choice("engine", SERVING_ENGINES, "optimum-neuron")
    )
    warm_pool = found.run(lambda: section.get("warm_pool", bool, False))
    if warm_pool and backend is not None and backend != "ec2":
        found.add(
            NeuronConfigError(section.field("warm_pool"), True, "warm pools exist only for the ec2 backend")
        )
    warm_pool_size = (
        found.run(
            lambda: start_paths.pool_size(
                section.raw.get("warm_pool_size"),
                warm_pool=bool(warm_pool),
                min_capacity=min_capacity,
                max_capacity=max_capacity,
                field=section.field("warm_pool_size"),
            )
        )
        if min_capacity is not None and max_capacity is not None
        else None
    )
    token_secret = found.run(
        lambda: section.matching(
            "hugging_face_token_secret", SECRET, "a Secrets Manager secret name or ARN", None
        )
    )
    if backend == "sagemaker" and token_secret is not None:
        found.add(
            NeuronConfigError(
                section.field("hugging_face_token_secret"),
                token_secret,
                "SageMaker would keep the token in plain text in the model's environment: serve precompiled "
                "artifacts from model.artifact_uri instead, or use the ec2 backend",
            )
        )
    model = found.run(lambda: _model(section))
    plan = None
    if model is not None and instance_type_usable:
        # ModelSpec has refused bad parameters, dtype, sequence length and batch size under their own
        # keys (_model); the plan can only refuse the instance type (which keeps its key) or the TP.
        model_fields = {"tensor_parallel": "model.tensor_parallel"}

        def planned() -> ServingPlan:
            assert model is not None
            with _planner_fields(section.path, model_fields):
                return model.plan(instance_type)

        plan = found.run(planned)
    if plan is not None and az_ids is not None and region is not None:
        not_offered = [
            az for az in az_ids if catalog.offering_status(plan.instance_type, az) == "not-offered"
        ]
        if not_offered:
            found.add(
                NeuronConfigError(
                    section.field("instance_type"),
                    plan.instance_type,
                    f"not offered in {', '.join(not_offered)}; in {region} it is offered in "
                    f"{one_of(catalog.offered_az_ids(plan.instance_type, region)) or 'no AZ'}: change az_ids or the type",
                )
            )
    engine = _ENGINES[engine_name]() if engine_name is not None else None
    if backend == "ec2" and engine is not None and region is not None and network is not None:
        image = engine.image
        if not network.has_internet_egress and (
            not image.is_private_ecr or image.ecr_region(region) != region
        ):
            found.add(
                NeuronConfigError(
                    section.field("engine"),
                    engine_name,
                    f"its image {image.uri(region)} is outside ECR in {region}, which network.nat_gateways 0 "
                    "cannot reach: use optimum-neuron (an AWS DLC in ECR) or give the VPC a NAT gateway",
                )
            )
    if (
        backend == "ec2"
        and model is not None
        and model.artifact_uri is None
        and network is not None
        and not network.has_internet_egress
    ):
        found.add(
            NeuronConfigError(
                section.field("model.artifact_uri"),
                None,
                "with network.nat_gateways 0 the fleet cannot download from the Hugging Face Hub: give the "
                "s3:// URI of the model files (reached through the S3 gateway endpoint) or a NAT gateway",
            )
        )
    manifest = found.run(lambda: _artifact_manifest(section, model, plan, engine, backend))
    found.raise_if_any()
    assert model is not None and engine is not None and plan is not None and backend is not None
    assert min_capacity is not None and max_capacity is not None and warm_pool is not None
    return ServingConfig(
        model=model,
        engine=engine,
        plan=plan,
        backend=backend,
        instance_type=instance_type,
        min_capacity=min_capacity,
        max_capacity=max_capacity,
        warm_pool=warm_pool,
        warm_pool_size=warm_pool_size,
        certificate_arn=certificate,
        hugging_face_token_secret=token_secret,
        artifact_manifest=manifest,
    )


_COMPILATION_KEYS = (
    "enabled",
    "runs_on",
    "artifact_bucket",
    "artifact_prefix",
    "aws_cli_image",
    "ecr_public_cache_prefix",
    "log_retention_days",
)


def _compilation(
    env: _Section,
    serving: ServingConfig | None,
    region: str | None,
    network: NetworkConfig | None,
    training: TrainingConfig | None = None,
) -> CompilationConfig | None:
    """The ``compilation`` section: the fleet it compiles for decides the default (module docstring)."""
    found = _Collector()
    section = found.section(env, "compilation", _COMPILATION_KEYS)
    found.raise_if_any()
    assert section is not None
    enabled = found.run(lambda: section.get("enabled", bool, None))
    asked_runs_on = (
        found.run(lambda: section.choice("runs_on", COMPILE_RUNS_ON)) if section.has("runs_on") else None
    )
    bucket = found.run(lambda: section.matching("artifact_bucket", S3_BUCKET_NAME, "an S3 bucket name", None))
    prefix = found.run(
        lambda: _with_key(
            section.field("artifact_prefix"),
            lambda: check_artifact_prefix(
                section.get("artifact_prefix", str, CompilationConfig.artifact_prefix)
            ),
        )
    )
    image = found.run(lambda: section.get("aws_cli_image", str, None))
    match = IMAGE_URI.match(image) if image is not None else None
    if image is not None and (match is None or match["tag"] is None):
        found.add(
            NeuronConfigError(
                section.field("aws_cli_image"),
                image,
                "must be registry/repository:tag with a pinned tag (an image with the AWS CLI v2, bash and "
                "coreutils), or null for public.ecr.aws/aws-cli/aws-cli through the ECR pull-through cache",
            )
        )
    elif image is not None:
        found.run(lambda: pinned_image(section.field("aws_cli_image"), image))
        if (
            network is not None
            and region is not None
            and not network.has_internet_egress
            and (match is None or ecr_region(match["registry"]) != region)
        ):
            found.add(
                NeuronConfigError(
                    section.field("aws_cli_image"),
                    image,
                    f"with network.nat_gateways 0 the compile task reaches only VPC endpoints: use an ECR image "
                    f"in {region}, or null for public.ecr.aws/aws-cli/aws-cli through the ECR pull-through cache",
                )
            )
    cache_prefix = found.run(
        lambda: section.get("ecr_public_cache_prefix", str, default_cache_prefix(env.path.rpartition(".")[2]))
    )
    if cache_prefix is not None and not _ECR_CACHE_PREFIX.match(cache_prefix):
        found.add(
            NeuronConfigError(
                section.field("ecr_public_cache_prefix"),
                cache_prefix,
                "2-30 characters: lowercase letters and digits, with . _ - / between them (ECR's ecrRepositoryPrefix)",
            )
        )
    if serving is not None and compile_runs_on(asked_runs_on, serving, training)[0] == "training-cluster":
        for key in ("aws_cli_image", "ecr_public_cache_prefix"):
            if section.has(key):
                found.add(
                    NeuronConfigError(
                        section.field(key),
                        section.raw.get(key),
                        "applies only to compilation.runs_on fargate; on the training cluster the fetch and upload "
                        "steps run in training.job_image: remove it",
                    )
                )
    retention = found.run(
        lambda: section.positive_int("log_retention_days", CompilationConfig.log_retention_days)
    )
    if retention is not None and retention not in LOG_RETENTION_DAYS:
        found.add(
            NeuronConfigError(
                section.field("log_retention_days"),
                retention,
                f"CloudWatch Logs accepts {', '.join(map(str, LOG_RETENTION_DAYS))}",
            )
        )
    found.raise_if_any()
    if serving is None:
        return None  # the fleet's own errors are reported; what it compiles for is unknown
    blockers: list[tuple[str, object, str]] = []
    if serving.engine.name not in COMPILE_ENGINES:
        blockers.append(
            (
                "serving.engine",
                serving.engine.name,
                "the compile task runs optimum-neuron's export: serve with optimum-neuron, or export by hand "
                "(serving README: Precompiled artifacts)",
            )
        )
    family = serving.plan.instance_type.split(".")[0]
    if family not in EXPORT_TARGET_FAMILIES:
        blockers.append(
            (
                "serving.instance_type",
                serving.plan.instance_type,
                f"the compile task exports for the trn1 target, which {family} does not load: serve on "
                f"{', '.join(EXPORT_TARGET_FAMILIES)}, or export by hand on a {family} instance",
            )
        )
    runs_on, placement = compile_runs_on(asked_runs_on, serving, training)
    blockers.extend(placement)
    if bucket is None and serving.model.artifact_uri is not None:
        bucket = parse_s3_uri(serving.model.artifact_uri).bucket
    if bucket is None:
        blockers.append(
            (
                "compilation.artifact_bucket",
                None,
                "name the bucket the compile task writes to (serving.model.artifact_uri names none)",
            )
        )
    if enabled is None:
        enabled = not blockers
    if not enabled:
        return None
    if blockers:
        raise NeuronConfigErrors(
            [
                NeuronConfigError(
                    env.field(key),
                    value,
                    f"compilation.enabled is true, and {fix}; or set compilation.enabled false",
                )
                for key, value, fix in blockers
            ]
        )
    assert bucket is not None and prefix is not None and cache_prefix is not None and retention is not None
    return CompilationConfig(
        artifact_bucket=bucket,
        artifact_prefix=prefix,
        runs_on=runs_on,
        aws_cli_image=image,
        ecr_public_cache_prefix=cache_prefix,
        log_retention_days=retention,
    )


def compile_host(training: TrainingConfig) -> HostCompile:
    """What a compile job on the environment's training cluster gets (its instance type's facts)."""
    return HostCompile.on(catalog.get_instance(training.instance_type))


def compile_runs_on(
    asked: CompileRunsOn | None, serving: ServingConfig, training: TrainingConfig | None
) -> tuple[CompileRunsOn, list[tuple[str, object, str]]]:
    """Where the fleet's model compiles, and what stops it there (key, value, fix), given ``runs_on``.

    Unasked: on Fargate when the export fits a Fargate task (cheapest: billed per second for 16 vCPUs,
    no instance), else on the training cluster when it is a Batch one whose instance holds the export
    (docs/compile.md, "Where each model compiles")."""
    weights = serving.plan.weights_gib
    batch = training is not None and training.engine == "batch"
    host = compile_host(training) if training is not None and batch else None
    runs_on: CompileRunsOn = asked or (
        "fargate" if weights <= FARGATE_MAX_WEIGHTS_GIB or not batch else "training-cluster"
    )
    blockers: list[tuple[str, object, str]] = []
    if runs_on == "fargate" and weights > FARGATE_MAX_WEIGHTS_GIB:
        fits_host = host is not None and weights <= host.max_weights_gib
        blockers.append(
            (
                "serving.model.parameters",
                serving.model.parameters,
                f"the fleet's {weights:.0f} GiB of weights are more than a Fargate compile task holds "
                f"({FARGATE_MAX_WEIGHTS_GIB:.0f} GiB): "
                + (
                    "set compilation.runs_on training-cluster (or leave it null) to compile on the training cluster"
                    if fits_host
                    else "compile on a batch training cluster whose instance holds it (training.engine batch), or "
                    "export it by hand on an instance with the memory (serving README: Precompiled artifacts)"
                ),
            )
        )
    if runs_on == "training-cluster":
        if training is not None and not batch:
            blockers.append(
                (
                    "training.engine",
                    training.engine,
                    "compilation.runs_on training-cluster submits a Batch job to the training cluster: use "
                    "training.engine batch, or compilation.runs_on fargate for models up to "
                    f"{FARGATE_MAX_WEIGHTS_GIB:.0f} GiB of weights",
                )
            )
        if training is not None and training.job_image is not None and "@" in training.job_image:
            blockers.append(
                (
                    "training.job_image",
                    training.job_image,
                    "the compile job's fetch and upload steps run in the training job image, which "
                    "BatchModelCompilation takes by tag (ContainerImage): pin training.job_image by tag",
                )
            )
        if host is not None:
            refusal = export_memory_refusal(weights, host)
            if refusal is not None:
                blockers.append(("serving.model.parameters", serving.model.parameters, refusal))
    return runs_on, blockers


def default_cache_prefix(env_name: str) -> str:
    """``cdk-neuron-<env>``, lowercased and cut to ECR's 30 characters: a pull-through cache rule's prefix
    is unique in an account and Region (CreatePullThroughCacheRule, PullThroughCacheRuleAlreadyExistsException),
    so each environment gets its own."""
    return f"cdk-neuron-{env_name.lower()}"[:30].rstrip("-")


def _with_key(field_name: str, check: Callable[[], _T]) -> _T:
    """Run a library check, re-keying its error under the cdk.json path."""
    try:
        return check()
    except NeuronConfigError as error:
        raise NeuronConfigError(field_name, error.value, error.fix) from None


def _removal_policy(env: _Section, name: str) -> RemovalPolicy:
    removal: RemovalPolicy = env.choice("removal_policy", REMOVAL_POLICIES, "retain")
    if removal == "destroy" and name in PROTECTED_ENVIRONMENTS:
        raise NeuronConfigError(
            env.field("removal_policy"), removal, f"{name} keeps its data when a stack is deleted: use retain"
        )
    # With no account, `cdk deploy` puts the environment into whatever account the credentials
    # point at; an environment whose data must survive has to say where it lives.
    if removal == "retain" and env.raw.get("account") is None:
        raise NeuronConfigError(
            env.field("account"),
            None,
            "an environment that retains its data must name its 12-digit account, so it is never deployed "
            "into whichever account the credentials point at",
        )
    return removal


def _monitoring(found: _Collector, env: _Section) -> MonitoringConfig | None:
    """The ``monitoring`` section: an unknown key and a bad value are reported together."""
    section = found.section(env, "monitoring", ("alarm_email",))
    if section is None:
        return None
    before = len(found.errors)
    email = found.run(lambda: section.matching("alarm_email", EMAIL, "an email address", None))
    return MonitoringConfig(alarm_email=email) if len(found.errors) == before else None


def _environment(name: object, raw: object) -> EnvironmentConfig:
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        raise NeuronConfigError(
            f"environments.{name}",
            name,
            "environment names start with a letter and use letters, digits and '-'",
        )
    keys = (
        "account",
        "region",
        "az_ids",
        "removal_policy",
        "tags",
        "network",
        "training",
        "storage",
        "serving",
        "monitoring",
        "ami_release",
        "compilation",
    )
    found = _Collector()
    # The environment's own unknown keys are kept beside every other mistake (rough edge 5).
    env = _Section(f"environments.{name}", raw, keys, found=found)
    account = found.run(lambda: env.matching("account", ACCOUNT, "a 12-digit AWS account id, or null", None))
    region = found.run(lambda: known_region(env.field("region"), env.get("region", str)))
    az_ids = found.run(lambda: _az_ids(env, region))
    removal = found.run(lambda: _removal_policy(env, name))
    ami_release = found.run(
        lambda: ami.check_release(env.field("ami_release"), env.get("ami_release", str, ami.RELEASE))
    )
    network = found.run(lambda: _network(env, len(az_ids) if az_ids is not None else None))
    monitoring = _monitoring(found, env)
    tags = found.run(lambda: _tags(env))
    storage = found.run(lambda: _storage(env))
    # A refused region, az_ids or network skips only the checks that need it (offerings, routes):
    # training's and serving's own mistakes are still reported in the same run (review of issue 26).
    training = found.run(lambda: _training(env, region, az_ids, network))
    serving = found.run(lambda: _serving(env, region, az_ids, network))
    compilation = found.run(lambda: _compilation(env, serving, region, network, training))
    found.raise_if_any()
    assert region and az_ids and removal and network and monitoring and tags is not None and storage
    assert ami_release is not None
    assert training is not None and serving is not None
    config = EnvironmentConfig(
        name=name,
        account=account,
        region=region,
        az_ids=az_ids,
        training=training,
        serving=serving,
        removal_policy=removal,
        tags=tags,
        network=network,
        storage=storage,
        monitoring=monitoring,
        compilation=compilation,
        ami_release=ami_release,
    )
    # The specific checks above name the key to change; this one catches any other call that
    # the network cannot carry (a host reached only through a NAT, in an environment without one).
    missing = unreachable(config)
    if missing:
        node, destination = missing[0]
        raise NeuronConfigError(
            env.field("network"),
            destination.service,
            f"the {node} reaches {destination.service} ({destination.caller}) and nothing routes there: "
            "set network.nat_gateways to 1 or more",
        )
    return config


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


# Interface endpoint logical ids (part of the deployed state: keep them stable) by VPC endpoint
# service name (com.amazonaws.<region>.<name>). The NetworkStack builds the endpoints and
# `cdk-neuron cost` prices them, both from interface_endpoints().
ENDPOINT_IDS: Mapping[str, str] = {
    "ecr.api": "EcrApi",
    "ecr.dkr": "EcrDocker",
    "ecs": "Ecs",
    "ecs-agent": "EcsAgent",
    "ecs-telemetry": "EcsTelemetry",
    "logs": "Logs",
    "monitoring": "Monitoring",
    "ssm": "Ssm",
    "ssmmessages": "SsmMessages",
    "ec2messages": "Ec2Messages",
    "autoscaling": "AutoScaling",
    "cloudformation": "CloudFormation",
    "secretsmanager": "SecretsManager",
    "sagemaker.runtime": "SageMakerRuntime",
    "ec2": "Ec2",
    "sts": "Sts",
}


def node_destinations(env: EnvironmentConfig) -> dict[str, tuple[reach.Destination, ...]]:
    """Every host each kind of node in the environment reaches (see :mod:`cdk_neuron.node_programs.reach`).

    Keys name the node: ``training node``, ``serving node`` (EC2 backend) or ``SageMaker model``.
    The stacks give both workloads ``NodeMetrics``, so both publish Neuron metrics (HyperPod nodes
    publish none: :func:`reach.hyperpod_node`).
    """
    training = env.training
    nodes = {
        "training node": reach.hyperpod_node(job_image=training.job_image, region=env.region)
        if training.engine == "hyperpod"
        else reach.training_node(
            job_image=training.job_image if training.engine == "batch" else None,
            region=env.region,
            node_metrics=True,
        )
    }
    serving = env.serving
    if serving.backend == "ec2":
        nodes["serving node"] = reach.serving_node(
            image_uri=serving.engine.image.uri(env.region),
            region=env.region,
            artifact_uri=serving.model.artifact_uri,
            token_secret=serving.hugging_face_token_secret is not None,
            node_metrics=True,
        )
    else:
        nodes["SageMaker model"] = reach.sagemaker_model(artifact_uri=serving.model.artifact_uri)
    if env.compilation is not None and env.compilation.runs_on == "training-cluster":
        assert env.training.job_image is not None  # a batch cluster has one
        nodes["compile job"] = reach.compile_job(
            export_image=serving.engine.image.uri(env.region),
            tools_image=env.training.job_image,
            region=env.region,
            hub=env.network.has_internet_egress,
            token_secret=compile_token_secret(env) is not None,
            compile_cache=True,
        )
    elif env.compilation is not None:
        nodes["compile task"] = reach.compile_task(
            export_image=serving.engine.image.uri(env.region),
            aws_cli_image=compile_aws_cli_image(env),
            region=env.region,
            hub=env.network.has_internet_egress,
            token_secret=compile_token_secret(env) is not None,
            compile_cache=True,
        )
    return nodes


def compile_aws_cli_image(env: EnvironmentConfig) -> str:
    """The image the compile task's fetch and upload steps pull: the configured one, or the ECR Public
    pull-through cache's copy in the environment's region."""
    compilation = env.compilation
    assert compilation is not None
    if compilation.aws_cli_image is not None:
        return compilation.aws_cli_image
    return (
        f"{env.resolve_account()}.dkr.ecr.{env.region}.amazonaws.com/{compilation.ecr_public_cache_prefix}/"
        "aws-cli/aws-cli:2.22.35"
    )


def compile_token_secret(env: EnvironmentConfig) -> str | None:
    """The Hub token the compile task reads: the fleet's, where the network reaches the Hub (a NAT)."""
    return env.serving.hugging_face_token_secret if env.network.has_internet_egress else None


def interface_endpoints(env: EnvironmentConfig) -> dict[str, str]:
    """The environment's interface endpoints, logical id -> service name.

    Every AWS service a node calls gets one (with a NAT too: the traffic stays private, and image
    and log volume is not billed per NAT-processed GB), plus ``sagemaker.runtime`` for callers of a
    SageMaker endpoint inside the VPC. None with ``network.endpoint_azs`` "none".
    """
    if not env.network.has_interface_endpoints:
        return {}
    services = {
        d.service
        for destinations in node_destinations(env).values()
        for d in destinations
        if d.route == "interface-endpoint"
    }
    if env.serving.backend == "sagemaker":
        services.add("sagemaker.runtime")
    unknown = services - set(ENDPOINT_IDS)
    if unknown:  # a new service in reach.CLI_SERVICES needs a stable logical id here
        raise NeuronConfigError("ENDPOINT_IDS", sorted(unknown), "give each service a logical id")
    return {ENDPOINT_IDS[s]: s for s in ENDPOINT_IDS if s in services}


def unreachable(env: EnvironmentConfig) -> list[tuple[str, reach.Destination]]:
    """(node, destination) pairs with no route in the environment's network: empty when all is well."""
    network = env.network
    endpoints = set(interface_endpoints(env).values())
    missing = []
    for node, destinations in node_destinations(env).items():
        for d in destinations:
            routed = network.has_internet_egress or (
                d.route == "s3-gateway" or (d.route == "interface-endpoint" and d.service in endpoints)
            )
            if not routed:
                missing.append((node, d))
    return missing


def endpoint_az_count(env: EnvironmentConfig) -> int:
    """How many AZs each interface endpoint is placed in (each AZ is billed)."""
    return 1 if env.network.endpoint_azs == "training" else len(env.az_ids)


def load_environments(context: Mapping[str, Any]) -> dict[str, EnvironmentConfig]:
    """Parse every environment, in file order.

    Accepts the ``environments`` mapping itself, the cdk.json ``context`` dict that holds it, or the
    whole cdk.json document.
    """
    if isinstance(context, Mapping) and isinstance(context.get("context"), Mapping):
        context = context["context"]
    if isinstance(context, Mapping) and isinstance(context.get("environments"), Mapping):
        context = context["environments"]
    if not isinstance(context, Mapping) or not context:
        raise NeuronConfigError(
            "environments", context, "define at least one environment, e.g. {'dev': {'region': ...}}"
        )
    # One broken environment never hides another: every environment is parsed, every error kept.
    found = _Collector()
    parsed: dict[str, EnvironmentConfig | None] = {}
    for name, raw in context.items():
        parsed[name] = found.run(functools.partial(_environment, name, raw))
    found.raise_if_any()
    environments = {name: env for name, env in parsed.items() if env is not None}
    _refuse_shared_cache_prefixes(environments)
    return environments


def _refuse_shared_cache_prefixes(environments: Mapping[str, EnvironmentConfig]) -> None:
    """Two environments in one account and Region may not share a pull-through cache prefix: the second
    deploy would fail (the rule's prefix and the repository name are unique in a registry). Only where
    both accounts are named: an unnamed one is whoever deploys."""
    seen: dict[tuple[str, str, str], str] = {}
    errors = []
    for name, env in environments.items():
        compilation = env.compilation
        if (
            compilation is None
            or compilation.runs_on != "fargate"
            or compilation.aws_cli_image is not None
            or env.account is None
        ):
            continue
        key = (env.account, env.region, compilation.ecr_public_cache_prefix)
        if key in seen:
            errors.append(
                NeuronConfigError(
                    f"environments.{name}.compilation.ecr_public_cache_prefix",
                    compilation.ecr_public_cache_prefix,
                    f"environments.{seen[key]} uses it in the same account and Region, where a pull-through cache "
                    "prefix is unique: give each environment its own",
                )
            )
        else:
            seen[key] = name
    if errors:
        raise NeuronConfigErrors(errors) if len(errors) > 1 else errors[0]


def load_cdk_json(path: str | Path = "cdk.json") -> dict[str, EnvironmentConfig]:
    """Parse the environments of a cdk.json file."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NeuronConfigError("cdk.json", str(path), f"cannot read it as JSON ({error})") from None
    # Wrong shapes (a list where an object belongs) are configuration errors, not AttributeErrors.
    if not isinstance(document, dict):
        raise NeuronConfigError("cdk.json", str(path), "must be a JSON object with a context block")
    context = document.get("context", {})
    if not isinstance(context, dict):
        raise NeuronConfigError("context", context, f"{path}: context must be an object holding environments")
    environments = context.get("environments")
    if environments is None:
        raise NeuronConfigError("environments", None, f"{path} has no context.environments block")
    return load_environments(environments)


def select_environments(envs: Mapping[str, EnvironmentConfig], only: str | None) -> list[EnvironmentConfig]:
    """All environments, or just ``only`` (the ``-c env=NAME`` context value)."""
    if not only:
        return list(envs.values())
    if only not in envs:
        raise NeuronConfigError("env", only, f"unknown environment; defined: {one_of(envs)}")
    return [envs[only]]


# --------------------------------------------------------------------------------------------
# What the cdk-neuron CLI sees: each environment as a cdk_neuron.deployment.Deployment
# --------------------------------------------------------------------------------------------

# The customer-managed keys every environment creates (tests/test_app_cost.py counts them in the
# templates).
KMS_KEYS = (
    "VPC flow logs",
    "checkpoints (EFS)",
    "compile cache (S3)",
    "training cluster (EBS, job logs)",
    "serving fleet",
    "alarm topic",
)


def alarm_count(env: EnvironmentConfig) -> int:
    """CloudWatch alarms an environment creates (tests/test_app_cost.py counts them in the templates).

    Training nodes: cores idle, device memory, ECC, and failed boots (the page and the cluster's own
    limit that stops launches). EC2 serving nodes: the same plus saturation, the ALB's 5xx, p99
    latency, unhealthy hosts and abandoned launches, and the scale-from-zero alarm when the minimum
    is 0. SageMaker: 5xx and p99 latency. The checkpoint file system: throughput.
    """
    count = 3 + 2 + 1
    if env.serving.backend == "ec2":
        count += 4 + 4 + (1 if env.serving.min_capacity == 0 else 0)
    else:
        count += 2
    return count


# CloudFormation names each stack "<stage>-<stack id>": the app puts every environment in a stage
# named after it (stacks/stage.py), and the training stack's id is "Training".
TRAINING_STACK_NAME = "{env}-Training"


def deployment(env: EnvironmentConfig) -> Deployment:
    """``env`` as the CLI sees it, in the library's terms."""
    training, serving = env.training, env.serving
    endpoints = tuple(interface_endpoints(env).values())
    return Deployment(
        name=env.name,
        account=env.account,
        region=env.region,
        az_ids=env.az_ids,
        training=TrainingDeployment(
            instance_type=training.instance_type,
            max_nodes=training.max_nodes,
            plan=training.plan,
            capacity=training.capacity,
            engine=training.engine,
            job_image=training.job_image,
            checkpoint=training.checkpoint,
            worker_count=training.worker_count,
            jobs=JobQueueLocation(stack_name=TRAINING_STACK_NAME.format(env=env.name))
            if training.engine == "batch"
            else None,
            hyperpod=HyperPodLocation(stack_name=TRAINING_STACK_NAME.format(env=env.name))
            if training.engine == "hyperpod"
            else None,
        ),
        serving=ServingDeployment(
            backend=serving.backend,
            engine=serving.engine,
            model=serving.model,
            plan=serving.plan,
            min_capacity=serving.min_capacity,
            max_capacity=serving.max_capacity,
            warm_pool=serving.warm_pool,
            warm_pool_size=serving.warm_pool_size,
            instance_type=serving.instance_type,
            certificate_arn=serving.certificate_arn,
            token_secret=serving.hugging_face_token_secret,
            artifact_manifest=serving.artifact_manifest,
        ),
        storage=StorageDeployment(one_zone=env.storage.one_zone),
        compilation=compilation_deployment(env),
        ami_release=env.ami_release,
        network=NetworkDeployment(
            nat_gateways=env.network.nat_gateways,
            nat_instance_type=env.network.nat_instance_type,
            interface_endpoints=endpoints,
            endpoint_azs=endpoint_az_count(env) if endpoints else 0,
        ),
        standing=StandingResources(
            kms_keys=KMS_KEYS,
            alarms=alarm_count(env),
            dashboards=1,
            load_balancers=1 if serving.backend == "ec2" else 0,
        ),
    )


COMPILATION_LOGICAL_IDS: Mapping[str, str] = MappingProxyType(
    {
        "cluster": "CompileCluster",
        "task_definition": "CompileTaskDefinition",
        "security_group": "CompileSecurityGroup",
        # runs_on training-cluster (BatchModelCompilation)
        "job_queue": "CompileJobQueue",
        "job_definition": "CompileJobDefinition",
    }
)
"""The ModelCompilation's resources in the Training stack, pinned (stacks/training_stack.py) so that the
CLI finds them from cdk.json alone."""
COMPILE_SUBNETS_OUTPUT = "CompileSubnetIds"
"""The Training stack output that lists the compile task's subnets, comma-separated."""


def compilation_deployment(env: EnvironmentConfig) -> CompilationDeployment | None:
    """The environment's ModelCompilation as ``cdk-neuron compile`` finds it: in the Training stack, by
    the pinned logical ids, its subnets from that stack's output."""
    compilation = env.compilation
    if compilation is None:
        return None
    stack = TRAINING_STACK_NAME.format(env=env.name)
    if compilation.runs_on == "training-cluster":
        return CompilationDeployment(
            stack_name=stack,
            runs_on="training-cluster",
            job_queue_logical_id=COMPILATION_LOGICAL_IDS["job_queue"],
            job_definition_logical_id=COMPILATION_LOGICAL_IDS["job_definition"],
            instance_type=env.training.instance_type,
            engine=env.serving.engine.name,
            checkpoints=True,
            image=env.serving.engine.image.uri(env.region),
            artifact_bucket=compilation.artifact_bucket,
            artifact_prefix=compilation.artifact_prefix,
            aws_cli_image=env.training.job_image,
            internet=env.network.has_internet_egress,
        )
    return CompilationDeployment(
        stack_name=stack,
        cluster_logical_id=COMPILATION_LOGICAL_IDS["cluster"],
        task_definition_logical_id=COMPILATION_LOGICAL_IDS["task_definition"],
        security_group_logical_id=COMPILATION_LOGICAL_IDS["security_group"],
        subnets=({"Fn::GetStackOutput": {"StackName": stack, "OutputName": COMPILE_SUBNETS_OUTPUT}},),
        engine=env.serving.engine.name,
        checkpoints=True,
        image=env.serving.engine.image.uri(env.region),
        artifact_bucket=compilation.artifact_bucket,
        artifact_prefix=compilation.artifact_prefix,
        aws_cli_image=compile_aws_cli_image(env),
        aws_cli_cache_repository=None
        if compilation.aws_cli_image is not None
        else f"{compilation.ecr_public_cache_prefix}/aws-cli/aws-cli",
        internet=env.network.has_internet_egress,
    )


def deployments(context: Mapping[str, Any]) -> dict[str, Deployment]:
    """The loader cdk.json names for the CLI (``"cdk-neuron:deployments": "stacks.config:deployments"``)."""
    return {name: deployment(env) for name, env in load_environments(context).items()}


__all__ = [
    "COMPILATION_LOGICAL_IDS",
    "COMPILE_SUBNETS_OUTPUT",
    "KMS_KEYS",
    "PLACEHOLDER_ACCOUNT",
    "TRAINING_STACK_NAME",
    "CompilationConfig",
    "EnvironmentConfig",
    "MonitoringConfig",
    "NetworkConfig",
    "ServingConfig",
    "StorageConfig",
    "TrainingConfig",
    "alarm_count",
    "compilation_deployment",
    "compile_aws_cli_image",
    "compile_token_secret",
    "default_cache_prefix",
    "deployment",
    "deployments",
    "endpoint_az_count",
    "interface_endpoints",
    "load_cdk_json",
    "load_environments",
    "node_destinations",
    "select_environments",
    "unreachable",
]
