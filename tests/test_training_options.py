"""The Capacity value object, and the node set-up shell lines (no synthesis)."""

from __future__ import annotations

import pytest

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.training import Capacity

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
    with pytest.raises(
        NeuronConfigError,
        match=r"^capacity='capacity-block cr-0123456789abcdef0': EC2 sells no Capacity Blocks for "
        r"trn1n\.32xlarge .*instance Capacity Blocks exist for trn1\.32xlarge, trn2\.3xlarge, trn2\.48xlarge and "
        r"UltraServer Capacity Blocks for trn2u\.48xlarge",
    ):
        Capacity.capacity_block(RESERVATION).check_instance(get_instance("trn1n.32xlarge"))
    Capacity.reservation(RESERVATION).check_instance(get_instance("trn1n.32xlarge"))


@pytest.mark.parametrize("name", ["trn1.2xlarge", "trn1n.32xlarge", "inf2.xlarge", "inf2.48xlarge"])
def test_capacity_blocks_are_refused_where_ec2_sells_none(name: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"EC2 sells no Capacity Blocks for {name}") as err:
        Capacity.capacity_block(RESERVATION).check_instance(get_instance(name))
    assert RESERVATION in str(err.value)


def test_trn2u_capacity_block_is_an_ultraserver_capacity_block() -> None:
    # EC2 sells trn2u.48xlarge as Trn2 UltraServer Capacity Blocks (capacity-blocks-how.html); the
    # block's instances launch into its cr- reservation like an instance block's.
    trn2u = get_instance("trn2u.48xlarge")
    block = Capacity.capacity_block(RESERVATION)
    block.check_instance(trn2u)
    assert block.purchase_option(trn2u) == "UltraServer Capacity Block"
    assert block.purchase_option(get_instance("trn2.48xlarge")) == "Capacity Block"
    assert block.launch_template_data()["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    # Its On-Demand sale is unknown to our sources: reservations are not refused.
    Capacity.reservation(RESERVATION).check_instance(trn2u)


def test_reservation_in_an_existing_cluster_placement_group() -> None:
    # EC2: a reservation created in a cluster placement group is used only by instances launched
    # into that group (cr-cpg.html), so the group's name travels with the reservation.
    by_id = Capacity.reservation(RESERVATION, placement_group_name="trn-odcr-cpg")
    assert by_id.placement_group_name == "trn-odcr-cpg"
    assert by_id.describe() == f"reservation {RESERVATION} in placement group trn-odcr-cpg"
    group = Capacity.reservation_group(GROUP_ARN, placement_group_name="trn-odcr-cpg")
    assert group.placement_group_name == "trn-odcr-cpg"
    # The launch template still only targets the reservation; the engine names the group.
    assert by_id.launch_template_data() == Capacity.reservation(RESERVATION).launch_template_data()
    assert Capacity.reservation(RESERVATION).placement_group_name is None
    # Exactly at the EC2 limit of 255 characters.
    assert Capacity.reservation(RESERVATION, placement_group_name="g" * 255).placement_group_name == "g" * 255


@pytest.mark.parametrize("bad", ["", "   ", "g" * 256, "gruppe-ü", 7])
def test_bad_placement_group_names_are_refused(bad: object) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^placement_group_name=.*existing cluster placement group"
    ) as err:
        Capacity.reservation(RESERVATION, placement_group_name=bad)  # type: ignore[arg-type]
    assert err.value.value == bad


def test_only_reservations_carry_a_placement_group() -> None:
    with pytest.raises(NeuronConfigError, match=r"^placement_group_name='cpg': .*AWS places Capacity Block"):
        Capacity(kind="capacity-block", reservation_id=RESERVATION, placement_group_name="cpg")
    with pytest.raises(NeuronConfigError, match=r"^placement_group_name='cpg':"):
        Capacity(kind="on-demand", placement_group_name="cpg")


def test_purchase_option_names() -> None:
    trn1 = get_instance("trn1.32xlarge")
    assert Capacity.on_demand().purchase_option(trn1) == "On-Demand"
    assert Capacity.reservation(RESERVATION).purchase_option(trn1) == "On-Demand Capacity Reservation"
    assert (
        Capacity.reservation_group(GROUP_ARN).purchase_option(trn1) == "On-Demand Capacity Reservation group"
    )


# -- node set-up shell --------------------------------------------------------------------------
