"""``cdk-neuron preflight``: will ``cdk deploy`` work in this account? Read-only checks, one row each.

- the credentials' account is the configured one (``sts:GetCallerIdentity``);
- every configured AZ ID offers the instance types (``ec2:DescribeInstanceTypeOfferings`` with
  location type ``availability-zone-id``);
- the On-Demand vCPU quotas cover max nodes and the max fleet (``servicequotas:GetServiceQuota``),
  and for SageMaker the endpoint-instance quota (``servicequotas:ListServiceQuotas``);
- a configured capacity reservation or Capacity Block exists, is active and matches the instance
  type and the training AZ ID (``ec2:DescribeCapacityReservations``; groups via
  ``resource-groups:GetGroup`` / ``ListGroupResources``);
- the AMI SSM parameters resolve (``ssm:GetParameter``);
- a model ``artifact_uri`` holds a self-contained precompiled model: a compiled graph, weights,
  and the config and tokenizer (``s3:ListBucket`` on the prefix, i.e. ``ListObjectsV2``).

Any FAIL row makes the command exit 1. A check that AWS refuses to answer (for example
AccessDenied) is a FAIL row that says so: an unverified check is not a pass.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cdk_neuron import catalog
from cdk_neuron.cli.aws import ClientFactory, credentials_problem, error_code, error_summary
from cdk_neuron.cli.output import Column, Report, Status, document
from cdk_neuron.deployment import Deployment
from cdk_neuron.serving.model_spec import parse_s3_uri


@dataclass(frozen=True)
class QuotaSpec:
    code: str
    name: str


# EC2 On-Demand vCPU quotas by instance family prefix, service code "ec2". The codes and names are
# those ListServiceQuotas returns (e.g. a published dump of an account's adjustable quotas lists
# "Amazon Elastic Compute Cloud (Amazon EC2) | ec2 | Running On-Demand Trn instances | L-2C3B7624");
# independent tools (quota checkers, cost tools) pin the same pairs. preflight also compares the
# QuotaName the API returns, so a changed code shows up as a WARN instead of a silent mismatch.
EC2_VCPU_QUOTAS: dict[str, QuotaSpec] = {
    "trn": QuotaSpec("L-2C3B7624", "Running On-Demand Trn instances"),
    "inf": QuotaSpec("L-1945791B", "Running On-Demand Inf instances"),
}
# SageMaker endpoint quotas count instances per type. Their codes differ per type, so they are
# found by name ("ml.inf2.48xlarge for endpoint usage") instead of pinning codes.
SAGEMAKER_ENDPOINT_QUOTA_NAME = "ml.{instance_type} for endpoint usage"

# Which AMI parameter each part of the deployment resolves at deploy time.
TRAINING_AMI_PARAMETERS: dict[str, str] = {
    "batch": catalog.ECS_NEURON_AMI_PARAMETER,
    "auto-scaling-group": catalog.ECS_NEURON_AMI_PARAMETER,
}
# EC2 serving instances boot the same ECS-optimized AL2023 Neuron AMI (cdk_neuron.serving.ec2_backend).
SERVING_AMI_PARAMETER = catalog.ECS_NEURON_AMI_PARAMETER

# Capacity reservation states (EC2 CapacityReservation.State).
_USABLE_STATES = {"active"}
_NOT_YET_STATES = {"scheduled", "pending", "payment-pending", "assessing", "delayed"}


@dataclass(frozen=True)
class Row:
    environment: str
    check: str
    subject: str
    status: Status
    detail: str
    command: str | None = None
    """A command line that fixes (or checks further) what the row reports, printed whole."""

    def as_dict(self) -> dict[str, str | None]:
        return {
            "environment": self.environment,
            "check": self.check,
            "subject": self.subject,
            "status": self.status,
            "detail": self.detail,
            "command": self.command,
        }


@dataclass(frozen=True)
class Context:
    env: Deployment
    all_envs: Sequence[Deployment]
    clients: ClientFactory
    qualifier: str = "hnb659fds"
    """The CDK bootstrap qualifier (cdk.json ``@aws-cdk/core:bootstrapQualifier``)."""

    def client(self, service: str) -> Any:
        return self.clients(service, self.env.region)

    def row(self, check: str, subject: str, status: Status, detail: str, command: str | None = None) -> Row:
        return Row(self.env.name, check, subject, status, detail, command)


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def check_account(ctx: Context) -> list[Row]:
    identity = ctx.client("sts").get_caller_identity()
    actual = identity["Account"]
    configured = ctx.env.account
    who = f"calling as {identity.get('Arn', '?')}"
    if configured and configured != actual:
        return [
            ctx.row(
                "account",
                configured,
                "FAIL",
                f"{who} in account {actual}, but cdk.json deploys to {configured}",
            )
        ]
    if not configured:
        return [ctx.row("account", actual, "PASS", f"{who}; cdk.json names no account, so deploys go here")]
    return [ctx.row("account", actual, "PASS", who)]


def _offered_pairs(ec2: Any, instance_types: Sequence[str], az_ids: Sequence[str]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    kwargs: dict[str, Any] = {
        "LocationType": "availability-zone-id",
        "Filters": [
            {"Name": "instance-type", "Values": list(instance_types)},
            {"Name": "location", "Values": list(az_ids)},
        ],
    }
    while True:
        page = ec2.describe_instance_type_offerings(**kwargs)
        pairs.update((o["InstanceType"], o["Location"]) for o in page.get("InstanceTypeOfferings", []))
        if not page.get("NextToken"):
            return pairs
        kwargs["NextToken"] = page["NextToken"]


def check_offerings(ctx: Context) -> list[Row]:
    env = ctx.env
    wanted = [(env.training.instance_type, env.training_az_id, "training")]
    serving_type = env.serving.resolved_instance_type
    if env.serving.backend == "ec2":
        wanted += [(serving_type, az, "serving") for az in env.az_ids]
    types = sorted({t for t, _, _ in wanted})
    offered = _offered_pairs(ctx.client("ec2"), types, sorted({az for _, az, _ in wanted}))
    rows = []
    for instance_type, az_id, role in wanted:
        if (instance_type, az_id) in offered:
            rows.append(ctx.row("offering", f"{instance_type} @ {az_id}", "PASS", f"{role}: offered"))
        else:
            where = sorted(az for t, az in offered if t == instance_type)
            rows.append(
                ctx.row(
                    "offering",
                    f"{instance_type} @ {az_id}",
                    "FAIL",
                    f"{role}: not offered in {az_id}"
                    + (f" (of the configured AZ IDs it is offered in {', '.join(where)})" if where else "")
                    + "; change az_ids or the instance type",
                )
            )
    if env.serving.backend == "sagemaker":
        rows.append(
            ctx.row(
                "offering",
                f"ml.{serving_type}",
                "INFO",
                "SageMaker places endpoint instances itself; EC2 AZ offerings do not apply",
            )
        )
    return rows


def _family(instance_type: str) -> str:
    return "trn" if instance_type.startswith("trn") else "inf"


def _vcpu_needs(ctx: Context) -> dict[str, list[tuple[str, int]]]:
    """vCPUs per quota family for every environment sharing this account and Region."""
    account, region = ctx.env.resolve_account(), ctx.env.region
    needs: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for env in ctx.all_envs:
        if env.region != region or env.resolve_account() != account:
            continue
        training = catalog.get_instance(env.training.instance_type)
        if env.training.capacity.kind != "capacity-block":
            needs[_family(training.name)].append(
                (
                    f"{env.name} training {env.training.max_nodes} x {training.name}",
                    env.training.max_nodes * training.vcpus,
                )
            )
        if env.serving.backend == "ec2":
            serving = catalog.get_instance(env.serving.resolved_instance_type)
            needs[_family(serving.name)].append(
                (
                    f"{env.name} serving {env.serving.max_capacity} x {serving.name}",
                    env.serving.max_capacity * serving.vcpus,
                )
            )
    return needs


def _quota_value(quotas: Any, service: str, code: str) -> tuple[float, str]:
    try:
        quota = quotas.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    except Exception as error:
        # A quota never adjusted in this account has no applied value: fall back to AWS's default.
        if error_code(error) != "NoSuchResourceException":
            raise
        quota = quotas.get_aws_default_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    return float(quota["Value"]), str(quota.get("QuotaName", ""))


def check_ec2_quotas(ctx: Context) -> list[Row]:
    rows = []
    quotas = ctx.client("service-quotas")
    needs = _vcpu_needs(ctx)
    own_families = {_family(ctx.env.training.instance_type)}
    if ctx.env.serving.backend == "ec2":
        own_families.add(_family(ctx.env.serving.resolved_instance_type))
    for family in sorted(own_families & set(needs)):
        spec = EC2_VCPU_QUOTAS[family]
        needed = sum(v for _, v in needs[family])
        breakdown = " + ".join(f"{label} ({v})" for label, v in needs[family])
        value, name = _quota_value(quotas, "ec2", spec.code)
        subject = f"{spec.name} ({spec.code})"
        if name and name != spec.name:
            rows.append(
                ctx.row(
                    "quota", subject, "WARN", f"the API names {spec.code} {name!r}; verify the quota code"
                )
            )
        if value >= needed:
            rows.append(ctx.row("quota", subject, "PASS", f"{value:g} vCPUs >= {needed} needed: {breakdown}"))
        else:
            rows.append(
                ctx.row(
                    "quota",
                    subject,
                    "FAIL",
                    f"{value:g} vCPUs < {needed} needed: {breakdown}. Request an increase (command below)",
                    f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {spec.code} "
                    f"--desired-value {needed} --region {ctx.env.region}",
                )
            )
    if ctx.env.training.capacity.kind == "capacity-block":
        rows.append(
            ctx.row(
                "quota",
                "training (Capacity Block)",
                "INFO",
                "not counted: instances launch into the purchased block; whether they also draw on the "
                "On-Demand vCPU quota is not verified here",
            )
        )
    return rows


def _find_quota_by_name(quotas: Any, service: str, name: str) -> dict[str, Any] | None:
    kwargs: dict[str, Any] = {"ServiceCode": service}
    while True:
        page = quotas.list_service_quotas(**kwargs)
        for quota in page.get("Quotas", []):
            if quota.get("QuotaName") == name:
                return dict(quota)
        if not page.get("NextToken"):
            return None
        kwargs["NextToken"] = page["NextToken"]


def check_sagemaker_quota(ctx: Context) -> list[Row]:
    if ctx.env.serving.backend != "sagemaker":
        return []
    name = SAGEMAKER_ENDPOINT_QUOTA_NAME.format(instance_type=ctx.env.serving.resolved_instance_type)
    needed = ctx.env.serving.max_capacity
    quota = _find_quota_by_name(ctx.client("service-quotas"), "sagemaker", name)
    if quota is None:
        return [
            ctx.row(
                "quota",
                name,
                "INFO",
                f"no quota of that name in ListServiceQuotas (sagemaker); check in the Service Quotas console "
                f"that it allows {needed} instances",
            )
        ]
    value = float(quota["Value"])
    subject = f"{name} ({quota.get('QuotaCode', '?')})"
    if value >= needed:
        return [ctx.row("quota", subject, "PASS", f"{value:g} instances >= max_capacity {needed}")]
    return [
        ctx.row(
            "quota",
            subject,
            "FAIL",
            f"{value:g} instances < max_capacity {needed}; request an increase in Service Quotas (sagemaker)",
        )
    ]


def _reservation_rows(ctx: Context, reservation: dict[str, Any], *, capacity_block: bool) -> list[Row]:
    training = ctx.env.training
    rid = reservation["CapacityReservationId"]
    rows = []
    state = reservation.get("State", "?")
    if state in _USABLE_STATES:
        rows.append(
            ctx.row(
                "capacity state", rid, "PASS", f"active until {reservation.get('EndDate', 'no end date')}"
            )
        )
    elif state in _NOT_YET_STATES:
        rows.append(
            ctx.row(
                "capacity state",
                rid,
                "WARN",
                f"{state}: starts {reservation.get('StartDate', '?')}; jobs wait until it is active",
            )
        )
    else:
        rows.append(
            ctx.row("capacity state", rid, "FAIL", f"{state}: the reservation cannot launch instances")
        )

    kind = reservation.get("ReservationType", "default")
    expected_kind = "capacity-block" if capacity_block else "default"
    if kind == expected_kind:
        rows.append(ctx.row("capacity type", rid, "PASS", kind))
    else:
        configured = "capacity-block" if capacity_block else "reservation"
        rows.append(
            ctx.row(
                "capacity type",
                rid,
                "FAIL",
                f"ReservationType {kind}, but cdk.json says type {configured}: the launch template would "
                "request the wrong market type",
            )
        )

    instance_type = reservation.get("InstanceType")
    if instance_type == training.instance_type:
        rows.append(ctx.row("capacity instance type", rid, "PASS", instance_type))
    else:
        rows.append(
            ctx.row(
                "capacity instance type",
                rid,
                "FAIL",
                f"reserves {instance_type}, training uses {training.instance_type}",
            )
        )

    az_id = reservation.get("AvailabilityZoneId")
    if az_id == ctx.env.training_az_id:
        rows.append(ctx.row("capacity AZ", rid, "PASS", az_id))
    else:
        rows.append(
            ctx.row(
                "capacity AZ",
                rid,
                "FAIL",
                f"reservation is in {az_id or reservation.get('AvailabilityZone', '?')}, training runs in "
                f"{ctx.env.training_az_id} (az_ids[0])",
            )
        )

    total = int(reservation.get("TotalInstanceCount", 0))
    if total >= training.max_nodes:
        rows.append(
            ctx.row(
                "capacity size",
                rid,
                "PASS",
                f"{total} instances ({reservation.get('AvailableInstanceCount', '?')} available) >= max_nodes {training.max_nodes}",
            )
        )
    else:
        rows.append(
            ctx.row(
                "capacity size",
                rid,
                "WARN",
                f"{total} instances < max_nodes {training.max_nodes}: jobs larger than {total} nodes cannot start",
            )
        )
    return rows


def _describe_reservations(ec2: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    try:
        response = ec2.describe_capacity_reservations(CapacityReservationIds=list(ids))
    except Exception as error:
        if error_code(error).startswith("InvalidCapacityReservationId"):
            return {}
        raise
    return {r["CapacityReservationId"]: r for r in response.get("CapacityReservations", [])}


def check_capacity(ctx: Context) -> list[Row]:
    capacity = ctx.env.training.capacity
    if capacity.kind == "on-demand":
        return [
            ctx.row(
                "capacity",
                "on-demand",
                "INFO",
                "no reservation configured: on-demand launches can fail with InsufficientInstanceCapacity",
            )
        ]
    ec2 = ctx.client("ec2")
    if capacity.kind in ("reservation", "capacity-block"):
        assert capacity.reservation_id is not None
        found = _describe_reservations(ec2, [capacity.reservation_id])
        if capacity.reservation_id not in found:
            return [
                ctx.row(
                    "capacity exists",
                    capacity.reservation_id,
                    "FAIL",
                    f"no capacity reservation {capacity.reservation_id} in {ctx.env.region} for this account",
                )
            ]
        rows = [ctx.row("capacity exists", capacity.reservation_id, "PASS", capacity.kind)]
        return rows + _reservation_rows(
            ctx, found[capacity.reservation_id], capacity_block=capacity.kind == "capacity-block"
        )
    return _check_reservation_group(ctx, ec2)


def _check_reservation_group(ctx: Context, ec2: Any) -> list[Row]:
    arn = ctx.env.training.capacity.resource_group_arn
    assert arn is not None
    groups = ctx.client("resource-groups")
    try:
        groups.get_group(Group=arn)
    except Exception as error:
        if error_code(error) not in ("NotFoundException", "NotFound"):
            raise
        return [ctx.row("capacity exists", arn, "FAIL", "no such resource group in this account and Region")]
    rows = [ctx.row("capacity exists", arn, "PASS", "resource group found")]
    members = groups.list_group_resources(
        Group=arn, Filters=[{"Name": "resource-type", "Values": ["AWS::EC2::CapacityReservation"]}]
    )
    ids = [
        item["Identifier"]["ResourceArn"].rsplit("/", 1)[-1]
        for item in members.get("Resources", [])
        if "ResourceArn" in item.get("Identifier", {})
    ]
    if not ids:
        return [
            *rows,
            ctx.row("capacity group members", arn, "FAIL", "the group holds no capacity reservations"),
        ]
    reservations = _describe_reservations(ec2, ids).values()
    matching = [
        r
        for r in reservations
        if r.get("State") in _USABLE_STATES
        and r.get("InstanceType") == ctx.env.training.instance_type
        and r.get("AvailabilityZoneId") == ctx.env.training_az_id
    ]
    if not matching:
        return [
            *rows,
            ctx.row(
                "capacity group members",
                arn,
                "FAIL",
                f"none of {len(ids)} reservation(s) is an active {ctx.env.training.instance_type} reservation in "
                f"{ctx.env.training_az_id}",
            ),
        ]
    total = sum(int(r.get("TotalInstanceCount", 0)) for r in matching)
    status: Status = "PASS" if total >= ctx.env.training.max_nodes else "WARN"
    return [
        *rows,
        ctx.row(
            "capacity group members",
            arn,
            status,
            f"{len(matching)} matching active reservation(s), {total} instances (max_nodes {ctx.env.training.max_nodes})",
        ),
    ]


def _parameter_row(ctx: Context, name: str, role: str) -> Row:
    try:
        value = ctx.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except Exception as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return ctx.row("AMI parameter", name, "FAIL", f"{role}: parameter not found in {ctx.env.region}")
    return ctx.row("AMI parameter", name, "PASS", f"{role}: {value}")


def check_amis(ctx: Context) -> list[Row]:
    """One row per AMI parameter the nodes resolve at deploy time, naming the roles that use it."""
    roles: dict[str, list[str]] = {TRAINING_AMI_PARAMETERS[ctx.env.training.engine]: ["training"]}
    if ctx.env.serving.backend == "ec2":
        roles.setdefault(SERVING_AMI_PARAMETER, []).append("serving")
    return [_parameter_row(ctx, name, " and ".join(users)) for name, users in roles.items()]


# What a self-contained precompiled model holds (README "Precompiled artifacts"), by the layouts the
# engines load. optimum-neuron's NxD backend (the vLLM DLC) saves config.json, neuron_config.json and
# model.pt (model_<bundle>.pt for multi-bundle models), and, only when exported from a local
# directory, checkpoint/weights/tp<rank>_sharded_checkpoint.safetensors (save() and _save_pretrained()
# in optimum/neuron/models/inference/backend/pretrained_model.py @v0.4.5 abf59858). Without
# checkpoint/ it loads *.safetensors (model.safetensors or the model-*-of-*.safetensors index layout)
# from the directory, then falls back to downloading the checkpoint from the Hub
# (load_weights(), same file; modules/checkpoint.py load_state_dict()). optimum-neuron's older
# transformers-neuronx backend (TGI 3.2.3's optimum-neuron 0.1.0) saves compiled/*.neff and, from a
# local directory, a checkpoint/ copy (modeling_decoder.py _save_pretrained() @v0.1.0). NxD Inference
# (vllm-neuron, NEURON_COMPILED_ARTIFACTS) keeps model.pt and neuron_config.json next to the
# checkpoint or its weights/ shards.
_GRAPH = re.compile(r"^(model(_[\w.-]+)?\.pt|compiled/.+\.neff)$")
_WEIGHTS = re.compile(r"(^|/)[^/]+\.safetensors$")
_SHARD = re.compile(r"^(?P<dir>(.+/)?)weights/tp(?P<rank>\d+)_sharded_checkpoint\.safetensors$")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
EXPORT_FIX = (
    "export from a local download of the checkpoint so the weights are saved with the graphs "
    "(README: Precompiled artifacts) and upload the whole output directory"
)


def _artifact_keys(s3: Any, bucket: str, prefix: str) -> list[str] | None:
    """Keys under ``prefix/``, relative to it; None when the bucket does not exist."""
    keys: list[str] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": f"{prefix}/"}
    while True:
        try:
            page = s3.list_objects_v2(**kwargs)
        except Exception as error:
            if error_code(error) == "NoSuchBucket":
                return None
            raise
        keys.extend(o["Key"][len(prefix) + 1 :] for o in page.get("Contents", []))
        if not page.get("IsTruncated"):
            return keys
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def _graph_row(ctx: Context, uri: str, keys: Sequence[str]) -> Row:
    graphs = sorted(k for k in keys if _GRAPH.match(k))
    traced = [k for k in graphs if k.endswith(".pt")]
    if traced and "neuron_config.json" not in keys:
        return ctx.row(
            "artifact graph",
            uri,
            "FAIL",
            f"{', '.join(traced)} without neuron_config.json: the engine would not recognise a Neuron model; "
            "upload the export's whole output directory",
        )
    if graphs:
        shown = traced or [f"{len(graphs)} NEFF file(s) under compiled/"]
        return ctx.row(
            "artifact graph", uri, "PASS", ", ".join(shown) + (" + neuron_config.json" if traced else "")
        )
    return ctx.row(
        "artifact graph",
        uri,
        "FAIL",
        "no compiled graph (model.pt with neuron_config.json, or compiled/*.neff): instances would compile "
        "at start-up; run optimum-cli export neuron and upload its output",
    )


def _weights_row(ctx: Context, uri: str, keys: Sequence[str]) -> Row:
    weights = [k for k in keys if _WEIGHTS.search(k)]
    if not weights:
        return ctx.row(
            "artifact weights",
            uri,
            "FAIL",
            "no weights (*.safetensors): an export from a Hub id stores only the checkpoint's name, so every "
            "instance would download it from the Hub (impossible with network isolation, no NAT or a gated "
            f"model without a token); {EXPORT_FIX}",
        )
    ranks: dict[str, set[int]] = defaultdict(set)
    for key in weights:
        match = _SHARD.match(key)
        if match:
            ranks[match["dir"]].add(int(match["rank"]))
    if not ranks:
        return ctx.row(
            "artifact weights", uri, "PASS", f"{len(weights)} safetensors file(s) (unsharded checkpoint)"
        )
    tensor_parallel = ctx.env.serving.plan.tensor_parallel
    for directory, found in sorted(ranks.items()):
        if found != set(range(tensor_parallel)):
            return ctx.row(
                "artifact weights",
                uri,
                "FAIL",
                f"{directory}weights/ holds shards for ranks {sorted(found)}, but the plan serves TP "
                f"{tensor_parallel} (ranks 0-{tensor_parallel - 1}); export with --tensor_parallel_size "
                f"{tensor_parallel} or set serving.model.tensor_parallel to the exported TP",
            )
    where = ", ".join(f"{d}weights/" for d in sorted(ranks))
    return ctx.row("artifact weights", uri, "PASS", f"TP {tensor_parallel} shards in {where}")


def _files_row(ctx: Context, uri: str, keys: Sequence[str]) -> Row:
    missing = [name for name in ("config.json",) if name not in keys]
    if not any(name in keys for name in _TOKENIZER):
        missing.append(" or ".join(_TOKENIZER))
    if missing:
        return ctx.row(
            "artifact config",
            uri,
            "FAIL",
            f"missing {'; '.join(missing)} at the prefix: the engine loads the model config and tokenizer from "
            "there; upload the export's whole output directory (optimum-cli export neuron saves both)",
        )
    return ctx.row("artifact config", uri, "PASS", "config.json and tokenizer files")


def check_artifacts(ctx: Context) -> list[Row]:
    uri = ctx.env.serving.model.artifact_uri
    if uri is None:
        return []
    location = parse_s3_uri(uri)
    keys = _artifact_keys(ctx.client("s3"), location.bucket, location.prefix)
    if keys is None:
        return [ctx.row("artifacts", location.uri, "FAIL", f"bucket {location.bucket} does not exist")]
    if not keys:
        return [
            ctx.row(
                "artifacts",
                location.uri,
                "FAIL",
                f"nothing under the prefix: {EXPORT_FIX}, e.g. aws s3 sync ./export/ {location.uri}",
            )
        ]
    return [
        ctx.row("artifacts", location.uri, "PASS", f"{len(keys)} object(s)"),
        _graph_row(ctx, location.uri, keys),
        _weights_row(ctx, location.uri, keys),
        _files_row(ctx, location.uri, keys),
    ]


CHECKS: tuple[tuple[str, Callable[[Context], list[Row]]], ...] = (
    ("account", check_account),
    ("offering", check_offerings),
    ("quota", check_ec2_quotas),
    ("quota", check_sagemaker_quota),
    ("capacity", check_capacity),
    ("AMI parameter", check_amis),
    ("artifacts", check_artifacts),
)


def _is_aws_error(error: BaseException) -> bool:
    import botocore.exceptions as bx

    return isinstance(error, (bx.ClientError, bx.BotoCoreError))


def run(
    envs: Iterable[Deployment],
    all_envs: Sequence[Deployment],
    clients: ClientFactory,
    *,
    qualifier: str = "hnb659fds",
) -> list[Row]:
    """Run every check for every environment. Credential problems abort; other AWS errors become FAIL rows."""
    rows: list[Row] = []
    for env in envs:
        ctx = Context(env, all_envs, clients, qualifier)
        for name, check in CHECKS:
            try:
                rows.extend(check(ctx))
            except Exception as error:
                problem = credentials_problem(error)
                if problem is not None:
                    raise problem from error
                if not _is_aws_error(error):
                    raise
                rows.append(ctx.row(name, "-", "FAIL", f"could not check: {error_summary(error)}"))
    return rows


def build(rows: Sequence[Row]) -> dict[str, Any]:
    failed = sum(r.status == "FAIL" for r in rows)
    return document("preflight", ok=failed == 0, failures=failed, checks=[r.as_dict() for r in rows])


_STATUSES: tuple[Status, ...] = ("FAIL", "WARN", "PASS", "INFO")


def render(doc: dict[str, Any]) -> Report:
    """A summary per environment first, then each environment's checks, then the fix commands."""
    out = Report()
    checks = doc["checks"]
    environments = list(dict.fromkeys(c["environment"] for c in checks))
    out.table(
        "preflight (read-only)",
        (Column("environment", "id"), *(Column(s.lower(), "id") for s in _STATUSES)),
        (
            (env, *(sum(c["environment"] == env and c["status"] == s for c in checks) for s in _STATUSES))
            for env in environments
        ),
    )
    for env in environments:
        out.table(
            f"{env}: checks",
            (Column("check"), Column("subject"), Column("status", "status"), Column("detail")),
            ((c["check"], c["subject"], c["status"], c["detail"]) for c in checks if c["environment"] == env),
        )
    fixes = [c for c in checks if c.get("command") and c["status"] in ("FAIL", "WARN")]
    if fixes:
        out.commands(
            "Fixes (copy and run):",
            [
                line
                for c in fixes
                for line in (f"# {c['environment']} {c['check']}: {c['subject']}", c["command"])
            ],
        )
    if doc["ok"]:
        out.line("All checks passed.")
    else:
        out.line(f"{doc['failures']} check(s) failed.", style="bold red")
    return out


__all__ = ["EC2_VCPU_QUOTAS", "Row", "build", "render", "run"]
