"""ServingEngine: pinned images, support status, and our settings mapped to each container."""

from __future__ import annotations

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.engines import (
    ContainerImage,
    OptimumNeuronEngine,
    ServingEngine,
    TgiEngine,
    VllmNeuronEngine,
)
from cdk_neuron.serving.model_spec import ModelSpec

SPEC = ModelSpec(model_id="meta-llama/Llama-3.1-8B-Instruct", parameters=8_000_000_000, batch_size=4)
PLAN = SPEC.plan("inf2.8xlarge")


@pytest.mark.parametrize(
    "factory", [ServingEngine.optimum_neuron, ServingEngine.vllm_neuron, ServingEngine.tgi]
)
@pytest.mark.parametrize("tag", ["latest", "LATEST", "", "has space"])
def test_unpinned_tags_are_refused(factory: object, tag: str) -> None:
    with pytest.raises(NeuronConfigError, match=r"image_tag="):
        factory(image_tag=tag)  # type: ignore[operator]


def test_each_factory_builds_its_engine_modules_class() -> None:
    # base.py imports no engine module: each factory finds the subclass that names itself so.
    assert type(ServingEngine.optimum_neuron()) is OptimumNeuronEngine
    assert type(ServingEngine.vllm_neuron()) is VllmNeuronEngine
    assert type(ServingEngine.tgi(sagemaker_image_tag="2.5.1-x")) is TgiEngine
    assert ServingEngine.tgi(sagemaker_image_tag="2.5.1-x").sagemaker_image.tag == "2.5.1-x"  # type: ignore[union-attr]
    with pytest.raises(LookupError, match="no serving engine named 'nope'"):
        ServingEngine._factory("nope")


def test_default_images_are_pinned_versions() -> None:
    for engine in (ServingEngine.optimum_neuron(), ServingEngine.vllm_neuron(), ServingEngine.tgi()):
        assert engine.image.tag not in ("", "latest")
        assert engine.image.neuron_sdk is not None or engine.name == "tgi"
    assert (
        ServingEngine.tgi().image.uri("us-east-1")
        == "ghcr.io/huggingface/text-generation-inference:3.2.3-neuron"
    )
    assert ServingEngine.optimum_neuron().image.uri("eu-west-1") == (
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/huggingface-vllm-inference-neuronx:"
        "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
    )


def test_support_status_follows_upstream() -> None:
    assert ServingEngine.optimum_neuron().status == "active"
    assert ServingEngine.tgi().status == "maintenance"
    assert "maintenance mode" in ServingEngine.tgi().status_note
    assert ServingEngine.vllm_neuron().status == "maintenance"


def test_health_path_and_port_per_engine() -> None:
    assert (ServingEngine.optimum_neuron().port, ServingEngine.optimum_neuron().health_path) == (
        8080,
        "/health",
    )
    assert (ServingEngine.tgi().port, ServingEngine.tgi().health_path) == (80, "/health")
    assert ServingEngine.vllm_neuron().port == 8080


def test_ecr_registries_are_recognised() -> None:
    image = ContainerImage("123456789012.dkr.ecr.us-west-2.amazonaws.com", "mirror/vllm", "1.2.3")
    assert image.is_private_ecr
    assert (image.ecr_account, image.ecr_region("us-east-1")) == ("123456789012", "us-west-2")
    assert not ContainerImage("public.ecr.aws/neuron", "x", "1").is_private_ecr
    assert ServingEngine.optimum_neuron().image.ecr_region("ap-south-1") == "ap-south-1"


def test_optimum_neuron_flags() -> None:
    args = ServingEngine.optimum_neuron().container_args(SPEC, PLAN, model="/model")
    assert args == (
        "--model",
        "/model",
        "--served_model_name",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--batch_size",
        "4",
        "--sequence_length",
        "4096",
        "--tensor_parallel_size",
        "2",
    )
    env = ServingEngine.optimum_neuron().sagemaker_environment(SPEC, PLAN, model="/opt/ml/model")
    assert env == {
        "SM_ON_MODEL": "/opt/ml/model",
        "SM_ON_SERVED_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct",
        "SM_ON_BATCH_SIZE": "4",
        "SM_ON_SEQUENCE_LENGTH": "4096",
        "SM_ON_TENSOR_PARALLEL_SIZE": "2",
    }


