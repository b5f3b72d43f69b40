"""A configured reservation or Capacity Block exists, is active and matches the training cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.output import Status
from cdk_neuron.cli.preflight.base import AZ_IDS_UNKNOWN, Check, CheckContext, Row
from cdk_neuron.deployment import TrainingDeployment

# Capacity reservation states (EC2 CapacityReservation.State).
_USABLE_STATES = {"active"}


_NOT_YET_STATES = {"scheduled", "pending", "payment-pending", "assessing", "delayed"}


def _training(ctx: CheckContext) -> TrainingDeployment:
    assert ctx.env.training is not None  # checks that need it run only when it is there
    return ctx.env.training


def _reservation_rows(ctx: CheckContext, reservation: dict[str, Any], *, capacity_block: bool) -> list[Row]:
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


def _placement_group_rows(ctx: CheckContext, reservation: dict[str, Any]) -> list[Row]:
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


def check_capacity(ctx: CheckContext) -> list[Row]:
    if ctx.env.training is None:
        return []
    capacity = ctx.env.training.capacity
    if capacity.kind == "training-plan":
        return []  # a SageMaker training plan, not EC2 capacity: the "training plan" check reads it
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


def _check_reservation_group(ctx: CheckContext, ec2: Any) -> list[Row]:
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


CHECK = Check(
    "capacity",
    check_capacity,
    passes_when="a configured reservation or Capacity Block is active, of the right type, instance type and AZ; a reservation made in a cluster placement group has that group named (`placement_group_name`), and the group exists, is `cluster` and available",
    calls=(
        "ec2:DescribeCapacityReservations",
        "ec2:DescribePlacementGroups",
        "resource-groups:GetGroup",
        "resource-groups:ListGroupResources",
    ),
)
