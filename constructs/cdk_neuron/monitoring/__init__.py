"""Neuron observability: node metrics, alarms, dashboards and the SNS topic that pages.

- :mod:`~cdk_neuron.monitoring.metrics`: the namespace, dimensions and metric names (pure).
- :mod:`~cdk_neuron.monitoring.node_metrics`: :class:`NodeMetrics`, the option with which a
  workload's own nodes run the publisher (``cdk_neuron/node_programs/files/monitoring``) (pure).
- :mod:`~cdk_neuron.monitoring.thresholds`: :class:`MonitoringThresholds` (pure).
- ``NeuronMonitoring``: the construct (imports ``aws_cdk``; loaded on first use, so the pure
  modules stay importable without it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cdk_neuron.monitoring.metrics import DEFAULT_NAMESPACE, NEURON_METRICS, NeuronMetric
from cdk_neuron.monitoring.node_metrics import NodeMetrics
from cdk_neuron.monitoring.thresholds import MonitoringThresholds

if TYPE_CHECKING:
    from cdk_neuron.monitoring.construct import NeuronMonitoring

_LAZY = {"NeuronMonitoring"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'cdk_neuron.monitoring' has no attribute {name!r}")
    value = getattr(importlib.import_module("cdk_neuron.monitoring.construct"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_NAMESPACE",
    "NEURON_METRICS",
    "MonitoringThresholds",
    "NeuronMetric",
    "NeuronMonitoring",
    "NodeMetrics",
]
