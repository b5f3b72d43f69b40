"""HyperPodTrainingCluster: a SageMaker HyperPod Slurm cluster of Trainium workers."""

from __future__ import annotations

import base64
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk.assertions import Match
from deploy_rules_gate import check_gate, gate_params
from test_training_support import PinnedStack, Scenario, build, first_zone, network

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import AutoScalingTrainingCluster, Capacity, HyperPodTrainingCluster
from cdk_support import make_app

PLAN_ARN = "arn:aws:sagemaker:us-east-1:111111111111:training-plan/trn1-week"


@pytest.fixture(scope="module")
def hyperpod(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    package = tmp_path_factory.mktemp("efs") / "amazon-efs-utils.deb"
    package.write_bytes(b"not really a deb")

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> HyperPodTrainingCluster:
        store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
        cache = CompileCache(stack, "CompileCache")
        extras.update(store=store, cache=cache)
        return HyperPodTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.32xlarge",
            max_nodes=4,
            worker_count=2,
            vpc_subnets=first_zone(stack),
            checkpoints=store,
            efs_utils_package=s3_assets.Asset(stack, "EfsUtils", path=str(package)),
            compile_cache=cache,
            capacity=Capacity.training_plan(PLAN_ARN),
            environment={"XLA_USE_BF16": "1"},
        )

    return build("us-east-1", make)


def _groups(s: Scenario) -> dict[str, dict[str, Any]]:
    return {g["InstanceGroupName"]: g for g in s.one("AWS::SageMaker::Cluster")["InstanceGroups"]}


def _write(s: Scenario) -> dict[str, Any]:
    return s.one("Custom::CdkNeuronLifecycleScripts")


