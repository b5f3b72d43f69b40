"""Any app's :class:`~cdk_neuron.deployment.Deployment` objects, read from its cloud assembly.

Plain Python, JSON only (no ``aws_cdk``): ``cdk synth`` writes a cloud assembly (``cdk.out``), and
every cdk-neuron training cluster, inference fleet and checkpoint store records itself there
(:mod:`cdk_neuron._manifest`): a ``cdk-neuron:workload`` metadata entry at its construct path, in
its stack's metadata file (``additionalMetadataFile`` in ``manifest.json``; older CDKs inline
``metadata``). The rest of what the CLI prices is counted in the synthesized templates: KMS keys,
alarms, dashboards, load balancers, NAT gateways and NAT instances, interface endpoints, log
groups and flow logs.

**Grouping.** A Deployment is what one ``--env NAME`` names:

- the stacks of a Stage (a nested assembly, ``assembly-<stage>/``) are one Deployment, named after
  the Stage: a Stage is CDK's unit of "one copy of the app in one environment", as in this
  repository's app;
- top-level stacks are grouped by their environment (account and Region), named after the Region
  (``<account>-<region>`` when two accounts share one; ``default`` for environment-agnostic
  stacks). Grouping by stack instead would split the usual Network / Training / Serving stacks of
  one environment into three Deployments, and the VPC's NAT and endpoints, which bill whatever
  runs, would belong to none of the workloads that need them.

A group holding more than one training cluster or more than one fleet becomes one Deployment per
workload, named by construct path (``dev/Training/Cluster``); the group's standing resources
(NAT, endpoints, keys, alarms) are counted once, with its first Deployment.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cdk_neuron import ami, planner
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
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.training.capacity import Capacity

WORKLOAD_METADATA = "cdk-neuron:workload"
"""The metadata type each construct records (:data:`cdk_neuron._manifest.WORKLOAD_METADATA`)."""
TEMPLATE_METADATA = "cdk-neuron:workloads"
"""The template ``Metadata`` key holding the same records (:data:`cdk_neuron._manifest.TEMPLATE_METADATA`):
what a deployed template (CloudFormation ``GetTemplate``) says about its workloads."""
RECORD_VERSION = 1
STACK = "aws:cloudformation:stack"
NESTED_ASSEMBLY = "cdk:cloud-assembly"
AGNOSTIC = "default"
"""The name of the group of environment-agnostic top-level stacks."""

_AMI_RELEASE_PARAMETER = re.compile(rf"^{re.escape(ami.PARAMETER_PREFIX)}/(?P<release>[^/]+)/image_id$")
_BOOTSTRAP_PARAMETER = re.compile(r"^/cdk-bootstrap/(?P<qualifier>[^/]+)/version$")
_ENVIRONMENT = re.compile(r"^aws://(?P<account>[^/]+)/(?P<region>[^/]+)$")
_SERVICE_NAME = re.compile(
    r"^(?:aws\.sagemaker\.|com\.amazonaws\.|cn\.com\.amazonaws\.)[a-z0-9-]+\.(?P<service>.+)$"
)


@dataclass(frozen=True)
class Record:
    """One workload's ``cdk-neuron:workload`` entry, at its construct path, in a stack."""

    path: str
    data: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.data.get("kind"))


@dataclass(frozen=True)
class Stack:
    """A stack artifact: where it deploys, its template and the workloads it records."""

    artifact_id: str
    stack_name: str
    path: str
    """The stack's construct path (``/dev/Training``)."""
    stage: str | None
    account: str | None
    region: str | None
    template: Mapping[str, Any]
    records: tuple[Record, ...]
    qualifier: str | None = None
    """The CDK bootstrap qualifier its synthesizer checks for, when it names one."""


# --------------------------------------------------------------------------------------------
# Reading the assembly
# --------------------------------------------------------------------------------------------


def _read(path: Path, what: str, field: str = "--app") -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NeuronConfigError(field, str(path.parent), f"cannot read its {what} ({error})") from None


def has_manifest(directory: str | Path) -> bool:
    return (Path(directory) / "manifest.json").is_file()


def _environment(value: object) -> tuple[str | None, str | None]:
    match = _ENVIRONMENT.match(value) if isinstance(value, str) else None
    if match is None:
        return None, None
    account, region = match["account"], match["region"]
    # An app that names no account synthesizes for unknown-account (or the library's placeholder).
    return (
        None if account.startswith("unknown-") or account == PLACEHOLDER_ACCOUNT else account,
        None if region.startswith("unknown-") else region,
    )


