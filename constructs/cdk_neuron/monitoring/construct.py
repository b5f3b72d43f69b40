"""NeuronMonitoring: Neuron metrics from every node, alarms that page, one dashboard per environment."""

from __future__ import annotations

import re

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron import _cdk_values
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics import series
from cdk_neuron.metrics.names import DEFAULT_NAMESPACE, NeuronMetric, Workload
from cdk_neuron.metrics.node_metrics import NodeMetrics, check_environment, check_namespace
from cdk_neuron.monitoring import alarms as alarm_rules
from cdk_neuron.monitoring import event_rules
from cdk_neuron.monitoring.dashboard import DashboardSources, build_dashboard
from cdk_neuron.monitoring.thresholds import ALARM_PERIOD_MINUTES, MonitoringThresholds
from cdk_neuron.monitoring.topic import alarm_key, alarm_topic
from cdk_neuron.serving.ec2_fleet import Ec2FleetMetrics, IEc2InferenceFleet
from cdk_neuron.serving.sagemaker_fleet import ISageMakerInferenceFleet, SageMakerFleetMetrics
from cdk_neuron.storage import CheckpointStore
from cdk_neuron.storage.checkpoint_store import ICheckpointStore, is_checkpoint_store
from cdk_neuron.training.batch_cluster import is_batch_training_cluster
from cdk_neuron.training.cluster import ITrainingCluster, is_training_cluster
from cdk_neuron.validation import EMAIL

DEFAULT_THRESHOLDS = MonitoringThresholds()  # frozen, so one shared default is safe
NO_NODE_METRICS_WARNING_ID = "@cdk-neuron/monitoring:noNodeMetrics"


