"""tgi: Text Generation Inference with its Neuron backend.

TGI is in maintenance mode upstream (only minor fixes; maintenance notice in the
huggingface/text-generation-inference README @db931fc, 2026-01-08); it still works on Inf2 and Trn1 and
is marked ``maintenance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines.base import EngineStatus, ServingEngine
from cdk_neuron.serving.engines.image import DLC_REGISTRY, ContainerImage, resolve_image
from cdk_neuron.serving.model_spec import ModelSpec

# TGI-DOC (docs/source/backends/neuron.md) for the EC2 image; optimum-neuron docs/source/containers.mdx
# for the SageMaker DLC (SageMaker pulls only from Amazon ECR).
TGI_REGISTRY = "ghcr.io/huggingface"
TGI_REPOSITORY = "text-generation-inference"
TGI_TAG = "3.2.3-neuron"
TGI_SAGEMAKER_REPOSITORY = "huggingface-pytorch-tgi-inference"
TGI_SAGEMAKER_TAG = "2.5.1-optimum3.3.4-neuronx-py310-ubuntu22.04"

_TGI_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}


def _dtype(spec: ModelSpec) -> str | None:
    return _TGI_DTYPES.get(spec.dtype.lower())


@dataclass(frozen=True)
class TgiEngine(ServingEngine):
    """Text Generation Inference with the Neuron backend (maintenance mode upstream).

    Configured entirely through environment variables (``MODEL_ID``, ``HF_NUM_CORES``,
    ``HF_AUTO_CAST_TYPE``, ``MAX_BATCH_SIZE``, ``MAX_TOTAL_TOKENS``, ``MAX_INPUT_TOKENS``,
    ``MAX_BATCH_PREFILL_TOKENS``; all six are set so TGI's entrypoint keeps the served shape).
    Supports Inferentia2 and Trainium 1 (TGI-DOC). Build it with :meth:`create` or
    ``ServingEngine.tgi()``.
    """

    name: ClassVar[str] = "tgi"
    port: ClassVar[int] = 80
    status: ClassVar[EngineStatus] = "maintenance"
    status_note: ClassVar[str] = (
        "TGI is in maintenance mode upstream: minor fixes only; Hugging Face recommends "
        "vLLM (huggingface/text-generation-inference README @db931fc, 2026-01-08)"
    )
    supports_network_isolation: ClassVar[bool] = True
    concurrency_metrics: ClassVar[tuple[str, ...]] = ("tgi_batch_current_size", "tgi_queue_size")

    @classmethod
    def create(
        cls,
        image_tag: str | None = None,
        *,
        sagemaker_image_tag: str | None = None,
        image: ContainerImage | None = None,
    ) -> TgiEngine:
        """The engine on the pinned images, other tags of them, or another EC2 image.

        :param image_tag: tag of ``ghcr.io/huggingface/text-generation-inference`` (EC2). Default:
            ``3.2.3-neuron``.
        :param sagemaker_image_tag: tag of the Hugging Face TGI Neuron DLC in ECR (SageMaker). Default:
            ``2.5.1-optimum3.3.4-neuronx-py310-ubuntu22.04``.
        :param image: a whole EC2 image instead. Default: the GitHub Container Registry image.
        """
        return cls(
            image=resolve_image(image, image_tag, ContainerImage(TGI_REGISTRY, TGI_REPOSITORY, TGI_TAG)),
            sagemaker_image=ContainerImage(
                DLC_REGISTRY, TGI_SAGEMAKER_REPOSITORY, sagemaker_image_tag or TGI_SAGEMAKER_TAG
            ),
        )

    def check_instance(self, instance: NeuronInstance) -> None:
        if instance.chip == "trainium2":
            raise NeuronConfigError(
                "instance_type",
                instance.name,
                "TGI's Neuron backend supports Inferentia2 and Trainium 1 only (TGI-DOC); use "
                "ServingEngine.optimum_neuron() or ServingEngine.vllm_neuron() on Trn2",
            )

    def check_model(self, spec: ModelSpec) -> None:
        if _dtype(spec) is None:
            raise NeuronConfigError(
                "dtype", spec.dtype, "TGI's Neuron backend casts to fp16 or bf16 only (HF_AUTO_CAST_TYPE)"
            )
        if spec.max_input_tokens is None and spec.sequence_length < 2:
            raise NeuronConfigError(
                "sequence_length",
                spec.sequence_length,
                "TGI needs room for at least one prompt token and one generated token; use >= 2",
            )

    def container_args(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> tuple[str, ...]:
        return ()  # TGI reads everything from its environment

    def environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        env = super().environment(spec, plan, model=model)
        env.update(self._environment(spec, plan, model_variable="MODEL_ID", model=model))
        return env

    def sagemaker_environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        # The SageMaker TGI DLC reads HF_MODEL_ID (optimum-neuron SageMaker tutorial).
        return self._environment(spec, plan, model_variable="HF_MODEL_ID", model=model)

    @staticmethod
    def _environment(
        spec: ModelSpec, plan: ServingPlan, *, model_variable: str, model: str
    ) -> dict[str, str]:
        dtype = _dtype(spec)
        assert dtype is not None
        # TGI's Neuron entrypoint (backends/neuron/tgi_env.py @v3.2.3 a1f3ebe1, the EC2 image 3.2.3-neuron;
        # server/text_generation_server/tgi_env.py + tgi_entry_point.py @v3.3.4 d4bd5cac) leaves the
        # environment alone only when all six of HF_NUM_CORES, HF_AUTO_CAST_TYPE, MAX_BATCH_SIZE,
        # MAX_TOTAL_TOKENS, MAX_INPUT_TOKENS and MAX_BATCH_PREFILL_TOKENS are set. Otherwise 3.2.3 requires
        # MAX_BATCH_SIZE and MAX_TOTAL_TOKENS to *equal* the compiled batch and sequence length (else
        # "Invalid neuron config and env" at start-up; docs/source/backends/neuron.md @v3.2.3: "must be
        # set to"), and 3.3.x overwrites them with the compiled values. Setting all six is what lets a
        # fleet serve a smaller batch or shorter sequences than the artifact was compiled for; the
        # server only refuses a batch larger than the compiled one (generator.py warmup, @v3.2.3).
        max_input_tokens = spec.max_input_tokens or spec.sequence_length // 2  # TGI's own default: half
        return {
            model_variable: model,
            "HF_NUM_CORES": str(plan.tensor_parallel),
            "HF_AUTO_CAST_TYPE": dtype,
            "MAX_BATCH_SIZE": str(spec.batch_size),
            "MAX_TOTAL_TOKENS": str(spec.sequence_length),
            "MAX_INPUT_TOKENS": str(max_input_tokens),
            # TGI's docs: "should be set to batch_size * max-input-length" (efficient prefill).
            "MAX_BATCH_PREFILL_TOKENS": str(spec.batch_size * max_input_tokens),
            # The compiled shape, for images whose entrypoint reads them (the SageMaker tutorials of
            # optimum-neuron v0.2.0 document HF_BATCH_SIZE and HF_SEQUENCE_LENGTH); TGI 3.x ignores them.
            "HF_BATCH_SIZE": str(spec.graph_batch_size),
            "HF_SEQUENCE_LENGTH": str(spec.graph_sequence_length),
        }

    def listed_model_name(self, spec: ModelSpec, *, model: str) -> str:
        """TGI has no served-name setting: ``/v1/models`` reports its ``MODEL_ID``
        (huggingface/text-generation-inference ``router/src/server.rs`` @v3.2.3 a1f3ebe1,
        ``openai_get_model_info``: ``id: info.model_id``; for a local path that is the path)."""
        return model

    def served_name_caveat(self, spec: ModelSpec, *, model: str) -> str | None:
        listed = self.listed_model_name(spec, model=model)
        if listed == spec.served_model_name:
            return None
        # TGI chat completions echo the request's "model" and never check it (server.rs @v3.2.3,
        # chat_completions: `Some("tgi") | None => info.model_id`, `Some(m_id) => m_id`), so
        # requests naming served_model_name still work.
        return (
            f"TGI cannot set a served model name: /v1/models lists {listed!r}, not "
            f"{spec.served_model_name!r}. TGI accepts any model name in requests (chat completions echo "
            f"it), so clients may still send {spec.served_model_name!r}; use ServingEngine.optimum_neuron() "
            "to have the API list it"
        )


__all__ = [
    "TGI_REGISTRY",
    "TGI_REPOSITORY",
    "TGI_SAGEMAKER_REPOSITORY",
    "TGI_SAGEMAKER_TAG",
    "TGI_TAG",
    "TgiEngine",
]
