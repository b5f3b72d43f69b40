"""Every host a node reaches has a route, in every environment (issue: dev instances abandoned).

The destinations come from the node programs themselves (cdk_neuron.node_programs.reach); the
routes come from the synthesized NetworkStack. The 0.1.0 dev network is kept as a fixture: it
routed neither autoscaling nor cloudformation, so every lifecycle hook timed out to ABANDON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app
from route_check import routes_of, service_of, unrouted

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import reach
from stacks import config as cfg

ENVIRONMENTS = cfg.load_environments(shipped_environments())
LEGACY_DEV_NETWORK = Path(__file__).parent / "fixtures" / "legacy" / "dev-Network-0.1.0.json"


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


def _services(destinations: tuple[reach.Destination, ...]) -> set[str]:
    return {d.service for d in destinations}


# -- what the programs call -------------------------------------------------------------------


def test_the_scan_finds_the_lifecycle_calls_with_their_file_and_line() -> None:
    found = reach.program_calls("serving")
    calls = {d.service: d.caller for d in found}
    autoscaling = [d.caller for d in found if d.service == "autoscaling"]
    assert all(c.startswith("serving/lifecycle.sh:") for c in autoscaling)
    assert any("aws autoscaling complete-lifecycle-action" in c for c in autoscaling)
    # Issue 25: the progress watch's heartbeat goes to the same endpoint, so every environment that
    # routes the completion (dev: the autoscaling interface endpoint) routes the heartbeat.
    assert any("aws autoscaling record-lifecycle-action-heartbeat" in c for c in autoscaling)
    assert "aws cloudformation signal-resource" in calls["cloudformation"]
    assert "aws cloudwatch put-metric-data" in calls["monitoring"]


def test_the_scan_reads_python_clients_and_dnf() -> None:
    monitoring = reach.program_calls("monitoring")
    assert any(d.service == "monitoring" and "boto3" in d.caller for d in monitoring)
    assert any(d.service == "s3" and "dnf install" in d.caller for d in monitoring)


def test_a_call_in_a_comment_is_not_a_destination() -> None:
    # bootstrap.sh mentions `aws ec2 get-console-output` in a comment only.
    assert "ec2 get-console-output" in (reach.FILES_DIR / "bootstrap.sh").read_text()
    assert "ec2" not in _services(reach.program_calls("bootstrap.sh"))


def test_an_unmapped_service_is_refused_with_its_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "step.sh").write_text("#!/bin/bash\n# comment\naws bedrock list-models\n")
    monkeypatch.setattr(reach, "FILES_DIR", tmp_path)
    with pytest.raises(NeuronConfigError, match=r"step\.sh:3.*aws bedrock list-models.*CLI_SERVICES"):
        reach.program_calls("step.sh")


def test_ecr_in_another_region_goes_over_the_internet() -> None:
    here = reach.image_destinations("763104351884.dkr.ecr.us-east-1.amazonaws.com/x:1", "us-east-1", "job")
    assert _services(here) == {"ecr.api", "ecr.dkr", "s3"}
    there = reach.image_destinations("763104351884.dkr.ecr.us-west-2.amazonaws.com/x:1", "us-east-1", "job")
    assert [(d.service, d.route) for d in there] == [
        ("763104351884.dkr.ecr.us-west-2.amazonaws.com", "internet")
    ]
    hub = reach.image_destinations("ghcr.io/huggingface/text-generation-inference:3.3.4", "us-east-1", "x")
    assert [(d.service, d.route) for d in hub] == [("ghcr.io", "internet")]


def test_the_scan_reads_the_awslogs_driver_of_the_replica_containers() -> None:
    logs = [d for d in reach.program_calls("serving") if d.service == "logs"]
    (replica,) = [d for d in logs if d.caller.startswith("serving/replica.sh:")]
    assert replica.route == "interface-endpoint"
    # lifecycle.sh writes why a launch failed to the same group.
    assert any(d.caller.startswith("serving/lifecycle.sh:") for d in logs)
    assert replica.caller.startswith("serving/replica.sh:")
    assert "--log-driver=awslogs" in replica.caller
    # The training node programs start no container with it (Batch's own driver is the ECS agent's).
    assert "logs" not in _services(reach.training_node(job_image=None, region="us-east-1", node_metrics=True))


def test_a_batch_node_needs_the_ecs_agent_and_an_asg_node_does_not() -> None:
    batch = reach.training_node(
        job_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/x:1", region="us-east-1", node_metrics=False
    )
    asg = reach.training_node(job_image=None, region="us-east-1", node_metrics=False)
    assert {"ecs", "ecs-agent", "ecs-telemetry", "logs"} <= _services(batch)
    assert not {"ecs", "ecs-agent", "ecs-telemetry"} & _services(asg)
    # Both count a failed boot in CloudWatch (bootstrap.sh, cdk_neuron.training.boot_failures).
    assert "monitoring" in _services(asg) and "monitoring" in _services(batch)


# -- per environment: the synthesized network routes every destination -------------------------


@pytest.mark.parametrize("env", list(ENVIRONMENTS))
def test_every_destination_of_every_node_has_a_route(built: SynthesizedApp, env: str) -> None:
    template = built.template(env, "Network")
    for node, destinations in cfg.node_destinations(ENVIRONMENTS[env]).items():
        missing = [f"{d.service} ({d.caller})" for d in unrouted(template, destinations)]
        assert missing == [], f"{env} {node}"


def test_the_0_1_0_dev_network_left_the_lifecycle_calls_without_a_route() -> None:
    legacy: dict[str, Any] = json.loads(LEGACY_DEV_NETWORK.read_text())
    serving = cfg.node_destinations(ENVIRONMENTS["dev"])["serving node"]
    assert {d.service for d in unrouted(legacy, serving)} == {"autoscaling", "cloudformation"}


@pytest.mark.parametrize("env", list(ENVIRONMENTS))
def test_the_template_has_exactly_the_interface_endpoints_the_config_derives(
    built: SynthesizedApp, env: str
) -> None:
    routes = routes_of(built.template(env, "Network"))
    assert routes.interface_services == set(cfg.interface_endpoints(ENVIRONMENTS[env]).values())


def test_endpoints_per_environment() -> None:
    base = {"ecr.api", "ecr.dkr", "ecs", "ecs-agent", "ecs-telemetry", "logs", "monitoring"}
    base |= {"ssm", "ssmmessages", "ec2messages"}
    # Training nodes with EFA record their DescribeInstanceTopology answer at boot (node-setup.sh).
    base |= {"ec2"}
    endpoints = {name: set(cfg.interface_endpoints(env).values()) for name, env in ENVIRONMENTS.items()}
    assert endpoints["dev"] == set()  # the NAT instance carries everything but S3
    assert endpoints["staging"] == base | {"sagemaker.runtime"}
    assert endpoints["prod"] == base | {"autoscaling", "cloudformation"}


# -- the configuration refuses a network that cannot carry the calls -----------------------------


def _env(**network: Any) -> dict[str, Any]:
    raw = json.loads(json.dumps(shipped_environments()["dev"]))
    raw["network"] = {"cidr": "10.40.0.0/16", **network}
    return raw


def _load(raw: dict[str, Any]) -> cfg.EnvironmentConfig:
    return cfg.load_environments({"dev": raw})["dev"]


def test_without_nat_the_ec2_fleet_gets_autoscaling_and_cloudformation_endpoints() -> None:
    env = _load(_env(nat_gateways=0, endpoint_azs="training"))
    assert {"autoscaling", "cloudformation"} <= set(cfg.interface_endpoints(env).values())
    assert cfg.unreachable(env) == []


def test_without_nat_an_ec2_fleet_beside_asg_training_gets_the_logs_endpoint_for_its_replicas() -> None:
    # Only the serving node calls CloudWatch Logs here: AWS Batch (the ECS agent) is not in use.
    raw = _env(nat_gateways=0, endpoint_azs="training")
    raw["training"] = {**raw["training"], "engine": "auto-scaling-group", "job_image": None}
    env = _load(raw)
    nodes = cfg.node_destinations(env)
    assert "logs" not in _services(nodes["training node"])
    assert "logs" in _services(nodes["serving node"])
    assert "logs" in set(cfg.interface_endpoints(env).values())
    assert cfg.unreachable(env) == []


def test_endpoints_none_needs_a_nat() -> None:
    with pytest.raises(NeuronConfigError, match=r"network\.endpoint_azs.*'none'.*add a NAT"):
        _load(_env(nat_gateways=0, endpoint_azs="none"))


def test_a_nat_instance_type_needs_a_nat() -> None:
    with pytest.raises(NeuronConfigError, match=r"network\.nat_instance_type.*t4g\.nano.*nat_gateways to 1"):
        _load(_env(nat_gateways=0, nat_instance_type="t4g.nano"))


@pytest.mark.parametrize("value", ["trn1.32xlarge", "t4g", "T4G.NANO"])
def test_a_nat_instance_type_must_be_a_small_general_purpose_type(value: str) -> None:
    with pytest.raises(NeuronConfigError, match=r"network\.nat_instance_type.*small general-purpose"):
        _load(_env(nat_gateways=1, nat_instance_type=value))


def test_a_sagemaker_model_without_artifact_or_nat_is_refused_naming_the_hub() -> None:
    raw = json.loads(json.dumps(shipped_environments()["staging"]))
    raw["network"] = {"cidr": "10.50.0.0/16", "nat_gateways": 0}
    raw["serving"]["model"]["artifact_uri"] = None
    with pytest.raises(
        NeuronConfigError, match=r"environments\.staging\.network.*SageMaker model reaches huggingface\.co"
    ):
        cfg.load_environments({"staging": raw})


# -- the NAT instance itself ----------------------------------------------------------------------


def _of_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def test_dev_routes_through_one_hardened_nat_instance(built: SynthesizedApp) -> None:
    template = built.template("dev", "Network")
    assert _of_type(template, "AWS::EC2::NatGateway") == {}
    ((name, nat),) = _of_type(template, "AWS::EC2::Instance").items()
    props = nat["Properties"]
    assert props["InstanceType"] == "t4g.nano"
    assert props["SourceDestCheck"] is False
    assert "AvailabilityZone" not in props  # an AZ ID there is refused by EC2 (deploy rule E9205)
    assert props["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is True
    assert props["BlockDeviceMappings"] == [
        {"DeviceName": "/dev/xvda", "Ebs": {"Encrypted": True, "VolumeType": "gp3"}}
    ]
    (template_name,) = _of_type(template, "AWS::EC2::LaunchTemplate")
    assert props["LaunchTemplate"]["Version"]["Fn::GetAtt"][0] == template_name
    launch = template["Resources"][template_name]["Properties"]["LaunchTemplateData"]
    assert launch["MetadataOptions"] == {"HttpTokens": "required"}
    routes = [
        r["Properties"]
        for r in _of_type(template, "AWS::EC2::Route").values()
        if "InstanceId" in r["Properties"]
    ]
    assert len(routes) == len(ENVIRONMENTS["dev"].az_ids)
    assert all(r["InstanceId"] == {"Ref": name} and r["DestinationCidrBlock"] == "0.0.0.0/0" for r in routes)
    (group,) = (
        g["Properties"]
        for g in _of_type(template, "AWS::EC2::SecurityGroup").values()
        if g["Properties"]["GroupDescription"] == "Security Group for NAT instances"
    )
    assert group["SecurityGroupIngress"] == [
        {
            "CidrIp": ENVIRONMENTS["dev"].network.cidr,
            "Description": "HTTPS from the VPC, to forward",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]


def test_service_of_reads_joined_service_names() -> None:
    endpoint = {
        "Properties": {"ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".logs"]]}}
    }
    assert service_of(endpoint) == "logs"


def test_the_compile_task_reaches_s3_through_its_programs_and_ecr_and_logs_through_fargate() -> None:
    destinations = reach.compile_task(
        export_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0",
        aws_cli_image="111111111111.dkr.ecr.us-east-1.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35",
        region="us-east-1",
        hub=False,
        token_secret=False,
        compile_cache=True,
    )
    # The upload's `aws s3api` calls are S3 calls (the gateway endpoint), read from the program itself.
    assert any(
        d.caller.startswith("compile/upload.sh:") and "s3api put-object" in d.caller for d in destinations
    )
    assert {(d.service, d.route) for d in destinations} == {
        ("s3", "s3-gateway"),
        ("ecr.api", "interface-endpoint"),
        ("ecr.dkr", "interface-endpoint"),
        ("logs", "interface-endpoint"),
    }
    public = reach.compile_task(
        export_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0",
        aws_cli_image="public.ecr.aws/aws-cli/aws-cli:2.22.35",
        region="us-east-1",
        hub=True,
        token_secret=True,
        compile_cache=False,
    )
    assert {d.service for d in public if d.route == "internet"} == {"public.ecr.aws", reach.HUGGING_FACE_HUB}
    assert "secretsmanager" in {d.service for d in public}


def test_the_compile_job_reaches_both_images_logs_and_s3_through_the_training_nodes_routes() -> None:
    destinations = reach.compile_job(
        export_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0",
        tools_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.9.0",
        region="us-west-2",
        hub=False,
        token_secret=True,
        compile_cache=True,
    )
    # Both images through ECR (the export's and the training DLC's), the awslogs driver, the token at
    # start, and S3 for the programs' own calls and the compile cache: nothing that needs a NAT.
    assert {(d.service, d.route) for d in destinations} == {
        ("s3", "s3-gateway"),
        ("ecr.api", "interface-endpoint"),
        ("ecr.dkr", "interface-endpoint"),
        ("logs", "interface-endpoint"),
        ("secretsmanager", "interface-endpoint"),
    }
    pulls = sorted(d.caller for d in destinations if d.service == "ecr.dkr")
    assert [p.split(": ")[1] for p in pulls] == ["export image", "fetch and upload image"]
    assert all(p.startswith(reach.BATCH_COMPILE_JOB) for p in pulls)
    online = reach.compile_job(
        export_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0",
        tools_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.9.0",
        region="us-west-2",
        hub=True,
        token_secret=False,
        compile_cache=False,
    )
    assert {d.service for d in online if d.route == "internet"} == {reach.HUGGING_FACE_HUB}
