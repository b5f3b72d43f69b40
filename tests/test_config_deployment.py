"""The helpers stacks/config.py exports beyond parsing: what each node reaches, the interface
endpoints, what the network cannot carry, the alarm count and the Deployment the CLI sees.

Pure (no aws_cdk): each helper is called directly on a parsed environment, with literal expectations.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_config import DLC, load_one, minimal_env

from cdk_neuron.deployment import (
    CheckpointSizing,
    JobQueueLocation,
    NetworkDeployment,
    StandingResources,
    StorageDeployment,
)
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import reach
from stacks import config
from stacks.config import (
    KMS_KEYS,
    EnvironmentConfig,
    NetworkConfig,
    alarm_count,
    deployment,
    deployments,
    endpoint_az_count,
    interface_endpoints,
    node_destinations,
    select_environments,
    unreachable,
)

CACHED_AWS_CLI = "111111111111.dkr.ecr.us-east-1.amazonaws.com/cdk-neuron-qa/aws-cli/aws-cli:2.22.35"
"""The AWS CLI image as the minimal environment's compile task pulls it: the ECR Public pull-through cache."""
OPTIMUM_IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-vllm-inference-neuronx:"
    "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
)
# The thirteen services the minimal environment's nodes call through interface endpoints, in
# ENDPOINT_IDS order, with their logical ids (part of the deployed state). EC2: the training node
# reads its instance topology (DescribeInstanceTopology) to order ranks.
MINIMAL_ENDPOINTS = {
    "EcrApi": "ecr.api",
    "EcrDocker": "ecr.dkr",
    "Ecs": "ecs",
    "EcsAgent": "ecs-agent",
    "EcsTelemetry": "ecs-telemetry",
    "Logs": "logs",
    "Monitoring": "monitoring",
    "Ssm": "ssm",
    "SsmMessages": "ssmmessages",
    "Ec2Messages": "ec2messages",
    "AutoScaling": "autoscaling",
    "CloudFormation": "cloudformation",
    "Ec2": "ec2",
}


def with_changes(change: Any) -> EnvironmentConfig:
    env = minimal_env()
    change(env)
    return load_one(env)


def services(env: EnvironmentConfig, node: str) -> set[str]:
    return {d.service for d in node_destinations(env)[node]}


# --------------------------------------------------------------------------------------------
# node_destinations: what the config tells the reach model about each node
# --------------------------------------------------------------------------------------------


def test_ec2_nodes_get_the_job_image_the_engine_image_and_metrics() -> None:
    env = load_one(minimal_env())
    assert node_destinations(env) == {
        "training node": reach.training_node(job_image=DLC, region="us-east-1", node_metrics=True),
        "serving node": reach.serving_node(
            image_uri=OPTIMUM_IMAGE,
            region="us-east-1",
            artifact_uri="s3://models-bucket/llama-3.2-3b/",
            token_secret=False,
            node_metrics=True,
        ),
        # No NAT here: the compile task may not reach the Hub, and reads no token.
        "compile task": reach.compile_task(
            export_image=OPTIMUM_IMAGE,
            aws_cli_image=CACHED_AWS_CLI,
            region="us-east-1",
            hub=False,
            token_secret=False,
            compile_cache=True,
        ),
    }


def test_the_auto_scaling_group_engine_pulls_no_job_image() -> None:
    def asg(env: dict[str, Any]) -> None:
        env["training"]["engine"] = "auto-scaling-group"
        del env["training"]["job_image"]

    env = with_changes(asg)
    assert node_destinations(env)["training node"] == reach.training_node(
        job_image=None, region="us-east-1", node_metrics=True
    )
    assert {"ecs", "ecr.api", "ecr.dkr"}.isdisjoint(services(env, "training node"))


def test_a_hand_built_auto_scaling_group_config_never_pulls_a_job_image() -> None:
    # The parser gives the auto-scaling-group engine no job image; a config built in code might.
    env = load_one(minimal_env())
    asg = dataclasses.replace(env, training=dataclasses.replace(env.training, engine="auto-scaling-group"))
    assert asg.training.job_image == DLC
    assert node_destinations(asg)["training node"] == reach.training_node(
        job_image=None, region="us-east-1", node_metrics=True
    )


def test_a_token_secret_makes_the_serving_node_call_secrets_manager() -> None:
    assert "secretsmanager" not in services(load_one(minimal_env()), "serving node")
    env = with_changes(lambda e: e["serving"].update(hugging_face_token_secret="hf/token"))
    assert "secretsmanager" in services(env, "serving node")
    assert interface_endpoints(env)["SecretsManager"] == "secretsmanager"


