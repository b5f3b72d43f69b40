"""NeuronMonitoring on real training clusters, inference fleets and a CheckpointStore.

Two environments, synthesized once for the module:

- ``prod``: one stack with a Batch trn1.32xlarge cluster, its checkpoint store and an EC2 inf2.8xlarge
  fleet behind an ALB, monitored in the same stack, with an alarm email.
- ``dev``: an Auto Scaling group trn1.32xlarge cluster and a SageMaker ml.inf2.8xlarge fleet in one
  stack, monitored from a separate stack (cross-stack wiring), no email.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from deploy_rules_gate import check_gate, gate_params
from syrupy.assertion import SnapshotAssertion
from test_training_support import PUBLIC_IMAGE, PinnedStack, first_zone, network

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring import MonitoringThresholds, NeuronMonitoring, NodeMetrics
from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec, SageMakerInferenceFleet
from cdk_neuron.storage import CheckpointStore
from cdk_neuron.training import AutoScalingTrainingCluster, BatchTrainingCluster, TrainingClusterBase
from cdk_support import flatten_user_data, make_app, nag_violations, normalize_template, settings_in

INF2_AZ_IDS = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az6"}
MODEL = ModelSpec(
    model_id="meta-llama/Llama-3.1-8B-Instruct",
    artifact_uri="s3://my-models/llama-3.1-8b/neuron",
    parameters=8_000_000_000,
    batch_size=4,
)


@dataclass
class Env:
    app: cdk.App
    workloads: PinnedStack
    monitoring_stack: PinnedStack
    monitoring: NeuronMonitoring
    cluster: TrainingClusterBase
    fleet: Any
    store: CheckpointStore | None
    templates: dict[str, dict[str, Any]]

    def template(self, stack: cdk.Stack) -> dict[str, Any]:
        return self.templates[stack.stack_name]

    @property
    def mon(self) -> dict[str, Any]:
        return self.template(self.monitoring_stack)

    def props(self, construct: Any) -> dict[str, Any]:
        stack = cdk.Stack.of(construct)
        logical_id = stack.resolve(stack.get_logical_id(construct.node.default_child))
        return self.template(stack)["Resources"][logical_id]["Properties"]  # type: ignore[no-any-return]

    def ref(self, construct: Any) -> dict[str, str]:
        stack = cdk.Stack.of(construct)
        return {"Ref": stack.resolve(stack.get_logical_id(construct.node.default_child))}


def _templates(*stacks: cdk.Stack) -> dict[str, dict[str, Any]]:
    return {s.stack_name: Template.from_stack(s).to_json() for s in stacks}


@pytest.fixture(scope="module")
def prod() -> Iterator[Env]:
    app = make_app()
    stack = PinnedStack(app, "Prod", region="us-east-1")
    vpc = network(stack)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    cluster = BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=first_zone(stack),
        checkpoints=store,
        job_image=PUBLIC_IMAGE,
        node_metrics=NodeMetrics(environment="prod"),
    )
    fleet = Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=MODEL,
        instance_type="inf2.8xlarge",
        availability_zone_ids=INF2_AZ_IDS,
        node_metrics=NodeMetrics(environment="prod"),
    )
    monitoring = NeuronMonitoring(
        stack,
        "Monitoring",
        environment="prod",
        cluster=cluster,
        fleet=fleet,
        checkpoints=store,
        alarm_email="oncall@example.com",
    )
    yield Env(app, stack, stack, monitoring, cluster, fleet, store, _templates(stack))


@pytest.fixture(scope="module")
def dev() -> Iterator[Env]:
    app = make_app()
    workloads = PinnedStack(app, "DevWorkloads", region="us-east-1")
    vpc = network(workloads)
    cluster = AutoScalingTrainingCluster(
        workloads,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=first_zone(workloads),
        node_metrics=NodeMetrics(environment="dev"),
    )
    fleet = SageMakerInferenceFleet(
        workloads,
        "Fleet",
        vpc=vpc,
        model=MODEL,
        instance_type="ml.inf2.8xlarge",
    )
    monitoring_stack = PinnedStack(app, "DevMonitoring", region="us-east-1")
    monitoring = NeuronMonitoring(
        monitoring_stack,
        "Monitoring",
        environment="dev",
        cluster=cluster,
        fleet=fleet,
        thresholds=MonitoringThresholds(serving_p99_latency_seconds=2.5),
        alarm_name_prefix="cdk-neuron-dev",
    )
    yield Env(
        app,
        workloads,
        monitoring_stack,
        monitoring,
        cluster,
        fleet,
        None,
        _templates(workloads, monitoring_stack),
    )


def _resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def _metric_stats(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Alarm metric id -> MetricStat (single-metric alarms are rendered as a one-entry Metrics list
    only when they carry a label; handle both shapes)."""
    if "Metrics" not in alarm:
        return {
            "m1": {
                "Metric": {
                    "Namespace": alarm["Namespace"],
                    "MetricName": alarm["MetricName"],
                    "Dimensions": alarm.get("Dimensions", []),
                },
                "Stat": alarm.get("Statistic") or alarm.get("ExtendedStatistic"),
                "Period": alarm["Period"],
            }
        }
    return {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}


