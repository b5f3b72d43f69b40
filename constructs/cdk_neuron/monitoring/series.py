"""CloudWatch metrics and metric-math expressions shared by the constructs, the alarms and the dashboard.

Every function returns an ``IMetric``; none creates a construct. The training clusters' and the
checkpoint store's ``metric_*()`` methods build their series here, and the alarms and dashboard
call those methods, so a metric is defined once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw

from cdk_neuron.monitoring.metrics import (
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

if TYPE_CHECKING:  # the fleets read their Neuron series from here: import them for types only
    from cdk_neuron.serving.ec2_fleet import Ec2FleetMetrics
    from cdk_neuron.serving.sagemaker_fleet import SageMakerFleetMetrics


@dataclass(frozen=True)
class AlbServing:
    """A fleet behind an Application Load Balancer: its metrics are the fleet's ``metric_*()``."""

    fleet: Ec2FleetMetrics


@dataclass(frozen=True)
class SageMakerServing:
    """A fleet that is one SageMaker endpoint variant: its metrics are the fleet's ``metric_*()``."""

    fleet: SageMakerFleetMetrics


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


def alb_error_rate(fleet: Ec2FleetMetrics, *, period: cdk.Duration) -> cw.MathExpression:
    """Percent of requests answered 5xx, by the targets or by the load balancer itself.

    Load-balancer 5xx are added to the denominator as well: requests the ALB rejects before it
    picks a target (503 when no target is healthy) are not in ``RequestCount`` (ALB CloudWatch
    metrics reference), and they are exactly the requests a dead fleet produces.
    """
    return cw.MathExpression(
        expression=(
            "IF(FILL(requests, 0) + FILL(elb5xx, 0) > 0, "
            "100 * (FILL(target5xx, 0) + FILL(elb5xx, 0)) / (FILL(requests, 0) + FILL(elb5xx, 0)), 0)"
        ),
        using_metrics={
            "requests": fleet.metric_request_count(period=period),
            "target5xx": fleet.metric_http_code_target_5xx(period=period),
            "elb5xx": fleet.metric_http_code_elb_5xx(period=period),
        },
        label="5xx (% of requests)",
        period=period,
    )


def sagemaker_error_rate(fleet: SageMakerFleetMetrics, *, period: cdk.Duration) -> cw.MathExpression:
    """Percent of invocations that failed with a 5xx (model or container errors)."""
    return cw.MathExpression(
        expression="IF(FILL(invocations, 0) > 0, 100 * FILL(errors5xx, 0) / FILL(invocations, 0), 0)",
        using_metrics={
            "invocations": fleet.metric_invocations(period=period, label="Invocations (Sum)"),
            "errors5xx": fleet.metric_invocation_5xx_errors(period=period, label="Invocation5XXErrors (Sum)"),
        },
        label="5xx (% of invocations)",
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
    "AlbServing",
    "NeuronSeries",
    "SageMakerServing",
    "alb_error_rate",
    "batch_job_state_changes",
    "efs",
    "efs_throughput_utilization",
    "neuron",
    "neuron_by_instance",
    "sagemaker_error_rate",
]
