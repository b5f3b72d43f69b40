"""Every identifier pattern and number check cdk-neuron applies, defined once.

Plain Python (no ``aws_cdk``). The constructs, the pure core (catalog, planner) and any app that
parses its own configuration into cdk-neuron's value objects call these, so one input is refused
with the same words wherever it enters. Each check returns the value it accepted (narrowed for
the type checker) or raises :class:`~cdk_neuron.errors.NeuronConfigError` naming the field, the
value and the fix.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from cdk_neuron.errors import NeuronConfigError, one_of

# -- identifier formats --------------------------------------------------------------------------
# Each pattern ends in \Z, never $: Python's $ also matches before a trailing newline, so
# "123456789012\n" passed the account check and "us-east-1\n" the region check. Callers use match().

ACCOUNT = re.compile(r"^\d{12}\Z")
# "us-east-1", "ap-southeast-4", "us-gov-west-1", "cn-north-1".
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+\Z")
# AZ IDs such as "use1-az4" and, for Local Zones, "usw2-lax1-az1"; never AZ *names* ("us-east-1a"),
# which map to different zones in different accounts.
AZ_ID = re.compile(r"^[a-z]+\d*(-[a-z]+\d+)?-az\d+\Z")
# EC2 capacity reservation ids: "cr-" and 17 hex digits (older ids have 8).
RESERVATION_ID = re.compile(r"^cr-(?:[0-9a-f]{8}|[0-9a-f]{17})\Z")
# arn:<partition>:resource-groups:<region>:<account>:group/<name>
RESOURCE_GROUP_ARN = re.compile(
    r"^arn:aws(?:-cn|-us-gov)?:resource-groups:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:group/[A-Za-z0-9_.-]{1,300}\Z"
)
CERTIFICATE_ARN = re.compile(r"^arn:aws[a-z-]*:acm:(?P<region>[a-z0-9-]+):\d{12}:certificate/[0-9a-f-]+\Z")
# A Secrets Manager secret name or ARN.
SECRET = re.compile(r"^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}\Z")
SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}\Z")
# Deliberately loose: SNS confirms the address; this only catches obvious typos.
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")
# Hugging Face Hub repository ids: "org/name", or a bare "name" for the few legacy root models ("gpt2").
HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?\Z")
# s3://bucket/prefix[/]: a bucket name (3-63 of a-z 0-9 . -) and a non-empty key prefix.
S3_PREFIX_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])/(?P<prefix>[^\s]+?)/?\Z")
# <account>.dkr.ecr.<region>.amazonaws.com[.cn]
ECR_REGISTRY = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?\Z")
# registry/repository:tag or registry/repository@sha256:<digest>; the registry is a host name of
# dot-separated labels (at least two) with an optional port.
IMAGE_URI = re.compile(
    r"^(?P<registry>[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?)/(?P<repository>[a-z0-9._/-]+)"
    r"(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})|@(?P<digest>sha256:[0-9a-f]{64}))\Z"
)
IMAGE_TAG = re.compile(r"^[\w][\w.\-]{0,127}\Z")
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
# A numbered release, major.minor.patch: "1.41.0".
RELEASE_VERSION = re.compile(r"^\d+\.\d+\.\d+\Z")
# A shell/environment variable name.
ENVIRONMENT_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# SageMaker endpoint and production-variant names: 1-63 letters, digits and hyphens, starting with a
# letter or digit (AWS::SageMaker::Endpoint EndpointName, ProductionVariant VariantName).
SAGEMAKER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
# The CloudWatch dimension values of an Application Load Balancer and its target group, i.e. their
# ARNs' resource parts after "loadbalancer/" and ":" (the LoadBalancerFullName and TargetGroupFullName
# attributes): "app/<name>/<16 hex>" and "targetgroup/<name>/<16 hex>".
ALB_FULL_NAME = re.compile(r"^app/[A-Za-z0-9-]{1,32}/[0-9a-f]{16}\Z")
TARGET_GROUP_FULL_NAME = re.compile(r"^targetgroup/[A-Za-z0-9-]{1,32}/[0-9a-f]{16}\Z")
# An IAM role ARN (paths allowed).
IAM_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}\Z")
# A construct's address (constructs' Node.addr): "c8" and 40 hex digits, stable for its path.
CONSTRUCT_ADDRESS = re.compile(r"^c8[0-9a-f]{40}\Z")
# A CloudWatch Logs log group name: 1 to 512 characters of the API's pattern [\.\-_/#A-Za-z0-9]
# (CloudWatch Logs API Reference, CreateLogGroup logGroupName, read 2026-12-01).
LOG_GROUP_NAME = re.compile(r"^[A-Za-z0-9_\-/.#]{1,512}\Z")
# An absolute directory of plain segments: "/checkpoints", "/mnt/ckpt/" (never "/" or "a//b").
ABSOLUTE_DIRECTORY = re.compile(r"^(/[A-Za-z0-9._-]+)+/?\Z")
# S3 key prefix of safe path segments ending in "/": "neuron-compile-cache/".
S3_KEY_PREFIX = re.compile(r"^[A-Za-z0-9!_.()'-]+(/[A-Za-z0-9!_.()'-]+)*/\Z")
# S3 bucket names: 3-63 of a-z 0-9 . -, starting and ending with a letter or digit.
S3_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
EFS_FILE_SYSTEM_ID = re.compile(r"^fs-[0-9a-f]{8,40}\Z")
EFS_ACCESS_POINT_ID = re.compile(r"^fsap-[0-9a-f]{8,40}\Z")
KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+\Z")
BATCH_JOB_QUEUE_ARN = re.compile(r"^arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{12}:job-queue/[A-Za-z0-9_-]{1,128}\Z")
# With its revision (what CloudFormation's Ref returns): IAM matches SubmitJob on name:revision.
BATCH_JOB_DEFINITION_ARN = re.compile(
    r"^arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{12}:job-definition/[A-Za-z0-9_-]{1,128}:(\d+|\*)\Z"
)
# AWS Batch volume names.
BATCH_VOLUME_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}\Z")

# -- numbers -------------------------------------------------------------------------------------


def whole_number(
    field: str, value: object, *, minimum: int = 1, maximum: int | None = None, unit: str = ""
) -> int:
    """An ``int`` (never a ``bool``) within ``[minimum, maximum]``; ``unit`` words the message
    ("whole seconds >= 1") where a bare number would be ambiguous."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        what = f"whole {unit}" if unit else "a whole number"
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise NeuronConfigError(field, value, f"must be {what} {bound}")
    return value