def _metadata(directory: Path, artifact: Mapping[str, Any]) -> Mapping[str, Any]:
    """The stack's metadata by construct path: its own file (CDK >= 2.170), else inline."""
    name = artifact.get("additionalMetadataFile")
    if isinstance(name, str):
        found = _read(directory / name, name)
        return found if isinstance(found, dict) else {}
    inline = artifact.get("metadata")
    return inline if isinstance(inline, dict) else {}


def _record(path: object, data: object, key: str) -> Record | None:
    if not isinstance(data, dict):
        return None
    if data.get("version") != RECORD_VERSION:
        raise NeuronConfigError(
            f"{path} {key}.version",
            data.get("version"),
            f"this cdk-neuron reads version {RECORD_VERSION}: use the cdk-neuron the app synthesizes with",
        )
    return Record(str(path), data)


def _records(metadata: Mapping[str, Any]) -> tuple[Record, ...]:
    records = []
    for path, entries in metadata.items():
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or entry.get("type") != WORKLOAD_METADATA:
                continue
            if (found := _record(path, entry.get("data"), WORKLOAD_METADATA)) is not None:
                records.append(found)
    return tuple(records)


def template_records(template: Mapping[str, Any]) -> tuple[Record, ...]:
    """The records a template carries in its ``Metadata`` section (a deployed one included); empty for a
    template synthesized before cdk-neuron wrote them there."""
    metadata = template.get("Metadata")
    found = metadata.get(TEMPLATE_METADATA) if isinstance(metadata, dict) else None
    if not isinstance(found, dict):
        return ()
    return tuple(
        r for path, data in found.items() if (r := _record(path, data, TEMPLATE_METADATA)) is not None
    )


def _qualifier(properties: Mapping[str, Any]) -> str | None:
    parameter = properties.get("bootstrapStackVersionSsmParameter")
    match = _BOOTSTRAP_PARAMETER.match(parameter) if isinstance(parameter, str) else None
    return match["qualifier"] if match else None


def read_stacks(directory: str | Path, *, stage: str | None = None, field: str = "--app") -> list[Stack]:
    """Every stack of the assembly and of its nested assemblies (Stages), in manifest order.

    ``field`` is the argument the folder came from (``--app``, ``--diff``, impact's ``OLD``), which
    every error names.
    """
    directory = Path(directory)
    if not has_manifest(directory):
        raise NeuronConfigError(
            field,
            str(directory),
            "holds no manifest.json: give the cloud assembly folder cdk synth writes (cdk.out)",
        )
    manifest = _read(directory / "manifest.json", "manifest.json", field)
    artifacts = manifest.get("artifacts") if isinstance(manifest, dict) else None
    stacks: list[Stack] = []
    for artifact_id, artifact in (artifacts or {}).items():
        if not isinstance(artifact, dict):
            continue
        properties = artifact.get("properties") or {}
        if artifact.get("type") == NESTED_ASSEMBLY:
            folder = properties.get("directoryName", artifact_id)
            name = properties.get("displayName") or str(folder).removeprefix("assembly-")
            stacks += read_stacks(directory / folder, stage=str(name), field=field)
        elif artifact.get("type") == STACK:
            template_file = properties.get("templateFile", f"{artifact_id}.template.json")
            template = _read(directory / template_file, template_file, field)
            account, region = _environment(artifact.get("environment"))
            display = str(artifact.get("displayName") or artifact_id)
            stacks.append(
                Stack(
                    artifact_id=artifact_id,
                    stack_name=str(properties.get("stackName") or artifact_id),
                    path="/" + display,
                    stage=stage,
                    account=account,
                    region=region,
                    template=template if isinstance(template, dict) else {},
                    records=_records(_metadata(directory, artifact)),
                    qualifier=_qualifier(properties),
                )
            )
    return stacks


# --------------------------------------------------------------------------------------------
# What the templates say bills by the hour or month
# --------------------------------------------------------------------------------------------


def _resources(stacks: Iterable[Stack], kind: str) -> list[Mapping[str, Any]]:
    return [
        resource.get("Properties") or {}
        for stack in stacks
        for resource in (stack.template.get("Resources") or {}).values()
        if isinstance(resource, dict) and resource.get("Type") == kind
    ]


