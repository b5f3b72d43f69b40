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


def test_root_volumes_keep_hyperpods_key_and_the_scripts_use_the_rotating_customer_key(
    hyperpod: Scenario,
) -> None:
    """HyperPod takes a volume key only in continuous provisioning mode (EKS only, per the API): the
    root volumes keep the AWS owned key, and deploy rule E9609 holds the template to it."""
    key_id = next(
        iter(
            hyperpod.template.find_resources(
                "AWS::KMS::Key", {"Properties": {"Description": Match.string_like_regexp("HyperPod")}}
            )
        )
    )
    assert hyperpod.json["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True
    for group in _groups(hyperpod).values():
        assert "InstanceStorageConfigs" not in group
    assert (
        "NodeProvisioningMode"
        not in next(iter(hyperpod.resources("AWS::SageMaker::Cluster").values()))["Properties"]
    )
    bucket = next(
        b["Properties"]
        for b in hyperpod.resources("AWS::S3::Bucket").values()
        if str(b["Properties"].get("BucketName", "")).startswith("sagemaker-")
    )
    rule = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert rule["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}


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
    entries = {name: group["LifeCycleConfig"]["OnInitComplete"] for name, group in _groups(hyperpod).items()}
    assert entries == {"controller": "controller.sh", "trn": "on-init-complete.sh"}
    for group in _groups(hyperpod).values():
        config = group["LifeCycleConfig"]
        assert "OnCreate" not in config
        assert config["SourceS3Uri"] == {
            "Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/" + write["Prefix"]]]
        }
    assert set(write["Files"]) == {
        "on-init-complete.sh",
        "controller.sh",
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
    # The packages' Ubuntu release, which the lifecycle script checks against the node's.
    assert "EFS_UTILS_UBUNTU=22.04" in settings
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
        "kms:Decrypt",
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
        'srun --auto-resume=1 "${container[@]}" /bin/bash /opt/cdk-neuron/hyperpod/slurm-step.sh '
        f"--command-base64 {encoded}"
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
    with pytest.raises(
        NeuronConfigError,
        match=r"^Training/Cluster: node_metrics=None: .*HyperPodTrainingCluster has no node publisher",
    ):
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
        (
            {"deep_health_checks": ["InstanceStress", "InstanceConnectivity"], "worker_count": 1},
            r"deep_health_checks='InstanceConnectivity'.*at least 2 in the group, but worker_count=1",
        ),
        ({"deep_health_checks": ["Stress"]}, r"deep_health_checks='Stress'"),
        ({"deep_health_checks": []}, r"deep_health_checks=\[\]"),
        ({"worker_count": 3}, r"worker_count=3"),
        ({"max_nodes": 6759}, r"max_nodes=6759"),
        ({"cluster_name": "bad_name"}, r"cluster_name='bad_name'.*create-only"),
        ({"cluster_name": "a" * 64}, r"cluster_name="),
        ({"controller_instance_type": "m5.xlarge"}, r"controller_instance_type='m5.xlarge'"),
        ({"partition": "a b"}, r"partition='a b'"),
        (
            {"controller_settings": {"A": "1"}},
            r"controller_settings=\{'A': '1'\}: settings need a controller_program",
        ),
        ({"controller_program": "/nonexistent/smoke.sh"}, r"controller_program='/nonexistent/smoke.sh'"),
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


def test_connectivity_checks_on_a_group_scaled_to_zero_are_accepted() -> None:
    _try(deep_health_checks=["InstanceStress", "InstanceConnectivity"], worker_count=0)


def test_a_training_plan_outside_the_price_list_regions_is_a_warning() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    HyperPodTrainingCluster(
        stack, "Cluster", vpc=vpc, instance_type="trn2.48xlarge", max_nodes=2,
        vpc_subnets=first_zone(stack), capacity=Capacity.training_plan(PLAN_ARN),
    )  # fmt: skip
    warnings = [
        str(entry.data)
        for construct in stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type == "aws:cdk:warning" and "hyperpodRegionUnlisted" in str(entry.data)
    ]
    assert len(warnings) == 1 and "no trn2.48xlarge in us-east-1" in warnings[0]


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


def test_grants_for_the_job_commands_and_scaling() -> None:
    from aws_cdk import aws_iam as iam

    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    cluster = HyperPodTrainingCluster(
        stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2, vpc_subnets=first_zone(stack)
    )
    runner = iam.Role(stack, "Runner", assumed_by=iam.AccountRootPrincipal())
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    cluster.grant_submit_jobs(runner)
    cluster.grant_scale(operator)
    resources = app.synth().get_stack_by_name("T").template["Resources"]
    cluster_id = next(k for k, v in resources.items() if v["Type"] == "AWS::SageMaker::Cluster")

    def statements(role: iam.Role) -> list[dict[str, Any]]:
        role_id = stack.get_logical_id(role.node.default_child)  # type: ignore[arg-type]
        return [
            s
            for p in resources.values()
            if p["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ]

    arn = {"Fn::GetAtt": [cluster_id, "ClusterArn"]}
    ran = statements(runner)
    reads = next(s for s in ran if "sagemaker:ListClusterNodes" in s["Action"])
    assert sorted(reads["Action"]) == ["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"]
    assert reads["Resource"] == arn
    start = next(s for s in ran if s["Action"] == "ssm:StartSession")
    assert "document/AWS-StartNonInteractiveCommand" in json.dumps(start["Resource"])
    terminate = next(s for s in ran if s["Action"] == "ssm:TerminateSession")
    assert "session/${aws:userid}-*" in json.dumps(terminate["Resource"])
    assert "UpdateCluster" not in json.dumps(ran)
    [scale] = statements(operator)
    assert sorted(scale["Action"]) == [
        "sagemaker:DescribeCluster", "sagemaker:ListClusterNodes", "sagemaker:UpdateCluster"
    ]  # fmt: skip
    assert scale["Resource"] == arn


def test_the_security_group_description_is_pinned_apart_from_the_ec2_engines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The description is create-only: a new group changes the cluster's create-only VpcConfig. The
    cluster passes its own pinned text, so an EC2 engine's wording change cannot reach HyperPod."""
    from cdk_neuron.training import security

    given: list[object] = []
    real = security.node_security_group

    def recording(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs.get("description"))
        return real(*args, **kwargs)

    monkeypatch.setattr(security, "node_security_group", recording)
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    HyperPodTrainingCluster(
        stack, "Cluster", vpc=network(stack), instance_type="trn1.32xlarge", max_nodes=2,
        vpc_subnets=first_zone(stack),
    )  # fmt: skip
    assert given == ["cdk-neuron training nodes: EFA within the group, HTTPS out"]


def test_a_controller_program_and_its_settings_ride_in_the_lifecycle_prefix(tmp_path: Any) -> None:
    program = tmp_path / "smoke.sh"
    program.write_text("#!/bin/bash\nsinfo\n")
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    HyperPodTrainingCluster(
        stack, "Cluster", vpc=network(stack), instance_type="trn1.32xlarge", max_nodes=2,
        vpc_subnets=first_zone(stack), controller_program=str(program),
        controller_settings={"REPORT_DIR": "/checkpoints/smoke"},
    )  # fmt: skip
    resources = app.synth().get_stack_by_name("T").template["Resources"]
    [write] = [
        r["Properties"] for r in resources.values() if r["Type"] == "Custom::CdkNeuronLifecycleScripts"
    ]
    assert write["Files"]["controller-program.sh"] == "#!/bin/bash\nsinfo\n"
    assert write["Files"]["controller-program.env"] == "REPORT_DIR=/checkpoints/smoke\n"
    bad = tmp_path / "bad.sh"
    bad.write_text("sinfo\n")
    with pytest.raises(NeuronConfigError, match=r"controller_program=.*#!/bin/bash"):
        _try(controller_program=str(bad))


def test_a_directory_of_debs_is_copied_as_one_archive(tmp_path: Any) -> None:
    debs = tmp_path / "debs"
    debs.mkdir()
    (debs / "amazon-efs-utils_2.4.0_amd64.deb").write_bytes(b"deb")
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    HyperPodTrainingCluster(
        stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2, vpc_subnets=first_zone(stack),
        checkpoints=store, efs_utils_package=s3_assets.Asset(stack, "EfsUtils", path=str(debs)),
    )  # fmt: skip
    resources = app.synth().get_stack_by_name("T").template["Resources"]
    [write] = [
        r["Properties"] for r in resources.values() if r["Type"] == "Custom::CdkNeuronLifecycleScripts"
    ]
    assert set(write["Copies"]) == {"amazon-efs-utils-debs.zip", "node-programs.zip"}
    assert "EFS_UTILS_PACKAGE=amazon-efs-utils-debs.zip" in json.dumps(write["Files"]["hyperpod.env"])


def test_a_job_for_more_nodes_than_run_warns_that_it_waits() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    cluster = HyperPodTrainingCluster(
        stack, "Cluster", vpc=network(stack), instance_type="trn1.32xlarge", max_nodes=2, worker_count=0,
        vpc_subnets=first_zone(stack),
    )  # fmt: skip

    def warnings() -> list[str]:
        return [
            str(e.data)
            for e in cluster.node.metadata
            if e.type == "aws:cdk:warning" and "hyperpodJobPends" in str(e.data)
        ]

    assert warnings() == []
    cluster.sbatch_script("torchrun $TORCHRUN_ARGS train.py")
    [warning] = warnings()
    assert "asks for the plan's 2 node(s) but worker_count is 0" in warning


def test_an_imported_cluster_grants_the_job_commands_and_connects() -> None:
    from aws_cdk import aws_iam as iam

    from cdk_neuron import IHyperPodTrainingCluster

    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    arn = "arn:aws:sagemaker:us-east-1:111111111111:cluster/abcdef123456"
    imported: IHyperPodTrainingCluster = HyperPodTrainingCluster.from_hyperpod_training_cluster_attributes(
        stack, "Imported", cluster_arn=arn, cluster_name="training", security_group_id="sg-0123456789abcdef0"
    )
    assert (imported.cluster_arn, imported.cluster_name) == (arn, "training")
    assert [g.security_group_id for g in imported.connections.security_groups] == ["sg-0123456789abcdef0"]
    role = iam.Role(stack, "Ci", assumed_by=iam.AccountRootPrincipal())
    imported.grant_submit_jobs(role)
    imported.grant_scale(role)
    policy = json.dumps(
        [
            r
            for r in app.synth().get_stack_by_name("T").template["Resources"].values()
            if r["Type"] == "AWS::IAM::Policy"
        ]
    )
    for action in (
        "sagemaker:ListClusterNodes",
        "ssm:StartSession",
        "ssm:TerminateSession",
        "sagemaker:UpdateCluster",
    ):
        assert action in policy
    assert arn in policy
    with pytest.raises(NeuronConfigError, match=r"HyperPodTrainingCluster has no node publisher"):
        imported.metric_neuron_core_utilization()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cluster_arn": "arn:aws:sagemaker:us-east-1:111111111111:cluster/training"}, r"cluster_arn="),
        ({"cluster_name": "bad_name"}, r"cluster_name='bad_name'"),
        ({"security_group_id": "sg-x"}, r"security_group_id='sg-x'"),
    ],
)
def test_an_import_refuses_bad_attributes(overrides: dict[str, str], message: str) -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    attributes = {
        "cluster_arn": "arn:aws:sagemaker:us-east-1:111111111111:cluster/abcdef123456",
        "cluster_name": "training",
        "security_group_id": "sg-0123456789abcdef0",
        **overrides,
    }
    with pytest.raises(NeuronConfigError, match=message):
        HyperPodTrainingCluster.from_hyperpod_training_cluster_attributes(stack, "Imported", **attributes)


DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"


def test_a_job_image_installs_the_container_tools_and_pulls_from_its_one_repository() -> None:
    app = make_app()
    stack = PinnedStack(app, "T", region="us-east-1")
    vpc = network(stack)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    package = s3_assets.Asset(stack, "EfsUtils", path=__file__)
    cluster = HyperPodTrainingCluster(
        stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2, vpc_subnets=first_zone(stack),
        checkpoints=store, efs_utils_package=package, job_image=DLC,
    )  # fmt: skip
    assert cluster.job_image == DLC
    template = app.synth().get_stack_by_name("T").template
    resources = template["Resources"]
    [write] = [
        r["Properties"] for r in resources.values() if r["Type"] == "Custom::CdkNeuronLifecycleScripts"
    ]
    settings = json.dumps(write["Files"]["hyperpod.env"]).replace("\\n", "\n")
    assert "CONTAINERS=1\n" in settings and "ENROOT_VERSION=3.4.1\n" in settings
    assert "ECR_REGISTRY=763104351884.dkr.ecr.us-east-1.amazonaws.com\nECR_REGION=us-east-1\n" in settings
    profile = json.dumps(write["Files"]["training-profile.env"]).replace("\\n", "\n")
    assert (
        "CDK_NEURON_JOB_IMAGE='763104351884.dkr.ecr.us-east-1.amazonaws.com#pytorch-training-neuronx:"
        "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04'\n"
    ) in profile
    assert (
        "CDK_NEURON_CONTAINER_MOUNTS=/opt/cdk-neuron:/opt/cdk-neuron:ro,/checkpoints:/checkpoints\n"
        in profile
    )
    statements = [
        s
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    pull = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    assert json.dumps(pull["Resource"]).endswith(
        ':ecr:us-east-1:763104351884:repository/pytorch-training-neuronx"]]}'
    )
    assert any("ecr:GetAuthorizationToken" in s["Action"] and s["Resource"] == "*" for s in statements)


def test_a_job_image_by_digest_is_refused_before_synthesis() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^T/Cluster: job_image='.*@sha256:a+': HyperPod runs the image with Enroot 3\.4\.1",
    ):
        _try(job_image=DLC.split(":")[0] + "@sha256:" + "a" * 64)


def test_an_efs_utils_release_that_is_no_ubuntu_version_is_refused() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^T/Cluster: efs_utils_release='jammy': .*as /etc/os-release's VERSION_ID \(the HyperPod Slurm "
        r"image's is 22\.04\)",
    ):
        _try(efs_utils_release="jammy")