def test_a_sagemaker_model_is_its_own_node_and_downloads_what_the_config_says() -> None:
    env = with_changes(lambda e: e["serving"].update(backend="sagemaker"))
    assert list(node_destinations(env)) == ["training node", "SageMaker model", "compile task"]
    assert node_destinations(env)["SageMaker model"] == reach.sagemaker_model(
        artifact_uri="s3://models-bucket/llama-3.2-3b/"
    )

    def from_the_hub(e: dict[str, Any]) -> None:
        e["network"] = {"nat_gateways": 1}
        e["serving"]["backend"] = "sagemaker"
        e["serving"]["model"]["artifact_uri"] = None

    assert services(with_changes(from_the_hub), "SageMaker model") == {"huggingface.co"}


# --------------------------------------------------------------------------------------------
# interface_endpoints, unreachable, endpoint_az_count
# --------------------------------------------------------------------------------------------


def test_interface_endpoints_of_the_minimal_environment() -> None:
    assert interface_endpoints(load_one(minimal_env())) == MINIMAL_ENDPOINTS


def test_sagemaker_adds_the_runtime_endpoint_and_drops_the_fleet_services() -> None:
    env = with_changes(lambda e: e["serving"].update(backend="sagemaker"))
    assert interface_endpoints(env) == {
        "EcrApi": "ecr.api",
        "EcrDocker": "ecr.dkr",
        "Ecs": "ecs",
        "EcsAgent": "ecs-agent",
        "EcsTelemetry": "ecs-telemetry",
        "Logs": "logs",
        "Monitoring": "monitoring",
        "Ssm": "ssm",
        "SsmMessages": "ssmmessages",
        "Ec2Messages": "ec2messages",
        "SageMakerRuntime": "sagemaker.runtime",
        "Ec2": "ec2",
    }


def test_no_interface_endpoints_when_the_network_asks_for_none() -> None:
    env = with_changes(lambda e: e.update(network={"nat_gateways": 1, "endpoint_azs": "none"}))
    assert interface_endpoints(env) == {}
    assert unreachable(env) == []  # the NAT carries every call


def test_a_service_without_a_logical_id_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A new service in the reach model needs a stable logical id before it can get an endpoint.
    monkeypatch.setattr(config, "ENDPOINT_IDS", {k: v for k, v in config.ENDPOINT_IDS.items() if k != "ssm"})
    with pytest.raises(
        NeuronConfigError, match=r"^ENDPOINT_IDS=\['ssm'\]: give each service a logical id$"
    ) as raised:
        interface_endpoints(load_one(minimal_env()))
    assert raised.value.value == ["ssm"]


def test_everything_routes_in_the_minimal_environment() -> None:
    assert unreachable(load_one(minimal_env())) == []


def test_without_endpoints_or_nat_every_endpoint_call_is_unreachable() -> None:
    # Built directly: the parser refuses this network, but the check is what the parser relies on.
    env = dataclasses.replace(load_one(minimal_env()), network=NetworkConfig(endpoint_azs="none"))
    missing = {(node, d.service, d.route) for node, d in unreachable(env)}
    assert {service for _, service, _ in missing} == set(MINIMAL_ENDPOINTS.values())
    assert {route for _, _, route in missing} == {"interface-endpoint"}  # S3 keeps its gateway
    assert {node for node, _, _ in missing} == {"training node", "serving node", "compile task"}
    assert ("serving node", "autoscaling", "interface-endpoint") in missing
    # The compile task's images and logs go through the same endpoints as everything else.
    assert {s for node, s, _ in missing if node == "compile task"} == {"ecr.api", "ecr.dkr", "logs"}
    assert ("training node", "ecs", "interface-endpoint") in missing


@pytest.mark.parametrize(("endpoint_azs", "az_ids", "count"), [
    ("all", ["use1-az6", "use1-az4"], 2),
    ("all", ["use1-az6", "use1-az4", "use1-az5"], 3),
    ("training", ["use1-az6", "use1-az4", "use1-az5"], 1),
])  # fmt: skip
def test_endpoint_az_count(endpoint_azs: str, az_ids: list[str], count: int) -> None:
    env = with_changes(lambda e: e.update(az_ids=az_ids, network={"endpoint_azs": endpoint_azs}))
    assert endpoint_az_count(env) == count


# --------------------------------------------------------------------------------------------
# alarm_count: as its docstring enumerates them
# --------------------------------------------------------------------------------------------


