"""The pinned Neuron AMI release: its parameter, the checks on a release name, and the SSM look-ups
``cdk-neuron ami`` makes (against botocore's Stubber)."""

from __future__ import annotations

import json
import re

import boto3
import pytest
from botocore.stub import Stubber

from cdk_neuron import ami
from cdk_neuron.errors import NeuronConfigError

NEWER = "al2023-ami-ecs-neuron-hvm-2023.0.20261020-kernel-6.1-x86_64"


def test_the_pinned_release_resolves_through_its_own_parameter() -> None:
    assert ami.RELEASE == "al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64"
    assert ami.release_parameter() == (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/"
        "al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64/image_id"
    )
    assert "recommended" not in ami.release_parameter(NEWER)


@pytest.mark.parametrize(
    "bad",
    [
        "recommended",
        "ami-0123456789abcdef0",
        "al2023-ami-ecs-hvm-2023.0.20260918-kernel-6.1-x86_64",  # not the Neuron variant
        "al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-arm64",
        "al2023-ami-ecs-neuron-hvm-2023.0.202609-kernel-6.1-x86_64",
        None,
    ],
)
def test_anything_but_a_neuron_release_name_is_refused(bad: object) -> None:
    with pytest.raises(
        NeuronConfigError, match=rf"^ami_release={re.escape(repr(bad))}: give an ECS-optimized"
    ):
        ami.release_parameter(bad)  # type: ignore[arg-type]


def _ssm() -> tuple[object, Stubber]:
    client = boto3.client("ssm", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def test_newest_reads_the_recommended_metadata() -> None:
    client, stub = _ssm()
    value = {
        "image_name": NEWER,
        "image_id": "ami-0newer",
        "ecs_agent_version": "1.106.2",
        "os": "Amazon Linux 2023",
    }
    stub.add_response(
        "get_parameter",
        {"Parameter": {"Name": ami.RECOMMENDED, "Value": json.dumps(value), "Type": "String"}},
        {"Name": ami.RECOMMENDED},
    )
    with stub:
        assert ami.newest(client) == ami.Release(NEWER, "ami-0newer", "1.106.2")


def test_resolve_says_whether_a_release_is_published_in_the_region() -> None:
    client, stub = _ssm()
    stub.add_response(
        "get_parameter",
        {"Parameter": {"Name": ami.release_parameter(), "Value": "ami-0pinned", "Type": "String"}},
        {"Name": ami.release_parameter()},
    )
    stub.add_client_error(
        "get_parameter", "ParameterNotFound", "no", expected_params={"Name": ami.release_parameter(NEWER)}
    )
    with stub:
        assert ami.resolve(client, ami.RELEASE) == "ami-0pinned"
        assert ami.resolve(client, NEWER) is None
