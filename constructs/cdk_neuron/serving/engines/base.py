"""The :class:`ServingEngine` every engine module implements (plain Python, no ``aws_cdk``).

A serving engine is a value object: a pinned container image (and the one SageMaker runs), the port
and health path the container answers on, its upstream support status, and the mapping of a
:class:`~cdk_neuron.serving.model_spec.ModelSpec` and :class:`~cdk_neuron.planner.ServingPlan` onto
that container's command-line flags (EC2) or environment (SageMaker, which cannot pass arguments to a
model container). Each engine is one module beside this one; adding an engine is adding a module
with a subclass.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from cdk_neuron.catalog import NeuronInstance, get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines.image import ContainerImage
from cdk_neuron.serving.model_spec import ModelSpec

EngineStatus = Literal["active", "maintenance"]


@dataclass(frozen=True)
class ServingEngine(abc.ABC):
    """A Neuron serving container and how cdk-neuron configures it.

    Build one with :meth:`optimum_neuron` (the default), :meth:`vllm_neuron` or :meth:`tgi`; each
    returns the engine module's subclass (:class:`~cdk_neuron.serving.engines.OptimumNeuronEngine`,
    :class:`~cdk_neuron.serving.engines.VllmNeuronEngine`, :class:`~cdk_neuron.serving.engines.TgiEngine`).

    :param image: the image EC2 instances run. Required.
    :param sagemaker_image: the image SageMaker runs (must be private ECR), or None if the engine has
        no SageMaker serving contract. Required.

    Each subclass states, as class attributes:

    :ivar name: ``"optimum-neuron"``, ``"vllm-neuron"`` or ``"tgi"``.
    :ivar port: the port the container listens on (inside the container).
    :ivar health_path: HTTP path that answers 200 once the model is loaded. Default: ``"/health"``.
    :ivar status: ``"active"`` or ``"maintenance"`` upstream.
    :ivar status_note: why, with the source.
    :ivar supports_network_isolation: whether the SageMaker container can run with no network (it
        then needs precompiled artifacts from S3).
    :ivar uses_vllm: whether the server is vLLM (which serves exactly the compiled shape).
    :ivar concurrency_metrics: Prometheus metrics on ``metrics_path`` whose sum is the replica's
        in-flight plus queued requests (the concurrency the EC2 fleet scales on).
    :ivar metrics_path: where the container serves Prometheus metrics. Default: ``"/metrics"``.
    :ivar fixed_environment: environment every container of this engine gets on EC2. Default: none.
    """

    image: ContainerImage
    sagemaker_image: ContainerImage | None

    name: ClassVar[str]
    port: ClassVar[int]
    health_path: ClassVar[str] = "/health"
    status: ClassVar[EngineStatus]
    status_note: ClassVar[str]
    supports_network_isolation: ClassVar[bool]
    uses_vllm: ClassVar[bool] = False
    concurrency_metrics: ClassVar[tuple[str, ...]]
    metrics_path: ClassVar[str] = "/metrics"
    fixed_environment: ClassVar[tuple[tuple[str, str], ...]] = ()
    create: ClassVar[Callable[..., ServingEngine]]
    """Each subclass's own factory (a classmethod with its engine's image options)."""

    # ---------------------------------------------------------------------------------------
    # Factories: each returns the subclass of the engine module that names itself so. The package
    # (engines/__init__) imports every engine module, and a module can only be reached through
    # it, so each subclass exists by the time a factory runs; this module imports none of them.
    # ---------------------------------------------------------------------------------------

    @staticmethod
    def _factory(name: str) -> Callable[..., ServingEngine]:
        """The ``create`` of the engine class whose ``name`` is ``name`` (a subclass, at any depth)."""
        pending = list(ServingEngine.__subclasses__())
        while pending:
            engine = pending.pop()
            if getattr(engine, "name", None) == name:
                return engine.create
            pending.extend(engine.__subclasses__())
        raise LookupError(f"no serving engine named {name!r} is loaded")

    @staticmethod
    def optimum_neuron(image_tag: str | None = None, *, image: ContainerImage | None = None) -> ServingEngine:
        """Hugging Face's vLLM DLC with the optimum-neuron plugin (active; the default).

        See :meth:`OptimumNeuronEngine.create <cdk_neuron.serving.engines.OptimumNeuronEngine.create>`.

        :param image_tag: tag in ``763104351884.dkr.ecr.<region>.amazonaws.com/huggingface-vllm-inference-neuronx``.
            Default: ``0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04``.
        :param image: a whole image instead (e.g. a mirror in your own ECR; not with ``image_tag``).
            Default: the DLC.
        """
        return ServingEngine._factory("optimum-neuron")(image_tag, image=image)

    @staticmethod
    def vllm_neuron(image_tag: str | None = None, *, image: ContainerImage | None = None) -> ServingEngine:
        """AWS's vLLM Neuron DLC (vLLM with the Neuron plugin on NxD Inference; maintenance on Inf2).

        See :meth:`VllmNeuronEngine.create <cdk_neuron.serving.engines.VllmNeuronEngine.create>`.

        :param image_tag: tag in ``public.ecr.aws/neuron/pytorch-inference-vllm-neuronx``.
            Default: ``0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04``.
        :param image: a whole image instead. Default: the ECR Public DLC.
        """
        return ServingEngine._factory("vllm-neuron")(image_tag, image=image)

    @staticmethod
    def tgi(
        image_tag: str | None = None,
        *,
        sagemaker_image_tag: str | None = None,
        image: ContainerImage | None = None,
    ) -> ServingEngine:
        """Text Generation Inference with the Neuron backend (maintenance mode upstream).

        See :meth:`TgiEngine.create <cdk_neuron.serving.engines.TgiEngine.create>`.

        :param image_tag: tag of ``ghcr.io/huggingface/text-generation-inference`` (EC2). Default:
            ``3.2.3-neuron``.
        :param sagemaker_image_tag: tag of the Hugging Face TGI Neuron DLC in ECR (SageMaker). Default:
            ``2.5.1-optimum3.3.4-neuronx-py310-ubuntu22.04``.
        :param image: a whole EC2 image instead. Default: the GitHub Container Registry image.
        """
        return ServingEngine._factory("tgi")(image_tag, sagemaker_image_tag=sagemaker_image_tag, image=image)

    # ---------------------------------------------------------------------------------------
    # Validation
    # ---------------------------------------------------------------------------------------

    def validate(self, spec: ModelSpec, plan: ServingPlan) -> None:
        """Refuse a model or instance this engine cannot serve (on either backend)."""
        self.check_instance(get_instance(plan.instance_type))
        self.check_model(spec)

    def check_instance(self, instance: NeuronInstance) -> None:  # noqa: B027 - a hook, by default a no-op
        """Refuse an instance this engine does not run on. Default: every Neuron instance is accepted."""

    @abc.abstractmethod
    def check_model(self, spec: ModelSpec) -> None:
        """Refuse a model (dtype, shape) this engine cannot serve."""

    def validate_sagemaker(self) -> ContainerImage:
        """The image a SageMaker model runs, or a refusal when the engine has no SageMaker contract."""
        if self.sagemaker_image is None:
            raise NeuronConfigError(
                "engine",
                self.name,
                "this engine has no SageMaker serving contract (SageMaker pulls only from private ECR and "
                "configures containers through environment variables); use ServingEngine.optimum_neuron() "
                "or ServingEngine.tgi() with SageMakerInferenceFleet",
            )
        if not self.sagemaker_image.is_private_ecr:
            raise NeuronConfigError(
                "engine",
                self.sagemaker_image.uri("<region>"),
                "SageMaker pulls model images only from Amazon ECR; mirror the image into ECR",
            )
        return self.sagemaker_image

    # ---------------------------------------------------------------------------------------
    # Settings -> container configuration
    # ---------------------------------------------------------------------------------------

    @abc.abstractmethod
    def container_args(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> tuple[str, ...]:
        """Arguments after the image in ``docker run`` on EC2 (``model``: Hub id or path in the container)."""

    def environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        """Container environment on EC2 (no secrets: the Hub token is added at boot from Secrets Manager).

        Default: ``fixed_environment``; engines add what they read from their environment.
        """
        return dict(self.fixed_environment)

    def sagemaker_environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        """The SageMaker model container's environment (SageMaker cannot pass container arguments).

        Default: a refusal, for engines without a SageMaker serving contract.
        """
        raise NeuronConfigError("engine", self.name, "has no SageMaker serving contract")

    @abc.abstractmethod
    def listed_model_name(self, spec: ModelSpec, *, model: str) -> str:
        """The model name the OpenAI-compatible API lists in ``/v1/models`` (``model``: what is served)."""

    @abc.abstractmethod
    def served_name_caveat(self, spec: ModelSpec, *, model: str) -> str | None:
        """Why clients may not see ``served_model_name`` in ``/v1/models``, or None when they do."""

    def describe(self) -> str:
        """One line for logs and the CLI: name, image and support status."""
        return f"{self.name} ({self.image.repository}:{self.image.tag}, {self.status})"


def check_compiled_shape(spec: ModelSpec) -> None:
    """vLLM on Neuron compiles for max_num_seqs x max_model_len: the served shape is the graph."""
    for name, served, compiled in (
        ("batch_size", spec.batch_size, spec.compiled_batch_size),
        ("sequence_length", spec.sequence_length, spec.compiled_sequence_length),
    ):
        if compiled is not None and served != compiled:
            raise NeuronConfigError(
                name,
                served,
                f"vLLM on Neuron serves exactly the compiled shape ({compiled}); set {name}={compiled}",
            )


__all__ = ["EngineStatus", "ServingEngine", "check_compiled_shape"]
