"""The catalog against its public sources' tables, the EFA layouts, offerings and prices.

Expected values below are transcribed by hand from the public sources, never read from
``cdk_neuron.catalog``, so a wrong catalog value fails here: the aws-neuron-sdk architecture pages
(trn1-arch.rst, trn2-arch.rst, trainium2.rst, inf2-arch.rst) and its logical-NeuronCore page for
chips, cores, LNC and HBM; moto's EC2 instance data (instance_types.json and the availability-zone-id
offerings, getmoto/moto @0af643a) for host, network, EFA, NVMe and offering facts; the Neuron
multi-node setup page and the EC2 EFA guide for the interface layouts; and the Karpenter price file,
foundation-model-benchmarking-tool's pricing.yml and the SkyPilot catalog for prices. Upper-case keys
(TRN1-ARCH, MOTO, KARP, ...) name entries of ``cdk_neuron.catalog.SOURCES``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import FrozenInstanceError, dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdk_neuron import catalog
from cdk_neuron.catalog import (
    INSTANCES,
    SOURCES,
    EfaLayout,
    NeuronInstance,
    efa_network_interfaces,
    get_instance,
    get_training_instance,
    offered_az_ids,
    offering_status,
    on_demand_price,
    region_of_az_id,
    region_offering_status,
)
from cdk_neuron.errors import NeuronConfigError

FAST = settings(max_examples=60, deadline=None)

# --------------------------------------------------------------------------------------------
# Instance facts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    family: str
    chips: int
    physical_cores: int
    logical_cores: int  # at the default LNC
    hbm_gib: int
    vcpus: int
    memory_gib: int
    network_cards: int
    efa_interfaces: int
    efa_gbps: int
    nvme_gb: int
    neuronlink_domain_instances: int = 1


# Trainium: chips, cores, HBM and vCPU/RAM from TRN1-ARCH, TRN2-ARCH and aws-neuron-sdk
# about-neuron/arch/neuron-hardware/trainium2.rst @7c165a3; logical cores from LNC; network cards,
# EFA interfaces and NVMe from MOTO (NVMe "4 x 1,900 GB" for trn1.32xlarge/trn1n and trn2); EFA Gbps
# from TRN1-ARCH (800 / 1,600) and TRN2-ARCH (3,200). trn2u has trn2.48xlarge's figures and four of
# them form an UltraServer (TRN2-ARCH). Inf2: chips, cores and HBM from INF2-ARCH, the rest from MOTO
# (no EFA, no instance store; one network card).
EXPECTED: dict[str, Expected] = {
    "trn1.2xlarge": Expected("training", 1, 2, 2, 32, 8, 32, 1, 0, 0, 474),
    "trn1.32xlarge": Expected("training", 16, 32, 32, 512, 128, 512, 8, 8, 800, 7600),
    "trn1n.32xlarge": Expected("training", 16, 32, 32, 512, 128, 512, 16, 16, 1600, 7600),
    # trn2.3xlarge: one Trainium2 (TRN2-ARCH chip facts); host, network and NVMe from moto 5.2.5.
    "trn2.3xlarge": Expected("training", 1, 8, 4, 96, 12, 128, 1, 1, 200, 470),
    "trn2.48xlarge": Expected("training", 16, 128, 64, 1536, 192, 2048, 16, 16, 3200, 7600),
    "trn2u.48xlarge": Expected("training", 16, 128, 64, 1536, 192, 2048, 16, 16, 3200, 7600, 4),
    "inf2.xlarge": Expected("inference", 1, 2, 2, 32, 4, 16, 1, 0, 0, 0),
    "inf2.8xlarge": Expected("inference", 1, 2, 2, 32, 32, 128, 1, 0, 0, 0),
    "inf2.24xlarge": Expected("inference", 6, 12, 12, 192, 96, 384, 1, 0, 0, 0),
    "inf2.48xlarge": Expected("inference", 12, 24, 24, 384, 192, 768, 1, 0, 0, 0),
}

# Maximum network interfaces per network card, from MOTO (Inf2 has a single card).
MAX_INTERFACES_PER_CARD = {
    "trn1.2xlarge": 4,
    "trn1.32xlarge": 5,
    "trn1n.32xlarge": 5,
    "trn2.3xlarge": 2,
    "trn2.48xlarge": 2,
    "trn2u.48xlarge": 2,
    "inf2.xlarge": 4,
    "inf2.8xlarge": 8,
    "inf2.24xlarge": 15,
    "inf2.48xlarge": 15,
}


# Trn3 servers (trn3-arch.rst and trainium3.rst; UltraServer totals divided by servers), checked in
# test_trn3_servers below: their network facts are unpublished.
TRN3 = ("trn3.48xlarge", "trn3-gen2-server")


def test_catalog_covers_exactly_the_issue_instances() -> None:
    assert set(INSTANCES) == set(EXPECTED) | set(TRN3)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_instance_facts_match_reference_tables(name: str) -> None:
    want = EXPECTED[name]
    got = get_instance(name)
    assert got.name == name
    assert got.family == want.family
    assert got.chips == want.chips
    assert got.physical_neuron_cores == want.physical_cores
    assert got.neuron_cores == want.logical_cores
    assert got.hbm_gib == want.hbm_gib
    assert got.hbm_gib_per_core == pytest.approx(want.hbm_gib / want.logical_cores)
    assert got.vcpus == want.vcpus
    assert got.memory_gib == want.memory_gib
    assert got.network_cards == want.network_cards
    assert got.max_interfaces_per_card == MAX_INTERFACES_PER_CARD[name]
    assert got.efa_interfaces == want.efa_interfaces
    assert got.efa_gbps == want.efa_gbps
    assert got.nvme_gb == want.nvme_gb
    assert got.neuronlink_domain_instances == want.neuronlink_domain_instances
    assert got.supports_efa is (want.efa_interfaces > 0)
    assert got.is_training is (want.family == "training")


@pytest.mark.parametrize(
    ("name", "per_core"),
    [
        # 32 GiB per Trainium / Inferentia2 chip over 2 NeuronCore-v2 (TGI-DOC's "16GB per neuron core").
        ("trn1.32xlarge", 16.0),
        ("inf2.xlarge", 16.0),
        ("inf2.48xlarge", 16.0),
        # 96 GiB per Trainium2 over 4 logical cores at LNC=2.
        ("trn2.48xlarge", 24.0),
    ],
)
def test_hbm_per_core(name: str, per_core: float) -> None:
    assert get_instance(name).hbm_gib_per_core == per_core


@pytest.mark.parametrize(
    ("name", "devices"),
    [
        # One device per chip (INF2-ARCH chip counts; TGI-DOC: two cores per Neuron device):
        # neuron0 on xlarge/8xlarge, neuron0-5 on 24xlarge, neuron0-11 on 48xlarge.
        ("inf2.xlarge", ["/dev/neuron0"]),
        ("inf2.8xlarge", ["/dev/neuron0"]),
        ("inf2.24xlarge", [f"/dev/neuron{i}" for i in range(6)]),
        ("inf2.48xlarge", [f"/dev/neuron{i}" for i in range(12)]),
        ("trn1.2xlarge", ["/dev/neuron0"]),
        ("trn2.48xlarge", [f"/dev/neuron{i}" for i in range(16)]),
    ],
)
def test_neuron_devices_one_per_chip(name: str, devices: list[str]) -> None:
    assert list(get_instance(name).neuron_devices) == devices


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("trn1.2xlarge", 0),
        ("trn1.32xlarge", 8),
        ("trn1n.32xlarge", 16),
        ("trn2u.48xlarge", 16),
        ("inf2.48xlarge", 0),
    ],
)
def test_efa_devices_one_per_efa_interface(name: str, count: int) -> None:
    assert list(get_instance(name).efa_devices) == [f"/dev/infiniband/uverbs{i}" for i in range(count)]


class TestLogicalNeuronCores:
    """Source LNC: LNC is 1 or 2, Trn2 only, default 2 (64 cores; 128 at LNC=1)."""

    @pytest.mark.parametrize("name", ["trn2.48xlarge", "trn2u.48xlarge"])
    def test_trn2_exposes_both_settings(self, name: str) -> None:
        inst = get_instance(name)
        assert inst.default_logical_nc_config == 2
        assert inst.neuron_cores_at(None) == 64
        assert inst.neuron_cores_at(2) == 64
        assert inst.neuron_cores_at(1) == 128
        assert inst.hbm_gib_per_core_at(1) == 12.0
        assert inst.hbm_gib_per_core_at(2) == 24.0

    @pytest.mark.parametrize("name", ["trn1.32xlarge", "inf2.48xlarge"])
    def test_lnc_does_not_apply_elsewhere(self, name: str) -> None:
        inst = get_instance(name)
        assert not inst.supports_logical_nc_config
        assert inst.neuron_cores_at(None) == inst.physical_neuron_cores
        assert inst.neuron_cores_at(1) == inst.physical_neuron_cores
        with pytest.raises(NeuronConfigError, match=r"logical_nc_config=2: .*only to Trn2"):
            inst.neuron_cores_at(2)

    @pytest.mark.parametrize("bad", [0, 3, 4, -1, True, 2.0, "2"])
    def test_invalid_settings_are_refused(self, bad: Any) -> None:
        with pytest.raises(NeuronConfigError, match="logical_nc_config") as err:
            get_instance("trn2.48xlarge").neuron_cores_at(bad)
        assert err.value.field == "logical_nc_config"


def test_instances_are_frozen() -> None:
    inst = get_instance("trn1.32xlarge")
    with pytest.raises(FrozenInstanceError):
        inst.chips = 2  # type: ignore[misc]


def test_every_fact_group_cites_a_dated_source() -> None:
    for inst in INSTANCES.values():
        assert inst.sources, inst.name
        for key in inst.sources:
            assert key in SOURCES, (inst.name, key)
    for key, source in SOURCES.items():
        assert source.key == key
        assert source.citation.strip()
        assert re.match(r"^\d{4}(-\d{2}){0,2}$", source.date), (key, source.date)
    for table in (
        catalog.ON_DEMAND_PRICES,
        catalog.SAGEMAKER_PRICES,
        catalog.SAGEMAKER_GENERAL_PRICES,
        catalog.SERVICE_PRICES,
    ):
        for name, price in table.items():
            assert price.source in SOURCES, (name, price.source)
    assert catalog.OFFERINGS_SOURCE.date == "2026-08-22"


def test_snapshots_say_preflight_verifies_them() -> None:
    assert "preflight" in catalog.OFFERINGS_NOTE
    assert "preflight" in catalog.PRICES_NOTE
    assert catalog.PRICES_DATE in catalog.PRICES_NOTE
    assert catalog.__doc__ is not None and "preflight" in catalog.__doc__
    assert "preflight" in (offered_az_ids.__doc__ or "")


# --------------------------------------------------------------------------------------------
# Lookup
# --------------------------------------------------------------------------------------------


def test_unknown_instance_lists_known_ones() -> None:
    with pytest.raises(NeuronConfigError, match=r"^instance_type='trn9.48xlarge': ") as err:
        get_instance("trn9.48xlarge")
    for name in EXPECTED:
        assert name in str(err.value)
    assert err.value.field == "instance_type"
    assert err.value.value == "trn9.48xlarge"


def test_lookup_reports_the_callers_field_name() -> None:
    with pytest.raises(NeuronConfigError, match=r"^serving_instance=") as err:
        get_instance("p5.48xlarge", field="serving_instance")
    assert err.value.field == "serving_instance"


def test_sagemaker_prefix_resolves_to_the_ec2_type() -> None:
    assert get_instance("ml.inf2.xlarge") is get_instance("inf2.xlarge")


def test_training_lookup_refuses_inferentia() -> None:
    with pytest.raises(NeuronConfigError, match=r"instance_type='inf2.48xlarge'.*trn1.32xlarge"):
        get_training_instance("inf2.48xlarge")


@FAST
@given(st.one_of(st.text(max_size=20), st.integers(), st.none(), st.floats(allow_nan=False)))
def test_any_unknown_name_is_a_config_error(name: Any) -> None:
    if isinstance(name, str) and name.removeprefix("ml.") in EXPECTED:
        return
    with pytest.raises(NeuronConfigError) as err:
        get_instance(name)
    assert err.value.field == "instance_type"
    assert str(err.value).startswith("instance_type=")
    assert "trn1.32xlarge" in str(err.value)


# --------------------------------------------------------------------------------------------
# EFA launch-template network interfaces (EFA-SETUP: all EFA; EFA-MULTI: ENA primary + EFA-only)
# --------------------------------------------------------------------------------------------

SG = ["sg-0123456789abcdef0"]


def _nic(card: int, device: int, kind: str | None) -> dict[str, Any]:
    nic: dict[str, Any] = {
        "NetworkCardIndex": card,
        "DeviceIndex": device,
        "Groups": SG,
        "DeleteOnTermination": True,
    }
    if kind is not None:
        nic["InterfaceType"] = kind
    return nic


@pytest.mark.parametrize(
    ("name", "cards"), [("trn1.32xlarge", 8), ("trn1n.32xlarge", 16), ("trn2.48xlarge", 16)]
)
def test_all_efa_layout_matches_neuron_docs(name: str, cards: int) -> None:
    # §3.1: card 0 device 0 efa; cards 1..N-1 device 1 efa.
    want = [_nic(0, 0, "efa")] + [_nic(c, 1, "efa") for c in range(1, cards)]
    assert efa_network_interfaces(name, SG) == want
    assert efa_network_interfaces(name, SG, EfaLayout.ALL_EFA) == want


def test_ena_primary_layout_matches_ec2_recommendation() -> None:
    # EFA-MULTI: ENA primary at card 0 device 0; EFA-only at card 0 device 1; every additional
    # interface on the next card at device index 1 ("device index 1, and either an EFA ... or
    # EFA-only network interface").
    got = efa_network_interfaces("trn2.48xlarge", SG, layout=EfaLayout.ENA_PRIMARY_EFA_ONLY)
    want = [_nic(0, 0, None), _nic(0, 1, "efa-only")] + [_nic(c, 1, "efa-only") for c in range(1, 16)]
    assert got == want
    # trn2 allows 2 interfaces per card: card 0 holds exactly ENA + EFA-only.
    assert sum(1 for nic in got if nic["NetworkCardIndex"] == 0) == 2


def test_layout_accepts_its_name_or_value() -> None:
    by_enum = efa_network_interfaces("trn1.32xlarge", SG, EfaLayout.ENA_PRIMARY_EFA_ONLY)
    assert efa_network_interfaces("trn1.32xlarge", SG, "ENA_PRIMARY_EFA_ONLY") == by_enum
    assert efa_network_interfaces("trn1.32xlarge", SG, "ena-primary-efa-only") == by_enum
    with pytest.raises(NeuronConfigError, match=r"^layout='efa-everywhere': .*ALL_EFA"):
        efa_network_interfaces("trn1.32xlarge", SG, "efa-everywhere")


def test_no_interface_requests_a_public_ip_and_each_carries_the_groups() -> None:
    groups = ["sg-a", "sg-b"]
    for layout in EfaLayout:
        for nic in efa_network_interfaces("trn1n.32xlarge", groups, layout):
            assert "AssociatePublicIpAddress" not in nic
            assert nic["Groups"] == groups


def test_interfaces_own_their_groups_list() -> None:
    groups = ["sg-a"]
    nics = efa_network_interfaces("trn1.32xlarge", groups)
    nics[0]["Groups"].append("sg-mutated")
    assert groups == ["sg-a"]
    assert nics[1]["Groups"] == ["sg-a"]


@pytest.mark.parametrize("name", ["trn1.2xlarge", "inf2.xlarge", "inf2.48xlarge"])
def test_instances_without_efa_are_refused(name: str) -> None:
    with pytest.raises(
        NeuronConfigError, match=rf"^instance_type='{re.escape(name)}': has no EFA.*trn1n.32xlarge"
    ):
        efa_network_interfaces(name, SG)


@pytest.mark.parametrize("bad", [[], "sg-0123", ["sg-a", ""], [None]])
def test_security_groups_must_be_a_list_of_ids(bad: Any) -> None:
    # A bare string would otherwise become one security group per character.
    with pytest.raises(NeuronConfigError, match=r"^security_group_ids="):
        efa_network_interfaces("trn1.32xlarge", bad)


EFA_TYPES = [n for n, e in EXPECTED.items() if e.efa_interfaces]


@FAST
@given(
    name=st.sampled_from(EFA_TYPES),
    layout=st.sampled_from(list(EfaLayout)),
    groups=st.lists(st.from_regex(r"sg-[0-9a-f]{8,17}", fullmatch=True), min_size=1, max_size=5),
)
def test_efa_interfaces_properties(name: str, layout: EfaLayout, groups: list[str]) -> None:
    inst = get_instance(name)
    nics = efa_network_interfaces(inst, groups, layout)
    cards = [n["NetworkCardIndex"] for n in nics]
    # NetworkCardIndex values are within the card count, every card is used, and no
    # (card, device) slot is taken twice.
    assert all(0 <= c < EXPECTED[name].network_cards for c in cards)
    assert set(cards) == set(range(EXPECTED[name].network_cards))
    assert len({(n["NetworkCardIndex"], n["DeviceIndex"]) for n in nics}) == len(nics)
    # Exactly one primary interface (card 0, device 0), and it carries IP traffic.
    primaries = [n for n in nics if n["NetworkCardIndex"] == 0 and n["DeviceIndex"] == 0]
    assert len(primaries) == 1
    assert primaries[0].get("InterfaceType", "interface") in ("efa", "interface")
    # Per-card interface limits hold.
    for card in set(cards):
        assert cards.count(card) <= MAX_INTERFACES_PER_CARD[name]
    if layout is EfaLayout.ALL_EFA:
        # Unique within the card count as the issue asks: one interface per card.
        assert len(cards) == len(set(cards))
    # One EFA device per EFA-capable interface, in either layout.
    efa_capable = [n for n in nics if n.get("InterfaceType") in ("efa", "efa-only")]
    assert len(efa_capable) == len(inst.efa_devices) == EXPECTED[name].efa_interfaces
    assert all(n["Groups"] == groups for n in nics)


# --------------------------------------------------------------------------------------------
# Offerings by AZ ID (MOTO: moto's availability-zone-id offerings)
# --------------------------------------------------------------------------------------------

_INF2 = {
    "us-east-1": {"use1-az2", "use1-az4", "use1-az5", "use1-az6"},
    "us-east-2": {"use2-az1", "use2-az2", "use2-az3"},
    "us-west-2": {"usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"},
    "ap-northeast-1": {"apne1-az1", "apne1-az4"},
    "ap-south-1": {"aps1-az1", "aps1-az3"},
    "ap-southeast-1": {"apse1-az2", "apse1-az3"},
    "ap-southeast-2": {"apse2-az1", "apse2-az3"},
    "eu-central-1": {"euc1-az2", "euc1-az3"},
    "eu-north-1": {"eun1-az1", "eun1-az2"},
    "eu-west-1": {"euw1-az1", "euw1-az2", "euw1-az3"},
    "eu-west-2": {"euw2-az2"},
    "eu-west-3": {"euw3-az2", "euw3-az3"},
    "sa-east-1": {"sae1-az3"},
}
EXPECTED_OFFERINGS: dict[str, dict[str, set[str]]] = {
    "trn1.2xlarge": {
        "us-east-1": {"use1-az5", "use1-az6"},
        "us-east-2": {"use2-az3"},
        "us-west-2": {"usw2-az1", "usw2-az4"},
    },
    "trn1.32xlarge": {
        "us-east-1": {"use1-az4", "use1-az5", "use1-az6"},
        "us-east-2": {"use2-az3"},
        "us-west-2": {"usw2-az1", "usw2-az4"},
        "ap-south-1": {"aps1-az2"},
        "ap-southeast-2": {"apse2-az1", "apse2-az2"},
        "ap-southeast-4": {"apse4-az1"},
    },
    "trn1n.32xlarge": {"us-east-1": {"use1-az6"}, "us-east-2": {"use2-az3"}, "us-west-2": {"usw2-az4"}},
    "trn2.48xlarge": {"us-east-2": {"use2-az1", "use2-az2", "use2-az3"}},
    "inf2.xlarge": {**_INF2, "ap-northeast-2": {"apne2-az1", "apne2-az2", "apne2-az3"}},
    "inf2.8xlarge": _INF2,
    "inf2.24xlarge": _INF2,
    "inf2.48xlarge": _INF2,
}
ALL_REGIONS = sorted({r for table in EXPECTED_OFFERINGS.values() for r in table})


@pytest.mark.parametrize("name", sorted(EXPECTED_OFFERINGS))
def test_offered_az_ids_match_reference(name: str) -> None:
    for region in ALL_REGIONS:
        want = EXPECTED_OFFERINGS[name].get(region, set())
        got = offered_az_ids(name, region)
        assert set(got) == want, (name, region)
        assert len(got) == len(set(got))
        assert region_offering_status(name, region) == ("offered" if want else "not-offered")
        for az_id in want:
            assert offering_status(name, az_id) == "offered"
            assert region_of_az_id(az_id) == region


def test_az_ids_not_in_the_table_are_not_offered_in_covered_regions() -> None:
    assert offering_status("trn2.48xlarge", "use1-az4") == "not-offered"
    assert offering_status("trn1n.32xlarge", "use1-az4") == "not-offered"
    assert offering_status("inf2.8xlarge", "apne2-az1") == "not-offered"
    assert offering_status("inf2.xlarge", "apne2-az1") == "offered"


def test_regions_the_table_does_not_cover_are_unknown() -> None:
    assert offered_az_ids("inf2.xlarge", "me-central-1") == ()
    assert region_offering_status("inf2.xlarge", "me-central-1") == "unknown"
    assert offering_status("inf2.xlarge", "mec1-az1") == "unknown"
    assert offering_status("inf2.xlarge", "usw2-lax1-az1") == "unknown"  # a Local Zone


def test_trn2u_offerings_are_unknown_not_absent() -> None:
    # No source has AZ-level trn2u data: an empty answer must not read as "not offered".
    assert offered_az_ids("trn2u.48xlarge", "us-east-2") == ()
    assert region_offering_status("trn2u.48xlarge", "us-east-2") == "unknown"
    assert offering_status("trn2u.48xlarge", "use2-az3") == "unknown"


@pytest.mark.parametrize("region", ["us-east-1a", "use1", "US-EAST-1", "${Token[AWS.Region.8]}", "", None])
def test_offered_az_ids_refuses_what_is_not_a_region(region: Any) -> None:
    with pytest.raises(NeuronConfigError, match=r"^region="):
        offered_az_ids("trn1.32xlarge", region)
    with pytest.raises(NeuronConfigError, match=r"^region="):
        region_offering_status("trn1.32xlarge", region)


@pytest.mark.parametrize("az", ["us-east-1a", "use1", "use1-az", "use1-az4 ", None])
def test_offering_status_refuses_az_names(az: Any) -> None:
    with pytest.raises(NeuronConfigError, match=r"^az_id=.*AZ ID"):
        offering_status("trn1.32xlarge", az)


def test_offerings_refuse_unknown_instances() -> None:
    with pytest.raises(NeuronConfigError, match=r"^instance_type='trn9.3xlarge'"):
        offered_az_ids("trn9.3xlarge", "us-east-2")


def test_region_of_unknown_az_is_none() -> None:
    assert region_of_az_id("xxx9-az9") is None


# --------------------------------------------------------------------------------------------
# Prices (KARP for EC2, Neuron and GPU; FMB for SageMaker ml.*)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "usd", "region"),
    [
        ("trn1.2xlarge", 1.34375, "us-east-1"),
        ("trn1.32xlarge", 21.50, "us-east-1"),
        ("trn1n.32xlarge", 24.78, "us-east-1"),
        ("inf2.xlarge", 0.7582, "us-east-1"),
        ("inf2.8xlarge", 1.96786, "us-east-1"),
        ("inf2.24xlarge", 6.49063, "us-east-1"),
        ("inf2.48xlarge", 12.98127, "us-east-1"),
        ("ml.inf2.xlarge", 0.99, "us-east-1"),
        ("ml.inf2.8xlarge", 2.36, "us-east-1"),
        ("ml.inf2.24xlarge", 7.79, "us-east-1"),
        ("ml.inf2.48xlarge", 15.58, "us-east-1"),
        ("ml.trn1.32xlarge", 28.497, "us-east-1"),
        ("p4d.24xlarge", 21.957642, "us-east-1"),
        ("p5.48xlarge", 55.04, "us-east-1"),
        ("g5.xlarge", 1.006, "us-east-1"),
        ("g5.12xlarge", 5.672, "us-east-1"),
        ("g5.48xlarge", 16.288, "us-east-1"),
        ("g6e.xlarge", 1.861, "us-east-1"),
        ("g6e.12xlarge", 10.49264, "us-east-1"),
        ("g6e.48xlarge", 30.13118, "us-east-1"),
    ],
)
def test_on_demand_prices_match_reference(name: str, usd: float, region: str) -> None:
    price = on_demand_price(name)
    assert price.usd_per_hour == usd
    assert price.region == region


def test_trn2_price_is_flagged_with_the_disagreeing_source() -> None:
    price = on_demand_price("trn2.48xlarge")
    assert price.usd_per_hour == 85.964
    assert price.region == "us-east-2"
    assert "35.76" in price.note


@pytest.mark.parametrize("name", ["trn2u.48xlarge", "ml.trn2.48xlarge", "trn3.48xlarge", "ml.p5.48xlarge"])
def test_unpriced_types_are_refused_not_guessed(name: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^instance_type='{re.escape(name)}': no price on record"):
        on_demand_price(name)


def test_every_catalogued_inference_instance_is_priced() -> None:
    # size_model orders candidates by price, so a missing Inf2 price would break it.
    for name, inst in INSTANCES.items():
        if inst.family == "inference":
            assert on_demand_price(name).usd_per_hour > 0


# --------------------------------------------------------------------------------------------
# Purchase options, transcribed by hand from the EC2 Capacity Blocks guide (ec2-capacity-blocks.html:
# instance blocks for trn1.32xlarge and trn2.48xlarge; capacity-blocks-how.html: Trn2 UltraServer
# blocks), moto usage classes and the On-Demand Capacity Reservations guide.
# --------------------------------------------------------------------------------------------

# name: (On-Demand, reservation, instance Capacity Block, UltraServer Capacity Block)
EXPECTED_PURCHASE: dict[str, tuple[str, str, str, str]] = {
    "trn1.2xlarge": ("yes", "yes", "no", "no"),
    "trn1.32xlarge": ("yes", "yes", "yes", "no"),
    "trn1n.32xlarge": ("yes", "yes", "no", "no"),
    "trn2.48xlarge": ("yes", "yes", "yes", "no"),
    "trn2u.48xlarge": ("unknown", "unknown", "no", "yes"),
    "inf2.xlarge": ("yes", "yes", "no", "no"),
    "inf2.8xlarge": ("yes", "yes", "no", "no"),
    "inf2.24xlarge": ("yes", "yes", "no", "no"),
    "inf2.48xlarge": ("yes", "yes", "no", "no"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PURCHASE))
def test_purchase_options_match_the_ec2_guides(name: str) -> None:
    got = get_instance(name).purchase_options
    assert (got.on_demand, got.reservation, got.capacity_block, got.ultraserver_capacity_block) == (
        EXPECTED_PURCHASE[name]
    )
    for key in got.sources:
        assert key in SOURCES, (name, key)


def test_capacity_block_kinds() -> None:
    assert catalog.capacity_block_types() == (
        "trn1.32xlarge",
        "trn2.3xlarge",
        "trn2.48xlarge",
        "trn2u.48xlarge",
    )
    assert catalog.capacity_block_types("instance") == ("trn1.32xlarge", "trn2.3xlarge", "trn2.48xlarge")
    assert catalog.capacity_block_types("ultraserver") == ("trn2u.48xlarge",)
    assert get_instance("trn2u.48xlarge").purchase_options.capacity_block_kind == "ultraserver"
    assert get_instance("trn1n.32xlarge").purchase_options.capacity_block_kind is None
    assert set(catalog.PURCHASE_OPTIONS) == set(INSTANCES)


def test_neuron_instance_is_exported() -> None:
    assert catalog.NeuronInstance is NeuronInstance
    for name in catalog.__all__:
        assert hasattr(catalog, name), name


# --------------------------------------------------------------------------------------------
# Trn3 and the UltraServers (trn3-arch.rst, trainium3.rst, trn2-arch.rst, by hand)
# --------------------------------------------------------------------------------------------


def test_trn3_servers() -> None:
    gen1, gen2 = get_instance("trn3.48xlarge"), get_instance("trn3-gen2-server")
    # Gen1: 4 servers x 16 Trainium3; UltraServer 768 vCPUs, 8,192 GiB, 12,800 Gbps EFA.
    assert (gen1.chips, gen1.physical_neuron_cores, gen1.hbm_gib) == (16, 128, 2304)
    assert (gen1.vcpus, gen1.memory_gib, gen1.efa_gbps) == (192, 2048, 3200)
    assert gen1.neuronlink_domain_instances == 4 and gen1.domain_chips == 64
    # Gen2: 36 servers x 4 Trainium3; UltraServer 2,304 vCPUs, 27,648 GiB, 28,800 Gbps EFA.
    assert (gen2.chips, gen2.physical_neuron_cores, gen2.hbm_gib) == (4, 32, 576)
    assert (gen2.vcpus, gen2.memory_gib, gen2.efa_gbps) == (64, 768, 800)
    assert gen2.neuronlink_domain_instances == 36 and gen2.domain_chips == 144
    for server in (gen1, gen2):
        assert server.hbm_gib_per_core_at(1) == 18.0  # 144 GiB over 8 NeuronCore-v4
        assert server.is_ultraserver and server.supports_efa
        assert "NeuronSwitch-v1" in server.interconnect
        # Unpublished facts are recorded as unknown, never guessed.
        for fact in ("network_cards", "efa_interfaces", "nvme_gb", "default_logical_nc_config"):
            assert not server.is_known(fact)
        assert catalog.known_price(server.name) is None
        assert offering_status(server.name, "use2-az1") == "unknown"
        assert server.purchase_options.ultraserver_capacity_block == "unknown"
        assert server.purchase_options.capacity_block == "no"
    assert "name" in gen2.unknown and "name" not in gen1.unknown


def test_ultraservers() -> None:
    sizes = {k: (u.servers, u.chips_per_server, u.chips) for k, u in catalog.ULTRASERVERS.items()}
    assert sizes == {"trn2": (4, 16, 64), "trn3-gen1": (4, 16, 64), "trn3-gen2": (36, 4, 144)}
    for key, ultra in catalog.ULTRASERVERS.items():
        server = get_instance(ultra.instance_type)
        assert server.ultraserver == key
        assert server.neuronlink_domain_instances == ultra.servers
        assert server.chips == ultra.chips_per_server
        assert catalog.ULTRASERVER_CAPACITY_BLOCK_PRICES[key] is None  # unpublished
    assert get_instance("trn2.48xlarge").ultraserver_type is None


def test_with_facts_completes_what_the_catalog_lacks() -> None:
    gen1 = get_instance("trn3.48xlarge")
    with pytest.raises(
        NeuronConfigError, match=r"^instance_type='trn3.48xlarge': a cluster needs network_cards"
    ):
        gen1.require_known("network_cards", purpose="a cluster")
    done = gen1.with_facts(
        source="test", network_cards=16, max_interfaces_per_card=2, efa_interfaces=16, nvme_gb=0
    )
    assert done.key == "trn3.48xlarge" and done.name == "trn3.48xlarge"
    assert done.efa_interfaces == 16 and done.is_known("efa_interfaces")
    assert done.unknown == ("default_logical_nc_config",)
    assert "given: test" in done.sources
    assert len(done.efa_devices) == 16
    with pytest.raises(
        NeuronConfigError, match=r"^chips=4: only facts the catalog lacks or holds from a weak"
    ):
        gen1.with_facts(source="test", chips=4)
    with pytest.raises(NeuronConfigError, match=r"^name='trn3x': give an EC2 instance type name"):
        get_instance("trn3-gen2-server").with_facts(source="test", name="trn3x")
    named = get_instance("trn3-gen2-server").with_facts(source="test", name="trn3z.16xlarge")
    assert (named.name, named.key) == ("trn3z.16xlarge", "trn3-gen2-server")
    assert get_instance(named) is named
    assert catalog.training_tp_degrees(named, 2) == (1, 8)


# --------------------------------------------------------------------------------------------
# Added with mutation testing (issue 18): whole messages, values carried, fallbacks, tables
# --------------------------------------------------------------------------------------------


def test_with_facts_refusals_carry_the_value_and_the_whole_message() -> None:
    gen1, gen2 = get_instance("trn3.48xlarge"), get_instance("trn3-gen2-server")
    for source in ("", "  ", None, 7):
        with pytest.raises(
            NeuronConfigError, match=rf"^source={re.escape(repr(source))}: say where the facts come from$"
        ) as raised:
            gen1.with_facts(source=source, nvme_gb=0)  # type: ignore[arg-type]
        assert (raised.value.field, raised.value.value) == ("source", source)
    # EC2 names trn2.48xlarge (EC2-MODEL): its name is no weak fact.
    with pytest.raises(
        NeuronConfigError,
        match=r"^name='trn2x\.48xlarge': trn2\.48xlarge is already EC2's name for this type$",
    ) as raised:
        get_instance("trn2.48xlarge").with_facts(source="test", name="trn2x.48xlarge")
    assert raised.value.value == "trn2x.48xlarge"
    # "name" is given by its own argument, never among the facts.
    with pytest.raises(
        NeuronConfigError,
        match=r"^chips=4: only facts the catalog lacks or holds from a weak source may be given: "
        r"default_logical_nc_config, efa_interfaces, max_interfaces_per_card, network_cards, "
        r"neuronlink_domain_instances, nvme_gb$",
    ):
        gen2.with_facts(source="test", chips=4)
    with pytest.raises(NeuronConfigError, match=r"^nvme_gb=-1: must be a whole number >= 0$"):
        gen1.with_facts(source="test", nvme_gb=-1)
    with pytest.raises(
        NeuronConfigError, match=r"^neuronlink_domain_instances=0: must be a whole number >= 1$"
    ):
        gen1.with_facts(source="test", neuronlink_domain_instances=0)
    with pytest.raises(NeuronConfigError, match=r"^default_logical_nc_config=0: must be one of 1, 2$"):
        gen1.with_facts(source="test", default_logical_nc_config=0)


def test_with_facts_leaves_unknown_what_it_was_not_given() -> None:
    gen2 = get_instance("trn3-gen2-server")
    named = gen2.with_facts(source="test", name="trn3z.16xlarge")
    assert named.unknown == tuple(f for f in gen2.unknown if f != "name")
    assert "network_cards" in named.unknown
    facts_only = gen2.with_facts(source="test", nvme_gb=0)
    assert "name" in facts_only.unknown and "nvme_gb" not in facts_only.unknown
    assert facts_only.name == "trn3-gen2-server"


def test_require_known_names_every_missing_fact_and_what_needs_it() -> None:
    gen1 = get_instance("trn3.48xlarge")
    expected = (
        "instance_type='trn3.48xlarge': this needs network_cards, nvme_gb of trn3.48xlarge, which no source "
        "publishes (unknown, looked 2026-12-01); read them from `aws ec2 describe-instance-types "
        "--instance-types <type>` in your account and pass catalog.get_instance('trn3.48xlarge').with_facts(...)"
    )
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected)}$"):
        gen1.require_known("chips", "network_cards", "nvme_gb")
    get_instance("trn1.32xlarge").require_known("network_cards", "nvme_gb")  # all known: no error


def test_efa_refusals_carry_the_value_and_the_whole_message() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^instance_type='inf2\.48xlarge': has no EFA, so it cannot run multi-node collectives; use "
        r"trn1\.32xlarge, trn1n\.32xlarge, trn2\.3xlarge, trn2\.48xlarge, trn2u\.48xlarge, trn3-gen2-server, "
        r"trn3\.48xlarge$",
    ):
        efa_network_interfaces("inf2.48xlarge", ["sg-1"])
    with pytest.raises(
        NeuronConfigError,
        match=r"^security_group_ids='sg-1': give a non-empty list of security group id strings, "
        r"e\.g\. \[sg\.security_group_id\]$",
    ) as raised:
        efa_network_interfaces("trn1.32xlarge", "sg-1")  # type: ignore[arg-type]
    assert raised.value.value == "sg-1"
    one_per_card = get_instance("trn3.48xlarge").with_facts(
        source="test", network_cards=16, max_interfaces_per_card=1, efa_interfaces=16, nvme_gb=0
    )
    with pytest.raises(
        NeuronConfigError,
        match=r"^layout='ENA_PRIMARY_EFA_ONLY': trn3\.48xlarge allows one interface per card; "
        r"use EfaLayout\.ALL_EFA$",
    ) as raised:
        efa_network_interfaces(one_per_card, ["sg-1"], EfaLayout.ENA_PRIMARY_EFA_ONLY)
    assert (raised.value.field, raised.value.value) == ("layout", "ENA_PRIMARY_EFA_ONLY")


def test_ena_primary_interface_has_no_interface_type() -> None:
    primary, *_ = efa_network_interfaces("trn1.32xlarge", ["sg-1"], EfaLayout.ENA_PRIMARY_EFA_ONLY)
    assert primary == {
        "NetworkCardIndex": 0,
        "DeviceIndex": 0,
        "Groups": ["sg-1"],
        "DeleteOnTermination": True,
    }


def test_inference_lookup_reports_the_callers_field_name() -> None:
    with pytest.raises(NeuronConfigError, match=r"^serving\.instance_type='p5\.48xlarge': not a Neuron"):
        catalog.get_inference_instance("p5.48xlarge", field="serving.instance_type")


def test_an_instance_built_in_code_has_unknown_offerings() -> None:
    # A NeuronInstance the catalog does not list (built by hand) has no offerings row: unknown, not an error.
    custom = dataclasses.replace(get_instance("trn1.32xlarge"), name="trn9.custom", catalog_key="")
    assert catalog.offered_az_ids(custom, "us-east-1") == ()
    assert catalog.region_offering_status(custom, "us-east-1") == "unknown"
    assert offering_status(custom, "use1-az6") == "unknown"


@pytest.mark.parametrize(
    ("name", "usd"),
    [
        ("trn1.32xlarge", 21.50),  # listed under its own name
        ("p5.48xlarge", 55.04),  # a GPU comparator, not a Neuron type
        ("ml.inf2.xlarge", 0.99),  # SageMaker, priced under its ml. name
    ],
)
def test_known_price_of_priced_types(name: str, usd: float) -> None:
    price = catalog.known_price(name)
    assert price is not None and price.usd_per_hour == usd


@pytest.mark.parametrize("name", ["trn2u.48xlarge", "ml.trn2u.48xlarge", "trn3.48xlarge", "trn2.3xlarge"])
def test_known_price_is_none_where_no_source_publishes_one(name: str) -> None:
    assert catalog.known_price(name) is None


def test_known_price_of_an_unknown_type_is_a_config_error() -> None:
    with pytest.raises(NeuronConfigError, match=r"^instance_type='t4g\.nano': not a Neuron instance type"):
        catalog.known_price("t4g.nano")


# Whether each type is sold as a Capacity Block of either kind (the capacity_block flag), transcribed from
# ec2-capacity-blocks.html (instance blocks: trn1.32xlarge, trn2.48xlarge), moto 5.2.5's usage classes
# (trn2.3xlarge: capacity-block) and capacity-blocks-how.html (UltraServer blocks: Trn2, i.e. trn2u.48xlarge).
# Trn3 UltraServer blocks: no source says (unknown), so not flagged.
CAPACITY_BLOCK_FLAGS = {
    "trn1.2xlarge": False,
    "trn1.32xlarge": True,
    "trn1n.32xlarge": False,
    "trn2.3xlarge": True,
    "trn2.48xlarge": True,
    "trn2u.48xlarge": True,
    "trn3.48xlarge": False,
    "trn3-gen2-server": False,
    "inf2.xlarge": False,
    "inf2.8xlarge": False,
    "inf2.24xlarge": False,
    "inf2.48xlarge": False,
}


def test_capacity_block_flag_of_every_instance() -> None:
    assert {name: get_instance(name).capacity_block for name in INSTANCES} == CAPACITY_BLOCK_FLAGS


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("trn2.3xlarge", ("yes", "yes", "yes", "no")),
        ("trn3.48xlarge", ("unknown", "unknown", "no", "unknown")),
        ("trn3-gen2-server", ("unknown", "unknown", "no", "unknown")),
    ],
)
def test_purchase_options_of_the_types_added_with_trn3(name: str, options: tuple[str, str, str, str]) -> None:
    got = get_instance(name).purchase_options
    assert (got.on_demand, got.reservation, got.capacity_block, got.ultraserver_capacity_block) == options


# GPU comparators, from the AWS instance type pages (https://aws.amazon.com/ec2/instance-types/p4/, /p5/,
# /g5/, /g6e/: GPUs and vCPUs) and DescribeInstanceTypes GpuInfo memory per GPU in MiB (moto 5.2.5
# instance_types.json): A100 40,960, H100 81,920, A10G 22,888 ("24 GB"), L40S 45,776 ("48 GB").
EXPECTED_GPUS = {
    "p4d.24xlarge": ("A100", 8, 40960, 96, "training"),
    "p5.48xlarge": ("H100", 8, 81920, 192, "training"),
    "g5.xlarge": ("A10G", 1, 22888, 4, "inference"),
    "g5.12xlarge": ("A10G", 4, 22888, 48, "inference"),
    "g5.48xlarge": ("A10G", 8, 22888, 192, "inference"),
    "g6e.xlarge": ("L40S", 1, 45776, 4, "inference"),
    "g6e.12xlarge": ("L40S", 4, 45776, 48, "inference"),
    "g6e.48xlarge": ("L40S", 8, 45776, 192, "inference"),
}


def test_gpu_comparators_match_the_instance_type_pages() -> None:
    got = {n: (g.gpu, g.gpus, g.gpu_memory_mib, g.vcpus, g.role) for n, g in catalog.GPU_INSTANCES.items()}
    assert got == EXPECTED_GPUS
    assert {g.source for g in catalog.GPU_INSTANCES.values()} == {"MOTO-GPU"}
    p5 = catalog.GPU_INSTANCES["p5.48xlarge"]
    assert (p5.gpu_memory_gib, p5.total_gpu_memory_gib) == (80.0, 640.0)


# The chip and the scale-up interconnect of each type, from the Neuron architecture pages (aws-neuron-sdk
# trn1-arch.rst: Trainium, NeuronLink-v2 on the 32xlarge types; trn2-arch.rst: Trainium2, NeuronLink-v3;
# trn3-arch.rst: Trainium3, NeuronLink-v4 and NeuronSwitch-v1; inf2-arch.rst: Inferentia2). The Trn3
# servers are not in the EC2 API model yet (botocore's ec2 service-2.json lists no trn3 type, looked
# 2026-12-01), so launch templates cannot name them.
EXPECTED_CHIPS = {
    "trn1.2xlarge": ("trainium", "", True),
    "trn1.32xlarge": ("trainium", "NeuronLink-v2", True),
    "trn1n.32xlarge": ("trainium", "NeuronLink-v2", True),
    "trn2.3xlarge": ("trainium2", "", True),
    "trn2.48xlarge": ("trainium2", "NeuronLink-v3", True),
    "trn2u.48xlarge": ("trainium2", "NeuronLink-v3", True),
    "trn3.48xlarge": ("trainium3", "NeuronLink-v4 + NeuronSwitch-v1", False),
    "trn3-gen2-server": ("trainium3", "NeuronLink-v4 + NeuronSwitch-v1", False),
    "inf2.xlarge": ("inferentia2", "", True),
    "inf2.8xlarge": ("inferentia2", "", True),
    "inf2.24xlarge": ("inferentia2", "", True),
    "inf2.48xlarge": ("inferentia2", "", True),
}


def test_chip_interconnect_and_ec2_model_of_every_instance() -> None:
    got = {n: (i.chip, i.interconnect, i.in_ec2_model) for n, i in INSTANCES.items()}
    assert got == EXPECTED_CHIPS


def test_neuroncore_v2_hbm() -> None:
    # TGI-DOC: "16GB per neuron core"; INF2-ARCH: 32 GiB per chip of two NeuronCore-v2.
    assert catalog.HBM_GIB_PER_NEURONCORE_V2 == 16.0
    assert get_instance("inf2.xlarge").hbm_gib_per_core == 16.0


# Training TP degrees, transcribed from the sources the catalog names (TRAINING_TP_SOURCES): TP-APPNOTE
# (2, 8, 32 on Trn1), RT-2.21 (4 on adjacent Trn1 cores), NXD-PS get_logic_chosen (Trn2: LNC=1 -> 4, 8,
# 32, 64, 128 work, 16 is not supported; LNC=2 -> 4, 16, 32, 64 work, 8 is not supported), TRN3-TUTORIAL
# (TP 8 at LNC=2 on Trn3). TP 1 forms no group and is valid everywhere.
EXPECTED_TP: dict[str, dict[int | None, tuple[int, ...]]] = {
    "trn1.2xlarge": {None: (1, 2)},
    "trn1.32xlarge": {None: (1, 2, 4, 8, 32)},
    "trn1n.32xlarge": {None: (1, 2, 4, 8, 32)},
    "trn2.3xlarge": {1: (1,), 2: (1,)},
    "trn2.48xlarge": {1: (1, 4, 8, 32, 64, 128), 2: (1, 4, 16, 32, 64)},
    "trn2u.48xlarge": {1: (1, 4, 8, 32, 64, 128), 2: (1, 4, 16, 32, 64)},
    "trn3.48xlarge": {1: (1,), 2: (1, 8)},
    "trn3-gen2-server": {1: (1,), 2: (1, 8)},
}


def test_training_tp_degrees_of_every_trainium_type() -> None:
    assert catalog.TRAINING_TP_DEGREES == EXPECTED_TP
    for name, by_lnc in EXPECTED_TP.items():
        if None in by_lnc:
            assert catalog.training_tp_degrees(name) == by_lnc[None]
    assert catalog.training_tp_degrees("trn2.48xlarge", 1) == (1, 4, 8, 32, 64, 128)
    assert catalog.training_tp_degrees("trn2.48xlarge") == (1, 4, 16, 32, 64)  # default LNC=2


def test_training_tp_degrees_a_source_calls_broken() -> None:
    for name in ("trn2.48xlarge", "trn2u.48xlarge"):
        assert catalog.training_tp_unsupported(name, 1) == (16,)
        assert catalog.training_tp_unsupported(name, 2) == (8,)
        assert catalog.training_tp_unsupported(name) == (8,)
    assert catalog.training_tp_unsupported("trn1.32xlarge") == ()
    assert set(catalog.TRAINING_TP_UNSUPPORTED) == {"trn2.48xlarge", "trn2u.48xlarge"}


def test_every_source_key_a_table_names_is_a_source() -> None:
    assert catalog.TRAINING_TP_SOURCES == ("TP-APPNOTE", "RT-2.21", "NXD-PS", "TRN3-TUTORIAL")
    named = set(catalog.TRAINING_TP_SOURCES)
    named |= {key for options in catalog.PURCHASE_OPTIONS.values() for key in options.sources}
    named |= {key for instance in INSTANCES.values() for key in instance.sources}
    named |= {key for ultra in catalog.ULTRASERVERS.values() for key in ultra.sources}
    assert named - set(SOURCES) == set()


def test_every_instance_has_an_offerings_row() -> None:
    # An empty row means "no data" (trn2u.48xlarge, Trn3); a missing row would hide a typo in a key.
    assert set(catalog.OFFERINGS) == set(INSTANCES)
    for name in ("trn2u.48xlarge", "trn3.48xlarge", "trn3-gen2-server"):
        assert catalog.OFFERINGS[name] == {}


def test_trn2_3xlarge_offerings() -> None:
    # moto 5.2.5 moto/ec2/resources/instance_type_offerings/availability-zone-id/{ap-south-2,
    # ap-southeast-4,sa-east-1}.json.gz (MOTO-525).
    assert {r: set(ids) for r, ids in catalog.OFFERINGS["trn2.3xlarge"].items()} == {
        "ap-south-2": {"aps2-az1", "aps2-az2", "aps2-az3"},
        "ap-southeast-4": {"apse4-az3"},
        "sa-east-1": {"sae1-az1", "sae1-az2", "sae1-az3"},
    }


def test_ultraserver_types_in_full() -> None:
    # TRN2-ARCH: 4 x trn2u.48xlarge over NeuronLink-v3; its table's "Trn2 UltraServer" column says
    # "EFAv3 bandwidth (Gbps) 3,200", the figure of one instance. TRN3-ARCH: Gen1 4 x 16 chips,
    # 12,800 Gbps; Gen2 36 x 4 chips, 28,800 Gbps; both NeuronLink-v4 + NeuronSwitch-v1.
    got = {
        k: (u.name, u.instance_type, u.servers, u.chips_per_server, u.interconnect, u.efa_gbps, u.sources)
        for k, u in catalog.ULTRASERVERS.items()
    }
    assert got == {
        "trn2": ("Trn2 UltraServer", "trn2u.48xlarge", 4, 16, "NeuronLink-v3", 3200, ("TRN2-ARCH",)),
        "trn3-gen1": ("Trn3 Gen1 UltraServer", "trn3.48xlarge", 4, 16, "NeuronLink-v4 + NeuronSwitch-v1", 12800,
                      ("TRN3-ARCH",)),
        "trn3-gen2": ("Trn3 Gen2 UltraServer", "trn3-gen2-server", 36, 4, "NeuronLink-v4 + NeuronSwitch-v1", 28800,
                      ("TRN3-ARCH",)),
    }  # fmt: skip


def test_efa_layout_values() -> None:
    assert {m.name: m.value for m in EfaLayout} == {
        "ALL_EFA": "efa",
        "ENA_PRIMARY_EFA_ONLY": "ena-primary-efa-only",
    }


def test_unpublished_trn3_facts_are_zero_never_a_guess() -> None:
    for name in ("trn3.48xlarge", "trn3-gen2-server"):
        server = get_instance(name)
        facts = {
            f: getattr(server, f)
            for f in ("network_cards", "max_interfaces_per_card", "efa_interfaces", "nvme_gb")
        }
        assert facts == dict.fromkeys(facts, 0)
        # LNC applies to Trn3 (1 or 2); its default is unpublished, so the planner asks for it, while the
        # instance's own core count reads LNC 2, as on Trn2.
        assert (server.supports_logical_nc_config, server.neuron_cores, server.neuron_cores_at(1)) == (
            True,
            server.physical_neuron_cores // 2,
            server.physical_neuron_cores,
        )


def test_get_training_instance_names_the_callers_field() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^training\.instance_type='trn9\.bogus': not a Neuron instance type"
    ):
        get_training_instance("trn9.bogus", field="training.instance_type")


def test_training_tp_degrees_refuses_an_lnc_the_instance_has_not() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^logical_nc_config=2: trn1\.32xlarge has no logical NeuronCore setting \(LNC applies only to "
        r"Trn2 and Trn3\); leave it unset$",
    ):
        catalog.training_tp_degrees("trn1.32xlarge", 2)
    with pytest.raises(NeuronConfigError, match=r"^logical_nc_config=3: valid values are 1 and 2$"):
        catalog.training_tp_degrees("trn2.48xlarge", 3)


@pytest.mark.parametrize("lnc", [2.0, True, "2"])
def test_neuron_cores_at_refuses_an_lnc_that_is_not_an_integer(lnc: Any) -> None:
    with pytest.raises(
        NeuronConfigError,
        match=rf"^logical_nc_config={re.escape(repr(lnc))}: must be the integer 1 or 2 \(Trn2 and Trn3 only\)$",
    ):
        get_instance("trn2.48xlarge").neuron_cores_at(lnc)


def test_price_tables_are_dated_and_cover_exactly_the_transcribed_types() -> None:
    assert catalog.PRICES_DATE == "2026-01-19"  # the Karpenter price file the table was read from
    assert set(catalog.ON_DEMAND_PRICES) == {
        "trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge",
        "inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge",
        "p4d.24xlarge", "p5.48xlarge", "g5.xlarge", "g5.12xlarge", "g5.48xlarge",
        "g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge",
    }  # fmt: skip
    # SkyPilot's on-demand column lists the same Neuron prices in these three Regions only.
    assert set(catalog.SAME_PRICE_REGIONS) == {"us-east-1", "us-east-2", "us-west-2"}


def test_supporting_service_prices_match_the_aws_pricing_pages() -> None:
    # us-east-1, transcribed from the VPC (NAT gateway, public IPv4, PrivateLink), ELB, EFS, S3, KMS and
    # CloudWatch pricing pages.
    got = {k: (p.usd_per_hour, p.region, p.source) for k, p in catalog.SERVICE_PRICES.items()}
    assert got == {
        "nat_gateway_hour": (0.045, "us-east-1", "SVC-NAT"),
        "public_ipv4_hour": (0.005, "us-east-1", "SVC-NAT"),
        "alb_hour": (0.0225, "us-east-1", "SVC-ALB"),
        "interface_endpoint_az_hour": (0.01, "us-east-1", "SVC-ENDPOINT"),
        "efs_standard_gb_month": (0.30, "us-east-1", "SVC-EFS"),
        "s3_standard_gb_month": (0.023, "us-east-1", "SVC-S3"),
        "kms_key_month": (1.00, "us-east-1", "SVC-KMS"),
        "alarm_month": (0.10, "us-east-1", "SVC-CW"),
        "dashboard_month": (3.00, "us-east-1", "SVC-CW"),
    }


def test_every_source_key_is_cited_once() -> None:
    """Two sources under one key would silently keep the last (the Fargate prices were cited twice)."""
    keys = [s.key for s in catalog.SOURCE_LIST]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []
    assert set(catalog.SOURCES) >= set(keys)


def test_nat_instance_prices_match_the_price_file() -> None:
    got = {k: (p.usd_per_hour, p.region, p.source) for k, p in catalog.NAT_INSTANCE_PRICES.items()}
    assert got == {
        "t4g.nano": (0.0042, "us-east-1", "KARP"),
        "t4g.micro": (0.0084, "us-east-1", "KARP"),
        "t4g.small": (0.0168, "us-east-1", "KARP"),
        "t3.nano": (0.0052, "us-east-1", "KARP"),
        "t3.micro": (0.0104, "us-east-1", "KARP"),
        "t3.small": (0.0208, "us-east-1", "KARP"),
    }


def test_ami_parameters_are_the_documented_public_ssm_names() -> None:
    # The Amazon ECS developer guide (retrieving the Amazon ECS-optimized Linux AMI metadata), the Neuron
    # DLAMI guide (SSM parameters) and the SageMaker ProductionVariant InferenceAmiVersion values.
    assert catalog.ECS_NEURON_AMI_PARAMETER == (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
    )
    assert (
        catalog.NEURON_DLAMI_PARAMETER
        == "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
    )
    assert (
        catalog.NEURON_BASE_DLAMI_PARAMETER
        == "/aws/service/neuron/dlami/base/amazon-linux-2023/latest/image_id"
    )
    assert catalog.SAGEMAKER_NEURON_AMI_VERSION == "al2-ami-sagemaker-inference-neuron-2"


# --------------------------------------------------------------------------------------------
# Issue 24: the planner tells the truth (Trn3 names, inference TP, offerings, prices)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["trn3.48xlarge", "trn3-gen2-server"])
def test_every_trn3_entry_takes_its_type_name_and_domain_size_from_the_user(name: str) -> None:
    # NEURON-DRIVER names trn3p.48xlarge (UltraServer platform) and trn3e.24xlarge (4-device MAX
    # platform); NEURON-DRIVER-SHARED has 1-, 2- and 4-node UltraServer modes.
    given = get_instance(name).with_facts(
        source="describe-instance-types 2026-12-01", name="trn3p.48xlarge", neuronlink_domain_instances=2
    )
    assert (given.name, given.key, given.neuronlink_domain_instances) == ("trn3p.48xlarge", name, 2)
    ultra = given.ultraserver_type
    assert ultra is not None and ultra.servers == 2 and ultra.key == catalog.INSTANCES[name].ultraserver
    assert given.is_ultraserver
    assert "given: describe-instance-types 2026-12-01" in given.sources
    # One server per domain: no UltraServer any more.
    alone = get_instance(name).with_facts(source="test", neuronlink_domain_instances=1)
    assert not alone.is_ultraserver


def test_the_catalog_ultraserver_is_returned_unchanged_when_the_domain_is() -> None:
    gen1 = get_instance("trn3.48xlarge")
    assert gen1.ultraserver_type is catalog.ULTRASERVERS["trn3-gen1"]
    assert get_instance("trn1.32xlarge").ultraserver_type is None


def test_trn3_evidence_records_each_name_and_its_source() -> None:
    by_subject = {e.subject: e for e in catalog.TRN3_EVIDENCE}
    assert by_subject["trn3.48xlarge"].source == "NEURON-DRIVER"
    assert by_subject["trn3p.48xlarge"].says.startswith("ULTRASERVER platform")
    assert by_subject["trn3e.24xlarge"].says.startswith("MAX platform, whose device table has 4 entries")
    assert "TRN3 / TRN3PDS98 (trn3pds)" in by_subject
    assert {e.source for e in catalog.TRN3_EVIDENCE} <= set(SOURCES)
    for weak in ("name", "neuronlink_domain_instances"):
        assert weak in get_instance("trn3.48xlarge").weak
    assert get_instance("trn3-gen2-server").weak == ("neuronlink_domain_instances",)
    assert get_instance("trn2u.48xlarge").weak == ()


# NXDI-TP, transcribed: Trn1 1, 2, 8, 16, 32; Inf2 1, 2, 4, 8, 24 (+ 12 from TP-APPNOTE and OPTN-NB);
# Trn2 at LNC 2 1, 2, 4, 8, 16, 32, 64; each up to the instance's cores at its default LNC.
@pytest.mark.parametrize(
    ("name", "degrees"),
    [
        ("inf2.xlarge", (1, 2)),
        ("inf2.8xlarge", (1, 2)),
        ("inf2.24xlarge", (1, 2, 4, 8, 12)),
        ("inf2.48xlarge", (1, 2, 4, 8, 12, 24)),
        ("trn1.2xlarge", (1, 2)),
        ("trn1.32xlarge", (1, 2, 8, 16, 32)),
        ("trn1n.32xlarge", (1, 2, 8, 16, 32)),
        ("trn2.3xlarge", (1, 2, 4)),
        ("trn2.48xlarge", (1, 2, 4, 8, 16, 32, 64)),
        ("trn2u.48xlarge", (1, 2, 4, 8, 16, 32, 64)),
        ("trn3.48xlarge", (1, 8)),
    ],
)
def test_inference_tp_degrees_come_from_the_runtime_documentation(
    name: str, degrees: tuple[int, ...]
) -> None:
    assert catalog.inference_tp_degrees(name) == degrees
    assert 16 not in catalog.inference_tp_degrees("inf2.48xlarge")


def test_tp_disagreements_between_training_and_inference_sources() -> None:
    assert catalog.tp_disagreement("trn2.48xlarge", None, 8) == (
        "NxD Inference lists TP 8 for Trn2 at LNC 2 (NXDI-TP), but neuronx-distributed cannot form TP 8 "
        "training groups at LNC 2 (NXD-PS)"
    )
    assert catalog.tp_disagreement("trn2.48xlarge", 1, 8) is None
    assert catalog.tp_disagreement("trn1.32xlarge", None, 4) == (
        "the training runtime forms TP 4 on adjacent trn1 cores (RT-2.21), but NxD Inference does not list TP 4 "
        "for Trn1 (NXDI-TP)"
    )
    assert catalog.tp_disagreement("trn1n.32xlarge", None, 16) is not None
    assert catalog.tp_disagreement("inf2.48xlarge", None, 12) is not None
    assert catalog.tp_disagreement("inf2.48xlarge", None, 24) is None
    # Every disagreement is real: the degree is listed on one side and not on the other.
    for (chip, lnc, tp), _why in catalog.TP_DISAGREEMENTS.items():
        name = max(
            (n for n, i in INSTANCES.items() if i.chip == chip),
            key=lambda n: INSTANCES[n].physical_neuron_cores,
        )
        inference = tp in catalog.INFERENCE_TP_DEGREES[name][lnc]
        training = tp in catalog.TRAINING_TP_DEGREES[name][lnc] if get_instance(name).is_training else False
        assert inference != training or chip == "inferentia2", (chip, lnc, tp)


# CFN-LINT 1.58.0: trn2.48xlarge in ap-south-2 and us-east-2; moto has trn2.48xlarge in us-east-2
# only and trn2.3xlarge in ap-south-2, ap-southeast-4 and sa-east-1 (not us-east-2).
@pytest.mark.parametrize(
    ("name", "region", "status"),
    [
        ("trn2.48xlarge", "ap-south-2", "offered"),  # the second source lists it
        ("trn2.3xlarge", "us-east-2", "unknown"),  # the snapshot is partial, no second source knows it
        ("trn2.48xlarge", "us-east-1", "not-offered"),  # both sources cover us-east-1, neither lists it
        ("trn1.32xlarge", "eu-west-1", "not-offered"),
        ("trn1.32xlarge", "ap-southeast-4", "offered"),  # moto lists it, cfn-lint does not
        ("inf2.8xlarge", "ap-northeast-2", "not-offered"),
        ("inf2.xlarge", "ap-northeast-2", "offered"),
        ("trn1.32xlarge", "me-central-1", "unknown"),  # moto does not cover the region
        ("trn1.32xlarge", "eu-south-1", "unknown"),
    ],
)
def test_region_offerings_use_both_sources(name: str, region: str, status: str) -> None:
    assert region_offering_status(name, region) == status


@pytest.mark.parametrize(
    ("name", "az_id", "status"),
    [
        ("trn2.48xlarge", "aps2-az1", "unknown"),  # offered in the region, no AZ data
        ("trn2.3xlarge", "use2-az1", "unknown"),
        ("trn2.3xlarge", "use2-az3", "unknown"),
        ("trn1.32xlarge", "use1-az1", "not-offered"),  # moto lists trn1.32xlarge's us-east-1 AZs
        ("trn1.32xlarge", "euw1-az1", "not-offered"),
        ("trn2.48xlarge", "use1-az4", "not-offered"),
        ("trn1.32xlarge", "use1-az4", "offered"),
        ("inf2.xlarge", "xyz1-az1", "unknown"),
    ],
)
def test_az_offerings_say_unknown_where_the_snapshot_is_partial(name: str, az_id: str, status: str) -> None:
    assert offering_status(name, az_id) == status


def test_region_offerings_table_matches_cfn_lint() -> None:
    # cfn-lint 1.58.0 instancetype_enum.json, read 2026-12-01.
    trn1 = ("us-east-1", "us-east-2", "us-west-2")
    inf2 = (
        "ap-northeast-1", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "eu-central-1", "eu-north-1",
        "eu-west-1", "eu-west-2", "eu-west-3", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
    )  # fmt: skip
    assert {k: set(v) for k, v in catalog.REGION_OFFERINGS.items()} == {
        "trn1.2xlarge": set(trn1),
        "trn1.32xlarge": set(trn1),
        "trn1n.32xlarge": set(trn1),
        "trn2.48xlarge": {"ap-south-2", "us-east-2"},
        "inf2.xlarge": {*inf2, "ap-northeast-2"},
        "inf2.8xlarge": set(inf2),
        "inf2.24xlarge": set(inf2),
        "inf2.48xlarge": set(inf2),
    }
    assert len(catalog.REGION_OFFERINGS_REGIONS) == 38
    assert {"cn-north-1", "us-gov-west-1", "mx-central-1"} <= catalog.REGION_OFFERINGS_REGIONS


@pytest.mark.parametrize(
    ("name", "region", "usd"),
    [
        ("inf2.xlarge", "us-east-1", 0.7582),
        ("inf2.xlarge", "us-west-2", 0.7582),  # SKY: same as us-east-1
        ("inf2.xlarge", "eu-west-1", 0.94775),
        ("inf2.xlarge", "ap-northeast-2", 0.90984),
        ("inf2.24xlarge", "eu-central-1", 9.73595),
        ("inf2.48xlarge", "ap-northeast-1", 19.4719),
        ("trn1.32xlarge", "us-east-2", 21.50),
    ],
)
def test_regional_prices(name: str, region: str, usd: float) -> None:
    price = catalog.regional_price(name, region)
    assert price is not None and price.usd_per_hour == usd


@pytest.mark.parametrize(
    ("name", "region"),
    [("trn1.32xlarge", "ap-south-1"), ("inf2.8xlarge", "sa-east-1"), ("trn2.48xlarge", "us-east-1")],
)
def test_no_price_is_carried_to_a_region_no_source_prices(name: str, region: str) -> None:
    assert catalog.regional_price(name, region) is None


def test_gpu_comparators_have_regional_prices_only_where_sourced() -> None:
    # KARP is a us-east-1 file: a p5.48xlarge in eu-west-1 has no price, never the us-east-1 one.
    assert catalog.regional_price("p5.48xlarge", "eu-west-1") is None
    price = catalog.regional_price("p5.48xlarge", "us-east-2")
    assert price is not None and price.usd_per_hour == 55.04


def test_trn2_price_applies_only_where_its_source_priced_it() -> None:
    price = catalog.regional_price("trn2.48xlarge", "us-east-2")
    assert price is not None and (price.source, price.usd_per_hour) == ("SKY", 85.964)
    assert catalog.regional_price("trn2.3xlarge", "us-east-2") is None  # UNPRICED


def test_spot_samples_are_dated_ranges_below_on_demand() -> None:
    assert set(catalog.SPOT_SAMPLES) == {
        "trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge",
        "inf2.48xlarge",
    }  # fmt: skip
    trn1 = catalog.SPOT_SAMPLES["trn1.32xlarge"]
    assert (trn1.low, trn1.high, trn1.on_demand, trn1.source) == (2.1553, 6.6028, 21.50, "SKY")
    low, high = trn1.discount_range
    assert (round(low, 3), round(high, 3)) == (0.693, 0.9)
    for sample in catalog.SPOT_SAMPLES.values():
        assert 0 < sample.low <= sample.high < sample.on_demand
    assert "MNP-SPOT" in SOURCES


def test_sagemaker_types_without_a_published_price_are_recorded_unknown() -> None:
    from cdk_neuron.serving.sagemaker_fleet import SAGEMAKER_TYPES

    accepted = {f"ml.{t}" for t in SAGEMAKER_TYPES}
    assert accepted == set(catalog.SAGEMAKER_PRICES) | set(catalog.SAGEMAKER_UNPRICED)
    assert not set(catalog.SAGEMAKER_PRICES) & set(catalog.SAGEMAKER_UNPRICED)