def test_slurm_through_the_api_with_a_controller_and_trainium_workers(hyperpod: Scenario) -> None:
    cluster = hyperpod.one("AWS::SageMaker::Cluster")
    assert cluster["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    assert cluster["NodeRecovery"] == "Automatic"
    groups = _groups(hyperpod)
    assert set(groups) == {"controller", "trn"}
    assert groups["controller"]["SlurmConfig"] == {"NodeType": "Controller"}
    assert groups["controller"]["InstanceCount"] == 1
    assert groups["controller"]["InstanceType"] == "ml.m5.xlarge"
    workers = groups["trn"]
    assert workers["InstanceType"] == "ml.trn1.32xlarge"
    assert workers["InstanceCount"] == 2
    assert workers["SlurmConfig"] == {"NodeType": "Compute", "PartitionNames": ["train"]}
    assert workers["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert workers["ThreadsPerCore"] == 1
    assert workers["TrainingPlanArn"] == PLAN_ARN
    assert "TrainingPlanArn" not in groups["controller"]


def test_one_az_subnet_and_a_security_group_open_only_to_itself(hyperpod: Scenario) -> None:
    vpc_config = hyperpod.one("AWS::SageMaker::Cluster")["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 1
    group_id = vpc_config["SecurityGroupIds"][0]["Fn::GetAtt"][0]
    ingress = hyperpod.template.find_resources(
        "AWS::EC2::SecurityGroupIngress", {"Properties": {"GroupId": {"Fn::GetAtt": [group_id, "GroupId"]}}}
    )
    assert [r["Properties"]["IpProtocol"] for r in ingress.values()] == ["-1"]
    for rule in ingress.values():
        assert rule["Properties"]["SourceSecurityGroupId"] == {"Fn::GetAtt": [group_id, "GroupId"]}
    group = hyperpod.json["Resources"][group_id]["Properties"]
    assert {"CidrIp": "0.0.0.0/0", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 443} in [
        {k: v for k, v in e.items() if k != "Description"} for e in group["SecurityGroupEgress"]
    ]
    assert all(
        e.get("CidrIp") != "0.0.0.0/0" or e["IpProtocol"] == "tcp" for e in group["SecurityGroupEgress"]
    )


def test_root_volumes_use_the_rotating_customer_key(hyperpod: Scenario) -> None:
    key_id = next(
        iter(
            hyperpod.template.find_resources(
                "AWS::KMS::Key", {"Properties": {"Description": Match.string_like_regexp("HyperPod")}}
            )
        )
    )
    assert hyperpod.json["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True
    for group in _groups(hyperpod).values():
        assert group["InstanceStorageConfigs"] == [
            {"EbsVolumeConfig": {"RootVolume": True, "VolumeKmsKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}}
        ]


def test_lifecycle_scripts_live_in_a_sagemaker_bucket_under_a_content_hash(hyperpod: Scenario) -> None:
    buckets = hyperpod.template.find_resources(
        "AWS::S3::Bucket", {"Properties": {"BucketName": Match.any_value()}}
    )
    names = [b["Properties"]["BucketName"] for b in buckets.values()]
    # HyperPod's managed policy reads only sagemaker-* buckets; at most 63 characters.
    assert len(names) == 1 and names[0].startswith("sagemaker-cdkn-111111111111-us-east-1-")
    assert len(names[0]) <= 63
    bucket_id = next(iter(buckets))
    props = buckets[bucket_id]["Properties"]
    assert (
        props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"][
            "SSEAlgorithm"
        ]
        == "aws:kms"
    )
    assert props["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    write = _write(hyperpod)
    assert write["Bucket"] == {"Ref": bucket_id}
    assert write["Prefix"].startswith("lifecycle/") and len(write["Prefix"]) == len("lifecycle/") + 17
    for group in _groups(hyperpod).values():
        config = group["LifeCycleConfig"]
        assert config["OnInitComplete"] == "on-init-complete.sh"
        assert "OnCreate" not in config
        assert config["SourceS3Uri"] == {
            "Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/" + write["Prefix"]]]
        }
    assert set(write["Files"]) == {
        "on-init-complete.sh",
        "lib/common.sh",
        "hyperpod.env",
        "training-profile.env",
    }
    # The stack's node-program bundle (the asset the EC2 engines' nodes download) rides beside them.
    assert set(write["Copies"]) == {"amazon-efs-utils.deb", "node-programs.zip"}
    assert "CdkNeuronNodePrograms" not in json.dumps(write["Copies"]["node-programs.zip"])
    assert json.dumps(write["Copies"]["node-programs.zip"]).count(".zip") == 1


def test_a_new_node_program_bundle_moves_the_lifecycle_prefix() -> None:
    from cdk_neuron.training import hyperpod_cluster

    stack = cdk.Stack()
    files = {"on-init-complete.sh": "#!/bin/bash\n"}

    class _Asset:
        def __init__(self, asset_hash: str) -> None:
            self.asset_hash = asset_hash

    one = hyperpod_cluster._content_hash(stack, files, [None, _Asset("a")])  # type: ignore[list-item]
    assert one != hyperpod_cluster._content_hash(stack, files, [None, _Asset("b")])  # type: ignore[list-item]
    assert one == hyperpod_cluster._content_hash(stack, files, [None, _Asset("a")])  # type: ignore[list-item]


def test_lifecycle_settings_mount_checkpoints_and_export_the_plan(hyperpod: Scenario) -> None:
    files = _write(hyperpod)["Files"]
    settings = json.dumps(files["hyperpod.env"])
    for name in ("CLUSTER_NAME", "CHECKPOINT_FILE_SYSTEM_ID", "CHECKPOINT_ACCESS_POINT_ID", "CHECKPOINT_DIR"):
        assert f"{name}=" in settings
    assert "EFS_UTILS_PACKAGE=amazon-efs-utils.deb" in settings
    assert "NODE_PROGRAMS=node-programs.zip" in settings
    profile = json.dumps(files["training-profile.env"])
    for name in (
        "FI_PROVIDER",
        "NEURON_COMPILE_CACHE_URL",
        "CHECKPOINT_DIR",
        "XLA_USE_BF16",
        "NPROC_PER_NODE",
    ):
        assert f"{name}=" in profile
    # Ranks follow Slurm's topology: no EC2 topology file exists on a HyperPod node, nor /scratch.
    assert "CDK_NEURON_RANK_ORDER=slurm-topology" in profile
    assert "CDK_NEURON_TOPOLOGY_FILE" not in profile and "SCRATCH_DIR" not in profile


def test_the_script_writer_reads_only_the_bundle_object(hyperpod: Scenario) -> None:
    policies = json.dumps(hyperpod.resources("AWS::IAM::ManagedPolicy"))
    assert '"Sid": "ReadNodePrograms"' in policies
    statement = next(
        s
        for policy in hyperpod.resources("AWS::IAM::ManagedPolicy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "ReadNodePrograms"
    )
    assert statement["Action"] == "s3:GetObject"
    assert ".zip" in json.dumps(statement["Resource"]) and "*" not in json.dumps(statement["Resource"])


def test_the_cluster_waits_for_its_role_policy_rules_key_and_scripts(hyperpod: Scenario) -> None:
    resources = hyperpod.json["Resources"]
    cluster_id = next(iter(hyperpod.resources("AWS::SageMaker::Cluster")))
    depends = set(resources[cluster_id]["DependsOn"])
    types = {resources[d]["Type"] for d in depends}
    assert {"AWS::IAM::Role", "AWS::IAM::Policy", "AWS::EC2::SecurityGroupIngress", "AWS::KMS::Key",
            "Custom::CdkNeuronLifecycleScripts", "AWS::EC2::SecurityGroup"} <= types  # fmt: skip


def test_execution_role_is_sagemakers_with_grants_to_cache_store_and_scripts(hyperpod: Scenario) -> None:
    roles = hyperpod.template.find_resources(
        "AWS::IAM::Role",
        {
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Statement": [Match.object_like({"Principal": {"Service": "sagemaker.amazonaws.com"}})]
                }
            }
        },
    )
    assert len(roles) == 1
    role = next(iter(roles.values()))["Properties"]
    assert "AmazonSageMakerClusterInstanceRolePolicy" in json.dumps(role["ManagedPolicyArns"])
    policy = json.dumps(
        hyperpod.template.find_resources(
            "AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": next(iter(roles))}]}}
        )
    )
    for action in (
        "ec2:CreateNetworkInterface",
        "elasticfilesystem:ClientWrite",
        "s3:PutObject",
        "kms:CreateGrant",
        "s3:GetObject",
    ):
        assert action in policy, action


