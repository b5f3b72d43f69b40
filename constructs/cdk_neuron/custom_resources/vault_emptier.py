"""CloudFormation custom resource: empty a backup vault before CloudFormation deletes it.

AWS Backup deletes a vault "only if it is empty" (DeleteBackupVault, AWS Backup API Reference,
https://docs.aws.amazon.com/aws-backup/latest/devguide/API_DeleteBackupVault.html, read 2026-12-01),
so ``cdk destroy`` of a stack whose vault holds recovery points fails. A store created with
``RemovalPolicy.DESTROY`` gets this resource: on Delete it deletes every recovery point in the vault
(DeleteRecoveryPoint; each goes through DELETING first) and waits until the vault lists none.
Create and Update do nothing. Properties: ``BackupVaultName``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import cfn_response  # type: ignore[import-not-found]  # beside this file in the function's code

LOG = cfn_response.LOG
POLL_SECONDS = 10
# Lambda stops the function at its 15-minute limit; leave a minute to answer CloudFormation.
WAIT_SECONDS = 13 * 60


def recovery_points(backup: Any, vault: str) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    for page in backup.get_paginator("list_recovery_points_by_backup_vault").paginate(BackupVaultName=vault):
        points += page.get("RecoveryPoints", [])
    return points


def empty(
    backup: Any,
    vault: str,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Delete every recovery point of ``vault`` and wait until none is left; return how many were deleted."""
    deadline = clock() + WAIT_SECONDS
    deleted: set[str] = set()
    while True:
        points = recovery_points(backup, vault)
        if not points:
            return len(deleted)
        for point in points:
            arn = point["RecoveryPointArn"]
            if arn not in deleted and point.get("Status") != "DELETING":
                backup.delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=arn)
                deleted.add(arn)
        if clock() >= deadline:
            raise TimeoutError(
                f"{len(points)} recovery point(s) of {vault} are still being deleted; run the delete again in a "
                "few minutes"
            )
        sleep(POLL_SECONDS)


def handler(event: dict[str, Any], context: Any, backup: Any = None) -> None:
    client = backup or boto3.client("backup")
    vault = event["ResourceProperties"]["BackupVaultName"]

    def keep(_: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return f"empties:{vault}", {}

    def delete(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if event.get("PhysicalResourceId") == f"empties:{vault}":
            LOG.info("deleted %d recovery point(s) of %s", empty(client, vault), vault)
        return event["PhysicalResourceId"], {}

    cfn_response.serve(event, create_or_update=keep, delete=delete)
