"""AutoScalingTrainingCluster: a self-managed trn1.32xlarge node group."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2
from deploy_rules_gate import check_gate, gate_params
from test_training_support import PinnedStack, Scenario, build, first_zone

from cdk_neuron import timeouts
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import AutoScalingTrainingCluster
from cdk_support import flatten_user_data, parse_settings, settings_in


@pytest.fixture(scope="module")
def group() -> Scenario:
    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> AutoScalingTrainingCluster:
        store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
        cache = CompileCache(stack, "CompileCache")
        extras.update(store=store, cache=cache)
        return AutoScalingTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.32xlarge",
            max_nodes=16,
            vpc_subnets=first_zone(stack),
            checkpoints=store,
            compile_cache=cache,
            environment={"XLA_USE_BF16": "1"},
        )

    return build("us-east-1", make)


def _user_data(s: Scenario) -> str:
    """The launch template's user data with every token rendered as JSON, for text checks."""
    raw = s.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"]
    return flatten_user_data(raw, token="")


def _settings(s: Scenario, name: str) -> dict[str, str]:
    """One settings file of the node setup part, with tokens as JSON (``{"Ref": ...}``)."""
    raw = s.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"]

    def walk(node: Any) -> str:
        if isinstance(node, str):
            return node
        if isinstance(node, dict) and "Fn::Join" in node:
            return str(node["Fn::Join"][0]).join(walk(p) for p in node["Fn::Join"][1])
        if isinstance(node, dict) and "Fn::Base64" in node:
            return walk(node["Fn::Base64"])
        return json.dumps(node).replace("'", "")

    return parse_settings(settings_in(walk(raw))[name])


def test_group_scales_from_zero_in_the_placement_group(group: Scenario) -> None:
    props = group.one("AWS::AutoScaling::AutoScalingGroup")
    assert props["MinSize"] == "0"
    assert props["MaxSize"] == "16"
    # No DesiredCapacity: a size set by the team's scheduler survives the next deployment.
    assert "DesiredCapacity" not in props
    # The L2 has no placement-group prop; set on the L1 (escape hatch).
    assert props["PlacementGroup"] == {
        "Fn::GetAtt": [group.logical_id(group.cluster.placement_group), "GroupName"]
    }
    assert props["LaunchTemplate"]["Version"] == {
        "Fn::GetAtt": [group.logical_id(group.cluster.launch_template), "LatestVersionNumber"]
    }
    assert len(props["VPCZoneIdentifier"]) == 1


def test_no_batch_resources(group: Scenario) -> None:
    for type_ in ("AWS::Batch::ComputeEnvironment", "AWS::Batch::JobQueue", "AWS::Batch::JobDefinition"):
        group.template.resource_count_is(type_, 0)
    # The Batch attributes are not there to be None: they belong to BatchTrainingCluster.
    for name in ("job_queue", "job_definition", "add_job_definition", "grant_submit_jobs", "job_role"):
        assert not hasattr(group.cluster, name)
    assert group.cluster.auto_scaling_group is not None


def test_nodes_get_the_instance_profile_and_eight_efa_interfaces(group: Scenario) -> None:
    data = group.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert "IamInstanceProfile" in data
    assert len(data["NetworkInterfaces"]) == 8
    assert "SecurityGroupIds" not in data
    assert data["MetadataOptions"]["HttpTokens"] == "required"


def test_node_setup_settings_mount_checkpoints_with_tls_and_iam(group: Scenario) -> None:
    store = group.extras["store"]
    training = _settings(group, "training.env")
    assert group.logical_id(store.access_point) in training["CHECKPOINT_ACCESS_POINT_ID"]
    assert group.logical_id(store.file_system) in training["CHECKPOINT_FILE_SYSTEM_ID"]
    assert training["CHECKPOINT_DIR"] == "/checkpoints"
    assert (training["ENGINE"], training["SCRATCH_DIR"], training["NOFILE_LIMIT"]) == (
        "auto-scaling-group",
        "/scratch",
        "1048576",
    )


def test_user_data_runs_efa_install_then_node_setup_with_the_profile(group: Scenario) -> None:
    text = _user_data(group)
    assert "Content-Type: multipart/mixed" in text
    boothook = text.index("Content-Type: text/cloud-boothook")
    shell = text.index("Content-Type: text/x-shellscript")
    assert boothook < text.index("cdk_neuron_bootstrap training/efa-install.sh") < shell
    assert shell < text.index("cdk_neuron_bootstrap training/node-setup.sh")
    profile = _settings(group, "training-profile.env")
    assert {
        k: profile[k] for k in ("FI_PROVIDER", "NEURON_TP_DEGREE", "NPROC_PER_NODE", "CHECKPOINT_DIR")
    } == {
        "FI_PROVIDER": "efa",
        "NEURON_TP_DEGREE": "32",
        "NPROC_PER_NODE": "32",
        "CHECKPOINT_DIR": "/checkpoints",
    }
    assert profile["XLA_USE_BF16"] == "1"
    assert group.logical_id(group.extras["cache"].bucket) in profile["NEURON_COMPILE_CACHE_URL"]