def _dims(stat: dict[str, Any]) -> dict[str, Any]:
    return {d["Name"]: d["Value"] for d in stat["Metric"].get("Dimensions", [])}


# ---------------------------------------------------------------------------------------------
# Alarms: metric, threshold, actions
# ---------------------------------------------------------------------------------------------

NEURON_ALARMS = {
    # name: (metric, statistic, comparison, threshold, periods of 5 min)
    "TrainingCoresIdle": ("NeuronCoreUtilization", "Average", "LessThanThreshold", 5, 12),
    "TrainingDeviceMemoryHigh": ("NeuronDeviceMemoryUtilization", "Maximum", "GreaterThanThreshold", 90, 3),
    "TrainingEccUncorrected": ("EccUncorrected", "Sum", "GreaterThanOrEqualToThreshold", 1, 1),
    "ServingCoresSaturated": ("NeuronCoreUtilization", "Average", "GreaterThanThreshold", 90, 3),
    "ServingDeviceMemoryHigh": ("NeuronDeviceMemoryUtilization", "Maximum", "GreaterThanThreshold", 90, 3),
    "ServingEccUncorrected": ("EccUncorrected", "Sum", "GreaterThanOrEqualToThreshold", 1, 1),
}


def test_prod_has_exactly_the_expected_alarms(prod: Env) -> None:
    assert set(prod.monitoring.alarms) == {
        *NEURON_ALARMS,
        "ServingCoresIdle",
        "Serving5xxRate",
        "ServingP99Latency",
        "ServingUnhealthyHosts",
        "CheckpointThroughputSaturated",
    }
    assert len(_resources(prod.mon, "AWS::CloudWatch::Alarm")) == len(prod.monitoring.alarms)


def test_every_alarm_notifies_the_topic_on_alarm_and_ok(prod: Env, dev: Env) -> None:
    for env in (prod, dev):
        topic = env.ref(env.monitoring.topic)
        for name, alarm in env.monitoring.alarms.items():
            props = env.props(alarm)
            assert props["AlarmActions"] == [topic], name
            assert props["OKActions"] == [topic], name
            assert props["TreatMissingData"] == "notBreaching", name
            assert props["DatapointsToAlarm"] == props["EvaluationPeriods"], name
            assert props["AlarmDescription"].startswith(env.monitoring.environment), name
            # Rough edge 9: a page names the alarm, not a generated id; prod's prefix is its stack's
            # name (the default), dev's is given.
            prefix = {"prod": "Prod", "dev": "cdk-neuron-dev"}[env.monitoring.environment]
            assert env.monitoring.alarm_name_prefix == prefix
            assert props["AlarmName"] == f"{prefix}-{name}", name


