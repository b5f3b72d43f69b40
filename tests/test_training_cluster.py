"""BatchTrainingCluster: trn1.32xlarge, trn1n.32xlarge and trn2.48xlarge clusters, synthesized once each."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from deploy_rules_gate import check_gate, gate_params
from syrupy.assertion import SnapshotAssertion
from test_training_support import ECR_IMAGE, PUBLIC_IMAGE, PinnedStack, Scenario, build, first_zone

from cdk_neuron import ami, timeouts
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import plan_training
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import AutoScalingTrainingCluster, BatchTrainingCluster, Capacity
from cdk_neuron.training.launcher import LAUNCHER_PATH, decode_training_command
from cdk_neuron.training.security import DEFAULT_SECURITY_GROUP_WARNING, DEFAULT_SECURITY_GROUP_WARNING_ID
from cdk_support import flatten_user_data, normalize_template, parse_settings, settings_in

RESERVATION = "cr-0123456789abcdef0"
RESERVATION_GROUP = "arn:aws:resource-groups:us-east-2:111111111111:group/trn2-odcrs"


@pytest.fixture(scope="module")
def trn1() -> Scenario:
    """4 x trn1.32xlarge with checkpoints, compile cache, an ECR image, a submitter and a second job."""

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> BatchTrainingCluster:
        store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
        cache = CompileCache(stack, "CompileCache")
        cluster = BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.32xlarge",
            max_nodes=4,
            vpc_subnets=first_zone(stack),
            availability_zone_id="use1-az6",
            checkpoints=store,
            compile_cache=cache,
            job_image=ECR_IMAGE,
        )
        extras["smoke"] = cluster.add_job_definition(
            "SmokeTest", nodes=1, training_command="neuron-ls && python3 -c 'import torch_neuronx'"
        )
        submitter = iam.Role(stack, "Submitter", assumed_by=iam.AccountRootPrincipal())
        cluster.grant_submit_jobs(submitter)
        cdk.Validations.of(submitter).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="batch:DescribeJobs/ListJobs have no resource-level permissions (asserted in the test).",
            )
        )
        cdk.Validations.of(submitter).acknowledge(
            cdk.Acknowledgment(
                id="NIST.800.53.R5-IAMNoInlinePolicy",
                reason="Test principal: the grant under test writes to its default policy.",
            )
        )
        extras.update(store=store, cache=cache, submitter=submitter)
        return cluster

    return build("us-east-1", make)


@pytest.fixture(scope="module")
def trn1n() -> Scenario:
    """2 x trn1n.32xlarge, TP 8 x PP 2, a targeted capacity reservation, a public image, no storage."""

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> BatchTrainingCluster:
        return BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1n.32xlarge",
            max_nodes=2,
            plan=plan_training("trn1n.32xlarge", 2, tensor_parallel=8, pipeline_parallel=2),
            vpc_subnets=first_zone(stack),
            availability_zone_id="use1-az6",
            capacity=Capacity.reservation(RESERVATION),
            job_image=PUBLIC_IMAGE,
        )

    return build("us-east-1", make)


@pytest.fixture(scope="module")
def trn2() -> Scenario:
    """8 x trn2.48xlarge (TP 32 x PP 4 at LNC 2) on a reservation group, with a One Zone checkpoint store."""

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> BatchTrainingCluster:
        store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack), one_zone=True)
        return BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn2.48xlarge",
            max_nodes=8,
            plan=plan_training("trn2.48xlarge", 8, tensor_parallel=32, pipeline_parallel=4),
            vpc_subnets=first_zone(stack),
            availability_zone_id="use2-az1",
            checkpoints=store,
            capacity=Capacity.reservation_group(RESERVATION_GROUP),
            job_image=PUBLIC_IMAGE,
        )

    return build("us-east-2", make)


SCENARIOS = ("trn1", "trn1n", "trn2")


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> Scenario:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def _instance(s: Scenario) -> Any:
    return get_instance(s.cluster.instance.name)


def _container(s: Scenario, definition: Any = None) -> dict[str, Any]:
    definition = definition or s.cluster.job_definition
    props = s.json["Resources"][s.logical_id(definition)]["Properties"]
    ranges = props["NodeProperties"]["NodeRangeProperties"]
    assert len(ranges) == 1
    return ranges[0]["Container"]  # type: ignore[no-any-return]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["Name"]: e["Value"] for e in container["Environment"]}


def _ref(s: Scenario, construct: Any, attribute: str | None = None) -> dict[str, Any]:
    logical = s.logical_id(construct)
    return {"Fn::GetAtt": [logical, attribute]} if attribute else {"Ref": logical}


# -- launch template ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "cards"), [("trn1", 8), ("trn1n", 16), ("trn2", 16)])
def test_one_efa_per_network_card(request: pytest.FixtureRequest, name: str, cards: int) -> None:
    s: Scenario = request.getfixturevalue(name)
    assert _instance(s).network_cards == cards
    data = s.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    nics = data["NetworkInterfaces"]
    assert [n["NetworkCardIndex"] for n in nics] == list(range(cards))
    assert [n["DeviceIndex"] for n in nics] == [0] + [1] * (cards - 1)
    assert {n["InterfaceType"] for n in nics} == {"efa"}
    group = _ref(s, s.cluster.security_group, "GroupId")
    assert all(n["Groups"] == [group] for n in nics)
    assert all("AssociatePublicIpAddress" not in n for n in nics)
    # EC2 refuses top-level groups next to interfaces; cdk-nag and cfn-lint do not notice (toolchain 6).
    assert "SecurityGroupIds" not in data


def test_launch_template_is_locked_down(scenario: Scenario) -> None:
    data = scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    # Hop limit 1: no container reaches the instance role (job containers also by ECS_AWSVPC_BLOCK_IMDS).
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
    (root,) = data["BlockDeviceMappings"]
    assert root["DeviceName"] == "/dev/xvda"
    assert root["Ebs"]["Encrypted"] is True
    assert root["Ebs"]["VolumeType"] == "gp3"
    assert root["Ebs"]["VolumeSize"] == 512
    assert root["Ebs"]["KmsKeyId"] == _ref(scenario, scenario.cluster.kms_key, "Arn")
    assert data["InstanceType"] == scenario.cluster.instance.name
    # Batch attaches the compute environment's instance profile; the placement group is on the CE.
    assert "IamInstanceProfile" not in data
    assert "Placement" not in data
    assert "KeyName" not in data


def test_user_data_installs_efa_in_a_boothook_then_sets_the_node_up(scenario: Scenario) -> None:
    text = flatten_user_data(scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
    assert text.startswith("Content-Type: multipart/mixed")
    boothook = text.index('Content-Type: text/cloud-boothook; charset="utf-8"')
    shell = text.index('Content-Type: text/x-shellscript; charset="utf-8"')
    assert boothook < text.index("cdk_neuron_bootstrap training/efa-install.sh") < shell
    assert shell < text.index("cdk_neuron_bootstrap training/node-setup.sh")
    training = parse_settings(settings_in(text)["training.env"])
    instance = _instance(scenario)
    assert training["ENGINE"] == "batch" and training["SCRATCH_DIR"] == "/scratch"
    assert (training["EFA_INSTALLER_VERSION"], training["EFA_DEVICES"]) == (
        "1.47.0",
        str(instance.efa_interfaces),
    )
    # The nodes check the SHA-256 of what the mirror verified by AWS's signature.
    mirror = scenario.cluster.efa_installer_mirror
    copy_id = scenario.stack.resolve(scenario.stack.get_logical_id(mirror.ready.node.default_child))
    assert training["EFA_INSTALLER_SHA256"].startswith("${")  # a token: the mirror's answer
    user_data = json.dumps(scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
    assert json.dumps({"Fn::GetAtt": [copy_id, "Sha256"]}) in user_data
    assert training["EFA_INSTALLER_KEY"] == "efa-installer/aws-efa-installer-1.47.0.tar.gz"
    # A node that cannot set up powers off; terminating lets Batch replace it.
    data = scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceInitiatedShutdownBehavior"] == "terminate"


def test_the_pinned_efa_installer_is_mirrored_before_any_node_boots(scenario: Scenario) -> None:
    (copy_id, copy), *_ = [
        (k, v) for k, v in scenario.json["Resources"].items() if v["Type"] == "Custom::CdkNeuronEfaInstaller"
    ]
    props = copy["Properties"]
    assert props["Url"] == "https://efa-installer.amazonaws.com/aws-efa-installer-1.47.0.tar.gz"
    # Verified as the EC2 User Guide documents: AWS's key, pinned by fingerprint, and the signature.
    assert props["SignatureUrl"] == "https://efa-installer.amazonaws.com/aws-efa-installer-1.47.0.tar.gz.sig"
    assert props["KeyUrl"] == "https://efa-installer.amazonaws.com/aws-efa-installer.key"
    assert props["KeyFingerprint"] == "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
    assert "Sha256" not in props
    assert props["Key"] == "efa-installer/aws-efa-installer-1.47.0.tar.gz"
    environment = scenario.json["Resources"][scenario.logical_id(scenario.cluster.compute_environment)]
    assert copy_id in environment["DependsOn"]
    mirror = scenario.cluster.efa_installer_mirror
    assert mirror is not None
    bucket = scenario.json["Resources"][scenario.logical_id(mirror.bucket)]
    assert bucket["DeletionPolicy"] == "Delete"  # a copy of public software: the stack deletes it
    encryption = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == _ref(
        scenario, scenario.cluster.kms_key, "Arn"
    )


def test_ami_is_the_ecs_neuron_parameter_in_template_and_compute_environment(scenario: Scenario) -> None:
    parameters = scenario.json["Parameters"]
    (name,) = [k for k, v in parameters.items() if v.get("Default") == ami.release_parameter(ami.RELEASE)]
    data = scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["ImageId"] == {"Ref": name}
    (config,) = scenario.one("AWS::Batch::ComputeEnvironment")["ComputeResources"]["Ec2Configuration"]
    assert config == {"ImageIdOverride": {"Ref": name}, "ImageType": "ECS_AL2023"}


# -- capacity and placement ------------------------------------------------------------------------


def test_on_demand_cluster_has_a_cluster_placement_group(trn1: Scenario) -> None:
    assert trn1.one("AWS::EC2::PlacementGroup") == {"Strategy": "cluster"}
    resources = trn1.one("AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert resources["PlacementGroup"] == _ref(trn1, trn1.cluster.placement_group, "GroupName")
    data = trn1.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert "CapacityReservationSpecification" not in data
    assert "InstanceMarketOptions" not in data


def test_reservation_targets_the_id_without_market_options(trn1n: Scenario) -> None:
    data = trn1n.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": RESERVATION}
    }
    assert "InstanceMarketOptions" not in data
    trn1n.template.resource_count_is("AWS::EC2::PlacementGroup", 1)


def test_a_reservation_group_is_targeted_from_a_placement_group_on_batch(trn2: Scenario) -> None:
    data = trn2.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": RESERVATION_GROUP}
    }
    assert "InstanceMarketOptions" not in data


def _capacity_block_cluster(kind: type[BatchTrainingCluster] | type[AutoScalingTrainingCluster]) -> Scenario:
    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> Any:
        more: dict[str, Any] = {"job_image": PUBLIC_IMAGE} if kind is BatchTrainingCluster else {}
        return kind(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn2.48xlarge",
            max_nodes=2,
            plan=plan_training("trn2.48xlarge", 2, tensor_parallel=64),
            vpc_subnets=first_zone(stack),
            capacity=Capacity.capacity_block(RESERVATION),
            **more,
        )

    return build("us-east-2", make)


def test_a_capacity_block_is_refused_on_batch_naming_the_auto_scaling_cluster() -> None:
    # Issue 22, defect 4. AWS Batch ignores the launch template's instance market options (BATCH-LT),
    # without which EC2 does not launch into the block: the 0.1 cluster synthesized a block it never used.
    with pytest.raises(
        NeuronConfigError,
        match=r"^Training/Cluster: capacity='capacity-block cr-0123456789abcdef0': AWS Batch ignores a launch "
        r"template's instance market options .*Use AutoScalingTrainingCluster \(engine auto-scaling-group\)",
    ):
        _capacity_block_cluster(BatchTrainingCluster)


def test_an_auto_scaling_cluster_launches_into_the_capacity_block_without_a_placement_group() -> None:
    s = _capacity_block_cluster(AutoScalingTrainingCluster)
    data = s.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": RESERVATION}
    }
    s.template.resource_count_is("AWS::EC2::PlacementGroup", 0)
    assert "PlacementGroupName" not in s.one("AWS::AutoScaling::AutoScalingGroup")
    assert s.cluster.placement_group is None


# -- compute environment and queue ----------------------------------------------------------------


def test_compute_environment_pins_the_launch_template_version(scenario: Scenario) -> None:
    template = scenario.one("AWS::Batch::ComputeEnvironment")["ComputeResources"]["LaunchTemplate"]
    assert template == {
        "LaunchTemplateId": _ref(scenario, scenario.cluster.launch_template),
        "Version": _ref(scenario, scenario.cluster.launch_template, "LatestVersionNumber"),
    }
    assert "$" not in str(template)  # never $Default / $Latest (aws/aws-cdk#28137)


def test_compute_environment_scales_from_zero_to_max_nodes(scenario: Scenario) -> None:
    instance = _instance(scenario)
    resources = scenario.one("AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert resources["MinvCpus"] == 0
    assert resources["MaxvCpus"] == scenario.cluster.max_nodes * instance.vcpus
    assert resources["InstanceTypes"] == [instance.name]
    assert resources["Type"] == "EC2"  # Batch multi-node parallel cannot run on Spot
    assert resources["AllocationStrategy"] == "BEST_FIT_PROGRESSIVE"
    # The launch template's EFA interfaces carry the security groups: Batch refuses both ("Either
    # compute environment Security Groups or Network Interfaces in Launch template are exclusively
    # allowed", aws/aws-cdk#21577).
    assert "SecurityGroupIds" not in resources
    interfaces = scenario.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["NetworkInterfaces"]
    assert all(
        i["Groups"] == [_ref(scenario, scenario.cluster.security_group, "GroupId")] for i in interfaces
    )
    assert len(resources["Subnets"]) == 1
    assert resources["InstanceRole"]["Fn::GetAtt"][1] == "Arn"


def test_job_queue_uses_the_environment_and_cancels_unplaceable_jobs(trn1: Scenario) -> None:
    queue = trn1.one("AWS::Batch::JobQueue")
    assert queue["ComputeEnvironmentOrder"] == [
        {
            "ComputeEnvironment": _ref(trn1, trn1.cluster.compute_environment, "ComputeEnvironmentArn"),
            "Order": 1,
        }
    ]
    reasons = {a["Reason"] for a in queue["JobStateTimeLimitActions"]}
    assert reasons == {
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
        "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
    }  # insufficient capacity is waited out, not cancelled


# -- job definition --------------------------------------------------------------------------------


def test_job_definition_nodes_come_from_the_plan(scenario: Scenario) -> None:
    props = scenario.json["Resources"][scenario.logical_id(scenario.cluster.job_definition)]["Properties"]
    assert props["Type"] == "multinode"
    assert props["NodeProperties"]["NumNodes"] == scenario.cluster.plan.nodes
    assert props["NodeProperties"]["MainNode"] == 0
    (node_range,) = props["NodeProperties"]["NodeRangeProperties"]
    assert node_range["TargetNodes"] == f"0:{scenario.cluster.plan.nodes - 1}"
    assert node_range["Container"]["InstanceType"] == scenario.cluster.instance.name


def test_every_neuron_and_efa_device_from_the_catalog(scenario: Scenario) -> None:
    instance = _instance(scenario)
    devices = _container(scenario)["LinuxParameters"]["Devices"]
    paths = [d["HostPath"] for d in devices]
    assert paths == [*(f"/dev/neuron{i}" for i in range(instance.chips)),
                     *(f"/dev/infiniband/uverbs{i}" for i in range(instance.efa_interfaces))]  # fmt: skip
    # No Permissions: the default is READ, WRITE and MKNOD, which AWS Batch's EFA guide requires
    # ("If permissions is set, it must be set to READ | WRITE | MKNOD"), as in the Neuron Batch samples.
    assert all(
        set(d) == {"ContainerPath", "HostPath"} and d["ContainerPath"] == d["HostPath"] for d in devices
    )


def test_expected_device_counts() -> None:
    assert len(get_instance("trn1.32xlarge").neuron_devices) == 16
    assert len(get_instance("trn1.32xlarge").efa_devices) == 8
    assert len(get_instance("trn1n.32xlarge").efa_devices) == 16
    assert len(get_instance("trn2.48xlarge").efa_devices) == 16


def test_container_limits_and_resources(scenario: Scenario) -> None:
    instance = _instance(scenario)
    container = _container(scenario)
    assert {u["Name"]: (u["SoftLimit"], u["HardLimit"]) for u in container["Ulimits"]} == {
        "memlock": (-1, -1),
        "nofile": (1_048_576, 1_048_576),
    }
    linux = container["LinuxParameters"]
    assert linux["SharedMemorySize"] == 64 * 1024
    assert linux["InitProcessEnabled"] is True
    requirements = {r["Type"]: int(r["Value"]) for r in container["ResourceRequirements"]}
    assert requirements["VCPU"] == instance.vcpus
    assert requirements["MEMORY"] == int(instance.memory_gib * 1024 * 0.9)
    assert requirements["MEMORY"] < instance.memory_gib * 1024


def test_container_runs_the_launcher_with_the_training_command_parameter(trn1: Scenario) -> None:
    container = _container(trn1)
    # The launcher is the node program in the host's bundle, mounted read-only; no script text in
    # the job definition.
    assert container["Command"] == ["/bin/bash", LAUNCHER_PATH, "--command-base64", "Ref::training_command"]
    assert LAUNCHER_PATH.startswith("/opt/cdk-neuron/")
    volumes = {v["Name"]: v["Host"]["SourcePath"] for v in container["Volumes"] if "Host" in v}
    assert volumes["cdk-neuron-programs"] == "/opt/cdk-neuron"
    assert volumes["cdk-neuron-topology"] == "/var/lib/cdk-neuron"
    mounts = {m["SourceVolume"]: m for m in container["MountPoints"]}
    for name in ("cdk-neuron-programs", "cdk-neuron-topology"):
        assert mounts[name]["ReadOnly"] is True
        assert mounts[name]["ContainerPath"] == volumes[name]
    env = _env(container)
    assert env["CDK_NEURON_RANK_ORDER"] == "topology"
    assert env["CDK_NEURON_TOPOLOGY_FILE"] == "/var/lib/cdk-neuron/topology.json"
    assert env["CDK_NEURON_DOMAIN_GROUP_INSTANCES"] == "1"
    assert env["CDK_NEURON_ULTRASERVER"] == "0"
    assert env["RANK_ORDER_PORT"] == "29700"
    props = trn1.json["Resources"][trn1.logical_id(trn1.cluster.job_definition)]["Properties"]
    # Base64 of the command, so it reaches the launcher whole through the image's entrypoint.
    assert props["Parameters"] == {"training_command": "dG9yY2hydW4gJFRPUkNIUlVOX0FSR1MgdHJhaW4ucHk="}
    assert (
        decode_training_command(props["Parameters"]["training_command"]) == "torchrun $TORCHRUN_ARGS train.py"
    )


def test_environment_variables(scenario: Scenario) -> None:
    plan = scenario.cluster.plan
    env = _env(_container(scenario))
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["NEURON_TP_DEGREE"] == str(plan.tensor_parallel)
    assert env["NEURON_PP_DEGREE"] == str(plan.pipeline_parallel)
    assert env["NPROC_PER_NODE"] == str(plan.ranks_per_node)
    assert env["CCOM_SOCKET_IFNAME"] == "eth0"
    assert env["MASTER_PORT"] == "29500"
    assert env["ROOT_COMM_PORT"] == "29600"
    assert env["SCRATCH_DIR"] == "/scratch"
    # Set per node at run time by the launcher, never baked into the definition.
    for runtime in ("MASTER_ADDR", "NEURON_RT_ROOT_COMM_ID", "WORLD_SIZE", "NODE_RANK"):
        assert runtime not in env


def test_trn2_exports_lnc_and_logical_cores(trn2: Scenario) -> None:
    env = _env(_container(trn2))
    assert env["NEURON_LOGICAL_NC_CONFIG"] == "2"
    assert env["NPROC_PER_NODE"] == "64"


def test_compile_cache_url_points_at_the_cache(trn1: Scenario) -> None:
    env = _env(_container(trn1))
    bucket = trn1.logical_id(trn1.extras["cache"].bucket)
    assert env["NEURON_COMPILE_CACHE_URL"] == {
        "Fn::Join": ["", ["s3://", {"Ref": bucket}, "/neuron-compile-cache/"]]
    }


def test_checkpoints_mount_with_tls_iam_and_access_point(trn1: Scenario) -> None:
    store = trn1.extras["store"]
    container = _container(trn1)
    assert {"ContainerPath": "/checkpoints", "ReadOnly": False, "SourceVolume": "checkpoints"} in container[
        "MountPoints"
    ]
    (efs,) = [v for v in container["Volumes"] if "EfsVolumeConfiguration" in v]
    assert efs["EfsVolumeConfiguration"] == {
        "FileSystemId": _ref(trn1, store.file_system),
        "TransitEncryption": "ENABLED",
        "AuthorizationConfig": {"AccessPointId": _ref(trn1, store.access_point), "Iam": "ENABLED"},
    }
    assert _env(container)["CHECKPOINT_DIR"] == "/checkpoints"
    assert {"Host": {"SourcePath": "/scratch"}, "Name": "scratch"} in container["Volumes"]


def test_no_storage_means_no_volume_and_no_variables(trn1n: Scenario) -> None:
    container = _container(trn1n)
    env = _env(container)
    assert "CHECKPOINT_DIR" not in env
    assert "NEURON_COMPILE_CACHE_URL" not in env
    assert [v["Name"] for v in container["Volumes"]] == [
        "cdk-neuron-programs",
        "cdk-neuron-topology",
        "scratch",
    ]


def test_retries_host_failures_and_exits_on_application_errors(scenario: Scenario) -> None:
    props = scenario.json["Resources"][scenario.logical_id(scenario.cluster.job_definition)]["Properties"]
    assert props["RetryStrategy"] == {
        "Attempts": 3,
        "EvaluateOnExit": [
            {"Action": "RETRY", "OnStatusReason": "Host EC2*"},
            # The launcher's peer watch: a child node was lost or never joined (Batch retries only the main).
            {"Action": "RETRY", "OnExitCode": "75"},
            {"Action": "EXIT", "OnExitCode": "*"},
        ],
    }
    assert props["Timeout"] == {"AttemptDurationSeconds": 7 * 24 * 3600}


def test_logs_go_to_an_encrypted_group_with_retention(scenario: Scenario) -> None:
    assert scenario.cluster.log_group is not None
    group = scenario.json["Resources"][scenario.logical_id(scenario.cluster.log_group)]["Properties"]
    assert group["RetentionInDays"] == 90
    assert group["KmsKeyId"] == _ref(scenario, scenario.cluster.kms_key, "Arn")
    options = _container(scenario)["LogConfiguration"]
    assert options["LogDriver"] == "awslogs"
    assert options["Options"]["awslogs-group"] == _ref(scenario, scenario.cluster.log_group)
    assert options["Options"]["mode"] == "non-blocking"


def test_second_job_definition_reuses_devices_and_volumes(trn1: Scenario) -> None:
    smoke = _container(trn1, trn1.extras["smoke"])
    main = _container(trn1)
    assert smoke["LinuxParameters"]["Devices"] == main["LinuxParameters"]["Devices"]
    assert smoke["Volumes"] == main["Volumes"]
    assert smoke["JobRoleArn"] == main["JobRoleArn"]
    props = trn1.json["Resources"][trn1.logical_id(trn1.extras["smoke"])]["Properties"]
    assert props["NodeProperties"]["NumNodes"] == 1
    assert decode_training_command(props["Parameters"]["training_command"]).startswith("neuron-ls")
    assert trn1.cluster.job_definitions == [trn1.cluster.job_definition, trn1.extras["smoke"]]


# -- network and IAM -------------------------------------------------------------------------------


def test_security_group_rules(trn1: Scenario) -> None:
    group = _ref(trn1, trn1.cluster.security_group, "GroupId")
    node_group = trn1.json["Resources"][trn1.logical_id(trn1.cluster.security_group)]["Properties"]
    # The only rule to outside the VPC's groups: HTTPS. Nothing comes in from outside the group.
    assert [
        {k: v for k, v in rule.items() if k != "Description"} for rule in node_group["SecurityGroupEgress"]
    ] == [{"CidrIp": "0.0.0.0/0", "FromPort": 443, "IpProtocol": "tcp", "ToPort": 443}]
    assert "SecurityGroupIngress" not in node_group
    ingress = [r["Properties"] for r in trn1.resources("AWS::EC2::SecurityGroupIngress").values()]
    (self_ingress,) = [r for r in ingress if r["GroupId"] == group]
    assert self_ingress["SourceSecurityGroupId"] == group
    assert self_ingress["IpProtocol"] == "-1"
    egress = [r["Properties"] for r in trn1.resources("AWS::EC2::SecurityGroupEgress").values()]
    mine = [r for r in egress if r["GroupId"] == group]
    assert any(r["IpProtocol"] == "-1" and r["DestinationSecurityGroupId"] == group for r in mine)
    store_group = _ref(trn1, trn1.extras["store"].security_group, "GroupId")
    assert any(
        r["IpProtocol"] == "tcp" and r["FromPort"] == 2049 and r["DestinationSecurityGroupId"] == store_group
        for r in mine
    )
    # The store lets the nodes in on NFS.
    assert any(r["GroupId"] == store_group and r["SourceSecurityGroupId"] == group and r["FromPort"] == 2049
               for r in ingress)  # fmt: skip


def test_node_role_is_ssm_ecs_agent_and_its_own_software_only(trn1: Scenario) -> None:
    role = trn1.json["Resources"][trn1.logical_id(trn1.cluster.role)]["Properties"]
    managed = [arn["Fn::Join"][1][-1] for arn in role["ManagedPolicyArns"]]
    assert managed == [
        ":iam::aws:policy/AmazonSSMManagedInstanceCore",
        ":iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role",
    ]
    statements = _statements(trn1, trn1.cluster.role)
    # Read the node-program bundle (one object of the bootstrap bucket) and the EFA installer copy
    # (one object of the cluster's bucket, and its key): nothing else.
    mirror = trn1.cluster.efa_installer_mirror
    assert mirror is not None
    # ... and its own place in the EC2 topology, which names no resource (ec2:DescribeInstanceTopology).
    assert sorted({json.dumps(s["Action"]) for s in statements}) == [
        '"ec2:DescribeInstanceTopology"',
        '"kms:Decrypt"',
        '"s3:GetObject"',
    ]
    (topology,) = [s for s in statements if s["Action"] == "ec2:DescribeInstanceTopology"]
    assert topology["Resource"] == "*"
    objects = [
        json.dumps(resource)
        for s in statements
        if s["Action"] == "s3:GetObject"
        for resource in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    ]
    assert len(objects) == 2
    assert any("cdk-hnb659fds-assets" in o and ".zip" in o for o in objects)
    assert any(
        trn1.logical_id(mirror.bucket) in o and "efa-installer/aws-efa-installer-1.47.0.tar.gz" in o
        for o in objects
    )
    (decrypt,) = [s for s in statements if s["Action"] == "kms:Decrypt"]
    assert decrypt["Resource"] == _ref(trn1, trn1.cluster.kms_key, "Arn")


def test_node_containers_may_reach_each_other_through_the_vpc_default_group(trn1: Scenario) -> None:
    """With EFA, Batch gives each node container the VPC's default group: the cluster opens it."""
    default_group = _ref(trn1, trn1.vpc, "DefaultSecurityGroup")
    ingress = [r["Properties"] for r in trn1.resources("AWS::EC2::SecurityGroupIngress").values()]
    egress = [r["Properties"] for r in trn1.resources("AWS::EC2::SecurityGroupEgress").values()]
    rendezvous = {"IpProtocol": "tcp", "FromPort": 0, "ToPort": 65535}
    assert any(
        r["GroupId"] == default_group
        and r["SourceSecurityGroupId"] == default_group
        and r.items() >= rendezvous.items()
        for r in ingress
    )
    mine = [r for r in egress if r["GroupId"] == default_group]
    assert any(
        r.get("DestinationSecurityGroupId") == default_group and r.items() >= rendezvous.items() for r in mine
    )
    assert any(r.get("CidrIp") == "0.0.0.0/0" and (r["FromPort"], r["ToPort"]) == (443, 443) for r in mine)
    # Never the all-protocols rule a default group starts with (the VPC's restricting custom
    # resource removes exactly that one).
    assert not any(r["GroupId"] == default_group and r["IpProtocol"] == "-1" for r in [*ingress, *egress])
    assert trn1.cluster.task_security_group is not None
    ids = [trn1.stack.resolve(g.security_group_id) for g in trn1.cluster.connections.security_groups]
    assert default_group in ids
    # cdk-nag's VPCDefaultSecurityGroupClosed sees only the VPC's restricting custom resource, and
    # Security Hub EC2.2 would report these rules after the deploy: the app hears of them at synth.
    assert [w for w in _warnings(trn1.cluster) if DEFAULT_SECURITY_GROUP_WARNING_ID in w] == [
        f"{DEFAULT_SECURITY_GROUP_WARNING} [ack: {DEFAULT_SECURITY_GROUP_WARNING_ID}]"
    ]