def endpoint_service(value: object) -> str:
    """``com.amazonaws.us-east-1.ecr.api`` (or ``Fn::Join`` of it around ``AWS::Region``) -> ``ecr.api``."""
    if isinstance(value, str):
        match = _SERVICE_NAME.match(value)
        return match["service"] if match else value
    if isinstance(value, dict) and isinstance(value.get("Fn::Join"), list) and len(value["Fn::Join"]) == 2:
        separator, parts = value["Fn::Join"]
        # What follows the last token (the Region): ".ecr.api" with separator "", or "ecr.api" with ".".
        tail: list[str] = []
        for part in reversed(parts):
            if not isinstance(part, str):
                break
            tail.insert(0, part)
        text = str(separator).join(tail).strip(".")
        if text:
            return text
    return "unknown service"


def _is_false(value: object) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")


def network(stacks: Iterable[Stack]) -> NetworkDeployment:
    """NAT devices and interface endpoints, counted in the templates."""
    stacks = list(stacks)
    nat_instances = [
        p for p in _resources(stacks, "AWS::EC2::Instance") if _is_false(p.get("SourceDestCheck"))
    ]
    endpoints = [
        p for p in _resources(stacks, "AWS::EC2::VPCEndpoint") if p.get("VpcEndpointType") == "Interface"
    ]
    azs = [len(p["SubnetIds"]) if isinstance(p.get("SubnetIds"), list) else 1 for p in endpoints]
    if nat_instances:
        instance_type = nat_instances[0].get("InstanceType")
        return NetworkDeployment(
            nat_gateways=len(nat_instances),
            nat_instance_type=instance_type if isinstance(instance_type, str) else None,
            interface_endpoints=tuple(endpoint_service(p.get("ServiceName")) for p in endpoints),
            endpoint_azs=max(azs, default=0),
        )
    return NetworkDeployment(
        nat_gateways=len(_resources(stacks, "AWS::EC2::NatGateway")),
        interface_endpoints=tuple(endpoint_service(p.get("ServiceName")) for p in endpoints),
        endpoint_azs=max(azs, default=0),
    )


def _key_name(properties: Mapping[str, Any], index: int) -> str:
    description = properties.get("Description")
    return description if isinstance(description, str) and description else f"key {index + 1}"


def ami_release(stacks: Iterable[Stack]) -> str | None:
    """The Neuron AMI release the templates resolve (one ``.../neuron/<release>/image_id`` parameter)."""
    found = {
        match["release"]
        for stack in stacks
        for parameter in (stack.template.get("Parameters") or {}).values()
        if isinstance(parameter, dict)
        and (match := _AMI_RELEASE_PARAMETER.match(str(parameter.get("Default"))))
    }
    return found.pop() if len(found) == 1 else None


def standing(stacks: Iterable[Stack]) -> StandingResources:
    """Keys, alarms, dashboards, load balancers, log groups and flow logs, counted in the templates."""
    stacks = list(stacks)
    keys = _resources(stacks, "AWS::KMS::Key")
    return StandingResources(
        kms_keys=tuple(_key_name(p, i) for i, p in enumerate(keys)),
        alarms=len(_resources(stacks, "AWS::CloudWatch::Alarm")),
        dashboards=len(_resources(stacks, "AWS::CloudWatch::Dashboard")),
        load_balancers=len(_resources(stacks, "AWS::ElasticLoadBalancingV2::LoadBalancer")),
        log_groups=len(_resources(stacks, "AWS::Logs::LogGroup")),
        flow_logs=len(_resources(stacks, "AWS::EC2::FlowLog")),
    )


# --------------------------------------------------------------------------------------------
# Records back into the library's value objects
# --------------------------------------------------------------------------------------------


def _capacity(data: Mapping[str, Any]) -> Capacity:
    kind = data.get("kind", "on-demand")
    group = data.get("placement_group_name")
    if kind == "reservation":
        return Capacity.reservation(data["reservation_id"], placement_group_name=group)
    if kind == "reservation-group":
        return Capacity.reservation_group(data["resource_group_arn"], placement_group_name=group)
    if kind == "capacity-block":
        return Capacity.capacity_block(data["reservation_id"])
    if kind == "training-plan" and isinstance(data.get("training_plan_arn"), str):
        return Capacity.training_plan(data["training_plan_arn"])
    if kind == "on-demand":
        return Capacity.on_demand()
    raise NeuronConfigError(
        "capacity.kind",
        kind,
        "this cdk-neuron knows on-demand, reservation, reservation-group, capacity-block and training-plan "
        "(with its ARN): use the cdk-neuron the app synthesizes with",
    )