@pytest.mark.parametrize("name", sorted(NEURON_ALARMS))
def test_neuron_alarm_watches_the_workload_series(prod: Env, name: str) -> None:
    metric, statistic, comparison, threshold, periods = NEURON_ALARMS[name]
    props = prod.props(prod.monitoring.alarms[name])
    (stat,) = _metric_stats(props).values()
    assert stat["Metric"]["Namespace"] == "CdkNeuron"
    assert stat["Metric"]["MetricName"] == metric
    workload = "training" if name.startswith("Training") else "serving"
    assert _dims(stat) == {"Environment": "prod", "Workload": workload}
    assert (stat["Stat"], stat["Period"]) == (statistic, 300)
    assert (props["ComparisonOperator"], props["Threshold"], props["EvaluationPeriods"]) == (
        comparison,
        threshold,
        periods,
    )


def test_training_idle_outlasts_a_first_compile(prod: Env) -> None:
    """Rough edge 9: NeuronCores read idle while a job compiles; a first compile takes about 25
    minutes (docs/troubleshooting.md), so TrainingCoresIdle waits an hour, not 30 minutes."""
    props = prod.props(prod.monitoring.alarms["TrainingCoresIdle"])
    assert props["EvaluationPeriods"] * 5 == 60 > 25


def test_serving_idle_pages_only_for_instances_above_min_capacity(prod: Env) -> None:
    """Rough edge 9: a fleet at min_capacity >= 1 is idle every quiet night on purpose. The alarm
    watches idle instances above min_capacity (node count = SampleCount of the workload series / 5),
    so it pages only when scale-in has not happened."""
    assert prod.fleet.min_capacity == 1
    props = prod.props(prod.monitoring.alarms["ServingCoresIdle"])
    metrics = {m["Id"]: m for m in props["Metrics"]}
    expression = next(m for m in metrics.values() if "Expression" in m)
    assert expression["Expression"] == "IF(util < 5, samples / 5 - 1, 0)"
    assert expression["ReturnData"] is True
    stats = {key: metrics[key]["MetricStat"] for key in ("util", "samples")}
    assert {key: (s["Stat"], s["Period"], s["Metric"]["MetricName"]) for key, s in stats.items()} == {
        "util": ("Average", 300, "NeuronCoreUtilization"),
        "samples": ("SampleCount", 300, "NeuronCoreUtilization"),
    }
    assert all(_dims(s) == {"Environment": "prod", "Workload": "serving"} for s in stats.values())
    assert (props["ComparisonOperator"], props["Threshold"], props["EvaluationPeriods"]) == (
        "GreaterThanThreshold",
        0.5,
        48,
    )


def test_the_idle_expression_is_zero_at_the_minimum_and_counts_the_rest() -> None:
    """The expression, evaluated as CloudWatch would on a quiet night (util 0 %): 1 node at min 1 is
    0 (no page); 3 nodes are 2 above it; a datapoint late by a minute (6 samples) stays under 0.5."""
    from cdk_neuron.monitoring.alarms import SAMPLES_PER_NODE

    def idle_above(util: float, samples: int, floor: int) -> float:
        return samples / SAMPLES_PER_NODE - floor if util < 5 else 0

    assert SAMPLES_PER_NODE == 5
    assert idle_above(0, 5, 1) == 0 and idle_above(0, 6, 1) < 0.5
    assert idle_above(0, 15, 1) == 2 > 0.5
    assert idle_above(50, 15, 1) == 0


def test_serving_5xx_rate_counts_load_balancer_errors_too(prod: Env) -> None:
    props = prod.props(prod.monitoring.alarms["Serving5xxRate"])
    expression = next(m["Expression"] for m in props["Metrics"] if "Expression" in m)
    assert re.sub(r"\s", "", expression) == (
        "IF(FILL(requests,0)+FILL(elb5xx,0)>0,"
        "100*(FILL(target5xx,0)+FILL(elb5xx,0))/(FILL(requests,0)+FILL(elb5xx,0)),0)"
    )
    stats = _metric_stats(props)
    assert {k: (v["Metric"]["MetricName"], v["Stat"], v["Period"]) for k, v in stats.items()} == {
        "requests": ("RequestCount", "Sum", 60),
        "target5xx": ("HTTPCode_Target_5XX_Count", "Sum", 60),
        "elb5xx": ("HTTPCode_ELB_5XX_Count", "Sum", 60),
    }
    assert set(_dims(stats["target5xx"])) == {"LoadBalancer", "TargetGroup"}
    assert set(_dims(stats["elb5xx"])) == {"LoadBalancer"}
    assert (props["ComparisonOperator"], props["Threshold"], props["EvaluationPeriods"]) == (
        "GreaterThanThreshold",
        1,
        5,
    )


