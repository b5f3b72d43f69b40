"""The backup-vault emptier, against botocore's Stubber.

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


# -- the boot-failure breaker (an EventBridge target, not a custom resource) ------------------------

ENVIRONMENT_ARN = "arn:aws:batch:us-east-1:111111111111:compute-environment/ClusterComputeEnvironment-AbC"


def _alarm_event(state: str) -> dict[str, Any]:
    """A "CloudWatch Alarm State Change" event, as EventBridge delivers it (the fields the handler reads)."""
    return {
        "source": "aws.cloudwatch",
        "detail-type": "CloudWatch Alarm State Change",
        "detail": {
            "alarmName": "Training-ClusterBootFailureLimit-XYZ",
            "state": {"value": state, "reason": "Threshold Crossed: 1 datapoint [3.0] >= 3.0"},
        },
    }


def test_the_breaker_disables_the_compute_environment_on_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    from handler_support import load_file

    from cdk_neuron._custom_resource import HANDLERS_DIR

    use_fake_aws_credentials(monkeypatch, "us-east-1")
    monkeypatch.setenv("COMPUTE_ENVIRONMENT", ENVIRONMENT_ARN)
    module = load_file(HANDLERS_DIR / "boot_failure_breaker.py", "cr_boot_failure_breaker")
    client = boto3.client("batch", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response(
            "update_compute_environment",
            {
                "computeEnvironmentName": "ClusterComputeEnvironment-AbC",
                "computeEnvironmentArn": ENVIRONMENT_ARN,
            },
            {"computeEnvironment": ENVIRONMENT_ARN, "state": "DISABLED"},
        )
        assert module.handler(_alarm_event("ALARM"), None, batch=client) == {"disabled": True}
        stub.assert_no_pending_responses()
        # Back to OK (or INSUFFICIENT_DATA): nothing is called, nothing is re-enabled behind the operator.
        assert module.handler(_alarm_event("OK"), None, batch=client) == {"disabled": False}