def test_node_role_gets_checkpoints_and_cache_but_no_ecs_agent_policy(group: Scenario) -> None:
    role = group.json["Resources"][group.logical_id(group.cluster.role)]["Properties"]
    assert [arn["Fn::Join"][1][-1] for arn in role["ManagedPolicyArns"]] == [
        ":iam::aws:policy/AmazonSSMManagedInstanceCore"
    ]
    ref = {"Ref": group.logical_id(group.cluster.role)}
    actions = {
        action
        for policy in group.resources("AWS::IAM::Policy").values()
        if ref in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    assert {"elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite", "s3:PutObject"} <= actions
    assert not any(a.startswith("ecs:") for a in actions)


def test_nfs_is_open_from_the_nodes_to_the_store(group: Scenario) -> None:
    node_group = {"Fn::GetAtt": [group.logical_id(group.cluster.security_group), "GroupId"]}
    store_group = {"Fn::GetAtt": [group.logical_id(group.extras["store"].security_group), "GroupId"]}
    egress = [r["Properties"] for r in group.resources("AWS::EC2::SecurityGroupEgress").values()]
    assert any(r["GroupId"] == node_group and r["DestinationSecurityGroupId"] == store_group
               and r["FromPort"] == 2049 for r in egress)  # fmt: skip


def test_cdk_nag_packs_are_clean(group: Scenario) -> None:
    assert group.nag() == []


def test_notification_topic_receives_scaling_events() -> None:
    from aws_cdk import aws_sns as sns

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> AutoScalingTrainingCluster:
        topic = sns.Topic(stack, "Scaling")
        extras["topic"] = topic
        return AutoScalingTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.32xlarge",
            max_nodes=2,
            vpc_subnets=first_zone(stack),
            desired_capacity=2,
            notification_topic=topic,
        )

    s = build("us-east-1", make)
    props = s.one("AWS::AutoScaling::AutoScalingGroup")
    assert props["DesiredCapacity"] == "2"
    (notification,) = props["NotificationConfigurations"]
    assert notification["TopicARN"] == {"Ref": s.logical_id(s.extras["topic"])}
    assert s.cluster.user_data is s.cluster.launch_template.user_data


@pytest.mark.parametrize(("name", "rule"), gate_params("training_asg:group"))
def test_deploy_rules(group: Scenario, name: str, rule: str | None) -> None:
    check_gate(name, group.json, rule)


def test_self_managed_nodes_record_their_topology_and_export_the_rank_order_settings(group: Scenario) -> None:
    # The same launcher runs on the hosts (/opt/cdk-neuron/training/launcher.sh, docs/neuronlink.md):
    # node-setup records the topology, the profile tells the launcher to use it.
    training = _settings(group, "training.env")
    assert (training["TOPOLOGY_FILE"], training["ULTRASERVER"]) == ("/var/lib/cdk-neuron/topology.json", "0")
    profile = _settings(group, "training-profile.env")
    assert profile["CDK_NEURON_RANK_ORDER"] == "topology"
    assert profile["CDK_NEURON_TOPOLOGY_FILE"] == "/var/lib/cdk-neuron/topology.json"
    assert profile["CDK_NEURON_DOMAIN_GROUP_INSTANCES"] == "1"
    ref = {"Ref": group.logical_id(group.cluster.role)}
    statements = [
        statement
        for policy in group.resources("AWS::IAM::Policy").values()
        if ref in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert {"Action": "ec2:DescribeInstanceTopology", "Effect": "Allow", "Resource": "*"} in statements


def test_nodes_that_keep_failing_their_boot_set_the_group_to_zero(group: Scenario) -> None:
    # Issue 22, defect 5: the group relaunched a node that failed deterministically, forever.
    alarm_id = group.logical_id(group.cluster.boot_failure_alarm)
    alarm = group.json["Resources"][alarm_id]["Properties"]
    assert (alarm["MetricName"], alarm["Threshold"]) == ("BootFailures", timeouts.BOOT_FAILURE_LIMIT)
    ((policy_id, policy),) = [
        (k, v["Properties"])
        for k, v in group.resources("AWS::AutoScaling::ScalingPolicy").items()
        if v["Properties"].get("AdjustmentType") == "ExactCapacity"
    ]
    assert policy["AutoScalingGroupName"] == {"Ref": group.logical_id(group.cluster.auto_scaling_group)}
    assert policy["PolicyType"] == "StepScaling"
    assert policy["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 0}]
    assert alarm["AlarmActions"] == [{"Ref": policy_id}]
