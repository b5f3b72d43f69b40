"""Availability zones: keep the configured ones that offer the instance type."""

from __future__ import annotations

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.placement import select_availability_zones

AZS = ("us-east-1a", "us-east-1b", "us-east-1c")
# use1-az1 and use1-az3 do not offer inf2 (catalog offerings: use1-az2, az4, az5, az6).
IDS = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az1", "us-east-1c": "use1-az6"}


def test_zones_the_snapshot_omits_are_left_out_while_listed_zones_suffice() -> None:
    placement = select_availability_zones(
        "inf2.xlarge", subnet_azs=AZS, region="us-east-1", availability_zone_ids=IDS, min_availability_zones=2
    )
    assert placement.availability_zones == ("us-east-1a", "us-east-1c")
    assert placement.dropped == ("us-east-1b",)
    assert placement.warnings == (
        "us-east-1b (use1-az1) left out while listed zones suffice: the AZ snapshot (MOTO, 2026-08-22) lists "
        "inf2.xlarge in use1-az2, use1-az4, use1-az5, use1-az6 of us-east-1, not in use1-az1; it is the only "
        "AZ-level source, so this is unknown rather than refused: `cdk-neuron preflight` checks the account",
    )


def test_one_sources_silence_never_refuses_a_zone() -> None:
    # Neither use1-az1 nor use1-az3 is in the AZ snapshot for inf2.48xlarge, but it is the only AZ-level
    # source: both are kept, each with a warning, rather than refused (review-24 finding 5).
    ids = {"us-east-1a": "use1-az1", "us-east-1b": "use1-az3"}
    placement = select_availability_zones(
        "inf2.48xlarge", subnet_azs=AZS[:2], region="us-east-1", availability_zone_ids=ids
    )
    assert (placement.availability_zones, placement.dropped) == (AZS[:2], ())
    assert [w.split(":")[0] for w in placement.warnings] == [
        "us-east-1a (use1-az1) kept (too few listed zones remain)",
        "us-east-1b (use1-az3) kept (too few listed zones remain)",
    ]
    # Three zones for production: the listed two and the omitted one make three.
    three = select_availability_zones(
        "inf2.xlarge", subnet_azs=AZS, region="us-east-1", availability_zone_ids=IDS, min_availability_zones=3
    )
    assert (three.availability_zones, three.dropped) == (AZS, ())


def test_no_zone_offering_the_type_is_refused_where_both_sources_rule_the_region_out() -> None:
    # inf2.8xlarge in ap-northeast-2: both MOTO and CFN-LINT cover the Region and neither lists it.
    ids = {"ap-northeast-2a": "apne2-az1", "ap-northeast-2b": "apne2-az2"}
    with pytest.raises(
        NeuronConfigError,
        match=r"^availability_zone_ids=.*: none of the configured zones offers inf2.8xlarge\.",
    ):
        select_availability_zones(
            "inf2.8xlarge", subnet_azs=tuple(ids), region="ap-northeast-2", availability_zone_ids=ids
        )


def test_too_few_zones_for_production_is_refused() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"min_availability_zones=3: only 2 configured zone\(s\) offer"
    ):
        select_availability_zones(
            "inf2.xlarge",
            subnet_azs=AZS[:2],
            region="us-east-1",
            availability_zone_ids=IDS,
            min_availability_zones=3,
        )


def test_every_zone_needs_an_id() -> None:
    with pytest.raises(NeuronConfigError, match=r"has no AZ ID for us-east-1b"):
        select_availability_zones(
            "inf2.xlarge",
            subnet_azs=AZS,
            region="us-east-1",
            availability_zone_ids={"us-east-1a": "use1-az4"},
        )


def test_ids_of_another_region_are_refused() -> None:
    with pytest.raises(NeuronConfigError, match=r"use2-az1 is an AZ ID of us-east-2"):
        select_availability_zones(
            "inf2.xlarge",
            subnet_azs=AZS[:1],
            region="us-east-1",
            availability_zone_ids={"us-east-1a": "use2-az1"},
        )


def test_a_region_without_the_type_is_refused_without_ids() -> None:
    with pytest.raises(NeuronConfigError, match=r"no availability zone in eu-west-1 offers trn1.32xlarge"):
        select_availability_zones(
            "trn1.32xlarge", subnet_azs=("eu-west-1a", "eu-west-1b"), region="eu-west-1"
        )


def test_unknown_offerings_warn_instead_of_refusing() -> None:
    placement = select_availability_zones("trn2u.48xlarge", subnet_azs=AZS, region="us-east-2")
    assert placement.availability_zones == AZS
    placement = select_availability_zones("inf2.xlarge", subnet_azs=("xx-new-1a",), region="xx-new-1")
    assert "unknown to the catalog" in placement.warnings[0]


def test_unresolved_regions_are_not_checked() -> None:
    placement = select_availability_zones("inf2.xlarge", subnet_azs=("dummy1a", "dummy1b"), region=None)
    assert placement.availability_zones == ("dummy1a", "dummy1b")
