"""Checks for construct props that are aws-cdk-lib values: durations, sizes, removal policies, ids.

:mod:`cdk_neuron.validation` is plain Python and owns every number check and identifier pattern;
these wrappers only turn an ``aws_cdk.Duration`` or ``aws_cdk.Size`` into the number that module
checks (refusing tokens, which cannot be checked at synthesis), and let an imported resource's id
be a token. They import ``aws_cdk``, so only construct modules use them.
"""

from __future__ import annotations

import re
from typing import Literal

import aws_cdk as cdk

from cdk_neuron import validation
from cdk_neuron.errors import NeuronConfigError

DurationUnit = Literal["seconds", "minutes", "days"]
_SECONDS_PER: dict[DurationUnit, int] = {"seconds": 1, "minutes": 60, "days": 86_400}

# CloudFormation has no Snapshot deletion policy for EFS file systems, S3 buckets or KMS keys.
_REMOVAL_POLICIES = {
    cdk.RemovalPolicy.RETAIN: "RETAIN",
    cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE: "RETAIN_ON_UPDATE_OR_DELETE",
    cdk.RemovalPolicy.DESTROY: "DESTROY",
}

DEFAULT_REMOVAL_POLICY = cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
"""Every construct's default for what it keeps: retained on update and delete, but deleted when the
create that made it rolls back, so a failed first deployment can simply be retried ("RetainExceptOnCreate
behaves like Retain for stack operations, except for the stack operation that initially created the
resource", DeletionPolicy attribute, CloudFormation template reference,
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-deletionpolicy.html,
read 2026-12-01). Plain RETAIN would keep a resource with a fixed name after a rolled-back create, and
the retry would fail with "already exists"."""


def retained(policy: cdk.RemovalPolicy) -> cdk.RemovalPolicy:
    """``policy`` for a resource with a fixed physical name: plain RETAIN becomes RETAIN_ON_UPDATE_OR_DELETE.

    The two differ only when the stack's first create rolls back, and then the resource is new and
    empty; keeping it would only make the retry fail with "already exists".
    """
    return DEFAULT_REMOVAL_POLICY if policy == cdk.RemovalPolicy.RETAIN else policy


def seconds(field: str, value: object, *, example: str = "Duration.minutes(10)") -> float:
    """The seconds of a concrete ``aws_cdk.Duration`` (a token cannot be checked at synthesis)."""
    if not isinstance(value, cdk.Duration):
        raise NeuronConfigError(field, value, f"use aws_cdk.Duration, e.g. {example}")
    amount = value.to_seconds(integral=False)
    if cdk.Token.is_unresolved(amount):
        raise NeuronConfigError(field, value.to_human_string(), "use a concrete duration, not a token")
    return float(amount)


def whole_duration(
    field: str,
    value: object,
    unit: DurationUnit,
    *,
    minimum: int = 1,
    maximum: int | None = None,
) -> int:
    """A Duration that is a whole number of ``unit`` within ``[minimum, maximum]``; returns that number."""
    example = f"Duration.{unit}({max(minimum, 1)})"
    total = seconds(field, value, example=example)
    assert isinstance(value, cdk.Duration)
    per = _SECONDS_PER[unit]
    if total % per:
        raise NeuronConfigError(field, value.to_human_string(), f"use a whole number of {unit}")
    try:
        return validation.whole_number(field, int(total // per), minimum=minimum, maximum=maximum, unit=unit)
    except NeuronConfigError as error:  # name the duration as given, not the bare number
        raise NeuronConfigError(field, value.to_human_string(), error.fix) from None


def positive_duration(field: str, value: object) -> float:
    """A Duration longer than zero; returns its seconds."""
    total = seconds(field, value)
    assert isinstance(value, cdk.Duration)
    if total <= 0:
        raise NeuronConfigError(field, value.to_human_string(), "must be longer than zero")
    return total


def whole_gibibytes(field: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """A concrete ``aws_cdk.Size`` that is a whole number of GiB within bounds; returns the GiB."""
    if not isinstance(value, cdk.Size):
        raise NeuronConfigError(field, value, "use aws_cdk.Size.gibibytes(n)")
    gib = value.to_gibibytes(rounding=cdk.SizeRoundingBehavior.NONE)
    if cdk.Token.is_unresolved(gib) or gib != int(gib):
        raise NeuronConfigError(field, f"{gib} GiB", "use a whole number of GiB, not a token")
    return validation.whole_number(field, int(gib), minimum=minimum, maximum=maximum, unit="GiB")


def size(field: str, value: object) -> cdk.Size:
    """An ``aws_cdk.Size``."""
    if not isinstance(value, cdk.Size):
        raise NeuronConfigError(field, value, "use aws_cdk.Size, e.g. Size.gibibytes(64)")
    return value


def removal_policy(field: str, value: object) -> cdk.RemovalPolicy:
    """A removal policy CloudFormation supports for EFS, S3 and KMS (no SNAPSHOT)."""
    if value not in _REMOVAL_POLICIES:
        raise NeuronConfigError(
            field, value, f"use RemovalPolicy.{', RemovalPolicy.'.join(_REMOVAL_POLICIES.values())}"
        )
    assert isinstance(value, cdk.RemovalPolicy)
    return value


def identifier(field: str, value: object, pattern: re.Pattern[str], what: str) -> str:
    """An id or ARN that ``pattern`` matches, or a token (e.g. ``Fn.import_value``) resolved at deployment."""
    if isinstance(value, str) and cdk.Token.is_unresolved(value):
        return value
    return validation.matching(field, value, pattern, what)


__all__ = [
    "DEFAULT_REMOVAL_POLICY",
    "DurationUnit",
    "identifier",
    "positive_duration",
    "removal_policy",
    "retained",
    "seconds",
    "size",
    "whole_duration",
    "whole_gibibytes",
]