def test_nag_is_clean(hyperpod: Scenario) -> None:
    found = hyperpod.nag()
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(("name", "rule"), gate_params("training_hyperpod:cluster"))
def test_deploy_rules_gate(hyperpod: Scenario, name: str, rule: str | None) -> None:
    check_gate(name, hyperpod.json, rule)


def test_sbatch_script_runs_the_plan_with_auto_resume(hyperpod: Scenario) -> None:
    cluster = hyperpod.cluster
    script = cluster.sbatch_script("python train.py --resume latest", job_name="llama")
    assert "#SBATCH --nodes=4\n" in script
    assert "#SBATCH --partition=train\n" in script
    assert "#SBATCH --job-name=llama\n" in script
    assert "#SBATCH --ntasks-per-node=1\n" in script
    encoded = base64.b64encode(b"python train.py --resume latest").decode()
    assert script.rstrip().endswith(
        f"srun --auto-resume=1 /bin/bash /opt/cdk-neuron/hyperpod/slurm-step.sh --command-base64 {encoded}"
    )
    assert ". /etc/profile.d/cdk-neuron-training.sh" in script
    with pytest.raises(NeuronConfigError, match=r"^Training/Cluster: command=' '"):
        cluster.sbatch_script(" ")
    with pytest.raises(NeuronConfigError, match=r"^Training/Cluster: job_name='a b'"):
        cluster.sbatch_script("train", job_name="a b")


def test_training_interfaces_and_attributes(hyperpod: Scenario) -> None:
    cluster = hyperpod.cluster
    assert cluster.grant_principal is cluster.role
    assert cluster.connections.security_groups == [cluster.security_group]
    assert cluster.plan.nodes == 4
    with pytest.raises(NeuronConfigError, match=r"^Training/Cluster: node_metrics=None"):
        cluster.metric_neuron_core_utilization()


