"""A user's app that builds nothing of ours: it imports a checkpoint file system, a Batch queue and two
fleets deployed elsewhere, grants and connects to them, watches them with NeuronMonitoring and
builds its own alarms from their ``metric_*()`` methods.

What it proves: the imports create no resource of the imported kind, every grant names the
imported ARNs, every rule the imported groups, and every alarm the imported dimensions.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdk_support import make_app, nag_violations, template_of

ACCOUNT = "111111111111"
REGION = "us-east-1"
QUEUE = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/prod-training"
DEFINITION = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-definition/prod-training:7"
ALB = "app/prod-serving/0123456789abcdef"
TARGET_GROUP = "targetgroup/prod-replicas/fedcba9876543210"


@pytest.fixture(scope="module")
def reuse() -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_cloudwatch as cw
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_iam as iam

    from cdk_neuron.monitoring import NeuronMonitoring, NodeMetrics
    from cdk_neuron.serving import Ec2InferenceFleet, SageMakerInferenceFleet
    from cdk_neuron.storage import CheckpointStore
    from cdk_neuron.training import BatchTrainingCluster

    stack = cdk.Stack(make_app(), "Reuse", env=cdk.Environment(account=ACCOUNT, region=REGION))
    metrics = NodeMetrics(environment="prod")
    store = CheckpointStore.from_checkpoint_store_attributes(
        stack,
        "Checkpoints",
        file_system_id="fs-0123456789abcdef0",
        access_point_id="fsap-0123456789abcdef0",
        security_group_id="sg-0aaaaaaaaaaaaaaa1",
    )
    cluster = BatchTrainingCluster.from_batch_training_cluster_attributes(
        stack,
        "Cluster",
        job_queue_arn=QUEUE,
        job_definition_arn=DEFINITION,
        security_group_id="sg-0aaaaaaaaaaaaaaa2",
        node_metrics=metrics,
    )
    fleet = Ec2InferenceFleet.from_ec2_inference_fleet_attributes(
        stack,
        "Fleet",
        load_balancer_full_name=ALB,
        target_group_full_name=TARGET_GROUP,
        fleet_id="c8" + "0" * 40,
        security_group_id="sg-0aaaaaaaaaaaaaaa3",
        node_metrics=metrics,
    )
    endpoint = SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes(
        stack, "Endpoint", endpoint_name="prod-llama"
    )

    # The user's own pieces: a pipeline role that submits jobs and calls the endpoint, and a
    # security group (e.g. a notebook's) that reaches the fleet and mounts the checkpoints.
    pipeline = iam.Role(stack, "Pipeline", assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"))
    cluster.grant_submit_jobs(pipeline)
    endpoint.grant_invoke(pipeline)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"]
    )
    notebook = ec2.SecurityGroup(stack, "Notebook", vpc=vpc, allow_all_outbound=False)
    fleet.connections.allow_default_port_from(notebook)
    store.connections.allow_default_port_from(notebook)

    topic_alarms = NeuronMonitoring(
        stack, "Monitoring", environment="prod", cluster=cluster, fleet=fleet, checkpoints=store
    )
    own = {
        "FleetErrors": cw.Alarm(
            stack,
            "FleetErrors",
            metric=fleet.metric_http_code_target_5xx(period=cdk.Duration.minutes(1)),
            threshold=10,
            evaluation_periods=3,
        ),
        "CoresIdle": cw.Alarm(
            stack,
            "CoresIdle",
            metric=cluster.metric_neuron_core_utilization(),
            threshold=5,
            evaluation_periods=6,
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        ),
        "Throughput": cw.Alarm(
            stack,
            "Throughput",
            metric=store.metric_throughput_utilization(),
            threshold=95,
            evaluation_periods=3,
        ),
        "EndpointLatency": cw.Alarm(
            stack,
            "EndpointLatency",
            metric=endpoint.metric_model_latency(statistic="p99"),
            threshold=5_000_000,
            evaluation_periods=3,
        ),
    }
    # The user pages through the monitor's topic, and answers for the role it owns.
    from aws_cdk import aws_cloudwatch_actions as actions

    for alarm in own.values():
        alarm.add_alarm_action(actions.SnsAction(topic_alarms.topic))
    for rule, reason in {
        "AwsSolutions-IAM5[Resource::*]": "batch:DescribeJobs and batch:ListJobs support no resource-level permissions; "
        "SubmitJob is scoped to the one queue and job definition.",
        "NIST.800.53.R5-IAMNoInlinePolicy": "The pipeline role is this app's own, with the grants CDK adds.",
    }.items():
        cdk.Validations.of(pipeline).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))
    return {"stack": stack, "template": template_of(stack), "monitoring": topic_alarms, "own": own}


def _of_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def test_the_imports_create_nothing_they_import(reuse: dict[str, Any]) -> None:
    types = {r["Type"] for r in reuse["template"]["Resources"].values()}
    imported_kinds = {
        "AWS::EFS::FileSystem",
        "AWS::EFS::AccessPoint",
        "AWS::Batch::JobQueue",
        "AWS::Batch::JobDefinition",
        "AWS::Batch::ComputeEnvironment",
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "AWS::AutoScaling::AutoScalingGroup",
        "AWS::SageMaker::Endpoint",
    }
    assert types & imported_kinds == set()


def test_grants_name_the_imported_queue_definition_and_endpoint(reuse: dict[str, Any]) -> None:
    text = json.dumps(_of_type(reuse["template"], "AWS::IAM::Policy"))
    assert QUEUE in text and DEFINITION in text
    assert "batch:SubmitJob" in text
    assert "sagemaker:InvokeEndpoint" in text and "endpoint/prod-llama" in text


def test_connections_open_the_imported_groups_only_to_the_notebook(reuse: dict[str, Any]) -> None:
    rules = [r["Properties"] for r in _of_type(reuse["template"], "AWS::EC2::SecurityGroupIngress").values()]
    by_group = {r["GroupId"]: (r["FromPort"], r["SourceSecurityGroupId"]) for r in rules}
    assert by_group["sg-0aaaaaaaaaaaaaaa3"][0] == 80  # the fleet's listener
    assert by_group["sg-0aaaaaaaaaaaaaaa1"][0] == 2049  # NFS
    assert all("Notebook" in json.dumps(source) for _, source in by_group.values())


def test_alarms_watch_the_imported_dimensions(reuse: dict[str, Any]) -> None:
    text = json.dumps(_of_type(reuse["template"], "AWS::CloudWatch::Alarm"))
    assert ALB in text and TARGET_GROUP in text
    assert "fs-0123456789abcdef0" in text
    assert '"prod-llama"' in text
    assert '"Workload", "Value": "training"' in text.replace('"Name": ', "").replace("{", "").replace(
        "}", ""
    ) or ("training" in text)
    # The user's own alarms and the monitor's, side by side.
    assert {"FleetErrors", "CoresIdle", "Throughput", "EndpointLatency"} <= set(reuse["own"])
    assert {"TrainingCoresIdle", "Serving5xxRate", "CheckpointThroughputSaturated"} <= set(
        reuse["monitoring"].alarms
    )
    # An imported store's backup vault is unknown: no backup-failure rule for it.
    assert "CheckpointBackupFailed" not in reuse["monitoring"].rules


def test_the_reuse_app_is_nag_clean(reuse: dict[str, Any]) -> None:
    """Clean once the user answers for its own role (as grant_submit_jobs says it must)."""
    assert nag_violations(reuse["stack"]) == []
