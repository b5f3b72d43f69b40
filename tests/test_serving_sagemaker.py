"""SageMakerInferenceFleet on a SageMaker endpoint (ml.inf2.48xlarge, Llama 70B from precompiled S3 artifacts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from deploy_rules_gate import check_gate, gate_params
from syrupy.assertion import SnapshotAssertion

from cdk_neuron import catalog
from cdk_support import make_app, nag_violations, normalize_template, template_of

ACCOUNT = "111111111111"
REGION = "us-east-1"
AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]


@dataclass
class Built:
    stack: Any
    fleet: Any
    template: dict[str, Any]


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_iam as iam

    from cdk_neuron.serving import ModelSpec, SageMakerInferenceFleet

    class PinnedAzStack(cdk.Stack):
        @property
        def availability_zones(self) -> list[str]:
            return AZS

    app = make_app()
    stack = PinnedAzStack(app, "SageMakerServing", env=cdk.Environment(account=ACCOUNT, region=REGION))
    cdk.Validations.of(stack).acknowledge(
        cdk.Acknowledgment(
            id="CloudFormation-Validate::W3010", reason="test stacks pin AZ names (no lookups)"
        )
    )
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, ip_addresses=ec2.IpAddresses.cidr("10.0.0.0/16"))
    fleet = SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=ModelSpec(
            model_id="meta-llama/Llama-3.1-70B-Instruct",
            artifact_uri="s3://my-models/llama-3.1-70b/neuron",
            parameters=70_000_000_000,
            batch_size=4,
        ),
        instance_type="ml.inf2.48xlarge",
        max_capacity=3,
    )
    client = iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal())
    fleet.grant_invoke(client)
    yield Built(stack=stack, fleet=fleet, template=template_of(stack))


def _one(template: dict[str, Any], type_: str) -> tuple[str, dict[str, Any]]:
    found = [(k, v) for k, v in template["Resources"].items() if v["Type"] == type_]
    assert len(found) == 1, [k for k, _ in found]
    return found[0]


def _props(template: dict[str, Any], type_: str) -> dict[str, Any]:
    return _one(template, type_)[1]["Properties"]  # type: ignore[no-any-return]


def _policies(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The execution role's managed policies by logical id (``...ExecutionPolicy...``, ``...ArtifactPolicy<hash>...``)."""
    return {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::IAM::ManagedPolicy"}


def _policy(template: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [v["Properties"] for k, v in _policies(template).items() if name in k]
    return found  # type: ignore[no-any-return]


def test_the_artifact_grant_is_a_policy_of_its_own_named_after_the_artifact(built: Built) -> None:
    """A new artifact is a new policy: the old fleet keeps reading the old prefix until clean-up."""
    import hashlib

    digest = hashlib.sha256(b"s3://my-models/llama-3.1-70b/neuron/").hexdigest()[:8].upper()
    artifact_ids = [k for k in _policies(built.template) if "ArtifactPolicy" in k]
    assert len(artifact_ids) == 1 and f"SageMakerArtifactPolicy{digest}" in artifact_ids[0]
    artifact = built.template["Resources"][artifact_ids[0]]["Properties"]
    assert {s["Sid"] for s in artifact["PolicyDocument"]["Statement"]} == {
        "ReadModelArtifacts",
        "ListModelArtifacts",
    }
    (role_id,) = [
        k
        for k, v in built.template["Resources"].items()
        if v["Type"] == "AWS::IAM::Role" and "ExecutionRole" in k
    ]
    assert artifact["Roles"] == [{"Ref": role_id}]
    execution = _policy(built.template, "ExecutionPolicy")
    assert not {"ReadModelArtifacts", "ListModelArtifacts"} & {
        s["Sid"] for s in execution["PolicyDocument"]["Statement"]
    }
    _, model = _one(built.template, "AWS::SageMaker::Model")
    assert artifact_ids[0] in model["DependsOn"]


def test_model_runs_isolated_in_the_vpc_from_s3_artifacts(built: Built) -> None:
    props = _props(built.template, "AWS::SageMaker::Model")
    assert props["EnableNetworkIsolation"] is True
    container = props["PrimaryContainer"]
    assert container["Image"] == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-vllm-inference-neuronx:"
        "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
    )
    assert container["ModelDataSource"] == {
        "S3DataSource": {
            "S3Uri": "s3://my-models/llama-3.1-70b/neuron/",
            "S3DataType": "S3Prefix",
            "CompressionType": "None",
        }
    }
    assert container["Environment"] == {
        "SM_ON_MODEL": "/opt/ml/model",
        # Without it vLLM would answer only to "/opt/ml/model" (optimum-cli neuron serve's default).
        "SM_ON_SERVED_MODEL_NAME": "meta-llama/Llama-3.1-70B-Instruct",
        "SM_ON_BATCH_SIZE": "4",
        "SM_ON_SEQUENCE_LENGTH": "4096",
        "SM_ON_TENSOR_PARALLEL_SIZE": "24",
    }
    vpc_config = props["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 3
    assert all("Private" in s["Ref"] for s in vpc_config["Subnets"])
    sg_id = vpc_config["SecurityGroupIds"][0]["Fn::GetAtt"][0]
    assert "SecurityGroupIngress" not in built.template["Resources"][sg_id]["Properties"]


def test_execution_role_is_least_privilege(built: Built) -> None:
    _, role = next(
        (k, v)
        for k, v in built.template["Resources"].items()
        if v["Type"] == "AWS::IAM::Role" and "ExecutionRole" in k
    )
    assert (
        "ManagedPolicyArns" not in role["Properties"]
    )  # no AmazonSageMakerFullAccess, no AWS-managed policy
    assert "Policies" not in role["Properties"]
    policies = _policies(built.template)
    statements = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    by_sid = {s["Sid"]: s for s in statements}
    assert by_sid["ReadModelArtifacts"]["Action"] == "s3:GetObject"
    assert by_sid["ReadModelArtifacts"]["Resource"] == "arn:aws:s3:::my-models/llama-3.1-70b/neuron/*"
    assert by_sid["ListModelArtifacts"]["Condition"] == {
        "StringLike": {"s3:prefix": ["llama-3.1-70b/neuron", "llama-3.1-70b/neuron/*"]}
    }
    assert by_sid["EndpointLogs"]["Resource"] == (
        "arn:aws:logs:us-east-1:111111111111:log-group:/aws/sagemaker/Endpoints/*"
    )
    assert "Condition" in by_sid["ManageEndpointInterfaces"]
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert not any(a.endswith("*") for a in actions), statement


def test_endpoint_config_on_inf2_with_derived_timeouts(built: Built) -> None:
    props = _props(built.template, "AWS::SageMaker::EndpointConfig")
    (variant,) = props["ProductionVariants"]
    key_id = _one(built.template, "AWS::KMS::Key")[0]
    assert props["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert variant["InstanceType"] == "ml.inf2.48xlarge"
    assert variant["InitialInstanceCount"] == 1
    assert variant["VolumeSizeInGB"] == 302
    # 60 s + 1.5 x 130.4 GiB at gp2's 250 MiB/s (a 302 GB volume; floors.sagemaker_target) = 60 + 802
    assert variant["ModelDataDownloadTimeoutInSeconds"] == 862
    # 1.5 x (480 s + 10.5 s/GiB x 130.4 GiB): inside the 3,600 s Hugging Face gives 70B on this instance.
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 2774
    assert variant["InferenceAmiVersion"] == catalog.SAGEMAKER_NEURON_AMI_VERSION
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert built.fleet.container_startup_timeout_seconds == 2774
    assert built.fleet.model_data_download_timeout_seconds == 862


def test_autoscaling_on_high_resolution_concurrency(built: Built) -> None:
    target = _props(built.template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 3)
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    endpoint_id = _one(built.template, "AWS::SageMaker::Endpoint")[0]
    assert target["ResourceId"] == {
        "Fn::Join": ["", ["endpoint/", {"Fn::GetAtt": [endpoint_id, "EndpointName"]}, "/variant/AllTraffic"]]
    }
    policy = _props(built.template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    config = policy["TargetTrackingScalingPolicyConfiguration"]
    assert config["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    }
    assert config["TargetValue"] == 4
    # Scaling runs as Application Auto Scaling's service-linked role: no extra role is created.
    assert target["RoleARN"].endswith(
        "/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
    )
    # A new endpoint config keeps the instance count auto scaling reached.
    assert _props(built.template, "AWS::SageMaker::Endpoint")["RetainAllVariantProperties"] is True


def test_grant_invoke_allows_invocation_and_streaming(built: Built) -> None:
    endpoint_id = _one(built.template, "AWS::SageMaker::Endpoint")[0]
    policy = next(
        v["Properties"]
        for k, v in built.template["Resources"].items()
        if v["Type"] == "AWS::IAM::Policy" and k.startswith("Client")
    )
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]
    assert statement["Resource"] == {"Ref": endpoint_id}


def test_attributes(built: Built) -> None:
    fleet = built.fleet
    assert fleet.endpoint_name == fleet.endpoint.attr_endpoint_name
    assert fleet.endpoint_arn == fleet.endpoint.ref
    assert fleet.variant_name == "AllTraffic"
    assert fleet.grant_principal is fleet.execution_role
    assert (fleet.plan.tensor_parallel, fleet.instance_type) == (24, "inf2.48xlarge")
    # SageMaker runs no code of ours and has no load balancer: none of the EC2 attributes exist.
    for ec2_only in ("url", "load_balancer", "auto_scaling_group", "node_metrics", "add_user_data"):
        assert not hasattr(fleet, ec2_only), ec2_only


def test_the_scalable_target_takes_scheduled_scaling() -> None:
    """aws-autoscaling's scale_on_schedule, on the variant's own target (not only target tracking)."""
    import aws_cdk as cdk
    from aws_cdk import aws_applicationautoscaling as appscaling
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.serving import ModelSpec, SageMakerInferenceFleet

    stack = cdk.Stack(make_app(), "Scheduled", env=cdk.Environment(account=ACCOUNT, region=REGION))
    fleet = SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=ec2.Vpc(stack, "Vpc", availability_zones=AZS),
        model=ModelSpec(artifact_uri="s3://my-models/llama-3.1-8b/neuron", parameters=8_000_000_000),
        instance_type="ml.inf2.8xlarge",
        max_capacity=4,
    )
    assert isinstance(fleet.scalable_target, appscaling.ScalableTarget)
    fleet.scalable_target.scale_on_schedule(
        "Weekday", schedule=appscaling.Schedule.cron(hour="8", minute="0"), min_capacity=2
    )
    (target,) = (
        r["Properties"]
        for r in template_of(stack)["Resources"].values()
        if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    )
    assert target["MaxCapacity"] == 4
    assert target["ScheduledActions"] == [
        {
            "ScalableTargetAction": {"MinCapacity": 2},
            "Schedule": "cron(0 8 * * ? *)",
            "ScheduledActionName": "Weekday",
        }
    ]


def test_nag_clean(built: Built) -> None:
    assert nag_violations(built.fleet) == []


def test_snapshot(built: Built, snapshot_json: SnapshotAssertion) -> None:
    assert normalize_template(built.template) == snapshot_json


def test_execution_role_pulls_the_sagemaker_image_not_the_ec2_one() -> None:
    """TGI serves from GitHub's registry on EC2 but from the ECR DLC on SageMaker: the role must pull the latter."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.serving import ModelSpec, SageMakerInferenceFleet, ServingEngine
    from cdk_neuron.serving.engines import TGI_SAGEMAKER_REPOSITORY

    stack = cdk.Stack(make_app(), "TgiOnSageMaker", env=cdk.Environment(account=ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS)
    SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=ModelSpec(artifact_uri="s3://my-models/llama-3.1-8b/neuron", parameters=8_000_000_000),
        engine=ServingEngine.tgi(),
        instance_type="inf2.8xlarge",
    )
    policy = _policy(template_of(stack), "ExecutionPolicy")
    (pull,) = [s for s in policy["PolicyDocument"]["Statement"] if s.get("Sid") == "EcrPullServingImage"]
    assert f"repository/{TGI_SAGEMAKER_REPOSITORY}" in json.dumps(pull["Resource"])
    # TGI has no served-name setting: its API lists the artifact path, and the synth says so.
    from aws_cdk.assertions import Annotations, Match

    assert Annotations.from_stack(stack).find_warning(
        "/TgiOnSageMaker/Fleet",
        Match.string_like_regexp(
            "TGI cannot set a served model name: /v1/models lists '/opt/ml/model', not 'neuron'"
        ),
    )


@pytest.mark.parametrize(("name", "rule"), gate_params("serving_sagemaker:stack"))
def test_deploy_rules(built: Built, name: str, rule: str | None) -> None:
    check_gate(name, built.template, rule)


def _trn1_fleet(**props: Any) -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.serving import ModelSpec, SageMakerInferenceFleet

    stack = cdk.Stack(make_app(), "Trn1OnSageMaker", env=cdk.Environment(account=ACCOUNT, region=REGION))
    SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=ec2.Vpc(stack, "Vpc", availability_zones=AZS),
        model=ModelSpec(artifact_uri="s3://my-models/llama-3.1-8b/neuron", parameters=8_000_000_000),
        **props,
        instance_type="ml.trn1.32xlarge",
    )
    return template_of(stack)


def test_local_nvme_instance_types_get_no_volume_size_and_no_endpoint_config_key() -> None:
    """ml.trn1.32xlarge hosts from its NVMe: SageMaker refuses VolumeSizeInGB and KmsKeyId there."""
    config = _props(_trn1_fleet(), "AWS::SageMaker::EndpointConfig")
    (variant,) = config["ProductionVariants"]
    assert variant["InstanceType"] == "ml.trn1.32xlarge"
    assert "VolumeSizeInGB" not in variant
    assert "KmsKeyId" not in config
    from cdk_neuron.deploy_rules import lint_template

    assert [
        str(m)
        for m in lint_template(
            {"Resources": {"Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": config}}}
        )
    ] == []


def test_inf2_keeps_its_volume_and_key(built: Built) -> None:
    config = _props(built.template, "AWS::SageMaker::EndpointConfig")
    assert config["ProductionVariants"][0]["VolumeSizeInGB"] > 0
    assert "KmsKeyId" in config


def test_a_volume_size_on_a_local_nvme_type_is_refused() -> None:
    from cdk_neuron.errors import NeuronConfigError

    with pytest.raises(
        NeuronConfigError, match=r"volume_size_gb=100: ml\.trn1\.32xlarge serves from its local NVMe"
    ):
        _trn1_fleet(volume_size_gb=100)


def test_a_new_instance_type_is_a_new_endpoint_that_deploys(built: Built) -> None:
    """SageMaker refuses an UpdateEndpoint that changes the instance type of a variant auto scaling
    manages; the endpoint's name carries the type, so a new type replaces the endpoint instead."""
    import re

    from cdk_neuron.lifecycle import Change, impact
    from cdk_neuron.serving.sagemaker_backend import ENDPOINT_NAME_MAX, endpoint_name

    name = _props(built.template, "AWS::SageMaker::Endpoint")["EndpointName"]
    assert name.endswith("-inf2-48xlarge") and len(name) <= ENDPOINT_NAME_MAX
    assert re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", name)
    assert _props(built.template, "AWS::ApplicationAutoScaling::ScalableTarget")["ResourceId"] == {
        "Fn::Join": [
            "",
            [
                "endpoint/",
                {"Fn::GetAtt": [_one(built.template, "AWS::SageMaker::Endpoint")[0], "EndpointName"]},
                "/variant/AllTraffic",
            ],
        ]
    }
    endpoint = built.fleet.node.find_child("Endpoint")
    assert endpoint_name(endpoint, "trn1.32xlarge").removesuffix("-trn1-32xlarge") == name.removesuffix(
        "-inf2-48xlarge"
    )

    # What the change does, as `cdk-neuron impact` sees it: the endpoint is replaced (no refusal).
    after = json.loads(json.dumps(built.template))
    (config_id, config) = _one(after, "AWS::SageMaker::EndpointConfig")
    config["Properties"]["ProductionVariants"][0]["InstanceType"] = "ml.inf2.24xlarge"
    _, endpoint_resource = _one(after, "AWS::SageMaker::Endpoint")
    endpoint_resource["Properties"]["EndpointName"] = name.replace("-inf2-48xlarge", "-inf2-24xlarge")
    (result,) = impact({"S": built.template}, {"S": after})
    changes = {r.type: r for r in result.resources if r.change is not Change.UNCHANGED}
    assert changes["AWS::SageMaker::Endpoint"].change is Change.REPLACED
    assert changes["AWS::SageMaker::Endpoint"].fails is None
    assert changes["AWS::ApplicationAutoScaling::ScalableTarget"].change is Change.REPLACED
    # The same change with the name kept (the previous design): SageMaker refuses it.
    endpoint_resource["Properties"]["EndpointName"] = name
    (refused,) = impact({"S": built.template}, {"S": after})
    assert refused.find(_one(after, "AWS::SageMaker::Endpoint")[0]).fails is not None
    assert config_id
