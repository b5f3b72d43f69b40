"""Preflight for UltraServer capacity and cost for Trn3, with botocore's Stubber (moto implements
neither DescribeCapacityBlocks, DescribeCapacityBlockOfferings nor ListServiceQuotas for EC2)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cdk_neuron import catalog
from cdk_neuron.cli import preflight
from cdk_neuron.cli.cost import instance_price_line
from cdk_support import use_fake_aws_credentials

REGION = "us-east-2"
START = datetime(2026, 12, 8, 11, 30, tzinfo=timezone.utc)


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    use_fake_aws_credentials(monkeypatch, REGION)
    return boto3.client("ec2", region_name=REGION), boto3.client("service-quotas", region_name=REGION)


def _block(block_id: str, state: str, az_id: str = "use2-az2") -> dict[str, Any]:
    return {
        "CapacityBlockId": block_id,
        "UltraserverType": "trn3-ultraserver-type-from-the-console",
        "AvailabilityZone": "us-east-2b",
        "AvailabilityZoneId": az_id,
        "CapacityReservationIds": ["cr-0123456789abcdef0"],
        "StartDate": START,
        "EndDate": START,
        "State": state,
    }


def test_quotas_named_for_trn3_are_reported(clients: tuple[Any, Any]) -> None:
    _, quotas = clients
    with Stubber(quotas) as stub:
        stub.add_response(
            "list_service_quotas",
            {
                "Quotas": [
                    {
                        "QuotaCode": "L-2C3B7624",
                        "QuotaName": "Running On-Demand Trn instances",
                        "Value": 512.0,
                    },
                    {
                        "QuotaCode": "L-TEST0001",
                        "QuotaName": "Trn3 UltraServer Capacity Blocks",
                        "Value": 0.0,
                    },
                ],
                "NextToken": "page2",
            },
            {"ServiceCode": "ec2"},
        )
        stub.add_response(
            "list_service_quotas",
            {"Quotas": [{"QuotaCode": "L-TEST0002", "QuotaName": "UltraServer instances", "Value": 8.0}]},
            {"ServiceCode": "ec2", "NextToken": "page2"},
        )
        findings = preflight.ultraserver_quota_findings(quotas, catalog.get_instance("trn3.48xlarge"), REGION)
    assert [(f.subject, f.status) for f in findings] == [
        ("Trn3 UltraServer Capacity Blocks (L-TEST0001)", "FAIL"),
        ("UltraServer instances (L-TEST0002)", "PASS"),
    ]
    assert findings[0].command is not None and "--quota-code L-TEST0001" in findings[0].command


def test_no_quota_named_for_ultraservers_is_a_warning_not_a_pass(clients: tuple[Any, Any]) -> None:
    _, quotas = clients
    with Stubber(quotas) as stub:
        stub.add_response("list_service_quotas", {"Quotas": []}, {"ServiceCode": "ec2"})
        (finding,) = preflight.ultraserver_quota_findings(
            quotas, catalog.get_instance("trn2u.48xlarge"), REGION
        )
    assert finding.status == "WARN" and "not published" in finding.detail


def test_held_blocks_and_offerings(clients: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ec2, _ = clients
    gen1 = catalog.get_instance("trn3.48xlarge")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_blocks",
            {
                "CapacityBlocks": [
                    _block("cb-0aaaaaaaaaaaaaaa1", "active"),
                    _block("cb-0aaaaaaaaaaaaaaa2", "scheduled"),
                ]
            },
            {},
        )
        stub.add_response(
            "describe_capacity_block_offerings",
            {
                "CapacityBlockOfferings": [
                    {"CapacityBlockOfferingId": "cbo-1", "AvailabilityZone": "us-east-2b", "UpfrontFee": "9000.00",
                     "CurrencyCode": "USD", "StartDate": START, "UltraserverType": "t", "UltraserverCount": 2},
                    {"CapacityBlockOfferingId": "cbo-2", "AvailabilityZone": "us-east-2a", "UpfrontFee": "8000.00",
                     "CurrencyCode": "USD", "StartDate": START, "UltraserverType": "t", "UltraserverCount": 2},
                ]
            },
            {"UltraserverType": "t", "UltraserverCount": 2, "CapacityDurationHours": 24},
        )  # fmt: skip
        stub.add_response(
            "describe_availability_zones",
            {"AvailabilityZones": [{"ZoneName": "us-east-2b", "ZoneId": "use2-az2"}]},
            {"ZoneIds": ["use2-az2"]},
        )
        findings = preflight.ultraserver_capacity_findings(
            ec2, gen1, max_nodes=8, az_id="use2-az2", region=REGION, ultraserver_type="t"
        )
    held, offered = findings
    # 8 nodes = 2 Gen1 UltraServers; one block is active, the other only scheduled.
    assert (
        held.status == "WARN"
        and "1 active" in held.detail
        and "cb-0aaaaaaaaaaaaaaa2 (scheduled" in held.detail
    )
    assert offered.status == "PASS" and "cheapest 8000.00 USD upfront in us-east-2a" in offered.detail


def test_without_the_ultraserver_type_name_offerings_are_left_to_the_user(clients: tuple[Any, Any]) -> None:
    ec2, _ = clients
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_blocks", {"CapacityBlocks": []}, {})
        held, info = preflight.ultraserver_capacity_findings(
            ec2, catalog.get_instance("trn3-gen2-server"), max_nodes=36, az_id="use2-az2", region=REGION
        )
    assert held.status == "FAIL" and "1 needed for 36 nodes (36 servers each)" in held.detail
    assert info.status == "INFO" and info.command is not None
    assert "--ultraserver-count 1 --capacity-duration-hours 24" in info.command
    assert catalog.ULTRASERVER_API_TYPES == {"trn2": None, "trn3-gen1": None, "trn3-gen2": None}


def test_not_an_ultraserver_server_has_nothing_to_check(clients: tuple[Any, Any]) -> None:
    ec2, _ = clients
    assert (
        preflight.ultraserver_capacity_findings(
            ec2, catalog.get_instance("trn1.32xlarge"), max_nodes=4, az_id="use1-az6", region="us-east-1"
        )
        == []
    )


@pytest.mark.parametrize("name", ["trn3.48xlarge", "trn3-gen2-server", "trn2u.48xlarge", "trn2.3xlarge"])
def test_cost_prints_unknown_where_no_price_is_published(name: str) -> None:
    line = instance_price_line(name, 4)
    assert line.usd_per_hour is None
    assert line.basis.startswith("unknown:")
    assert catalog.UNPRICED[name] in line.basis


def test_cost_prices_what_is_published() -> None:
    line = instance_price_line("trn1.32xlarge", 4)
    assert line.usd_per_hour == pytest.approx(4 * 21.50)
