"""One cdk.Stage per environment: network, training, serving and monitoring stacks."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from cdk_neuron.lifecycle.stacks import follow_replacements
from stacks.config import EnvironmentConfig
from stacks.monitoring_stack import MonitoringStack
from stacks.network_stack import NetworkStack
from stacks.pinned import PinnedAzStack
from stacks.serving_stack import ServingStack
from stacks.training_stack import TrainingStack

IDENTITY_TAGS = frozenset({"project", "environment"})
"""cdk.json tags that also reach the resources whose tags are create-only (CREATE_ONLY_TAGS)."""
CREATE_ONLY_TAGS = ("AWS::Batch::ComputeEnvironment", "AWS::EC2::PlacementGroup")
"""Resource types whose Tags the CloudFormation schemas list as create-only: any other cdk.json tag skips
them, so editing it replaces nothing (the launch templates still tag the instances)."""


class EnvironmentStage(cdk.Stage):
    """The stacks of one environment, named after it (``dev/Network`` deploys as ``dev-Network``).

    The account is the configured one, else ``$CDK_DEFAULT_ACCOUNT`` (set by the CDK CLI from your
    credentials), else the placeholder ``000000000000`` so that synthesis works on a machine with no
    credentials at all; never deploy a template synthesized with the placeholder.

    Stacks of environments that retain their data get termination protection as well.
    """

    STACK_IDS = ("Network", "Training", "Serving", "Monitoring")

    def __init__(self, scope: Construct, config: EnvironmentConfig) -> None:
        super().__init__(
            scope, config.name, env=cdk.Environment(account=config.resolve_account(), region=config.region)
        )
        self.config = config
        protect = config.removal_policy == "retain"
        self.network = NetworkStack(
            self,
            "Network",
            config=config,
            termination_protection=protect,
            description=f"cdk-neuron {config.name}: VPC pinned to AZ IDs {', '.join(config.az_ids)}",
        )
        self.training = TrainingStack(
            self,
            "Training",
            config=config,
            network=self.network,
            termination_protection=protect,
            description=f"cdk-neuron {config.name}: {config.training.instance_type} training cluster, "
            "checkpoint store and compile cache",
        )
        self.serving = ServingStack(
            self,
            "Serving",
            config=config,
            network=self.network,
            termination_protection=protect,
            description=f"cdk-neuron {config.name}: {config.serving.backend} inference fleet",
        )
        self.monitoring = MonitoringStack(
            self,
            "Monitoring",
            config=config,
            training=self.training,
            serving=self.serving,
            termination_protection=protect,
            description=f"cdk-neuron {config.name}: Neuron metrics, alarms and dashboard",
        )
        for key, value in config.tags.items():
            # Tags are create-only on a Batch compute environment and a placement group: a tag edit
            # would replace them, and a replaced compute environment takes its running jobs with it
            # (no infrastructure-update grace). Only the identity tags reach them.
            cdk.Tags.of(self).add(
                key, value, exclude_resource_types=[] if key in IDENTITY_TAGS else list(CREATE_ONLY_TAGS)
            )
        for stack in self.stacks:
            stack.annotate_cdk_providers()
        # Monitoring reads the checkpoint file system, the fleet and the job queue across stacks:
        # when one of them is replaced, the output it reads is renamed, so its deploy follows.
        follow_replacements(self)

    @property
    def stacks(self) -> list[PinnedAzStack]:
        return [self.network, self.training, self.serving, self.monitoring]