def _warnings(construct: Any) -> list[str]:
    return [str(e.data) for e in construct.node.metadata if e.type == "aws:cdk:warning"]


def _statements(s: Scenario, role: Any) -> list[dict[str, Any]]:
    ref = _ref(s, role)
    docs = [p["Properties"]["PolicyDocument"] for p in s.resources("AWS::IAM::Policy").values()
            if ref in p["Properties"]["Roles"]]  # fmt: skip
    return [st for doc in docs for st in doc["Statement"]]


def test_job_role_reaches_checkpoints_and_cache_only(trn1: Scenario) -> None:
    statements = _statements(trn1, trn1.cluster.job_role)
    actions = sorted(
        a for st in statements for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
    )
    assert actions == sorted(
        [
            "elasticfilesystem:ClientMount",
            "elasticfilesystem:ClientWrite",
            "s3:AbortMultipartUpload",
            "s3:DeleteObject",
            "s3:GetObject",
            "s3:PutObject",
            "s3:ListBucket",
            "kms:Decrypt",
            "kms:GenerateDataKey",
        ]
    )
    assert all("*" not in a for a in actions)


def test_execution_role_pulls_the_one_repository_and_writes_the_one_log_group(trn1: Scenario) -> None:
    flat: dict[str, Any] = {}
    for st in _statements(trn1, trn1.cluster.execution_role):
        for action in [st["Action"]] if isinstance(st["Action"], str) else st["Action"]:
            flat[action] = st["Resource"]
    assert flat["logs:PutLogEvents"] == _ref(trn1, trn1.cluster.log_group, "Arn")
    assert "repository/pytorch-training-neuronx" in str(flat["ecr:BatchGetImage"])
    assert flat["ecr:GetAuthorizationToken"] == "*"


