"""Validation of construct props that aws-cdk-lib would only reject at deploy time (or not at all)."""

from __future__ import annotations

import aws_cdk as cdk

from cdk_neuron.errors import NeuronConfigError

_SECONDS_PER_DAY = 86_400

# CloudFormation has no Snapshot deletion policy for EFS file systems, S3 buckets or KMS keys.
_SUPPORTED_REMOVAL_POLICIES = {
    cdk.RemovalPolicy.RETAIN: "RETAIN",
    cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE: "RETAIN_ON_UPDATE_OR_DELETE",
    cdk.RemovalPolicy.DESTROY: "DESTROY",
}


def removal_policy(field: str, value: cdk.RemovalPolicy) -> cdk.RemovalPolicy:
    if value not in _SUPPORTED_REMOVAL_POLICIES:
        raise NeuronConfigError(
            field, value, f"use RemovalPolicy.{', RemovalPolicy.'.join(_SUPPORTED_REMOVAL_POLICIES.values())}"
        )
    return value


def whole_days(field: str, value: cdk.Duration, *, minimum: int = 1) -> int:
    """A Duration that S3 lifecycle rules or AWS Backup can express: a whole number of days."""
    if not isinstance(value, cdk.Duration):
        raise NeuronConfigError(field, value, "use aws_cdk.Duration.days(n)")
    seconds = value.to_seconds(integral=False)
    if cdk.Token.is_unresolved(seconds) or seconds % _SECONDS_PER_DAY or seconds < minimum * _SECONDS_PER_DAY:
        raise NeuronConfigError(field, value.to_human_string(), f"use a whole number of days >= {minimum}")
    return int(seconds // _SECONDS_PER_DAY)


def positive_seconds(field: str, value: cdk.Duration) -> float:
    if not isinstance(value, cdk.Duration):
        raise NeuronConfigError(field, value, "use aws_cdk.Duration, e.g. Duration.minutes(10)")
    seconds = value.to_seconds(integral=False)
    if cdk.Token.is_unresolved(seconds) or seconds <= 0:
        raise NeuronConfigError(field, value.to_human_string(), "must be a positive duration")
    return float(seconds)


def posix_id(field: str, value: int) -> str:
    # EFS access points take 0..2**32-1; 0 would hand every client root on the file system.
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 0xFFFFFFFF:
        raise NeuronConfigError(field, value, "use a non-root POSIX id between 1 and 4294967295")
    return str(value)