def compilation(record: Record, stack: Stack) -> CompilationDeployment:
    """A ModelCompilation's record: its stack, resources by logical id, and subnets (a
    BatchModelCompilation's: its job queue and job definition, and the instance it runs on)."""
    data = record.data
    if data.get("runs_on") == "training-cluster":
        return CompilationDeployment(
            stack_name=stack.stack_name,
            runs_on="training-cluster",
            job_queue_logical_id=str(data["job_queue_logical_id"]),
            job_definition_logical_id=str(data["job_definition_logical_id"]),
            instance_type=_optional_text(data.get("instance_type")),
            engine=str(data.get("engine", "optimum-neuron")),
            checkpoints=bool(data.get("checkpoints", False)),
            image=_optional_text(data.get("image")),
            artifact_bucket=_optional_text(data.get("artifact_bucket")),
            artifact_prefix=_optional_text(data.get("artifact_prefix")),
            aws_cli_image=_optional_text(data.get("tools_image")),
            internet=bool(data.get("internet", True)),
        )
    return CompilationDeployment(
        stack_name=stack.stack_name,
        cluster_logical_id=str(data["cluster_logical_id"]),
        task_definition_logical_id=str(data["task_definition_logical_id"]),
        security_group_logical_id=str(data["security_group_logical_id"]),
        subnets=tuple(data.get("subnets") or ()),
        engine=str(data.get("engine", "optimum-neuron")),
        checkpoints=bool(data.get("checkpoints", False)),
        image=_optional_text(data.get("image")),
        artifact_bucket=_optional_text(data.get("artifact_bucket")),
        artifact_prefix=_optional_text(data.get("artifact_prefix")),
        aws_cli_image=_optional_text(data.get("aws_cli_image")),
        aws_cli_cache_repository=_optional_text(data.get("aws_cli_cache_repository")),
        internet=bool(data.get("internet", True)),
    )


def _optional_text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def training(record: Record, stack: Stack, checkpoint: CheckpointSizing | None) -> TrainingDeployment:
    data = record.data
    plan = data.get("plan") or {}
    instance_type = str(data["instance_type"])
    engine = data.get("engine", "batch")
    jobs = None
    hyperpod = None
    if engine == "batch":
        jobs = JobQueueLocation(
            stack_name=stack.stack_name,
            job_queue_logical_id=data.get("job_queue_logical_id"),
            job_definition_logical_id=data.get("job_definition_logical_id"),
        )
    elif engine == "hyperpod":
        controller = data.get("controller_instance_type")
        hyperpod = HyperPodLocation(
            stack_name=stack.stack_name,
            cluster_logical_id=data.get("cluster_logical_id"),
            **({"controller_instance_type": str(controller)} if controller else {}),
        )
    return TrainingDeployment(
        instance_type=instance_type,
        max_nodes=int(data["max_nodes"]),
        # Validated at synthesis: an unlisted TP the app opted into is taken as recorded.
        plan=planner.plan_training(
            instance_type,
            int(plan["nodes"]),
            int(plan["tensor_parallel"]),
            int(plan.get("pipeline_parallel", 1)),
            plan.get("logical_nc_config"),
            allow_unlisted_tp=True,
            model=planner.TrainingModel(**plan["model"]) if plan.get("model") else None,
            zero1=bool(plan.get("zero1", True)),
            activation_checkpointing=str(plan.get("activation_checkpointing", "none")),
            recompute=plan.get("recompute"),
        ),
        capacity=_capacity(data.get("capacity") or {}),
        engine=engine,
        job_image=data.get("job_image"),
        checkpoint=checkpoint,
        jobs=jobs,
        worker_count=data.get("worker_count") if engine == "hyperpod" else None,
        hyperpod=hyperpod,
    )


def _engine(name: object) -> ServingEngine:
    factories: dict[str, Callable[[], ServingEngine]] = {
        "optimum-neuron": ServingEngine.optimum_neuron,
        "tgi": ServingEngine.tgi,
        "vllm-neuron": ServingEngine.vllm_neuron,
    }
    if name not in factories:
        raise NeuronConfigError("engine", name, f"this cdk-neuron knows {one_of(factories)}")
    return factories[str(name)]()


