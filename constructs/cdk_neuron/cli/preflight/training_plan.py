"""A HyperPod environment's SageMaker training plan: it exists, serves HyperPod clusters, is usable
now or soon, holds the worker type, and reserves it in the training AZ.

A training plan's capacity is reserved in one Availability Zone (``ReservedCapacitySummary``'s
``AvailabilityZone`` and ``AvailabilityZoneId``, "ReservedCapacitySummary", Amazon SageMaker API
Reference, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ReservedCapacitySummary.html,
read 2026-12-02), and HyperPod places every instance group in its subnet's AZ: a plan in another AZ
than the cluster's subnets cannot serve the workers. A plan for training jobs cannot serve a cluster
("Training plans are specific to their target resource", "TrainingPlanOffering", same reference).
The plan's ``Status`` is one of Pending, Active, Scheduled, Expired and Failed
(``sagemaker:DescribeTrainingPlan``, which takes the plan's ARN as its name).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import AZ_IDS_UNKNOWN, Check, CheckContext, Row
from cdk_neuron.training.hyperpod_facts import ml_type

CHECK_NAME = "training plan"
TARGET = "hyperpod-cluster"
ENDING_SOON = timedelta(days=2)
"""A plan that ends within this is WARN: a long run started now outlives it."""


def _when(value: Any) -> str:
    return value.isoformat(timespec="minutes") if isinstance(value, datetime) else str(value)


def check_training_plan(ctx: CheckContext) -> list[Row]:
    training = ctx.env.training
    if training is None or training.engine != "hyperpod" or training.capacity.kind != "training-plan":
        return []
    arn = str(training.capacity.training_plan_arn)
    sagemaker = ctx.client("sagemaker")
    try:
        plan = sagemaker.describe_training_plan(TrainingPlanName=arn)
    except Exception as error:
        if error_code(error) != "ResourceNotFound":
            raise
        return [
            ctx.row(
                CHECK_NAME,
                arn,
                "FAIL",
                f"no such training plan in {ctx.env.region}: buy one for HyperPod (aws sagemaker "
                "search-training-plan-offerings --target-resources hyperpod-cluster) or fix training_plan_arn",
            )
        ]
    rows: list[Row] = []
    targets = plan.get("TargetResources") or []
    if TARGET not in targets:
        rows.append(
            ctx.row(
                CHECK_NAME,
                arn,
                "FAIL",
                f"the plan serves {', '.join(targets) or 'nothing'}, not HyperPod clusters ({TARGET}): "
                "a plan is specific to its target resource; buy one for hyperpod-cluster",
            )
        )
    status = str(plan.get("Status"))
    end = plan.get("EndTime")
    if status in ("Expired", "Failed"):
        rows.append(
            ctx.row(
                CHECK_NAME, arn, "FAIL", f"the plan is {status} ({plan.get('StatusMessage') or 'no message'})"
            )
        )
    elif status == "Pending":
        rows.append(
            ctx.row(CHECK_NAME, arn, "WARN", "the plan is Pending: its capacity is not confirmed yet")
        )
    elif isinstance(end, datetime) and end - ctx.now() < ENDING_SOON:
        rows.append(ctx.row(CHECK_NAME, arn, "WARN", f"the plan is {status} and ends {_when(end)}"))
    else:
        starts = plan.get("StartTime")
        rows.append(
            ctx.row(
                CHECK_NAME,
                arn,
                "PASS",
                f"{status}, {_when(starts)} to {_when(end)}, for {', '.join(targets)}",
            )
        )
    rows.extend(_capacity_rows(ctx, arn, plan, ml_type(training.instance_type), training.max_nodes))
    return rows


def _capacity_rows(
    ctx: CheckContext, arn: str, plan: dict[str, Any], instance_type: str, max_nodes: int
) -> list[Row]:
    summaries = [
        s for s in plan.get("ReservedCapacitySummaries") or [] if s.get("InstanceType") == instance_type
    ]
    subject = f"{arn} {instance_type}"
    if not summaries:
        held = sorted({str(s.get("InstanceType")) for s in plan.get("ReservedCapacitySummaries") or []})
        return [
            ctx.row(
                CHECK_NAME,
                subject,
                "FAIL",
                f"the plan reserves {', '.join(held) or 'no instances'}, not {instance_type}: the workers "
                "cannot draw on it",
            )
        ]
    rows = []
    total = sum(int(s.get("TotalInstanceCount") or 0) for s in summaries)
    if total < max_nodes:
        rows.append(
            ctx.row(
                CHECK_NAME,
                subject,
                "WARN",
                f"the plan reserves {total} instances and max_nodes is {max_nodes}: workers past {total} "
                "cannot start from it",
            )
        )
    zones = sorted({str(s.get("AvailabilityZoneId") or s.get("AvailabilityZone")) for s in summaries})
    training_az = ctx.env.training_az_id
    if training_az is None:
        rows.append(ctx.row(CHECK_NAME, subject, "INFO", f"reserved in {', '.join(zones)}; {AZ_IDS_UNKNOWN}"))
    elif training_az not in zones:
        rows.append(
            ctx.row(
                CHECK_NAME,
                subject,
                "FAIL",
                f"reserved in {', '.join(zones)}, and the cluster's subnets are in {training_az}: HyperPod places "
                "the workers in the subnets' AZ, so they cannot use this plan. Put the training subnets in the "
                "plan's AZ (az_ids' first entry) or buy a plan there",
            )
        )
    else:
        rows.append(
            ctx.row(CHECK_NAME, subject, "PASS", f"{total} reserved in {training_az}, the training AZ")
        )
    return rows


CHECK = Check(
    CHECK_NAME,
    check_training_plan,
    passes_when="for a HyperPod environment on `Capacity.training_plan`: the plan exists, targets `hyperpod-cluster`, "
    "is Active or Scheduled (Pending and ending within 2 days WARN), reserves the worker type (fewer than "
    "`max_nodes` WARN) and does so in the training AZ ID",
    calls=("sagemaker:DescribeTrainingPlan",),
)
