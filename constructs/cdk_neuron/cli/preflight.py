"""``cdk-neuron preflight``: will ``cdk deploy`` work in this account? Read-only checks, one row each.

- the credentials' account is the configured one (``sts:GetCallerIdentity``);
- every configured AZ ID offers the instance types (``ec2:DescribeInstanceTypeOfferings`` with
  location type ``availability-zone-id``);
- the On-Demand vCPU quotas cover max nodes and the max fleet (``servicequotas:GetServiceQuota``),
  and for SageMaker the endpoint-instance quota (``servicequotas:ListServiceQuotas``);
- a configured capacity reservation or Capacity Block exists, is active and matches the instance
  type and the training AZ ID (``ec2:DescribeCapacityReservations``; groups via
  ``resource-groups:GetGroup`` / ``ListGroupResources``); a reservation made in a cluster placement
  group has that group named, and the group is an available cluster group
  (``ec2:DescribePlacementGroups``);
- on UltraServer servers (trn2u.48xlarge, Trn3): the account's EC2 quotas that name Trn3 or
  UltraServers (``servicequotas:ListServiceQuotas``), the UltraServer Capacity Blocks it holds in the
  training AZ (``ec2:DescribeCapacityBlocks``) and, where EC2's UltraServer type name is known, the
  offerings (``ec2:DescribeCapacityBlockOfferings``);
- the AMI SSM parameters resolve (``ssm:GetParameter``);
- the account and Region are CDK-bootstrapped at the version the templates require: the
  ``/cdk-bootstrap/<qualifier>/version`` parameter (``ssm:GetParameter``) and the ``CDKToolkit``
  stack (``cloudformation:DescribeStacks``);
- the job and serving images exist and their tags resolve (``ecr:DescribeImages``, falling back to
  ``ecr:BatchGetImage`` where only pulling is allowed, as for the AWS Deep Learning Containers); an
  image outside ECR cannot be resolved here and is INFO, not PASS;
- the certificate is ISSUED, in the Region, and not about to expire (``acm:DescribeCertificate``);
  the token secret exists, has a current value, is in the Region and is readable with the
  permissions the stack grants (``secretsmanager:DescribeSecret``, ``kms:DescribeKey``);
- the service-linked roles the stacks rely on exist (``iam:GetRole``); one the deploying service
  creates on first use is INFO when missing, one a key policy names is FAIL;
- a model ``artifact_uri`` holds a self-contained precompiled model: a compiled graph, weights,
  and the config and tokenizer (``s3:ListBucket`` on the prefix, i.e. ``ListObjectsV2``).

Any FAIL row makes the command exit 1, and each names its fix (a command where one exists). A check
that AWS refuses to answer (for example AccessDenied) is a FAIL row that says so: an unverified
check is not a pass.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from cdk_neuron import catalog
from cdk_neuron.cli.aws import ClientFactory, credentials_problem, error_code, error_summary
from cdk_neuron.cli.output import Column, Report, Status, document
from cdk_neuron.deployment import Deployment, TrainingDeployment
from cdk_neuron.serving.model_spec import parse_s3_uri
from cdk_neuron.validation import CERTIFICATE_ARN, ECR_REGISTRY, IMAGE_URI


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


AZ_IDS_UNKNOWN = "AZ IDs unknown at synthesis"
_AZ_ID = re.compile(r"^[a-z]{2,}[0-9]+-az[0-9]+$")


def _offered_pairs(
    ec2: Any, instance_types: Sequence[str], az_ids: Sequence[str], *, by_name: bool = False
) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    kwargs: dict[str, Any] = {
        "LocationType": "availability-zone" if by_name else "availability-zone-id",
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


def _offering_rows(ctx: Context, wanted: Sequence[tuple[str, str, str]], *, by_name: bool) -> list[Row]:
    if not wanted:
        return []
    types = sorted({t for t, _, _ in wanted})
    offered = _offered_pairs(ctx.client("ec2"), types, sorted({az for _, az, _ in wanted}), by_name=by_name)
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
    return rows


def check_offerings(ctx: Context) -> list[Row]:
    env = ctx.env
    rows = []
    by_id: list[tuple[str, str, str]] = []
    by_name: list[tuple[str, str, str]] = []
    if env.training is not None:
        if env.training_az_id is None:
            rows.append(
                ctx.row(
                    "offering",
                    env.training.instance_type,
                    "INFO",
                    f"training: {AZ_IDS_UNKNOWN} (the subnets' AZs are tokens until deployment): not checked",
                )
            )
        else:
            by_id.append((env.training.instance_type, env.training_az_id, "training"))
    serving = env.serving
    if serving is not None and serving.backend == "ec2":
        serving_type = serving.resolved_instance_type
        if serving.availability_zones:
            # Recorded as the subnets name them: AZ IDs (use1-az6) or AZ names (us-east-1a).
            for az in serving.availability_zones:
                (by_id if _AZ_ID.match(az) else by_name).append((serving_type, az, "serving"))
        elif env.az_ids:
            by_id += [(serving_type, az, "serving") for az in env.az_ids]
        else:
            rows.append(ctx.row("offering", serving_type, "INFO", f"serving: {AZ_IDS_UNKNOWN}: not checked"))
    rows += _offering_rows(ctx, by_id, by_name=False)
    rows += _offering_rows(ctx, by_name, by_name=True)
    if serving is not None and serving.backend == "sagemaker":
        serving_type = serving.resolved_instance_type
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
        if env.training is not None and env.training.capacity.kind != "capacity-block":
            training = catalog.get_instance(env.training.instance_type)
            needs[_family(training.name)].append(
                (
                    f"{env.name} training {env.training.max_nodes} x {training.name}",
                    env.training.max_nodes * training.vcpus,
                )
            )
        if env.serving is not None and env.serving.backend == "ec2":
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
    own_families = set()
    if ctx.env.training is not None:
        own_families.add(_family(ctx.env.training.instance_type))
    if ctx.env.serving is not None and ctx.env.serving.backend == "ec2":
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
    if ctx.env.training is not None and ctx.env.training.capacity.kind == "capacity-block":
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
    serving = ctx.env.serving
    if serving is None or serving.backend != "sagemaker":
        return []
    name = SAGEMAKER_ENDPOINT_QUOTA_NAME.format(instance_type=serving.resolved_instance_type)
    needed = serving.max_capacity
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


def _training(ctx: Context) -> TrainingDeployment:
    assert ctx.env.training is not None  # checks that need it run only when it is there
    return ctx.env.training


def _reservation_rows(ctx: Context, reservation: dict[str, Any], *, capacity_block: bool) -> list[Row]:
    training = _training(ctx)
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
    if ctx.env.training_az_id is None:
        rows.append(
            ctx.row(
                "capacity AZ", rid, "INFO", f"reservation in {az_id}; training {AZ_IDS_UNKNOWN}: not compared"
            )
        )
    elif az_id == ctx.env.training_az_id:
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

    rows.extend(_placement_group_rows(ctx, reservation))

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


def _placement_group_rows(ctx: Context, reservation: dict[str, Any]) -> list[Row]:
    """The reservation's cluster placement group against the configured one, and that group itself.

    EC2 uses a reservation made in a cluster placement group only for instances launched into that
    group (CR-CPG in ``cdk_neuron.catalog.SOURCES``): with no name configured the cluster launches
    into a placement group of its own and never touches the reservation; with the wrong name, the
    same. A named group must exist, use the cluster strategy and be available.
    """
    rid = reservation["CapacityReservationId"]
    configured = _training(ctx).capacity.placement_group_name
    arn = reservation.get("PlacementGroupArn")
    actual = arn.rsplit("/", 1)[-1] if arn else None
    if actual is None and configured is None:
        return []
    if actual != configured:
        if actual is None:
            detail = (
                f"the reservation is in no placement group, but placement_group_name is {configured}: "
                "launches into that group cannot use it; remove placement_group_name"
            )
        else:
            detail = (
                f"the reservation is in placement group {actual}; EC2 uses it only for launches into that group: "
                f"set placement_group_name to {actual}"
            )
        return [ctx.row("capacity placement group", rid, "FAIL", detail)]
    try:
        groups = (
            ctx.client("ec2").describe_placement_groups(GroupNames=[configured]).get("PlacementGroups", [])
        )
    except Exception as error:
        if error_code(error) != "InvalidPlacementGroup.Unknown":
            raise
        groups = []
    if not groups:
        return [
            ctx.row(
                "capacity placement group",
                str(configured),
                "FAIL",
                f"no placement group {configured} in {ctx.env.region}, although reservation {rid} names it",
            )
        ]
    group = groups[0]
    strategy, state = group.get("Strategy"), group.get("State")
    if strategy != "cluster" or state != "available":
        return [
            ctx.row(
                "capacity placement group",
                str(configured),
                "FAIL",
                f"strategy {strategy}, state {state}: the cluster needs an available cluster placement group",
            )
        ]
    return [ctx.row("capacity placement group", str(configured), "PASS", f"cluster, available; holds {rid}")]


def _describe_reservations(ec2: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    try:
        response = ec2.describe_capacity_reservations(CapacityReservationIds=list(ids))
    except Exception as error:
        if error_code(error).startswith("InvalidCapacityReservationId"):
            return {}
        raise
    return {r["CapacityReservationId"]: r for r in response.get("CapacityReservations", [])}


def check_capacity(ctx: Context) -> list[Row]:
    if ctx.env.training is None:
        return []
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
    if capacity.kind in ("reservation", "capacity-block") or (
        capacity.kind == "ultraserver-capacity-block" and capacity.reservation_id is not None
    ):
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
            ctx, found[capacity.reservation_id], capacity_block=capacity.is_capacity_block
        )
    return _check_reservation_group(ctx, ec2)


def _check_reservation_group(ctx: Context, ec2: Any) -> list[Row]:
    training = _training(ctx)
    arn = training.capacity.resource_group_arn
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
    az_id = ctx.env.training_az_id
    matching = [
        r
        for r in reservations
        if r.get("State") in _USABLE_STATES
        and r.get("InstanceType") == training.instance_type
        and (az_id is None or r.get("AvailabilityZoneId") == az_id)
    ]
    where = f"in {az_id}" if az_id is not None else f"in any AZ ({AZ_IDS_UNKNOWN})"
    if not matching:
        return [
            *rows,
            ctx.row(
                "capacity group members",
                arn,
                "FAIL",
                f"none of {len(ids)} reservation(s) is an active {training.instance_type} reservation {where}",
            ),
        ]
    total = sum(int(r.get("TotalInstanceCount", 0)) for r in matching)
    status: Status = "PASS" if total >= training.max_nodes else "WARN"
    return [
        *rows,
        ctx.row(
            "capacity group members",
            arn,
            status,
            f"{len(matching)} matching active reservation(s) {where}, {total} instances "
            f"(max_nodes {training.max_nodes})",
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
    roles: dict[str, list[str]] = {}
    if ctx.env.training is not None:
        roles[TRAINING_AMI_PARAMETERS[ctx.env.training.engine]] = ["training"]
    if ctx.env.serving is not None and ctx.env.serving.backend == "ec2":
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
    assert ctx.env.serving is not None
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
    if ctx.env.serving is None:
        return []
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


# --------------------------------------------------------------------------------------------
# What breaks first deploys: bootstrap, images, certificate and secret, service-linked roles
# --------------------------------------------------------------------------------------------

# aws-cdk-lib 2.275.0, core/lib/stack-synthesizers/default-synthesizer.ts: MIN_BOOTSTRAP_STACK_VERSION
# = 6 is what every synthesized template's CheckBootstrapVersion rule asserts ("CDK bootstrap stack
# version 6 required") and what the asset manifests require; MIN_LOOKUP_ROLE_BOOTSTRAP_STACK_VERSION
# = 8 is what the lookup role needs (cdk diff, context lookups). tests/test_cli_preflight.py checks
# the first against the synthesized templates.
REQUIRED_BOOTSTRAP_VERSION = 6
LOOKUP_ROLE_BOOTSTRAP_VERSION = 8
TOOLKIT_STACK = "CDKToolkit"
_STACK_OK = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE"}
CERTIFICATE_WARN_DAYS = 30


def _bootstrap_command(ctx: Context, account: str) -> str:
    qualifier = "" if ctx.qualifier == "hnb659fds" else f" --qualifier {ctx.qualifier}"
    return f"cdk bootstrap aws://{account}/{ctx.env.region}{qualifier}"


def check_bootstrap(ctx: Context) -> list[Row]:
    account = ctx.client("sts").get_caller_identity()["Account"]
    name = f"/cdk-bootstrap/{ctx.qualifier}/version"
    fix = _bootstrap_command(ctx, account)
    where = f"{account}/{ctx.env.region}"
    try:
        value = ctx.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except Exception as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return [
            ctx.row(
                "bootstrap",
                name,
                "FAIL",
                f"{where} is not bootstrapped (qualifier {ctx.qualifier}): cdk deploy stops at the "
                f"templates' CheckBootstrapVersion rule; bootstrap it (command below)",
                fix,
            )
        ]
    version = int(value) if str(value).isdigit() else 0
    if version < REQUIRED_BOOTSTRAP_VERSION:
        row = ctx.row(
            "bootstrap",
            name,
            "FAIL",
            f"version {value} in {where}; the templates require {REQUIRED_BOOTSTRAP_VERSION} or later "
            "(aws-cdk-lib's CheckBootstrapVersion rule): bootstrap again with this CDK (command below)",
            fix,
        )
    elif version < LOOKUP_ROLE_BOOTSTRAP_VERSION:
        row = ctx.row(
            "bootstrap",
            name,
            "WARN",
            f"version {version} in {where}: deploys work (>= {REQUIRED_BOOTSTRAP_VERSION}), but cdk diff and "
            f"lookups need the lookup role of version {LOOKUP_ROLE_BOOTSTRAP_VERSION}; bootstrap again",
            fix,
        )
    else:
        row = ctx.row(
            "bootstrap",
            name,
            "PASS",
            f"version {version} in {where} (>= {REQUIRED_BOOTSTRAP_VERSION} required)",
        )
    return [row, _toolkit_row(ctx, fix)]


def _toolkit_row(ctx: Context, fix: str) -> Row:
    try:
        stack = ctx.client("cloudformation").describe_stacks(StackName=TOOLKIT_STACK)["Stacks"][0]
    except Exception as error:
        if "does not exist" not in str(error):
            raise
        return ctx.row(
            "bootstrap",
            TOOLKIT_STACK,
            "WARN",
            f"no {TOOLKIT_STACK} stack although the version parameter exists: bootstrapped with "
            "--toolkit-stack-name? Then the assets bucket and roles live in that stack",
        )
    status = str(stack.get("StackStatus", "?"))
    if status in _STACK_OK:
        return ctx.row("bootstrap", TOOLKIT_STACK, "PASS", status)
    if status.endswith("_IN_PROGRESS"):
        return ctx.row("bootstrap", TOOLKIT_STACK, "WARN", f"{status}: wait for it to finish, then deploy")
    return ctx.row(
        "bootstrap",
        TOOLKIT_STACK,
        "FAIL",
        f"{status}: the bootstrap stack is broken (assets bucket and deploy roles); bootstrap again (command below)",
        fix,
    )


def _images(env: Deployment) -> list[tuple[str, str]]:
    """(who runs it, image URI) for every container image the stacks deploy."""
    images: list[tuple[str, str]] = []
    if env.training is not None and env.training.engine == "batch" and env.training.job_image:
        images.append(("training job", env.training.job_image))
    if env.serving is None:
        return images
    engine = env.serving.engine
    if env.serving.image is not None:
        role = "serving" if env.serving.backend == "ec2" else "SageMaker serving"
        images.append((role, env.serving.image))
    elif env.serving.backend == "ec2":
        images.append(("serving", engine.image.uri(env.region)))
    elif engine.sagemaker_image is not None:
        images.append(("SageMaker serving", engine.sagemaker_image.uri(env.region)))
    return images


def _image_row(ctx: Context, role: str, uri: str) -> Row:
    match = IMAGE_URI.match(uri)
    registry = ECR_REGISTRY.match(match["registry"]) if match else None
    if match is None or registry is None:
        host = match["registry"] if match else uri.split("/", 1)[0]
        return ctx.row(
            "image",
            uri,
            "INFO",
            f"{role}: not checked: {host} is not Amazon ECR, whose tags preflight cannot resolve; pull it once "
            "to check (docker manifest inspect)",
            f"docker manifest inspect {uri}",
        )
    account, region, repository = registry["account"], registry["region"], match["repository"]
    image_id = {"imageDigest": match["digest"]} if match["digest"] else {"imageTag": match["tag"]}
    reference = match["digest"] or f"tag {match['tag']}"
    ecr = ctx.clients("ecr", region)
    request = {"registryId": account, "repositoryName": repository, "imageIds": [image_id]}
    listing = (
        f"aws ecr describe-images --registry-id {account} --repository-name {repository} --region {region} "
        "--query 'sort_by(imageDetails,&imagePushedAt)[-5:].imageTags'"
    )
    try:
        details = ecr.describe_images(**request)["imageDetails"]
        digest = details[0].get("imageDigest", "?") if details else "?"
        return ctx.row("image", uri, "PASS", f"{role}: {reference} resolves to {digest}")
    except Exception as error:
        code = error_code(error)
        if code == "ImageNotFoundException":
            return ctx.row(
                "image",
                uri,
                "FAIL",
                f"{role}: {reference} not found in {repository}: push it, or pin a tag that exists "
                "(the command lists the newest)",
                listing,
            )
        if code == "RepositoryNotFoundException":
            return ctx.row(
                "image",
                uri,
                "FAIL",
                f"{role}: no repository {repository} in registry {account} ({region}): check the image URI",
            )
        if code not in ("AccessDeniedException", "AccessDenied"):
            raise
    # Pull-only registries (the AWS Deep Learning Containers) allow BatchGetImage, not DescribeImages.
    try:
        pulled = ecr.batch_get_image(**request)
    except Exception as error:
        if error_code(error) not in ("AccessDeniedException", "AccessDenied"):
            raise
        return ctx.row(
            "image",
            uri,
            "WARN",
            f"{role}: cannot check: registry {account} allows neither ecr:DescribeImages nor ecr:BatchGetImage to "
            "these credentials; the nodes' role gets pull access from the stack",
        )
    if pulled.get("images"):
        digest = pulled["images"][0].get("imageId", {}).get("imageDigest", "?")
        return ctx.row("image", uri, "PASS", f"{role}: {reference} resolves to {digest} (BatchGetImage)")
    failure = (pulled.get("failures") or [{}])[0]
    return ctx.row(
        "image",
        uri,
        "FAIL",
        f"{role}: {reference} cannot be pulled from {repository}: "
        f"{failure.get('failureCode', '?')} {failure.get('failureReason', '')}".rstrip()
        + "; pin a tag that exists",
    )


def check_images(ctx: Context) -> list[Row]:
    return [_image_row(ctx, role, uri) for role, uri in _images(ctx.env)]


def check_certificate(ctx: Context) -> list[Row]:
    if ctx.env.serving is None:
        return []
    arn = ctx.env.serving.certificate_arn
    if arn is None or ctx.env.serving.backend != "ec2":
        return []
    match = CERTIFICATE_ARN.match(arn)
    region = match["region"] if match else ctx.env.region
    if region != ctx.env.region:
        return [
            ctx.row(
                "certificate",
                arn,
                "FAIL",
                f"the certificate is in {region}; a load balancer uses certificates of its own Region "
                f"({ctx.env.region}): request or import one there",
            )
        ]
    try:
        certificate = ctx.client("acm").describe_certificate(CertificateArn=arn)["Certificate"]
    except Exception as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        return [ctx.row("certificate", arn, "FAIL", f"no such certificate in {region} for this account")]
    status = certificate.get("Status", "?")
    domain = certificate.get("DomainName", "?")
    if status == "PENDING_VALIDATION":
        return [
            ctx.row(
                "certificate",
                arn,
                "FAIL",
                f"{domain} is PENDING_VALIDATION: create the validation records (the command shows them); "
                "the listener cannot use it until it is ISSUED",
                f"aws acm describe-certificate --certificate-arn {arn} --region {region} "
                "--query Certificate.DomainValidationOptions",
            )
        ]
    if status != "ISSUED":
        return [
            ctx.row("certificate", arn, "FAIL", f"{domain} is {status}: request or import a new certificate")
        ]
    not_after = certificate.get("NotAfter")
    if isinstance(not_after, datetime) and not_after - datetime.now(timezone.utc) < timedelta(
        days=CERTIFICATE_WARN_DAYS
    ):
        return [
            ctx.row(
                "certificate",
                arn,
                "WARN",
                f"{domain} expires {not_after.date().isoformat()}: renew or replace it "
                + (
                    "(an imported certificate does not renew itself)"
                    if certificate.get("Type") == "IMPORTED"
                    else ""
                ),
            )
        ]
    expires = f", expires {not_after.date().isoformat()}" if isinstance(not_after, datetime) else ""
    return [ctx.row("certificate", arn, "PASS", f"ISSUED for {domain} in {region}{expires}")]


_SECRET_ARN_REGION = re.compile(r"^arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z0-9-]+):")


def check_secret(ctx: Context) -> list[Row]:
    if ctx.env.serving is None:
        return []
    secret = ctx.env.serving.token_secret
    if secret is None:
        return []
    match = _SECRET_ARN_REGION.match(secret)
    region = ctx.env.region
    if match and match["region"] != region:
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"the secret is in {match['region']}; the serving nodes read it in {region}: replicate it there "
                "and name the replica",
                f"aws secretsmanager replicate-secret-to-regions --secret-id {secret} "
                f"--add-replica-regions Region={region} --region {match['region']}",
            )
        ]
    try:
        described = ctx.client("secretsmanager").describe_secret(SecretId=secret)
    except Exception as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"no secret {secret} in {region}: create it with the Hugging Face token (command below)",
                f'aws secretsmanager create-secret --name {secret} --secret-string "$HF_TOKEN" --region {region}',
            )
        ]
    name = described.get("ARN", secret)
    if described.get("DeletedDate"):
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"scheduled for deletion on {described['DeletedDate']}: restore it (command below)",
                f"aws secretsmanager restore-secret --secret-id {name} --region {region}",
            )
        ]
    stages = {stage for stages in (described.get("VersionIdsToStages") or {}).values() for stage in stages}
    if "AWSCURRENT" not in stages:
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                "has no current value (no AWSCURRENT version): store the token (command below)",
                f'aws secretsmanager put-secret-value --secret-id {name} --secret-string "$HF_TOKEN" --region {region}',
            )
        ]
    key = described.get("KmsKeyId")
    if key and key != "alias/aws/secretsmanager":
        manager = ctx.client("kms").describe_key(KeyId=key)["KeyMetadata"].get("KeyManager")
        if manager != "AWS":
            return [
                ctx.row(
                    "secret",
                    secret,
                    "WARN",
                    f"encrypted with customer managed key {key}: the stack grants the serving role "
                    "secretsmanager:GetSecretValue but no kms:Decrypt on a key it does not know, so the nodes "
                    "cannot read it unless that key's policy lets them; allow kms:Decrypt via "
                    f"secretsmanager.{region}.amazonaws.com in the key policy, or store the token under the "
                    "aws/secretsmanager key",
                )
            ]
    return [
        ctx.row(
            "secret",
            secret,
            "PASS",
            "exists with a current value, encrypted with the aws/secretsmanager key the serving role can use",
        )
    ]


@dataclass(frozen=True)
class ServiceLinkedRole:
    name: str
    service: str
    needed_by: str
    missing: Status
    """FAIL when a resource names the role before anything creates it; INFO when its service creates it."""
    why_missing: str


def _service_linked_roles(env: Deployment) -> list[ServiceLinkedRole]:
    roles: list[ServiceLinkedRole] = []
    serving_backend = env.serving.backend if env.serving is not None else None
    if serving_backend == "ec2":
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForAutoScaling",
                "autoscaling.amazonaws.com",
                "the serving fleet's Auto Scaling group and its KMS key",
                "FAIL",
                "the serving fleet's KMS key policy names it as a principal, and KMS refuses a policy whose "
                "principal does not exist, so the stack fails before any Auto Scaling group could create it",
            )
        )
    elif env.training is not None:
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForAutoScaling",
                "autoscaling.amazonaws.com",
                "the Auto Scaling groups that launch training nodes",
                "INFO",
                "EC2 Auto Scaling creates it with the first group (the training key policy names it only "
                "in a condition, which KMS does not resolve)",
            )
        )
    if serving_backend == "sagemaker":
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
                "sagemaker.application-autoscaling.amazonaws.com",
                "the endpoint's scaling",
                "INFO",
                "Application Auto Scaling creates it when the endpoint's scalable target is registered",
            )
        )
    if env.training is not None and env.training.engine == "batch":
        roles += [
            ServiceLinkedRole(
                "AWSServiceRoleForBatch",
                "batch.amazonaws.com",
                "the Batch compute environment",
                "INFO",
                "AWS Batch creates it with the compute environment (which names no service role)",
            ),
            ServiceLinkedRole(
                "AWSServiceRoleForECS",
                "ecs.amazonaws.com",
                "the ECS cluster Batch runs jobs on",
                "INFO",
                "Amazon ECS creates it when Batch creates the cluster",
            ),
        ]
    if serving_backend == "ec2":
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForElasticLoadBalancing",
                "elasticloadbalancing.amazonaws.com",
                "the serving load balancer",
                "INFO",
                "Elastic Load Balancing creates it with the first load balancer",
            )
        )
    if env.training is not None:
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForAmazonElasticFileSystem",
                "elasticfilesystem.amazonaws.com",
                "the checkpoint file system",
                "INFO",
                "Amazon EFS creates it with the first file system",
            )
        )
    return roles


def check_service_linked_roles(ctx: Context) -> list[Row]:
    iam = ctx.client("iam")
    rows = []
    for role in _service_linked_roles(ctx.env):
        subject = role.name
        try:
            found = iam.get_role(RoleName=role.name)["Role"]
        except Exception as error:
            if error_code(error) != "NoSuchEntity":
                raise
            created_by = (
                "; the deploying role needs iam:CreateServiceLinkedRole (the bootstrap's default execution "
                "role has it)"
                if role.missing == "INFO"
                else "; create it first (command below)"
            )
            rows.append(
                ctx.row(
                    "service-linked role",
                    subject,
                    role.missing,
                    f"missing, needed by {role.needed_by}: {role.why_missing}{created_by}",
                    f"aws iam create-service-linked-role --aws-service-name {role.service}",
                )
            )
            continue
        rows.append(ctx.row("service-linked role", subject, "PASS", f"exists ({found.get('Path', '/')})"))
    return rows


# --------------------------------------------------------------------------------------------
# UltraServers: Capacity Block offerings, the blocks the account holds, Trn3 / UltraServer quotas
# --------------------------------------------------------------------------------------------

# Words a Service Quotas name carries when it limits Trn3 or UltraServer capacity. No source we could
# read names such a quota (looked 2026-12-01), so the check lists what the account's own EC2 quotas
# call by these words instead of pinning a code.
ULTRASERVER_QUOTA_WORDS = ("trn3", "trainium3", "ultraserver")
CAPACITY_BLOCK_HOURS = 24


@dataclass(frozen=True)
class Finding:
    """One preflight result before it is tied to an environment (:meth:`Context.row` does that)."""

    check: str
    subject: str
    status: Status
    detail: str
    command: str | None = None


def _all_ec2_quotas(quotas: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ServiceCode": "ec2"}
    while True:
        page = quotas.list_service_quotas(**kwargs)
        found.extend(page.get("Quotas", []))
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def ultraserver_quota_findings(quotas: Any, instance: catalog.NeuronInstance, region: str) -> list[Finding]:
    """The account's EC2 quotas whose names mention Trn3 or UltraServers (ListServiceQuotas)."""
    named = [
        q
        for q in _all_ec2_quotas(quotas)
        if any(word in str(q.get("QuotaName", "")).lower() for word in ULTRASERVER_QUOTA_WORDS)
    ]
    if not named:
        return [
            Finding(
                "ultraserver quota",
                instance.name,
                "WARN",
                "no EC2 quota of this account names Trn3 or UltraServers (ListServiceQuotas); only the "
                "On-Demand Trn vCPU quota is checked, and whether UltraServer capacity draws on it is not "
                "published: ask AWS before relying on it",
            )
        ]
    findings = []
    for quota in sorted(named, key=lambda q: str(q.get("QuotaCode"))):
        code, name, value = (
            quota.get("QuotaCode", "?"),
            quota.get("QuotaName", "?"),
            float(quota.get("Value", 0)),
        )
        if value > 0:
            findings.append(Finding("ultraserver quota", f"{name} ({code})", "PASS", f"{value:g}"))
        else:
            findings.append(
                Finding(
                    "ultraserver quota",
                    f"{name} ({code})",
                    "FAIL",
                    "0: request an increase (command below)",
                    f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} "
                    f"--desired-value 1 --region {region}",
                )
            )
    return findings