_MODEL_FIELDS = (
    "model_id",
    "artifact_uri",
    "parameters",
    "dtype",
    "sequence_length",
    "batch_size",
    "tensor_parallel",
)


def _fleet_setting(name: str) -> re.Pattern[str]:
    """``NAME=value`` on a line of its own inside one literal fragment of an EC2 fleet's user data
    (/etc/cdk-neuron/fleet.env, shell-quoted): a value a token interrupts is not taken."""
    return re.compile(rf"(?:^|\n){name}=(\S+)\n")


def _settings(pattern: re.Pattern[str], fragment: str) -> set[str]:
    """The unquoted, non-empty values of a fleet setting in ``fragment``."""
    found = set()
    for raw in pattern.findall(fragment):
        try:
            words = shlex.split(raw)
        except ValueError:
            continue
        if len(words) == 1 and words[0]:
            found.add(words[0])
    return found


_FLEET_IMAGE = _fleet_setting("IMAGE")
_FLEET_TOKEN_SECRET = _fleet_setting("HF_TOKEN_SECRET_ARN")


def _strings(value: object) -> Iterable[str]:
    """Every literal string inside an intrinsic (a ``Fn::Base64`` of a ``Fn::Join``, ...), in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


@dataclass(frozen=True)
class FleetResources:
    """What the fleet's own resources in the template say: its image, certificate and token secret."""

    image: str | None = None
    certificate_arn: str | None = None
    token_secret: str | None = None


def _one(found: set[str]) -> str | None:
    return next(iter(found)) if len(found) == 1 else None


def fleet_resources(stack: Stack, record: Record) -> FleetResources:
    """The fleet at ``record``, read from its stack's template; each value only when it is one literal.

    The image: a SageMaker model's container image, or the ``IMAGE=`` an EC2 fleet's launch
    template user data sets; the HTTPS listener's certificate; the Hugging Face token secret the
    user data names. Resources carrying ``aws:cdk:path`` metadata count only under the fleet's path.
    """
    images: set[str] = set()
    certificates: set[str] = set()
    secrets: set[str] = set()
    for resource in (stack.template.get("Resources") or {}).values():
        if not isinstance(resource, dict):
            continue
        path = (resource.get("Metadata") or {}).get("aws:cdk:path")
        if isinstance(path, str) and not ("/" + path).startswith(record.path + "/"):
            continue
        properties = resource.get("Properties") or {}
        kind = resource.get("Type")
        if kind == "AWS::SageMaker::Model":
            containers = [properties.get("PrimaryContainer") or {}, *(properties.get("Containers") or [])]
            images.update(
                c["Image"] for c in containers if isinstance(c, dict) and isinstance(c.get("Image"), str)
            )
        elif kind == "AWS::EC2::LaunchTemplate":
            for fragment in _strings((properties.get("LaunchTemplateData") or {}).get("UserData")):
                images.update(_settings(_FLEET_IMAGE, fragment))
                secrets.update(_settings(_FLEET_TOKEN_SECRET, fragment))
        elif kind == "AWS::ElasticLoadBalancingV2::Listener":
            for certificate in properties.get("Certificates") or []:
                if isinstance(certificate, dict) and isinstance(certificate.get("CertificateArn"), str):
                    certificates.add(certificate["CertificateArn"])
    return FleetResources(image=_one(images), certificate_arn=_one(certificates), token_secret=_one(secrets))


def serving(record: Record, fleet: FleetResources | None = None) -> ServingDeployment:
    data = record.data
    fleet = fleet or FleetResources()
    fields = {k: v for k, v in (data.get("model") or {}).items() if k in _MODEL_FIELDS and v is not None}
    model = ModelSpec(**fields)
    instance_type = str(data["instance_type"])
    plan = model.plan(instance_type)
    recorded_tp = data.get("tensor_parallel")
    if isinstance(recorded_tp, int) and plan.tensor_parallel != recorded_tp:
        plan = replace(model, tensor_parallel=recorded_tp).plan(instance_type)
    return ServingDeployment(
        backend=data.get("backend", "ec2"),
        engine=_engine(data.get("engine", "optimum-neuron")),
        model=model,
        plan=plan,
        min_capacity=int(data.get("min_capacity", 0)),
        max_capacity=int(data["max_capacity"]),
        warm_pool=bool(data.get("warm_pool", False)),
        warm_pool_size=data["warm_pool_size"] if isinstance(data.get("warm_pool_size"), int) else None,
        instance_type=instance_type,
        image=fleet.image,
        certificate_arn=fleet.certificate_arn,
        token_secret=fleet.token_secret,
        availability_zones=tuple(str(z) for z in data.get("availability_zones") or ()),
    )