# -- refusals, each before anything is synthesized --------------------------------------------------


def _try(region: str = "us-east-1", **overrides: Any) -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region=region)
    vpc = network(stack)
    props: dict[str, Any] = {
        "vpc": vpc,
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "vpc_subnets": first_zone(stack),
    }
    props.update(overrides)
    HyperPodTrainingCluster(stack, "Cluster", **props)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"capacity": Capacity.reservation("cr-0123456789abcdef0")},
            r"^T/Cluster: capacity='reservation cr-.*training plan for HyperPod",
        ),
        (
            {"capacity": Capacity.capacity_block("cr-0123456789abcdef0")},
            r"no capacity-reservation field.*Capacity.training_plan\(arn\)",
        ),
        ({"instance_type": "trn1.2xlarge", "max_nodes": 1}, r"instance_type='trn1.2xlarge'.*HyperPod runs"),
        (
            {"instance_type": "trn2.48xlarge"},
            r"instance_type='trn2.48xlarge in us-east-1'.*sold in us-east-2",
        ),
        (
            {"deep_health_checks": ["InstanceConnectivity"], "max_nodes": 1},
            r"deep_health_checks='InstanceConnectivity'.*at least 2",
        ),
        ({"deep_health_checks": ["Stress"]}, r"deep_health_checks='Stress'"),
        ({"deep_health_checks": []}, r"deep_health_checks=\[\]"),
        ({"worker_count": 3}, r"worker_count=3"),
        ({"max_nodes": 6759}, r"max_nodes=6759"),
        ({"cluster_name": "bad_name"}, r"cluster_name='bad_name'.*create-only"),
        ({"cluster_name": "a" * 64}, r"cluster_name="),
        ({"controller_instance_type": "m5.xlarge"}, r"controller_instance_type='m5.xlarge'"),
        ({"partition": "a b"}, r"partition='a b'"),
    ],
)
def test_refusals(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(NeuronConfigError, match=message):
        _try(**overrides)


def test_checkpoints_need_the_efs_utils_package() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    with pytest.raises(NeuronConfigError, match=r"efs_utils_package=None.*build-deb.sh"):
        HyperPodTrainingCluster(
            stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
            vpc_subnets=first_zone(stack), checkpoints=store,
        )  # fmt: skip


def test_trn2_48xlarge_is_accepted_where_hyperpod_sells_it() -> None:
    _try(region="us-east-2", instance_type="trn2.48xlarge")


def test_worker_count_defaults_to_max_nodes_and_zero_is_allowed() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    zero = HyperPodTrainingCluster(
        stack,
        "Zero",
        vpc=vpc,
        instance_type="trn1n.32xlarge",
        max_nodes=2,
        worker_count=0,
        vpc_subnets=first_zone(stack),
    )
    full = HyperPodTrainingCluster(
        stack, "Full", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=3, vpc_subnets=first_zone(stack)
    )
    assert (zero.worker_count, full.worker_count) == (0, 3)
    names = [stack.resolve(c.cluster.cluster_name) for c in (zero, full)]
    assert names[0] != names[1] and all(len(n) <= 63 and n[0].isalnum() and n[-1].isalnum() for n in names)


def test_training_plan_capacity() -> None:
    assert Capacity.training_plan(PLAN_ARN).describe() == f"training-plan {PLAN_ARN}"
    with pytest.raises(NeuronConfigError, match=r"^training_plan_arn='cr-0123456789abcdef0'"):
        Capacity.training_plan("cr-0123456789abcdef0")
    with pytest.raises(NeuronConfigError, match=r"EC2 launch templates cannot target it"):
        Capacity.training_plan(PLAN_ARN).launch_template_data()


def test_ec2_engines_refuse_a_training_plan() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    with pytest.raises(NeuronConfigError, match=r"capacity='training-plan .*use HyperPodTrainingCluster"):
        AutoScalingTrainingCluster(
            stack, "Group", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
            vpc_subnets=first_zone(stack), capacity=Capacity.training_plan(PLAN_ARN),
        )  # fmt: skip
