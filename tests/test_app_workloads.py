"""Training, serving and monitoring stacks as wired for the shipped environments: placement, storage, outputs."""

from __future__ import annotations

import os
from typing import Any

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app
from aws_cdk.assertions import Template

from cdk_support import make_app
from stacks.app_builder import build_app
from stacks.config import load_environments

ENVIRONMENTS = load_environments(shipped_environments())
ENV_NAMES = list(ENVIRONMENTS)


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


def only(template: dict[str, Any], type_: str) -> dict[str, Any]:
    (resource,) = [r for r in template["Resources"].values() if r["Type"] == type_]
    return resource


def all_of(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == type_]


def declared_outputs(template: dict[str, Any]) -> set[str]:
    """The stack's own outputs, without those CDK adds for cross-stack references."""
    return {
        name
        for name in template.get("Outputs", {})
        if not name.startswith(("ExportsOutput", "PublishOutput"))
    }


def from_network(built: SynthesizedApp, env: str, value: Any) -> Any:
    """What a value imported from the network stack (Fn::GetStackOutput) is there."""
    imported = value["Fn::GetStackOutput"]
    assert imported["StackName"] == f"{env}-Network"
    return built.template(env, "Network")["Outputs"][imported["OutputName"]]["Value"]


def training_subnet_id(built: SynthesizedApp, env: str) -> str:
    network = built.stack(env, "Network")
    return str(network.get_logical_id(network.training_subnet.node.default_child))


@pytest.mark.parametrize("env", ENV_NAMES)
def test_the_compute_environment_runs_in_the_training_subnet_only(built: SynthesizedApp, env: str) -> None:
    # The cluster's, and prod's compile nodes' (BatchModelCompilation): both in the training subnet.
    environments = all_of(built.template(env, "Training"), "AWS::Batch::ComputeEnvironment")
    config = ENVIRONMENTS[env].compilation
    assert len(environments) == (2 if config is not None and config.runs_on == "training-cluster" else 1)
    for environment in environments:
        (subnet,) = environment["Properties"]["ComputeResources"]["Subnets"]
        assert from_network(built, env, subnet) == {"Ref": training_subnet_id(built, env)}


def test_dev_checkpoints_are_one_zone_in_the_training_subnet_and_destroyed_with_the_stack(
    built: SynthesizedApp,
) -> None:
    template = built.template("dev", "Training")
    file_system = only(template, "AWS::EFS::FileSystem")
    subnet_id = training_subnet_id(built, "dev")
    # The AZ name comes from the pinned subnet at deploy time: never written into the template.
    assert from_network(built, "dev", file_system["Properties"]["AvailabilityZoneName"]) == {
        "Fn::GetAtt": [subnet_id, "AvailabilityZone"]
    }
    (mount_target,) = all_of(template, "AWS::EFS::MountTarget")
    assert from_network(built, "dev", mount_target["Properties"]["SubnetId"]) == {"Ref": subnet_id}
    assert file_system["DeletionPolicy"] == "Delete"


@pytest.mark.parametrize("env", ["staging", "prod"])
def test_regional_checkpoints_have_a_mount_target_per_az_and_are_retained(
    built: SynthesizedApp, env: str
) -> None:
    template = built.template(env, "Training")
    file_system = only(template, "AWS::EFS::FileSystem")
    assert "AvailabilityZoneName" not in file_system["Properties"]
    # Kept on update and delete; a rolled-back first create deletes it, so the retry can succeed.
    assert (file_system["DeletionPolicy"], file_system["UpdateReplacePolicy"]) == (
        "RetainExceptOnCreate",
        "Retain",
    )
    assert len(all_of(template, "AWS::EFS::MountTarget")) == len(ENVIRONMENTS[env].az_ids)


@pytest.mark.parametrize("env", ENV_NAMES)
def test_checkpoint_backups_keep_the_configured_days(built: SynthesizedApp, env: str) -> None:
    plan = only(built.template(env, "Training"), "AWS::Backup::BackupPlan")["Properties"]["BackupPlan"]
    (rule,) = plan["BackupPlanRule"]
    assert rule["Lifecycle"]["DeleteAfterDays"] == ENVIRONMENTS[env].storage.backup_retention_days


