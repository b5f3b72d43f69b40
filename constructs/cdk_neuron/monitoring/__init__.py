"""Neuron observability: alarms, dashboards and the SNS topic that pages, on top of every workload.

The facade of the construct layers: :class:`NeuronMonitoring` only reads the training clusters', the
fleets' and the checkpoint store's ``metric_*()`` methods; nothing below imports it. The vocabulary
those methods speak is :mod:`cdk_neuron.metrics`, whose public names are re-exported here.

- :mod:`~cdk_neuron.monitoring.thresholds`: :class:`MonitoringThresholds` (pure).
- ``NeuronMonitoring``: the construct (imports ``aws_cdk``; loaded on first use, so the pure
  modules stay importable without it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.metrics.names import DEFAULT_NAMESPACE, NEURON_METRICS, NeuronMetric
    from cdk_neuron.metrics.node_metrics import NodeMetrics
    from cdk_neuron.monitoring.construct import NeuronMonitoring
    from cdk_neuron.monitoring.thresholds import MonitoringThresholds

_LAZY: dict[str, str] = {
    "DEFAULT_NAMESPACE": "cdk_neuron.metrics.names",
    "NEURON_METRICS": "cdk_neuron.metrics.names",
    "NeuronMetric": "cdk_neuron.metrics.names",
    "NodeMetrics": "cdk_neuron.metrics.node_metrics",
    "MonitoringThresholds": "cdk_neuron.monitoring.thresholds",
    "NeuronMonitoring": "cdk_neuron.monitoring.construct",
}

__all__ = [
    "DEFAULT_NAMESPACE",
    "NEURON_METRICS",
    "MonitoringThresholds",
    "NeuronMetric",
    "NeuronMonitoring",
    "NodeMetrics",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