def test_serving_latency_and_unhealthy_hosts_watch_the_fleets_target_group(prod: Env) -> None:
    target_group = prod.props(prod.fleet.target_group)
    assert target_group  # the fleet's own target group exists in this stack
    tg_full_name = {"Fn::GetAtt": [prod.ref(prod.fleet.target_group)["Ref"], "TargetGroupFullName"]}
    for name, metric, statistic, comparison, threshold in (
        ("ServingP99Latency", "TargetResponseTime", "p99", "GreaterThanThreshold", 10),
        ("ServingUnhealthyHosts", "UnHealthyHostCount", "Maximum", "GreaterThanOrEqualToThreshold", 1),
    ):
        props = prod.props(prod.monitoring.alarms[name])
        (stat,) = _metric_stats(props).values()
        assert (stat["Metric"]["Namespace"], stat["Metric"]["MetricName"]) == ("AWS/ApplicationELB", metric)
        assert (stat["Stat"], stat["Period"]) == (statistic, 60)
        assert _dims(stat)["TargetGroup"] == tg_full_name
        assert (props["ComparisonOperator"], props["Threshold"], props["EvaluationPeriods"]) == (
            comparison,
            threshold,
            5,
        )


def test_checkpoint_throughput_alarm_is_utilization_of_the_permitted_throughput(prod: Env) -> None:
    assert prod.store is not None
    props = prod.props(prod.monitoring.alarms["CheckpointThroughputSaturated"])
    expression = next(m["Expression"] for m in props["Metrics"] if "Expression" in m)
    assert expression == "100 * (metered / PERIOD(metered)) / permitted"
    stats = _metric_stats(props)
    assert {k: (v["Metric"]["MetricName"], v["Stat"]) for k, v in stats.items()} == {
        "metered": ("MeteredIOBytes", "Sum"),
        "permitted": ("PermittedThroughput", "Average"),
    }
    assert _dims(stats["metered"]) == {"FileSystemId": prod.ref(prod.store.file_system)}
    assert (props["Threshold"], props["EvaluationPeriods"]) == (90, 3)


def test_sagemaker_fleet_alarms_on_the_endpoint_in_microseconds(dev: Env) -> None:
    assert set(dev.monitoring.alarms) == {
        "TrainingCoresIdle",
        "TrainingDeviceMemoryHigh",
        "TrainingEccUncorrected",
        "Serving5xxRate",
        "ServingP99Latency",
    }
    latency = dev.props(dev.monitoring.alarms["ServingP99Latency"])
    (stat,) = _metric_stats(latency).values()
    assert (stat["Metric"]["Namespace"], stat["Metric"]["MetricName"], stat["Stat"]) == (
        "AWS/SageMaker",
        "ModelLatency",
        "p99",
    )
    assert latency["Threshold"] == 2_500_000  # 2.5 s in microseconds
    dims = _dims(stat)
    assert dims["VariantName"] == "AllTraffic"
    assert "DevWorkloads" in json.dumps(dims["EndpointName"])  # a reference to the workloads stack
    errors = dev.props(dev.monitoring.alarms["Serving5xxRate"])
    names = {v["Metric"]["MetricName"] for v in _metric_stats(errors).values()}
    assert names == {"Invocations", "Invocation5XXErrors"}


# ---------------------------------------------------------------------------------------------
# Node metrics: the workloads publish, the monitoring only reads
# ---------------------------------------------------------------------------------------------


def _namespace_statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in policy["PolicyDocument"]["Statement"] if s["Action"] == "cloudwatch:PutMetricData"]


