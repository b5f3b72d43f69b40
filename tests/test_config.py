"""cdk.json `environments`: what is accepted, what is refused, and that every refusal names env and key."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron import ami, catalog, planner
from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_support import REPO_ROOT
from stacks import config as config_module
from stacks.config import (
    ENDPOINT_IDS,
    PLACEHOLDER_ACCOUNT,
    EnvironmentConfig,
    NetworkConfig,
    ServingConfig,
    StorageConfig,
    TrainingConfig,
    load_cdk_json,
    load_environments,
    select_environments,
)

DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"


def minimal_env() -> dict[str, Any]:
    """The smallest valid environment: only required keys (retaining its data, it names its account)."""
    return {
        "account": "111111111111",
        "region": "us-east-1",
        "az_ids": ["use1-az6", "use1-az4"],
        "training": {
            "instance_type": "trn1.32xlarge",
            "max_nodes": 2,
            "plan": {"nodes": 2, "tensor_parallel": 32, "model": {"parameters": 8_030_261_248}},
            "job_image": DLC,
        },
        "serving": {
            "instance_type": "inf2.xlarge",
            "model": {
                "model_id": "meta-llama/Llama-3.2-3B-Instruct",
                "parameters": 3_210_000_000,
                "tensor_parallel": 2,  # one replica on both cores
                "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
            },
        },
    }


def load_one(env: dict[str, Any], name: str = "qa") -> EnvironmentConfig:
    return load_environments({name: env})[name]


# --------------------------------------------------------------------------------------------
# The shipped cdk.json
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> dict[str, EnvironmentConfig]:
    return load_cdk_json(REPO_ROOT / "cdk.json")


def test_cdk_json_defines_dev_staging_prod_in_order(shipped: dict[str, EnvironmentConfig]) -> None:
    assert list(shipped) == ["dev", "staging", "prod"]


def test_dev_is_cheap_when_idle(shipped: dict[str, EnvironmentConfig]) -> None:
    dev = shipped["dev"]
    assert dev.region == "us-east-1"
    # One NAT instance instead of a dozen interface endpoints (see docs/configuration.md, Network).
    assert (dev.network.nat_gateways, dev.network.nat_instance_type, dev.network.endpoint_azs) == (
        1,
        "t4g.nano",
        "none",
    )
    assert dev.training.instance_type == "trn1.32xlarge" and dev.training.max_nodes == 2
    assert dev.storage == StorageConfig(
        one_zone=True, backup_retention_days=7, infrequent_access_after_days=14
    )
    assert dev.removal_policy == "destroy"
    assert (dev.network.cidr, dev.network.flow_log_retention_days) == ("10.40.0.0/16", 30)
    assert dev.serving.backend == "ec2"
    assert (dev.serving.instance_type, dev.serving.min_capacity, dev.serving.max_capacity) == (
        "inf2.xlarge",
        0,
        2,
    )


def test_staging_uses_the_sagemaker_backend(shipped: dict[str, EnvironmentConfig]) -> None:
    assert shipped["staging"].serving.backend == "sagemaker"


@pytest.mark.parametrize("name", ["dev", "staging"])
def test_dev_and_staging_serve_a_model_whose_weights_inf2_xlarge_can_load(
    shipped: dict[str, EnvironmentConfig], name: str
) -> None:
    # Llama-3.2 3B (3.21B parameters, 28 layers, 8 KV heads; 5.98 GiB) loads within the 15 GiB usable
    # of inf2.xlarge's 16 GiB host RAM (15/16, calibrated on the published 7-8B deployments).
    model = shipped[name].serving.model
    assert (model.model_id, model.parameters) == ("meta-llama/Llama-3.2-3B-Instruct", 3_210_000_000)
    assert model.artifact_uri == (
        f"s3://cdk-neuron-{name}-models/meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096/"
    )
    plan = shipped[name].serving.serving_plan()
    assert plan.instance_type == "inf2.xlarge"
    assert plan.weights_gib == pytest.approx(5.979, abs=1e-3)
    assert plan.host_memory_limit_gib == 15.0


def test_several_replicas_without_nat_are_accepted() -> None:
    # TP 1 packs two Llama-3.2 3B replicas on inf2.xlarge. Their local proxy is the Amazon Linux
    # nginx package (repositories in S3, through the gateway endpoint), so no NAT is needed.
    env = minimal_env()
    env["serving"]["model"]["tensor_parallel"] = None
    assert load_one(env).network.has_internet_egress is False
    assert load_one(env).serving.serving_plan().replicas_per_instance == 2


def test_llama3_8b_on_inf2_xlarge_is_accepted_and_a_bigger_model_needs_an_override() -> None:
    # HF-SM-LLAMA3: Meta-Llama-3-8B on ml.inf2.xlarge at TP 2.
    env = minimal_env()
    env["serving"]["model"].update(model_id="meta-llama/Meta-Llama-3-8B-Instruct", parameters=8_030_261_248)
    assert load_one(env).serving.plan.host_memory_limit_gib == 15.0
    env["serving"]["model"]["parameters"] = 9_241_705_984  # Gemma-2 9B-sized: 17.2 GiB of bf16 weights
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.serving\.instance_type='inf2\.xlarge': 17\.2 GiB of weights .*host memory.*"
        r"inf2\.8xlarge with TP 2 would fit, or give host_memory_override a reason$",
    ):
        load_one(env)
    env["serving"]["model"]["host_memory_override"] = "measured 15.4 GiB peak RSS in staging, 2026-11-30"
    plan = load_one(env).serving.plan
    assert (plan.instance_type, plan.host_memory_override) == (
        "inf2.xlarge", "measured 15.4 GiB peak RSS in staging, 2026-11-30",
    )  # fmt: skip
    env["serving"]["model"]["host_memory_override"] = "  "
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.serving\.model\.host_memory_override='  ': give the reason the host-memory check",
    ):
        load_one(env)


def test_prod_plans_a_70b_model_on_16_nodes_and_keeps_its_data(shipped: dict[str, EnvironmentConfig]) -> None:
    prod = shipped["prod"]
    plan = prod.training.training_plan()
    assert prod.training.instance_type in ("trn1.32xlarge", "trn1n.32xlarge")
    assert prod.training.max_nodes == 16 and plan.nodes == 16
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (32, 8)
    assert (
        prod.training.checkpoint is not None and prod.training.checkpoint.model_parameters == 70_000_000_000
    )
    # The values cdk.json gives prod, each compared, never only bounded.
    assert prod.removal_policy == "retain"
    assert prod.storage == StorageConfig(
        one_zone=False, backup_retention_days=35, infrequent_access_after_days=30
    )
    assert prod.network == NetworkConfig(
        cidr="10.60.0.0/16", nat_gateways=2, endpoint_azs="all", flow_log_retention_days=365
    )
    assert dict(prod.tags) == {"project": "cdk-neuron", "environment": "prod"}
    assert prod.serving.backend == "ec2" and prod.serving.instance_type == "inf2.48xlarge"
    assert (prod.serving.min_capacity, prod.serving.max_capacity) == (2, 8)
    assert len(prod.az_ids) >= 2


@pytest.mark.parametrize("name", ["dev", "staging", "prod"])
def test_shipped_az_ids_offer_both_instance_types(shipped: dict[str, EnvironmentConfig], name: str) -> None:
    from cdk_neuron import catalog

    env = shipped[name]
    assert catalog.offering_status(env.training.instance_type, env.training_az_id) == "offered"
    for az_id in env.az_ids:
        assert catalog.region_of_az_id(az_id) == env.region
        assert catalog.offering_status(env.serving.resolved_instance_type, az_id) == "offered"


# --------------------------------------------------------------------------------------------
# Defaults and derived values
# --------------------------------------------------------------------------------------------


def test_minimal_environment_gets_documented_defaults() -> None:
    # Each default as docs/configuration.md states it.
    env = load_one(minimal_env())
    assert env.account == "111111111111" and env.removal_policy == "retain" and dict(env.tags) == {}
    assert (env.network.cidr, env.network.nat_gateways, env.network.nat_instance_type) == (
        "10.0.0.0/16",
        0,
        None,
    )
    assert (env.network.endpoint_azs, env.network.flow_log_retention_days) == ("all", 365)
    assert env.training.capacity.kind == "on-demand" and env.training.engine == "batch"
    assert env.training.checkpoint is None
    assert (env.training.plan.pipeline_parallel, env.training.plan.allow_unlisted_tp) == (1, False)
    assert (env.storage.one_zone, env.storage.backup_retention_days) == (False, 35)
    assert env.storage.infrequent_access_after_days == 30
    assert env.serving.backend == "ec2" and env.serving.engine.name == "optimum-neuron"
    assert (env.serving.min_capacity, env.serving.max_capacity, env.serving.warm_pool) == (1, 2, False)
    assert (env.serving.certificate_arn, env.serving.hugging_face_token_secret) == (None, None)
    model = env.serving.model
    assert (model.dtype, model.sequence_length, model.batch_size) == ("bf16", 4096, 1)
    assert env.monitoring.alarm_email is None
    assert env.training_az_id == "use1-az6"
    assert env.ami_release == ami.RELEASE


CERTIFICATE = "arn:aws:acm:us-east-1:111111111111:certificate/0a1b2c3d-1111-2222-3333-444455556666"


def every_key_set() -> dict[str, Any]:
    """An environment that sets every optional key to a value that is not its default, several of them
    exactly at a limit (2 NATs for 2 AZ IDs, a 1- and a 128-character tag key, a 256-character tag
    value, 36,500 backup days, a /22 block, min_capacity 0)."""
    env = minimal_env()
    env.update(
        account="222222222222",
        removal_policy="destroy",
        tags={"k": "v", "t" * 128: "w" * 256},
        network={
            "cidr": "172.16.0.0/22",
            "nat_gateways": 2,
            "nat_instance_type": "t4g.nano",
            "endpoint_azs": "training",
            "flow_log_retention_days": 30,
        },
        storage={"one_zone": True, "backup_retention_days": 36500, "infrequent_access_after_days": 365},
        monitoring={"alarm_email": "oncall@example.com"},
    )
    env["training"].update(
        max_nodes=4,
        plan={
            "nodes": 4,
            "tensor_parallel": 8,
            "pipeline_parallel": 4,
            "model": {"parameters": 8_030_261_248},
        },
        capacity={
            "type": "reservation",
            "reservation_id": "cr-0123456789abcdef0",
            "placement_group_name": "pg",
        },
        checkpoint={"model_parameters": 8_000_000_000, "writers": 4},
    )
    env["serving"].update(
        engine="tgi",
        instance_type="inf2.8xlarge",
        min_capacity=0,
        max_capacity=3,
        warm_pool=True,
        warm_pool_size=2,
        certificate_arn=CERTIFICATE,
        hugging_face_token_secret="hf/token",
    )
    env["serving"]["model"].update(dtype="fp16", sequence_length=2048, batch_size=2, tensor_parallel=2)
    return env


def test_every_key_is_read_as_given() -> None:
    env = load_one(every_key_set(), name="sandbox")
    assert (env.name, env.account, env.region, env.az_ids) == ("sandbox", "222222222222", "us-east-1",
                                                              ("use1-az6", "use1-az4"))  # fmt: skip
    assert env.removal_policy == "destroy"
    assert dict(env.tags) == {"k": "v", "t" * 128: "w" * 256}
    assert env.network == NetworkConfig(
        cidr="172.16.0.0/22",
        nat_gateways=2,
        nat_instance_type="t4g.nano",
        endpoint_azs="training",
        flow_log_retention_days=30,
    )
    training = env.training
    assert (training.instance_type, training.max_nodes, training.engine) == ("trn1.32xlarge", 4, "batch")
    plan = training.plan
    assert (plan.nodes, plan.tensor_parallel, plan.pipeline_parallel) == (4, 8, 4)
    assert training.job_image == DLC
    capacity = training.capacity
    assert (capacity.kind, capacity.reservation_id, capacity.placement_group_name) == (
        "reservation",
        "cr-0123456789abcdef0",
        "pg",
    )
    assert training.checkpoint is not None
    assert (training.checkpoint.model_parameters, training.checkpoint.writers) == (8_000_000_000, 4)
    assert env.storage == StorageConfig(
        one_zone=True, backup_retention_days=36500, infrequent_access_after_days=365
    )
    serving = env.serving
    assert (serving.backend, serving.engine.name, serving.instance_type) == ("ec2", "tgi", "inf2.8xlarge")
    assert (serving.min_capacity, serving.max_capacity, serving.warm_pool) == (0, 3, True)
    assert serving.warm_pool_size == 2
    assert (serving.certificate_arn, serving.hugging_face_token_secret) == (CERTIFICATE, "hf/token")
    model = serving.model
    assert (model.model_id, model.parameters, model.artifact_uri) == (
        "meta-llama/Llama-3.2-3B-Instruct",
        3_210_000_000,
        "s3://models-bucket/llama-3.2-3b/",
    )
    assert (model.dtype, model.sequence_length, model.batch_size, model.tensor_parallel) == (
        "fp16",
        2048,
        2,
        2,
    )
    assert env.monitoring.alarm_email == "oncall@example.com"


def test_storage_infrequent_access_null_keeps_everything_in_standard() -> None:
    env = minimal_env()
    env["storage"] = {"infrequent_access_after_days": None}
    assert load_one(env).storage.infrequent_access_after_days is None
    env["storage"] = {}
    assert load_one(env).storage.infrequent_access_after_days == 30


# CloudWatch Logs PutRetentionPolicy retentionInDays: "Valid Values: 1 | 3 | 5 | 7 | 14 | 30 | 60 | 90 |
# 120 | 150 | 180 | 365 | 400 | 545 | 731 | 1096 | 1827 | 2192 | 2557 | 2922 | 3288 | 3653"
# (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html).
LOG_RETENTION = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
                 3288, 3653]  # fmt: skip
# EFS LifecyclePolicy TransitionToIA: "AFTER_1_DAY | AFTER_7_DAYS | AFTER_14_DAYS | AFTER_30_DAYS |
# AFTER_60_DAYS | AFTER_90_DAYS | AFTER_180_DAYS | AFTER_270_DAYS | AFTER_365_DAYS"
# (https://docs.aws.amazon.com/efs/latest/ug/API_LifecyclePolicy.html).
EFS_IA = [1, 7, 14, 30, 60, 90, 180, 270, 365]


def test_every_cloudwatch_logs_retention_is_accepted_and_nothing_between() -> None:
    env = minimal_env()
    for days in range(0, 3655):
        env["network"] = {"flow_log_retention_days": days}
        if days in LOG_RETENTION:
            assert load_one(env).network.flow_log_retention_days == days
        else:
            with pytest.raises(NeuronConfigError, match=rf"flow_log_retention_days={days}: "):
                load_one(env)


def test_every_efs_transition_is_accepted_and_nothing_between() -> None:
    env = minimal_env()
    for days in range(0, 367):
        env["storage"] = {"infrequent_access_after_days": days}
        if days in EFS_IA:
            assert load_one(env).storage.infrequent_access_after_days == days
        else:
            with pytest.raises(
                NeuronConfigError,
                match=rf"^environments\.qa\.storage\.infrequent_access_after_days={days}: EFS accepts 1, 7, 14, 30, "
                r"60, 90, 180, 270, 365$",
            ):
                load_one(env)


def test_one_checkpoint_writer_unless_told_otherwise() -> None:
    env = minimal_env()
    env["training"]["checkpoint"] = {"model_parameters": 70_000_000_000}
    checkpoint = load_one(env).training.checkpoint
    assert checkpoint is not None and (checkpoint.model_parameters, checkpoint.writers) == (70_000_000_000, 1)
    # NxD Training saves no fp32 master weights unless told (use_master_weights_in_ckpt: False).
    assert checkpoint.master_weights_in_checkpoint is False
    env["training"]["checkpoint"]["master_weights_in_checkpoint"] = True
    told = load_one(env).training.checkpoint
    assert told is not None and told.master_weights_in_checkpoint is True


def test_limits_exactly_at_their_edge_are_accepted() -> None:
    env = minimal_env()
    env["network"] = {"cidr": "10.0.0.0/16"}
    env["storage"] = {"backup_retention_days": 1}
    env["training"].update(max_nodes=2, checkpoint={"model_parameters": 1, "writers": 2})
    env["serving"].update(min_capacity=2, max_capacity=2)
    loaded = load_one(env)
    assert (loaded.network.cidr, loaded.storage.backup_retention_days) == ("10.0.0.0/16", 1)
    assert loaded.training.checkpoint is not None and loaded.training.checkpoint.writers == 2
    assert (loaded.serving.min_capacity, loaded.serving.max_capacity) == (2, 2)
    # One node needs no EFA: trn1.2xlarge, which has none, runs a one-node plan.
    env = minimal_env()
    env["training"].update(
        instance_type="trn1.2xlarge",
        max_nodes=1,
        plan={"nodes": 1, "tensor_parallel": 2, "model": {"parameters": 125_000_000}},
    )
    assert load_one(env).training.max_nodes == 1


def test_a_cidr_is_stored_normalized() -> None:
    env = minimal_env()
    env["network"] = {"cidr": "192.168.0.0/16"}
    assert load_one(env).network.cidr == "192.168.0.0/16"


def test_a_same_region_certificate_is_kept() -> None:
    env = minimal_env()
    env["serving"]["certificate_arn"] = CERTIFICATE
    assert load_one(env).serving.certificate_arn == CERTIFICATE


def test_engines_outside_ecr_are_accepted_where_they_can_be_pulled() -> None:
    # SageMaker pulls the engine's image itself; an EC2 fleet behind a NAT reaches ghcr.io.
    env = minimal_env()
    env["serving"].update(backend="sagemaker", engine="tgi")
    loaded = load_one(env).serving
    assert (loaded.backend, loaded.engine.name) == ("sagemaker", "tgi")
    env = minimal_env()
    env["network"] = {"nat_gateways": 1}
    env["serving"]["engine"] = "vllm-neuron"
    assert load_one(env).serving.engine.name == "vllm-neuron"


def test_no_interface_endpoints_with_a_nat() -> None:
    env = minimal_env()
    env["network"] = {"nat_gateways": 1, "endpoint_azs": "none"}
    network = load_one(env).network
    assert (network.endpoint_azs, network.has_interface_endpoints, network.has_internet_egress) == (
        "none",
        False,
        True,
    )


def test_an_error_alone_is_raised_as_itself() -> None:
    # One mistake is a NeuronConfigError; only several are wrapped in NeuronConfigErrors.
    with pytest.raises(NeuronConfigError) as raised:
        load_one({**minimal_env(), "region": "mars-1"})
    assert type(raised.value) is NeuronConfigError


def test_account_falls_back_to_cdk_default_account_then_placeholder() -> None:
    # Only an environment that destroys its data may leave the account open.
    env = load_one({**minimal_env(), "account": None, "removal_policy": "destroy"})
    assert env.resolve_account({"CDK_DEFAULT_ACCOUNT": "222222222222"}) == "222222222222"
    assert env.resolve_account({}) == PLACEHOLDER_ACCOUNT == "000000000000"
    pinned = load_one({**minimal_env(), "account": "333333333333"})
    assert pinned.resolve_account({"CDK_DEFAULT_ACCOUNT": "222222222222"}) == "333333333333"


def test_an_environment_that_retains_data_must_name_its_account() -> None:
    expected = (
        "environments.qa.account=None: an environment that retains its data must name its 12-digit account, "
        "so it is never deployed into whichever account the credentials point at"
    )
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected)}$"):
        load_one({**minimal_env(), "account": None})


def test_every_error_of_every_environment_is_reported_at_once() -> None:
    broken = minimal_env()
    broken["training"]["max_nodse"] = 2
    broken["serving"]["min_capacity"] = -1
    other = {**minimal_env(), "region": "mars-1"}
    with pytest.raises(NeuronConfigErrors) as raised:
        load_environments({"qa": broken, "qb": other})
    lines = str(raised.value).splitlines()
    assert lines == [str(e) for e in raised.value.errors]
    assert any(
        line.startswith("environments.qa.training.max_nodse=2: unknown key; did you mean 'max_nodes'?")
        for line in lines
    ), lines
    assert any(line.startswith("environments.qa.serving.min_capacity=-1") for line in lines), lines
    assert any(line.startswith("environments.qb.region='mars-1'") for line in lines), lines


def test_configuration_is_frozen() -> None:
    env = load_one(minimal_env())
    with pytest.raises(AttributeError):
        env.region = "us-west-2"  # type: ignore[misc]
    with pytest.raises(TypeError):
        env.tags["x"] = "y"  # type: ignore[index]


def test_serving_instance_type_may_be_left_to_the_planner_and_ml_prefix_is_dropped() -> None:
    env = minimal_env()
    env["serving"]["instance_type"] = None
    assert load_one(env).serving.resolved_instance_type == "inf2.xlarge"
    env["serving"]["instance_type"] = "ml.inf2.8xlarge"
    assert load_one(env).serving.instance_type == "inf2.8xlarge"


def test_capacity_reservation_and_json_float_counts_are_accepted() -> None:
    env = minimal_env()
    env["training"]["capacity"] = {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"}
    env["serving"]["model"]["parameters"] = 3.21e9
    loaded = load_one(env)
    assert loaded.training.capacity.reservation_id == "cr-0123456789abcdef0"
    assert loaded.serving.model.parameters == 3_210_000_000


def test_capacity_ids_are_validated_as_the_construct_validates_them() -> None:
    from cdk_neuron.training import Capacity

    env = minimal_env()
    for reservation_id in ("cr-0123abcd", "cr-0123456789abcdef0"):
        env["training"]["capacity"] = {"type": "reservation", "reservation_id": reservation_id}
        assert load_one(env).training.capacity.reservation_id == reservation_id
        assert Capacity.reservation(reservation_id).reservation_id == reservation_id


def test_capacity_block_purchase_options_match_the_construct() -> None:
    env = minimal_env()
    env["az_ids"] = ["use2-az3", "use2-az1"]
    env["region"] = "us-east-2"
    env["training"]["job_image"] = DLC.replace("us-east-1", "us-east-2")
    env["serving"]["instance_type"] = "inf2.xlarge"
    # trn2u.48xlarge is sold as UltraServer Capacity Blocks.
    env["training"].update(
        instance_type="trn2u.48xlarge", plan={"nodes": 2, "tensor_parallel": 64, "model": {"parameters": 8e9}}
    )
    env["training"]["capacity"] = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    # A Capacity Block needs the Auto Scaling group engine (AWS Batch ignores the market type).
    env["training"]["engine"] = "auto-scaling-group"
    del env["training"]["job_image"]
    assert load_one(env).training.capacity.kind == "capacity-block"
    # trn1n.32xlarge is sold as no Capacity Block: the construct's message, under the cdk.json key.
    env["training"].update(
        instance_type="trn1n.32xlarge", plan={"nodes": 2, "tensor_parallel": 32, "model": {"parameters": 8e9}}
    )
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.training\.capacity\.type='capacity-block': EC2 sells no Capacity "
        r"Blocks for trn1n\.32xlarge.*UltraServer Capacity Blocks for trn2u\.48xlarge",
    ):
        load_one(env)


def test_a_capacity_block_on_the_batch_engine_is_refused_naming_the_engine_that_works() -> None:
    # Issue 22, defect 4: Batch drops the launch template's InstanceMarketOptions (BATCH-LT), so the
    # block was never used. The refusal comes with the config's other mistakes, under the cdk.json key.
    env = minimal_env()
    env["training"]["capacity"] = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    env["training"]["max_nodes"] = 0
    with pytest.raises(NeuronConfigErrors) as err:
        load_one(env)
    messages = str(err.value).splitlines()
    assert any(m.startswith("environments.qa.training.max_nodes=0") for m in messages)
    assert any(
        m.startswith(
            "environments.qa.training.capacity.type='capacity-block': AWS Batch ignores a launch "
            "template's instance market options"
        )
        and "Use AutoScalingTrainingCluster (engine auto-scaling-group)" in m
        for m in messages
    ), messages
    env["training"]["max_nodes"] = 2
    env["training"]["engine"] = "auto-scaling-group"
    del env["training"]["job_image"]
    assert load_one(env).training.capacity.kind == "capacity-block"


# Which types EC2 sells as Capacity Blocks: instance blocks of trn1.32xlarge and trn2.48xlarge
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html), trn2.3xlarge (moto
# 5.2.5 instance_types.json: SupportedUsageClasses capacity-block), UltraServer blocks of the Trn2
# UltraServer, trn2u.48xlarge (capacity-blocks-how.html); none for trn1.2xlarge or trn1n.32xlarge.
CAPACITY_BLOCK_REFUSAL = (
    "EC2 sells no Capacity Blocks for {name} (CB-DOC, CB-HOW); instance Capacity Blocks exist for "
    "trn1.32xlarge, trn2.3xlarge, trn2.48xlarge and UltraServer Capacity Blocks for trn2u.48xlarge. "
    "Use Capacity.reservation() or Capacity.on_demand()"
)


@pytest.mark.parametrize(
    ("name", "region", "az_ids", "nodes", "tp", "sold"),
    [
        ("trn1.32xlarge", "us-east-1", ["use1-az6", "use1-az4"], 2, 32, True),
        ("trn2.48xlarge", "us-east-2", ["use2-az3", "use2-az1"], 2, 64, True),
        ("trn2.3xlarge", "sa-east-1", ["sae1-az3"], 1, 1, True),
        ("trn2u.48xlarge", "us-east-2", ["use2-az3", "use2-az1"], 2, 64, True),
        ("trn1.2xlarge", "us-east-1", ["use1-az6", "use1-az4"], 1, 2, False),
        ("trn1n.32xlarge", "us-east-1", ["use1-az6", "use1-az4"], 2, 32, False),
    ],
)
def test_capacity_blocks_per_instance_type(
    name: str, region: str, az_ids: list[str], nodes: int, tp: int, sold: bool
) -> None:
    env = minimal_env()
    env.update(region=region, az_ids=az_ids)
    env["training"].update(
        instance_type=name,
        max_nodes=nodes,
        plan={"nodes": nodes, "tensor_parallel": tp, "model": {"parameters": 125_000_000}},
        engine="auto-scaling-group",  # AWS Batch cannot use a Capacity Block (BATCH-LT)
        capacity={"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"},
    )
    del env["training"]["job_image"]
    if sold:
        capacity = load_one(env).training.capacity
        assert (capacity.kind, capacity.reservation_id) == ("capacity-block", "cr-0123456789abcdef0")
    else:
        expected = f"environments.qa.training.capacity.type='capacity-block': {CAPACITY_BLOCK_REFUSAL.format(name=name)}"
        with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected)}$") as raised:
            load_one(env)
        assert raised.value.value == "capacity-block"


def test_reservations_may_name_their_existing_placement_group() -> None:
    env = minimal_env()
    env["training"]["capacity"] = {
        "type": "reservation",
        "reservation_id": "cr-0123456789abcdef0",
        "placement_group_name": "trn-odcr-cpg",
    }
    loaded = load_one(env).training.capacity
    assert loaded.placement_group_name == "trn-odcr-cpg"
    env["training"]["capacity"] = {
        "type": "reservation-group",
        "resource_group_arn": "arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs",
        "placement_group_name": "trn-odcr-cpg",
    }
    assert load_one(env).training.capacity.placement_group_name == "trn-odcr-cpg"


@pytest.mark.parametrize(
    ("capacity", "key", "reason"),
    [
        # A Capacity Block never gets a placement group: the key is unknown there.
        ({"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0", "placement_group_name": "g"},
         "placement_group_name", "unknown key"),
        ({"type": "on-demand", "placement_group_name": "g"}, "placement_group_name", "unknown key"),
        # The construct's name rule, under the cdk.json key.
        ({"type": "reservation", "reservation_id": "cr-0123456789abcdef0", "placement_group_name": "g" * 256},
         "placement_group_name", "existing cluster placement group"),
    ],
)  # fmt: skip
def test_placement_group_names_are_refused_as_the_construct_refuses_them(
    capacity: dict[str, str], key: str, reason: str
) -> None:
    env = minimal_env()
    env["training"]["capacity"] = capacity
    with pytest.raises(NeuronConfigError, match=rf"^environments\.qa\.training\.capacity\.{key}=.*{reason}"):
        load_one(env)


def test_unlisted_tp_degrees_need_the_same_opt_in_as_the_planner() -> None:
    env = minimal_env()
    env["training"]["plan"] = {"nodes": 2, "tensor_parallel": 16, "model": {"parameters": 8_030_261_248}}
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.training\.plan\.tensor_parallel=16: TP 16 is not a documented TP degree",
    ):
        load_one(env)
    env["training"]["plan"]["allow_unlisted_tp"] = True
    loaded = load_one(env).training
    assert loaded.plan.allow_unlisted_tp and loaded.training_plan().allow_unlisted_tp
    env["training"]["plan"]["allow_unlisted_tp"] = 1
    with pytest.raises(NeuronConfigError, match=r"plan\.allow_unlisted_tp=1: wrong type"):
        load_one(env)


def test_load_environments_accepts_document_context_or_mapping() -> None:
    envs = {"qa": minimal_env()}
    for shape in (envs, {"environments": envs}, {"context": {"environments": envs}}):
        assert list(load_environments(shape)) == ["qa"]


# --------------------------------------------------------------------------------------------
# Refusals: each names the environment and the key path
# --------------------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def setting(path: str, value: Any) -> Mutation:
    """A mutation that sets a dotted key path in the environment dict."""

    def mutate(env: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = env
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return mutate


def deleting(path: str) -> Mutation:
    def mutate(env: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = env
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


# Each refusal: what is changed in the minimal environment, the key path, the offending value and the
# fix, compared as the whole one-line message. The error must carry the value given (not None or a
# default) and name the key it came from.
REFUSALS: list[tuple[str, Mutation, str, Any, str]] = [
    # unknown keys
    ("unknown top-level key", setting("regoin", "us-east-1"),
     "regoin", "us-east-1",
     "unknown key; did you mean 'region'? valid keys here: account, region, az_ids, removal_policy, tags, network, training, storage, serving, monitoring, ami_release, compilation"),
    ("unknown nested key", setting("training.max_node", 4),
     "training.max_node", 4,
     "unknown key; did you mean 'max_nodes'? valid keys here: instance_type, max_nodes, plan, capacity, engine, job_image, checkpoint, worker_count, efs_utils_package, efs_utils_release"),
    ("unknown model key", setting("serving.model.quantize", "int8"),
     "serving.model.quantize", "int8",
     "unknown key; valid keys here: model_id, artifact_uri, artifact_manifest, parameters, dtype, sequence_length, batch_size, tensor_parallel, "
     "host_memory_override"),
    ("id for on-demand", setting("training.capacity", {"type": "on-demand", "reservation_id": "cr-0123456789abcdef0"}),
     "training.capacity.reservation_id", "cr-0123456789abcdef0",
     "unknown key; valid keys here: type"),
    # missing and wrong types
    ("missing region", deleting("region"),
     "region", None,
     "required: give a string"),
    ("missing training", deleting("training"),
     "training", None,
     "required: an object with keys capacity, checkpoint, efs_utils_package, efs_utils_release, engine, instance_type, job_image, max_nodes, plan, worker_count"),
    ("missing model id", deleting("serving.model.model_id"),
     "serving.model.model_id", None,
     "required: give a string"),
    ("nodes as string", setting("training.max_nodes", "2"),
     "training.max_nodes", "2",
     "wrong type: must be a whole number"),
    ("bool as number", setting("serving.max_capacity", True),
     "serving.max_capacity", True,
     "wrong type: must be a whole number"),
    ("fractional count", setting("training.plan.nodes", 1.5),
     "training.plan.nodes", 1.5,
     "wrong type: must be a whole number"),
    ("one_zone as string", setting("storage.one_zone", "yes"),
     "storage.one_zone", "yes",
     "wrong type: must be true/false"),
    ("tags not an object", setting("tags", ["a"]),
     "tags", ["a"],
     "wrong type: must be an object"),
    ("tag value number", setting("tags", {"cost": 5}),
     "tags.cost", 5,
     "wrong type: tag values must be strings"),
    ("network not an object", setting("network", "10.0.0.0/16"),
     "network", "10.0.0.0/16",
     "must be an object with keys cidr, endpoint_azs, flow_log_retention_days, nat_gateways, nat_instance_type"),
    ("az_ids not a list", setting("az_ids", "use1-az6"),
     "az_ids", "use1-az6",
     "wrong type: must be a list"),
    # impossible values
    ("bad account", setting("account", "1234"),
     "account", "1234",
     "must be a 12-digit AWS account id, or null"),
    ("bad region", setting("region", "US East"),
     "region", "US East",
     "must be an AWS Region name such as us-east-1"),
    ("AZ name not ID", setting("az_ids", ["us-east-1a"]),
     "az_ids[0]", "us-east-1a",
     "must be an AZ ID such as use1-az6 (AZ names like us-east-1a differ per account)"),
    ("AZ ID of another region", setting("az_ids", ["usw2-az4"]),
     "az_ids[0]", "usw2-az4",
     "is an AZ ID of us-west-2, not of region us-east-1"),
    ("no AZ IDs", setting("az_ids", []),
     "az_ids", [],
     "give at least one AZ ID, e.g. use1-az6"),
    ("duplicate AZ IDs", setting("az_ids", ["use1-az6", "use1-az6"]),
     "az_ids", ["use1-az6", "use1-az6"],
     "lists an AZ ID twice; each subnet needs its own AZ"),
    ("removal policy", setting("removal_policy", "snapshot"),
     "removal_policy", "snapshot",
     "use one of retain, destroy"),
    ("reserved tag key", setting("tags", {"aws:owner": "me"}),
     "tags.aws:owner", "aws:owner",
     "tag keys are 1-128 characters and may not start with 'aws:'"),
    ("public CIDR", setting("network.cidr", "8.8.0.0/16"),
     "network.cidr", "8.8.0.0/16",
     "use a private (RFC 1918) block from /16 to /22, e.g. 10.40.0.0/16"),
    ("CIDR too small", setting("network.cidr", "10.0.0.0/23"),
     "network.cidr", "10.0.0.0/23",
     "use a private (RFC 1918) block from /16 to /22, e.g. 10.40.0.0/16"),
    ("flow log retention", setting("network.flow_log_retention_days", 10),
     "network.flow_log_retention_days", 10,
     "CloudWatch Logs accepts 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653"),
    ("endpoint AZs", setting("network.endpoint_azs", "some"),
     "network.endpoint_azs", "some",
     "use one of all, training, none"),
    ("not a CIDR", setting("network.cidr", "10.0.0.0/33"),
     "network.cidr", "10.0.0.0/33",
     "not an IPv4 CIDR block ('33' is not a valid netmask)"),
    ("more NATs than AZs", setting("network.nat_gateways", 3),
     "network.nat_gateways", 3,
     "at most one per AZ: 0..2 for 2 AZ ID(s)"),
    ("inference instance for training", setting("training.instance_type", "inf2.48xlarge"),
     "training.instance_type", "inf2.48xlarge",
     "inf2.48xlarge is an Inferentia2 (inference) instance; training needs Trainium: trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, "
     "trn2u.48xlarge, trn3-gen2-server, trn3.48xlarge"),
    ("unknown instance", setting("training.instance_type", "p5.48xlarge"),
     "training.instance_type", "p5.48xlarge",
     "not a Neuron instance type; known types: inf2.24xlarge, inf2.48xlarge, inf2.8xlarge, inf2.xlarge, trn1.2xlarge, trn1.32xlarge, "
     "trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge, trn3-gen2-server, trn3.48xlarge"),
    ("zero max nodes", setting("training.max_nodes", 0),
     "training.max_nodes", 0,
     "must be a whole number >= 1"),
    ("plan exceeds max nodes", setting("training.plan.nodes", 4),
     "training.plan.nodes", 4,
     "the plan needs more nodes than max_nodes=2"),
    ("TP beyond NeuronLink", setting("training.plan.tensor_parallel", 64),
     "training.plan.tensor_parallel", 64,
     "exceeds the 32 NeuronCores of one NeuronLink domain (one trn1.32xlarge); use one of 1, 2, 4, 8, 32 and scale with PP/DP"),
    ("world not divisible", setting("training.plan.pipeline_parallel", 3),
     "training.plan.pipeline_parallel", 3,
     "world size 64 (2 node(s) x 32 ranks) is not divisible by TP x PP = 32 x 3; choose TP and PP whose product divides 64"),
    ("LNC on trn1", setting("training.plan.logical_nc_config", 2),
     "training.plan.logical_nc_config", 2,
     "LNC applies only to Trn2 and Trn3 instances; leave it unset for trn1.32xlarge"),
    # Type errors of plan keys name the key once (they were prefixed twice while the planner ran).
    ("plan TP not a number", setting("training.plan.tensor_parallel", "8"),
     "training.plan.tensor_parallel", "8",
     "wrong type: must be a whole number"),
    ("plan LNC not a number", setting("training.plan.logical_nc_config", "2"),
     "training.plan.logical_nc_config", "2",
     "wrong type: must be a whole number"),
    ("plan opt-in not a bool", setting("training.plan.allow_unlisted_tp", "yes"),
     "training.plan.allow_unlisted_tp", "yes",
     "wrong type: must be true/false"),
    ("multi-node without EFA", setting("training.instance_type", "trn1.2xlarge"),
     "training.max_nodes", 2,
     "trn1.2xlarge has no EFA: use 1"),
    ("capacity type", setting("training.capacity", {"type": "spot"}),
     "training.capacity.type", "spot",
     "use one of on-demand, reservation, reservation-group, capacity-block, training-plan"),
    ("reservation without id", setting("training.capacity", {"type": "reservation"}),
     "training.capacity.reservation_id", None,
     "required: give a string"),
    ("bad reservation id", setting("training.capacity", {"type": "reservation", "reservation_id": "r-1"}),
     "training.capacity.reservation_id", "r-1",
     "use a capacity reservation id: 'cr-' and 17 hex digits, e.g. cr-0123456789abcdef0"),
    ("bad resource group", setting("training.capacity", {"type": "reservation-group", "resource_group_arn": "x"}),
     "training.capacity.resource_group_arn", "x",
     "use a resource group ARN, e.g. arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs"),
    ("engine", setting("training.engine", "slurm"),
     "training.engine", "slurm",
     "use one of batch, auto-scaling-group, hyperpod"),
    ("job image with the ASG engine", setting("training.engine", "auto-scaling-group"),
     "training.job_image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
     "the auto-scaling-group engine runs no job containers: remove job_image, or use engine batch or hyperpod"),
    ("image without tag", setting("training.job_image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/x"),
     "training.job_image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/x",
     "pin the image by an explicit version tag (never 'latest') or by digest, e.g. '.../pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04' or '...@sha256:<64 hex>'"),
    ("latest tag", setting("training.job_image", DLC.split(":")[0] + ":latest"),
     "training.job_image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:latest",
     "pin the image by an explicit version tag (never 'latest') or by digest, e.g. '.../pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04' or '...@sha256:<64 hex>'"),
    ("public image without NAT", setting("training.job_image", "public.ecr.aws/neuron/pytorch-training-neuronx:2.9"),
     "training.job_image", "public.ecr.aws/neuron/pytorch-training-neuronx:2.9",
     "with network.nat_gateways 0 the nodes reach only VPC endpoints: use an ECR image in us-east-1 (e.g. the Neuron DLC 763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:<tag>) or give the VPC a NAT gateway"),
    ("ECR of another region without NAT", setting("training.job_image", DLC.replace("us-east-1", "us-west-2")),
     "training.job_image", "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
     "with network.nat_gateways 0 the nodes reach only VPC endpoints: use an ECR image in us-east-1 (e.g. the Neuron DLC 763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:<tag>) or give the VPC a NAT gateway"),
    ("more writers than nodes", setting("training.checkpoint", {"model_parameters": 8_000_000_000, "writers": 3}),
     "training.checkpoint.writers", 3,
     "at most one writer per node: <= max_nodes=2"),
    ("master weights as string",
     setting("training.checkpoint", {"model_parameters": 8_000_000_000, "master_weights_in_checkpoint": "no"}),
     "training.checkpoint.master_weights_in_checkpoint", "no",
     "wrong type: must be true/false"),
    ("zero backup retention", setting("storage.backup_retention_days", 0),
     "storage.backup_retention_days", 0,
     "must be a whole number >= 1"),
    ("IA days EFS lacks", setting("storage.infrequent_access_after_days", 10),
     "storage.infrequent_access_after_days", 10,
     "EFS accepts 1, 7, 14, 30, 60, 90, 180, 270, 365"),
    ("backend", setting("serving.backend", "eks"),
     "serving.backend", "eks",
     "use one of ec2, sagemaker"),
    ("serving engine", setting("serving.engine", "djl"),
     "serving.engine", "djl",
     "use one of optimum-neuron, tgi, vllm-neuron"),
    ("min above max", setting("serving.min_capacity", 3),
     "serving.min_capacity", 3,
     "must not exceed max_capacity=2"),
    ("zero max capacity", setting("serving.max_capacity", 0),
     "serving.max_capacity", 0,
     "must be a whole number >= 1"),
    ("negative min", setting("serving.min_capacity", -1),
     "serving.min_capacity", -1,
     "must be a whole number >= 0"),
    ("sagemaker scale to zero", lambda e: e["serving"].update(backend="sagemaker", min_capacity=0),
     "serving.min_capacity", 0,
     "a SageMaker real-time endpoint keeps >= 1 instance: use 1"),
    ("sagemaker warm pool", lambda e: e["serving"].update(backend="sagemaker", warm_pool=True),
     "serving.warm_pool", True,
     "warm pools exist only for the ec2 backend"),
    ("pool size without a pool", setting("serving.warm_pool_size", 1),
     "serving.warm_pool_size", 1,
     "a pool size needs a warm pool: set warm_pool, or leave the size out"),
    ("pool size above what the fleet may add", lambda e: e["serving"].update(warm_pool=True, warm_pool_size=2),
     "serving.warm_pool_size", 2,
     "must be a whole number between 1 and max_capacity - min_capacity (1): the pool holds what the fleet may "
     "still add"),
    ("pool size of zero", lambda e: e["serving"].update(warm_pool=True, warm_pool_size=0),
     "serving.warm_pool_size", 0,
     "must be a whole number between 1 and max_capacity - min_capacity (1): the pool holds what the fleet may "
     "still add"),
    ("pool size as text", lambda e: e["serving"].update(warm_pool=True, warm_pool_size="1"),
     "serving.warm_pool_size", "1",
     "must be a whole number between 1 and max_capacity - min_capacity (1): the pool holds what the fleet may "
     "still add"),
    ("model too big for instance", setting("serving.model.parameters", 70_000_000_000),
     "serving.instance_type", "inf2.xlarge",
     "130.4 GiB of weights at bf16 exceed the 15.0 GiB of host memory usable on inf2.xlarge (16 GiB less 6.25%): loading reads the weights into host memory (HOST-MEM); inf2.48xlarge with TP 24 would fit, or give host_memory_override a reason"),
    ("unknown dtype", setting("serving.model.dtype", "fp4"),
     "serving.model.dtype", "fp4",
     "use one of bf16, bfloat16, float16, float32, fp16, fp32, fp8, int8"),
    ("bad TP for instance", setting("serving.model.tensor_parallel", 3),
     "serving.model.tensor_parallel", 3,
     "the Neuron runtime supports TP degrees 1, 2, 4, 8, 12, 16, 24, 32, 64 for inference (NXDI-TP per instance family; "
     "TP 12 on Inf2 from TP-APPNOTE; Trn3 from TRN3-TUTORIAL)"),
    # The library's ModelSpec decides: "gpt2"-style root ids are valid Hub ids, three segments are not.
    ("bad model id", setting("serving.model.model_id", "org/name/x"),
     "serving.model.model_id", "org/name/x",
     'use a Hugging Face Hub id such as "org/model-name"'),
    ("bad artifact URI", setting("serving.model.artifact_uri", "https://x/y"),
     "serving.model.artifact_uri", "https://x/y",
     "use s3://<bucket>/<prefix> (a key prefix is required: IAM read access is scoped to it)"),
    ("HF download without NAT", setting("serving.model.artifact_uri", None),
     "serving.model.artifact_uri", None,
     "with network.nat_gateways 0 the fleet cannot download from the Hugging Face Hub: give the s3:// URI of the model files (reached through the S3 gateway endpoint) or a NAT gateway"),
    ("certificate in other region", setting("serving.certificate_arn", "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"),
     "serving.certificate_arn", "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
     "a load balancer needs an ACM certificate in us-east-1"),
    ("bad email", setting("monitoring.alarm_email", "oncall"),
     "monitoring.alarm_email", "oncall",
     "must be an email address"),
    ("TGI image unreachable without NAT", setting("serving.engine", "tgi"),
     "serving.engine", "tgi",
     "its image ghcr.io/huggingface/text-generation-inference:3.2.3-neuron is outside ECR in us-east-1, which network.nat_gateways 0 cannot reach: use optimum-neuron (an AWS DLC in ECR) or give the VPC a NAT gateway"),
    ("vLLM image unreachable without NAT", setting("serving.engine", "vllm-neuron"),
     "serving.engine", "vllm-neuron",
     "its image public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04 is outside ECR in us-east-1, which network.nat_gateways 0 cannot reach: use optimum-neuron (an AWS DLC in ECR) or give the VPC a NAT gateway"),
    ("HF token on SageMaker", lambda e: e["serving"].update(backend="sagemaker", hugging_face_token_secret="hf"),
     "serving.hugging_face_token_secret", "hf",
     "SageMaker would keep the token in plain text in the model's environment: serve precompiled artifacts from model.artifact_uri instead, or use the ec2 backend"),

    # Added with mutation testing (issue 18): branches the table above never reached.
    ("missing serving", deleting("serving"),
     "serving", None,
     "required: an object with keys backend, certificate_arn, engine, hugging_face_token_secret, instance_type, "
     "max_capacity, min_capacity, model, warm_pool, warm_pool_size"),
    ("missing model", deleting("serving.model"),
     "serving.model", None,
     "required: an object with keys artifact_manifest, artifact_uri, batch_size, dtype, host_memory_override, model_id, parameters, "
     "sequence_length, tensor_parallel"),
    ("missing plan nodes", setting("training.plan", {"tensor_parallel": 32}),
     "training.plan.nodes", None,
     "required: give a whole number"),
    ("region as a number", setting("region", 5),
     "region", 5,
     "wrong type: must be a string"),
    ("AZ ID not a string", setting("az_ids", [5]),
     "az_ids[0]", 5,
     "must be an AZ ID such as use1-az6 (AZ names like us-east-1a differ per account)"),
    ("AZ ID of no catalogued region", setting("az_ids", ["xyz1-az1"]),
     "az_ids[0]", "xyz1-az1",
     "AZ IDs of us-east-1 start with use1-az"),
    ("empty tag key", setting("tags", {"": "x"}),
     "tags.", "",
     "tag keys are 1-128 characters and may not start with 'aws:'"),
    ("tag key of 129 characters", setting("tags", {"k" * 129: "x"}),
     "tags." + "k" * 129, "k" * 129,
     "tag keys are 1-128 characters and may not start with 'aws:'"),
    ("tag value of 257 characters", setting("tags", {"team": "v" * 257}),
     "tags.team", "v" * 257,
     "tag values are at most 256 characters"),
    ("CIDR too large", setting("network.cidr", "10.0.0.0/15"),
     "network.cidr", "10.0.0.0/15",
     "use a private (RFC 1918) block from /16 to /22, e.g. 10.40.0.0/16"),
    ("NAT instance type not a small type", setting("network", {"nat_gateways": 1, "nat_instance_type": "trn1.32xlarge"}),
     "network.nat_instance_type", "trn1.32xlarge",
     "a small general-purpose EC2 type such as t4g.nano or t3.micro, or null for NAT gateways"),
    ("NAT instance type without a NAT", setting("network.nat_instance_type", "t4g.nano"),
     "network.nat_instance_type", "t4g.nano",
     "there is no NAT to run on it: set network.nat_gateways to 1 (or more), or remove the key"),
    ("no endpoints and no NAT", setting("network.endpoint_azs", "none"),
     "network.endpoint_azs", "none",
     "with network.nat_gateways 0 the nodes reach AWS only through interface endpoints: use 'training' or 'all', "
     "or add a NAT"),
    ("backup retention past AWS Backup's limit", setting("storage.backup_retention_days", 36501),
     "storage.backup_retention_days", 36501,
     "AWS Backup keeps at most 36500 days"),
    ("reservation group without ARN", setting("training.capacity", {"type": "reservation-group"}),
     "training.capacity.resource_group_arn", None,
     "required: give a string"),
    ("capacity block without id", setting("training.capacity", {"type": "capacity-block"}),
     "training.capacity.reservation_id", None,
     "required: give a string"),
    ("job image without a registry host", setting("training.job_image", "ubuntu:22.04"),
     "training.job_image", "ubuntu:22.04",
     "must be registry/repository:tag or registry/repository@sha256:<digest>"),
    ("TP beyond the serving instance", setting("serving.model.tensor_parallel", 8),
     "serving.model.tensor_parallel", 8,
     "inf2.xlarge has 2 NeuronCores; the Neuron runtime supports TP 1, 2 for inference there (NXDI-TP)"),
    ("certificate not an ARN", setting("serving.certificate_arn", "my-cert"),
     "serving.certificate_arn", "my-cert",
     "must be an ACM certificate ARN"),
    ("token secret not a secret", setting("serving.hugging_face_token_secret", "hf token"),
     "serving.hugging_face_token_secret", "hf token",
     "must be a Secrets Manager secret name or ARN"),
    ("AMI release that is not a release name", setting("ami_release", "ami-0123456789abcdef0"),
     "ami_release", "ami-0123456789abcdef0",
     "give an ECS-optimized AL2023 Neuron AMI release name such as al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64 (cdk-neuron ami shows the newest)"),
    ("AMI release that floats", setting("ami_release", "recommended"),
     "ami_release", "recommended",
     "give an ECS-optimized AL2023 Neuron AMI release name such as al2023-ami-ecs-neuron-hvm-2023.0.20260918-kernel-6.1-x86_64 (cdk-neuron ami shows the newest)"),
    ("monitoring not an object", setting("monitoring", "oncall@example.com"),
     "monitoring", "oncall@example.com",
     "must be an object with keys alarm_email"),
    ("bad capacity block id", setting("training.capacity", {"type": "capacity-block", "reservation_id": "cb-1"}),
     "training.capacity.reservation_id", "cb-1",
     "use a capacity reservation id: 'cr-' and 17 hex digits, e.g. cr-0123456789abcdef0"),
    ("unknown serving instance", setting("serving.instance_type", "p5.48xlarge"),
     "serving.instance_type", "p5.48xlarge",
     "not a Neuron instance type; known types: inf2.24xlarge, inf2.48xlarge, inf2.8xlarge, inf2.xlarge, "
     "trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge, "
     "trn3-gen2-server, trn3.48xlarge"),
    ("training type offered in no AZ of the region",
     setting("training", {"instance_type": "trn2.48xlarge", "max_nodes": 2, "plan": {"nodes": 2, "tensor_parallel": 64,
                          "model": {"parameters": 8e9}}, "job_image": DLC}),
     "training.instance_type", "trn2.48xlarge",
     "not offered in the training AZ az_ids[0]=use1-az6; in us-east-1 it is offered in no AZ (catalog offerings; "
     "preflight checks the account)"),
    ("serving type offered in no AZ of the region", setting("serving.instance_type", "trn2.48xlarge"),
     "serving.instance_type", "trn2.48xlarge",
     "not offered in use1-az6, use1-az4; in us-east-1 it is offered in no AZ: change az_ids or the type"),
    # compilation: the ModelCompilation task
    ("compilation unknown key", setting("compilation.artifact_buckets", "models"),
     "compilation.artifact_buckets", "models",
     "unknown key; did you mean 'artifact_bucket'? valid keys here: enabled, runs_on, artifact_bucket, "
     "artifact_prefix, aws_cli_image, ecr_public_cache_prefix, log_retention_days"),
    ("compilation runs_on unknown", setting("compilation.runs_on", "ec2"),
     "compilation.runs_on", "ec2", "use one of fargate, training-cluster"),
    ("compilation bucket", setting("compilation.artifact_bucket", "Models_Bucket"),
     "compilation.artifact_bucket", "Models_Bucket", "must be an S3 bucket name"),
    ("compilation prefix", setting("compilation.artifact_prefix", "/compiled/"),
     "compilation.artifact_prefix", "/compiled/",
     'give a key prefix such as "compiled/" (no leading /, no wildcard): the task may write only under it'),
    ("compilation cache prefix", setting("compilation.ecr_public_cache_prefix", "Cache"),
     "compilation.ecr_public_cache_prefix", "Cache",
     "2-30 characters: lowercase letters and digits, with . _ - / between them (ECR's ecrRepositoryPrefix)"),
    ("compilation log retention", setting("compilation.log_retention_days", 31),
     "compilation.log_retention_days", 31,
     "CloudWatch Logs accepts 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, "
     "2557, 2922, 3288, 3653"),
    ("compilation image without a tag", setting("compilation.aws_cli_image", "public.ecr.aws/aws-cli/aws-cli"),
     "compilation.aws_cli_image", "public.ecr.aws/aws-cli/aws-cli",
     "must be registry/repository:tag with a pinned tag (an image with the AWS CLI v2, bash and coreutils), or "
     "null for public.ecr.aws/aws-cli/aws-cli through the ECR pull-through cache"),
    ("compilation image outside ECR without NAT",
     setting("compilation.aws_cli_image", "public.ecr.aws/aws-cli/aws-cli:2.22.35"),
     "compilation.aws_cli_image", "public.ecr.aws/aws-cli/aws-cli:2.22.35",
     "with network.nat_gateways 0 the compile task reaches only VPC endpoints: use an ECR image in us-east-1, or "
     "null for public.ecr.aws/aws-cli/aws-cli through the ECR pull-through cache"),
    ("compilation for an engine it cannot export",
     lambda e: e.update(network={"nat_gateways": 1}, compilation={"enabled": True},
                        serving={**e["serving"], "engine": "tgi"}),
     "serving.engine", "tgi",
     "compilation.enabled is true, and the compile task runs optimum-neuron's export: serve with optimum-neuron, "
     "or export by hand (serving README: Precompiled artifacts); or set compilation.enabled false"),
    # The last check: whatever the specific checks above did not catch and the network cannot carry.
    ("SageMaker model downloading from the Hub without NAT",
     lambda e: e["serving"].update(backend="sagemaker", model={**e["serving"]["model"], "artifact_uri": None}),
     "network", "huggingface.co",
     "the SageMaker model reaches huggingface.co (SageMaker model container: model download from the Hub) and "
     "nothing routes there: set network.nat_gateways to 1 or more"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutation", "key", "value", "fix"), [pytest.param(m, k, v, f, id=i) for i, m, k, v, f in REFUSALS]
)
def test_refusals_name_environment_key_value_and_fix(
    mutation: Mutation, key: str, value: Any, fix: str
) -> None:
    env = copy.deepcopy(minimal_env())
    mutation(env)
    with pytest.raises(
        NeuronConfigError, match=rf"^{re.escape(f'environments.qa.{key}={value!r}: {fix}')}$"
    ) as raised:
        load_environments({"qa": env})
    assert (raised.value.field, raised.value.value) == (f"environments.qa.{key}", value)


def test_an_az_only_the_snapshot_omits_is_not_refused() -> None:
    """Review-24 finding 5: MOTO (the only AZ-level source) lists trn1n.32xlarge in use1-az6 of us-east-1
    only, and inf2.xlarge not in use1-az1. One source's silence is "unknown" (the constructs warn and
    preflight asks the account), so neither configuration is refused; a Region both sources rule out is."""
    env = minimal_env()
    env["training"]["instance_type"] = "trn1n.32xlarge"
    env["az_ids"] = ["use1-az4", "use1-az6"]
    assert catalog.offering_status("trn1n.32xlarge", "use1-az4") == "unknown"
    assert load_one(env).training.instance_type == "trn1n.32xlarge"
    env = minimal_env()
    env["az_ids"] = ["use1-az6", "use1-az1"]
    assert catalog.offering_status("inf2.xlarge", "use1-az1") == "unknown"
    assert load_one(env).az_ids == ("use1-az6", "use1-az1")


def test_the_auto_scaling_group_engine_needs_no_job_image() -> None:
    env = minimal_env()
    env["training"]["engine"] = "auto-scaling-group"
    del env["training"]["job_image"]
    loaded = load_one(env)
    assert (loaded.training.engine, loaded.training.job_image) == ("auto-scaling-group", None)


def test_prod_may_not_be_destroyed() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.prod\.removal_policy='destroy': prod keeps its data when a stack is deleted: use retain$",
    ):
        load_one({**minimal_env(), "removal_policy": "destroy"}, name="prod")
    assert (
        load_one({**minimal_env(), "removal_policy": "destroy"}, name="sandbox").removal_policy == "destroy"
    )


def test_hugging_face_download_is_allowed_with_a_nat_gateway() -> None:
    env = minimal_env()
    env["network"] = {"nat_gateways": 1}
    env["serving"]["model"]["artifact_uri"] = None
    env["training"]["job_image"] = (
        "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0"
    )
    loaded = load_one(env)
    assert loaded.network.has_internet_egress and loaded.serving.model.artifact_uri is None


@pytest.mark.parametrize("name", ["1dev", "dev_1", "", "d" * 65, 7])
def test_environment_names_must_be_construct_ids(name: object) -> None:
    expected = (
        f"environments.{name}={name!r}: environment names start with a letter and use letters, digits and '-'"
    )
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected)}$") as raised:
        load_environments({name: minimal_env()})
    assert raised.value.value == name


def test_environment_names_of_one_to_64_characters_are_accepted() -> None:
    for name in ("d", "D" + "d" * 63, "dev-2"):
        assert load_one(minimal_env(), name=name).name == name


@pytest.mark.parametrize("context", [{}, [], None, ["dev"], "dev"])
def test_no_environments_is_refused(context: Any) -> None:
    expected = f"environments={context!r}: define at least one environment, e.g. {{'dev': {{'region': ...}}}}"
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected)}$") as raised:
        load_environments(context)
    assert raised.value.value == context


def test_unreadable_or_incomplete_cdk_json_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "cdk.json"
    broken.write_text("{not json")
    with pytest.raises(
        NeuronConfigError, match=rf"^cdk\.json={re.escape(repr(str(broken)))}: cannot read it as JSON \("
    ) as raised:
        load_cdk_json(broken)
    assert raised.value.value == str(broken)
    broken.write_text(json.dumps({"app": "python3 app.py"}))
    with pytest.raises(
        NeuronConfigError,
        match=rf"^environments=None: {re.escape(str(broken))} has no context.environments block$",
    ):
        load_cdk_json(broken)
    broken.write_text(json.dumps({"app": "python3 app.py", "context": {}}))
    with pytest.raises(
        NeuronConfigError,
        match=rf"^environments=None: {re.escape(str(broken))} has no context.environments block$",
    ):
        load_cdk_json(broken)
    with pytest.raises(NeuronConfigError, match=r"^cdk\.json=.*: cannot read it as JSON \(.*No such file"):
        load_cdk_json(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # A cdk.json whose context is a list, or that is not an object at all: a configuration error,
        # never an AttributeError.
        ({"app": "python3 app.py", "context": ["environments"]},
         "context=['environments']: {path}: context must be an object holding environments"),
        ([{"context": {}}], "cdk.json='{path}': must be a JSON object with a context block"),
        ({"context": {"environments": ["dev"]}},
         "environments=['dev']: define at least one environment, e.g. {{'dev': {{'region': ...}}}}"),
    ],
)  # fmt: skip
def test_cdk_json_of_the_wrong_shape_is_refused(tmp_path: Path, document: Any, expected: str) -> None:
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(document))
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(expected.format(path=path))}$"):
        load_cdk_json(path)


def test_load_cdk_json_reads_cdk_json_in_the_working_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert list(load_cdk_json()) == ["dev", "staging", "prod"]


# --------------------------------------------------------------------------------------------
# Selection (-c env=NAME)
# --------------------------------------------------------------------------------------------


def test_select_all_by_default_and_one_by_name(shipped: dict[str, EnvironmentConfig]) -> None:
    assert [e.name for e in select_environments(shipped, None)] == ["dev", "staging", "prod"]
    assert [e.name for e in select_environments(shipped, "prod")] == ["prod"]


def test_selecting_an_unknown_environment_lists_the_defined_ones(
    shipped: dict[str, EnvironmentConfig],
) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^env='qa': unknown environment; defined: dev, prod, staging"
    ):
        select_environments(shipped, "qa")


def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def test_config_objects_built_in_code_get_the_documented_defaults() -> None:
    # docs/configuration.md: the defaults of keys cdk.json leaves out, which stacks built from config
    # objects in code (tests, other apps) get too.
    assert _defaults(NetworkConfig) == {
        "cidr": "10.0.0.0/16",
        "nat_gateways": 0,
        "nat_instance_type": None,
        "endpoint_azs": "all",
        "flow_log_retention_days": 365,
    }
    assert _defaults(StorageConfig) == {
        "one_zone": False,
        "backup_retention_days": 35,
        "infrequent_access_after_days": 30,
    }
    assert _defaults(TrainingConfig) == {
        "engine": "batch",
        "checkpoint": None,
        "worker_count": None,
        "efs_utils_package": None,
        "efs_utils_release": None,
    }
    assert _defaults(ServingConfig) == {
        "backend": "ec2",
        "instance_type": None,
        "min_capacity": 1,
        "max_capacity": 2,
        "warm_pool": False,
        "warm_pool_size": None,
        "certificate_arn": None,
        "hugging_face_token_secret": None,
        "artifact_manifest": None,
    }
    env = load_one(minimal_env())
    assert env.removal_policy == "retain"
    assert _defaults(EnvironmentConfig)["removal_policy"] == "retain"


def test_an_environment_is_a_hashable_value() -> None:
    # Frozen value objects: equal configurations are interchangeable (tags are left out of the hash,
    # a mapping is not hashable).
    env = load_one(minimal_env())
    assert hash(env) == hash(load_one(minimal_env()))


def test_interface_endpoint_logical_ids_never_change() -> None:
    # Each id is part of a deployed logical ID: renaming one replaces that endpoint in every environment.
    assert dict(ENDPOINT_IDS) == {
        "ecr.api": "EcrApi",
        "ecr.dkr": "EcrDocker",
        "ecs": "Ecs",
        "ecs-agent": "EcsAgent",
        "ecs-telemetry": "EcsTelemetry",
        "logs": "Logs",
        "monitoring": "Monitoring",
        "ssm": "Ssm",
        "ssmmessages": "SsmMessages",
        "ec2messages": "Ec2Messages",
        "autoscaling": "AutoScaling",
        "cloudformation": "CloudFormation",
        "secretsmanager": "SecretsManager",
        "sagemaker.runtime": "SageMakerRuntime",
        "ec2": "Ec2",
        "sts": "Sts",
    }


# --------------------------------------------------------------------------------------------
# Every mistake of a section in one run (rough edge 5)
# --------------------------------------------------------------------------------------------

TWO_MISTAKES = [
    ("training", {"training.max_nodes": 0, "training.retry_attempts": 3},
     ["training.retry_attempts=3: unknown key", "training.max_nodes=0"]),
    ("training plan", {"training.plan.nodes": 0, "training.plan.pipeline_parallel": "2"},
     ["training.plan.nodes=0", "training.plan.pipeline_parallel='2'"]),
    ("serving", {"serving.min_capacity": -1, "serving.max_capacity": "x"},
     ["serving.min_capacity=-1", "serving.max_capacity='x'"]),
    ("serving model", {"serving.model.parameters": -1, "serving.model.dtype": "bogus"},
     ["serving.model.parameters=-1", "serving.model.dtype='bogus'"]),
    ("training plan model", {"training.plan.model": {"parameters": "7B", "layers": "32", "heads": 8}},
     ["training.plan.model.heads=8: unknown key", "training.plan.model.parameters='7B'",
      "training.plan.model.layers='32'"]),
    ("serving model override", {"serving.model.host_memory_override": 1, "serving.model.batch_size": "x"},
     ["serving.model.batch_size='x'", "serving.model.host_memory_override=1"]),
    ("network", {"network.cidr": "8.8.8.0/24", "network.flow_log_retention_days": 2},
     ["network.cidr='8.8.8.0/24'", "network.flow_log_retention_days=2"]),
    ("storage", {"storage.backup_retention_days": 0, "storage.one_zone": "yes"},
     ["storage.backup_retention_days=0", "storage.one_zone='yes'"]),
    ("az_ids", {"az_ids": ["us-east-1a", "nope"]},
     ["az_ids[0]='us-east-1a'", "az_ids[1]='nope'"]),
    # The environment's own keys: an unknown key no longer hides the other mistakes.
    ("environment", {"trainig": {}, "removal_policy": "keep"},
     ["trainig={}: unknown key; did you mean 'training'?", "removal_policy='keep'"]),
    ("environment and sections", {"servng": {}, "training.max_nodes": 0, "serving.max_capacity": "x"},
     ["servng={}: unknown key; did you mean 'serving'?", "training.max_nodes=0", "serving.max_capacity='x'"]),
    # A refused az_ids or region skips only the offering checks: training and serving are still read.
    ("az_ids and sections", {"az_ids": ["use1-az6", "use1-az6"], "training.max_nodes": 0,
                             "serving.max_capacity": "x"},
     ["az_ids=['use1-az6', 'use1-az6']: lists an AZ ID twice", "training.max_nodes=0",
      "serving.max_capacity='x'"]),
    ("region, az_ids and sections", {"region": "us-east-9", "az_ids": ["use1-az6", "use1-az6"],
                                     "training.instance_type": "trn9.2xlarge", "serving.min_capacity": -1},
     ["region='us-east-9': no such AWS Region; did you mean us-east-1", "az_ids=['use1-az6', 'use1-az6']",
      "training.instance_type='trn9.2xlarge'", "serving.min_capacity=-1"]),
    ("monitoring", {"monitoring.alarm_email": "not-an-email", "monitoring.bogus": 1},
     ["monitoring.bogus=1: unknown key", "monitoring.alarm_email='not-an-email'"]),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "starts"), [pytest.param(c, s, id=i) for i, c, s in TWO_MISTAKES])
def test_two_mistakes_in_one_section_are_reported_together(
    changes: dict[str, Any], starts: list[str]
) -> None:
    """docs/configuration.md: every mistake in one run, also two in the same section."""
    env = copy.deepcopy(minimal_env())
    for path, value in changes.items():
        setting(path, value)(env)
    with pytest.raises(NeuronConfigErrors) as raised:
        load_environments({"qa": env})
    lines = str(raised.value).splitlines()
    assert len(lines) == len(starts), lines
    for line, start in zip(lines, starts, strict=True):
        assert line.startswith(f"environments.qa.{start}"), (line, start)


# --------------------------------------------------------------------------------------------
# Issue 24: training.plan names the model, and the plan checks HBM per NeuronCore
# --------------------------------------------------------------------------------------------


def test_shipped_plans_estimate_memory_per_neuroncore(shipped: dict[str, EnvironmentConfig]) -> None:
    # prod: NXDT hf_llama3_70B_config.yaml's layout (16 x trn1.32xlarge, TP 32 PP 8, selective
    # recomputation of CoreAttention and LlamaMLP, sequence 8,192): 0.5133 + 1.0267 + 1.5400 + 3.5598
    # (80 x 8,192 x 8,192 x 22 / 32 bytes + logits) = 6.64 GiB of 8 usable.
    prod = shipped["prod"].training.plan
    assert prod.model is not None and prod.model.parameters == 70_553_706_496
    assert (prod.model.sequence_length, prod.activation_checkpointing, prod.zero1) == (
        8192,
        "selective",
        True,
    )
    assert prod.recompute == ("CoreAttention", "LlamaMLP")
    assert prod.memory is not None and round(prod.memory.total_gib, 2) == 6.64
    # dev and staging train Llama 3.1 8B at TP 32 on 2 and 4 nodes.
    for name, sequence in (("dev", 4096), ("staging", 8192)):
        plan = shipped[name].training.plan
        assert plan.model is not None and (plan.model.parameters, plan.model.sequence_length) == (
            8_030_261_248, sequence,
        )  # fmt: skip
        assert plan.memory is not None and plan.memory.fits


def test_a_plan_without_a_model_is_not_checked_for_memory() -> None:
    env = minimal_env()
    del env["training"]["plan"]["model"]
    plan = load_one(env).training.plan
    assert (plan.model, plan.memory) == (None, None)


def test_plan_model_keys_are_read_into_the_training_model() -> None:
    env = minimal_env()
    env["training"]["plan"].update(
        model={
            "parameters": 8e9, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8,
            "intermediate_size": 14336, "vocab_size": 128256, "sequence_length": 8192, "micro_batch_size": 1,
        },
        zero1=False,
        activation_checkpointing="full",
    )  # fmt: skip
    plan = load_one(env).training.plan
    assert plan.model == planner.TrainingModel(
        parameters=8_000_000_000, layers=32, hidden_size=4096, attention_heads=32, kv_heads=8,
        intermediate_size=14336, vocab_size=128256, sequence_length=8192,
    )  # fmt: skip
    assert (plan.zero1, plan.activation_checkpointing) == (False, "full")
    assert plan.memory is not None and plan.memory.assumed == ()
    env["training"]["plan"].update(
        activation_checkpointing="selective", recompute=["LlamaRMSNorm", "ActivationMultiplyMLP"]
    )
    plan = load_one(env).training.plan
    assert (plan.activation_checkpointing, plan.recompute) == (
        "selective",
        ("LlamaRMSNorm", "ActivationMultiplyMLP"),
    )


@pytest.mark.parametrize(
    ("change", "field", "value", "fix"),
    [
        (
            lambda plan: plan.update(model=8e9),
            "training.plan.model",
            8e9,
            "must be an object with keys attention_heads, hidden_size, intermediate_size, kv_heads, layers, "
            "micro_batch_size, parameters, sequence_length, vocab_size",
        ),
        (
            lambda plan: plan["model"].pop("parameters"),
            "training.plan.model.parameters",
            None,
            "required: give a whole number",
        ),
        (
            lambda plan: plan["model"].update(layers=0),
            "training.plan.model.layers",
            0,
            "must be a whole number >= 1",
        ),
        (
            lambda plan: plan["model"].update(sequence_length="8k"),
            "training.plan.model.sequence_length",
            "8k",
            "wrong type: must be a whole number",
        ),
        (
            lambda plan: plan.update(zero1="yes"),
            "training.plan.zero1",
            "yes",
            "wrong type: must be true/false",
        ),
        (
            lambda plan: plan.update(activation_checkpointing="partial"),
            "training.plan.activation_checkpointing",
            "partial",
            "use one of none, selective, full",
        ),
        (
            lambda plan: plan.update(recompute="LlamaMLP"),
            "training.plan.recompute",
            "LlamaMLP",
            "wrong type: must be a list",
        ),
        (
            lambda plan: plan.update(activation_checkpointing="selective", recompute=["MLP"]),
            "training.plan.recompute",
            ["MLP"],
            "unknown module 'MLP': use modules from ActivationMultiplyMLP, CoreAttention, LlamaMLP, LlamaRMSNorm "
            "(neuronx-distributed-training's Llama)",
        ),
        (
            lambda plan: plan.update(activation_checkpointing="full", recompute=["LlamaMLP"]),
            "training.plan.recompute",
            ["LlamaMLP"],
            "modules are recomputed only with activation_checkpointing='selective' (it is 'full'); set it to "
            "'selective' or drop recompute",
        ),
        (
            lambda plan: plan["model"].update(bogus=1),
            "training.plan.model.bogus",
            1,
            "unknown key; valid keys here: parameters, layers, hidden_size, attention_heads, kv_heads, "
            "intermediate_size, vocab_size, sequence_length, micro_batch_size",
        ),
    ],
)
def test_plan_model_refusals_name_their_key(change: Any, field: str, value: object, fix: str) -> None:
    env = minimal_env()
    change(env["training"]["plan"])
    with pytest.raises(NeuronConfigError) as raised:
        load_one(env)
    error = raised.value
    errors = getattr(error, "errors", (error,))
    assert [(e.field, e.value, e.fix) for e in errors] == [(f"environments.qa.{field}", value, fix)]


def test_a_plan_that_cannot_fit_is_refused_under_the_cdk_json_key_of_its_knob() -> None:
    env = minimal_env()
    env["training"]["plan"]["model"] = {"parameters": 70e9, "sequence_length": 8192}
    with pytest.raises(NeuronConfigError) as raised:
        load_one(env)
    # 70B on 2 trn1 nodes at TP 32: 4.07 + 8.15 + 12.22 + 7.93 = 32.38 GiB. No single change fits; a
    # 256-token sequence leaves the least (activations / 32: 24.70 GiB), less than PP 2 (the largest that
    # divides 64 ranks, 26.27) or full recompute (24.98).
    assert (raised.value.field, raised.value.value) == (
        "environments.qa.training.plan.model.sequence_length",
        8192,
    )
    assert (
        "; sequence_length=256 frees the most: 24.70 GiB per NeuronCore (still too much" in raised.value.fix
    )
    assert "activation_checkpointing='full': 24.98 GiB; pipeline_parallel=2: 26.27 GiB" in raised.value.fix
    env["training"]["plan"]["model"] = {"parameters": 1_235_814_400, "sequence_length": 65536}
    env["training"].update(instance_type="trn1.2xlarge", max_nodes=1)
    env["training"]["plan"].update(nodes=1, tensor_parallel=2)
    with pytest.raises(NeuronConfigError) as raised:
        load_one(env)
    assert raised.value.field == "environments.qa.training.plan.model.sequence_length"


def test_every_training_plan_key_is_documented_in_the_configuration_reference() -> None:
    from stacks import config

    doc = (REPO_ROOT / "docs" / "configuration.md").read_text()
    section = doc[doc.index("## `training`") : doc.index("## `storage`")]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    documented = {key.strip(" `") for row in rows for key in row.split(",")}
    for key in config._PLAN_KEYS:
        assert f"plan.{key}" in documented, key
    model_keys = {k.removeprefix("plan.model.") for k in documented}
    assert set(config._TRAINING_MODEL_KEYS) <= model_keys


# --------------------------------------------------------------------------------------------
# compilation: on where the task can compile the fleet's model, off (by default) where it cannot
# --------------------------------------------------------------------------------------------


def test_compilation_defaults_to_the_fleets_bucket_and_the_house_prefix() -> None:
    compilation = load_one(minimal_env()).compilation
    assert compilation == config_module.CompilationConfig(
        artifact_bucket="models-bucket",
        artifact_prefix="compiled/",
        aws_cli_image=None,
        ecr_public_cache_prefix="cdk-neuron-qa",  # one per environment: a prefix is unique in a registry
        log_retention_days=30,
    )


def test_the_shipped_environments_compile_where_fargate_holds_the_fleets_model(
    shipped: dict[str, EnvironmentConfig],
) -> None:
    assert shipped["dev"].compilation is not None and shipped["staging"].compilation is not None
    assert shipped["dev"].compilation.artifact_bucket == "cdk-neuron-dev-models"
    assert (shipped["dev"].compilation.runs_on, shipped["staging"].compilation.runs_on) == (
        "fargate",
        "fargate",
    )
    # prod's 70B (130 GiB of weights) is more than a Fargate task holds: it compiles on prod's trn1 cluster.
    prod = shipped["prod"].compilation
    assert prod is not None and prod.runs_on == "training-cluster"
    assert prod.artifact_bucket == "cdk-neuron-prod-models"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda e: e.update(network={"nat_gateways": 1}, serving={**e["serving"], "engine": "tgi"}),
            "engine",
        ),
        (
            lambda e: (
                e["serving"]["model"].update(artifact_uri=None, model_id="org/m")
                or e.update(network={"nat_gateways": 1})
            ),
            "bucket",
        ),
    ],
)
def test_without_a_way_to_compile_the_default_is_no_compile_task(change: Mutation, reason: str) -> None:
    env = minimal_env()
    change(env)
    assert load_one(env).compilation is None, reason


def test_enabled_without_a_way_to_compile_names_every_reason_at_once() -> None:
    env = minimal_env()
    env["network"] = {"nat_gateways": 1}
    env["serving"]["engine"] = "tgi"
    env["serving"]["model"]["artifact_uri"] = None
    env["compilation"] = {"enabled": True}
    with pytest.raises(NeuronConfigErrors) as raised:
        load_one(env)
    assert [e.field for e in raised.value.errors] == [
        "environments.qa.serving.engine",
        "environments.qa.compilation.artifact_bucket",
    ]


def test_disabled_means_no_compile_task() -> None:
    env = minimal_env()
    env["compilation"] = {"enabled": False}
    assert load_one(env).compilation is None


def test_each_environment_gets_its_own_cache_prefix_and_a_shared_one_is_refused() -> None:
    assert config_module.default_cache_prefix("Staging-EU") == "cdk-neuron-staging-eu"
    assert config_module.default_cache_prefix("a" * 40) == "cdk-neuron-" + "a" * 19
    two = load_environments({"qa": minimal_env(), "qa2": minimal_env()})
    assert [e.compilation.ecr_public_cache_prefix for e in two.values() if e.compilation] == [
        "cdk-neuron-qa",
        "cdk-neuron-qa2",
    ]
    shared = minimal_env()
    shared["compilation"] = {"ecr_public_cache_prefix": "cdk-neuron-qa"}
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments.qa2.compilation.ecr_public_cache_prefix='cdk-neuron-qa': environments.qa uses it in "
        r"the same account and Region",
    ):
        load_environments({"qa": minimal_env(), "qa2": shared})