def test_grant_submit_jobs(trn1: Scenario) -> None:
    statements = _statements(trn1, trn1.extras["submitter"])
    submit = next(st for st in statements if st["Action"] == "batch:SubmitJob")
    resources = submit["Resource"]
    assert _ref(trn1, trn1.cluster.job_queue, "JobQueueArn") in resources
    for definition in (trn1.cluster.job_definition, trn1.extras["smoke"]):
        # Ref of a job definition is its ARN with the current (only active) revision.
        assert _ref(trn1, definition) in resources
    assert len(resources) == 3
    follow = next(st for st in statements if st["Action"] == ["batch:DescribeJobs", "batch:ListJobs"])
    assert follow["Resource"] == "*"
    assert not any("iam:PassRole" in str(st["Action"]) for st in statements)


def test_key_lets_auto_scaling_encrypt_root_volumes(trn1: Scenario) -> None:
    policy = trn1.json["Resources"][trn1.logical_id(trn1.cluster.kms_key)]["Properties"]
    assert policy["EnableKeyRotation"] is True
    statements = {st.get("Sid"): st for st in policy["KeyPolicy"]["Statement"]}
    grant = statements["AllowInstanceLaunchesToGrantEbsUseOfTheKey"]
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}
    principals = grant["Condition"]["ArnEquals"]["aws:PrincipalArn"]
    assert any(p.endswith("AWSServiceRoleForAutoScaling") for p in principals)
    use = statements["AllowInstanceLaunchesToUseTheKeyForEncryptedVolumes"]
    assert all("*" not in a for a in use["Action"])
    assert "AllowCloudWatchLogsToEncryptTrainingLogs" in statements
    key = trn1.json["Resources"][trn1.logical_id(trn1.cluster.kms_key)]
    assert (key["DeletionPolicy"], key["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")


# -- compliance and snapshots ----------------------------------------------------------------------


def test_cdk_nag_packs_are_clean(scenario: Scenario) -> None:
    assert scenario.nag() == []


@pytest.mark.parametrize("name", SCENARIOS)
def test_snapshot(request: pytest.FixtureRequest, name: str, snapshot_json: SnapshotAssertion) -> None:
    """The cluster's own resources (the test VPC and the storage constructs have their own snapshots)."""
    s: Scenario = request.getfixturevalue(name)
    template = normalize_template(s.json)
    # Logical ids of everything under the construct id "Cluster" start with it.
    template["Resources"] = {k: v for k, v in template["Resources"].items() if k.startswith("Cluster")}
    assert template == snapshot_json


def test_a_cluster_without_efa_keeps_its_group_on_the_compute_environment() -> None:
    """trn1.2xlarge has no EFA: no interfaces in the template, so the environment names the group
    (and Batch gives it to the node containers); no installer, no boothook, no default-group rules."""

    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> BatchTrainingCluster:
        return BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.2xlarge",
            max_nodes=1,
            vpc_subnets=first_zone(stack),
            job_image=PUBLIC_IMAGE,
        )

    single = build("us-east-1", make)
    resources = single.one("AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert resources["SecurityGroupIds"] == [_ref(single, single.cluster.security_group, "GroupId")]
    data = single.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert "NetworkInterfaces" not in data
    assert single.cluster.efa_installer_mirror is None
    # Without EFA the containers get the compute environment's group: the node group.
    assert single.cluster.task_security_group is single.cluster.security_group
    assert not [w for w in _warnings(single.cluster) if DEFAULT_SECURITY_GROUP_WARNING_ID in w]
    assert not single.resources("Custom::CdkNeuronEfaInstaller")
    text = flatten_user_data(data["UserData"])
    assert "text/cloud-boothook" not in text and "cdk_neuron_bootstrap training/node-setup.sh" in text
    assert "EFA_INSTALLER_VERSION" not in settings_in(text)["training.env"]
    assert single.nag() == []


def test_an_imported_vpc_must_name_its_default_group_for_efa() -> None:
    from cdk_neuron.errors import NeuronConfigError

    app = cdk.App()
    stack = PinnedStack(app, "Imported", region="us-east-1")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0123456789abcdef0"],
    )
    props: dict[str, Any] = {
        "vpc": vpc,
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "job_image": PUBLIC_IMAGE,
    }
    with pytest.raises(
        NeuronConfigError,
        match=r"^Imported/Refused: vpc_default_security_group_id=None: with EFA, AWS Batch gives",
    ):
        BatchTrainingCluster(stack, "Refused", **props)
    with pytest.raises(NeuronConfigError, match=r"^Imported/Bad: vpc_default_security_group_id='default'"):
        BatchTrainingCluster(stack, "Bad", **props, vpc_default_security_group_id="default")
    cluster = BatchTrainingCluster(
        stack, "Named", **props, vpc_default_security_group_id="sg-0123456789abcdef0"
    )
    assert cluster.task_security_group is not None
    assert cluster.task_security_group.security_group_id == "sg-0123456789abcdef0"