def test_node_roles_may_publish_into_the_namespace_only(prod: Env) -> None:
    neuron_metrics = {
        "Sid": "PublishNeuronMetrics",
        "Effect": "Allow",
        "Action": "cloudwatch:PutMetricData",
        "Resource": "*",
        "Condition": {"StringEquals": {"cloudwatch:namespace": "CdkNeuron"}},
    }
    cluster_policy = prod.props(prod.cluster.node.find_child("NodeMetricsPolicy"))
    assert cluster_policy["Roles"] == [prod.ref(prod.cluster.role)]
    assert cluster_policy["PolicyDocument"]["Statement"] == [neuron_metrics]
    fleet_policy = prod.props(prod.fleet.node.find_child("InstancePolicy"))
    assert neuron_metrics in _namespace_statements(fleet_policy)


def test_monitoring_creates_no_policy_and_changes_no_workload(prod: Env, dev: Env) -> None:
    for env in (prod, dev):
        granted = [
            r["Properties"]["Roles"]
            for k, r in _resources(env.mon, "AWS::IAM::ManagedPolicy").items()
            if k.startswith("Monitoring")
        ]
        assert not any(
            "NodeRole" in json.dumps(roles) or "InstanceRole" in json.dumps(roles) for roles in granted
        )
    # The workload stack is byte-identical with and without a NeuronMonitoring watching it.
    app = make_app()
    alone = PinnedStack(app, "DevWorkloads", region="us-east-1")
    vpc = network(alone)
    AutoScalingTrainingCluster(
        alone,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=first_zone(alone),
        node_metrics=NodeMetrics(environment="dev"),
    )
    SageMakerInferenceFleet(
        alone,
        "Fleet",
        vpc=vpc,
        model=MODEL,
        instance_type="ml.inf2.8xlarge",
    )
    watched = normalize_template(dev.template(dev.workloads))
    unwatched = normalize_template(Template.from_stack(alone).to_json())
    # Cross-stack references the monitoring stack reads become exports of the workload stack: the
    # only difference allowed is Outputs.
    watched.pop("Outputs", None)
    unwatched.pop("Outputs", None)
    assert watched == unwatched


def _user_data_text(env: Env, launch_template: Any) -> str:
    return flatten_user_data(env.props(launch_template)["LaunchTemplateData"]["UserData"])


@pytest.mark.parametrize(
    ("which", "workload", "cores"),
    [("cluster", "training", 32), ("fleet", "serving", 2)],
)
def test_nodes_get_the_publisher_config_in_their_settings(
    prod: Env, which: str, workload: str, cores: int
) -> None:
    text = _user_data_text(prod, getattr(prod, which).launch_template)
    config = json.loads(settings_in(text)["publisher.json"])
    assert (config["environment"], config["workload"], config["neuron_cores"]) == ("prod", workload, cores)
    assert config["neuron_monitor_config"] == "/opt/cdk-neuron/monitoring/neuron-monitor.json"


def test_a_workload_without_node_metrics_is_watched_with_a_warning() -> None:
    app = make_app()
    stack = PinnedStack(app, "Quiet", region="us-east-1")
    vpc = network(stack)
    cluster = BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=first_zone(stack),
        job_image=PUBLIC_IMAGE,
    )
    monitoring = NeuronMonitoring(stack, "Monitoring", environment="quiet", cluster=cluster)
    assert "TrainingCoresIdle" not in monitoring.alarms and "TrainingEccUncorrected" not in monitoring.alarms
    from aws_cdk.assertions import Annotations, Match

    Annotations.from_stack(stack).has_warning(
        "/Quiet/Monitoring", Match.string_like_regexp("Quiet/Cluster publishes no Neuron node metrics")
    )


# ---------------------------------------------------------------------------------------------
# Topic, rules, dashboard
# ---------------------------------------------------------------------------------------------