def ultraserver_capacity_findings(
    ec2: Any,
    instance: catalog.NeuronInstance,
    *,
    max_nodes: int,
    az_id: str,
    region: str,
    ultraserver_type: str | None = None,
    hours: int = CAPACITY_BLOCK_HOURS,
) -> list[Finding]:
    """UltraServer Capacity Blocks the account holds (DescribeCapacityBlocks) and, given EC2's
    UltraServer type name, the offerings for as many UltraServers as ``max_nodes`` needs
    (DescribeCapacityBlockOfferings). EC2's UltraServer type names are not in the catalog: no source
    we could read publishes them (``catalog.ULTRASERVER_API_TYPES``)."""
    ultra = instance.ultraserver_type
    if ultra is None:
        return []
    count = -(-max_nodes // ultra.servers)
    findings: list[Finding] = []
    blocks = ec2.describe_capacity_blocks().get("CapacityBlocks", [])
    ours = [b for b in blocks if b.get("UltraserverType") and b.get("AvailabilityZoneId") == az_id]
    active = [b for b in ours if b.get("State") == "active"]
    if len(active) >= count:
        findings.append(
            Finding(
                "ultraserver capacity",
                f"{ultra.name} @ {az_id}",
                "PASS",
                f"{len(active)} active UltraServer Capacity Block(s) >= {count} needed for {max_nodes} nodes "
                f"({', '.join(b['CapacityBlockId'] for b in active)})",
            )
        )
    else:
        later = [
            f"{b['CapacityBlockId']} ({b.get('State')}, from {b.get('StartDate', '?')})"
            for b in ours
            if b not in active
        ]
        findings.append(
            Finding(
                "ultraserver capacity",
                f"{ultra.name} @ {az_id}",
                "WARN" if later else "FAIL",
                f"{len(active)} active UltraServer Capacity Block(s) in {az_id}, {count} needed for {max_nodes} "
                f"nodes ({ultra.servers} servers each)"
                + (f"; not yet active: {', '.join(later)}" if later else ""),
            )
        )
    if ultraserver_type is None:
        findings.append(
            Finding(
                "ultraserver offering",
                ultra.name,
                "INFO",
                "EC2's UltraServer type name for this UltraServer is not published in any source cdk-neuron "
                "could read; look the offerings up with the type the console shows",
                f"aws ec2 describe-capacity-block-offerings --ultraserver-type <type> --ultraserver-count {count} "
                f"--capacity-duration-hours {hours} --region {region}",
            )
        )
        return findings
    offerings = ec2.describe_capacity_block_offerings(
        UltraserverType=ultraserver_type, UltraserverCount=count, CapacityDurationHours=hours
    ).get("CapacityBlockOfferings", [])
    # Offerings name AZs, not AZ IDs: map the training AZ ID to this account's AZ name.
    zones = ec2.describe_availability_zones(ZoneIds=[az_id]).get("AvailabilityZones", [])
    zone_name = zones[0].get("ZoneName") if zones else None
    here = [o for o in offerings if zone_name is not None and o.get("AvailabilityZone") == zone_name]
    subject = f"{ultraserver_type} x {count}, {hours} h"
    if not offerings:
        findings.append(
            Finding(
                "ultraserver offering",
                subject,
                "FAIL",
                f"no offering in {region} now; try other dates or durations",
            )
        )
    else:
        cheapest = min(offerings, key=lambda o: float(o.get("UpfrontFee", "inf")))
        fee = f"{cheapest.get('UpfrontFee', '?')} {cheapest.get('CurrencyCode', '')}".strip()
        findings.append(
            Finding(
                "ultraserver offering",
                subject,
                "PASS" if here else "WARN",
                f"{len(offerings)} offering(s); cheapest {fee} upfront in {cheapest.get('AvailabilityZone', '?')} "
                f"from {cheapest.get('StartDate', '?')}"
                + ("" if here else f"; none reported for {az_id}, the training AZ"),
            )
        )
    return findings


def check_ultraserver(ctx: Context) -> list[Row]:
    """UltraServer servers only (trn2u.48xlarge, Trn3): quotas, held blocks, offerings."""
    training = ctx.env.training
    if training is None:
        return []
    instance = catalog.get_instance(training.instance_type)
    if not instance.is_ultraserver:
        return []
    findings = ultraserver_quota_findings(ctx.client("service-quotas"), instance, ctx.env.region)
    if ctx.env.training_az_id is None:
        findings.append(
            Finding(
                "ultraserver capacity",
                instance.name,
                "INFO",
                "the training AZ ID is unknown at synthesis: held UltraServer Capacity Blocks and offerings "
                "are not checked",
            )
        )
        return [ctx.row(f.check, f.subject, f.status, f.detail, f.command) for f in findings]
    findings += ultraserver_capacity_findings(
        ctx.client("ec2"),
        instance,
        max_nodes=training.max_nodes,
        az_id=ctx.env.training_az_id,
        region=ctx.env.region,
        ultraserver_type=catalog.ULTRASERVER_API_TYPES.get(instance.ultraserver or ""),
    )
    return [ctx.row(f.check, f.subject, f.status, f.detail, f.command) for f in findings]


def check_scope(ctx: Context) -> list[Row]:
    """One INFO row per part the deployment does not have: its checks are skipped, not passed."""
    rows = []
    if ctx.env.training is None:
        rows.append(ctx.row("scope", "training", "INFO", "no training cluster: its checks are skipped"))
    if ctx.env.serving is None:
        rows.append(ctx.row("scope", "serving", "INFO", "no inference fleet: its checks are skipped"))
    return rows


CHECKS: tuple[tuple[str, Callable[[Context], list[Row]]], ...] = (
    ("scope", check_scope),
    ("account", check_account),
    ("bootstrap", check_bootstrap),
    ("offering", check_offerings),
    ("quota", check_ec2_quotas),
    ("quota", check_sagemaker_quota),
    ("capacity", check_capacity),
    ("ultraserver", check_ultraserver),
    ("AMI parameter", check_amis),
    ("image", check_images),
    ("certificate", check_certificate),
    ("secret", check_secret),
    ("service-linked role", check_service_linked_roles),
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


__all__ = [
    "EC2_VCPU_QUOTAS",
    "Finding",
    "Row",
    "build",
    "render",
    "run",
    "ultraserver_capacity_findings",
    "ultraserver_quota_findings",
]
