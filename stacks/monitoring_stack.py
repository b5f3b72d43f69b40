"""MonitoringStack: Neuron metrics from every node, alarms that page, one dashboard per environment."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from cdk_neuron.monitoring import NeuronMonitoring
from stacks.config import EnvironmentConfig
from stacks.pinned import PinnedAzStack, removal_policy_of
from stacks.serving_stack import ServingStack
from stacks.training_stack import TrainingStack


class MonitoringStack(PinnedAzStack):
    """``NeuronMonitoring`` over the environment's cluster, fleet and checkpoint store.

    It only reads: the training and EC2 serving nodes publish Neuron metrics because their own
    stacks give them ``NodeMetrics(environment=<name>)``. Outputs the alarm topic
    and the dashboard.
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
        self.monitoring = NeuronMonitoring(
            self,
            "Monitoring",
            environment=config.name,
            # A HyperPod cluster publishes no Neuron node metrics (its health agent reports to HyperPod).
            cluster=training.cluster if training.cluster.node_metrics is not None else None,
            fleet=serving.fleet,
            checkpoints=training.checkpoints,
            alarm_email=config.monitoring.alarm_email,
            removal_policy=removal_policy_of(config),
            # The names this app has deployed since alarms were named: keeping them keeps every
            # alarm and the dashboard in place (a new name would replace each one).
            alarm_name_prefix=f"cdk-neuron-{config.name}",
        )
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        cdk.CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