def parameter_count(field: str, value: object) -> int:
    """A model's parameter count: a positive whole number, given as an ``int`` or as a float such as
    ``70e9`` (Python writes that as a float; JSON writers do too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NeuronConfigError(field, value, "give the model's parameter count, e.g. 70e9")
    if value <= 0 or value != int(value):
        raise NeuronConfigError(field, value, "must be a positive whole number, e.g. 70e9")
    return int(value)


def number(
    field: str,
    value: object,
    *,
    above: float | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    below: float | None = None,
) -> float:
    """A finite ``int`` or ``float`` (never a ``bool`` or NaN) within the given bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise NeuronConfigError(field, value, "must be a number")
    if math.isinf(value):
        raise NeuronConfigError(field, value, "must be a finite number")
    checks: list[tuple[float | None, bool, str]] = [
        (above, above is not None and value > above, "greater than"),
        (at_least, at_least is not None and value >= at_least, "at least"),
        (at_most, at_most is not None and value <= at_most, "at most"),
        (below, below is not None and value < below, "below"),
    ]
    for bound, holds, words in checks:
        if bound is not None and not holds:
            raise NeuronConfigError(field, value, f"must be {words} {bound:g}")
    return float(value)


def percentage(field: str, value: object) -> float:
    """A percentage in (0, 100]."""
    number(field, value)
    if not 0 < float(value) <= 100:  # type: ignore[arg-type]
        raise NeuronConfigError(field, value, "must be a percentage in (0, 100]")
    return float(value)  # type: ignore[arg-type]


# -- strings -------------------------------------------------------------------------------------


def matching(
    field: str, value: object, pattern: re.Pattern[str], what: str | None = None, *, fix: str | None = None
) -> str:
    """A string that ``pattern`` matches; the error says it ``must be <what>``, or ``fix`` verbatim.

    Give one of ``what`` and ``fix``: with ``fix``, ``what`` would never be read.
    """
    if (what is None) == (fix is None):
        raise TypeError("matching() takes what= or fix=, exactly one of them")
    if not isinstance(value, str) or not pattern.match(value):
        raise NeuronConfigError(field, value, fix if fix is not None else f"must be {what}")
    return value


_T = TypeVar("_T")


def choice(field: str, value: object, choices: Iterable[_T]) -> _T:
    """One of ``choices``."""
    options = list(choices)
    if value not in options:
        raise NeuronConfigError(field, value, f"must be one of {one_of(options)}")
    return value  # type: ignore[return-value]


def region(field: str, value: object) -> str:
    """A concrete region code; an unresolved token cannot be checked at synthesis."""
    return matching(
        field,
        value,
        REGION,
        fix="give a concrete region code such as us-east-2 (an unresolved token cannot be checked "
        "at synth time; `cdk-neuron preflight` checks the live account)",
    )


@functools.cache
def known_regions() -> frozenset[str]:
    """Every Region of every partition that the installed botocore knows.

    Read from botocore's own partition data (``botocore/data/partitions.json``, the list the AWS SDKs
    resolve Region names against: https://github.com/boto/botocore/blob/develop/botocore/data/partitions.json,
    "partitions.json", read 2026-12-02; the Regions it holds are those AWS lists in "AWS Regions",
    https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html, read
    2026-12-02). boto3 is a dependency of cdk-neuron, so the list is always installed, offline; a
    Region newer than the installed botocore is known after ``pip install -U boto3``.
    """
    # The file is read where botocore is installed, without importing botocore: the offline
    # commands (plan, cost) start without it (tests/test_cli_offline.py).
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("botocore (a dependency of cdk-neuron, through boto3) is not installed")
    data = Path(next(iter(spec.submodule_search_locations)), "data", "partitions.json")
    partitions = json.loads(data.read_text())["partitions"]
    return frozenset(name for partition in partitions for name in partition["regions"])