@pytest.mark.parametrize(
    ("name", "rule"), gate_params("training_cluster:trn1", "training_cluster:trn1n", "training_cluster:trn2")
)
def test_deploy_rules(request: pytest.FixtureRequest, name: str, rule: str | None) -> None:
    scenario: Scenario = request.getfixturevalue(name.split(":")[1])
    check_gate(name, scenario.json, rule)


# -- the boot-failure bound (issue 22, defect 5) ----------------------------------------------------


def test_a_failed_boot_is_counted_into_the_clusters_own_series(trn1: Scenario) -> None:
    text = flatten_user_data(trn1.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
    counted = parse_settings(settings_in(text)["boot-failure.env"])
    assert counted == {
        "BOOT_FAILURE_NAMESPACE": "CdkNeuron/Training",
        "BOOT_FAILURE_METRIC": "BootFailures",
        "BOOT_FAILURE_DIMENSIONS": f"Cluster={trn1.cluster.cluster_id}",
    }
    # The node may write that namespace only.
    role = _ref(trn1, trn1.cluster.role)
    (policy,) = [
        p["Properties"]
        for p in trn1.resources("AWS::IAM::ManagedPolicy").values()
        if role in p["Properties"].get("Roles", [])
        and any(s.get("Sid") == "RecordBootFailures" for s in p["Properties"]["PolicyDocument"]["Statement"])
    ]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "cloudwatch:PutMetricData"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "CdkNeuron/Training"}}