def test_vllm_neuron_flags_and_environment() -> None:
    engine = ServingEngine.vllm_neuron()
    args = engine.container_args(SPEC, PLAN, model="meta-llama/Llama-3.1-8B-Instruct")
    flags = dict(zip(args[3::2], args[4::2], strict=True))
    assert args[:3] == ("python3", "-m", "vllm.entrypoints.openai.api_server")
    assert flags["--tensor-parallel-size"] == "2"
    assert flags["--max-num-seqs"] == "4"
    assert flags["--max-model-len"] == "4096"
    assert flags["--device"] == "neuron"
    assert flags["--port"] == "8080"
    assert flags["--dtype"] == "bfloat16"
    assert engine.environment(SPEC, PLAN, model="x") == {
        "VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference"
    }


def test_tgi_is_configured_by_environment() -> None:
    spec = ModelSpec(
        artifact_uri="s3://models/llama",
        parameters=8_000_000_000,
        batch_size=2,
        compiled_batch_size=4,
        sequence_length=2048,
        compiled_sequence_length=4096,
        max_input_tokens=1024,
    )
    engine = ServingEngine.tgi()
    plan = spec.plan("inf2.8xlarge")
    assert engine.container_args(spec, plan, model="/model") == ()
    assert engine.environment(spec, plan, model="/model") == {
        "MODEL_ID": "/model",
        "HF_NUM_CORES": "2",
        "HF_AUTO_CAST_TYPE": "bf16",
        "MAX_BATCH_SIZE": "2",
        "MAX_TOTAL_TOKENS": "2048",
        "MAX_INPUT_TOKENS": "1024",
        "MAX_BATCH_PREFILL_TOKENS": "2048",
        "HF_BATCH_SIZE": "4",
        "HF_SEQUENCE_LENGTH": "4096",
    }
    assert engine.sagemaker_environment(spec, plan, model="/opt/ml/model")["HF_MODEL_ID"] == "/opt/ml/model"


def test_vllm_serves_only_the_compiled_shape() -> None:
    spec = ModelSpec(
        artifact_uri="s3://models/llama", parameters=8_000_000_000, batch_size=2, compiled_batch_size=4
    )
    with pytest.raises(
        NeuronConfigError, match=r"batch_size=2: vLLM on Neuron serves exactly the compiled shape"
    ):
        ServingEngine.optimum_neuron().validate(spec, spec.plan("inf2.8xlarge"))
    ServingEngine.tgi().validate(spec, spec.plan("inf2.8xlarge"))  # TGI accepts <= compiled


def test_tgi_casts_to_16_bit_only() -> None:
    spec = ModelSpec(model_id="org/m", parameters=8_000_000_000, dtype="int8")
    with pytest.raises(NeuronConfigError, match=r"dtype='int8': TGI's Neuron backend casts to fp16 or bf16"):
        ServingEngine.tgi().validate(spec, spec.plan("inf2.8xlarge"))


def test_tgi_is_refused_on_trainium2() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"instance_type='trn2.48xlarge': TGI's Neuron backend supports"
    ):
        ServingEngine.tgi().validate(SPEC, SPEC.plan("trn2.48xlarge"))


def test_vllm_neuron_after_sdk_2_31_is_refused_on_inf2() -> None:
    engine = ServingEngine.vllm_neuron(image_tag="0.24.0-neuronx-py312-sdk2.32.0-ubuntu24.04")
    with pytest.raises(
        NeuronConfigError, match=r"image_tag='0.24.0.*Trn2/Trn3 only; inf2.8xlarge stays on NxD"
    ):
        engine.validate(SPEC, PLAN)
    engine.validate(SPEC, SPEC.plan("trn2.48xlarge"))


def test_engines_without_a_sagemaker_contract_are_refused_there() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"engine='vllm-neuron': this engine has no SageMaker serving"
    ):
        ServingEngine.vllm_neuron().validate_sagemaker()
    mirror = ContainerImage("registry.example.com", "vllm", "1.0")
    with pytest.raises(NeuronConfigError, match=r"engine='optimum-neuron': this engine has no SageMaker"):
        ServingEngine.optimum_neuron(image=mirror).validate_sagemaker()
    assert ServingEngine.tgi().validate_sagemaker() == ServingEngine.tgi().sagemaker_image


def test_an_image_and_a_tag_together_are_refused() -> None:
    mirror = ContainerImage("123456789012.dkr.ecr.us-east-1.amazonaws.com", "vllm", "1.0")
    with pytest.raises(
        NeuronConfigError, match=r"image_tag='2.0': give either image_tag .* or image, not both"
    ):
        ServingEngine.optimum_neuron("2.0", image=mirror)
    assert ServingEngine.optimum_neuron(image=mirror).sagemaker_image == mirror
    assert ServingEngine.vllm_neuron("0.9.2-neuronx-py310-sdk2.25.1-ubuntu22.04").image.tag.startswith(
        "0.9.2"
    )


