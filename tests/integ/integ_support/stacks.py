"""The app, the suites' stacks and their network.

Every suite is one test-case stack (what is under test, with its own VPC) plus one assertion stack
(``integ-tests-alpha``'s ``DeployAssert``), both named from :func:`.settings.stack_name` and both in
the suite's Region. :class:`DestroyEverything` makes every resource of both deletable with the stack:
a run must leave nothing billing behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.integ_tests_alpha import IntegTest
from constructs import Construct, IConstruct

from cdk_neuron.storage import CheckpointStore
from integ_support.settings import Settings, stack_name

REPO_ROOT = Path(__file__).resolve().parents[3]
NEVER = events.Schedule.cron(minute="0", hour="5", day="1", month="1", year="2199")
"""The checkpoint stores' backup schedule in the suites: AWS Backup would run the plan daily at
05:00 UTC, and a recovery point in the vault would stop the stack from deleting it; this never fires
during a run."""
KMS_PENDING_WINDOW_DAYS = 7
"""The shortest waiting period KMS allows before it deletes a key scheduled for deletion."""


def integ_app(outdir: str | None = None) -> cdk.App:
    """An app with the feature flags of the project's cdk.json (what `cdk synth` of the app sees)."""
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    flags = {k: v for k, v in context.items() if k != "environments"}
    return cdk.App(context=flags, outdir=outdir)


@jsii.implements(cdk.IAspect)
class DestroyEverything:
    """Delete every resource with its stack, and KMS keys after the shortest waiting period.

    The constructs retain what holds data by default (checkpoint file systems, log groups, keys, the
    backup vault); in an integ stack nothing is worth keeping, and anything kept would bill on.
    """

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, cdk.CfnResource):
            node.apply_removal_policy(cdk.RemovalPolicy.DESTROY)
        if isinstance(node, kms.CfnKey):
            node.pending_window_in_days = KMS_PENDING_WINDOW_DAYS


class IntegStack(cdk.Stack):
    """A suite's stack: in the suite's Region, its "availability zones" the configured AZ IDs.

    As in the app's ``PinnedAzStack``: the VPC builds one subnet per AZ ID and
    :func:`pin_subnets_to_az_ids` rewrites each to ``AvailabilityZoneId``, so no template names an
    AZ name (they differ per account) and synthesis needs no AZ lookup.
    """

    def __init__(self, scope: Construct, id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, id, env=cdk.Environment(region=settings.region), **kwargs)
        self.settings = settings
        cdk.Aspects.of(self).add(DestroyEverything(), priority=cdk.AspectPriority.MUTATING)

    @property
    def availability_zones(self) -> list[str]:
        return list(self.settings.az_ids)


class IntegNetwork(Construct):
    """A VPC in the suite's two AZ IDs: private subnets with egress through one NAT gateway.

    Egress is needed: the nodes reach ECS, ECR, CloudWatch Logs and (serving) the Hugging Face Hub.
    S3 goes through the free gateway endpoint. One NAT gateway, not one per AZ: a test run does not
    need to survive an AZ outage.

    :ivar vpc: the VPC.
    :ivar private: the private subnets of both AZs.
    :ivar training: the private subnet of the training AZ (an EFA cluster needs one AZ).
    """

    def __init__(self, scope: Construct, id: str, *, settings: Settings) -> None:
        super().__init__(scope, id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr("10.90.0.0/16"),
            availability_zones=list(settings.az_ids),
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=19
                ),
                ec2.SubnetConfiguration(
                    name="Public",
                    subnet_type=ec2.SubnetType.PUBLIC,
                    cidr_mask=24,
                    map_public_ip_on_launch=False,
                ),
            ],
            restrict_default_security_group=True,
        )
        pin_subnets_to_az_ids(self.vpc)
        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        self.private = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        self.training = ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=[settings.training_az_id]
        )