def _at(record: Record, build: Callable[[], Any]) -> Any:
    """``build()``, with any refusal naming the construct whose record it read."""
    try:
        return build()
    except NeuronConfigError as error:
        raise error.at(record.path.lstrip("/")) from None
    except (KeyError, TypeError, ValueError) as error:
        raise NeuronConfigError(
            WORKLOAD_METADATA, dict(record.data), f"cannot read this record ({error!r})"
        ).at(record.path.lstrip("/")) from None


# --------------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------------


@dataclass
class _Group:
    stage: str | None
    account: str | None
    region: str | None
    stacks: list[Stack] = field(default_factory=list)


def _groups(stacks: Iterable[Stack]) -> dict[str, _Group]:
    by_key: dict[tuple[str | None, str | None, str | None], _Group] = {}
    for stack in stacks:
        key = (stack.stage, stack.account, stack.region)
        by_key.setdefault(key, _Group(*key)).stacks.append(stack)
    named: dict[str, _Group] = {}
    for (stage, account, region), group in by_key.items():
        if stage is not None:
            spread = sum(1 for s, _, _ in by_key if s == stage) > 1
            name = f"{stage}-{region or AGNOSTIC}" if spread else stage
        elif region is None:
            name = AGNOSTIC
        else:
            shared = sum(1 for s, _, r in by_key if s is None and r == region) > 1
            name = f"{account or 'unknown'}-{region}" if shared else region
        named[name] = group
    return named