@pytest.mark.parametrize("env", ENV_NAMES)
def test_training_outputs_name_the_queue_definition_file_system_and_cache(
    built: SynthesizedApp, env: str
) -> None:
    outputs = built.template(env, "Training")["Outputs"]
    compilation = ENVIRONMENTS[env].compilation
    compiles = compilation is not None and compilation.runs_on == "fargate"  # its task's subnets
    assert declared_outputs(built.template(env, "Training")) == {
        "JobQueueArn",
        "JobDefinitionArn",
        "CheckpointFileSystemId",
        "CompileCacheUrl",
    } | ({"CompileSubnetIds"} if compiles else set())
    assert outputs["CheckpointFileSystemId"]["Value"]["Ref"].startswith("CheckpointsFileSystem")


def test_ec2_fleets_span_every_az_and_keep_their_capacity_bounds(built: SynthesizedApp) -> None:
    for env in ("dev", "prod"):
        group = only(built.template(env, "Serving"), "AWS::AutoScaling::AutoScalingGroup")["Properties"]
        serving = ENVIRONMENTS[env].serving
        assert (int(group["MinSize"]), int(group["MaxSize"])) == (serving.min_capacity, serving.max_capacity)
        assert len(group["VPCZoneIdentifier"]) == len(ENVIRONMENTS[env].az_ids)
    assert len(ENVIRONMENTS["prod"].az_ids) >= 2


def test_staging_serves_from_a_sagemaker_endpoint(built: SynthesizedApp) -> None:
    template = built.template("staging", "Serving")
    config = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]
    assert [v["InstanceType"] for v in config["ProductionVariants"]] == ["ml.inf2.xlarge"]
    assert declared_outputs(template) == {"EndpointName"}
    assert not all_of(template, "AWS::AutoScaling::AutoScalingGroup")


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_ec2_serving_outputs_the_url(built: SynthesizedApp, env: str) -> None:
    assert declared_outputs(built.template(env, "Serving")) == {"ServingUrl"}


@pytest.mark.parametrize("env", ENV_NAMES)
def test_the_scan_skips_sit_on_the_resources_they_excuse(built: SynthesizedApp, env: str) -> None:
    def skipped(template: dict[str, Any]) -> dict[str, set[str]]:
        return {
            resource["Type"]: {s["id"] for s in resource["Metadata"]["checkov"]["skip"]}
            for resource in template["Resources"].values()
            if "checkov" in resource.get("Metadata", {}) and resource["Type"] != "AWS::Lambda::Function"
        }

    assert skipped(built.template(env, "Training")) == {
        "AWS::S3::Bucket": {"CKV_AWS_18", "CKV_AWS_21"},
        "AWS::KMS::Key": {"CKV_AWS_33"},
    }
    expected = {}
    if ENVIRONMENTS[env].serving.backend == "ec2":
        expected["AWS::S3::Bucket"] = {"CKV_AWS_18"}
        if ENVIRONMENTS[env].serving.certificate_arn is None:
            expected["AWS::ElasticLoadBalancingV2::Listener"] = {"CKV_AWS_2", "CKV_AWS_103"}
    assert skipped(built.template(env, "Serving")) == expected


@pytest.mark.parametrize("env", ENV_NAMES)
def test_monitoring_reads_the_other_stacks_through_weak_references(built: SynthesizedApp, env: str) -> None:
    # Like the rest of the app: no export locks the fleet's load balancer or the cluster's queue.
    text = built.template_path(env, "Monitoring").read_text()
    assert "Fn::GetStackOutput" in text
    assert "Fn::ImportValue" not in text
    assert declared_outputs(built.template(env, "Monitoring")) == {"AlarmTopicArn", "DashboardName"}


@pytest.mark.parametrize("env", ENV_NAMES)
def test_every_node_publishes_into_the_monitoring_namespace_only(built: SynthesizedApp, env: str) -> None:
    def statements(stack_id: str) -> list[dict[str, Any]]:
        return [
            statement
            for resource in built.template(env, stack_id)["Resources"].values()
            if resource["Type"] == "AWS::IAM::ManagedPolicy"
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
            if statement.get("Sid") == "PublishNeuronMetrics"
        ]

    namespace = {"StringEquals": {"cloudwatch:namespace": "CdkNeuron"}}
    # The nodes' own stacks grant it (the monitoring stack only reads): training always, serving
    # where the backend is EC2 (SageMaker runs none of our code on its instances).
    assert [s["Condition"] for s in statements("Training")] == [namespace]
    serving = [s["Condition"] for s in statements("Serving")]
    assert serving == ([namespace] if ENVIRONMENTS[env].serving.backend == "ec2" else [])
    assert statements("Monitoring") == []


