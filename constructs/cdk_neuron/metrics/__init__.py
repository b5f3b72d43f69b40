"""The metric vocabulary every construct speaks: names, the node publisher's option, series, options.

The bottom of the construct layers: the training clusters, the checkpoint store and the fleets build
their ``metric_*()`` methods from it, and :mod:`cdk_neuron.monitoring` (the facade on top) reads those
methods. It imports none of them.

- :mod:`~cdk_neuron.metrics.names`: the namespace, dimensions and every Neuron metric name (pure).
- :mod:`~cdk_neuron.metrics.node_metrics`: :class:`NodeMetrics`, the option with which a workload's
  own nodes run the publisher (``cdk_neuron/node_programs/files/monitoring``) (pure).
- :mod:`~cdk_neuron.metrics.series`: the CloudWatch metrics and metric-math expressions built from
  those names (imports ``aws_cdk``).
- :mod:`~cdk_neuron.metrics.options`: :class:`MetricOptions`, what every ``metric_*()`` method accepts
  (imports ``aws_cdk``).

The pure names load eagerly; the ``aws_cdk`` ones on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports
from cdk_neuron.metrics.names import DEFAULT_NAMESPACE, NEURON_METRICS, NeuronMetric
from cdk_neuron.metrics.node_metrics import NodeMetrics

if TYPE_CHECKING:
    from cdk_neuron.metrics.options import MathOptions, MetricOptions

__all__ = [
    "DEFAULT_NAMESPACE",
    "NEURON_METRICS",
    "MathOptions",
    "MetricOptions",
    "NeuronMetric",
    "NodeMetrics",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"MathOptions": "cdk_neuron.metrics.options", "MetricOptions": "cdk_neuron.metrics.options"},
    __all__,
)
