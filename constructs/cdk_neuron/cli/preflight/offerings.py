"""Every configured AZ offers the instance types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdk_neuron.cli.preflight.base import AZ_IDS_UNKNOWN, Check, CheckContext, Row
from cdk_neuron.validation import AZ_ID


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


def _offering_rows(ctx: CheckContext, wanted: Sequence[tuple[str, str, str]], *, by_name: bool) -> list[Row]:
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


def check_offerings(ctx: CheckContext) -> list[Row]:
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
                (by_id if AZ_ID.match(az) else by_name).append((serving_type, az, "serving"))
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


CHECK = Check(
    "offering",
    check_offerings,
    passes_when="every AZ ID offers the instance types (the fleet's AZs by name when the assembly records names; INFO when the AZ IDs are unknown at synthesis)",
    calls=("ec2:DescribeInstanceTypeOfferings",),
)
