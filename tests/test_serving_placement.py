"""Availability zones: keep the configured ones that offer the instance type."""

from __future__ import annotations

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.placement import select_availability_zones

AZS = ("us-east-1a", "us-east-1b", "us-east-1c")
# use1-az1 and use1-az3 do not offer inf2 (catalog offerings: use1-az2, az4, az5, az6).
IDS = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az1", "us-east-1c": "use1-az6"}


def test_zones_without_the_type_are_dropped() -> None:
    placement = select_availability_zones(
        "inf2.xlarge", subnet_azs=AZS, region="us-east-1", availability_zone_ids=IDS, min_availability_zones=2
    )
    assert placement.availability_zones == ("us-east-1a", "us-east-1c")
    assert placement.dropped == ("us-east-1b",)


def test_no_zone_offering_the_type_is_refused_with_the_ones_that_do() -> None:
    ids = {"us-east-1a": "use1-az1", "us-east-1b": "use1-az3"}
    with pytest.raises(
        NeuronConfigError, match=r"none of the configured zones offers inf2.48xlarge; AZ IDs .*use1-az2"
    ):
        select_availability_zones(
            "inf2.48xlarge", subnet_azs=AZS[:2], region="us-east-1", availability_zone_ids=ids
        )


def test_too_few_zones_for_production_is_refused() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"min_availability_zones=3: only 2 configured zone\(s\) offer"
    ):
        select_availability_zones(
            "inf2.xlarge",
            subnet_azs=AZS,
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
