"""A HyperPod cluster draws on SageMaker's cluster quotas, not EC2's: they cover every HyperPod
environment in the account and Region.

HyperPod's instances are SageMaker's ("ml.*" types in the service's account), counted by the quotas
the SageMaker HyperPod prerequisites list ("SageMaker HyperPod quotas", Amazon SageMaker AI Developer
Guide, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites.html, read
2026-12-02), service code ``sagemaker``:

- ``ml.<type> for cluster usage``, per instance type, across all clusters ("must be greater than the
  number of instances to add across all your clusters in your account in aggregate");
- ``Maximum number instances allowed per SageMaker HyperPod cluster`` (the guide's spelling, without
  "of");
- ``Total number of instances allowed across SageMaker HyperPod clusters``.

Their codes are not in that guide (published account dumps show ``L-2CE978FC`` and ``L-3308CCC7``
for the last two, and a code per instance type for the first), so they are found by name in
``servicequotas:ListServiceQuotas``, and in ``ListAWSDefaultServiceQuotas`` when the account has no
applied value ("If the applied quota value is not available for a quota, the quota is not
retrieved", ListServiceQuotas, Service Quotas API Reference). A quota found under neither is a WARN
naming the name searched: an unverified quota is not a pass.

Workers count at ``max_nodes`` (``scale`` may raise them that far), plus each cluster's controller.
The EC2 On-Demand vCPU quota check leaves HyperPod environments out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.deployment import Deployment, HyperPodLocation
from cdk_neuron.training.hyperpod_facts import ml_type

SERVICE = "sagemaker"
TYPE_QUOTA = "{instance_type} for cluster usage"
PER_CLUSTER_QUOTA = "Maximum number instances allowed per SageMaker HyperPod cluster"
TOTAL_QUOTA = "Total number of instances allowed across SageMaker HyperPod clusters"
CHECK_NAME = "hyperpod quota"


@dataclass(frozen=True)
class Need:
    """Instances one environment's cluster may run, for one quota."""

    label: str
    count: int


def _is_hyperpod(env: Deployment) -> bool:
    return env.training is not None and env.training.engine == "hyperpod"


def _controller_type(env: Deployment) -> str:
    assert env.training is not None
    return (env.training.hyperpod or HyperPodLocation()).controller_instance_type


def needs(ctx: CheckContext) -> tuple[dict[str, list[Need]], list[Need]]:
    """Per ``ml.*`` type, and in total, what every HyperPod environment in this account and Region may run."""
    account, region = ctx.env.resolve_account(), ctx.env.region
    per_type: dict[str, list[Need]] = defaultdict(list)
    total: list[Need] = []
    for env in ctx.all_envs:
        if env.region != region or env.resolve_account() != account or not _is_hyperpod(env):
            continue
        assert env.training is not None
        workers = ml_type(env.training.instance_type)
        controller = _controller_type(env)
        per_type[workers].append(Need(f"{env.name} workers", env.training.max_nodes))
        per_type[controller].append(Need(f"{env.name} controller", 1))
        total.append(Need(env.name, env.training.max_nodes + 1))
    return per_type, total


def quotas_by_name(client: Any) -> dict[str, dict[str, Any]]:
    """Every SageMaker quota by name: applied values, then AWS's defaults for the rest."""
    found: dict[str, dict[str, Any]] = {}
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        kwargs: dict[str, Any] = {"ServiceCode": SERVICE}
        while True:
            page = getattr(client, operation)(**kwargs)
            for quota in page.get("Quotas", []):
                found.setdefault(str(quota.get("QuotaName")), dict(quota))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    return found


def _row(ctx: CheckContext, quotas: dict[str, dict[str, Any]], name: str, wanted: list[Need]) -> Row:
    needed = sum(n.count for n in wanted)
    breakdown = " + ".join(f"{n.label} ({n.count})" for n in wanted)
    quota = quotas.get(name)
    if quota is None:
        return ctx.row(
            CHECK_NAME,
            name,
            "WARN",
            f"no SageMaker quota of that name (ListServiceQuotas, ListAWSDefaultServiceQuotas): check in the "
            f"Service Quotas console (Amazon SageMaker, search 'cluster usage') that it allows {needed}: {breakdown}",
        )
    code = str(quota.get("QuotaCode", "?"))
    value = float(quota["Value"])
    subject = f"{name} ({code})"
    if value >= needed:
        return ctx.row(CHECK_NAME, subject, "PASS", f"{value:g} >= {needed} needed: {breakdown}")
    return ctx.row(
        CHECK_NAME,
        subject,
        "FAIL",
        f"{value:g} < {needed} needed: {breakdown}. Request an increase (command below); HyperPod fails the "
        "cluster's creation or update past it",
        f"aws service-quotas request-service-quota-increase --service-code {SERVICE} --quota-code {code} "
        f"--desired-value {needed} --region {ctx.env.region}",
    )


def check_hyperpod_quotas(ctx: CheckContext) -> list[Row]:
    if not _is_hyperpod(ctx.env):
        return []
    per_type, total = needs(ctx)
    quotas = quotas_by_name(ctx.client("service-quotas"))
    assert ctx.env.training is not None
    own = [ml_type(ctx.env.training.instance_type), _controller_type(ctx.env)]
    rows = [_row(ctx, quotas, TYPE_QUOTA.format(instance_type=t), per_type[t]) for t in dict.fromkeys(own)]
    mine = next(n for n in total if n.label == ctx.env.name)
    rows.append(_row(ctx, quotas, PER_CLUSTER_QUOTA, [Need(f"{ctx.env.name} cluster", mine.count)]))
    rows.append(_row(ctx, quotas, TOTAL_QUOTA, total))
    return rows


CHECK = Check(
    CHECK_NAME,
    check_hyperpod_quotas,
    passes_when="for a HyperPod environment: SageMaker's `ml.<type> for cluster usage` quotas (workers at "
    "`max_nodes`, the controller), the per-cluster instance quota and the total across HyperPod clusters cover "
    "every HyperPod environment in the account and Region (a quota not found by name is WARN)",
    calls=("servicequotas:ListServiceQuotas", "servicequotas:ListAWSDefaultServiceQuotas"),
)