def _common_prefix(a: str, b: str) -> int:
    parts_a, parts_b = a.strip("/").split("/"), b.strip("/").split("/")
    count = 0
    for x, y in zip(parts_a, parts_b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _checkpoint_for(path: str, stores: Sequence[Record]) -> CheckpointSizing | None:
    """The checkpoint store nearest the cluster in the construct tree, sized when it names a model."""
    store = _nearest([s for s in stores if s.data.get("model_parameters")], path)
    if store is None:
        return None
    return CheckpointSizing(
        model_parameters=int(store.data["model_parameters"]),
        writers=int(store.data.get("writers", 1)),
        master_weights_in_checkpoint=bool(store.data.get("master_weights_in_checkpoint", False)),
    )


def _region(group: _Group, name: str) -> str:
    if group.region is not None:
        return group.region
    for variable in ("CDK_DEFAULT_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable):
            return os.environ[variable]
    raise NeuronConfigError(
        f"{name}.region",
        None,
        "its stacks are environment-agnostic: give them env=cdk.Environment(region=...) or set AWS_REGION",
    )


def _nearest(records: Sequence[Record], path: str) -> Record | None:
    """The record nearest ``path`` in the construct tree (the longest common path prefix)."""
    return max(records, key=lambda r: _common_prefix(r.path, path), default=None)


def _deployments(name: str, group: _Group) -> list[Deployment]:
    records = [(r, s) for s in group.stacks for r in s.records]
    trainings = [(r, s) for r, s in records if r.kind == "training"]
    servings = [(r, s) for r, s in records if r.kind == "serving"]
    if not trainings and not servings:
        return []
    stores = [r for r, _ in records if r.kind == "checkpoints"]
    compilations = [(r, s) for r, s in records if r.kind == "compilation"]
    region = _region(group, name)

    def build(
        deployment_name: str,
        train: tuple[Record, Stack] | None,
        serve: tuple[Record, Stack] | None,
        paths: Iterable[str],
        *,
        with_standing: bool,
    ) -> Deployment:
        train_record = train[0] if train else None
        store = _nearest(stores, train_record.path) if train_record is not None else None
        nearest = (
            max(compilations, key=lambda pair: _common_prefix(pair[0].path, serve[0].path))
            if serve is not None and compilations
            else None
        )
        zone = train_record.data.get("availability_zone_id") if train_record is not None else None
        return Deployment(
            name=deployment_name,
            region=region,
            account=group.account,
            az_ids=(str(zone),) if zone else (),
            training=_at(
                train[0], lambda: training(train[0], train[1], _checkpoint_for(train[0].path, stores))
            )
            if train
            else None,
            serving=_at(serve[0], lambda: serving(serve[0], fleet_resources(serve[1], serve[0])))
            if serve
            else None,
            compilation=_at(nearest[0], lambda: compilation(*nearest)) if nearest is not None else None,
            storage=StorageDeployment(one_zone=bool(store.data.get("one_zone", False)))
            if store is not None
            else StorageDeployment(),
            network=network(group.stacks) if with_standing else NetworkDeployment(),
            standing=standing(group.stacks) if with_standing else StandingResources(),
            construct_paths=tuple(paths),
            ami_release=ami_release(group.stacks),
        )

    if len(trainings) <= 1 and len(servings) <= 1:
        paths = [s.path for s in group.stacks] + [r.path for r, _ in records]
        return [
            build(
                name,
                trainings[0] if trainings else None,
                servings[0] if servings else None,
                paths,
                with_standing=True,
            )
        ]
    # Several clusters or fleets: one Deployment each, the group's standing resources counted once.
    workloads = sorted(trainings + servings, key=lambda pair: pair[0].path)
    return [
        build(
            record.path.strip("/"),
            (record, stack) if record.kind == "training" else None,
            (record, stack) if record.kind == "serving" else None,
            (stack.path, record.path),
            with_standing=index == 0,
        )
        for index, (record, stack) in enumerate(workloads)
    ]


def deployments(
    stacks: Iterable[Stack], *, source: str = "the cloud assembly", field: str = "--app"
) -> dict[str, Deployment]:
    """``{name: Deployment}`` in manifest order (see the module docstring for the grouping)."""
    found: dict[str, Deployment] = {}
    for name, group in _groups(stacks).items():
        for deployment in _deployments(name, group):
            found[deployment.name] = deployment
    if not found:
        raise NeuronConfigError(
            field,
            source,
            "records no cdk-neuron training cluster or inference fleet: synthesize an app that uses "
            "BatchTrainingCluster, AutoScalingTrainingCluster, Ec2InferenceFleet or SageMakerInferenceFleet",
        )
    return found


def load(directory: str | Path, *, field: str = "--app") -> dict[str, Deployment]:
    """The Deployments of the cloud assembly in ``directory`` (``cdk.out``); errors name ``field``,
    the argument the folder came from."""
    return deployments(read_stacks(directory, field=field), source=str(directory), field=field)


def bootstrap_qualifier(directory: str | Path) -> str | None:
    """The bootstrap qualifier the assembly's stacks check for (None: none named)."""
    for stack in read_stacks(directory):
        if stack.qualifier is not None:
            return stack.qualifier
    return None


def select_path(deployments: Mapping[str, Deployment], path: str) -> Deployment:
    """The Deployment holding the construct at ``path`` (``dev/Training/Cluster``, ``/dev``, ...)."""
    wanted = path.strip("/")
    if not wanted:
        raise NeuronConfigError("--path", path, "give a construct path such as dev/Training/Cluster")

    depth = len(wanted.split("/"))

    def closeness(deployment: Deployment) -> int:
        """How deep the nearest of its construct paths meets ``wanted`` (0: not at all)."""
        best = 0
        for own in (p.strip("/") for p in deployment.construct_paths):
            if own == wanted or own.startswith(wanted + "/"):
                best = max(best, depth)
            elif wanted.startswith(own + "/"):
                best = max(best, len(own.split("/")))
        return best

    scores = {name: closeness(d) for name, d in deployments.items()}
    top = max(scores.values(), default=0)
    matching = [deployments[name] for name, score in scores.items() if score and score == top]
    if not matching:
        if not any(d.construct_paths for d in deployments.values()):
            raise NeuronConfigError(
                "--path", path, "selects by construct path in a cloud assembly: add --app DIR or --synth"
            )
        known = sorted({p.strip("/") for d in deployments.values() for p in d.construct_paths})
        raise NeuronConfigError("--path", path, f"no deployment holds it; construct paths: {one_of(known)}")
    if len(matching) > 1:
        raise NeuronConfigError(
            "--path",
            path,
            f"is in several deployments ({', '.join(d.name for d in matching)}): give a longer path",
        )
    return matching[0]


__all__ = [
    "AGNOSTIC",
    "Record",
    "Stack",
    "bootstrap_qualifier",
    "deployments",
    "endpoint_service",
    "has_manifest",
    "load",
    "network",
    "read_stacks",
    "select_path",
    "standing",
    "template_records",
]