# The variables TGI's Neuron entrypoint checks before it leaves the environment alone (transcribed:
# huggingface/text-generation-inference backends/neuron/tgi_env.py @v3.2.3, `env_vars =
# tgi_server_env_vars + tgi_router_env_vars`; the same list in tgi_entry_point.py @v3.3.4).
TGI_ENTRYPOINT_SKIPS_WHEN_ALL_SET = (
    "HF_NUM_CORES",
    "HF_AUTO_CAST_TYPE",
    "MAX_BATCH_SIZE",
    "MAX_TOTAL_TOKENS",
    "MAX_INPUT_TOKENS",
    "MAX_BATCH_PREFILL_TOKENS",
)


@pytest.mark.parametrize("sagemaker", [False, True])
def test_tgi_keeps_a_served_shape_smaller_than_the_compiled_one(sagemaker: bool) -> None:
    """With one of the six unset, TGI 3.2.3 refuses MAX_BATCH_SIZE/MAX_TOTAL_TOKENS that differ from the
    compiled shape and 3.3.x overwrites them with it: every one must be set."""
    spec = ModelSpec(
        artifact_uri="s3://models/llama",
        parameters=8_000_000_000,
        batch_size=2,
        compiled_batch_size=4,
        sequence_length=2048,
        compiled_sequence_length=4096,
    )
    plan = spec.plan("inf2.8xlarge")
    engine = ServingEngine.tgi()
    env = (
        engine.sagemaker_environment(spec, plan, model="/opt/ml/model")
        if sagemaker
        else engine.environment(spec, plan, model="/model")
    )
    assert all(env.get(name) for name in TGI_ENTRYPOINT_SKIPS_WHEN_ALL_SET), env
    assert (env["MAX_BATCH_SIZE"], env["MAX_TOTAL_TOKENS"]) == ("2", "2048")
    # TGI's defaults when not given: half the sequence for the prompt, batch x prompt for prefill.
    assert (env["MAX_INPUT_TOKENS"], env["MAX_BATCH_PREFILL_TOKENS"]) == ("1024", "2048")


def test_tgi_needs_room_for_a_prompt_and_a_generated_token() -> None:
    spec = ModelSpec(model_id="org/m", parameters=1_000_000_000, sequence_length=1)
    with pytest.raises(NeuronConfigError, match=r"sequence_length=1: TGI needs room"):
        ServingEngine.tgi().validate(spec, spec.plan("inf2.xlarge"))


def test_vllm_neuron_loads_precompiled_artifacts_instead_of_compiling() -> None:
    """NxD Inference's vLLM loader reads a precompiled model only from NEURON_COMPILED_ARTIFACTS
    (aws-neuron-sdk vllm-user-guide.rst); without it every boot compiles into the read-only /model."""
    engine = ServingEngine.vllm_neuron()
    spec = ModelSpec(
        model_id="meta-llama/Llama-3.1-8B-Instruct", artifact_uri="s3://models/l8b", parameters=8_000_000_000
    )
    assert engine.environment(spec, PLAN, model="/model") == {
        "VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference",
        "NEURON_COMPILED_ARTIFACTS": "/model",
    }
    # From the Hub there is nothing precompiled to point at.
    assert "NEURON_COMPILED_ARTIFACTS" not in engine.environment(SPEC, PLAN, model=SPEC.served_model_name)


def test_each_factory_returns_its_engine_modules_class() -> None:
    from cdk_neuron.serving.engines import OptimumNeuronEngine, TgiEngine, VllmNeuronEngine

    assert type(ServingEngine.optimum_neuron()) is OptimumNeuronEngine
    assert type(ServingEngine.vllm_neuron()) is VllmNeuronEngine
    assert type(ServingEngine.tgi()) is TgiEngine
    assert ServingEngine.tgi(sagemaker_image_tag="2.6.0-neuronx").sagemaker_image == ContainerImage(
        "763104351884.dkr.ecr.{region}.amazonaws.com", "huggingface-pytorch-tgi-inference", "2.6.0-neuronx"
    )
    with pytest.raises(TypeError, match="abstract"):
        ServingEngine(image=ServingEngine.tgi().image, sagemaker_image=None)  # type: ignore[abstract]


def test_an_engine_is_one_subclass_with_no_name_switch_anywhere() -> None:
    """Serving code asks the engine (polymorphism); nothing compares engine or backend names."""
    import pathlib
    import re

    import cdk_neuron.serving

    root = pathlib.Path(cdk_neuron.serving.__file__).parent
    switch = re.compile(
        r"""(\bname|\bkind|\bbackend)\s*[!=]=\s*["']|==\s*["'](tgi|vllm-neuron|optimum-neuron|ec2|sagemaker)["']"""
    )
    offenders = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if switch.search(line)
    ]
    assert offenders == []