def test_nodes_that_keep_failing_their_boot_disable_the_compute_environment(trn1: Scenario) -> None:
    # Without a bound, a deterministic boot failure relaunched, failed and billed for as long as the
    # job waited RUNNABLE.
    alarm = trn1.json["Resources"][trn1.logical_id(trn1.cluster.boot_failure_alarm)]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == (
        "CdkNeuron/Training",
        "BootFailures",
        "Sum",
    )
    assert alarm["Dimensions"] == [{"Name": "Cluster", "Value": trn1.cluster.cluster_id}]
    assert (alarm["Threshold"], alarm["Period"], alarm["EvaluationPeriods"]) == (
        timeouts.BOOT_FAILURE_LIMIT,
        timeouts.BOOT_FAILURE_WINDOW,
        1,
    )
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    rule = trn1.json["Resources"][trn1.logical_id(trn1.cluster.boot_failure_rule)]["Properties"]
    assert rule["EventPattern"] == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "resources": [_ref(trn1, trn1.cluster.boot_failure_alarm, "Arn")],
        "detail": {"state": {"value": ["ALARM"]}},
    }
    ((function_id, function),) = [
        (k, v)
        for k, v in trn1.resources("AWS::Lambda::Function").items()
        if v["Properties"]["Handler"] == "boot_failure_breaker.handler"
    ]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    environment = function["Properties"]["Environment"]["Variables"]
    assert environment == {
        "COMPUTE_ENVIRONMENT": _ref(trn1, trn1.cluster.compute_environment, "ComputeEnvironmentArn")
    }
    statements = [
        s
        for p in trn1.resources("AWS::IAM::ManagedPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "DisableComputeEnvironment"
    ]
    assert statements == [
        {
            "Sid": "DisableComputeEnvironment",
            "Effect": "Allow",
            "Action": "batch:UpdateComputeEnvironment",
            "Resource": _ref(trn1, trn1.cluster.compute_environment, "ComputeEnvironmentArn"),
        }
    ]
