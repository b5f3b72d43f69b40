"""optimum-neuron: Hugging Face's vLLM DLC with the optimum-neuron platform plugin (the default engine).

optimum-neuron is actively developed and is the maintained LLM path for Inferentia2
(huggingface/optimum-neuron pyproject.toml @021989d: a ``vllm`` extra and an ``optimum_neuron`` entry
point under ``vllm.platform_plugins``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines.base import EngineStatus, ServingEngine, check_compiled_shape
from cdk_neuron.serving.engines.image import DLC_REGISTRY, ContainerImage, resolve_image
from cdk_neuron.serving.model_spec import ModelSpec

# ECS-TD (AWS ECS Neuron task-definition example) and the optimum-neuron container docs.
OPTIMUM_NEURON_REPOSITORY = "huggingface-vllm-inference-neuronx"
OPTIMUM_NEURON_TAG = "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
# `optimum-cli neuron serve --served_model_name` first shipped in optimum-neuron v0.4.1
# (huggingface/optimum-neuron commit e7489948 "feat(vllm): support served model name arg when
# serving", 2025-10-16; tag v0.4.1 @a3ded34a, 2025-10-23). v0.4.0 has no such flag and "the
# optimum-cli uses a strict parsing and does not allow unknown args" (serve.py @v0.4.5), so an older
# image would exit on the argument instead of serving.
OPTIMUM_SERVED_MODEL_NAME_SINCE = (0, 4, 1)
# A word the DLC entrypoint's unquoted expansion leaves alone: no whitespace, no glob characters.
UNSPLIT_WORD = re.compile(r"[^\s*?\[\]]+")


@dataclass(frozen=True)
class OptimumNeuronEngine(ServingEngine):
    """Hugging Face's vLLM DLC with the optimum-neuron plugin (active; the default).

    The container's entrypoint runs ``optimum-cli neuron serve`` on port 8080 and turns every
    ``SM_ON_<FLAG>`` environment variable into ``--<flag>`` (optimum-neuron ``docker/vllm``), so EC2
    passes flags and SageMaker passes the same settings as ``SM_ON_*`` variables. Hub models are
    served only from a precompiled or cached configuration (no ``--allow_non_cached_model``), so an
    instance never spends its start-up compiling. Build it with :meth:`create` or
    ``ServingEngine.optimum_neuron()``.
    """

    name: ClassVar[str] = "optimum-neuron"
    port: ClassVar[int] = 8080
    status: ClassVar[EngineStatus] = "active"
    status_note: ClassVar[str] = (
        "optimum-neuron is actively developed; its vLLM platform plugin is the maintained "
        "LLM serving path on Inferentia2 (huggingface/optimum-neuron pyproject.toml @021989d)"
    )
    supports_network_isolation: ClassVar[bool] = True
    uses_vllm: ClassVar[bool] = True
    concurrency_metrics: ClassVar[tuple[str, ...]] = (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
    )

    @classmethod
    def create(
        cls, image_tag: str | None = None, *, image: ContainerImage | None = None
    ) -> OptimumNeuronEngine:
        """The engine on the pinned DLC, another tag of it, or another image.

        :param image_tag: tag in ``763104351884.dkr.ecr.<region>.amazonaws.com/huggingface-vllm-inference-neuronx``.
            Default: ``0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04``.
        :param image: a whole image instead (e.g. a mirror in your own ECR; not with ``image_tag``).
            SageMaker can run it only from private ECR. Default: the DLC.
        """
        resolved = resolve_image(
            image, image_tag, ContainerImage(DLC_REGISTRY, OPTIMUM_NEURON_REPOSITORY, OPTIMUM_NEURON_TAG)
        )
        return cls(image=resolved, sagemaker_image=resolved if resolved.is_private_ecr else None)

    def check_model(self, spec: ModelSpec) -> None:
        check_compiled_shape(spec)
        self._check_served_model_name_support()
        self._check_survives_word_splitting(spec)

    @staticmethod
    def _check_survives_word_splitting(spec: ModelSpec) -> None:
        """Refuse a served model name the DLC entrypoint would split or glob-expand.

        The entrypoint keeps its arguments (and the ``SM_ON_*`` flags) in one string and appends it
        unquoted to ``optimum-cli neuron serve`` (optimum-neuron ``docker/vllm/Dockerfile`` @v0.4.5
        abf59858: ``ARGS_CLI="${@}"``), so a name with whitespace becomes several arguments and one
        with ``*``, ``?`` or ``[`` may be replaced by file names. A Hub id cannot contain them; an
        artifact prefix's last segment (the name when there is no ``model_id``) can.
        """
        name = spec.served_model_name
        if UNSPLIT_WORD.fullmatch(name) is None:
            raise NeuronConfigError(
                "artifact_uri" if spec.model_id is None else "model_id",
                name,
                "the optimum-neuron image splits its arguments on whitespace and expands glob "
                "characters, so the served model name must have neither: set model_id to a Hub id "
                "naming the artifacts, or use a prefix whose last segment has none",
            )

    def _check_served_model_name_support(self) -> None:
        """Refuse an optimum-neuron image too old to take ``--served_model_name``.

        Without the flag vLLM registers the model under its path (``/model``, ``/opt/ml/model``) and
        answers 404 to requests naming ``ModelSpec.served_model_name``. Tags that name no
        optimum-neuron release (a private mirror) are trusted.
        """
        version = self.image.optimum_neuron_version
        if version is not None and version < OPTIMUM_SERVED_MODEL_NAME_SINCE:
            since = ".".join(map(str, OPTIMUM_SERVED_MODEL_NAME_SINCE))
            raise NeuronConfigError(
                "image_tag",
                self.image.tag,
                f"optimum-neuron {'.'.join(map(str, version))} cannot set the served model name "
                f"(--served_model_name arrived in {since}), so clients could not use the model id they "
                f"are given; use an image with optimum{since} or later (default {OPTIMUM_NEURON_TAG})",
            )

    def container_args(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> tuple[str, ...]:
        # optimum-cli neuron serve flags (optimum-neuron optimum/commands/neuron/serve.py @v0.4.5
        # abf59858, 2026-02-11); the DLC entrypoint already adds --port 8080 (docker/vllm/Dockerfile).
        # Without --served_model_name vLLM lists and accepts the model only under --model ("If not
        # specified, the model name will be the same as the `--model` argument", serve.py help), i.e.
        # /model for S3 artifacts. The underscore spelling is the one every release since 0.4.1
        # accepts (0.4.5 also takes --served-model-name).
        return (
            "--model",
            model,
            "--served_model_name",
            spec.served_model_name,
            "--batch_size",
            str(spec.graph_batch_size),
            "--sequence_length",
            str(spec.graph_sequence_length),
            "--tensor_parallel_size",
            str(plan.tensor_parallel),
        )

    def sagemaker_environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        # The DLC entrypoint turns each SM_ON_<NAME>=value into "--<name> value", lowercasing the
        # name and keeping underscores (optimum-neuron docker/vllm/Dockerfile @v0.4.5), so
        # SM_ON_SERVED_MODEL_NAME becomes --served_model_name.
        return {
            "SM_ON_MODEL": model,
            "SM_ON_SERVED_MODEL_NAME": spec.served_model_name,
            "SM_ON_BATCH_SIZE": str(spec.graph_batch_size),
            "SM_ON_SEQUENCE_LENGTH": str(spec.graph_sequence_length),
            "SM_ON_TENSOR_PARALLEL_SIZE": str(plan.tensor_parallel),
        }

    def listed_model_name(self, spec: ModelSpec, *, model: str) -> str:
        """vLLM lists ``--served_model_name`` and answers 404 to any other name in a request
        (vllm-project/vllm ``vllm/entrypoints/openai/serving_engine.py`` @0030b9ff, ``_check_model``:
        "The model `...` does not exist.", HTTP 404)."""
        return spec.served_model_name

    def served_name_caveat(self, spec: ModelSpec, *, model: str) -> str | None:
        return None


__all__ = [
    "OPTIMUM_NEURON_REPOSITORY",
    "OPTIMUM_NEURON_TAG",
    "OPTIMUM_SERVED_MODEL_NAME_SINCE",
    "OptimumNeuronEngine",
]