def test_topic_is_kms_encrypted_tls_only_and_publishable_by_alarms_and_rules(prod: Env) -> None:
    topic = prod.props(prod.monitoring.topic)
    key_ref = prod.ref(prod.monitoring.key)["Ref"]
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_ref, "Arn"]}
    key = prod.props(prod.monitoring.key)
    assert key["EnableKeyRotation"] is True
    grants = {
        json.dumps(s["Principal"].get("Service"), sort_keys=True): sorted(s["Action"])
        for s in key["KeyPolicy"]["Statement"]
        if "Service" in s["Principal"] and not str(s["Principal"]["Service"]).startswith("logs.")
    }
    assert grants == {
        '"cloudwatch.amazonaws.com"': ["kms:Decrypt", "kms:GenerateDataKey"],
        # aws_events_targets.SnsTopic writes this grant itself, with its own action family.
        '"events.amazonaws.com"': ["kms:Decrypt", "kms:GenerateDataKey*"],
    }
    (policy,) = _resources(prod.mon, "AWS::SNS::TopicPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert {
        "Action": "sns:Publish",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": "*",
        "Resource": prod.ref(prod.monitoring.topic),
        "Sid": "AllowPublishThroughSSLOnly",
    } in statements
    alarms = next(s for s in statements if s.get("Sid") == "AllowThisAccountsAlarms")
    assert alarms["Condition"] == {
        "ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:us-east-1:111111111111:alarm:*"},
        "StringEquals": {"aws:SourceAccount": "111111111111"},
    }
    assert any(s["Principal"] == {"Service": "events.amazonaws.com"} for s in statements)


def test_alarm_email_subscribes_only_when_configured(prod: Env, dev: Env) -> None:
    (subscription,) = _resources(prod.mon, "AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "oncall@example.com"
    assert _resources(dev.mon, "AWS::SNS::Subscription") == {}


def test_batch_job_failures_page_through_eventbridge(prod: Env) -> None:
    rule = prod.props(prod.monitoring.rules["BatchJobFailed"])
    queue_arn = {"Fn::GetAtt": [prod.ref(prod.cluster.job_queue)["Ref"], "JobQueueArn"]}
    assert rule["EventPattern"] == {
        "source": ["aws.batch"],
        "detail-type": ["Batch Job State Change"],
        "detail": {"status": ["FAILED"], "jobQueue": [queue_arn]},
    }
    (target,) = rule["Targets"]
    assert target["Arn"] == prod.ref(prod.monitoring.topic)
    assert "<detail-statusReason>" in target["InputTransformer"]["InputTemplate"]


def test_backup_failures_of_the_checkpoint_vault_page(prod: Env) -> None:
    assert prod.store is not None
    rule = prod.props(prod.monitoring.rules["CheckpointBackupFailed"])
    pattern = rule["EventPattern"]
    assert pattern["source"] == ["aws.backup"]
    assert pattern["detail-type"] == ["Backup Job State Change"]
    assert pattern["detail"]["state"] == ["FAILED", "ABORTED", "EXPIRED"]
    vault = prod.ref(prod.store.backup_vault)["Ref"]
    assert pattern["detail"]["backupVaultName"] == [{"Fn::GetAtt": [vault, "BackupVaultName"]}]
    assert [t["Arn"] for t in rule["Targets"]] == [prod.ref(prod.monitoring.topic)]


def test_batch_job_states_are_logged_encrypted_and_counted_by_status(prod: Env) -> None:
    log = prod.monitoring.job_state_log
    assert log is not None
    group = prod.props(log.log_group)
    assert group["LogGroupName"] == "/aws/events/cdk-neuron/prod/batch-job-states"
    assert group["RetentionInDays"] == 365
    assert group["KmsKeyId"] == {"Fn::GetAtt": [prod.ref(prod.monitoring.key)["Ref"], "Arn"]}
    (policy,) = _resources(prod.mon, "AWS::Logs::ResourcePolicy").values()
    assert "events.amazonaws.com" in json.dumps(policy["Properties"]["PolicyDocument"])
    rule = prod.props(log.rule)
    assert rule["EventPattern"]["detail"] == {
        "jobQueue": [{"Fn::GetAtt": [prod.ref(prod.cluster.job_queue)["Ref"], "JobQueueArn"]}]
    }
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [prod.ref(log.log_group)["Ref"], "Arn"]}
    metric = prod.props(log.metric_filter)["MetricTransformations"][0]
    assert metric["MetricNamespace"] == "CdkNeuron"
    assert metric["MetricName"] == "BatchJobStateChanges"
    assert metric["Dimensions"] == [
        {"Key": "Status", "Value": "$.detail.status"},
        {"Key": "JobQueue", "Value": "$.detail.jobQueue"},
    ]
    # No Lambda-backed custom resource for the log target.
    assert not any(k.startswith("Monitoring") for k in _resources(prod.mon, "AWS::Lambda::Function"))