def test_alarm_count() -> None:
    # Training 3 + file system 1; EC2 serving 4 + ALB 3 (+1 scale-from-zero at min 0); SageMaker 2.
    # Issue 22: + the training boot-failure page and limit, + the serving launch-failure page (EC2).
    assert alarm_count(load_one(minimal_env())) == 14
    assert alarm_count(with_changes(lambda e: e["serving"].update(min_capacity=0))) == 15
    assert alarm_count(with_changes(lambda e: e["serving"].update(backend="sagemaker"))) == 8


# --------------------------------------------------------------------------------------------
# deployment(): the environment as the CLI sees it
# --------------------------------------------------------------------------------------------


def test_deployment_of_the_minimal_environment() -> None:
    env = load_one(minimal_env())
    d = deployment(env)
    assert (d.name, d.account, d.region, d.az_ids) == (
        "qa",
        "111111111111",
        "us-east-1",
        ("use1-az6", "use1-az4"),
    )
    t = d.training
    assert (t.instance_type, t.max_nodes, t.engine, t.job_image, t.checkpoint) == (
        "trn1.32xlarge",
        2,
        "batch",
        DLC,
        None,
    )
    assert t.plan == env.training.plan and t.capacity.kind == "on-demand"
    assert t.jobs == JobQueueLocation(stack_name="qa-Training")
    s = d.serving
    assert (s.backend, s.engine.name, s.instance_type, s.min_capacity, s.max_capacity, s.warm_pool) == (
        "ec2",
        "optimum-neuron",
        "inf2.xlarge",
        1,
        2,
        False,
    )
    assert (s.certificate_arn, s.token_secret) == (None, None)
    assert s.model == env.serving.model and s.plan == env.serving.plan
    assert d.storage == StorageDeployment(one_zone=False)
    assert d.network == NetworkDeployment(
        nat_gateways=0,
        nat_instance_type=None,
        interface_endpoints=tuple(MINIMAL_ENDPOINTS.values()),
        endpoint_azs=2,
    )
    assert d.standing == StandingResources(kms_keys=KMS_KEYS, alarms=14, dashboards=1, load_balancers=1)
    assert KMS_KEYS == (
        "VPC flow logs",
        "checkpoints (EFS)",
        "compile cache (S3)",
        "training cluster (EBS, job logs)",
        "serving fleet",
        "alarm topic",
    )


def test_deployment_carries_every_choice_the_config_made() -> None:
    def choices(e: dict[str, Any]) -> None:
        e.update(
            account=None,
            removal_policy="destroy",
            network={"nat_gateways": 1, "nat_instance_type": "t4g.nano", "endpoint_azs": "training"},
            storage={"one_zone": True},
        )
        e["training"].update(
            engine="auto-scaling-group",
            capacity={"type": "reservation", "reservation_id": "cr-0123456789abcdef0"},
            checkpoint={"model_parameters": 8_000_000_000, "writers": 2},
        )
        del e["training"]["job_image"]
        e["serving"].update(
            min_capacity=0,
            max_capacity=5,
            warm_pool=True,
            certificate_arn="arn:aws:acm:us-east-1:111111111111:certificate/0a1b2c3d-1111-2222-3333-444455556666",
            hugging_face_token_secret="hf/token",
        )

    d = deployment(with_changes(choices))
    assert d.account is None
    assert (d.training.engine, d.training.job_image, d.training.jobs) == ("auto-scaling-group", None, None)
    assert d.training.capacity.reservation_id == "cr-0123456789abcdef0"
    assert d.training.checkpoint == CheckpointSizing(model_parameters=8_000_000_000, writers=2)
    assert (d.serving.min_capacity, d.serving.max_capacity, d.serving.warm_pool) == (0, 5, True)
    assert d.serving.certificate_arn is not None and d.serving.certificate_arn.endswith("444455556666")
    assert d.serving.token_secret == "hf/token"
    assert d.storage == StorageDeployment(one_zone=True)
    assert (d.network.nat_gateways, d.network.nat_instance_type, d.network.endpoint_azs) == (1, "t4g.nano", 1)
    assert d.standing.alarms == 15


def test_a_sagemaker_deployment_has_no_load_balancer() -> None:
    d = deployment(with_changes(lambda e: e["serving"].update(backend="sagemaker")))
    assert (d.serving.backend, d.standing.load_balancers, d.standing.alarms) == ("sagemaker", 0, 8)


def test_no_interface_endpoints_means_no_endpoint_azs() -> None:
    d = deployment(with_changes(lambda e: e.update(network={"nat_gateways": 1, "endpoint_azs": "none"})))
    assert (d.network.interface_endpoints, d.network.endpoint_azs) == ((), 0)


def test_deployments_maps_each_environment_by_name() -> None:
    found = deployments({"qa": minimal_env(), "qb": minimal_env()})
    assert list(found) == ["qa", "qb"]
    assert [d.name for d in found.values()] == ["qa", "qb"]


