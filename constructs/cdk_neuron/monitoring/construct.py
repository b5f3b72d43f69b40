"""NeuronMonitoring: Neuron metrics from every node, alarms that page, one dashboard per environment."""

from __future__ import annotations

import re
import weakref

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.iam_statements import PUT_METRIC_DATA_REASON, put_metric_data
from cdk_neuron.monitoring import alarms as alarm_rules
from cdk_neuron.monitoring import event_rules, series
from cdk_neuron.monitoring.dashboard import DashboardSources, build_dashboard
from cdk_neuron.monitoring.metrics import DEFAULT_NAMESPACE, Workload
from cdk_neuron.monitoring.publisher import node_setup_commands
from cdk_neuron.monitoring.thresholds import ALARM_PERIOD_MINUTES, MonitoringThresholds
from cdk_neuron.monitoring.topic import alarm_key, alarm_topic
from cdk_neuron.patterns import EMAIL
from cdk_neuron.serving import InferenceFleet
from cdk_neuron.storage import CheckpointStore
from cdk_neuron.training import TrainingCluster

# Also a CloudWatch dashboard name part and a dimension value: keep to what both accept.
_ENVIRONMENT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# CloudWatch namespaces: up to 255 printable ASCII characters; "AWS/" is reserved for AWS services.
_NAMESPACE = re.compile(r"^[A-Za-z0-9.\-_/#:]{1,255}$")
DEFAULT_THRESHOLDS = MonitoringThresholds()  # frozen, so one shared default is safe


def node_metrics_policy(scope: Construct, id: str, *, role: iam.IRole, namespace: str) -> iam.ManagedPolicy:
    """A customer-managed policy on ``role`` allowing ``cloudwatch:PutMetricData`` into ``namespace`` only.

    PutMetricData supports no resource-level permissions (Resource must be ``*``); the
    ``cloudwatch:namespace`` condition key is what confines it. A managed policy rather than an
    inline one, which NIST 800-53 R5 (IAMNoInlinePolicy) refuses.
    """
    policy = iam.ManagedPolicy(
        scope,
        id,
        description=f"cdk-neuron nodes: publish Neuron metrics into the {namespace} namespace only",
        roles=[role],
        statements=[put_metric_data(namespace, sid="PublishNeuronMetrics")],
    )
    cdk.Validations.of(policy).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions-IAM5[Resource::*]", reason=f"{PUT_METRIC_DATA_REASON} ({namespace})"
        )
    )
    return policy