def test_group_engine_and_no_store_mean_no_batch_or_backup_rules(dev: Env) -> None:
    assert dev.monitoring.rules == {}
    assert dev.monitoring.job_state_log is None
    assert _resources(dev.mon, "AWS::Events::Rule") == {}


def _dashboard_body(env: Env) -> str:
    (dashboard,) = _resources(env.mon, "AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    return json.dumps(body)


def test_one_dashboard_per_environment(prod: Env, dev: Env) -> None:
    names = {
        env.monitoring.environment: env.props(env.monitoring.dashboard)["DashboardName"]
        for env in (prod, dev)
    }
    assert names == {"prod": "Prod", "dev": "cdk-neuron-dev"}


def _alarm_and_dashboard_names(template: dict[str, Any]) -> set[str]:
    return {
        r["Properties"].get("AlarmName") or r["Properties"]["DashboardName"]
        for r in template["Resources"].values()
        if r["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard")
    }


def test_two_stacks_of_one_environment_share_no_alarm_or_dashboard_name() -> None:
    """PutMetricAlarm replaces an alarm of the same name: two stacks monitoring the same environment
    in one account and Region (the README's example beside this app's dev) must not share one."""
    app = make_app()
    stacks = []
    for stack_name in ("TeamA", "TeamB"):
        stack = PinnedStack(app, stack_name, region="us-east-1")
        cluster = BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=network(stack),
            instance_type="trn1.32xlarge",
            max_nodes=2,
            vpc_subnets=first_zone(stack),
            job_image=PUBLIC_IMAGE,
            node_metrics=NodeMetrics(environment="dev"),
        )
        NeuronMonitoring(stack, "Monitoring", environment="dev", cluster=cluster)
        stacks.append(stack)
    names = [_alarm_and_dashboard_names(t) for t in _templates(*stacks).values()]
    assert names[0] and names[1] and not names[0] & names[1]
    assert "TeamA-TrainingCoresIdle" in names[0] and "TeamA" in names[0]


def test_two_monitorings_in_one_stack_need_their_own_prefixes(prod: Env) -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^alarm_name_prefix=None: Prod/Monitoring already names its alarms Prod-\*; .*own alarm_name_prefix$",
    ):
        NeuronMonitoring(prod.workloads, "Second", environment="prod", cluster=prod.cluster)
    with pytest.raises(NeuronConfigError, match=r"^alarm_name_prefix='Prod': Prod/Monitoring already"):
        NeuronMonitoring(
            prod.workloads, "Third", environment="prod", cluster=prod.cluster, alarm_name_prefix="Prod"
        )


@pytest.mark.parametrize(
    "title",
    [
        "NeuronCore utilization (workload average)",
        "NeuronCore utilization by instance",
        "Device memory (HBM), fullest node",
        "Neuron errors (count per 5 min)",
        "Serving latency (target response time, s)",
        "Serving 5xx",
        "Serving hosts",
        "Training jobs: Batch state changes (per 5 min)",
        "Checkpoint EFS throughput",
    ],
)
def test_prod_dashboard_has_the_widgets(prod: Env, title: str) -> None:
    assert f'\\"title\\":\\"{title}\\"' in _dashboard_body(prod)


