"""Capacity and Engine value objects, and the node set-up shell lines (no synthesis)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.training import Capacity, Engine

RESERVATION = "cr-0123456789abcdef0"
GROUP_ARN = "arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs"

# -- Capacity -----------------------------------------------------------------------------------


def test_on_demand_renders_nothing() -> None:
    assert Capacity.on_demand().launch_template_data() == {}
    assert Capacity() == Capacity.on_demand()


def test_reservation_targets_the_id() -> None:
    assert Capacity.reservation(RESERVATION).launch_template_data() == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": RESERVATION}
        }
    }


def test_reservation_group_targets_the_group() -> None:
    assert Capacity.reservation_group(GROUP_ARN).launch_template_data() == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP_ARN}
        }
    }


def test_capacity_block_sets_market_type_and_target() -> None:
    block = Capacity.capacity_block(RESERVATION)
    assert block.is_capacity_block
    assert block.launch_template_data() == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": RESERVATION}
        },
        "InstanceMarketOptions": {"MarketType": "capacity-block"},
    }


@pytest.mark.parametrize("bad", ["cr-123", "0123456789abcdef0", "cr-0123456789ABCDEF0", "", None, 7])
def test_bad_reservation_ids_are_refused(bad: object) -> None:
    with pytest.raises(NeuronConfigError, match="reservation_id"):
        Capacity.reservation(bad)  # type: ignore[arg-type]
    with pytest.raises(NeuronConfigError, match="reservation_id"):
        Capacity.capacity_block(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        "arn:aws:ec2:us-east-1:111111111111:capacity-reservation/cr-0123456789abcdef0",
        "arn:aws:resource-groups:us-east-1:1111:group/x",
        "trn-odcrs",
    ],
)
def test_bad_group_arns_are_refused(bad: str) -> None:
    with pytest.raises(NeuronConfigError, match="resource_group_arn"):
        Capacity.reservation_group(bad)


def test_constructor_misuse_is_refused() -> None:
    with pytest.raises(NeuronConfigError, match="capacity"):
        Capacity(kind="spot")  # type: ignore[arg-type]
    with pytest.raises(NeuronConfigError, match="class methods"):
        Capacity(kind="on-demand", reservation_id=RESERVATION)


def test_capacity_blocks_only_for_types_ec2_sells_that_way() -> None:
    Capacity.capacity_block(RESERVATION).check_instance(get_instance("trn1.32xlarge"))
    Capacity.capacity_block(RESERVATION).check_instance(get_instance("trn2.48xlarge"))
    with pytest.raises(NeuronConfigError, match=r"not offered for trn1n\.32xlarge"):
        Capacity.capacity_block(RESERVATION).check_instance(get_instance("trn1n.32xlarge"))
    Capacity.reservation(RESERVATION).check_instance(get_instance("trn1n.32xlarge"))


# -- Engine -------------------------------------------------------------------------------------


def test_engine_defaults() -> None:
    batch = Engine.batch()
    assert batch.is_batch
    assert batch.update_timeout.to_minutes() == 360
    assert batch.terminate_on_update is False
    group = Engine.auto_scaling_group()
    assert not group.is_batch
    assert group.desired_capacity is None


@pytest.mark.parametrize("minutes", [0, 361])
def test_update_timeout_outside_batch_limits_is_refused(minutes: int) -> None:
    with pytest.raises(NeuronConfigError, match="update_timeout"):
        Engine.batch(update_timeout=cdk.Duration.minutes(minutes))


def test_update_timeout_in_seconds_is_refused() -> None:
    with pytest.raises(NeuronConfigError, match="whole number of minutes"):
        Engine.batch(update_timeout=cdk.Duration.seconds(90))


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_bad_desired_capacity_is_refused(bad: object) -> None:
    with pytest.raises(NeuronConfigError, match="desired_capacity"):
        Engine.auto_scaling_group(desired_capacity=bad)  # type: ignore[arg-type]


# -- node set-up shell --------------------------------------------------------------------------