# --------------------------------------------------------------------------------------------
# resolve_account and select_environments
# --------------------------------------------------------------------------------------------


def test_resolve_account_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    env = load_one({**minimal_env(), "account": None, "removal_policy": "destroy"})
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "444444444444")
    assert env.resolve_account() == "444444444444"
    monkeypatch.delenv("CDK_DEFAULT_ACCOUNT")
    assert env.resolve_account() == "000000000000"


def test_select_environments_of_a_mapping() -> None:
    envs = {"qa": load_one(minimal_env(), "qa"), "qb": load_one(minimal_env(), "qb")}
    assert select_environments(envs, "") == list(envs.values())
    assert select_environments(envs, "qb") == [envs["qb"]]
    with pytest.raises(
        NeuronConfigError, match=r"^env='qc': unknown environment; defined: qa, qb$"
    ) as raised:
        select_environments(envs, "qc")
    assert raised.value.value == "qc"


# --------------------------------------------------------------------------------------------
# The compile task (compilation): what it reaches, per network, and where the CLI finds it
# --------------------------------------------------------------------------------------------


def test_without_a_nat_the_compile_task_needs_only_ecr_logs_and_the_s3_gateway() -> None:
    env = load_one(minimal_env())
    assert env.network.nat_gateways == 0 and unreachable(env) == []
    assert services(env, "compile task") == {"s3", "ecr.api", "ecr.dkr", "logs"}
    assert {d.route for d in node_destinations(env)["compile task"] if d.service == "s3"} == {"s3-gateway"}
    assert config.compile_aws_cli_image(env) == CACHED_AWS_CLI


def test_with_a_nat_the_compile_task_may_read_the_hub_with_the_fleets_token() -> None:
    def nat(e: dict[str, Any]) -> None:
        e["network"] = {"nat_gateways": 1}
        e["serving"]["hugging_face_token_secret"] = "hf/token"

    env = with_changes(nat)
    assert {"huggingface.co", "secretsmanager"} <= services(env, "compile task")
    assert config.compile_token_secret(env) == "hf/token"
    # Without a NAT the token is not wired into the compile task: nothing there could use it.
    no_nat = with_changes(lambda e: e["serving"].update(hugging_face_token_secret="hf/token"))
    assert config.compile_token_secret(no_nat) is None
    assert "secretsmanager" not in services(no_nat, "compile task")


def test_an_aws_cli_image_given_as_is_is_what_the_task_pulls_and_routes() -> None:
    mirror = "111111111111.dkr.ecr.us-east-1.amazonaws.com/mirror/aws-cli:2.22.35"
    env = with_changes(lambda e: e.update(compilation={"aws_cli_image": mirror}))
    assert config.compile_aws_cli_image(env) == mirror and unreachable(env) == []
    public = with_changes(
        lambda e: e.update(
            network={"nat_gateways": 1},
            compilation={"aws_cli_image": "public.ecr.aws/aws-cli/aws-cli:2.22.35"},
        )
    )
    # ECR Public directly: over the NAT, the one route it has.
    assert "public.ecr.aws" in services(public, "compile task") and unreachable(public) == []


def test_the_cli_finds_the_compile_task_from_cdk_json_alone() -> None:
    envs = config.load_cdk_json(config.Path(__file__).resolve().parent.parent / "cdk.json")
    dev = deployment(envs["dev"]).compilation
    assert dev is not None
    assert (
        dev.stack_name,
        dev.cluster_logical_id,
        dev.task_definition_logical_id,
        dev.security_group_logical_id,
    ) == (
        "dev-Training",
        "CompileCluster",
        "CompileTaskDefinition",
        "CompileSecurityGroup",
    )
    assert dev.subnets == (
        {"Fn::GetStackOutput": {"StackName": "dev-Training", "OutputName": "CompileSubnetIds"}},
    )
    assert (dev.artifact_bucket, dev.artifact_prefix, dev.checkpoints) == (
        "cdk-neuron-dev-models",
        "compiled/",
        True,
    )
    assert (dev.aws_cli_cache_repository, dev.internet) == ("cdk-neuron-dev/aws-cli/aws-cli", True)
    assert dev.image == envs["dev"].serving.engine.image.uri("us-east-1")
    # prod serves a 70B model, more than a Fargate compile task holds: it compiles on its training cluster
    # (tests/test_config_compile_runs_on.py says what the CLI finds there).
    prod = deployment(envs["prod"]).compilation
    assert prod is not None and prod.runs_on == "training-cluster" and prod.cluster_logical_id == ""
