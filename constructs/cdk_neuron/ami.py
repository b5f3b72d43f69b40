"""The Neuron AMI the nodes boot, pinned to one release: a new AMI is a reviewable change, never drift.

The training nodes and the EC2 serving instances boot the ECS-optimized Amazon Linux 2023 Neuron AMI.
AWS publishes its current release under ``.../neuron/recommended``; resolved at every deployment, that
name lets any deploy, even one that changes only an alarm, pick up a newer AMI, which starts an AWS
Batch infrastructure update under running jobs or replaces a serving fleet. Each release also has a
parameter of its own, named after the release (``/aws/service/ecs/optimized-ami/amazon-linux-2023/
<variant>/<image name>/image_id``; the ECS developer guide, "Retrieving Amazon ECS-optimized Linux
AMI metadata", https://docs.aws.amazon.com/AmazonECS/latest/developerguide/retrieve-ecs-optimized_AMI.html,
read 2026-12-01, gives the format ``/aws/service/ecs/optimized-ami/amazon-linux-2023/<version>``):
the constructs resolve that one, so the AMI changes only when the release name in your code or
cdk.json does. ``cdk-neuron ami`` shows the pinned and the newest release and takes the newest.

Plain Python; :func:`machine_image` imports aws_cdk when called.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdk_neuron import validation

if TYPE_CHECKING:
    from aws_cdk import aws_ec2 as ec2

RELEASE = "al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64"
"""The pinned release: aws/amazon-ecs-ami release 20260918 (CHANGELOG.md at commit 009551b0, "al2, al2023
ami version: 20260918"), named as ``al2023neu.pkr.hcl`` builds it
(``${ami_name_prefix_al2023}-neuron-hvm-2023.0.${ami_version_al2023}${kernel_version_al2023}-x86_64``, with
the published prefix ``al2023-ami-ecs``). Read 2026-12-01."""
PARAMETER_PREFIX = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron"
RECOMMENDED = f"{PARAMETER_PREFIX}/recommended"
"""The newest release's metadata (JSON: ``image_name``, ``image_id``, ``ecs_agent_version``, ...)."""
RELEASE_NAME = re.compile(r"^al2023-ami-ecs-neuron-hvm-2023\.0\.\d{8}-kernel-\d+\.\d+-x86_64$")


def release_parameter(release: str = RELEASE) -> str:
    """The SSM parameter that holds ``release``'s AMI id in every Region it is published in."""
    return f"{PARAMETER_PREFIX}/{check_release('ami_release', release)}/image_id"


def check_release(field: str, value: object) -> str:
    return validation.matching(
        field,
        value,
        RELEASE_NAME,
        fix=f"give an ECS-optimized AL2023 Neuron AMI release name such as {RELEASE} (cdk-neuron ami shows the "
        "newest)",
    )


def machine_image(release: str = RELEASE) -> ec2.IMachineImage:
    """The AMI of ``release``, resolved by CloudFormation from its own SSM parameter at each deploy."""
    from aws_cdk import aws_ec2 as ec2

    return ec2.MachineImage.from_ssm_parameter(release_parameter(release), os=ec2.OperatingSystemType.LINUX)


@dataclass(frozen=True)
class Release:
    """A published release in one Region."""

    name: str
    image_id: str
    ecs_agent_version: str | None = None


def newest(ssm: Any) -> Release:
    """The release AWS recommends now, from ``.../neuron/recommended`` (an SSM client of the Region)."""
    value = json.loads(ssm.get_parameter(Name=RECOMMENDED)["Parameter"]["Value"])
    return Release(
        name=str(value["image_name"]),
        image_id=str(value["image_id"]),
        ecs_agent_version=value.get("ecs_agent_version"),
    )


def resolve(ssm: Any, release: str) -> str | None:
    """The AMI id ``release`` resolves to in the client's Region, or None when it is not published there."""
    try:
        return str(ssm.get_parameter(Name=release_parameter(release))["Parameter"]["Value"])
    except ssm.exceptions.ParameterNotFound:
        return None


__all__ = [
    "PARAMETER_PREFIX",
    "RECOMMENDED",
    "RELEASE",
    "RELEASE_NAME",
    "Release",
    "check_release",
    "machine_image",
    "newest",
    "release_parameter",
    "resolve",
]
