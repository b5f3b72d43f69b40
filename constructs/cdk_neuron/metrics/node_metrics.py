"""NodeMetrics: the option that makes a workload's own nodes publish Neuron metrics (plain Python).

A training cluster (:class:`~cdk_neuron.training.BatchTrainingCluster`,
:class:`~cdk_neuron.training.AutoScalingTrainingCluster`) or an
:class:`~cdk_neuron.serving.Ec2InferenceFleet` given ``node_metrics=NodeMetrics(environment="prod")``
installs the node publisher (``node_programs/files/monitoring``: ``neuron_publisher.py``, its systemd
unit and setup) on its nodes and lets its node role publish into ``namespace`` only.
:class:`~cdk_neuron.monitoring.NeuronMonitoring` then only reads those metrics: it never changes
the workloads it watches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.metrics.names import DEFAULT_NAMESPACE, WORKLOADS, Workload, metric_table

# Also a CloudWatch dashboard name part and a dimension value: keep to what both accept.
ENVIRONMENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# CloudWatch namespaces: up to 255 printable ASCII characters; "AWS/" is reserved for AWS services.
NAMESPACE = re.compile(r"^[A-Za-z0-9.\-_/#:]{1,255}$")

PUBLISHER_CONFIG_FILE = "publisher.json"
"""Settings file (under /etc/cdk-neuron) whose presence makes a node start the publisher."""
NEURON_MONITOR = "/opt/aws/neuron/bin/neuron-monitor"
NEURON_MONITOR_CONFIG = "/opt/cdk-neuron/monitoring/neuron-monitor.json"

_GIB = 2**30


def check_environment(value: object, field: str = "environment") -> str:
    if not isinstance(value, str) or not ENVIRONMENT_NAME.match(value):
        raise NeuronConfigError(field, value, "use 1-64 letters, digits, '-' or '_' (it names the dashboard)")
    return value


def check_namespace(value: object, field: str = "namespace") -> str:
    if not isinstance(value, str) or not NAMESPACE.match(value) or value.startswith("AWS/"):
        raise NeuronConfigError(
            field,
            value,
            "use up to 255 letters, digits or . - _ / # :, not starting with 'AWS/' (reserved for AWS)",
        )
    return value


@dataclass(frozen=True)
class NodeMetrics:
    """Where a workload's nodes publish Neuron metrics.

    :param environment: the ``Environment`` dimension, e.g. ``"prod"`` (also the dashboard's name part).
    :param namespace: CloudWatch namespace. Default ``"CdkNeuron"``.
    """

    environment: str
    namespace: str = DEFAULT_NAMESPACE

    def __post_init__(self) -> None:
        check_environment(self.environment)
        check_namespace(self.namespace)

    def publisher_config(self, *, workload: Workload, instance_type: str) -> dict[str, Any]:
        """The publisher's config file. Core count and HBM come from the catalog for ``instance_type``."""
        if workload not in WORKLOADS:
            raise NeuronConfigError("workload", workload, f"use one of {one_of(WORKLOADS)}")
        instance = get_instance(instance_type)
        return {
            "namespace": self.namespace,
            "environment": self.environment,
            "workload": workload,
            "neuron_cores": instance.neuron_cores,
            "hbm_bytes": instance.hbm_gib * _GIB,
            "metrics": metric_table(),
            "neuron_monitor": NEURON_MONITOR,
            "neuron_monitor_config": NEURON_MONITOR_CONFIG,
        }

    def settings_files(self, *, workload: Workload, instance_type: str) -> dict[str, str]:
        """``{"publisher.json": ...}`` for a node's user data (compact JSON, one line)."""
        config = self.publisher_config(workload=workload, instance_type=instance_type)
        return {PUBLISHER_CONFIG_FILE: json.dumps(config, separators=(",", ":"), sort_keys=True) + "\n"}


__all__ = [
    "ENVIRONMENT_NAME",
    "NAMESPACE",
    "NEURON_MONITOR",
    "NEURON_MONITOR_CONFIG",
    "PUBLISHER_CONFIG_FILE",
    "NodeMetrics",
    "check_environment",
    "check_namespace",
]
