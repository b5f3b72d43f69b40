"""vllm-neuron: AWS's vLLM Neuron DLC (vLLM with the Neuron plugin on NxD Inference).

NxD Inference is in maintenance and frozen at Neuron SDK 2.31 for Inf2 and Trn1; later vLLM-Neuron
releases (no NxDI) support only Trn2/Trn3, so images past SDK 2.31 are refused on Inf2/Trn1 (Neuron
announcements "NxD Inference and NxD Core maintenance support with Neuron SDK 2.31",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-nxdi-maintenance-support-2-31.html,
and "Announcing end of support for the NxD Inference library and NxD Core Inference APIs on Trn2
and Trn3 starting in Neuron 2.34", posted 2026-10-16,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-eos-nxdi-nxd-core-inference.html).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines.base import EngineStatus, ServingEngine, check_compiled_shape
from cdk_neuron.serving.engines.image import ContainerImage, resolve_image
from cdk_neuron.serving.model_spec import ModelSpec

# aws-neuron-sdk containers/get-started/quickstart-configure-deploy-dlc.rst (run on inf2.48xlarge).
VLLM_NEURON_REGISTRY = "public.ecr.aws/neuron"
VLLM_NEURON_REPOSITORY = "pytorch-inference-vllm-neuronx"
VLLM_NEURON_TAG = "0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04"
# NxD Inference stays at Neuron SDK 2.31 on Inf2 and Trn1 (Neuron announcement
# announce-eos-nxdi-nxd-core-inference, posted 2026-10-16; URL in the module docstring).
_NXDI_LAST_SDK_FOR_INF2_TRN1 = (2, 31)

_VLLM_DTYPES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "fp32": "float32",
    "float32": "float32",
}


def _dtype(spec: ModelSpec) -> str | None:
    return _VLLM_DTYPES.get(spec.dtype.lower())


@dataclass(frozen=True)
class VllmNeuronEngine(ServingEngine):
    """AWS's vLLM Neuron DLC (vLLM with the Neuron plugin on NxD Inference; maintenance on Inf2).

    EC2 only: the image is on ECR Public and has no documented SageMaker serving contract. Images
    built for Neuron SDK releases after 2.31 (vLLM-Neuron without NxD Inference) support only
    Trn2/Trn3 and are refused on Inf2 and Trn1. Build it with :meth:`create` or
    ``ServingEngine.vllm_neuron()``.
    """

    name: ClassVar[str] = "vllm-neuron"
    port: ClassVar[int] = 8080
    status: ClassVar[EngineStatus] = "maintenance"
    status_note: ClassVar[str] = (
        "NxD Inference (the vLLM Neuron plugin's backend on Inf2/Trn1) is in maintenance, "
        "frozen at Neuron SDK 2.31 for Inf2 and Trn1; newer vLLM-Neuron releases are Trn2/Trn3 only "
        "(AWS Neuron announcements on awsdocs-neuron.readthedocs-hosted.com: "
        "announce-nxdi-maintenance-support-2-31; announce-eos-nxdi-nxd-core-inference, 2026-10-16)"
    )
    supports_network_isolation: ClassVar[bool] = False
    uses_vllm: ClassVar[bool] = True
    concurrency_metrics: ClassVar[tuple[str, ...]] = (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
    )
    fixed_environment: ClassVar[tuple[tuple[str, str], ...]] = (
        ("VLLM_NEURON_FRAMEWORK", "neuronx-distributed-inference"),
    )

    @classmethod
    def create(cls, image_tag: str | None = None, *, image: ContainerImage | None = None) -> VllmNeuronEngine:
        """The engine on the pinned DLC, another tag of it, or another image.

        :param image_tag: tag in ``public.ecr.aws/neuron/pytorch-inference-vllm-neuronx``.
            Default: ``0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04``.
        :param image: a whole image instead. Default: the ECR Public DLC.
        """
        resolved = resolve_image(
            image, image_tag, ContainerImage(VLLM_NEURON_REGISTRY, VLLM_NEURON_REPOSITORY, VLLM_NEURON_TAG)
        )
        return cls(image=resolved, sagemaker_image=None)

    def check_instance(self, instance: NeuronInstance) -> None:
        sdk = self.image.neuron_sdk
        if (
            instance.chip in ("inferentia2", "trainium")
            and sdk is not None
            and sdk > _NXDI_LAST_SDK_FOR_INF2_TRN1
        ):
            raise NeuronConfigError(
                "image_tag",
                self.image.tag,
                f"vLLM-Neuron images after Neuron SDK 2.31 support Trn2/Trn3 only; {instance.name} stays on "
                f"NxD Inference <= 2.31 (maintenance). Use ServingEngine.vllm_neuron() (default tag "
                f"{VLLM_NEURON_TAG}) or ServingEngine.optimum_neuron()",
            )

    def check_model(self, spec: ModelSpec) -> None:
        check_compiled_shape(spec)
        if _dtype(spec) is None:
            raise NeuronConfigError("dtype", spec.dtype, "vLLM Neuron serves bf16, fp16 or fp32 weights")

    def container_args(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> tuple[str, ...]:
        dtype = _dtype(spec)
        assert dtype is not None
        return (
            "python3",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--served-model-name",
            spec.served_model_name,
            "--tensor-parallel-size",
            str(plan.tensor_parallel),
            "--max-num-seqs",
            str(spec.graph_batch_size),
            "--max-model-len",
            str(spec.graph_sequence_length),
            "--dtype",
            dtype,
            "--device",
            "neuron",
            "--port",
            str(self.port),
        )

    def environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        env = super().environment(spec, plan, model=model)
        if spec.precompiled:
            # vLLM on NxD Inference loads a precompiled model only from NEURON_COMPILED_ARTIFACTS; unset,
            # it compiles into "a neuron-compiled-artifacts subdirectory in the directory of your model
            # checkpoint" (aws-neuron/aws-neuron-sdk libraries/nxd-inference/developer_guides/
            # vllm-user-guide.rst @81ce03ae, 2026-07-20), i.e. every boot would compile (~15 min for a
            # 15 GB model, same page) into /model, which is mounted read-only.
            env["NEURON_COMPILED_ARTIFACTS"] = model
        return env

    def listed_model_name(self, spec: ModelSpec, *, model: str) -> str:
        """vLLM lists ``--served-model-name`` and answers 404 to any other name in a request
        (vllm-project/vllm ``vllm/entrypoints/openai/serving_engine.py`` @0030b9ff, ``_check_model``)."""
        return spec.served_model_name

    def served_name_caveat(self, spec: ModelSpec, *, model: str) -> str | None:
        return None


__all__ = ["VLLM_NEURON_REGISTRY", "VLLM_NEURON_REPOSITORY", "VLLM_NEURON_TAG", "VllmNeuronEngine"]
