"""One CloudWatch dashboard per environment: alarms first, then Neuron, serving, training, storage.

Rows appear only for what the environment has (a serving-only environment has no Batch row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

from cdk_neuron.metrics import series
from cdk_neuron.metrics.names import (
    BATCH_JOB_STATUSES,
    CORE_UTILIZATION,
    DEVICE_MEMORY_UTILIZATION,
    ECC_CORRECTED,
    ECC_UNCORRECTED,
    EXECUTION_ERRORS,
    EXECUTION_LATENCY_P50,
    EXECUTION_LATENCY_P99,
    PERIOD_SECONDS,
    NeuronMetric,
    Workload,
)
from cdk_neuron.monitoring.thresholds import MonitoringThresholds
from cdk_neuron.serving.ec2_fleet import Ec2FleetMetrics
from cdk_neuron.serving.sagemaker_fleet import SageMakerFleetMetrics
from cdk_neuron.storage.checkpoint_store import ICheckpointStore

FIVE_MINUTES = cdk.Duration.minutes(5)
ONE_MINUTE = cdk.Duration.seconds(PERIOD_SECONDS)
_PERCENT_AXIS = cw.YAxisProps(min=0, max=100, label="%", show_units=False)


@dataclass(frozen=True)
class DashboardSources:
    """What the dashboard can show for one environment."""

    environment: str
    namespace: str
    workloads: Mapping[Workload, series.NeuronSeries]
    """The workloads that publish Neuron metrics, each with its series (in dashboard order)."""
    serving: Ec2FleetMetrics | SageMakerFleetMetrics | None
    """The fleet (built or imported), whose own ``metric_*()`` methods the serving row shows."""
    job_queue_arn: str | None
    checkpoints: ICheckpointStore | None


def build_dashboard(
    scope: Construct,
    id: str,
    *,
    sources: DashboardSources,
    dashboard_name: str,
    alarms: Sequence[cw.Alarm],
    thresholds: MonitoringThresholds,
) -> cw.Dashboard:
    dashboard = cw.Dashboard(
        scope,
        id,
        dashboard_name=dashboard_name,
        default_interval=cdk.Duration.hours(6),
    )
    dashboard.add_widgets(
        cw.TextWidget(
            markdown=(
                f"# cdk-neuron {sources.environment}\n"
                f"Neuron metrics come from every node (namespace `{sources.namespace}`, published by the "
                "`cdk-neuron-monitor` service); every alarm below notifies the environment's alarm topic."
            ),
            width=24,
            height=2,
        )
    )
    if alarms:
        dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24, height=3))
    if sources.workloads:
        dashboard.add_widgets(*_neuron_widgets(sources, thresholds))
    if isinstance(sources.serving, Ec2FleetMetrics):
        dashboard.add_widgets(*_alb_widgets(sources.serving, thresholds))
    elif isinstance(sources.serving, SageMakerFleetMetrics):
        dashboard.add_widgets(*_sagemaker_widgets(sources.serving, thresholds))
    row: list[cw.IWidget] = []
    if sources.job_queue_arn is not None:
        row.append(_batch_widget(sources.namespace, sources.job_queue_arn))
    if sources.checkpoints is not None:
        row.append(_efs_widget(sources.checkpoints, thresholds))
    if row:
        dashboard.add_widgets(*row)
    return dashboard


def _neuron_widgets(sources: DashboardSources, thresholds: MonitoringThresholds) -> list[cw.IWidget]:
    ns, env = sources.namespace, sources.environment

    def per_workload(metric: NeuronMetric, statistic: str | None = None) -> list[cw.IMetric]:
        return [neuron(metric, FIVE_MINUTES, statistic) for neuron in sources.workloads.values()]

    def graph(
        title: str,
        left: Sequence[cw.IMetric],
        *,
        percent: bool = False,
        annotations: Sequence[cw.HorizontalAnnotation] = (),
    ) -> cw.GraphWidget:
        return cw.GraphWidget(
            title=title,
            left=list(left),
            left_y_axis=_PERCENT_AXIS if percent else None,
            left_annotations=list(annotations) or None,
            width=8,
            height=6,
        )

    return [
        graph(
            "NeuronCore utilization (workload average)",
            per_workload(CORE_UTILIZATION),
            percent=True,
            annotations=[
                cw.HorizontalAnnotation(value=thresholds.idle_percent, label="idle"),
                cw.HorizontalAnnotation(value=thresholds.saturated_percent, label="saturated"),
            ],
        ),
        graph(
            "NeuronCore utilization by instance",
            [series.neuron_by_instance(ns, CORE_UTILIZATION, env, period=FIVE_MINUTES)],
            percent=True,
        ),
        graph(
            "Device memory (HBM), fullest node",
            per_workload(DEVICE_MEMORY_UTILIZATION),
            percent=True,
            annotations=[cw.HorizontalAnnotation(value=thresholds.device_memory_percent, label="alarm")],
        ),
        graph(
            "Neuron errors (count per 5 min)",
            [*per_workload(EXECUTION_ERRORS), *per_workload(ECC_CORRECTED), *per_workload(ECC_UNCORRECTED)],
        ),
        graph(
            "Neuron execution latency (s)",
            [*per_workload(EXECUTION_LATENCY_P50), *per_workload(EXECUTION_LATENCY_P99)],
        ),
        graph(
            "Nodes reporting",
            # One datapoint per node per minute, so the per-minute sample count is the node count.
            [neuron(CORE_UTILIZATION, ONE_MINUTE, "SampleCount") for neuron in sources.workloads.values()],
        ),
    ]


def _alb_widgets(fleet: Ec2FleetMetrics, thresholds: MonitoringThresholds) -> list[cw.IWidget]:
    return [
        cw.GraphWidget(
            title="Serving latency (target response time, s)",
            left=[
                fleet.metric_target_response_time(statistic=p, period=ONE_MINUTE)
                for p in ("p50", "p90", "p99")
            ],
            left_annotations=[
                cw.HorizontalAnnotation(value=thresholds.serving_p99_latency_seconds, label="p99 alarm")
            ],
            width=8,
            height=6,
        ),
        cw.GraphWidget(
            title="Serving 5xx",
            left=[
                fleet.metric_http_code_target_5xx(period=ONE_MINUTE),
                fleet.metric_http_code_elb_5xx(period=ONE_MINUTE),
            ],
            right=[fleet.metric_error_rate(period=ONE_MINUTE)],
            right_y_axis=cw.YAxisProps(min=0, label="%", show_units=False),
            width=8,
            height=6,
        ),
        cw.GraphWidget(
            title="Serving hosts",
            left=[
                fleet.metric_healthy_host_count(statistic="Minimum", period=ONE_MINUTE),
                fleet.metric_unhealthy_host_count(statistic="Maximum", period=ONE_MINUTE),
            ],
            width=8,
            height=6,
        ),
    ]


def _sagemaker_widgets(fleet: SageMakerFleetMetrics, thresholds: MonitoringThresholds) -> list[cw.IWidget]:
    return [
        cw.GraphWidget(
            title="Serving latency (model latency, microseconds)",
            left=[
                fleet.metric_model_latency(statistic=p, period=ONE_MINUTE, label=f"ModelLatency ({p})")
                for p in ("p50", "p90", "p99")
            ],
            left_annotations=[
                cw.HorizontalAnnotation(
                    value=thresholds.serving_p99_latency_seconds * 1_000_000, label="p99 alarm"
                )
            ],
            width=8,
            height=6,
        ),
        cw.GraphWidget(
            title="Serving 5xx",
            left=[
                fleet.metric_invocation_5xx_errors(period=ONE_MINUTE, label="Invocation5XXErrors (Sum)"),
                fleet.metric_invocation_4xx_errors(period=ONE_MINUTE, label="Invocation4XXErrors (Sum)"),
            ],
            right=[fleet.metric_error_rate(period=ONE_MINUTE)],
            right_y_axis=cw.YAxisProps(min=0, label="%", show_units=False),
            width=8,
            height=6,
        ),
        cw.GraphWidget(
            title="Serving invocations",
            left=[fleet.metric_invocations(period=ONE_MINUTE, label="Invocations (Sum)")],
            width=8,
            height=6,
        ),
    ]


def _batch_widget(namespace: str, job_queue_arn: str) -> cw.IWidget:
    return cw.GraphWidget(
        title="Training jobs: Batch state changes (per 5 min)",
        left=[
            series.batch_job_state_changes(namespace, job_queue_arn, status, period=FIVE_MINUTES)
            for status in BATCH_JOB_STATUSES
        ],
        width=12,
        height=6,
    )


def _efs_widget(checkpoints: ICheckpointStore, thresholds: MonitoringThresholds) -> cw.IWidget:
    def rate(metric: cw.IMetric, metric_name: str, id: str) -> cw.MathExpression:
        # ids must differ between the expressions of one graph
        return cw.MathExpression(
            expression=f"{id} / PERIOD({id})",
            using_metrics={id: metric},
            label=f"{metric_name} (bytes/s)",
            period=FIVE_MINUTES,
        )

    return cw.GraphWidget(
        title="Checkpoint EFS throughput",
        left=[
            rate(checkpoints.metric_data_read_io_bytes(period=FIVE_MINUTES), "DataReadIOBytes", "read"),
            rate(checkpoints.metric_data_write_io_bytes(period=FIVE_MINUTES), "DataWriteIOBytes", "written"),
        ],
        right=[checkpoints.metric_throughput_utilization(period=FIVE_MINUTES)],
        right_y_axis=_PERCENT_AXIS,
        right_annotations=[cw.HorizontalAnnotation(value=thresholds.efs_throughput_percent, label="alarm")],
        width=12,
        height=6,
    )


__all__ = ["DashboardSources", "build_dashboard"]