def test_the_auto_scaling_group_engine_outputs_its_group_instead_of_a_queue(built: SynthesizedApp) -> None:

    environments = shipped_environments()
    environments["dev"]["training"]["engine"] = "auto-scaling-group"
    del environments["dev"]["training"]["job_image"]
    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    try:
        (stage,) = build_app(make_app(environments=environments, env="dev"))
    finally:
        if saved is not None:
            os.environ["CDK_DEFAULT_ACCOUNT"] = saved
    template = Template.from_stack(stage.training).to_json()
    assert declared_outputs(template) == {
        "AutoScalingGroupName",
        "CheckpointFileSystemId",
        "CompileCacheUrl",
        "CompileSubnetIds",
    }
    assert not all_of(template, "AWS::Batch::JobQueue")


# --------------------------------------------------------------------------------------------
# The compile task: from a training run's checkpoint to the fleet's artifact, in the app itself
# --------------------------------------------------------------------------------------------


def _listed(value: Any) -> list[Any]:
    """The items of an Fn::Join (CDK renders a join of one item as the item itself)."""
    return list(value["Fn::Join"][1]) if isinstance(value, dict) and "Fn::Join" in value else [value]


@pytest.mark.parametrize("env", ENV_NAMES)
def test_the_compile_task_is_where_cdk_json_says_and_the_cli_looks(built: SynthesizedApp, env: str) -> None:
    template = built.template(env, "Training")
    config = ENVIRONMENTS[env]
    if config.compilation is None or config.compilation.runs_on == "training-cluster":
        assert not all_of(template, "AWS::ECS::TaskDefinition") and not all_of(
            template, "AWS::ECR::Repository"
        )
        return
    # The logical ids the CLI reads from cdk.json alone (stacks.config.compilation_deployment).
    resources = template["Resources"]
    assert resources["CompileCluster"]["Type"] == "AWS::ECS::Cluster"
    assert resources["CompileTaskDefinition"]["Type"] == "AWS::ECS::TaskDefinition"
    assert resources["CompileSecurityGroup"]["Type"] == "AWS::EC2::SecurityGroup"
    containers = {
        c["Name"]: c for c in resources["CompileTaskDefinition"]["Properties"]["ContainerDefinitions"]
    }
    # The export compiles in the fleet's own image; the CLI steps pull through the region's ECR cache.
    assert containers["export"]["Image"] == config.serving.engine.image.uri(config.region)
    assert containers["fetch"]["Image"].endswith(
        f".dkr.ecr.{config.region}.amazonaws.com/cdk-neuron-{env}/aws-cli/aws-cli:2.22.35"
    )
    environment = {e["Name"]: e["Value"] for e in containers["export"]["Environment"]}
    assert environment["NEURON_COMPILE_CACHE_URL"] == template["Outputs"]["CompileCacheUrl"]["Value"]
    upload = {e["Name"]: e["Value"] for e in containers["upload"]["Environment"]}
    assert upload["ARTIFACT_PREFIX"] == config.compilation.artifact_prefix
    # It mounts the environment's checkpoint store, read-only.
    [volume] = [
        v
        for v in resources["CompileTaskDefinition"]["Properties"]["Volumes"]
        if "EFSVolumeConfiguration" in v
    ]
    assert volume["EFSVolumeConfiguration"]["FilesystemId"]["Ref"].startswith("CheckpointsFileSystem")
    # It writes only under the artifact prefix of the fleet's bucket.
    [writes] = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for k, r in resources.items()
        if k.startswith("CompilationArtifactWrites")
    ]
    [put] = [s for s in writes if s["Sid"] == "WriteArtifacts"]
    assert f":s3:::{config.compilation.artifact_bucket}/{config.compilation.artifact_prefix}*" in str(
        put["Resource"]
    )
    # Its subnets: the checkpoint store's (the training subnet for One Zone, its only mount target).
    assert len(_listed(template["Outputs"]["CompileSubnetIds"]["Value"])) == (
        1 if config.storage.one_zone else len(config.az_ids)
    )
    # The compile logs: encrypted with the compile cache's key, kept as configured, deleted with dev.
    [logs] = [r for k, r in resources.items() if k.startswith("CompilationLogs")]
    assert logs["Properties"]["KmsKeyId"]["Fn::GetAtt"][0].startswith("CompileCacheKey")
    assert logs["Properties"]["RetentionInDays"] == config.compilation.log_retention_days
    [repository] = all_of(template, "AWS::ECR::Repository")
    # The image cache always goes with the stack, emptied (a retained one would block the next create);
    # the logs follow the environment's removal policy.
    assert repository["DeletionPolicy"] == "Delete" and repository["Properties"]["EmptyOnDelete"] is True
    assert logs["DeletionPolicy"] == (
        "Delete" if config.removal_policy == "destroy" else "RetainExceptOnCreate"
    )


