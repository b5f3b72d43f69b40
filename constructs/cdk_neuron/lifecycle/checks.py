"""Retry and teardown: what a failed first create and a ``cdk destroy`` leave behind.

Both read synthesized templates only.

- :func:`retry_findings`: a first create that fails at any resource rolls back; anything it keeps
  with a fixed physical name makes the retry fail with "already exists". ``DeletionPolicy:
  RetainExceptOnCreate`` ("RetainExceptOnCreate behaves like Retain for stack operations, except for
  the stack operation that initially created the resource. If the stack operation that created the
  resource is rolled back, CloudFormation deletes the resource", DELETION_POLICY in :mod:`.rules`)
  is the retryable form of Retain; in the CDK it is ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``.
- :func:`teardown_findings`: what ``cdk destroy`` cannot delete or deliberately keeps, and keys that
  a teardown deletes while data they encrypt is kept.

Custom resources that empty a bucket or a backup vault before CloudFormation deletes it declare so
with the ``cdk-neuron:empties`` metadata entry (a list of ``Ref``s); aws-cdk-lib's
``Custom::S3AutoDeleteObjects`` is recognized by its type.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cdk_neuron.lifecycle import schema
from cdk_neuron.lifecycle.template import Template, properties, references, resources

EMPTIES_METADATA = "cdk-neuron:empties"
"""Metadata on a custom resource: the ``Ref``s of the buckets or vaults it empties on delete."""
RETAINED = ("Retain", "RetainExceptOnCreate")
# Containers CloudFormation cannot delete while they hold something.
_MUST_BE_EMPTIED = {
    "AWS::S3::Bucket": "cdk destroy fails on a bucket that holds objects (and services such as Elastic Load "
    "Balancing write into theirs at once)",
    "AWS::Backup::BackupVault": "cdk destroy fails on a vault that holds recovery points ('A vault can be "
    "deleted only if it is empty', DeleteBackupVault, AWS Backup API Reference)",
}
_AUTO_DELETE = "Custom::S3AutoDeleteObjects"
_KEY = "AWS::KMS::Key"
_FUNCTION = "AWS::Lambda::Function"
_LOG_GROUP = "AWS::Logs::LogGroup"


@dataclass(frozen=True)
class Finding:
    stack: str
    logical_id: str
    check: str
    """``retry`` or ``teardown``."""
    message: str

    def __str__(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.check}): {self.message}"


def _policy(resource: Mapping[str, Any]) -> str:
    value = resource.get("DeletionPolicy")
    return value if isinstance(value, str) else "Delete"


def fixed_name(resource: Mapping[str, Any]) -> tuple[str, Any] | None:
    """(property, value) when the template sets the resource's physical name."""
    name = schema.name_property(str(resource.get("Type")))
    if name is None:
        return None
    value = properties(resource).get(name)
    return None if value is None else (name, value)


def retry_findings(stacks: Mapping[str, Template]) -> list[Finding]:
    """Resources a rolled-back first create keeps under a fixed name."""
    found = []
    for stack, template in stacks.items():
        for logical, resource in resources(template).items():
            named = fixed_name(resource)
            if _policy(resource) == "Retain" and named is not None:
                found.append(
                    Finding(
                        stack,
                        logical,
                        "retry",
                        f"DeletionPolicy Retain with a fixed {named[0]}: a first create that rolls back keeps "
                        "it, and the retry fails with 'already exists'. Use RetainExceptOnCreate "
                        "(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE) or let CloudFormation name it",
                    )
                )
    return found


def _emptied(template: Template) -> set[str]:
    """Logical ids of the buckets and vaults some custom resource empties before they are deleted."""
    found: set[str] = set()
    for resource in resources(template).values():
        if resource.get("Type") == _AUTO_DELETE:
            found |= {logical for logical, _ in references(properties(resource).get("BucketName"))}
        metadata = resource.get("Metadata")
        if isinstance(metadata, dict):
            found |= {logical for logical, _ in references(metadata.get(EMPTIES_METADATA))}
    return found


def _keys_of(
    resource: Mapping[str, Any], template_resources: Mapping[str, Mapping[str, Any]]
) -> Iterator[str]:
    for logical, _ in references(properties(resource)):
        if template_resources.get(logical, {}).get("Type") == _KEY:
            yield logical


def _logged_functions(template_resources: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Functions whose log group the stack creates (and so deletes): by LoggingConfig, or a log group
    named after the function (``/aws/lambda/${Function}``)."""
    found: set[str] = set()
    for logical, resource in template_resources.items():
        kind = resource.get("Type")
        if (
            kind == _FUNCTION
            and (properties(resource).get("LoggingConfig") or {}).get("LogGroup") is not None
        ):
            found.add(logical)
        elif kind == _LOG_GROUP:
            found |= {name for name, _ in references(properties(resource).get("LogGroupName"))}
    return found


def key_findings(stacks: Mapping[str, Template]) -> list[Finding]:
    """A key the stack deletes while a resource it encrypts is kept: that data becomes unreadable."""
    found = []
    for stack, template in stacks.items():
        template_resources = resources(template)
        for logical, resource in template_resources.items():
            if _policy(resource) not in RETAINED:
                continue
            for key in sorted(set(_keys_of(resource, template_resources))):
                if _policy(template_resources[key]) not in RETAINED:
                    found.append(
                        Finding(
                            stack,
                            logical,
                            "teardown",
                            f"kept ({_policy(resource)}) but encrypted with {key}, which is deleted: once the key's "
                            "waiting period ends, what it encrypts cannot be read. Retain the key too, or "
                            "delete both",
                        )
                    )
    return found


def teardown_findings(stacks: Mapping[str, Template], *, keeps: Collection[str] = ()) -> list[Finding]:
    """What ``cdk destroy`` of these stacks fails on or leaves behind (``keeps``: documented exceptions,
    as ``stack/logical id``)."""
    found = key_findings(stacks)
    for stack, template in stacks.items():
        template_resources = resources(template)
        emptied = _emptied(template)
        logged = _logged_functions(template_resources)
        for logical, resource in template_resources.items():
            if f"{stack}/{logical}" in keeps:
                continue
            kind = str(resource.get("Type"))
            policy = _policy(resource)
            if policy in RETAINED:
                found.append(
                    Finding(stack, logical, "teardown", f"kept after cdk destroy (DeletionPolicy {policy})")
                )
            elif kind in _MUST_BE_EMPTIED and logical not in emptied:
                found.append(
                    Finding(stack, logical, "teardown", _MUST_BE_EMPTIED[kind] + "; nothing empties it")
                )
            elif kind == _FUNCTION and logical not in logged:
                found.append(
                    Finding(
                        stack,
                        logical,
                        "teardown",
                        "Lambda creates its log group (/aws/lambda/<name>) on the first invocation, outside the "
                        "stack: it stays after cdk destroy; give the function a log group the stack owns",
                    )
                )
    return found


def lifecycle_findings(
    stacks: Mapping[str, Template], *, teardown: bool, keeps: Collection[str] = ()
) -> list[Finding]:
    """Every retry and key finding of an environment's stacks, and with ``teardown`` (an environment
    that ``cdk destroy`` removes every evening) what the teardown fails on or leaves behind."""
    found = retry_findings(stacks)
    found += teardown_findings(stacks, keeps=keeps) if teardown else key_findings(stacks)
    return found


__all__ = [
    "EMPTIES_METADATA",
    "RETAINED",
    "Finding",
    "fixed_name",
    "key_findings",
    "lifecycle_findings",
    "retry_findings",
    "teardown_findings",
]
