"""CloudWatch metrics and metric-math expressions built from the metric vocabulary.

Every function returns an ``IMetric``; none creates a construct, and none knows a construct. The
training clusters', the fleets' and the checkpoint store's ``metric_*()`` methods build their series
here, and the alarms and dashboard (:mod:`cdk_neuron.monitoring`) call those methods, so a metric is
defined once.
"""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw

from cdk_neuron.metrics.names import (
    BATCH_JOB_STATE_CHANGES,
    ENVIRONMENT_DIMENSION,
    INSTANCE_DIMENSION,
    JOB_QUEUE_DIMENSION,
    STATUS_DIMENSION,
    WORKLOAD_DIMENSION,
    NeuronMetric,
    Workload,
    workload_dimensions,
)

NeuronSeries = Callable[[NeuronMetric, cdk.Duration, "str | None"], cw.IMetric]
"""A workload's Neuron metric series: ``(metric, period, statistic or None for the metric's own)``."""


def neuron(
    namespace: str,
    metric: NeuronMetric,
    environment: str,
    workload: Workload,
    *,
    period: cdk.Duration,
    statistic: str | None = None,
) -> cw.Metric:
    """The per-workload series of a Neuron metric, with the statistic that fits it unless given."""
    return cw.Metric(
        namespace=namespace,
        metric_name=metric.name,
        dimensions_map=workload_dimensions(environment, workload),
        statistic=statistic or metric.statistic,
        period=period,
        label=f"{workload} {metric.name} ({statistic or metric.statistic})",
    )


def neuron_by_instance(
    namespace: str, metric: NeuronMetric, environment: str, *, period: cdk.Duration
) -> cw.MathExpression:
    """One line per instance (search expression): for spotting the node that is different."""
    schema = f"{{{namespace},{ENVIRONMENT_DIMENSION},{INSTANCE_DIMENSION},{WORKLOAD_DIMENSION}}}"
    query = f'{schema} MetricName="{metric.name}" {ENVIRONMENT_DIMENSION}="{environment}"'
    return cw.MathExpression(
        expression=f"SEARCH('{query}', '{metric.statistic}', {int(period.to_seconds())})",
        label="",
        period=period,
    )


def efs(metric_name: str, file_system_id: str, *, statistic: str, period: cdk.Duration) -> cw.Metric:
    return cw.Metric(
        namespace="AWS/EFS",
        metric_name=metric_name,
        dimensions_map={"FileSystemId": file_system_id},
        statistic=statistic,
        period=period,
        label=f"{metric_name} ({statistic})",
    )


def efs_throughput_utilization(
    metered: cw.IMetric, permitted: cw.IMetric, *, period: cdk.Duration
) -> cw.MathExpression:
    """Metered throughput as a percentage of what EFS permits (the console's "Throughput utilization").

    ``metered``: ``MeteredIOBytes`` (Sum); ``permitted``: ``PermittedThroughput`` (Average). With
    Elastic throughput ``PermittedThroughput`` is the file system's maximum write throughput, the
    ceiling checkpoint saves run into (EFS user guide, CloudWatch metrics for Amazon EFS).
    """
    return cw.MathExpression(
        expression="100 * (metered / PERIOD(metered)) / permitted",
        using_metrics={"metered": metered, "permitted": permitted},
        label="Throughput used (% of permitted)",
        period=period,
    )


def batch_job_state_changes(
    namespace: str, job_queue_arn: str, status: str, *, period: cdk.Duration
) -> cw.Metric:
    return cw.Metric(
        namespace=namespace,
        metric_name=BATCH_JOB_STATE_CHANGES,
        dimensions_map={STATUS_DIMENSION: status, JOB_QUEUE_DIMENSION: job_queue_arn},
        statistic="Sum",
        period=period,
        label=status,
    )


__all__ = [
    "NeuronSeries",
    "batch_job_state_changes",
    "efs",
    "efs_throughput_utilization",
    "neuron",
    "neuron_by_instance",
]
