"""The On-Demand vCPU quotas cover every environment in the account and Region."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from cdk_neuron import catalog
from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row


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


def _family(instance_type: str) -> str:
    return "trn" if instance_type.startswith("trn") else "inf"


def _vcpu_needs(ctx: CheckContext) -> dict[str, list[tuple[str, int]]]:
    """vCPUs per quota family for every environment sharing this account and Region."""
    account, region = ctx.env.resolve_account(), ctx.env.region
    needs: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for env in ctx.all_envs:
        if env.region != region or env.resolve_account() != account:
            continue
        # HyperPod's instances are SageMaker's, counted by its cluster quotas (hyperpod_quotas).
        if (
            env.training is not None
            and env.training.capacity.kind != "capacity-block"
            and env.training.engine != "hyperpod"
        ):
            training = catalog.get_instance(env.training.instance_type)
            needs[_family(training.name)].append(
                (
                    f"{env.name} training {env.training.max_nodes} x {training.name}",
                    env.training.max_nodes * training.vcpus,
                )
            )
        compilation = env.compilation
        if (
            compilation is not None
            and compilation.runs_on == "training-cluster"
            and compilation.instance_type
        ):
            # BatchModelCompilation's compute environment: one node of the cluster's type, its own.
            node = catalog.get_instance(compilation.instance_type)
            needs[_family(node.name)].append((f"{env.name} compile 1 x {node.name}", node.vcpus))
        if env.serving is not None and env.serving.backend == "ec2":
            serving = catalog.get_instance(env.serving.resolved_instance_type)
            needs[_family(serving.name)].append(
                (
                    f"{env.name} serving {env.serving.max_capacity} x {serving.name}",
                    env.serving.max_capacity * serving.vcpus,
                )
            )
    return needs


def quota_value(quotas: Any, service: str, code: str) -> tuple[float, str]:
    """A quota's applied value, else AWS's default, and the name the API gives it."""
    try:
        quota = quotas.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    except Exception as error:
        # A quota never adjusted in this account has no applied value: fall back to AWS's default.
        if error_code(error) != "NoSuchResourceException":
            raise
        quota = quotas.get_aws_default_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    return float(quota["Value"]), str(quota.get("QuotaName", ""))


def check_ec2_quotas(ctx: CheckContext) -> list[Row]:
    rows = []
    quotas = ctx.client("service-quotas")
    needs = _vcpu_needs(ctx)
    own_families = set()
    if ctx.env.training is not None and ctx.env.training.engine != "hyperpod":
        own_families.add(_family(ctx.env.training.instance_type))
    if ctx.env.serving is not None and ctx.env.serving.backend == "ec2":
        own_families.add(_family(ctx.env.serving.resolved_instance_type))
    for family in sorted(own_families & set(needs)):
        spec = EC2_VCPU_QUOTAS[family]
        needed = sum(v for _, v in needs[family])
        breakdown = " + ".join(f"{label} ({v})" for label, v in needs[family])
        value, name = quota_value(quotas, "ec2", spec.code)
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


CHECK = Check(
    "quota",
    check_ec2_quotas,
    passes_when="the On-Demand Trn and Inf vCPU quotas cover the max nodes and max fleet of every environment in the account and Region (a Capacity Block is INFO: not counted; HyperPod clusters count against SageMaker's quotas instead)",
    calls=("servicequotas:GetServiceQuota", "servicequotas:GetAWSDefaultServiceQuota"),
)
