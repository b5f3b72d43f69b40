"""The model name clients see in the OpenAI-compatible API is ``ModelSpec.served_model_name``.

Each helper below replays, in a few lines, what a container does with the arguments and
environment cdk-neuron gives it. They are transcribed from the engines' sources, not from
cdk-neuron, so a wrong flag or variable name makes the name come out wrong:

- optimum-neuron DLC entrypoint: huggingface/optimum-neuron ``docker/vllm/Dockerfile`` @v0.4.5
  (abf59858, 2026-02-11): ``ARGS=(--port 8080)``; every ``SM_ON_<NAME>=value`` becomes
  ``--<name lowercased> value``; then ``exec optimum-cli neuron serve "${ARGS[@]}" ${ARGS_CLI}``
  (``ARGS_CLI`` = the container's arguments).
- ``optimum-cli neuron serve``: ``optimum/commands/neuron/serve.py`` @v0.4.5: ``-m/--model``
  (required), ``--served_model_name/--served-model-name`` (default None); ``model_id =
  served_model_name or model`` is what vLLM gets as ``--served_model_name``.
- vLLM's OpenAI server lists and accepts ``--served-model-name``, defaulting to ``--model``
  (vllm-project/vllm ``vllm/entrypoints/openai/serving_engine.py``, ``_check_model``).
- TGI: ``/v1/models`` reports ``MODEL_ID`` (huggingface/text-generation-inference
  ``router/src/server.rs`` @v3.2.3); the SageMaker image exports ``MODEL_ID="${HF_MODEL_ID}"``
  (``sagemaker-entrypoint.sh`` @v3.3.4).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec

HUB_ID = "meta-llama/Meta-Llama-3-8B-Instruct"
FROM_S3 = ModelSpec(
    model_id=HUB_ID,
    artifact_uri="s3://models/meta-llama/Meta-Llama-3-8B-Instruct/neuron-bs1-seq4096",
    parameters=8_000_000_000,
)
FROM_HUB = ModelSpec(model_id=HUB_ID, parameters=8_000_000_000)
ARTIFACT_ONLY = ModelSpec(artifact_uri="s3://models/team/llama3-8b-neuron", parameters=8_000_000_000)
PLAN = FROM_S3.plan("inf2.8xlarge")

# Where each backend puts the model for the container (user_data.MODEL_MOUNT and
# sagemaker_backend.SAGEMAKER_MODEL_DIR; SageMaker's documented model directory).
EC2_MODEL_DIR = "/model"
SAGEMAKER_MODEL_DIR = "/opt/ml/model"


def dlc_entrypoint_argv(environment: Mapping[str, str], arguments: Sequence[str]) -> list[str]:
    argv = ["--port", "8080"]
    for key, value in environment.items():
        if key.startswith("SM_ON_"):
            argv.append("--" + key.removeprefix("SM_ON_").lower())
            if value:
                argv.append(value)
    return argv + list(arguments)


def optimum_cli_serve_name(argv: Sequence[str]) -> str:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--served_model_name", "--served-model-name", default=None)
    args, _ = parser.parse_known_args(argv)
    return str(args.served_model_name or args.model)


def vllm_api_server_name(argv: Sequence[str]) -> str:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--model", required=True)
    parser.add_argument("--served-model-name", default=None)
    args, _ = parser.parse_known_args(argv)
    return str(args.served_model_name or args.model)


def name_clients_see(engine: ServingEngine, spec: ModelSpec, backend: str) -> str:
    """What ``GET /v1/models`` would list for this engine, model and backend."""
    if backend == "ec2":
        model = EC2_MODEL_DIR if spec.precompiled else spec.served_model_name
        arguments = engine.container_args(spec, PLAN, model=model)
        environment = engine.environment(spec, PLAN, model=model)
    else:
        model = SAGEMAKER_MODEL_DIR if spec.precompiled else spec.served_model_name
        arguments = ()  # SageMaker passes no container arguments
        environment = engine.sagemaker_environment(spec, PLAN, model=model)
    if engine.name == "optimum-neuron":
        return optimum_cli_serve_name(dlc_entrypoint_argv(environment, arguments))
    if engine.name == "vllm-neuron":
        return vllm_api_server_name(arguments)
    return environment["MODEL_ID" if backend == "ec2" else "HF_MODEL_ID"]


@pytest.mark.parametrize("backend", ["ec2", "sagemaker"])
@pytest.mark.parametrize("spec", [FROM_S3, FROM_HUB, ARTIFACT_ONLY], ids=["s3+hub-id", "hub", "s3-only"])
def test_optimum_neuron_serves_the_model_under_its_served_name(spec: ModelSpec, backend: str) -> None:
    engine = ServingEngine.optimum_neuron()
    engine.validate(spec, PLAN)
    if backend == "sagemaker":
        engine.validate_sagemaker()
    assert name_clients_see(engine, spec, backend) == spec.served_model_name
    assert engine.listed_model_name(spec, model="/anything") == spec.served_model_name
    assert engine.served_name_caveat(spec, model="/anything") is None


def test_the_names_transcribed_from_the_sources() -> None:
    # Literal expectations, so the helpers above cannot agree with the code by construction.
    assert (
        name_clients_see(ServingEngine.optimum_neuron(), FROM_S3, "ec2")
        == "meta-llama/Meta-Llama-3-8B-Instruct"
    )
    assert name_clients_see(ServingEngine.optimum_neuron(), FROM_S3, "sagemaker") == (
        "meta-llama/Meta-Llama-3-8B-Instruct"
    )
    assert name_clients_see(ServingEngine.optimum_neuron(), ARTIFACT_ONLY, "ec2") == "llama3-8b-neuron"
    sagemaker = ServingEngine.optimum_neuron().sagemaker_environment(FROM_S3, PLAN, model="/opt/ml/model")
    assert sagemaker["SM_ON_SERVED_MODEL_NAME"] == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert dlc_entrypoint_argv(sagemaker, ())[:6] == [
        "--port",
        "8080",
        "--model",
        "/opt/ml/model",
        "--served_model_name",
        "meta-llama/Meta-Llama-3-8B-Instruct",
    ]


@pytest.mark.parametrize("spec", [FROM_S3, FROM_HUB, ARTIFACT_ONLY], ids=["s3+hub-id", "hub", "s3-only"])
def test_vllm_neuron_serves_the_model_under_its_served_name(spec: ModelSpec) -> None:
    engine = ServingEngine.vllm_neuron()
    engine.validate(spec, PLAN)
    assert name_clients_see(engine, spec, "ec2") == spec.served_model_name
    assert engine.served_name_caveat(spec, model=EC2_MODEL_DIR) is None
    # No SageMaker contract, so no name to set there: refused outright.
    with pytest.raises(NeuronConfigError, match=r"engine='vllm-neuron': this engine has no SageMaker"):
        engine.validate_sagemaker()


@pytest.mark.parametrize("backend", ["ec2", "sagemaker"])
def test_tgi_from_the_hub_lists_the_hub_id(backend: str) -> None:
    engine = ServingEngine.tgi()
    assert name_clients_see(engine, FROM_HUB, backend) == HUB_ID
    assert engine.served_name_caveat(FROM_HUB, model=HUB_ID) is None


@pytest.mark.parametrize(("backend", "path"), [("ec2", EC2_MODEL_DIR), ("sagemaker", SAGEMAKER_MODEL_DIR)])
def test_tgi_from_artifacts_cannot_set_the_name_and_says_so(backend: str, path: str) -> None:
    engine = ServingEngine.tgi()
    assert name_clients_see(engine, FROM_S3, backend) == path
    caveat = engine.served_name_caveat(FROM_S3, model=path)
    assert caveat is not None
    assert f"/v1/models lists '{path}', not 'meta-llama/Meta-Llama-3-8B-Instruct'" in caveat
    assert "accepts any model name in requests" in caveat


@pytest.mark.parametrize(
    "tag",
    [
        "0.10.2-optimum0.4.0-neuronx-py310-sdk2.26.0-ubuntu22.04",
        "0.9.0-optimum0.3.0-neuronx-py310-sdk2.25.0-ubuntu22.04",
    ],
)
def test_optimum_neuron_images_without_the_served_name_flag_are_refused(tag: str) -> None:
    engine = ServingEngine.optimum_neuron(image_tag=tag)
    with pytest.raises(
        NeuronConfigError,
        match=r"image_tag='0\.\d+\.\d-optimum0\.[34]\.0.*cannot set the served model name .*0\.4\.1",
    ):
        engine.validate(FROM_S3, PLAN)


def test_optimum_neuron_images_from_0_4_1_and_unversioned_mirrors_are_accepted() -> None:
    from cdk_neuron.serving.engines import ContainerImage

    ServingEngine.optimum_neuron(
        image_tag="0.11.0-optimum0.4.1-neuronx-py310-sdk2.26.0-ubuntu22.04"
    ).validate(FROM_S3, PLAN)
    mirror = ContainerImage("123456789012.dkr.ecr.us-east-1.amazonaws.com", "vllm-neuron", "2026-11-01")
    mirrored = ServingEngine.optimum_neuron(image=mirror)
    mirrored.validate(FROM_S3, PLAN)
    assert mirrored.validate_sagemaker() == mirror


@pytest.mark.parametrize("segment", ["llama*8b", "llama?", "llama[8b]"])
def test_optimum_neuron_refuses_a_served_name_its_entrypoint_would_glob(segment: str) -> None:
    # The DLC entrypoint appends its arguments unquoted (ARGS_CLI="${@}", docker/vllm/Dockerfile
    # @v0.4.5): a glob character would be expanded against the container's working directory.
    spec = ModelSpec(artifact_uri=f"s3://models/compiled/{segment}", parameters=8_000_000_000)
    with pytest.raises(NeuronConfigError, match=r"artifact_uri=.*splits its arguments on whitespace"):
        ServingEngine.optimum_neuron().validate(spec, PLAN)