def pin_subnets_to_az_ids(vpc: ec2.Vpc) -> None:
    """Replace every subnet's AvailabilityZone (here an AZ ID) with AvailabilityZoneId."""
    for subnet in [*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets]:
        cfn_subnet = subnet.node.default_child
        assert isinstance(cfn_subnet, ec2.CfnSubnet)
        cfn_subnet.availability_zone_id = subnet.availability_zone
        cfn_subnet.availability_zone = None


def checkpoint_store(scope: Construct, network: IntegNetwork) -> CheckpointStore:
    """A suite's checkpoint store: in the network's private subnets, deleted with the stack, backed up
    on a schedule that never fires during a run (:data:`NEVER`)."""
    return CheckpointStore(
        scope,
        "Checkpoints",
        vpc=network.vpc,
        vpc_subnets=network.private,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        backup_schedule=NEVER,
        backup_retention=cdk.Duration.days(1),
    )


def emptied_bucket(scope: Construct, id: str, *, bucket_name: str | None = None) -> s3.Bucket:
    """An SSE-S3, SSL-only bucket that CloudFormation empties before deleting it (ALB access logs,
    compiled artifacts)."""
    return s3.Bucket(
        scope,
        id,
        bucket_name=bucket_name,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        auto_delete_objects=True,
    )


@dataclass(frozen=True)
class Suite:
    """A suite's ``IntegTest``, its test-case stack and its assertion stack."""

    integ: IntegTest
    stack: IntegStack
    assertion_stack: cdk.Stack


def integ_test(app: cdk.App, suite: str, stack: IntegStack) -> Suite:
    """The ``IntegTest`` of a suite, with its assertion stack in the same Region.

    The runner deploys the test stack, then the assertion stack (assertions run as custom resources
    during that deployment), then destroys both, whatever happened.
    """
    assertions = cdk.Stack(
        app, stack_name(suite, "Assert"), env=cdk.Environment(region=stack.settings.region)
    )
    cdk.Aspects.of(assertions).add(DestroyEverything(), priority=cdk.AspectPriority.MUTATING)
    integ = IntegTest(
        app,
        stack_name(suite, "Test"),
        test_cases=[stack],
        assertion_stack=assertions,
        regions=[stack.settings.region],
        # Snapshots of stacks that run accelerators: an update workflow would deploy twice.
        stack_update_workflow=False,
        diff_assets=False,
    )
    return Suite(integ=integ, stack=stack, assertion_stack=assertions)


PROBE_DIR = Path(__file__).resolve().parent / "probe"
PROBE_TIMEOUT = cdk.Duration.minutes(3)


def vpc_probe(scope: Construct, id: str, *, network: IntegNetwork) -> Any:
    """The probe Lambda (``probe/handler.py``) in the private subnets; HTTP out to the VPC only.

    Its log group belongs to the stack, so deleting the stack deletes the logs too (a log group the
    Lambda service created on first use would outlive it).
    """
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_logs as logs

    group = ec2.SecurityGroup(
        scope,
        f"{id}SecurityGroup",
        vpc=network.vpc,
        description="integ probe: HTTP to the VPC",
        allow_all_outbound=False,
    )
    group.add_egress_rule(
        ec2.Peer.ipv4(network.vpc.vpc_cidr_block), ec2.Port.tcp(80), "the fleet's load balancer"
    )
    log_group = logs.LogGroup(
        scope, f"{id}Logs", retention=logs.RetentionDays.ONE_WEEK, removal_policy=cdk.RemovalPolicy.DESTROY
    )
    return lambda_.Function(
        scope,
        id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        architecture=lambda_.Architecture.ARM_64,
        handler="handler.handler",
        code=lambda_.Code.from_asset(str(PROBE_DIR), exclude=["__pycache__", "*.pyc"]),
        timeout=PROBE_TIMEOUT,
        memory_size=256,
        vpc=network.vpc,
        vpc_subnets=network.private,
        security_groups=[group],
        log_group=log_group,
        description="cdk-neuron integ: chat completions from inside the VPC",
    )
