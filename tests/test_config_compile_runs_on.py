"""cdk.json ``compilation.runs_on``: where each model size compiles, chosen from the fleet's weights and
the training cluster's instance facts, and every mistake reported at once, by key, value and fix."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from app_assembly import shipped_environments

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from stacks.config import compilation_deployment, load_environments


def _prod(**compilation: Any) -> dict[str, Any]:
    env = copy.deepcopy(shipped_environments()["prod"])
    env["compilation"] = compilation or None
    return env


def _load(env: dict[str, Any]) -> Any:
    return load_environments({"prod": env})["prod"]


def test_a_70b_fleet_compiles_on_the_batch_training_cluster_without_being_told() -> None:
    compilation = _load(_prod()).compilation
    assert compilation is not None and compilation.runs_on == "training-cluster"


def test_a_small_fleet_compiles_on_fargate_without_being_told() -> None:
    env = _prod()
    env["serving"] = {
        **env["serving"],
        "instance_type": "inf2.xlarge",
        "model": {**env["serving"]["model"], "model_id": "meta-llama/Llama-3.2-1B-Instruct",
                  "parameters": 1_240_000_000, "tensor_parallel": 2, "batch_size": 1},
    }  # fmt: skip
    compilation = _load(env).compilation
    assert compilation is not None and compilation.runs_on == "fargate"


def test_asked_for_a_small_fleet_the_training_cluster_compiles_it_too() -> None:
    env = _prod(runs_on="training-cluster")
    env["serving"] = {
        **env["serving"],
        "instance_type": "inf2.xlarge",
        "model": {
            **env["serving"]["model"],
            "parameters": 1_240_000_000,
            "tensor_parallel": 2,
            "batch_size": 1,
        },
    }
    assert _load(env).compilation.runs_on == "training-cluster"


def test_fargate_asked_for_a_70b_is_off_by_default_and_refused_when_enabled_with_the_way_out() -> None:
    assert _load(_prod(runs_on="fargate")).compilation is None
    with pytest.raises(
        NeuronConfigError,
        match=re.escape(
            "environments.prod.serving.model.parameters=70000000000: compilation.enabled is true, and the "
        )
        + r"fleet's 130 GiB of weights are more than a Fargate compile task holds \(40 GiB\): set "
        r"compilation.runs_on training-cluster \(or leave it null\)",
    ):
        _load(_prod(runs_on="fargate", enabled=True))


def test_without_a_batch_cluster_a_70b_has_no_compile_path_and_says_so() -> None:
    env = _prod(enabled=True)
    env["training"] = {k: v for k, v in env["training"].items() if k not in ("engine", "job_image")} | {
        "engine": "auto-scaling-group"
    }
    with pytest.raises(
        NeuronConfigError, match=r"compile on a batch training cluster whose instance holds it"
    ):
        _load(env)
    env["compilation"] = {"enabled": True, "runs_on": "training-cluster"}
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments.prod.training.engine='auto-scaling-group': compilation.enabled is true, and "
        r"compilation.runs_on training-cluster submits a Batch job",
    ):
        _load(env)


def test_fargate_only_keys_are_refused_on_the_training_cluster_with_every_other_mistake() -> None:
    env = _prod(runs_on="training-cluster", aws_cli_image="public.ecr.aws/aws-cli/aws-cli:2.22.35",
                ecr_public_cache_prefix="mine", log_retention_days=31)  # fmt: skip
    with pytest.raises(NeuronConfigErrors) as raised:
        _load(env)
    fields = {e.field for e in raised.value.errors}
    # 31 is no CloudWatch Logs period; the two Fargate keys have no meaning here: all three at once.
    assert fields == {
        "environments.prod.compilation.log_retention_days",
        "environments.prod.compilation.aws_cli_image",
        "environments.prod.compilation.ecr_public_cache_prefix",
    }


def test_fargate_only_keys_are_refused_on_the_training_cluster() -> None:
    env = _prod(runs_on="training-cluster", aws_cli_image="public.ecr.aws/aws-cli/aws-cli:2.22.35")
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments.prod.compilation.aws_cli_image='public.ecr.aws/aws-cli/aws-cli:2.22.35': applies only "
        r"to compilation.runs_on fargate; on the training cluster the fetch and upload steps run in training.job_image",
    ):
        _load(env)


def test_a_job_image_pinned_by_digest_is_refused_for_the_compile_job() -> None:
    env = _prod(enabled=True, runs_on="training-cluster")
    env["training"]["job_image"] = (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx@sha256:" + "a" * 64
    )
    with pytest.raises(NeuronConfigError, match=r"training.job_image=.*pin training.job_image by tag"):
        _load(env)


def test_a_bad_runs_on_is_named_with_the_values() -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"^environments.prod.compilation.runs_on='ec2': use one of fargate, training-cluster$",
    ):
        _load(_prod(runs_on="ec2"))


def test_the_cli_finds_the_compile_job_from_cdk_json_alone() -> None:
    env = _load(_prod())
    found = compilation_deployment(env)
    assert found is not None
    assert (found.runs_on, found.stack_name, found.job_queue_logical_id, found.job_definition_logical_id) == (
        "training-cluster", "prod-Training", "CompileJobQueue", "CompileJobDefinition",
    )  # fmt: skip
    assert found.instance_type == "trn1.32xlarge"
    assert found.aws_cli_image == env.training.job_image
    assert (found.artifact_bucket, found.artifact_prefix, found.checkpoints) == (
        "cdk-neuron-prod-models",
        "compiled/",
        True,
    )
