"""The backup-vault emptier and the fleet capacity reader, against botocore's Stubber.

CloudFormation's response URL is captured; nothing leaves the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from handler_support import event as _event
from handler_support import load_handler

from cdk_support import use_fake_aws_credentials

VAULT = "devTrainingCheckpointsBackupVault6190D61E"


def _stubbed(
    handler: str, service: str, monkeypatch: pytest.MonkeyPatch, responses: list[dict[str, Any]]
) -> Iterator[tuple[ModuleType, Any, Stubber]]:
    """The handler, and a Stubber on the client of ``service`` it is given."""
    module = load_handler(handler, monkeypatch, responses)
    client = boto3.client(service, region_name="us-east-1")
    with Stubber(client) as stub:
        yield module, client, stub
        stub.assert_no_pending_responses()


@pytest.fixture
def responses(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    use_fake_aws_credentials(monkeypatch, "us-east-1")
    return []


# -- the vault emptier ---------------------------------------------------------------------------


def _point(arn: str, status: str = "COMPLETED") -> dict[str, Any]:
    return {"RecoveryPointArn": arn, "BackupVaultName": VAULT, "Status": status}


def _list(stub: Stubber, points: list[dict[str, Any]]) -> None:
    stub.add_response(
        "list_recovery_points_by_backup_vault", {"RecoveryPoints": points}, {"BackupVaultName": VAULT}
    )


@pytest.fixture
def emptier(
    monkeypatch: pytest.MonkeyPatch, responses: list[dict[str, Any]]
) -> Iterator[tuple[ModuleType, Any, Stubber]]:
    yield from _stubbed("vault_emptier", "backup", monkeypatch, responses)


def test_delete_empties_the_vault_and_waits_until_none_is_left(
    emptier: tuple[ModuleType, Any, Stubber], responses: list[dict[str, Any]]
) -> None:
    module, client, stub = emptier
    arn_a, arn_b = (f"arn:aws:backup:us-east-1:111111111111:recovery-point:{n}" for n in "ab")
    _list(stub, [_point(arn_a), _point(arn_b, "DELETING")])
    stub.add_response("delete_recovery_point", {}, {"BackupVaultName": VAULT, "RecoveryPointArn": arn_a})
    _list(stub, [_point(arn_a, "DELETING")])
    _list(stub, [])
    sleeps: list[float] = []
    assert module.empty(client, VAULT, clock=lambda: 0.0, sleep=sleeps.append) == 1
    assert sleeps == [module.POLL_SECONDS, module.POLL_SECONDS]


def test_a_vault_still_deleting_at_the_deadline_fails_the_delete_with_what_to_do(
    emptier: tuple[ModuleType, Any, Stubber],
) -> None:
    module, client, stub = emptier
    _list(stub, [_point("arn:aws:backup:us-east-1:111111111111:recovery-point:a", "DELETING")])
    with pytest.raises(
        TimeoutError, match=r"1 recovery point\(s\) of .* are still being deleted; run the delete again"
    ):
        module.empty(client, VAULT, clock=iter([0.0, module.WAIT_SECONDS]).__next__, sleep=lambda _: None)


def test_only_delete_empties_and_every_request_is_answered(
    emptier: tuple[ModuleType, Any, Stubber], responses: list[dict[str, Any]]
) -> None:
    module, client, stub = emptier
    module.handler(_event("Create", {"BackupVaultName": VAULT}), None, backup=client)
    module.handler(_event("Update", {"BackupVaultName": VAULT}, f"empties:{VAULT}"), None, backup=client)
    _list(stub, [])
    module.handler(_event("Delete", {"BackupVaultName": VAULT}, f"empties:{VAULT}"), None, backup=client)
    # A create that never succeeded has nothing to empty.
    module.handler(_event("Delete", {"BackupVaultName": VAULT}, "failed-req-0"), None, backup=client)
    assert [(r["Status"], r["PhysicalResourceId"]) for r in responses] == [
        ("SUCCESS", f"empties:{VAULT}"),
        ("SUCCESS", f"empties:{VAULT}"),
        ("SUCCESS", f"empties:{VAULT}"),
        ("SUCCESS", "failed-req-0"),
    ]


def test_an_api_error_fails_the_delete_with_its_message(
    emptier: tuple[ModuleType, Any, Stubber], responses: list[dict[str, Any]]
) -> None:
    module, client, stub = emptier
    stub.add_client_error("list_recovery_points_by_backup_vault", "AccessDeniedException", "no")
    module.handler(_event("Delete", {"BackupVaultName": VAULT}, f"empties:{VAULT}"), None, backup=client)
    (response,) = responses
    assert response["Status"] == "FAILED"
    assert response["Reason"].startswith("ClientError: An error occurred (AccessDeniedException)")


# -- the fleet capacity reader ------------------------------------------------------------------------


def _group(desired: int, status: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "AutoScalingGroupName": f"g{desired}",
        "MinSize": 2,
        "MaxSize": 8,
        "DesiredCapacity": desired,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-1a"],
        "HealthCheckType": "ELB",
        "CreatedTime": "2026-12-01T00:00:00Z",
    }
    if status is not None:
        group["Status"] = status
    return group


CAPACITY = {"TagKey": "cdk-neuron:fleet", "TagValue": "c8fae96d", "MinSize": "2", "MaxSize": "8"}


@pytest.fixture
def capacity(
    monkeypatch: pytest.MonkeyPatch, responses: list[dict[str, Any]]
) -> Iterator[tuple[ModuleType, Any, Stubber]]:
    yield from _stubbed("fleet_capacity", "autoscaling", monkeypatch, responses)


def _groups(stub: Stubber, groups: list[dict[str, Any]]) -> None:
    stub.add_response(
        "describe_auto_scaling_groups",
        {"AutoScalingGroups": groups},
        {"Filters": [{"Name": "tag:cdk-neuron:fleet", "Values": ["c8fae96d"]}]},
    )


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([], "2"),  # the first deployment: no group yet, the minimum
        ([_group(8)], "8"),  # a fleet auto scaling grew to 8 keeps 8 through the swap
        ([_group(5), _group(7)], "7"),  # a replacement in progress: the larger
        ([_group(8, "Delete in progress"), _group(3)], "3"),  # a group being deleted does not count
        ([_group(0)], "2"),  # clamped to MinSize
    ],
)
def test_a_new_group_starts_at_the_running_capacity(
    capacity: tuple[ModuleType, Any, Stubber],
    responses: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    expected: str,
) -> None:
    module, client, stub = capacity
    _groups(stub, groups)
    module.handler(_event("Update", CAPACITY, "capacity:c8fae96d"), None, autoscaling=client)
    (response,) = responses
    assert (response["Status"], response["PhysicalResourceId"], response["Data"]) == (
        "SUCCESS",
        "capacity:c8fae96d",
        {"DesiredCapacity": expected},
    )


def test_the_capacity_reader_deletes_nothing(
    capacity: tuple[ModuleType, Any, Stubber], responses: list[dict[str, Any]]
) -> None:
    module, client, _ = capacity
    module.handler(_event("Delete", CAPACITY, "capacity:c8fae96d"), None, autoscaling=client)
    assert [r["Status"] for r in responses] == ["SUCCESS"]
