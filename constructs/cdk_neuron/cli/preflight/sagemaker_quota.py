"""The SageMaker endpoint-instance quota covers the fleet."""

from __future__ import annotations

from typing import Any

from cdk_neuron.cli.preflight.base import Check, CheckContext, Row

# SageMaker endpoint quotas count instances per type. Their codes differ per type, so they are
# found by name ("ml.inf2.48xlarge for endpoint usage") instead of pinning codes.
SAGEMAKER_ENDPOINT_QUOTA_NAME = "ml.{instance_type} for endpoint usage"


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


def check_sagemaker_quota(ctx: CheckContext) -> list[Row]:
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


CHECK = Check(
    "quota",
    check_sagemaker_quota,
    passes_when="the SageMaker `ml.<type> for endpoint usage` quota allows `max_capacity` instances",
    calls=("servicequotas:ListServiceQuotas",),
)
