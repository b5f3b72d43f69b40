"""MonitoringStack: Neuron metrics from every node, alarms that page, one dashboard per environment."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from cdk_neuron.config import EnvironmentConfig
from cdk_neuron.monitoring import NeuronMonitoring
from stacks.network_stack import removal_policy_of
from stacks.pinned import PinnedAzStack
from stacks.serving_stack import ServingStack
from stacks.training_stack import TrainingStack


class MonitoringStack(PinnedAzStack):
    """``NeuronMonitoring`` over the environment's cluster, fleet and checkpoint store.

    It installs the metrics publisher on the training and EC2 serving nodes (their launch
    templates live in those stacks) and alarms on all three; outputs the alarm topic and dashboard.

    This stack reads the others through strong references (``Fn::ImportValue``), unlike the rest of
    the app (weak, ``Fn::GetStackOutput``): its alarms take the load balancer's and target group's
    names apart with ``Fn::Split``/``Fn::Join``, and cfn-lint cannot type-check ``Fn::GetStackOutput``
    inside those (E1022). The cost: a change that replaces the fleet's load balancer must first be
    deployed with this stack's alarms detached, as with any export in use.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: EnvironmentConfig,
        training: TrainingStack,
        serving: ServingStack,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, config=config, **kwargs)
        cdk.CrossStackReferences.of(self).consume(cdk.ReferenceStrength.STRONG)
        self.monitoring = NeuronMonitoring(
            self,
            "Monitoring",
            environment=config.name,
            cluster=training.cluster,
            fleet=serving.fleet,
            checkpoints=training.checkpoints,
            alarm_email=config.monitoring.alarm_email,
            removal_policy=removal_policy_of(config),
        )
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        cdk.CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
