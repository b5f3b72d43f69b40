"""Serving engines: how our settings become each Neuron serving container's flags and environment.

Plain Python (no ``aws_cdk``). A :class:`ServingEngine` is a value object: a pinned container image,
the port and health path the container answers on, its upstream support status, and the mapping of
a :class:`~cdk_neuron.serving.model_spec.ModelSpec` and :class:`~cdk_neuron.planner.ServingPlan`
onto that container's command-line flags (EC2) or environment (SageMaker, which cannot pass
arguments to a model container).

Support status, as of the dated sources named here:

- ``optimum_neuron`` (default): Hugging Face's vLLM DLC with the optimum-neuron platform plugin.
  optimum-neuron is actively developed and is the maintained LLM path for Inferentia2
  (huggingface/optimum-neuron pyproject.toml @021989d: a ``vllm`` extra and an ``optimum_neuron``
  entry point under ``vllm.platform_plugins``).
- ``vllm_neuron``: AWS's vLLM Neuron DLC (vLLM with the Neuron plugin on NxD Inference). NxD Inference
  is in maintenance and frozen at Neuron SDK 2.31 for Inf2 and Trn1; later vLLM-Neuron releases
  (no NxDI) support only Trn2/Trn3, so images past SDK 2.31 are refused on Inf2/Trn1 (Neuron
  announcements "NxD Inference and NxD Core maintenance support with Neuron SDK 2.31",
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-nxdi-maintenance-support-2-31.html,
  and "Announcing end of support for the NxD Inference library and NxD Core Inference APIs on Trn2
  and Trn3 starting in Neuron 2.34", posted 2026-10-16,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-eos-nxdi-nxd-core-inference.html).
- ``tgi``: Text Generation Inference with its Neuron backend. TGI is in maintenance mode upstream
  (only minor fixes; maintenance notice in the huggingface/text-generation-inference README
  @db931fc, 2026-01-08); it still works on Inf2 and Trn1 and is marked ``maintenance``.

Image tags are pinned (never ``latest``) and must be given explicitly to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cdk_neuron.catalog import NeuronInstance, get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.backends import BackendKind
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.validation import IMAGE_TAG

EngineStatus = Literal["active", "maintenance"]

# AWS Deep Learning Containers registry (Hugging Face DLCs are published there) for the commercial
# regions; other partitions use other accounts, so pass a ContainerImage with their registry.
DLC_REGISTRY = "763104351884.dkr.ecr.{region}.amazonaws.com"

# Pinned default images (sources in the comments below).
# ECS-TD (AWS ECS Neuron task-definition example) and the optimum-neuron container docs.
OPTIMUM_NEURON_REPOSITORY = "huggingface-vllm-inference-neuronx"
OPTIMUM_NEURON_TAG = "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
# aws-neuron-sdk containers/get-started/quickstart-configure-deploy-dlc.rst (run on inf2.48xlarge).
VLLM_NEURON_REGISTRY = "public.ecr.aws/neuron"
VLLM_NEURON_REPOSITORY = "pytorch-inference-vllm-neuronx"
VLLM_NEURON_TAG = "0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04"
# TGI-DOC (docs/source/backends/neuron.md) for the EC2 image; optimum-neuron docs/source/containers.mdx
# for the SageMaker DLC (SageMaker pulls only from Amazon ECR).
TGI_REGISTRY = "ghcr.io/huggingface"
TGI_REPOSITORY = "text-generation-inference"
TGI_TAG = "3.2.3-neuron"
TGI_SAGEMAKER_REPOSITORY = "huggingface-pytorch-tgi-inference"
TGI_SAGEMAKER_TAG = "2.5.1-optimum3.3.4-neuronx-py310-ubuntu22.04"

# NxD Inference stays at Neuron SDK 2.31 on Inf2 and Trn1 (Neuron announcement
# announce-eos-nxdi-nxd-core-inference, posted 2026-10-16; URL in the module docstring).
_NXDI_LAST_SDK_FOR_INF2_TRN1 = (2, 31)
_SDK_IN_TAG = re.compile(r"sdk(\d+)\.(\d+)")
# The Hugging Face vLLM DLC names the optimum-neuron release in its tag ("...-optimum0.4.5-...").
_OPTIMUM_IN_TAG = re.compile(r"optimum(\d+)\.(\d+)\.(\d+)")
# `optimum-cli neuron serve --served_model_name` first shipped in optimum-neuron v0.4.1
# (huggingface/optimum-neuron commit e7489948 "feat(vllm): support served model name arg when
# serving", 2025-10-16; tag v0.4.1 @a3ded34a, 2025-10-23). v0.4.0 has no such flag and "the
# optimum-cli uses a strict parsing and does not allow unknown args" (serve.py @v0.4.5), so an older
# image would exit on the argument instead of serving.
OPTIMUM_SERVED_MODEL_NAME_SINCE = (0, 4, 1)
_ECR_REGISTRY = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>\{region\}|[a-z0-9-]+)\.amazonaws\.com(\.cn)?$"
)


@dataclass(frozen=True)
class ContainerImage:
    """A pinned container image: ``registry/repository:tag``.

    ``registry`` may contain ``{region}``, filled in with the stack's region (DLC registries are
    regional). Tags must be explicit versions: ``latest`` and empty tags are refused.
    """

    registry: str
    repository: str
    tag: str

    def __post_init__(self) -> None:
        if not isinstance(self.tag, str) or not IMAGE_TAG.match(self.tag):
            raise NeuronConfigError(
                "image_tag", self.tag, "give an explicit, pinned image tag such as a version string"
            )
        if self.tag.lower() == "latest":
            raise NeuronConfigError(
                "image_tag",
                self.tag,
                "'latest' moves under a running fleet, so every new instance may run different code; pin a version",
            )
        for name in ("registry", "repository"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or any(c.isspace() for c in value):
                raise NeuronConfigError(name, value, "must be a non-empty string without spaces")

    def uri(self, region: str) -> str:
        """The full image reference for ``region`` (a CDK token is fine)."""
        return f"{self.registry_host(region)}/{self.repository}:{self.tag}"

    def registry_host(self, region: str) -> str:
        return self.registry.replace("{region}", region)

    @property
    def is_private_ecr(self) -> bool:
        """Whether the image lives in a private Amazon ECR registry (needs IAM and ``docker login``)."""
        return _ECR_REGISTRY.match(self.registry) is not None

    @property
    def ecr_account(self) -> str | None:
        match = _ECR_REGISTRY.match(self.registry)
        return match["account"] if match else None

    def ecr_region(self, default_region: str) -> str:
        """The ECR region of the registry (the stack's region when the registry is regional)."""
        match = _ECR_REGISTRY.match(self.registry)
        if match is None or match["region"] == "{region}":
            return default_region
        return match["region"]

    @property
    def neuron_sdk(self) -> tuple[int, int] | None:
        """The Neuron SDK (major, minor) the tag names, e.g. ``sdk2.25.0`` -> (2, 25); None if absent."""
        match = _SDK_IN_TAG.search(self.tag)
        return (int(match[1]), int(match[2])) if match else None

    @property
    def optimum_neuron_version(self) -> tuple[int, int, int] | None:
        """The optimum-neuron release a Hugging Face vLLM DLC tag names (``optimum0.4.5`` -> (0, 4, 5))."""
        match = _OPTIMUM_IN_TAG.search(self.tag)
        return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _image(image: ContainerImage | None, tag: str | None, default: ContainerImage) -> ContainerImage:
    if image is not None and tag is not None:
        raise NeuronConfigError(
            "image_tag", tag, "give either image_tag (for the default repository) or image, not both"
        )
    if image is not None:
        if not isinstance(image, ContainerImage):
            raise NeuronConfigError("image", image, "pass a cdk_neuron.serving.ContainerImage")
        return image
    return default if tag is None else ContainerImage(default.registry, default.repository, tag)


@dataclass(frozen=True)
class ServingEngine:
    """A Neuron serving container and how cdk-neuron configures it.

    Build one with :meth:`optimum_neuron` (the default), :meth:`vllm_neuron` or :meth:`tgi`.

    :ivar name: ``"optimum-neuron"``, ``"vllm-neuron"`` or ``"tgi"``.
    :ivar image: the image EC2 instances run.
    :ivar sagemaker_image: the image SageMaker runs (must be private ECR), or None if the engine has
        no SageMaker serving contract.
    :ivar port: the port the container listens on (inside the container).
    :ivar health_path: HTTP path that answers 200 once the model is loaded.
    :ivar status: ``"active"`` or ``"maintenance"`` upstream.
    :ivar status_note: why, with the source.
    :ivar supports_network_isolation: whether the SageMaker container can run with no network (it
        then needs precompiled artifacts from S3).
    :ivar concurrency_metrics: Prometheus metrics on ``metrics_path`` whose sum is the replica's
        in-flight plus queued requests (the concurrency the EC2 fleet scales on).
    :ivar metrics_path: where the container serves Prometheus metrics.
    :ivar fixed_environment: environment every container of this engine gets on EC2.
    """

    name: str
    image: ContainerImage
    sagemaker_image: ContainerImage | None
    port: int
    health_path: str
    status: EngineStatus
    status_note: str
    supports_network_isolation: bool
    concurrency_metrics: tuple[str, ...]
    metrics_path: str = "/metrics"
    fixed_environment: tuple[tuple[str, str], ...] = ()

    # ---------------------------------------------------------------------------------------
    # Factories
    # ---------------------------------------------------------------------------------------

    @staticmethod
    def optimum_neuron(image_tag: str | None = None, *, image: ContainerImage | None = None) -> ServingEngine:
        """Hugging Face's vLLM DLC with the optimum-neuron plugin (active; the default).

        The container's entrypoint runs ``optimum-cli neuron serve`` on port 8080 and turns every
        ``SM_ON_<FLAG>`` environment variable into ``--<flag>`` (optimum-neuron ``docker/vllm``), so
        EC2 passes flags and SageMaker passes the same settings as ``SM_ON_*`` variables. Hub models
        are served only from a precompiled or cached configuration (no ``--allow_non_cached_model``),
        so an instance never spends its start-up compiling.

        :param image_tag: tag in ``763104351884.dkr.ecr.<region>.amazonaws.com/huggingface-vllm-inference-neuronx``.
            Default: ``0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04``.
        :param image: a whole image instead (e.g. a mirror in your own ECR; not with ``image_tag``).
            Default: the DLC.
        """
        resolved = _image(
            image, image_tag, ContainerImage(DLC_REGISTRY, OPTIMUM_NEURON_REPOSITORY, OPTIMUM_NEURON_TAG)
        )
        return ServingEngine(
            name="optimum-neuron",
            image=resolved,
            sagemaker_image=resolved if resolved.is_private_ecr else None,
            port=8080,
            health_path="/health",
            status="active",
            status_note="optimum-neuron is actively developed; its vLLM platform plugin is the maintained "
            "LLM serving path on Inferentia2 (huggingface/optimum-neuron pyproject.toml @021989d)",
            supports_network_isolation=True,
            concurrency_metrics=("vllm:num_requests_running", "vllm:num_requests_waiting"),
        )

    @staticmethod
    def vllm_neuron(image_tag: str | None = None, *, image: ContainerImage | None = None) -> ServingEngine:
        """AWS's vLLM Neuron DLC (vLLM with the Neuron plugin on NxD Inference; maintenance on Inf2).

        EC2 only: the image is on ECR Public and has no documented SageMaker serving contract.
        Images built for Neuron SDK releases after 2.31 (vLLM-Neuron without NxD Inference) support
        only Trn2/Trn3 and are refused on Inf2 and Trn1.

        :param image_tag: tag in ``public.ecr.aws/neuron/pytorch-inference-vllm-neuronx``.
            Default: ``0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04``.
        :param image: a whole image instead. Default: the ECR Public DLC.
        """
        resolved = _image(
            image, image_tag, ContainerImage(VLLM_NEURON_REGISTRY, VLLM_NEURON_REPOSITORY, VLLM_NEURON_TAG)
        )
        return ServingEngine(
            name="vllm-neuron",
            image=resolved,
            sagemaker_image=None,
            port=8080,
            health_path="/health",
            status="maintenance",
            status_note="NxD Inference (the vLLM Neuron plugin's backend on Inf2/Trn1) is in maintenance, "
            "frozen at Neuron SDK 2.31 for Inf2 and Trn1; newer vLLM-Neuron releases are Trn2/Trn3 only "
            "(AWS Neuron announcements on awsdocs-neuron.readthedocs-hosted.com: "
            "announce-nxdi-maintenance-support-2-31; announce-eos-nxdi-nxd-core-inference, 2026-10-16)",
            supports_network_isolation=False,
            concurrency_metrics=("vllm:num_requests_running", "vllm:num_requests_waiting"),
            fixed_environment=(("VLLM_NEURON_FRAMEWORK", "neuronx-distributed-inference"),),
        )

    @staticmethod
    def tgi(
        image_tag: str | None = None,
        *,
        sagemaker_image_tag: str = TGI_SAGEMAKER_TAG,
        image: ContainerImage | None = None,
    ) -> ServingEngine:
        """Text Generation Inference with the Neuron backend (maintenance mode upstream).

        Configured entirely through environment variables (``MODEL_ID``, ``HF_NUM_CORES``,
        ``HF_AUTO_CAST_TYPE``, ``MAX_BATCH_SIZE``, ``MAX_TOTAL_TOKENS``, ``MAX_INPUT_TOKENS``,
        ``MAX_BATCH_PREFILL_TOKENS``; all six are set so TGI's entrypoint keeps the served shape).
        Supports Inferentia2 and Trainium 1 (TGI-DOC).

        :param image_tag: tag of ``ghcr.io/huggingface/text-generation-inference`` (EC2). Default:
            ``3.2.3-neuron``.
        :param sagemaker_image_tag: tag of the Hugging Face TGI Neuron DLC in ECR (SageMaker). Default:
            ``2.5.1-optimum3.3.4-neuronx-py310-ubuntu22.04``.
        :param image: a whole EC2 image instead. Default: the GitHub Container Registry image.
        """
        return ServingEngine(
            name="tgi",
            image=_image(image, image_tag, ContainerImage(TGI_REGISTRY, TGI_REPOSITORY, TGI_TAG)),
            sagemaker_image=ContainerImage(DLC_REGISTRY, TGI_SAGEMAKER_REPOSITORY, sagemaker_image_tag),
            port=80,
            health_path="/health",
            status="maintenance",
            status_note="TGI is in maintenance mode upstream: minor fixes only; Hugging Face recommends "
            "vLLM (huggingface/text-generation-inference README @db931fc, 2026-01-08)",
            supports_network_isolation=True,
            concurrency_metrics=("tgi_batch_current_size", "tgi_queue_size"),
        )

    # ---------------------------------------------------------------------------------------
    # Validation
    # ---------------------------------------------------------------------------------------

    @property
    def uses_vllm(self) -> bool:
        return self.name in ("optimum-neuron", "vllm-neuron")

    def validate(self, spec: ModelSpec, plan: ServingPlan, *, backend: BackendKind) -> None:
        """Refuse a model, instance or backend this engine cannot serve."""
        instance = get_instance(plan.instance_type)
        self._check_chip(instance)
        if backend == "sagemaker" and self.sagemaker_image is None:
            raise NeuronConfigError(
                "engine",
                self.name,
                "this engine has no SageMaker serving contract (SageMaker pulls only from private ECR and "
                "configures containers through environment variables); use ServingEngine.optimum_neuron() "
                "or ServingEngine.tgi() with FleetBackend.sagemaker()",
            )
        if (
            backend == "sagemaker"
            and self.sagemaker_image is not None
            and not self.sagemaker_image.is_private_ecr
        ):
            raise NeuronConfigError(
                "engine",
                self.sagemaker_image.uri("<region>"),
                "SageMaker pulls model images only from Amazon ECR; mirror the image into ECR",
            )
        if self.uses_vllm:
            # vLLM on Neuron compiles for max_num_seqs x max_model_len: the served shape is the graph.
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
        if self.name == "tgi" and self._tgi_dtype(spec) is None:
            raise NeuronConfigError(
                "dtype", spec.dtype, "TGI's Neuron backend casts to fp16 or bf16 only (HF_AUTO_CAST_TYPE)"
            )
        if self.name == "tgi" and spec.max_input_tokens is None and spec.sequence_length < 2:
            raise NeuronConfigError(
                "sequence_length",
                spec.sequence_length,
                "TGI needs room for at least one prompt token and one generated token; use >= 2",
            )
        if self.name == "vllm-neuron" and self._vllm_dtype(spec) is None:
            raise NeuronConfigError("dtype", spec.dtype, "vLLM Neuron serves bf16, fp16 or fp32 weights")
        self._check_served_model_name_support()

    def _check_served_model_name_support(self) -> None:
        """Refuse an optimum-neuron image too old to take ``--served_model_name``.

        Without the flag vLLM registers the model under its path (``/model``, ``/opt/ml/model``) and
        answers 404 to requests naming ``ModelSpec.served_model_name``. Tags that name no
        optimum-neuron release (a private mirror) are trusted.
        """
        version = self.image.optimum_neuron_version if self.name == "optimum-neuron" else None
        if version is not None and version < OPTIMUM_SERVED_MODEL_NAME_SINCE:
            since = ".".join(map(str, OPTIMUM_SERVED_MODEL_NAME_SINCE))
            raise NeuronConfigError(
                "image_tag",
                self.image.tag,
                f"optimum-neuron {'.'.join(map(str, version))} cannot set the served model name "
                f"(--served_model_name arrived in {since}), so clients could not use the model id they "
                f"are given; use an image with optimum{since} or later (default {OPTIMUM_NEURON_TAG})",
            )

    def _check_chip(self, instance: NeuronInstance) -> None:
        if self.name == "tgi" and instance.chip == "trainium2":
            raise NeuronConfigError(
                "instance_type",
                instance.name,
                "TGI's Neuron backend supports Inferentia2 and Trainium 1 only (TGI-DOC); use "
                "ServingEngine.optimum_neuron() or ServingEngine.vllm_neuron() on Trn2",
            )
        sdk = self.image.neuron_sdk
        if (
            self.name == "vllm-neuron"
            and instance.chip in ("inferentia2", "trainium")
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

    # ---------------------------------------------------------------------------------------
    # Settings -> container configuration
    # ---------------------------------------------------------------------------------------

    @staticmethod
    def _tgi_dtype(spec: ModelSpec) -> str | None:
        return {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}.get(spec.dtype.lower())

    @staticmethod
    def _vllm_dtype(spec: ModelSpec) -> str | None:
        return {
            "bf16": "bfloat16",
            "bfloat16": "bfloat16",
            "fp16": "float16",
            "float16": "float16",
            "fp32": "float32",
            "float32": "float32",
        }.get(spec.dtype.lower())

    def container_args(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> tuple[str, ...]:
        """Arguments after the image in ``docker run`` on EC2 (``model``: Hub id or path in the container)."""
        if self.name == "optimum-neuron":
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
        if self.name == "vllm-neuron":
            dtype = self._vllm_dtype(spec)
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
        return ()  # TGI reads everything from its environment

    def environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        """Container environment on EC2 (no secrets: the Hub token is added at boot from Secrets Manager)."""
        env = dict(self.fixed_environment)
        if self.name == "vllm-neuron" and spec.precompiled:
            # vLLM on NxD Inference loads a precompiled model only from NEURON_COMPILED_ARTIFACTS; unset,
            # it compiles into "a neuron-compiled-artifacts subdirectory in the directory of your model
            # checkpoint" (aws-neuron/aws-neuron-sdk libraries/nxd-inference/developer_guides/
            # vllm-user-guide.rst @81ce03ae, 2026-07-20), i.e. every boot would compile (~15 min for a
            # 15 GB model, same page) into /model, which is mounted read-only.
            env["NEURON_COMPILED_ARTIFACTS"] = model
        if self.name == "tgi":
            env.update(self._tgi_environment(spec, plan, model_variable="MODEL_ID", model=model))
        return env

    def sagemaker_environment(self, spec: ModelSpec, plan: ServingPlan, *, model: str) -> dict[str, str]:
        """The SageMaker model container's environment (SageMaker cannot pass container arguments)."""
        if self.name == "optimum-neuron":
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
        if self.name == "tgi":
            # The SageMaker TGI DLC reads HF_MODEL_ID (optimum-neuron SageMaker tutorial).
            return self._tgi_environment(spec, plan, model_variable="HF_MODEL_ID", model=model)
        raise NeuronConfigError("engine", self.name, "has no SageMaker serving contract")

    def _tgi_environment(
        self, spec: ModelSpec, plan: ServingPlan, *, model_variable: str, model: str
    ) -> dict[str, str]:
        dtype = self._tgi_dtype(spec)
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
        env = {
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
        return env

    def listed_model_name(self, spec: ModelSpec, *, model: str) -> str:
        """The model name the OpenAI-compatible API lists in ``/v1/models`` (``model``: what is served).

        vLLM (both DLCs) lists ``--served-model-name`` and answers 404 to any other name in a request
        (vllm-project/vllm ``vllm/entrypoints/openai/serving_engine.py`` @0030b9ff, ``_check_model``:
        "The model `...` does not exist.", HTTP 404). TGI has no served-name setting: ``/v1/models`` reports its
        ``MODEL_ID`` (huggingface/text-generation-inference ``router/src/server.rs`` @v3.2.3 a1f3ebe1,
        ``openai_get_model_info``: ``id: info.model_id``; for a local path that is the path).
        """
        return model if self.name == "tgi" else spec.served_model_name

    def served_name_caveat(self, spec: ModelSpec, *, model: str) -> str | None:
        """Why clients may not see ``served_model_name`` in ``/v1/models``, or None when they do."""
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

    def describe(self) -> str:
        """One line for logs and the CLI: name, image and support status."""
        return f"{self.name} ({self.image.repository}:{self.image.tag}, {self.status})"


__all__ = [
    "DLC_REGISTRY",
    "OPTIMUM_NEURON_TAG",
    "OPTIMUM_SERVED_MODEL_NAME_SINCE",
    "TGI_SAGEMAKER_TAG",
    "TGI_TAG",
    "VLLM_NEURON_TAG",
    "ContainerImage",
    "EngineStatus",
    "ServingEngine",
]
