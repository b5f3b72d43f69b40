"""Ec2InferenceFleet on EC2 Auto Scaling behind an internal ALB (inf2.8xlarge, Llama 8B) and its variants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from deploy_rules_gate import check_gate, gate_params
from syrupy.assertion import SnapshotAssertion

from cdk_neuron import timeouts
from cdk_support import (
    TEST_ACCOUNT,
    make_app,
    nag_violations,
    normalize_template,
    parse_settings,
    settings_in,
    template_of,
)

ACCOUNT = "111111111111"
REGION = "us-east-1"
AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]
# us-east-1b maps to use1-az1, which the AZ snapshot does not list for inf2: with two listed zones
# left (min_availability_zones 2) it is left out, with a warning.
AZ_IDS = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az1", "us-east-1c": "use1-az6"}
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hf-token"
CERT_ARN = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


@dataclass
class Built:
    app: Any
    stack: Any
    fleet: Any
    template: dict[str, Any]
    variants_stack: Any
    variants: dict[str, Any]
    variants_template: dict[str, Any]


def _stack(app: Any, name: str) -> tuple[Any, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    class PinnedAzStack(cdk.Stack):
        @property
        def availability_zones(self) -> list[str]:
            return AZS

    stack = PinnedAzStack(app, name, env=cdk.Environment(account=ACCOUNT, region=REGION))
    cdk.Validations.of(stack).acknowledge(
        cdk.Acknowledgment(
            id="CloudFormation-Validate::W3010", reason="test stacks pin AZ names (no lookups)"
        )
    )
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, ip_addresses=ec2.IpAddresses.cidr("10.0.0.0/16"))
    return stack, vpc


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    import aws_cdk as cdk
    from aws_cdk import aws_certificatemanager as acm
    from aws_cdk import aws_logs as logs
    from aws_cdk import aws_secretsmanager as secretsmanager

    from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec, ServingEngine

    app = make_app()
    stack, vpc = _stack(app, "Serving")
    fleet = Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=ModelSpec(
            model_id="meta-llama/Llama-3.1-8B-Instruct",
            artifact_uri="s3://my-models/llama-3.1-8b/neuron",
            parameters=8_000_000_000,
            batch_size=4,
        ),
        instance_type="inf2.8xlarge",
        min_capacity=2,
        availability_zone_ids=AZ_IDS,
        min_availability_zones=2,
    )

    variants_stack, vpc2 = _stack(app, "ServingVariants")
    hub_8b = ModelSpec(model_id="meta-llama/Llama-3.1-8B-Instruct", parameters=8_000_000_000, batch_size=4)
    variants = {
        "https": Ec2InferenceFleet(
            variants_stack,
            "Https",
            vpc=vpc2,
            model=hub_8b,
            engine=ServingEngine.tgi(),
            instance_type="inf2.24xlarge",
            certificate=acm.Certificate.from_certificate_arn(variants_stack, "Cert", CERT_ARN),
            hugging_face_token=secretsmanager.Secret.from_secret_partial_arn(
                variants_stack, "Token", SECRET_ARN
            ),
            warm_pool=True,
            target_requests_per_minute=120,
            target_concurrency=10,
        ),
        "spot": Ec2InferenceFleet(
            variants_stack,
            "Spot",
            vpc=vpc2,
            model=hub_8b,
            instance_type="inf2.8xlarge",
            spot=True,
            log_retention=logs.RetentionDays.ONE_YEAR,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        ),
        "idle": Ec2InferenceFleet(
            variants_stack, "Idle", vpc=vpc2, model=hub_8b, instance_type="inf2.8xlarge", min_capacity=0
        ),
        # Another model: its artifact grant is a policy of its own.
        "second model": Ec2InferenceFleet(
            variants_stack,
            "SecondModel",
            vpc=vpc2,
            model=ModelSpec(
                model_id="meta-llama/Llama-3.1-8B-Instruct",
                artifact_uri="s3://my-models/llama-3.1-8b/neuron-v2",
                parameters=8_000_000_000,
                batch_size=4,
            ),
            instance_type="inf2.8xlarge",
            min_capacity=2,
            max_capacity=8,
        ),
    }
    yield Built(
        app=app,
        stack=stack,
        fleet=fleet,
        template=template_of(stack),
        variants_stack=variants_stack,
        variants=variants,
        variants_template=template_of(variants_stack),
    )


def _one(template: dict[str, Any], type_: str, path_contains: str = "") -> tuple[str, dict[str, Any]]:
    found = [(k, v) for k, v in template["Resources"].items() if v["Type"] == type_ and path_contains in k]
    assert len(found) == 1, [k for k, _ in found]
    return found[0]


def _all(template: dict[str, Any], type_: str, path_contains: str = "") -> list[tuple[str, dict[str, Any]]]:
    return [(k, v) for k, v in template["Resources"].items() if v["Type"] == type_ and path_contains in k]


def _props(template: dict[str, Any], type_: str, path_contains: str = "") -> dict[str, Any]:
    return _one(template, type_, path_contains)[1]["Properties"]  # type: ignore[no-any-return]


def _user_data(template: dict[str, Any], path_contains: str = "") -> str:
    data = _props(template, "AWS::EC2::LaunchTemplate", path_contains)["LaunchTemplateData"]["UserData"][
        "Fn::Base64"
    ]
    if isinstance(data, str):
        return data
    return "".join(p if isinstance(p, str) else json.dumps(p) for p in data["Fn::Join"][1])


# --------------------------------------------------------------------------------------------
# Instances
# --------------------------------------------------------------------------------------------


def test_launch_template_uses_the_ecs_neuron_ami_with_imdsv2_and_encrypted_volumes(built: Built) -> None:
    data = _props(built.template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    parameter = data["ImageId"]["Ref"]
    # The pinned release's own parameter: a newer AMI never replaces the fleet by itself.
    assert built.template["Parameters"][parameter]["Default"] == (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/"
        "al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64/image_id"
    )
    # A node that cannot boot powers off; terminating lets Auto Scaling replace it.
    assert data["InstanceInitiatedShutdownBehavior"] == "terminate"
    assert data["InstanceType"] == "inf2.8xlarge"
    assert data["MetadataOptions"] == {
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
        "InstanceMetadataTags": "enabled",
    }
    key = {"Fn::GetAtt": [_one(built.template, "AWS::KMS::Key")[0], "Arn"]}
    root, volume = data["BlockDeviceMappings"]
    # The escape hatch keeps the root at the AMI's snapshot size but encrypts it with our key.
    assert root == {
        "DeviceName": "/dev/xvda",
        "Ebs": {"Encrypted": True, "KmsKeyId": key, "VolumeType": "gp3", "DeleteOnTermination": True},
    }
    assert volume["DeviceName"] == "/dev/sdf"
    assert volume["Ebs"] | {"KmsKeyId": key} == {
        "Encrypted": True,
        "KmsKeyId": key,
        "VolumeType": "gp3",
        # One copy of the 8B weights (precompiled S3 artifacts; room for the copy model.sh puts on the
        # volume when they do not fit the tmpfs) + 40 GiB of images + 20 GiB scratch: was 110 (three
        # copies; review S8).
        "VolumeSize": 80,
        # The 8B weights go to RAM on inf2.8xlarge (128 GiB), so the volume takes only the image: 500
        # MiB/s and gp3's baseline IOPS, not the instance's 1,192 MiB/s (review S8: provisioned
        # throughput bills per month, also on a stopped warm-pool instance).
        "Throughput": 500,
        "Iops": 3000,
        "DeleteOnTermination": True,
    }
    assert "NetworkInterfaces" not in data  # no public IP, security groups only at the top level
    assert "KeyName" not in data


def test_user_data_runs_the_pinned_engine_on_the_chip(built: Built) -> None:
    script = _user_data(built.template)
    assert script.startswith("#!/bin/bash\n")
    settings = settings_in(script)
    assert parse_settings(settings["replica-0.env"]) == {
        "REPLICA_DEVICES": "/dev/neuron0",
        "VISIBLE_CORES": "0-1",
    }
    assert "replica-1.env" not in settings
    fleet = parse_settings(settings["fleet.env"])
    assert "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5" in fleet["IMAGE"]
    assert ":latest" not in script
    assert fleet["ASG_LOGICAL_ID"] == _one(built.template, "AWS::AutoScaling::AutoScalingGroup")[0]
    assert script.rstrip().endswith(
        "cdk_neuron_bootstrap serving/boot.sh || cdk_neuron_give_up 'inference instance boot failed'"
    )


def test_instances_read_only_the_node_program_bundle_object(built: Built) -> None:
    statements = _props(built.template, "AWS::IAM::ManagedPolicy", "InstancePolicy")["PolicyDocument"][
        "Statement"
    ]
    (read,) = [s for s in statements if s["Sid"] == "ReadNodePrograms"]
    assert read["Action"] == "s3:GetObject"
    resource = json.dumps(read["Resource"])
    assert "cdk-hnb659fds-assets" in resource and ".zip" in resource and "/*" not in resource
    bundle = settings_in(_user_data(built.template))["bundle.env"]
    assert parse_settings(bundle)["BUNDLE_KEY"].endswith(".zip")


def test_user_data_is_checked_against_the_16_kb_limit() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.node_programs.bundle import UserDataSizeLimit, estimated_size

    app = make_app()
    stack = cdk.Stack(app, "Huge", env=cdk.Environment(account=TEST_ACCOUNT, region="us-east-1"))
    user_data = ec2.UserData.for_linux()
    # 16,273 bytes of text, plus a stack name that may be 128 characters long at deployment.
    user_data.add_commands("echo " + "x" * 16_250, f"echo {cdk.Aws.STACK_NAME}")
    template = ec2.LaunchTemplate(stack, "Template", user_data=user_data)
    (message,) = UserDataSizeLimit(template, user_data).validate()
    assert message.startswith("Huge/Template: user data may reach 16,401 bytes")
    assert "over EC2's limit of 16,384 bytes" in message
    user_data_ok = ec2.UserData.for_linux()
    user_data_ok.add_commands("echo " + "x" * 15_000)
    assert UserDataSizeLimit(template, user_data_ok).validate() == []
    # Tokens count as their longest value: the stack name up to 128 characters.
    assert estimated_size({"Fn::Join": ["", ["ab", {"Ref": "AWS::StackName"}]]}) == 130
    assert estimated_size({"Fn::Base64": "abcd"}) == 8


def test_group_spans_only_the_zones_that_offer_the_type(built: Built) -> None:
    props = _props(built.template, "AWS::AutoScaling::AutoScalingGroup")
    subnets = [ref["Ref"] for ref in props["VPCZoneIdentifier"]]
    azs = {built.template["Resources"][s]["Properties"]["AvailabilityZone"] for s in subnets}
    assert azs == {"us-east-1a", "us-east-1c"}
    assert all("Private" in s for s in subnets)
    assert built.fleet.availability_zones == ("us-east-1a", "us-east-1c")


def test_elb_health_checks_start_counting_once_the_hook_released_the_instance(built: Built) -> None:
    props = _props(built.template, "AWS::AutoScaling::AutoScalingGroup")
    assert props["HealthCheckType"] == "ELB"
    # The hook holds an instance until its replicas answer, so the grace covers only the load
    # balancer confirming it (2 checks 15 s apart), not the model's start-up (cdk_neuron.timeouts).
    assert props["HealthCheckGracePeriod"] == 45 == timeouts.HEALTH_CHECK_GRACE
    # 120 s boot + 360 s pull (AWS's published figure) + 12 s S3 sync into RAM + 955 s container (8B on
    # inf2.8xlarge, whose 128 GiB host holds the weights in a tmpfs and twice more: no small-host
    # doubling; timing.py, floors.py).
    assert built.fleet.startup_timeout_seconds == 1447
    # Issue 25: the hook waits the progress window (450 s), not the start-up; the node extends it
    # with RecordLifecycleActionHeartbeat while its start-up moves (serving/progress.sh).
    assert props["LifecycleHookSpecificationList"] == [
        {
            "DefaultResult": "ABANDON",
            "HeartbeatTimeout": timeouts.LIFECYCLE_PROGRESS_WINDOW,
            "LifecycleHookName": "cdk-neuron-ready",
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
        }
    ]
    assert (props["MinSize"], props["MaxSize"]) == ("2", "4")
    fleet_env = _user_data(built.template)
    # The node gives up (and says why) READY_MARGIN before the start-up budget, counted from boot,
    # and fails a start-up that stops moving before the hook's window ends.
    assert f"\nSTARTUP_DEADLINE_SECONDS={1447 - timeouts.READY_MARGIN}\n" in fleet_env
    assert f"\nPROGRESS_INTERVAL_SECONDS={timeouts.PROGRESS_INTERVAL}\n" in fleet_env
    assert f"\nPROGRESS_STALL_SECONDS={timeouts.PROGRESS_STALL}\n" in fleet_env
    # CloudFormation still waits for two whole start-ups (2 x 1,447 s), not two windows.
    _, group = _one(built.template, "AWS::AutoScaling::AutoScalingGroup")
    assert group["CreationPolicy"]["ResourceSignal"]["Timeout"] == "PT48M14S"


def _refresh(group: dict[str, Any]) -> dict[str, Any]:
    assert "AutoScalingRollingUpdate" not in group["UpdatePolicy"]
    return group["UpdatePolicy"]["AutoScalingInstanceRefresh"]  # type: ignore[no-any-return]


def test_updates_keep_the_desired_capacity_in_service_and_creation_tolerates_a_replacement(
    built: Built,
) -> None:
    _, group = _one(built.template, "AWS::AutoScaling::AutoScalingGroup")
    assert group["Properties"]["InstanceMaintenancePolicy"] == {
        "MinHealthyPercentage": 100,
        "MaxHealthyPercentage": 110,
    }
    # An instance refresh: percentages of the desired capacity, replacements launched first and
    # counted once the launch hook released them (not a MinInstancesInService fixed at synthesis).
    assert _refresh(group) == {
        "Strategy": "Rolling",
        "Preferences": {"MinHealthyPercentage": 100, "MaxHealthyPercentage": 110, "InstanceWarmup": 60},
    }
    # Two start-up budgets: a first instance that is abandoned is replaced within the stack's wait.
    assert group["CreationPolicy"] == {"ResourceSignal": {"Count": 2, "Timeout": "PT48M14S"}}


def test_a_fleet_that_scales_to_zero_still_launches_before_it_terminates(built: Built) -> None:
    # min_capacity 0 (dev): the old rolling update had MinInstancesInService 0 and terminated the one
    # running instance before its replacement started.
    _, group = _one(built.variants_template, "AWS::AutoScaling::AutoScalingGroup", "Idle")
    assert group["Properties"]["MinSize"] == "0"
    assert _refresh(group)["Preferences"]["MinHealthyPercentage"] == 100
    assert _refresh(group)["Preferences"]["MaxHealthyPercentage"] == 110


def test_scales_on_concurrency_per_instance(built: Built) -> None:
    props = _props(built.template, "AWS::AutoScaling::ScalingPolicy")
    config = props["TargetTrackingConfiguration"]
    assert config["TargetValue"] == 4  # batch 4 x 1 replica
    assert config["CustomizedMetricSpecification"] == {
        "Dimensions": [{"Name": "Fleet", "Value": built.fleet.node.addr}],
        "MetricName": "ConcurrentRequests",
        "Namespace": "CdkNeuron/Serving",
        "Statistic": "Average",
    }


def test_instance_permissions_are_least_privilege(built: Built) -> None:
    statements = [
        statement
        for _, policy in _all(built.template, "AWS::IAM::ManagedPolicy")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    by_sid = {s["Sid"]: s for s in statements}
    assert by_sid["ReadModelArtifacts"]["Resource"] == "arn:aws:s3:::my-models/llama-3.1-8b/neuron/*"
    assert by_sid["ListModelArtifacts"]["Condition"] == {
        "StringLike": {"s3:prefix": ["llama-3.1-8b/neuron", "llama-3.1-8b/neuron/*"]}
    }
    assert by_sid["EcrPullServingImage"]["Resource"] == (
        "arn:aws:ecr:us-east-1:763104351884:repository/huggingface-vllm-inference-neuronx"
    )
    assert by_sid["CompleteLaunchLifecycle"]["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/cdk-neuron:fleet": built.fleet.node.addr}
    }
    # Completing and extending the launch action (serving/progress.sh), on this fleet's group only.
    assert by_sid["CompleteLaunchLifecycle"]["Action"] == [
        "autoscaling:CompleteLifecycleAction",
        "autoscaling:RecordLifecycleActionHeartbeat",
    ]
    assert by_sid["CompleteLaunchLifecycle"]["Resource"] == (
        "arn:aws:autoscaling:us-east-1:111111111111:autoScalingGroup:*:autoScalingGroupName/*"
    )
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert not any(a.endswith("*") for a in actions), statement


def test_key_lets_auto_scaling_use_it_in_a_new_account_and_is_retained(built: Built) -> None:
    _, key = _one(built.template, "AWS::KMS::Key")
    assert (key["DeletionPolicy"], key["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = {s.get("Sid"): s for s in key["Properties"]["KeyPolicy"]["Statement"]}
    role = (
        f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    )
    # The training key's pattern (one helper writes both): the role is matched by aws:PrincipalArn,
    # never named as a principal, which KMS refuses in an account where it does not exist yet.
    for sid in (
        "AllowInstanceLaunchesToUseTheKeyForEncryptedVolumes",
        "AllowInstanceLaunchesToGrantEbsUseOfTheKey",
    ):
        assert statements[sid]["Principal"] == {"AWS": "*"}
        assert statements[sid]["Condition"]["ArnEquals"] == {"aws:PrincipalArn": [role]}
        assert statements[sid]["Condition"]["StringEquals"] == {"kms:CallerAccount": ACCOUNT}
    assert not any("aws-service-role" in json.dumps(s.get("Principal")) for s in statements.values())


def test_replica_logs_go_to_a_retained_log_group_encrypted_with_the_fleet_key(built: Built) -> None:
    group_id, group = _one(built.template, "AWS::Logs::LogGroup")
    assert group_id.startswith("FleetReplicaLogs")
    assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    key_id, key = _one(built.template, "AWS::KMS::Key")
    assert group["Properties"] == {"KmsKeyId": {"Fn::GetAtt": [key_id, "Arn"]}, "RetentionInDays": 90}
    (statement,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Sid") == "AllowCloudWatchLogsToEncryptReplicaLogs"
    ]
    assert statement["Principal"] == {"Service": f"logs.{REGION}.amazonaws.com"}
    assert statement["Condition"] == {
        "ArnLike": {"kms:EncryptionContext:aws:logs:arn": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:*"}
    }
    # The instances may create their streams and write to them, in this group only.
    statements = _props(built.template, "AWS::IAM::ManagedPolicy", "InstancePolicy")["PolicyDocument"][
        "Statement"
    ]
    (write,) = [s for s in statements if s["Sid"] == "WriteReplicaLogs"]
    assert write["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert write["Resource"] == {"Fn::GetAtt": [group_id, "Arn"]}
    assert not any("logs:" in json.dumps(s["Action"]) for s in statements if s is not write)
    # The group's name reaches the replicas through the fleet's settings.
    fleet_settings = parse_settings(settings_in(_user_data(built.template))["fleet.env"])
    assert fleet_settings["LOG_GROUP"] == json.dumps({"Ref": group_id})
    assert built.fleet.log_group.node.path == "Serving/Fleet/ReplicaLogs"


def test_replica_log_retention_and_removal_follow_the_props(built: Built) -> None:
    _, group = _one(built.variants_template, "AWS::Logs::LogGroup", "Spot")
    assert (group["DeletionPolicy"], group["Properties"]["RetentionInDays"]) == ("Delete", 365)


def test_a_destroyed_fleet_empties_its_access_log_bucket_first(built: Built) -> None:
    """ELB writes a test object into the bucket at once: a Delete bucket nothing empties fails cdk destroy."""
    bucket_id, bucket = _one(built.variants_template, "AWS::S3::Bucket", "SpotAccessLogs")
    assert bucket["DeletionPolicy"] == "Delete"
    auto_delete = _props(built.variants_template, "Custom::S3AutoDeleteObjects")
    assert auto_delete["BucketName"] == {"Ref": bucket_id}
    provider, attribute = auto_delete["ServiceToken"]["Fn::GetAtt"]
    assert (
        provider.startswith("CustomS3AutoDeleteObjectsCustomResourceProviderHandler") and attribute == "Arn"
    )


# --------------------------------------------------------------------------------------------
# Load balancer
# --------------------------------------------------------------------------------------------


def test_internal_alb_drops_invalid_headers_and_logs_access(built: Built) -> None:
    props = _props(built.template, "AWS::ElasticLoadBalancingV2::LoadBalancer")
    attributes = {a["Key"]: a["Value"] for a in props["LoadBalancerAttributes"]}
    assert props["Scheme"] == "internal"
    assert attributes["routing.http.drop_invalid_header_fields.enabled"] == "true"
    assert attributes["access_logs.s3.enabled"] == "true"
    assert attributes["idle_timeout.timeout_seconds"] == "300"
    assert len(props["Subnets"]) == 3
    bucket_id, bucket = _one(built.template, "AWS::S3::Bucket", "AccessLogs")
    assert attributes["access_logs.s3.bucket"] == {"Ref": bucket_id}
    assert bucket["DeletionPolicy"] == "RetainExceptOnCreate"
    # Kept, so nothing empties it.
    assert not [r for r in built.template["Resources"].values() if r["Type"] == "Custom::S3AutoDeleteObjects"]
    encryption = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}  # ALB logs need SSE-S3


def test_http_listener_is_reachable_from_the_vpc_only(built: Built) -> None:
    listener = _props(built.template, "AWS::ElasticLoadBalancingV2::Listener")
    assert (listener["Port"], listener["Protocol"]) == (80, "HTTP")
    ingress = _props(built.template, "AWS::EC2::SecurityGroup", "LoadBalancerSecurityGroup")[
        "SecurityGroupIngress"
    ]
    assert [(r["CidrIp"], r["FromPort"], r["ToPort"]) for r in ingress] == [("10.0.0.0/16", 80, 80)]
    for resource in built.template["Resources"].values():
        for rule in resource.get("Properties", {}).get("SecurityGroupIngress", []):
            assert rule.get("CidrIp") != "0.0.0.0/0"
    assert built.fleet.url.startswith("http://")
    assert built.fleet.connections.default_port.to_string() == "80"


def test_target_group_checks_the_engine_health_path(built: Built) -> None:
    props = _props(built.template, "AWS::ElasticLoadBalancingV2::TargetGroup")
    assert (props["HealthCheckPath"], props["Port"], props["Matcher"]) == (
        "/health",
        8080,
        {"HttpCode": "200"},
    )
    attributes = {a["Key"]: a["Value"] for a in props["TargetGroupAttributes"]}
    assert attributes["load_balancing.algorithm.type"] == "least_outstanding_requests"


def test_attributes(built: Built) -> None:
    fleet = built.fleet
    assert (fleet.plan.tensor_parallel, fleet.plan.replicas_per_instance, fleet.instance_type) == (
        2,
        1,
        "inf2.8xlarge",
    )
    assert fleet.grant_principal is fleet.instance_role
    assert fleet.kms_key.node.path == "Serving/Fleet/Key"
    assert fleet.fleet_id == fleet.node.addr
    # The load balancer is authorized by network, not IAM: there is nothing to grant invoke on.
    assert not hasattr(fleet, "grant_invoke") and not hasattr(fleet, "endpoint")


def test_nag_clean(built: Built) -> None:
    assert nag_violations(built.fleet) == []
    for fleet in built.variants.values():
        assert nag_violations(fleet) == []


def test_snapshot(built: Built, snapshot_json: SnapshotAssertion) -> None:
    assert normalize_template(built.template) == snapshot_json


# --------------------------------------------------------------------------------------------
# Variants: HTTPS + warm pool + Hub token + request-count scaling (TGI, inf2.24xlarge); Spot
# --------------------------------------------------------------------------------------------


def test_https_listener_with_the_certificate(built: Built) -> None:
    listener = _props(built.variants_template, "AWS::ElasticLoadBalancingV2::Listener", "Https")
    assert (listener["Port"], listener["Protocol"]) == (443, "HTTPS")
    assert listener["Certificates"] == [{"CertificateArn": CERT_ARN}]
    assert listener["SslPolicy"].startswith("ELBSecurityPolicy-TLS13")
    ingress = _props(built.variants_template, "AWS::EC2::SecurityGroup", "HttpsLoadBalancerSecurityGroup")
    assert [(r["CidrIp"], r["FromPort"]) for r in ingress["SecurityGroupIngress"]] == [("10.0.0.0/16", 443)]
    assert built.variants["https"].url.startswith("https://")


def test_warm_pool_is_stopped_and_reused(built: Built) -> None:
    props = _props(built.variants_template, "AWS::AutoScaling::WarmPool")
    assert props["PoolState"] == "Stopped"
    assert props["InstanceReusePolicy"] == {"ReuseOnScaleIn": True}


def test_warm_pool_keeps_max_minus_desired_unless_sized(built: Built) -> None:
    # No MaxGroupPreparedCapacity: the pool keeps max - desired (PutWarmPool's default).
    assert "MaxGroupPreparedCapacity" not in _props(built.variants_template, "AWS::AutoScaling::WarmPool")


def test_a_sized_warm_pool_keeps_that_many_stopped_instances_at_the_minimum() -> None:
    # Issue 25: a pool of N at the minimum is MaxGroupPreparedCapacity = min + N ("the size of the warm
    # pool is calculated as the difference between the maximum prepared capacity and the desired
    # capacity", Warm pools for Amazon EC2 Auto Scaling), and the fleet records N for plan and cost.
    from cdk_neuron.cli import assembly
    from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec

    app = make_app()
    stack, vpc = _stack(app, "SizedPool")
    Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=ModelSpec(
            model_id="meta-llama/Llama-3.2-3B-Instruct",
            artifact_uri="s3://my-models/llama-3.2-3b/neuron",
            parameters=3_212_749_824,
        ),
        instance_type="inf2.xlarge",
        min_capacity=0,
        max_capacity=4,
        warm_pool=True,
        warm_pool_size=1,
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    props = _props(template, "AWS::AutoScaling::WarmPool")
    assert (props["MaxGroupPreparedCapacity"], props["MinSize"]) == (1, 0)
    # What the CLI reads back (plan and cost price the pool from it).
    [record] = [r for r in assembly.template_records(template) if r.kind == "serving"]
    served = assembly.serving(record)
    assert (served.warm_pool, served.warm_pool_size) == (True, 1)


def test_a_warm_pool_fleet_pauses_instances_returning_to_the_pool(built: Built) -> None:
    # Review S5 (issue 25, second pass): an instance scale-in returns to the pool "pauses at the
    # Warmed:Pending:Wait state for the EC2_INSTANCE_TERMINATING lifecycle action" (Use lifecycle hooks
    # with a warm pool): without a terminating hook it would be stopped while its replicas serve.
    [(_, warm_group)] = [
        (k, v)
        for k, v in built.variants_template["Resources"].items()
        if v["Type"] == "AWS::AutoScaling::AutoScalingGroup" and k.startswith("Https")
    ]
    hooks = warm_group["Properties"]["LifecycleHookSpecificationList"]
    assert [h["LifecycleHookName"] for h in hooks] == ["cdk-neuron-ready", "cdk-neuron-return"]
    assert hooks[1] == {
        "DefaultResult": "CONTINUE",
        "HeartbeatTimeout": timeouts.POOL_RETURN_HEARTBEAT,
        "LifecycleHookName": "cdk-neuron-return",
        "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
    }
    # The watch knows the hook's name on every fleet; only a warm-pool fleet has the hook.
    assert "\nLIFECYCLE_RETURN_HOOK=cdk-neuron-return\n" in _user_data(built.variants_template, "Https")


def test_request_count_and_concurrency_policies(built: Built) -> None:
    policies = [
        v["Properties"]["TargetTrackingConfiguration"]
        for k, v in built.variants_template["Resources"].items()
        if v["Type"] == "AWS::AutoScaling::ScalingPolicy" and k.startswith("Https")
    ]
    by_kind = {
        p.get("PredefinedMetricSpecification", {}).get("PredefinedMetricType", "custom"): p["TargetValue"]
        for p in policies
    }
    assert by_kind == {"ALBRequestCountPerTarget": 120, "custom": 10}


def test_hub_token_comes_from_secrets_manager(built: Built) -> None:
    script = _user_data(built.variants_template, "Https")
    assert f"HF_TOKEN_SECRET_ARN={SECRET_ARN}" in script
    assert "HF_TOKEN=$" not in script and "HF_TOKEN=hf_" not in script
    statements = _props(built.variants_template, "AWS::IAM::ManagedPolicy", "HttpsInstancePolicy")[
        "PolicyDocument"
    ]["Statement"]
    read = next(s for s in statements if s["Sid"] == "ReadHubToken")
    assert read["Resource"] == f"{SECRET_ARN}-??????"


def test_six_replicas_on_inf2_24xlarge_behind_the_local_proxy(built: Built) -> None:
    settings = settings_in(_user_data(built.variants_template, "Https"))
    devices = [parse_settings(settings[f"replica-{i}.env"])["REPLICA_DEVICES"] for i in range(6)]
    assert devices == [f"/dev/neuron{i}" for i in range(6)]
    assert parse_settings(settings["fleet.env"])["REPLICAS"] == "6"
    assert "MODEL_ID=meta-llama/Llama-3.1-8B-Instruct" in settings["container.env"].splitlines()
    # No public image: the proxy is the Amazon Linux nginx package (test_node_programs runs it).
    assert "public.ecr.aws" not in _user_data(built.variants_template, "Https")


def test_spot_uses_a_mixed_instances_policy(built: Built) -> None:
    props = _props(built.variants_template, "AWS::AutoScaling::AutoScalingGroup", "Spot")
    distribution = props["MixedInstancesPolicy"]["InstancesDistribution"]
    assert distribution == {
        "OnDemandBaseCapacity": 0,
        "OnDemandPercentageAboveBaseCapacity": 0,
        "SpotAllocationStrategy": "price-capacity-optimized",
    }
    assert props["CapacityRebalance"] is True
    assert "LaunchTemplate" not in props
    # cdk-nag cannot follow MixedInstancesPolicy (acknowledged), so the template is checked here.
    template_id = props["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"][
        "LaunchTemplateId"
    ]
    data = built.variants_template["Resources"][template_id["Ref"]]["Properties"]["LaunchTemplateData"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert all(m["Ebs"]["Encrypted"] is True for m in data["BlockDeviceMappings"])


def test_maintenance_engine_and_hub_model_warn(built: Built) -> None:
    from aws_cdk.assertions import Annotations, Match

    warnings = Annotations.from_stack(built.variants_stack).find_warning(
        "/ServingVariants/Https", Match.string_like_regexp("maintenance mode upstream")
    )
    assert warnings
    assert Annotations.from_stack(built.variants_stack).find_warning(
        "/ServingVariants/Spot", Match.string_like_regexp("Hugging Face Hub")
    )
    assert not Annotations.from_stack(built.stack).find_warning(
        "*", Match.string_like_regexp("maintenance mode|Hugging Face Hub")
    )
    # The main fleet's one warning: us-east-1b (use1-az1) is left out because the AZ snapshot, the only
    # AZ-level source, does not list inf2 there (not refused: review-24 finding 5).
    assert Annotations.from_stack(built.stack).find_warning(
        "/Serving/Fleet",
        Match.string_like_regexp(r"^us-east-1b \(use1-az1\) left out while listed zones suffice"),
    )


def test_a_fleet_may_idle_at_zero_and_wakes_on_the_first_request(built: Built) -> None:
    group = _props(built.variants_template, "AWS::AutoScaling::AutoScalingGroup", "Idle")
    assert (group["MinSize"], group["MaxSize"]) == ("0", "1")
    steps = [
        (k, v["Properties"])
        for k, v in built.variants_template["Resources"].items()
        if v["Type"] == "AWS::AutoScaling::ScalingPolicy"
        and k.startswith("Idle")
        and v["Properties"]["PolicyType"] == "StepScaling"
    ]
    assert len(steps) == 1
    (policy_id, policy) = steps[0]
    assert policy["AdjustmentType"] == "ChangeInCapacity"
    assert policy["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]
    (alarm,) = [
        v["Properties"]
        for v in built.variants_template["Resources"].values()
        if v["Type"] == "AWS::CloudWatch::Alarm"
        and any(policy_id in json.dumps(a) for a in v["Properties"].get("AlarmActions", []))
    ]
    expression = next(m["Expression"] for m in alarm["Metrics"] if "Expression" in m)
    assert expression == "IF(rejected > 0 AND desired == 0, 1, 0)"
    used = {m["Id"]: m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Metrics"] if "MetricStat" in m}
    # RequestCount counts only requests for which a target was chosen: at zero instances it stays
    # empty. The load balancer's own 503 ("no registered targets") is what exists at zero.
    assert used == {"rejected": "HTTPCode_ELB_503_Count", "desired": "GroupDesiredCapacity"}
    (rejected,) = [m["MetricStat"] for m in alarm["Metrics"] if m["Id"] == "rejected"]
    assert rejected["Stat"] == "Sum"
    assert [d["Name"] for d in rejected["Metric"]["Dimensions"]] == ["LoadBalancer"]
    assert alarm["TreatMissingData"] == "notBreaching"
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["EvaluationPeriods"]) == (
        "GreaterThanOrEqualToThreshold",
        1,
        1,
    )


def test_fleets_above_zero_have_no_wake_up_policy(built: Built) -> None:
    kinds = {
        v["Properties"]["PolicyType"]
        for v in built.template["Resources"].values()
        if v["Type"] == "AWS::AutoScaling::ScalingPolicy"
    }
    assert kinds == {"TargetTrackingScaling"}


@pytest.mark.parametrize(("name", "rule"), gate_params("serving_ec2:stack", "serving_ec2:variants"))
def test_deploy_rules(built: Built, name: str, rule: str | None) -> None:
    check_gate(name, built.template if name.endswith(":stack") else built.variants_template, rule)


# --------------------------------------------------------------------------------------------
# Updates: what a replacement keeps
# --------------------------------------------------------------------------------------------


def test_a_new_launch_template_keeps_the_group_and_the_size_auto_scaling_gave_it(built: Built) -> None:
    """No replacing update and no DesiredCapacity in the template: a new model or AMI refreshes the
    instances of the running group, which keeps its capacity (a replacement group used to start at
    MinSize, so a fleet scaled to 8 served with 2 after the swap)."""
    groups = [g for t in (built.template, built.variants_template)
              for _, g in _all(t, "AWS::AutoScaling::AutoScalingGroup")]  # fmt: skip
    assert len(groups) == 1 + len(built.variants)
    for group in groups:
        assert "AutoScalingReplacingUpdate" not in group["UpdatePolicy"]
        assert "DesiredCapacity" not in group["Properties"]
        assert _refresh(group)["Preferences"]["MinHealthyPercentage"] == 100


def test_the_artifact_grant_is_a_policy_named_after_the_artifact(built: Built) -> None:
    """A new model is a new policy: the old one (for the instances not yet refreshed) goes only in the
    cleanup phase."""
    ((first_id, first),) = _all(built.template, "AWS::IAM::ManagedPolicy", "FleetArtifactPolicy")
    ((second_id, second),) = _all(
        built.variants_template, "AWS::IAM::ManagedPolicy", "SecondModelArtifactPolicy"
    )
    assert first_id.removeprefix("Fleet")[:22] != second_id.removeprefix("SecondModel")[:22]
    assert [s["Sid"] for s in first["Properties"]["PolicyDocument"]["Statement"]] == [
        "ReadModelArtifacts",
        "ListModelArtifacts",
    ]
    assert second["Properties"]["PolicyDocument"]["Statement"][0]["Resource"] == (
        "arn:aws:s3:::my-models/llama-3.1-8b/neuron-v2/*"
    )
    _, group = _one(built.template, "AWS::AutoScaling::AutoScalingGroup")
    assert first_id in group["DependsOn"]
    # Hub models have no artifact: no grant.
    assert not _all(built.variants_template, "AWS::IAM::ManagedPolicy", "HttpsArtifactPolicy")