def known_region(field: str, value: object) -> str:
    """A Region that exists: the shape of :data:`REGION` and a name in :func:`known_regions`."""
    name = matching(field, value, REGION, "an AWS Region name such as us-east-1")
    if name not in known_regions():
        close = difflib.get_close_matches(name, sorted(known_regions()), n=3)
        hint = f"did you mean {one_of(close)}? " if close else ""
        raise NeuronConfigError(
            field,
            value,
            f"no such AWS Region; {hint}(botocore's partition data lists every Region; "
            "a Region newer than the installed boto3 is known after pip install -U boto3)",
        )
    return name


def az_id(field: str, value: object) -> str:
    """An AZ ID (``use1-az4``), not an AZ name."""
    return matching(
        field,
        value,
        AZ_ID,
        fix="give an AZ ID such as use1-az4; AZ names (us-east-1a) map to different AZs in each account",
    )


# The one rule for container images, used by cdk.json's job_image, BatchTrainingCluster(job_image=)
# and every serving engine image (ContainerImage), and stated once in the README's security table:
# a floating tag lets every node of a multi-node job, or every instance of a fleet, pull different
# code, and a job resumed from a checkpoint run other code than the one that wrote it.
UNPINNED_TAGS = frozenset({"latest"})
IMAGE_PINNING_FIX = (
    "pin the image by an explicit version tag (never 'latest') or by digest, e.g. "
    "'.../pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04' or '...@sha256:<64 hex>'"
)


def _names_one_version(tag: object) -> bool:
    return isinstance(tag, str) and IMAGE_TAG.match(tag) is not None and tag.lower() not in UNPINNED_TAGS


def pinned_tag(field: str, value: object) -> str:
    """An image tag that names one version: well formed, and not ``latest`` in any case."""
    if not _names_one_version(value):
        raise NeuronConfigError(field, value, IMAGE_PINNING_FIX)
    return value  # type: ignore[return-value]


def pinned_image(field: str, value: object) -> str:
    """An image reference pinned by tag or digest: ``[registry/]repository:tag`` or ``...@sha256:...``.

    The registry is optional here (``public.ecr.aws/...``, ``docker.io/...`` and Docker Hub short
    names all pass); callers that need an ECR host check :data:`IMAGE_URI` as well. The error names
    the whole reference given, not the tag inside it.
    """
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise NeuronConfigError(field, value, "give an image URI: " + IMAGE_PINNING_FIX)
    name, at, digest = value.partition("@")
    if at:
        if not name or not SHA256.match(digest.removeprefix("sha256:")) or not digest.startswith("sha256:"):
            raise NeuronConfigError(field, value, IMAGE_PINNING_FIX)
        return value
    # A colon belongs to the registry host (its port, in the first segment) or before the tag (in the
    # last); anywhere else the reference is malformed.
    *path, last = name.split("/")
    _, colon, tag = last.partition(":")
    if any(":" in segment for segment in path[1:]) or not colon or not _names_one_version(tag):
        raise NeuronConfigError(field, value, IMAGE_PINNING_FIX)
    return value


def ecr_region(registry: str) -> str | None:
    """The region of an ECR registry host, or None for any other registry."""
    match = ECR_REGISTRY.match(registry)
    return match["region"] if match else None


__all__ = [
    "ABSOLUTE_DIRECTORY",
    "ACCOUNT",
    "ALB_FULL_NAME",
    "AZ_ID",
    "BATCH_JOB_DEFINITION_ARN",
    "BATCH_JOB_QUEUE_ARN",
    "BATCH_VOLUME_NAME",
    "CERTIFICATE_ARN",
    "CONSTRUCT_ADDRESS",
    "ECR_REGISTRY",
    "EFS_ACCESS_POINT_ID",
    "EFS_FILE_SYSTEM_ID",
    "EMAIL",
    "ENVIRONMENT_VARIABLE",
    "HF_MODEL_ID",
    "IAM_ROLE_ARN",
    "IMAGE_PINNING_FIX",
    "IMAGE_TAG",
    "IMAGE_URI",
    "KMS_KEY_ARN",
    "LOG_GROUP_NAME",
    "REGION",
    "RELEASE_VERSION",
    "RESERVATION_ID",
    "RESOURCE_GROUP_ARN",
    "S3_BUCKET_NAME",
    "S3_KEY_PREFIX",
    "S3_PREFIX_URI",
    "SAGEMAKER_NAME",
    "SECRET",
    "SECURITY_GROUP_ID",
    "SHA256",
    "TARGET_GROUP_FULL_NAME",
    "UNPINNED_TAGS",
    "az_id",
    "choice",
    "ecr_region",
    "known_region",
    "known_regions",
    "matching",
    "number",
    "parameter_count",
    "percentage",
    "pinned_image",
    "pinned_tag",
    "region",
    "whole_number",
]
