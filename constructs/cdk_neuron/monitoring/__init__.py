"""Neuron observability: node metrics, alarms, dashboards and the SNS topic that pages.

- :mod:`~cdk_neuron.monitoring.metrics`: the namespace, dimensions and metric names (pure).
- :mod:`~cdk_neuron.monitoring.node_agent`: the publisher that runs on every node (stdlib + boto3).
- :mod:`~cdk_neuron.monitoring.publisher`: renders it into user data (pure).
- :mod:`~cdk_neuron.monitoring.thresholds`: :class:`MonitoringThresholds` (pure).
- ``NeuronMonitoring``: the construct (imports ``aws_cdk``; loaded on first use, so the pure
  modules stay importable without it).
"""

from __future__ import annotations

from cdk_neuron.monitoring.metrics import DEFAULT_NAMESPACE, NEURON_METRICS, NeuronMetric
from cdk_neuron.monitoring.publisher import node_setup_commands
from cdk_neuron.monitoring.thresholds import MonitoringThresholds

__all__ = [
    "DEFAULT_NAMESPACE",
    "NEURON_METRICS",
    "MonitoringThresholds",
    "NeuronMetric",
    "node_setup_commands",
]
