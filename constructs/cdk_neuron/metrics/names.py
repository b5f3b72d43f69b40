"""The Neuron metric vocabulary: namespace, dimensions and every metric name, in one place.

Plain Python (no ``aws_cdk``). The node publisher (``node_programs/files/monitoring/neuron_publisher.py``)
learns these names from the config file :class:`~cdk_neuron.metrics.node_metrics.NodeMetrics` renders
from this module, and the constructs' ``metric_*()`` methods, the alarms and the dashboard read them
from here, so a rename cannot split producer from consumer.

Every node publishes each metric twice per period (:data:`PERIOD_SECONDS`):

- per instance, dimensions ``Environment, Workload, InstanceId``: for finding the sick node;
- per workload, dimensions ``Environment, Workload``: one series the whole fleet writes into.

Alarms watch the per-workload series. Instance ids change with every Auto Scaling or Batch
launch, and an alarm on a per-instance series would outlive its instance; CloudWatch aggregates
datapoints from many publishers into one series, so ``Average`` over the workload series is the
fleet average, ``Maximum`` the worst node, and ``SampleCount`` per period the number of nodes
reporting. A series only has data while nodes run: missing data means "no instances", which the
alarms treat as not breaching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_NAMESPACE = "CdkNeuron"
"""CloudWatch namespace of every metric the node publisher writes (and the IAM condition allows)."""

PERIOD_SECONDS = 60
"""neuron-monitor report period = publish period: one PutMetricData call per node per minute
(standard resolution; finer periods cost more calls and no alarm here needs them)."""

ENVIRONMENT_DIMENSION = "Environment"
WORKLOAD_DIMENSION = "Workload"
INSTANCE_DIMENSION = "InstanceId"

Workload = Literal["training", "serving"]
WORKLOADS: tuple[Workload, ...] = ("training", "serving")

Unit = Literal["Percent", "Bytes", "Count", "Seconds"]


@dataclass(frozen=True)
class NeuronMetric:
    """One metric the node publisher writes.

    ``key`` is the stable identifier the publisher's mapping produces; ``name`` is the CloudWatch
    metric name; ``statistic`` is the one that makes sense across a workload series.
    """

    key: str
    name: str
    unit: Unit
    statistic: str
    description: str


CORE_UTILIZATION = NeuronMetric(
    "core_utilization",
    "NeuronCoreUtilization",
    "Percent",
    "Average",
    "NeuronCore utilization averaged over every core of the instance (idle cores count as 0 %)",
)
DEVICE_MEMORY_USED = NeuronMetric(
    "device_memory_used",
    "NeuronDeviceMemoryUsed",
    "Bytes",
    "Maximum",
    "Neuron device memory (HBM) held by all Neuron runtimes on the instance",
)
DEVICE_MEMORY_UTILIZATION = NeuronMetric(
    "device_memory_utilization",
    "NeuronDeviceMemoryUtilization",
    "Percent",
    "Maximum",
    "Device memory used as a share of the instance's HBM",
)
EXECUTION_ERRORS = NeuronMetric(
    "execution_errors",
    "ExecutionErrors",
    "Count",
    "Sum",
    "Neuron runtime execution errors in the period, all error types summed",
)
EXECUTION_LATENCY_P50 = NeuronMetric(
    "execution_latency_p50",
    "ExecutionLatencyP50",
    "Seconds",
    "Average",
    "Median execution latency measured by the Neuron runtime (worst runtime on the instance)",
)
EXECUTION_LATENCY_P99 = NeuronMetric(
    "execution_latency_p99",
    "ExecutionLatencyP99",
    "Seconds",
    "Maximum",
    "p99 execution latency measured by the Neuron runtime (worst runtime on the instance)",
)
ECC_CORRECTED = NeuronMetric(
    "ecc_corrected",
    "EccCorrected",
    "Count",
    "Sum",
    "Corrected ECC events in Neuron device HBM and SRAM in the period",
)
ECC_UNCORRECTED = NeuronMetric(
    "ecc_uncorrected",
    "EccUncorrected",
    "Count",
    "Sum",
    "Uncorrected ECC events in Neuron device HBM and SRAM in the period: the device is failing",
)

NEURON_METRICS: tuple[NeuronMetric, ...] = (
    CORE_UTILIZATION,
    DEVICE_MEMORY_USED,
    DEVICE_MEMORY_UTILIZATION,
    EXECUTION_ERRORS,
    EXECUTION_LATENCY_P50,
    EXECUTION_LATENCY_P99,
    ECC_CORRECTED,
    ECC_UNCORRECTED,
)


# Batch job state transitions, counted by a metric filter on the job-state event log (AWS/Batch
# publishes no job-state metrics). One datapoint per transition into ``Status``.
BATCH_JOB_STATE_CHANGES = "BatchJobStateChanges"
STATUS_DIMENSION = "Status"
JOB_QUEUE_DIMENSION = "JobQueue"
BATCH_JOB_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED")
"""Job states in the order a job moves through them (AWS Batch "Job states")."""


def workload_dimensions(environment: str, workload: Workload) -> dict[str, str]:
    """Dimensions of the per-workload series every alarm watches."""
    return {ENVIRONMENT_DIMENSION: environment, WORKLOAD_DIMENSION: workload}


def metric_table() -> dict[str, list[str]]:
    """``key -> [name, unit]`` as the node publisher reads it from its config file."""
    return {m.key: [m.name, m.unit] for m in NEURON_METRICS}


__all__ = [
    "BATCH_JOB_STATE_CHANGES",
    "BATCH_JOB_STATUSES",
    "CORE_UTILIZATION",
    "DEFAULT_NAMESPACE",
    "DEVICE_MEMORY_USED",
    "DEVICE_MEMORY_UTILIZATION",
    "ECC_CORRECTED",
    "ECC_UNCORRECTED",
    "ENVIRONMENT_DIMENSION",
    "EXECUTION_ERRORS",
    "EXECUTION_LATENCY_P50",
    "EXECUTION_LATENCY_P99",
    "INSTANCE_DIMENSION",
    "JOB_QUEUE_DIMENSION",
    "NEURON_METRICS",
    "PERIOD_SECONDS",
    "STATUS_DIMENSION",
    "WORKLOADS",
    "WORKLOAD_DIMENSION",
    "NeuronMetric",
    "Workload",
    "metric_table",
    "workload_dimensions",
]
