"""AWS Backup: plans and selections."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

PLAN = "AWS::Backup::BackupPlan"


def _rules(resource: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    plan = _base.as_dict(_base.props(resource).get("BackupPlan")) or {}
    for index, rule in enumerate(_base.as_list(plan.get("BackupPlanRule")) or []):
        rule = _base.as_dict(rule)
        if rule is not None:
            yield ("Properties", "BackupPlan", "BackupPlanRule", index), rule


class ColdStorageRetention(_base.DeployRule):
    id = "E9801"
    shortdesc = "Backups kept 90 days in cold storage: DeleteAfterDays >= MoveToColdStorageAfterDays + 90"
    description = (
        "Backups transitioned to cold storage must be stored there for at least 90 days, so DeleteAfterDays must "
        "be at least 90 days greater than MoveToColdStorageAfterDays (rules and their copy actions)."
    )
    source_url = "https://docs.aws.amazon.com/aws-backup/latest/devguide/API_Lifecycle.html"
    source_title = "AWS Backup API Reference: Lifecycle"
    resource_types = (PLAN,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, rule in _rules(resource):
            lifecycles = [((*path, "Lifecycle"), rule.get("Lifecycle"))]
            for index, copy in enumerate(_base.as_list(rule.get("CopyActions")) or []):
                lifecycles.append(
                    ((*path, "CopyActions", index, "Lifecycle"), (_base.as_dict(copy) or {}).get("Lifecycle"))
                )
            for where, lifecycle in lifecycles:
                lifecycle = _base.as_dict(lifecycle) or {}
                cold = _base.as_int(lifecycle.get("MoveToColdStorageAfterDays"))
                delete = _base.as_int(lifecycle.get("DeleteAfterDays"))
                if cold is not None and delete is not None and delete < cold + 90:
                    yield Finding(
                        (*where, "DeleteAfterDays"),
                        f"{name}: DeleteAfterDays {delete} is less than MoveToColdStorageAfterDays {cold} + 90; cold "
                        f"backups must be kept 90 days. Fix: set DeleteAfterDays to {cold + 90} or more.",
                    )


class StartWindow(_base.DeployRule):
    id = "E9802"
    shortdesc = "Backup rule StartWindowMinutes is at least 60"
    description = "If StartWindowMinutes is included, it must be at least 60 minutes to avoid errors."
    source_url = "https://docs.aws.amazon.com/aws-backup/latest/devguide/API_BackupRuleInput.html"
    source_title = "AWS Backup API Reference: BackupRuleInput"
    resource_types = (PLAN,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, rule in _rules(resource):
            start = _base.as_int(rule.get("StartWindowMinutes"))
            if start is not None and start < 60:
                yield Finding(
                    (*path, "StartWindowMinutes"),
                    f"{name}: StartWindowMinutes is {start}; AWS Backup needs at least 60. Fix: use 60 or more.",
                )


class SelectionRoleTrust(_base.DeployRule):
    id = "E9803"
    shortdesc = "Backup selection role must trust backup.amazonaws.com"
    description = (
        "AWS Backup assumes the selection's IamRoleArn to create and manage backups; a role in the same template "
        "whose trust policy does not allow backup.amazonaws.com to sts:AssumeRole makes every backup job fail."
    )
    source_url = "https://docs.aws.amazon.com/aws-backup/latest/devguide/iam-service-roles.html"
    source_title = "AWS Backup Developer Guide: IAM service roles"
    resource_types = ("AWS::Backup::BackupSelection",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        selection = _base.as_dict(_base.props(resource).get("BackupSelection")) or {}
        role = template.target(selection.get("IamRoleArn"), "AWS::IAM::Role")
        if role is None:
            return
        trust = _base.statements(_base.props(role[1]).get("AssumeRolePolicyDocument"))
        if trust is None:
            return
        for statement in trust:
            if (
                statement.get("Effect") != "Allow"
                or _base.actions_cover(statement.get("Action"), "sts:AssumeRole") is not True
            ):
                continue
            principal = statement.get("Principal")
            services = (principal or {}).get("Service") if isinstance(principal, dict) else None
            services = services if isinstance(services, list) else [services]
            if any(not isinstance(s, str) for s in services):
                return  # a token we cannot read: stay silent
            if "backup.amazonaws.com" in services:
                return
        yield Finding(
            ("Properties", "BackupSelection", "IamRoleArn"),
            f"{name}: IamRoleArn is role {role[0]}, whose trust policy does not let backup.amazonaws.com assume it. "
            "Fix: add a trust statement for the backup.amazonaws.com service principal.",
        )
