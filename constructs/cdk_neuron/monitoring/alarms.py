"""The alarms: what pages, on which series, after how long.

Every alarm notifies the topic on ALARM and on OK, so the page resolves itself. Neuron alarms watch
the per-workload series (see :mod:`~cdk_neuron.metrics.names`), which only has data while nodes
run: missing data is "no instances" and never breaches. The ECC alarm is the exception to waiting:
one uncorrected error is enough.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron.metrics import series
from cdk_neuron.metrics.names import (
    CORE_UTILIZATION,
    DEVICE_MEMORY_UTILIZATION,
    ECC_UNCORRECTED,
    PERIOD_SECONDS,
    NeuronMetric,
    Workload,
)
from cdk_neuron.monitoring.thresholds import (
    ALARM_PERIOD_MINUTES,
    SERVING_PERIOD_MINUTES,
    MonitoringThresholds,
)
from cdk_neuron.serving.ec2_fleet import Ec2FleetMetrics
from cdk_neuron.serving.sagemaker_fleet import SageMakerFleetMetrics

GT = cw.ComparisonOperator.GREATER_THAN_THRESHOLD
GE = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
LT = cw.ComparisonOperator.LESS_THAN_THRESHOLD

NEURON_PERIOD = cdk.Duration.minutes(ALARM_PERIOD_MINUTES)
SERVING_PERIOD = cdk.Duration.minutes(SERVING_PERIOD_MINUTES)


def alarm_name(prefix: str, name: str) -> str:
    """The CloudWatch alarm name, the subject of every page: ``<prefix>-<name>``."""
    return f"{prefix}-{name}"


class AlarmSet:
    """Creates alarms under ``scope``, wires them to ``topic`` and remembers them by name.

    Each alarm is named :func:`alarm_name` with ``prefix`` (NeuronMonitoring's ``alarm_name_prefix``,
    unique per account and Region): the notification a page sends names it, so a generated id never
    stands where a reader needs the alarm's meaning.
    """

    def __init__(self, scope: Construct, topic: sns.ITopic, *, prefix: str) -> None:
        self._scope = scope
        self._action = cw_actions.SnsAction(topic)
        self._prefix = prefix
        self.alarms: dict[str, cw.Alarm] = {}

    def add(
        self,
        name: str,
        *,
        metric: cw.IMetric,
        threshold: float,
        comparison: cw.ComparisonOperator,
        periods: int,
        description: str,
    ) -> cw.Alarm:
        """An alarm that fires when ``periods`` consecutive periods breach."""
        alarm = cw.Alarm(
            self._scope,
            name,
            alarm_name=alarm_name(self._prefix, name),
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms[name] = alarm
        return alarm


def _periods(minutes: int, period_minutes: int) -> int:
    return minutes // period_minutes


# Every node writes one datapoint per publish period into the workload series, so the series'
# SampleCount over an alarm period counts nodes (metrics.names: PERIOD_SECONDS).
SAMPLES_PER_NODE = ALARM_PERIOD_MINUTES * 60 // PERIOD_SECONDS


def serving_idle_above_floor(
    neuron_series: series.NeuronSeries, *, idle_percent: float, min_capacity: int
) -> cw.MathExpression:
    """Instances above ``min_capacity`` while the fleet's NeuronCores are idle: 0 when busy or at the
    minimum (CloudWatch metric math IF, "Using math expressions with CloudWatch metrics", Amazon
    CloudWatch User Guide, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
    using-metric-math.html, read 2026-12-01)."""
    return cw.MathExpression(
        expression=f"IF(util < {idle_percent:g}, samples / {SAMPLES_PER_NODE} - {min_capacity}, 0)",
        using_metrics={
            "util": neuron_series(CORE_UTILIZATION, NEURON_PERIOD, None),
            "samples": neuron_series(CORE_UTILIZATION, NEURON_PERIOD, "SampleCount"),
        },
        label=f"idle instances above min_capacity {min_capacity}",
        period=NEURON_PERIOD,
    )


def add_neuron_alarms(
    alarms: AlarmSet,
    *,
    environment: str,
    workload: Workload,
    neuron_series: series.NeuronSeries,
    thresholds: MonitoringThresholds,
    min_capacity: int = 0,
) -> None:
    """Idle, device memory and uncorrected ECC for a workload; saturation for serving only
    (a training job is supposed to keep its cores busy). ``min_capacity``: the serving fleet's, whose
    idle instances never page (a fleet keeps them on purpose)."""
    title = workload.capitalize()

    def metric(m: NeuronMetric) -> cw.IMetric:
        return neuron_series(m, NEURON_PERIOD, None)

    if workload == "training":
        alarms.add(
            "TrainingCoresIdle",
            metric=metric(CORE_UTILIZATION),
            threshold=thresholds.idle_percent,
            comparison=LT,
            periods=_periods(thresholds.training_idle_minutes, ALARM_PERIOD_MINUTES),
            description=(
                f"{environment} training: NeuronCores below {thresholds.idle_percent:g} % on average for "
                f"{thresholds.training_idle_minutes} min while instances run: paying for idle accelerators. "
                "Check for a hung or finished job, or capacity left running."
            ),
        )
    else:
        alarms.add(
            "ServingCoresIdle",
            metric=serving_idle_above_floor(
                neuron_series, idle_percent=thresholds.idle_percent, min_capacity=min_capacity
            ),
            # Half an instance: a publisher's datapoint landing in the next period is not an instance.
            threshold=0.5,
            comparison=GT,
            periods=_periods(thresholds.serving_idle_minutes, ALARM_PERIOD_MINUTES),
            description=(
                f"{environment} serving: NeuronCores below {thresholds.idle_percent:g} % on average for "
                f"{thresholds.serving_idle_minutes} min with more instances than min_capacity {min_capacity}: "
                "paying for idle accelerators scale-in should have stopped. Check the scaling policy and "
                "max/min capacity."
            ),
        )
    if workload == "serving":
        alarms.add(
            f"{title}CoresSaturated",
            metric=metric(CORE_UTILIZATION),
            threshold=thresholds.saturated_percent,
            comparison=GT,
            periods=_periods(thresholds.saturated_minutes, ALARM_PERIOD_MINUTES),
            description=(
                f"{environment} serving: NeuronCores above {thresholds.saturated_percent:g} % on average for "
                f"{thresholds.saturated_minutes} min: scale-out is lagging (max capacity reached, capacity "
                "shortage, or a scaling metric that does not track Neuron load)."
            ),
        )
    alarms.add(
        f"{title}DeviceMemoryHigh",
        metric=metric(DEVICE_MEMORY_UTILIZATION),
        threshold=thresholds.device_memory_percent,
        comparison=GT,
        periods=_periods(thresholds.device_memory_minutes, ALARM_PERIOD_MINUTES),
        description=(
            f"{environment} {workload}: a node's Neuron device memory (HBM) above "
            f"{thresholds.device_memory_percent:g} % for {thresholds.device_memory_minutes} min: the next "
            "larger batch, sequence or model load will fail to allocate."
        ),
    )
    alarms.add(
        f"{title}EccUncorrected",
        metric=metric(ECC_UNCORRECTED),
        threshold=1,
        comparison=GE,
        periods=1,
        description=(
            f"{environment} {workload}: uncorrected ECC error on a Neuron device: results from that node "
            "cannot be trusted. Find it on the dashboard (EccUncorrected by instance) and replace it."
        ),
    )


def add_alb_alarms(
    alarms: AlarmSet, *, environment: str, fleet: Ec2FleetMetrics, thresholds: MonitoringThresholds
) -> None:
    periods = _periods(thresholds.serving_minutes, SERVING_PERIOD_MINUTES)
    alarms.add(
        "Serving5xxRate",
        metric=fleet.metric_error_rate(period=SERVING_PERIOD),
        threshold=thresholds.serving_5xx_percent,
        comparison=GT,
        periods=periods,
        description=(
            f"{environment} serving: more than {thresholds.serving_5xx_percent:g} % of requests answered 5xx "
            f"(targets or load balancer) for {thresholds.serving_minutes} min."
        ),
    )
    alarms.add(
        "ServingP99Latency",
        metric=fleet.metric_target_response_time(statistic="p99", period=SERVING_PERIOD),
        threshold=thresholds.serving_p99_latency_seconds,
        comparison=GT,
        periods=periods,
        description=(
            f"{environment} serving: p99 target response time above "
            f"{thresholds.serving_p99_latency_seconds:g} s for {thresholds.serving_minutes} min."
        ),
    )
    alarms.add(
        "ServingUnhealthyHosts",
        metric=fleet.metric_unhealthy_host_count(statistic="Maximum", period=SERVING_PERIOD),
        threshold=1,
        comparison=GE,
        periods=periods,
        description=(
            f"{environment} serving: at least one target failed its health checks for "
            f"{thresholds.serving_minutes} min (model server down or not loading)."
        ),
    )


def add_sagemaker_alarms(
    alarms: AlarmSet, *, environment: str, fleet: SageMakerFleetMetrics, thresholds: MonitoringThresholds
) -> None:
    """SageMaker reports no host health metric (it replaces failed instances itself) and runs no
    node publisher, so 5xx rate and latency are what an endpoint can be alarmed on."""
    periods = _periods(thresholds.serving_minutes, SERVING_PERIOD_MINUTES)
    alarms.add(
        "Serving5xxRate",
        metric=fleet.metric_error_rate(period=SERVING_PERIOD),
        threshold=thresholds.serving_5xx_percent,
        comparison=GT,
        periods=periods,
        description=(
            f"{environment} serving: more than {thresholds.serving_5xx_percent:g} % of endpoint invocations "
            f"failed with 5xx for {thresholds.serving_minutes} min."
        ),
    )
    alarms.add(
        "ServingP99Latency",
        # ModelLatency is reported in microseconds.
        metric=fleet.metric_model_latency(statistic="p99", period=SERVING_PERIOD, label="ModelLatency (p99)"),
        threshold=thresholds.serving_p99_latency_seconds * 1_000_000,
        comparison=GT,
        periods=periods,
        description=(
            f"{environment} serving: p99 model latency above {thresholds.serving_p99_latency_seconds:g} s "
            f"for {thresholds.serving_minutes} min."
        ),
    )


def add_efs_alarms(
    alarms: AlarmSet,
    *,
    environment: str,
    throughput_utilization: cw.IMetric,
    thresholds: MonitoringThresholds,
) -> None:
    """Throughput at the ceiling for longer than a checkpoint save should take.

    ``throughput_utilization``: the store's ``metric_throughput_utilization(period=NEURON_PERIOD)``.
    Not PercentIOLimit (the General Purpose mode operations limit, which checkpoint streams of large
    files do not approach) and not ClientConnections (it drops to zero whenever no job runs).
    """
    alarms.add(
        "CheckpointThroughputSaturated",
        metric=throughput_utilization,
        threshold=thresholds.efs_throughput_percent,
        comparison=GT,
        periods=_periods(thresholds.efs_throughput_minutes, ALARM_PERIOD_MINUTES),
        description=(
            f"{environment} checkpoints: EFS throughput above {thresholds.efs_throughput_percent:g} % of "
            f"what it permits for {thresholds.efs_throughput_minutes} min: checkpoint saves and data "
            "loading are throughput-bound and training stalls while they run."
        ),
    )


__all__ = ["AlarmSet", "add_alb_alarms", "add_efs_alarms", "add_neuron_alarms", "add_sagemaker_alarms"]
