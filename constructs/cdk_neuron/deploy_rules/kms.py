"""AWS KMS key policies that other services need before they can use a key of the same template."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

KEY = "AWS::KMS::Key"
AUTO_SCALING_ROLE = "role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
_EBS_ACTIONS = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncryptFrom",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:DescribeKey",
    "kms:CreateGrant",
)
_LOGS_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")
_SNS_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
_LOGS_SERVICE = re.compile(r"^logs\.[a-z0-9<>-]+\.amazonaws\.com(\.cn)?$")


def _values(value: Any) -> list[str | None]:
    items = value if isinstance(value, list) else [value]
    return [_base.text(item) for item in items]


def _condition_principal_arns(condition: Any) -> list[str | None] | None:
    """Values of an aws:PrincipalArn condition key, whatever the operator; None when there is none."""
    condition = _base.as_dict(condition)
    if condition is None:
        return None
    found: list[str | None] = []
    for operator in condition.values():
        operator = _base.as_dict(operator) or {}
        for key, value in operator.items():
            if isinstance(key, str) and key.lower() == "aws:principalarn":
                found.extend(_values(value))
    return found or None


def _principal_allows(
    statement: dict[str, Any], *, service: re.Pattern[str] | None, role: str | None
) -> bool | None:
    """Whether a statement's principal covers the service principal or role; None when it cannot be told."""
    if "NotPrincipal" in statement:
        return None
    principal = statement.get("Principal")
    wildcard = principal == "*"
    if isinstance(principal, dict):
        if service is not None and "Service" in principal:
            names = _values(principal["Service"])
            if any(n is not None and service.match(n) for n in names):
                return True
            if any(n is None for n in names):
                return None
        if "AWS" in principal:
            arns = _values(principal["AWS"])
            if role is not None and any(a is not None and role in a for a in arns):
                return True
            wildcard = wildcard or "*" in arns
            if any(a is None for a in arns):
                return None
    elif not wildcard:
        return None
    if not wildcard:
        return False
    if statement.get("Condition") is None:
        return True
    condition_arns = _condition_principal_arns(statement.get("Condition"))
    if role is not None and condition_arns is not None:
        if any(a is not None and role in a for a in condition_arns):
            return True
        return None if any(a is None for a in condition_arns) else False
    return None  # a wildcard narrowed by conditions we do not evaluate


def missing_grants(
    policy: Any, actions: tuple[str, ...], *, service: re.Pattern[str] | None = None, role: str | None = None
) -> list[str] | None:
    """Actions the key policy certainly does not grant to the principal; None when it cannot be told."""
    statements = _base.statements(policy)
    if statements is None:
        return None
    missing: list[str] = []
    for action in actions:
        status: bool | None = False
        for statement in statements:
            if statement.get("Effect") != "Allow":
                continue
            if "NotAction" in statement:
                status = None
                continue
            covers = _base.actions_cover(statement.get("Action"), action)
            allows = (
                _principal_allows(statement, service=service, role=role) if covers is not False else False
            )
            if covers is True and allows is True:
                status = True
                break
            if covers is None or allows is None:
                status = None
        if status is None:
            return None
        if status is False:
            missing.append(action)
    return missing


def _key(template: _base.Template, value: Any) -> tuple[str, dict[str, Any]] | None:
    return template.target(value, KEY)


