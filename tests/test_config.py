"""cdk.json `environments`: what is accepted, what is refused, and that every refusal names env and key."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_support import REPO_ROOT
from stacks.config import (
    PLACEHOLDER_ACCOUNT,
    EnvironmentConfig,
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
            "plan": {"nodes": 2, "tensor_parallel": 32},
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
    assert dev.storage.one_zone and dev.removal_policy == "destroy"
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
    # Llama-3 8B (14.9 GiB bf16) exceeds the 12 GiB usable of inf2.xlarge's 16 GiB host RAM;
    # Llama-3.2 3B (3.21B parameters, 28 layers, 8 KV heads; 5.98 GiB) fits.
    model = shipped[name].serving.model
    assert (model.model_id, model.parameters) == ("meta-llama/Llama-3.2-3B-Instruct", 3_210_000_000)
    assert model.artifact_uri == (
        f"s3://cdk-neuron-{name}-models/meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096/"
    )
    plan = shipped[name].serving.serving_plan()
    assert plan.instance_type == "inf2.xlarge"
    assert plan.weights_gib == pytest.approx(5.979, abs=1e-3)
    assert plan.host_memory_limit_gib == 12.0


def test_several_replicas_without_nat_are_accepted() -> None:
    # TP 1 packs two Llama-3.2 3B replicas on inf2.xlarge. Their local proxy is the Amazon Linux
    # nginx package (repositories in S3, through the gateway endpoint), so no NAT is needed.
    env = minimal_env()
    env["serving"]["model"]["tensor_parallel"] = None
    assert load_one(env).network.has_internet_egress is False
    assert load_one(env).serving.serving_plan().replicas_per_instance == 2


def test_llama3_8b_on_inf2_xlarge_is_refused_for_host_memory() -> None:
    env = minimal_env()
    env["serving"]["model"].update(model_id="meta-llama/Meta-Llama-3-8B-Instruct", parameters=8_000_000_000)
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.serving\.instance_type='inf2\.xlarge': 14\.9 GiB of weights .*host memory.*"
        r"inf2\.8xlarge with TP 2 would fit",
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
    assert (
        not prod.storage.one_zone
        and prod.removal_policy == "retain"
        and prod.storage.backup_retention_days >= 1
    )
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
    env = load_one(minimal_env())
    assert env.account == "111111111111" and env.removal_policy == "retain" and dict(env.tags) == {}
    assert (env.network.cidr, env.network.nat_gateways) == ("10.0.0.0/16", 0)
    assert (env.network.endpoint_azs, env.network.flow_log_retention_days) == ("all", 365)
    assert env.training.capacity.kind == "on-demand" and env.training.engine == "batch"
    assert env.training.checkpoint is None
    assert (env.storage.one_zone, env.storage.backup_retention_days) == (False, 35)
    assert env.serving.backend == "ec2" and env.serving.engine.name == "optimum-neuron"
    assert (env.serving.min_capacity, env.serving.max_capacity, env.serving.warm_pool) == (1, 2, False)
    assert env.training_az_id == "use1-az6"


def test_account_falls_back_to_cdk_default_account_then_placeholder() -> None:
    # Only an environment that destroys its data may leave the account open.
    env = load_one({**minimal_env(), "account": None, "removal_policy": "destroy"})
    assert env.resolve_account({"CDK_DEFAULT_ACCOUNT": "222222222222"}) == "222222222222"
    assert env.resolve_account({}) == PLACEHOLDER_ACCOUNT == "000000000000"
    pinned = load_one({**minimal_env(), "account": "333333333333"})
    assert pinned.resolve_account({"CDK_DEFAULT_ACCOUNT": "222222222222"}) == "333333333333"


def test_an_environment_that_retains_data_must_name_its_account() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^environments\.qa\.account=None: an environment that retains"
    ):
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
    env["training"].update(instance_type="trn2u.48xlarge", plan={"nodes": 2, "tensor_parallel": 64})
    env["training"]["capacity"] = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}
    assert load_one(env).training.capacity.kind == "capacity-block"
    # trn1n.32xlarge is sold as no Capacity Block: the construct's message, under the cdk.json key.
    env["training"].update(instance_type="trn1n.32xlarge", plan={"nodes": 2, "tensor_parallel": 32})
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments\.qa\.training\.capacity\.type='capacity-block': EC2 sells no Capacity "
        r"Blocks for trn1n\.32xlarge.*UltraServer Capacity Blocks for trn2u\.48xlarge",
    ):
        load_one(env)


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
    env["training"]["plan"] = {"nodes": 2, "tensor_parallel": 16}
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


REFUSALS: list[tuple[str, Mutation, str, str]] = [
    # unknown keys
    ("unknown top-level key", setting("regoin", "us-east-1"), "regoin", "unknown key"),
    ("unknown nested key", setting("training.max_node", 4), "training.max_node", "unknown key"),
    ("unknown model key", setting("serving.model.quantize", "int8"), "serving.model.quantize", "unknown key"),
    ("id for on-demand", setting("training.capacity", {"type": "on-demand", "reservation_id": "cr-0123456789abcdef0"}),
     "training.capacity.reservation_id", "unknown key"),
    # missing and wrong types
    ("missing region", deleting("region"), "region", "required"),
    ("missing training", deleting("training"), "training", "required"),
    ("missing model id", deleting("serving.model.model_id"), "serving.model.model_id", "required"),
    ("nodes as string", setting("training.max_nodes", "2"), "training.max_nodes", "wrong type"),
    ("bool as number", setting("serving.max_capacity", True), "serving.max_capacity", "wrong type"),
    ("fractional count", setting("training.plan.nodes", 1.5), "training.plan.nodes", "wrong type"),
    ("one_zone as string", setting("storage.one_zone", "yes"), "storage.one_zone", "wrong type"),
    ("tags not an object", setting("tags", ["a"]), "tags", "wrong type"),
    ("tag value number", setting("tags", {"cost": 5}), "tags.cost", "wrong type"),
    ("network not an object", setting("network", "10.0.0.0/16"), "network", "must be an object"),
    ("az_ids not a list", setting("az_ids", "use1-az6"), "az_ids", "wrong type"),
    # impossible values
    ("bad account", setting("account", "1234"), "account", "12-digit"),
    ("bad region", setting("region", "US East"), "region", "Region name"),
    ("AZ name not ID", setting("az_ids", ["us-east-1a"]), r"az_ids\[0\]", "AZ ID"),
    ("AZ ID of another region", setting("az_ids", ["usw2-az4"]), r"az_ids\[0\]", "us-west-2"),
    ("no AZ IDs", setting("az_ids", []), "az_ids", "at least one"),
    ("duplicate AZ IDs", setting("az_ids", ["use1-az6", "use1-az6"]), "az_ids", "twice"),
    ("removal policy", setting("removal_policy", "snapshot"), "removal_policy", "retain"),
    ("reserved tag key", setting("tags", {"aws:owner": "me"}), "tags.aws:owner", "aws:"),
    ("public CIDR", setting("network.cidr", "8.8.0.0/16"), "network.cidr", "RFC 1918"),
    ("CIDR too small", setting("network.cidr", "10.0.0.0/23"), "network.cidr", "/16 to /22"),
    ("flow log retention", setting("network.flow_log_retention_days", 10), "network.flow_log_retention_days",
     "CloudWatch Logs accepts"),
    ("endpoint AZs", setting("network.endpoint_azs", "some"), "network.endpoint_azs", "training"),
    ("not a CIDR", setting("network.cidr", "10.0.0.0/33"), "network.cidr", "IPv4 CIDR"),
    ("more NATs than AZs", setting("network.nat_gateways", 3), "network.nat_gateways", "one per AZ"),
    ("inference instance for training", setting("training.instance_type", "inf2.48xlarge"),
     "training.instance_type", "Trainium"),
    ("unknown instance", setting("training.instance_type", "p5.48xlarge"), "training.instance_type", "known types"),
    ("not offered in training AZ", setting("az_ids", ["use1-az2", "use1-az6"]), "training.instance_type",
     "not offered in the training AZ"),
    ("zero max nodes", setting("training.max_nodes", 0), "training.max_nodes", ">= 1"),
    ("plan exceeds max nodes", setting("training.plan.nodes", 4), "training.plan.nodes", "max_nodes=2"),
    ("TP beyond NeuronLink", setting("training.plan.tensor_parallel", 64), "training.plan.tensor_parallel",
     "NeuronLink"),
    ("world not divisible", setting("training.plan.pipeline_parallel", 3),
     r"training\.plan\.(tensor|pipeline)_parallel", "not divisible"),
    ("LNC on trn1", setting("training.plan.logical_nc_config", 2), "training.plan.logical_nc_config", "Trn2"),
    ("multi-node without EFA", setting("training.instance_type", "trn1.2xlarge"), "training.max_nodes", "no EFA"),
    ("capacity type", setting("training.capacity", {"type": "spot"}), "training.capacity.type", "on-demand"),
    ("reservation without id", setting("training.capacity", {"type": "reservation"}),
     "training.capacity.reservation_id", "capacity reservation id"),
    ("bad reservation id", setting("training.capacity", {"type": "reservation", "reservation_id": "r-1"}),
     "training.capacity.reservation_id", "cr-"),
    ("bad resource group", setting("training.capacity", {"type": "reservation-group", "resource_group_arn": "x"}),
     "training.capacity.resource_group_arn", "resource group ARN"),
    ("engine", setting("training.engine", "slurm"), "training.engine", "auto-scaling-group"),
    ("job image with the ASG engine", setting("training.engine", "auto-scaling-group"), "training.job_image",
     "no job containers"),
    ("image without tag", setting("training.job_image", "763104351884.dkr.ecr.us-east-1.amazonaws.com/x"),
     "training.job_image", "pin the image by an explicit version tag"),
    ("latest tag", setting("training.job_image", DLC.split(":")[0] + ":latest"), "training.job_image", "pin"),
    ("public image without NAT", setting("training.job_image", "public.ecr.aws/neuron/pytorch-training-neuronx:2.9"),
     "training.job_image", "VPC endpoints"),
    ("ECR of another region without NAT",
     setting("training.job_image", DLC.replace("us-east-1", "us-west-2")), "training.job_image", "us-east-1"),
    ("more writers than nodes", setting("training.checkpoint", {"model_parameters": 8_000_000_000, "writers": 3}),
     "training.checkpoint.writers", "max_nodes"),
    ("zero backup retention", setting("storage.backup_retention_days", 0), "storage.backup_retention_days", ">= 1"),
    ("IA days EFS lacks", setting("storage.infrequent_access_after_days", 10),
     "storage.infrequent_access_after_days", "EFS accepts"),
    ("backend", setting("serving.backend", "eks"), "serving.backend", "sagemaker"),
    ("serving engine", setting("serving.engine", "djl"), "serving.engine", "optimum-neuron"),
    ("min above max", setting("serving.min_capacity", 3), "serving.min_capacity", "max_capacity=2"),
    ("zero max capacity", setting("serving.max_capacity", 0), "serving.max_capacity", ">= 1"),
    ("negative min", setting("serving.min_capacity", -1), "serving.min_capacity", ">= 0"),
    ("sagemaker scale to zero", lambda e: e["serving"].update(backend="sagemaker", min_capacity=0),
     "serving.min_capacity", "SageMaker"),
    ("sagemaker warm pool", lambda e: e["serving"].update(backend="sagemaker", warm_pool=True),
     "serving.warm_pool", "ec2 backend"),
    ("model too big for instance", setting("serving.model.parameters", 70_000_000_000),
     "serving.instance_type", "would fit"),
    ("unknown dtype", setting("serving.model.dtype", "fp4"), "serving.model.dtype", "bf16"),
    ("bad TP for instance", setting("serving.model.tensor_parallel", 3), "serving.model.tensor_parallel", "TP degrees"),
    # The library's ModelSpec decides: "gpt2"-style root ids are valid Hub ids, three segments are not.
    ("bad model id", setting("serving.model.model_id", "org/name/x"), "serving.model.model_id", "Hub id"),
    ("bad artifact URI", setting("serving.model.artifact_uri", "https://x/y"), "serving.model.artifact_uri", "s3://"),
    ("HF download without NAT", setting("serving.model.artifact_uri", None), "serving.model.artifact_uri",
     "Hugging Face Hub"),
    ("certificate in other region",
     setting("serving.certificate_arn", "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"),
     "serving.certificate_arn", "us-east-1"),
    ("serving type not offered in every AZ", setting("az_ids", ["use1-az6", "use1-az1"]),
     "serving.instance_type", "use1-az1"),
    ("bad email", setting("monitoring.alarm_email", "oncall"), "monitoring.alarm_email", "email"),
    ("TGI image unreachable without NAT", setting("serving.engine", "tgi"), "serving.engine", "ghcr.io"),
    ("vLLM image unreachable without NAT", setting("serving.engine", "vllm-neuron"), "serving.engine",
     "public.ecr.aws"),
    ("HF token on SageMaker", lambda e: e["serving"].update(backend="sagemaker", hugging_face_token_secret="hf"),
     "serving.hugging_face_token_secret", "plain text"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutation", "key", "reason"), [pytest.param(m, k, r, id=i) for i, m, k, r in REFUSALS]
)
def test_refusals_name_environment_and_key(mutation: Mutation, key: str, reason: str) -> None:
    env = copy.deepcopy(minimal_env())
    mutation(env)
    with pytest.raises(NeuronConfigError, match=rf"^environments\.qa\.{key}=.*{reason}") as raised:
        load_environments({"qa": env})
    assert raised.value.field.startswith("environments.qa.")


def test_trn1n_is_refused_outside_the_one_az_that_offers_it() -> None:
    env = minimal_env()
    env["training"]["instance_type"] = "trn1n.32xlarge"
    env["az_ids"] = ["use1-az4", "use1-az6"]
    with pytest.raises(NeuronConfigError, match=r"^environments\.qa\.training\.instance_type=.*use1-az6"):
        load_one(env)
    env["az_ids"] = ["use1-az6", "use1-az4"]
    assert load_one(env).training.instance_type == "trn1n.32xlarge"


def test_the_auto_scaling_group_engine_needs_no_job_image() -> None:
    env = minimal_env()
    env["training"]["engine"] = "auto-scaling-group"
    del env["training"]["job_image"]
    loaded = load_one(env)
    assert (loaded.training.engine, loaded.training.job_image) == ("auto-scaling-group", None)


def test_prod_may_not_be_destroyed() -> None:
    with pytest.raises(NeuronConfigError, match=r"^environments\.prod\.removal_policy='destroy'"):
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


@pytest.mark.parametrize("name", ["1dev", "dev_1", ""])
def test_environment_names_must_be_construct_ids(name: str) -> None:
    with pytest.raises(NeuronConfigError, match=r"^environments\."):
        load_environments({name: minimal_env()})


def test_no_environments_is_refused() -> None:
    with pytest.raises(NeuronConfigError, match=r"^environments=.*at least one"):
        load_environments({})


def test_unreadable_or_incomplete_cdk_json_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "cdk.json"
    broken.write_text("{not json")
    with pytest.raises(NeuronConfigError, match=r"^cdk\.json="):
        load_cdk_json(broken)
    broken.write_text(json.dumps({"app": "python3 app.py", "context": {}}))
    with pytest.raises(NeuronConfigError, match=r"^environments=None: .*no context.environments"):
        load_cdk_json(broken)


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