class NeuronMonitoring(Construct):
    """Neuron metrics, alarms, an alarm topic and a dashboard for one environment.

    It only reads: it changes nothing in the workloads it watches. Neuron node metrics come from the
    workloads themselves: a ``cluster`` or ``Ec2InferenceFleet`` built with
    ``node_metrics=NodeMetrics(environment=..., namespace=...)`` runs the publisher on its nodes (per
    instance and per workload series, see :mod:`cdk_neuron.metrics.names`); this construct
    alarms on them when their environment and namespace are its own, and warns (no Neuron alarms for
    that workload) when a workload publishes none. It builds, for the environment:

    - an SNS topic, encrypted with a customer-managed rotating key, TLS-only, that every alarm and
      event rule notifies (on ALARM and on OK), with an optional email subscription;
    - alarms (``alarms``, by name): NeuronCores idle while instances run (training, serving),
      saturated (serving), device memory near full, any uncorrected ECC error; serving 5xx rate,
      p99 latency and unhealthy hosts (EC2 behind an ALB) or 5xx rate and p99 model latency
      (SageMaker); checkpoint EFS throughput at its ceiling;
    - event rules (``rules``, by name): a Batch job of the cluster's queue FAILED, a checkpoint
      backup job FAILED, ABORTED or EXPIRED; and a log of every Batch job state change, counted by
      state for the dashboard;
    - a dashboard named ``<alarm_name_prefix>``.

    A ``SageMakerInferenceFleet`` runs no code of ours on its instances, so it has no Neuron node metrics:
    SageMaker publishes none for Inferentia, and its alarms are the endpoint's 5xx rate and latency.

    :param environment: the environment's name, e.g. ``"prod"``: the ``Environment`` dimension, and
        the start of every alarm's description. Letters, digits, ``-`` and ``_``, at most 64.
    :param cluster: the training cluster to watch: a ``BatchTrainingCluster``, an
        ``AutoScalingTrainingCluster`` or an import of one; its alarms and widgets use the
        cluster's ``metric*()`` methods. Default None.
    :param fleet: the inference fleet to watch: an ``Ec2InferenceFleet`` or ``SageMakerInferenceFleet``, or
        an import of one (``from_*_attributes``); its serving alarms and widgets use the fleet's
        ``metric_*()`` methods. Default None. At least one of ``cluster`` and ``fleet`` is required.
    :param checkpoints: the cluster's checkpoint store, or an import of one
        (``CheckpointStore.from_checkpoint_store_attributes``): adds the EFS throughput alarm and
        widget, and for a store built here the backup failure rule (an import's vault is not
        known). Default None.
    :param alarm_email: subscribe this address to the topic (the subscription must be confirmed).
        Default None (no subscription).
    :param namespace: CloudWatch namespace of the node metrics; must be the workloads' ``NodeMetrics``
        namespace. Default ``"CdkNeuron"``.
    :param thresholds: when each alarm fires. Default ``MonitoringThresholds()`` (see its fields).
    :param alarm_name_prefix: names the alarms (``<prefix>-<alarm>``, e.g. ``dev-Monitoring-
        TrainingCoresIdle``, the subject of every page) and the dashboard (``<prefix>``). Alarm and
        dashboard names are unique per account and Region, and PutMetricAlarm replaces an alarm of
        the same name, so two constructs must never share one. Letters, digits, ``-`` and ``_``, at
        most 200 characters. Default: the stack's name (unique per account and Region, as
        CloudFormation requires); give one when a stack holds two ``NeuronMonitoring``, or to keep
        names you already deploy (this app passes ``cdk-neuron-<environment>``).
    :param removal_policy: for the topic's key and the job-state log (which has a fixed name, so
        RETAIN keeps it with RETAIN_ON_UPDATE_OR_DELETE). Default: RETAIN_ON_UPDATE_OR_DELETE.

    :ivar topic: the alarm topic (KMS-encrypted SNS).
    :ivar key: the topic's customer-managed key.
    :ivar dashboard: the environment's dashboard, named ``alarm_name_prefix``.
    :ivar alarm_name_prefix: the prefix in use (the stack's name by default).
    :ivar rules: the paging event rules by name (``BatchJobFailed``, ``CheckpointBackupFailed``).
    :ivar job_state_log: the Batch job-state log, or None without a Batch cluster to watch.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        environment: str,
        cluster: ITrainingCluster | None = None,
        fleet: IEc2InferenceFleet | ISageMakerInferenceFleet | None = None,
        checkpoints: ICheckpointStore | None = None,
        alarm_email: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        thresholds: MonitoringThresholds = DEFAULT_THRESHOLDS,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        alarm_name_prefix: str | None = None,
    ) -> None:
        _validate(
            environment, cluster, fleet, checkpoints, alarm_email, namespace, thresholds, removal_policy
        )
        prefix = _alarm_name_prefix(scope, alarm_name_prefix)
        super().__init__(scope, id)
        self.alarm_name_prefix = prefix
        self.environment = environment
        self.namespace = namespace
        self.thresholds = thresholds

        self.key: kms.Key = alarm_key(
            self, "TopicKey", environment=environment, removal_policy=removal_policy
        )
        self.topic: sns.Topic = alarm_topic(
            self, "Topic", environment=environment, key=self.key, alarm_email=alarm_email
        )
        self._alarms = alarm_rules.AlarmSet(self, self.topic, prefix=prefix)
        self.rules: dict[str, events.Rule] = {}
        self.job_state_log: event_rules.BatchJobStateLog | None = None

        workloads: dict[Workload, series.NeuronSeries] = {}
        serving: Ec2FleetMetrics | SageMakerFleetMetrics | None = None
        job_queue_arn: str | None = None
        if cluster is not None:
            self._watch_nodes("training", cluster, workloads, _cluster_series(cluster))
            if is_batch_training_cluster(cluster):
                job_queue_arn = cluster.job_queue_arn
                self.rules["BatchJobFailed"] = event_rules.batch_job_failed_rule(
                    self,
                    "BatchJobFailed",
                    environment=environment,
                    job_queue_arn=job_queue_arn,
                    topic=self.topic,
                )
                self.job_state_log = event_rules.BatchJobStateLog(
                    self,
                    "BatchJobStates",
                    environment=environment,
                    namespace=namespace,
                    job_queue_arn=job_queue_arn,
                    key=self.key,
                    removal_policy=removal_policy,
                )
        if fleet is not None:
            serving = self._watch_fleet(fleet, workloads)
        if checkpoints is not None:
            alarm_rules.add_efs_alarms(
                self._alarms,
                environment=environment,
                throughput_utilization=checkpoints.metric_throughput_utilization(
                    period=alarm_rules.NEURON_PERIOD
                ),
                thresholds=thresholds,
            )
            if isinstance(checkpoints, CheckpointStore):
                self.rules["CheckpointBackupFailed"] = event_rules.backup_failed_rule(
                    self,
                    "CheckpointBackupFailed",
                    environment=environment,
                    backup_vault_name=checkpoints.backup_vault.backup_vault_name,
                    topic=self.topic,
                )
        for workload, neuron_series in workloads.items():
            alarm_rules.add_neuron_alarms(
                self._alarms,
                environment=environment,
                workload=workload,
                neuron_series=neuron_series,
                thresholds=thresholds,
                min_capacity=fleet.min_capacity if isinstance(fleet, Ec2FleetMetrics) else 0,
            )

        self.dashboard: cw.Dashboard = build_dashboard(
            self,
            "Dashboard",
            sources=DashboardSources(
                environment=environment,
                namespace=namespace,
                workloads=workloads,
                serving=serving,
                job_queue_arn=job_queue_arn,
                checkpoints=checkpoints,
            ),
            dashboard_name=prefix,
            alarms=list(self._alarms.alarms.values()),
            thresholds=thresholds,
        )

    @property
    def alarms(self) -> dict[str, cw.Alarm]:
        """Every alarm, by name (e.g. ``"TrainingCoresIdle"``, ``"Serving5xxRate"``)."""
        return dict(self._alarms.alarms)

    # -- wiring ------------------------------------------------------------------------------------

    def _watch_nodes(
        self,
        workload: Workload,
        owner: ITrainingCluster | IEc2InferenceFleet,
        workloads: dict[Workload, series.NeuronSeries],
        neuron_series: series.NeuronSeries,
    ) -> None:
        """Alarm on the workload's Neuron node metrics, or say that it publishes none."""
        if owner.node_metrics is None:
            cdk.Annotations.of(self).add_warning_v2(
                NO_NODE_METRICS_WARNING_ID,
                f"{owner.node.path} publishes no Neuron node metrics, so its NeuronCore, device-memory and "
                "ECC alarms are not built; give it node_metrics=NodeMetrics(environment=..., namespace=...)",
            )
            return
        workloads[workload] = neuron_series

    def _watch_fleet(
        self,
        fleet: IEc2InferenceFleet | ISageMakerInferenceFleet,
        workloads: dict[Workload, series.NeuronSeries],
    ) -> Ec2FleetMetrics | SageMakerFleetMetrics:
        if isinstance(fleet, SageMakerFleetMetrics):
            alarm_rules.add_sagemaker_alarms(
                self._alarms, environment=self.environment, fleet=fleet, thresholds=self.thresholds
            )
            return fleet
        assert isinstance(fleet, Ec2FleetMetrics)

        def serving_series(metric: NeuronMetric, period: cdk.Duration, statistic: str | None) -> cw.IMetric:
            if statistic is None:
                return fleet.metric_neuron(metric, period=period)
            return fleet.metric_neuron(metric, period=period, statistic=statistic)

        self._watch_nodes("serving", fleet, workloads, serving_series)
        alarm_rules.add_alb_alarms(
            self._alarms, environment=self.environment, fleet=fleet, thresholds=self.thresholds
        )
        return fleet


