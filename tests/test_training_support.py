"""Stacks the training-cluster tests share (this module holds no tests).

Each stack has an explicit env and pinned AZ names, because an env-specific stack otherwise looks its
AZs up in the account (AWS CDK v2 Developer Guide, "Context values and the AWS CDK",
https://docs.aws.amazon.com/cdk/v2/guide/context.html): a VPC with a public and a private-with-egress
subnet group in two AZs, the cluster in the first AZ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from cdk_neuron.training import TrainingClusterBase
from cdk_support import TEST_ACCOUNT, make_app, nag_violations

ZONES = {"us-east-1": ["us-east-1a", "us-east-1b"], "us-east-2": ["us-east-2a", "us-east-2b"]}
ECR_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.5.1-neuronx-py310-sdk2.21.0-ubuntu22.04"
PUBLIC_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.5.1-neuronx-py310-sdk2.21.0-ubuntu22.04"


class PinnedStack(cdk.Stack):
    """A stack whose AZ names are fixed, so subnets, EFS and the AZ checks see real names."""

    def __init__(self, scope: cdk.App, id: str, *, region: str) -> None:
        super().__init__(scope, id, env=cdk.Environment(account=TEST_ACCOUNT, region=region))
        self._zones = ZONES[region]
        cdk.Validations.of(self).acknowledge(
            cdk.Acknowledgment(
                id="CloudFormation-Validate::W3010",
                reason="Test stacks pin AZ names on purpose (no credentials for the AZ lookup).",
            )
        )

    @property
    def availability_zones(self) -> list[str]:
        return list(self._zones)


def network(stack: PinnedStack) -> ec2.Vpc:
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        availability_zones=stack.availability_zones,
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC),
            ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        ],
    )
    reason = "Test fixture VPC standing in for the application's network stack; not part of the library."
    for rule in (
        "AwsSolutions-VPC7",
        "NIST.800.53.R5-VPCFlowLogsEnabled",
        "NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW",
        "NIST.800.53.R5-VPCSubnetAutoAssignPublicIpDisabled",
    ):
        cdk.Validations.of(vpc).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))
    return vpc


def first_zone(stack: PinnedStack) -> ec2.SubnetSelection:
    return ec2.SubnetSelection(
        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=[stack.availability_zones[0]]
    )


@dataclass
class Scenario:
    app: cdk.App
    stack: PinnedStack
    vpc: ec2.Vpc
    cluster: Any
    extras: dict[str, Any]
    _template: Template | None = None

    @property
    def template(self) -> Template:
        if self._template is None:
            self._template = Template.from_stack(self.stack)
        return self._template

    @property
    def json(self) -> dict[str, Any]:
        return self.template.to_json()  # type: ignore[no-any-return]

    def nag(self) -> list[str]:
        return nag_violations(self.app)

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        return self.template.find_resources(type_)  # type: ignore[no-any-return]

    def one(self, type_: str) -> dict[str, Any]:
        found = self.resources(type_)
        assert len(found) == 1, f"expected one {type_}, found {list(found)}"
        return next(iter(found.values()))["Properties"]  # type: ignore[no-any-return]

    def logical_id(self, construct: Any) -> str:
        return self.stack.resolve(self.stack.get_logical_id(construct.node.default_child))  # type: ignore[no-any-return]


def build(
    region: str,
    make: Callable[[PinnedStack, ec2.Vpc, dict[str, Any]], TrainingClusterBase],
) -> Scenario:
    app = make_app()
    stack = PinnedStack(app, "Training", region=region)
    vpc = network(stack)
    extras: dict[str, Any] = {}
    cluster = make(stack, vpc, extras)
    return Scenario(app=app, stack=stack, vpc=vpc, cluster=cluster, extras=extras)