class AutoScalingEbsKeyPolicy(_base.DeployRule):
    id = "E9901"
    shortdesc = (
        "EBS keys of Auto Scaling/Batch launch templates must let AWSServiceRoleForAutoScaling use them"
    )
    description = (
        "When a launch template used by an Auto Scaling group or a Batch compute environment encrypts EBS volumes "
        "with a customer managed key, the key policy must allow the AWSServiceRoleForAutoScaling service-linked "
        "role (as principal or through aws:PrincipalArn) to use the key and to kms:CreateGrant (with "
        "kms:GrantIsForAWSResource); otherwise instances fail to launch. Only keys in the same template are checked."
    )
    source_url = (
        "https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html"
    )
    source_title = (
        "Amazon EC2 Auto Scaling User Guide: Required AWS KMS key policy for use with encrypted volumes"
    )
    resource_types = (_base.LAUNCH_TEMPLATE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        users = [
            user
            for user, res in template.of_type(
                "AWS::AutoScaling::AutoScalingGroup", "AWS::Batch::ComputeEnvironment"
            )
            if name in _launch_templates_of(template, res)
        ]
        if not users:
            return
        data = _base.launch_template_data(resource)
        reported: set[str] = set()
        for index, mapping in enumerate(_base.as_list(data.get("BlockDeviceMappings")) or []):
            ebs = _base.as_dict((_base.as_dict(mapping) or {}).get("Ebs")) or {}
            key = _key(template, ebs.get("KmsKeyId"))
            if key is None or key[0] in reported:
                continue
            missing = missing_grants(
                _base.props(key[1]).get("KeyPolicy"), _EBS_ACTIONS, role=AUTO_SCALING_ROLE
            )
            if missing:
                reported.add(key[0])
                yield Finding(
                    ("Properties", "LaunchTemplateData", "BlockDeviceMappings", index, "Ebs", "KmsKeyId"),
                    f"{name}: EBS volumes are encrypted with key {key[0]}, used by {', '.join(users)}, but its key "
                    f"policy does not let AWSServiceRoleForAutoScaling {', '.join(missing)}; instances will fail to "
                    "launch. Fix: allow the service-linked role (principal or aws:PrincipalArn) those actions, "
                    "CreateGrant with kms:GrantIsForAWSResource true.",
                )


def _launch_templates_of(template: _base.Template, resource: dict[str, Any]) -> set[str]:
    properties = _base.props(resource)
    specs = [properties.get("LaunchTemplate")]
    compute = _base.as_dict(properties.get("ComputeResources")) or {}
    specs.append(compute.get("LaunchTemplate"))
    mixed = _base.as_dict(properties.get("MixedInstancesPolicy")) or {}
    specs.append((_base.as_dict(mixed.get("LaunchTemplate")) or {}).get("LaunchTemplateSpecification"))
    names = set()
    for spec in specs:
        found = _base.launch_template(template, spec)
        if found is not None:
            names.add(found[0])
    return names


class LogGroupKeyPolicy(_base.DeployRule):
    id = "E9902"
    shortdesc = "A log group's KMS key must allow logs.<region>.amazonaws.com"
    description = (
        "CloudWatch Logs encrypts a log group only if the key policy allows the logs.<region>.amazonaws.com "
        "service principal to kms:Encrypt*, kms:Decrypt*, kms:ReEncrypt*, kms:GenerateDataKey* and kms:Describe*; "
        "otherwise creating the log group fails. Only keys in the same template are checked."
    )
    source_url = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html"
    source_title = "Amazon CloudWatch Logs User Guide: Encrypt log data in CloudWatch Logs using AWS KMS"
    resource_types = ("AWS::Logs::LogGroup",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        key = _key(template, _base.props(resource).get("KmsKeyId"))
        if key is None:
            return
        missing = missing_grants(_base.props(key[1]).get("KeyPolicy"), _LOGS_ACTIONS, service=_LOGS_SERVICE)
        if missing:
            yield Finding(
                ("Properties", "KmsKeyId"),
                f"{name}: KmsKeyId is key {key[0]}, whose policy does not let logs.<region>.amazonaws.com "
                f"{', '.join(missing)}; CloudWatch Logs refuses the key. Fix: add an Allow statement for the "
                "logs.<region>.amazonaws.com service principal.",
            )


class TopicKeyPolicyForPublishers(_base.DeployRule):
    id = "E9903"
    shortdesc = (
        "An encrypted SNS topic's key must allow the CloudWatch and EventBridge services that publish to it"
    )
    description = (
        "When CloudWatch alarms or EventBridge rules of the same template publish to an SNS topic encrypted with a "
        "customer managed key of the same template, the key policy must allow cloudwatch.amazonaws.com / "
        "events.amazonaws.com to kms:Decrypt and kms:GenerateDataKey*; otherwise notifications are silently dropped."
    )
    source_url = "https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html"
    source_title = (
        "Amazon SNS Developer Guide: Managing Amazon SNS encryption keys and costs (AWS service publishers)"
    )
    resource_types = ("AWS::SNS::Topic",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        key = _key(template, _base.props(resource).get("KmsMasterKeyId"))
        if key is None:
            return
        publishers: dict[str, list[str]] = {}
        for alarm, res in template.of_type("AWS::CloudWatch::Alarm"):
            properties = _base.props(res)
            for field in ("AlarmActions", "OKActions", "InsufficientDataActions"):
                if any(_base.ref_target(a) == name for a in _base.as_list(properties.get(field)) or []):
                    publishers.setdefault("cloudwatch.amazonaws.com", []).append(alarm)
                    break
        for rule, res in template.of_type("AWS::Events::Rule"):
            for target in _base.as_list(_base.props(res).get("Targets")) or []:
                if _base.ref_target((_base.as_dict(target) or {}).get("Arn")) == name:
                    publishers.setdefault("events.amazonaws.com", []).append(rule)
                    break
        policy = _base.props(key[1]).get("KeyPolicy")
        for service, sources in publishers.items():
            missing = missing_grants(policy, _SNS_ACTIONS, service=re.compile(rf"^{re.escape(service)}$"))
            if missing:
                yield Finding(
                    ("Properties", "KmsMasterKeyId"),
                    f"{name}: key {key[0]} does not let {service} {', '.join(missing)}, but {', '.join(sources[:3])}"
                    f"{' and others' if len(sources) > 3 else ''} publish to this topic; their notifications would "
                    f"be dropped. Fix: allow {service} kms:Decrypt and kms:GenerateDataKey* in the key policy.",
                )


_SERVICE_LINKED_ROLE = re.compile(r":role/aws-service-role/")


class KeyPolicyNamesServiceLinkedRole(_base.DeployRule):
    id = "W9904"
    shortdesc = "A key policy must not name a service-linked role as a principal"
    description = (
        "The principals of a key policy must exist when the key is created or its policy is put; a service-linked "
        "role (role/aws-service-role/...) exists only once its service was first used in the account, so naming "
        "one as a principal fails the first deployment in a fresh account with MalformedPolicyDocumentException "
        "(a warning: in an account that has the role, the template deploys). Match it with Principal * and an "
        "aws:PrincipalArn condition instead."
    )
    source_url = "https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html"
    source_title = "AWS KMS API Reference: CreateKey (Policy: the principals in the key policy must exist)"
    resource_types = (KEY,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for index, statement in enumerate(_base.statements(_base.props(resource).get("KeyPolicy")) or []):
            principal = _base.as_dict(statement.get("Principal")) or {}
            named = [arn for arn in _values(principal.get("AWS")) if arn and _SERVICE_LINKED_ROLE.search(arn)]
            if named:
                yield Finding(
                    ("Properties", "KeyPolicy", "Statement", index, "Principal", "AWS"),
                    f"{name}: the key policy names the service-linked role {named[0]} as a principal; in an "
                    "account where that service was never used the role does not exist yet and KMS refuses the "
                    "policy. Fix: Principal * with an ArnEquals aws:PrincipalArn condition on the role (and "
                    "kms:CallerAccount).",
                )