def test_prods_70b_compiles_on_its_training_cluster_where_cdk_json_says_and_the_cli_looks(
    built: SynthesizedApp,
) -> None:
    template = built.template("prod", "Training")
    config = ENVIRONMENTS["prod"]
    assert config.compilation is not None and config.compilation.runs_on == "training-cluster"
    resources = template["Resources"]
    # The logical ids the CLI reads from cdk.json alone (stacks.config.compilation_deployment).
    queue, definition = resources["CompileJobQueue"], resources["CompileJobDefinition"]
    assert (queue["Type"], definition["Type"]) == ("AWS::Batch::JobQueue", "AWS::Batch::JobDefinition")
    # On a compute environment of its own (the cluster's launch template, one node at most, min 0):
    # training never lands on a node a compile ran on.
    [environment] = queue["Properties"]["ComputeEnvironmentOrder"]
    own = resources[environment["ComputeEnvironment"]["Fn::GetAtt"][0]]["Properties"]["ComputeResources"]
    assert (own["MinvCpus"], own["MaxvCpus"]) == (0, 128)
    [task] = definition["Properties"]["EcsProperties"]["TaskProperties"]
    containers = {c["Name"]: c for c in task["Containers"]}
    # The export in the fleet's image, fetch and upload in the training job image (cached on the nodes).
    assert containers["export"]["Image"] == config.serving.engine.image.uri(config.region)
    assert containers["fetch"]["Image"] == containers["upload"]["Image"] == config.training.job_image
    environment = {e["Name"]: e["Value"] for e in containers["export"]["Environment"]}
    assert environment["NEURON_COMPILE_CACHE_URL"] == template["Outputs"]["CompileCacheUrl"]["Value"]
    [efs] = [v for v in task["Volumes"] if "EfsVolumeConfiguration" in v]
    assert efs["EfsVolumeConfiguration"]["FileSystemId"]["Ref"].startswith("CheckpointsFileSystem")
    assert efs["EfsVolumeConfiguration"]["TransitEncryption"] == "ENABLED"
    # Its logs: the compile cache's key, kept as configured; retained with prod's data.
    [logs] = [r for k, r in resources.items() if k.startswith("CompilationLogs")]
    assert logs["Properties"]["KmsKeyId"]["Fn::GetAtt"][0].startswith("CompileCacheKey")
    assert logs["DeletionPolicy"] == "RetainExceptOnCreate"
    assert "CompileSubnetIds" not in template["Outputs"]


def test_without_a_nat_the_compile_task_runs_in_isolated_subnets_with_its_endpoints() -> None:
    environments = shipped_environments()
    environments["dev"]["network"] = {"cidr": "10.40.0.0/16", "nat_gateways": 0, "endpoint_azs": "training"}
    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    try:
        (stage,) = build_app(make_app(environments=environments, env="dev"))
    finally:
        if saved is not None:
            os.environ["CDK_DEFAULT_ACCOUNT"] = saved
    network = Template.from_stack(stage.network).to_json()
    endpoints = {k for k, r in network["Resources"].items() if r["Type"] == "AWS::EC2::VPCEndpoint"}
    for name in ("EcrApi", "EcrDocker", "Logs", "S3"):  # the task's image pulls and logs, S3 the gateway
        assert any(k.startswith(f"Vpc{name}") for k in endpoints), name
    training = Template.from_stack(stage.training).to_json()
    [subnet] = _listed(training["Outputs"]["CompileSubnetIds"]["Value"])
    # The training subnet (One Zone store), which without a NAT is an isolated subnet of the VPC.
    assert "IsolatedSubnet" in str(subnet) or "PrivateSubnet" in str(subnet)
    assert stage.training.compilation is not None and stage.training.compilation.has_internet is False