def test_dev_dashboard_shows_the_sagemaker_endpoint_and_no_batch(dev: Env) -> None:
    body = _dashboard_body(dev)
    assert "Serving latency (model latency, microseconds)" in body
    assert "ModelLatency" in body
    assert "Batch state changes" not in body and "EFS" not in body


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"cluster": None, "fleet": None}, "cluster", "give a training cluster"),
        ({"environment": "prod env"}, "environment", "letters, digits"),
        ({"alarm_email": "oncall"}, "alarm_email", "email address"),
        ({"namespace": "AWS/Neuron"}, "namespace", "reserved for AWS"),
        ({"thresholds": {"idle_percent": 3}}, "thresholds", "MonitoringThresholds"),
        ({"cluster": "my-cluster"}, "cluster", "TrainingCluster"),
        ({"checkpoints": "fs-123"}, "checkpoints", "CheckpointStore"),
        ({"alarm_name_prefix": "my alarms"}, "alarm_name_prefix", "letters, digits, '-' and '_'"),
        ({"alarm_name_prefix": ""}, "alarm_name_prefix", "1 to 200 characters"),
        ({"alarm_name_prefix": "x" * 201}, "alarm_name_prefix", "1 to 200 characters"),
        ({"environment": "staging"}, "cluster.node_metrics", "prod/CdkNeuron.*watches 'staging'"),
        ({"namespace": "Other", "cluster": None}, "fleet.node_metrics", "namespace 'CdkNeuron'.*'Other'"),
        (
            {"thresholds": MonitoringThresholds(efs_throughput_minutes=10)},
            "thresholds.efs_throughput_minutes",
            r"save_time_budget \(10 min\)",
        ),
    ],
)
def test_bad_props_are_refused_before_anything_is_built(
    prod: Env, kwargs: dict[str, Any], field: str, message: str
) -> None:
    props: dict[str, Any] = {
        "environment": "prod",
        "cluster": prod.cluster,
        "fleet": prod.fleet,
        "checkpoints": prod.store,
        **kwargs,
    }
    before = len(prod.workloads.node.children)
    with pytest.raises(NeuronConfigError, match=f"^{re.escape(field)}=.*{message}"):
        NeuronMonitoring(prod.workloads, "Refused", **props)
    assert len(prod.workloads.node.children) == before


# ---------------------------------------------------------------------------------------------
# Compliance and snapshots
# ---------------------------------------------------------------------------------------------


def test_nag_clean(prod: Env, dev: Env) -> None:
    for env in (prod, dev):
        assert nag_violations(env.app) == []


def test_put_metric_data_wildcard_is_acknowledged_precisely() -> None:
    from aws_cdk import aws_iam as iam
    from cdk_nag import AwsSolutionsChecks

    from cdk_neuron.iam_statements import node_metrics_policy

    app = make_app()
    stack = cdk.Stack(app, "Bare")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    ours = node_metrics_policy(stack, "Ours", role=role, namespace="CdkNeuron")
    # The same statement without the acknowledgment: the finding the acknowledgment answers.
    iam.ManagedPolicy(stack, "Plain", roles=[role], document=ours.document)
    flagged = {
        (v.rule_name, r.construct_path)
        for v in AwsSolutionsChecks().validate_scope(app).violations
        for r in v.violating_resources
    }
    assert ("AwsSolutions-IAM5[Resource::*]", "Bare/Plain/Resource") in flagged
    assert not any(path.startswith("Bare/Ours") for _, path in flagged)


def _monitoring_only(template: dict[str, Any]) -> dict[str, Any]:
    resources = {k: v for k, v in template["Resources"].items() if k.startswith("Monitoring")}
    return normalize_template({"Resources": resources})


def test_snapshot_prod(prod: Env, snapshot_json: SnapshotAssertion) -> None:
    assert _monitoring_only(prod.mon) == snapshot_json


def test_snapshot_dev(dev: Env, snapshot_json: SnapshotAssertion) -> None:
    assert normalize_template(dev.mon) == snapshot_json


@pytest.mark.parametrize(
    ("name", "rule"),
    gate_params(
        "monitoring_construct:prod",
        "monitoring_construct:dev-workloads",
        "monitoring_construct:dev-monitoring",
    ),
)
def test_deploy_rules(prod: Env, dev: Env, name: str, rule: str | None) -> None:
    stack = {
        "prod": prod.monitoring_stack,
        "dev-workloads": dev.workloads,
        "dev-monitoring": dev.monitoring_stack,
    }[name.split(":")[1]]
    env = prod if name.endswith(":prod") else dev
    check_gate(name, env.template(stack), rule)