class NeuronMonitoring(Construct):
    """Neuron metrics, alarms, an alarm topic and a dashboard for one environment.

    Installs a publisher on every node of ``cluster`` and of ``fleet`` (EC2 backend): a systemd
    service that turns ``neuron-monitor`` reports into CloudWatch metrics in ``namespace``, per
    instance and per workload (see :mod:`cdk_neuron.monitoring.metrics`), and lets the node roles
    publish into that namespace only. Then it builds, for the environment:

    - an SNS topic, encrypted with a customer-managed rotating key, TLS-only, that every alarm and
      event rule notifies (on ALARM and on OK), with an optional email subscription;
    - alarms (``alarms``, by name): NeuronCores idle while instances run (training, serving),
      saturated (serving), device memory near full, any uncorrected ECC error; serving 5xx rate,
      p99 latency and unhealthy hosts (EC2 behind an ALB) or 5xx rate and p99 model latency
      (SageMaker); checkpoint EFS throughput at its ceiling;
    - event rules (``rules``, by name): a Batch job of the cluster's queue FAILED, a checkpoint
      backup job FAILED, ABORTED or EXPIRED; and a log of every Batch job state change, counted by
      state for the dashboard;
    - a dashboard named ``cdk-neuron-<environment>``.

    A SageMaker-backed fleet runs no user data, so it gets no Neuron node metrics: SageMaker
    publishes none for Inferentia, and its alarms are the endpoint's 5xx rate and latency.

    Args:
        environment: the environment's name, e.g. ``"prod"``: the ``Environment`` dimension and the
            dashboard's name. Letters, digits, ``-`` and ``_``, at most 64.
        cluster: the training cluster to instrument. Default None.
        fleet: the inference fleet to instrument. Default None. At least one of the two is required.
        checkpoints: the cluster's checkpoint store: adds the EFS throughput alarm, the backup
            failure rule and the throughput widget. Default None.
        alarm_email: subscribe this address to the topic (the subscription must be confirmed).
            Default None (no subscription).
        namespace: CloudWatch namespace of the node metrics. Default ``"CdkNeuron"``.
        thresholds: when each alarm fires. Default ``MonitoringThresholds()`` (see its fields).
        removal_policy: for the topic's key and the job-state log. Default RETAIN.

    Attributes:
        topic, key: the alarm topic and its key. dashboard: the environment's dashboard.
        alarms: every alarm by name. rules: the paging event rules by name (``BatchJobFailed``,
        ``CheckpointBackupFailed``). job_state_log: the Batch job-state log (Batch clusters only).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        environment: str,
        cluster: TrainingCluster | None = None,
        fleet: InferenceFleet | None = None,
        checkpoints: CheckpointStore | None = None,
        alarm_email: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        thresholds: MonitoringThresholds = DEFAULT_THRESHOLDS,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        _validate(
            environment, cluster, fleet, checkpoints, alarm_email, namespace, thresholds, removal_policy
        )
        super().__init__(scope, id)
        self.environment = environment
        self.namespace = namespace
        self.thresholds = thresholds

        self.key: kms.Key = alarm_key(
            self, "TopicKey", environment=environment, removal_policy=removal_policy
        )
        self.topic: sns.Topic = alarm_topic(
            self, "Topic", environment=environment, key=self.key, alarm_email=alarm_email
        )
        self._alarms = alarm_rules.AlarmSet(self, self.topic)
        self.rules: dict[str, events.Rule] = {}
        self.job_state_log: event_rules.BatchJobStateLog | None = None

        workloads: list[Workload] = []
        serving: series.AlbServing | series.SageMakerServing | None = None
        job_queue_arn: str | None = None
        if cluster is not None:
            workloads.append("training")
            self._instrument("training", cluster, cluster.instance.name, cluster.role)
            if cluster.engine.is_batch:
                job_queue_arn = cluster.job_queue.job_queue_arn
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
        file_system_id: str | None = None
        if checkpoints is not None:
            file_system_id = checkpoints.file_system_id
            alarm_rules.add_efs_alarms(
                self._alarms, environment=environment, file_system_id=file_system_id, thresholds=thresholds
            )
            self.rules["CheckpointBackupFailed"] = event_rules.backup_failed_rule(
                self,
                "CheckpointBackupFailed",
                environment=environment,
                backup_vault_name=checkpoints.backup_vault.backup_vault_name,
                topic=self.topic,
            )
        for workload in workloads:
            alarm_rules.add_neuron_alarms(
                self._alarms,
                namespace=namespace,
                environment=environment,
                workload=workload,
                thresholds=thresholds,
            )

        self.dashboard: cw.Dashboard = build_dashboard(
            self,
            "Dashboard",
            sources=DashboardSources(
                environment=environment,
                namespace=namespace,
                workloads=tuple(workloads),
                serving=serving,
                job_queue_arn=job_queue_arn,
                file_system_id=file_system_id,
            ),
            alarms=list(self._alarms.alarms.values()),
            thresholds=thresholds,
        )

    @property
    def alarms(self) -> dict[str, cw.Alarm]:
        """Every alarm, by name (e.g. ``"TrainingCoresIdle"``, ``"Serving5xxRate"``)."""
        return dict(self._alarms.alarms)

    # -- wiring ------------------------------------------------------------------------------------

    def _instrument(
        self,
        workload: Workload,
        owner: TrainingCluster | InferenceFleet,
        instance_type: str,
        role: iam.IRole,
    ) -> None:
        _node_user_data(owner).add_commands(
            *node_setup_commands(
                namespace=self.namespace,
                environment=self.environment,
                workload=workload,
                instance_type=instance_type,
            )
        )
        node_metrics_policy(self, f"{workload.capitalize()}NodeMetrics", role=role, namespace=self.namespace)
        _INSTRUMENTED[owner] = self.node.path

    def _watch_fleet(
        self, fleet: InferenceFleet, workloads: list[Workload]
    ) -> series.AlbServing | series.SageMakerServing:
        if fleet.backend.is_sagemaker:
            assert fleet.endpoint is not None
            serving_sm = series.SageMakerServing(
                endpoint_name=fleet.endpoint.attr_endpoint_name, variant_name=fleet.backend.variant_name
            )
            alarm_rules.add_sagemaker_alarms(
                self._alarms,
                environment=self.environment,
                endpoint_name=serving_sm.endpoint_name,
                variant_name=serving_sm.variant_name,
                thresholds=self.thresholds,
            )
            return serving_sm
        assert fleet.instance_role is not None
        assert fleet.load_balancer is not None and fleet.target_group is not None
        workloads.append("serving")
        self._instrument("serving", fleet, fleet.instance_type, fleet.instance_role)
        serving_alb = series.AlbServing(load_balancer=fleet.load_balancer, target_group=fleet.target_group)
        alarm_rules.add_alb_alarms(
            self._alarms,
            environment=self.environment,
            load_balancer=serving_alb.load_balancer,
            target_group=serving_alb.target_group,
            thresholds=self.thresholds,
        )
        return serving_alb


def _node_user_data(owner: TrainingCluster | InferenceFleet) -> ec2.UserData:
    if isinstance(owner, TrainingCluster):
        return owner.user_data
    # An EC2-backed fleet always has a launch template with user data (its boot script).
    assert owner.launch_template is not None and owner.launch_template.user_data is not None
    return owner.launch_template.user_data


# cluster or fleet -> path of the NeuronMonitoring that installed its publisher. Rendered user data
# cannot be inspected for it (multipart parts render as tokens), so the constructs are remembered.
_INSTRUMENTED: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


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
    if not isinstance(environment, str) or not _ENVIRONMENT.match(environment):
        raise NeuronConfigError(
            "environment", environment, "use 1-64 letters, digits, '-' or '_' (it names the dashboard)"
        )
    if cluster is None and fleet is None:
        raise NeuronConfigError(
            "cluster", None, "give a TrainingCluster (cluster=), an InferenceFleet (fleet=) or both"
        )
    if cluster is not None and not isinstance(cluster, TrainingCluster):
        raise NeuronConfigError("cluster", cluster, "must be a cdk_neuron.TrainingCluster")
    if fleet is not None and not isinstance(fleet, InferenceFleet):
        raise NeuronConfigError("fleet", fleet, "must be a cdk_neuron.InferenceFleet")
    if checkpoints is not None and not isinstance(checkpoints, CheckpointStore):
        raise NeuronConfigError("checkpoints", checkpoints, "must be a cdk_neuron.CheckpointStore")
    if alarm_email is not None and (not isinstance(alarm_email, str) or not EMAIL.match(alarm_email)):
        raise NeuronConfigError(
            "alarm_email", alarm_email, "must be an email address such as ops@example.com, or None"
        )
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace) or namespace.startswith("AWS/"):
        raise NeuronConfigError(
            "namespace",
            namespace,
            "use up to 255 letters, digits or . - _ / # :, not starting with 'AWS/' (reserved for AWS)",
        )
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
        if workload is not None and workload in _INSTRUMENTED:
            raise NeuronConfigError(
                field,
                workload.node.path,  # type: ignore[attr-defined]
                f"already has a Neuron metrics publisher from {_INSTRUMENTED[workload]}: use one "
                "NeuronMonitoring per environment",
            )


__all__ = ["NeuronMonitoring", "node_metrics_policy"]