def _cluster_series(cluster: ITrainingCluster) -> series.NeuronSeries:
    """The cluster's Neuron series through its own ``metric()``."""

    def neuron_series(metric: NeuronMetric, period: cdk.Duration, statistic: str | None) -> cw.IMetric:
        if statistic is None:
            return cluster.metric(metric.name, period=period)
        return cluster.metric(metric.name, period=period, statistic=statistic)

    return neuron_series


# CloudWatch dashboard names: "alphanumerics, dash (-), and underscore (_)" (PutDashboard,
# DashboardName, Amazon CloudWatch API Reference,
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutDashboard.html, read
# 2026-12-02); alarm names allow more, up to 255 characters (PutMetricAlarm, AlarmName), so 200
# leaves room for the longest alarm name after the prefix.
_PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,200}\Z")


def _alarm_name_prefix(scope: Construct, given: object) -> str:
    """``alarm_name_prefix``, or the stack's name; refused when another NeuronMonitoring of the stack
    already uses it (its alarms would replace the other's)."""
    stack = cdk.Stack.of(scope)
    prefix = stack.stack_name if given is None else given
    if given is not None and (not isinstance(given, str) or not _PREFIX.match(given)):
        raise NeuronConfigError(
            "alarm_name_prefix", given, "letters, digits, '-' and '_', 1 to 200 characters, or None"
        )
    assert isinstance(prefix, str)
    taken = [
        c.node.path
        for c in stack.node.find_all()
        if isinstance(c, NeuronMonitoring) and c.alarm_name_prefix == prefix
    ]
    if taken:
        raise NeuronConfigError(
            "alarm_name_prefix",
            given,
            f"{taken[0]} already names its alarms {prefix}-*; alarm names are unique per account and "
            "Region: give each NeuronMonitoring its own alarm_name_prefix",
        )
    return prefix


def _validate(
    environment: object,
    cluster: object,
    fleet: object,
    checkpoints: object,
    alarm_email: object,
    namespace: object,
    thresholds: object,
    removal_policy: object,
) -> None:
    check_environment(environment)
    if cluster is None and fleet is None:
        raise NeuronConfigError(
            "cluster",
            None,
            "give a training cluster (cluster=: BatchTrainingCluster, AutoScalingTrainingCluster or an "
            "import), an Ec2InferenceFleet or SageMakerInferenceFleet (fleet=) or both",
        )
    if cluster is not None and not is_training_cluster(cluster):
        raise NeuronConfigError(
            "cluster",
            cluster,
            "must be a cdk_neuron BatchTrainingCluster, AutoScalingTrainingCluster or an import",
        )
    if fleet is not None and not isinstance(fleet, (Ec2FleetMetrics, SageMakerFleetMetrics)):
        raise NeuronConfigError(
            "fleet",
            fleet,
            "must be a cdk_neuron.serving.Ec2InferenceFleet or SageMakerInferenceFleet, or an import of one",
        )
    if checkpoints is not None and not is_checkpoint_store(checkpoints):
        raise NeuronConfigError(
            "checkpoints", checkpoints, "must be a cdk_neuron CheckpointStore or an import of one"
        )
    if alarm_email is not None and (not isinstance(alarm_email, str) or not EMAIL.match(alarm_email)):
        raise NeuronConfigError(
            "alarm_email", alarm_email, "must be an email address such as ops@example.com, or None"
        )
    check_namespace(namespace)
    if not isinstance(thresholds, MonitoringThresholds):
        raise NeuronConfigError(
            "thresholds", thresholds, "must be a cdk_neuron.monitoring.MonitoringThresholds"
        )
    if not isinstance(removal_policy, cdk.RemovalPolicy):
        raise NeuronConfigError("removal_policy", removal_policy, "must be an aws_cdk.RemovalPolicy")
    if isinstance(checkpoints, CheckpointStore):
        budget = checkpoints.save_time_budget.to_minutes(integral=False)
        if thresholds.efs_throughput_minutes <= budget:
            raise NeuronConfigError(
                "thresholds.efs_throughput_minutes",
                thresholds.efs_throughput_minutes,
                f"must exceed the checkpoint store's save_time_budget ({budget:g} min), or every healthy "
                f"checkpoint save pages; use a multiple of {ALARM_PERIOD_MINUTES} above it",
            )

    for field, workload in (("cluster", cluster), ("fleet", fleet)):
        published: NodeMetrics | None = getattr(workload, "node_metrics", None)
        if published is not None and (published.environment, published.namespace) != (environment, namespace):
            raise NeuronConfigError(
                f"{field}.node_metrics",
                f"{published.environment}/{published.namespace}",
                f"its nodes publish into environment {published.environment!r}, namespace "
                f"{published.namespace!r}; this monitoring watches {environment!r} in {namespace!r}: use the same "
                "NodeMetrics values for both",
            )


__all__ = ["NO_NODE_METRICS_WARNING_ID", "NeuronMonitoring"]
