"""What one compile runs: :class:`ModelSource` and :class:`CompileRequest` (plain Python, no ``aws_cdk``).

A request turns a model source, the serving shape and the engine into the settings of the three
containers of a :class:`~cdk_neuron.compilation.ModelCompilation` task (``fetch``, ``export``,
``upload``; programs in ``node_programs/files/compile``). ``cdk-neuron compile`` and the tests build
the same request, so what the tests rehearse is what the task receives.

Where compiling runs, and why: on Fargate, CPU only, in the serving image. The Neuron compiler needs
no Neuron device ("The one-time compilation step from the standard framework-level model to NEFF
binary may be performed on any EC2 instance or even on-premises", Neuron Compiler FAQ (neuronx-cc),
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/neuronx-cc/faq.html, read
2026-12-02), and ``optimum-cli export neuron --instance_type <family>`` names its target rather than
detecting it (huggingface/optimum-neuron ``optimum/commands/export/neuronx.py``). For LLMs, which
also trace with NxD, optimum-neuron's export guide documents CPU-only compiles with
``--instance_type`` (``docs/source/guides/export_model.mdx`` @v0.4.5; huggingface/optimum-neuron#974,
merged 2025-10); its earlier guidance said LLMs export only on Neuron platforms
(huggingface/optimum-neuron#626, 2024-06), so the integ suites are what will prove it here. Compiling in the
serving image makes the compiler the one whose runtime will load the graphs. The limit is host
memory and disk: exporting holds the checkpoint and its shards in memory (about 3 x the weights: this
project's own estimate, in the serving README's "Precompiled artifacts", not an upstream figure),
and the disk holds the images, the source, a converted copy and the export (:func:`disk_budget_gib`;
the export program also measures the free space before each phase, from the source's real size and
dtype). Fargate offers at most 16 vCPU, 120 GiB of memory and
200 GiB of ephemeral storage per task ("Fargate task definition parameters" and "Fargate task
ephemeral storage", Amazon ECS Developer Guide, read 2026-12-02), so models above
:data:`FARGATE_MAX_WEIGHTS_GIB` of weights are refused with the way to compile them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cdk_neuron import catalog, timeouts
from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec, parse_s3_uri
from cdk_neuron.training.node_setup import container_memory_mib
from cdk_neuron.validation import HF_MODEL_ID, S3_PREFIX_URI

SourceKind = Literal["checkpoint", "s3", "hub"]

WORK_DIR = "/compile"
"""The task volume the three containers share (on the task's ephemeral storage)."""
CHECKPOINT_MOUNT = "/checkpoints"
"""Where the export container mounts the CheckpointStore, read-only."""

FARGATE_CPU_UNITS = 16384
"""16 vCPU: the largest Fargate task."""
FARGATE_MEMORY_MIB = 122880
"""120 GiB: the most memory a 16-vCPU Fargate task takes."""
FARGATE_EPHEMERAL_GIB = 200
"""The most ephemeral storage a Fargate task takes (platform 1.4.0)."""
EXPORT_MEMORY_FACTOR = 3
"""Host memory an export holds, in multiples of the weights (checkpoint + shards). This project's
estimate (serving README, "Precompiled artifacts"), not a figure optimum-neuron publishes."""
FARGATE_MAX_WEIGHTS_GIB = FARGATE_MEMORY_MIB / 1024 / EXPORT_MEMORY_FACTOR
"""40 GiB of weights (about 20B parameters in bf16): the most a Fargate compile task can export."""
DEFAULT_ARTIFACT_PREFIX = "compiled/"
"""The key prefix a ModelCompilation may write under by default (its ``artifact_prefix``)."""
FARGATE_INCLUDED_STORAGE_GIB = catalog.FARGATE_INCLUDED_EPHEMERAL_GB
"""Ephemeral storage every Fargate task gets without charge; above it, storage is billed per GB-hour."""
COMPILE_ENGINES = ("optimum-neuron",)
"""Engines whose export the compile task runs (optimum-neuron's ``optimum-cli export neuron``)."""
_DTYPES = ("bf16", "fp16", "fp32")
EXPORT_TARGET_FAMILIES = ("inf2", "trn1", "trn1n", "trn2")
"""The fleets' instance families the task compiles for, each with ``--instance_type <family>``: optimum-cli
0.4.5 takes ``trn1``, ``inf2``, ``trn1n`` and ``trn2`` (``SUPPORTED_INSTANCE_TYPES``,
optimum/neuron/utils/instance.py @v0.4.5) and, on a host without a Neuron device, requires the flag and
compiles for the target it names (NEURON_PLATFORM_TARGET_OVERRIDE, optimum/commands/export/neuronx.py
@v0.4.5): inf2, trn1 and trn1n share the trn1 target (NeuronCore-v2), trn2 has its own. Trn3 has no
target in that release."""
HW_BACKENDS = ("trn1", "trn2")
"""NxD's checkpoint converter ``--hw_backend`` values (required by it since Neuron 2.21)."""


BATCH_STEP_VCPUS = 1
"""vCPUs the fetch and upload containers of a BatchModelCompilation job each ask for (the AWS CLI copying
files; the export gets the rest of the host)."""
BATCH_STEP_MEMORY_MIB = 2048
"""Memory the fetch and upload containers each ask for. Batch places a multi-container job by the sum of
its containers' requirements, though the three run one after another."""


@dataclass(frozen=True)
class HostCompile:
    """A compile job on one instance of a training cluster (BatchModelCompilation): what its export gets.

    The whole host, as the training jobs take it: the memory a job may ask for on it
    (:func:`cdk_neuron.training.node_setup.container_memory_mib`, 90 % of the instance's) and all of its
    vCPUs, less what the fetch and upload containers ask for. Facts from the catalog's instance.

    :ivar instance_type: e.g. ``trn1.32xlarge``.
    :ivar export_vcpus: the export container's vCPUs.
    :ivar export_memory_mib: the export container's memory.
    """

    instance_type: str
    export_vcpus: int
    export_memory_mib: int

    @staticmethod
    def on(instance: catalog.NeuronInstance) -> HostCompile:
        """The compile job on one ``instance``."""
        return HostCompile(
            instance_type=instance.name,
            export_vcpus=instance.vcpus - 2 * BATCH_STEP_VCPUS,
            export_memory_mib=container_memory_mib(instance.memory_gib) - 2 * BATCH_STEP_MEMORY_MIB,
        )

    @staticmethod
    def where(runs_on: str, instance_type: str | None) -> HostCompile | None:
        """Where a deployed compilation runs: None on Fargate; the training cluster's node otherwise (its
        ``instance_type`` from the record or cdk.json; refused when missing)."""
        if runs_on != "training-cluster":
            return None
        if instance_type is None:
            raise NeuronConfigError(
                "instance_type",
                None,
                "the BatchModelCompilation record names no instance type: synthesize with this cdk-neuron",
            )
        return HostCompile.on(catalog.get_instance(instance_type))

    @property
    def max_weights_gib(self) -> float:
        """The most weights the export holds: its memory over :data:`EXPORT_MEMORY_FACTOR` (trn1.32xlarge:
        456.8 GiB of memory, 152 GiB of weights, about 80B parameters in bf16)."""
        return self.export_memory_mib / 1024 / EXPORT_MEMORY_FACTOR

    def usd_per_hour(self) -> float | None:
        """The instance's On-Demand price (the catalog's, dated; None where none is published): the job
        holds the whole host for as long as it runs."""
        price = catalog.known_price(self.instance_type)
        return None if price is None else price.usd_per_hour


def compile_task_usd_per_hour() -> float:
    """What one ModelCompilation task costs per hour at the catalog's Fargate prices (us-east-1).

    16 vCPU, 120 GiB of memory and 180 GiB of ephemeral storage above the 20 included, each at its
    per-hour rate (``catalog.FARGATE_PRICES``, source SVC-FARGATE; Fargate bills per second with a
    one-minute minimum). The one price of the task: the integ estimate and the compile tax
    (:mod:`cdk_neuron.compilation.tax`) both use it.
    """
    prices = catalog.FARGATE_PRICES
    return (
        FARGATE_CPU_UNITS / 1024 * prices["vcpu_hour"].usd_per_hour
        + FARGATE_MEMORY_MIB / 1024 * prices["gb_hour"].usd_per_hour
        + (FARGATE_EPHEMERAL_GIB - FARGATE_INCLUDED_STORAGE_GIB) * prices["ephemeral_gb_hour"].usd_per_hour
    )


def export_target_refusal(instance_type: str) -> str | None:
    """Why the compile task cannot compile for a fleet of ``instance_type`` (and what to do instead),
    or None when it can: the one rule ``CompileRequest``, ``plan`` and ``cost`` share."""
    family = instance_type.split(".")[0]
    if family in EXPORT_TARGET_FAMILIES:
        return None
    return (
        f"the compile task exports with optimum-cli --instance_type <the fleet's family>, and optimum-neuron "
        f"0.4.5 compiles for {', '.join(EXPORT_TARGET_FAMILIES)} only (SUPPORTED_INSTANCE_TYPES, "
        f"optimum/neuron/utils/instance.py @v0.4.5): no {family} target; serve on one of those, or export with a "
        f"release that names {family} (serving README: Precompiled artifacts)"
    )


def export_memory_refusal(weights_gib: float, host: HostCompile | None) -> str | None:
    """Why an export of ``weights_gib`` does not fit where it would run (a Fargate task when ``host`` is
    None, else the training cluster's host), and what to do; None when it fits. The export holds about
    :data:`EXPORT_MEMORY_FACTOR` x the weights in memory."""
    need = weights_gib * EXPORT_MEMORY_FACTOR
    if host is None:
        if weights_gib <= FARGATE_MAX_WEIGHTS_GIB:
            return None
        return (
            f"{weights_gib:.0f} GiB of weights need about {EXPORT_MEMORY_FACTOR} x that in host memory to export, "
            f"and a Fargate task has at most {FARGATE_MEMORY_MIB // 1024} GiB: compile it on the training cluster "
            "(BatchModelCompilation; cdk.json compilation.runs_on training-cluster) or on an instance with the memory "
            "(serving README: Precompiled artifacts)"
        )
    if weights_gib <= host.max_weights_gib:
        return None
    return (
        f"{weights_gib:.0f} GiB of weights need about {need:.0f} GiB of host memory to export, and a compile job on "
        f"{host.instance_type} gives its export {host.export_memory_mib / 1024:.0f} GiB (the instance's, less what "
        "ECS and the other steps keep): no compile path here holds it; export by hand on an instance with "
        f"{need * 1.1:.0f} GiB or more (serving README: Precompiled artifacts)"
    )


def disk_budget_gib(weights_gib: float) -> float:
    """The ephemeral storage one compile of ``weights_gib`` uses at most.

    Fargate counts the images against the task's storage, pulled and unpacked ("the pulled,
    compressed, and the uncompressed container image", "Fargate task ephemeral storage for Amazon
    ECS", Amazon ECS Developer Guide, read 2026-12-02): the serving image twice
    (:data:`cdk_neuron.timeouts.COMPILE_IMAGE_GIB`, assumed) and the AWS CLI image's 1 GiB. Then the
    source (downloaded or fetched), one converted copy (a training checkpoint) and the export (the
    TP-sharded weights), each about the weights' size.
    """
    return 2 * timeouts.COMPILE_IMAGE_GIB + 1 + 3 * weights_gib


def check_artifact_prefix(prefix: object) -> str:
    """A ModelCompilation's ``artifact_prefix``: a key prefix ending in ``/`` (one is added), no
    leading ``/``, no wildcard or ``..``; the task's write grant is ``<prefix>*``."""
    if (
        not isinstance(prefix, str)
        or not prefix.strip("/")
        or prefix.startswith("/")
        or any(c in prefix for c in "*?")
        or any(c.isspace() for c in prefix)
        or ".." in prefix.split("/")
    ):
        raise NeuronConfigError(
            "artifact_prefix",
            prefix,
            'give a key prefix such as "compiled/" (no leading /, no wildcard): the task may write only under it',
        )
    return prefix.rstrip("/") + "/"


def artifact_key_prefix(artifact_uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("bucket", "a/b/")``."""
    uri = parse_s3_uri(artifact_uri).uri
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def check_config_from(value: object) -> str | None:
    """``config_from``: None, ``hub:<org/model>[@revision]`` or ``s3://bucket/prefix/``."""
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("hub:"):
        repo, _, revision = value[4:].partition("@")
        if HF_MODEL_ID.match(repo) and not any(c.isspace() for c in revision):
            return value
    elif isinstance(value, str) and S3_PREFIX_URI.match(value) and ".." not in value:
        return parse_s3_uri(value, field="config_from").uri
    raise NeuronConfigError(
        "config_from",
        value,
        "use hub:<org/model>[@revision] or s3://<bucket>/<prefix>/ holding the model's config.json and tokenizer",
    )


@dataclass(frozen=True)
class ModelSource:
    """Where the weights to compile come from. Build one with :meth:`checkpoint`, :meth:`s3` or :meth:`hub`.

    :ivar kind: ``checkpoint``, ``s3`` or ``hub``.
    :ivar uri: the checkpoint path (under the CheckpointStore), the ``s3://`` prefix, or the Hub id.
    :ivar step: the training step of a checkpoint. Default: None.
    :ivar revision: the Hub revision. Default: None (the default branch).
    :ivar tensor_parallel: the TP a neuronx-distributed training checkpoint was sharded with (needed to
        convert one). Default: None.
    :ivar pipeline_parallel: its pipeline-parallel degree. Default: 1.
    :ivar kv_size_multiplier: its KV replication factor (NxD ``kv_size_multiplier``). Default: 1.
    :ivar hw_backend: the Trainium generation the checkpoint was trained on, ``trn1`` or ``trn2`` (NxD's
        converter ``--hw_backend``: Trn2 replicates KV heads in blocks, Trn1 interleaved, and the query
        heads are put back in order accordingly). Default: ``trn1``.
    :ivar config_from: where config.json and the tokenizer come from when the checkpoint lacks them
        (a neuronx-distributed checkpoint has neither): ``hub:<org/model>[@revision]`` or an ``s3://``
        prefix. Default: None (the fleet's ``model_id`` on the Hub).
    """

    kind: SourceKind
    uri: str
    step: int | None = None
    revision: str | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int = 1
    kv_size_multiplier: int = 1
    hw_backend: str = "trn1"
    config_from: str | None = None

    @staticmethod
    def checkpoint(
        path: str,
        *,
        step: int | None = None,
        tensor_parallel: int | None = None,
        pipeline_parallel: int = 1,
        kv_size_multiplier: int = 1,
        hw_backend: str = "trn1",
        config_from: str | None = None,
    ) -> ModelSource:
        """A checkpoint directory on the CheckpointStore, e.g. ``"run-7/step-1200"``: a Hugging Face
        checkpoint, or a neuronx-distributed training checkpoint (``model/dp_rank_*``) given its
        ``tensor_parallel`` (and ``pipeline_parallel``), which the task converts; ``config_from`` for
        the config and tokenizer it lacks."""
        if (
            not isinstance(path, str)
            or not path.strip("/")
            or ".." in path.split("/")
            or any(c.isspace() for c in path)
        ):
            raise NeuronConfigError(
                "source",
                path,
                "give the checkpoint directory relative to the CheckpointStore, e.g. run-7/step-1200",
            )
        for field, value, minimum in (
            ("step", step, 0),
            ("tensor_parallel", tensor_parallel, 1),
            ("pipeline_parallel", pipeline_parallel, 1),
            ("kv_size_multiplier", kv_size_multiplier, 1),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < minimum
            ):
                raise NeuronConfigError(field, value, f"must be a whole number >= {minimum}")
        if hw_backend not in HW_BACKENDS:
            raise NeuronConfigError(
                "hw_backend",
                hw_backend,
                f"use one of {', '.join(HW_BACKENDS)}: the Trainium generation the checkpoint was trained on "
                "(trn1 for Trn1/Trn1n, trn2 for Trn2/Trn3)",
            )
        return ModelSource(
            "checkpoint",
            path.strip("/"),
            config_from=check_config_from(config_from),
            step=step,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
            kv_size_multiplier=kv_size_multiplier,
            hw_backend=hw_backend,
        )

    @staticmethod
    def s3(uri: str) -> ModelSource:
        """A Hugging Face checkpoint (config, safetensors, tokenizer) under ``s3://bucket/prefix/``."""
        if not isinstance(uri, str) or not S3_PREFIX_URI.match(uri) or ".." in uri:
            raise NeuronConfigError("source", uri, "use s3://<bucket>/<prefix>/ of a Hugging Face checkpoint")
        return ModelSource("s3", parse_s3_uri(uri, field="source").uri)

    @staticmethod
    def hub(model_id: str, *, revision: str | None = None) -> ModelSource:
        """A Hugging Face Hub id (gated models need the token secret), at ``revision`` if given."""
        if not isinstance(model_id, str) or not HF_MODEL_ID.match(model_id):
            raise NeuronConfigError("source", model_id, 'use a Hugging Face Hub id such as "org/model-name"')
        if revision is not None and (
            not isinstance(revision, str) or not revision or any(c.isspace() for c in revision)
        ):
            raise NeuronConfigError("revision", revision, "use a branch, tag or commit of the Hub repository")
        return ModelSource("hub", model_id, revision=revision)


@dataclass(frozen=True, kw_only=True)
class CompileRequest:
    """One export: the source, the artifact prefix it writes, and the shape and engine it is for.

    :param source: where the weights come from.
    :param artifact_uri: ``s3://bucket/prefix/`` to write; a new prefix per artifact (the upload
        refuses a prefix that already holds a manifest).
    :param model: the model as the fleet will serve it: its graph shape and dtype are compiled.
    :param plan: the fleet's plan: its TP is the export's.
    :param engine: the fleet's engine; its image compiles. Default: optimum-neuron.
    :param hub_route: whether the task's network reaches the Hugging Face Hub (its subnets have a NAT).
        Without one, ``hub:`` sources, ``hub:`` config and a training checkpoint without ``config_from``
        are refused, and the export runs with ``HF_HUB_OFFLINE=1``. Default: True.
    """

    source: ModelSource
    artifact_uri: str
    model: ModelSpec
    plan: ServingPlan
    engine: ServingEngine
    hub_route: bool = True
    host: HostCompile | None = None

    def __post_init__(self) -> None:
        found = ErrorCollector()
        found.run(lambda: parse_s3_uri(self.artifact_uri))
        if self.engine.name not in COMPILE_ENGINES:
            found.add(
                NeuronConfigError(
                    "engine",
                    self.engine.name,
                    "the compile task runs optimum-neuron's export (the default engine); export for "
                    f"{self.engine.name} by hand with that image's tools (serving README: Precompiled artifacts)",
                )
            )
        if self.model.dtype.lower() not in _DTYPES:
            found.add(
                NeuronConfigError(
                    "dtype", self.model.dtype, f"optimum-cli export neuron loads {', '.join(_DTYPES)} weights"
                )
            )
        refusal = export_target_refusal(self.plan.instance_type)
        if refusal is not None:
            found.add(NeuronConfigError("instance_type", self.plan.instance_type, refusal))
        if not self.hub_route and self.source.kind == "hub":
            found.add(
                NeuronConfigError(
                    "source",
                    f"hub:{self.source.uri}",
                    "the compile task's subnets have no route to the internet (no NAT), so it cannot download "
                    "from the Hugging Face Hub: copy the model to S3 (huggingface-cli download, then aws s3 sync) "
                    "and compile --source s3://bucket/prefix/, or give the VPC a NAT",
                )
            )
        if not self.hub_route and (self.source.config_from or "").startswith("hub:"):
            found.add(
                NeuronConfigError(
                    "config_from",
                    self.source.config_from,
                    "the compile task's subnets have no route to the internet (no NAT): give config.json and the "
                    "tokenizer from S3 with --config-from s3://bucket/prefix/",
                )
            )
        if (
            not self.hub_route
            and self.source.kind == "checkpoint"
            and self.source.tensor_parallel is not None
            and self.source.config_from is None
        ):
            # A neuronx-distributed checkpoint (converted: it names its TP) holds no config.json and no
            # tokenizer, and the default place for them, the fleet's model on the Hub, has no route.
            found.add(
                NeuronConfigError(
                    "config_from",
                    None,
                    "a neuronx-distributed training checkpoint holds no config.json or tokenizer, and the compile "
                    "task's subnets have no route to the Hub to take them from: give them with "
                    "--config-from s3://bucket/prefix/",
                )
            )
        refusal = export_memory_refusal(self.plan.weights_gib, self.host)
        if refusal is not None:
            found.add(NeuronConfigError("model.parameters", self.model.parameters, refusal))
        found.raise_if_any()

    @property
    def artifact(self) -> str:
        """The artifact prefix as a directory URI."""
        return parse_s3_uri(self.artifact_uri).uri

    def fetch_environment(self) -> dict[str, str]:
        """The ``fetch`` container's settings."""
        return {
            "SOURCE_KIND": self.source.kind,
            "SOURCE_URI": self.source.uri,
            "CONFIG_FROM": self.source.config_from or "",
            "WORK_DIR": WORK_DIR,
        }

    def export_environment(self, region: str) -> dict[str, str]:
        """The ``export`` container's settings (no secret: the Hub token arrives as a container secret)."""
        image = self.engine.image
        optimum = image.optimum_neuron_version
        target = "trn2" if self.plan.instance_type.startswith("trn2") else "trn1"
        model_id = self.model.model_id or (self.source.uri if self.source.kind == "hub" else "")
        values = {
            "SOURCE_KIND": self.source.kind,
            "SOURCE_URI": self.source.uri,
            "SOURCE_STEP": "" if self.source.step is None else str(self.source.step),
            "MODEL_ID": model_id,
            "MODEL_REVISION": self.source.revision or "",
            "CONVERT_TP": "" if self.source.tensor_parallel is None else str(self.source.tensor_parallel),
            "CONVERT_PP": str(self.source.pipeline_parallel),
            "CONVERT_KV_MULTIPLIER": str(self.source.kv_size_multiplier),
            "CONVERT_HW_BACKEND": self.source.hw_backend,
            "CONFIG_FROM": self.source.config_from or "",
            # optimum-cli's --instance_type: the fleet's family, and the target the export must record.
            "EXPORT_INSTANCE_TYPE": self.plan.instance_type.split(".")[0],
            "EXPORT_TARGET": target,
            # What optimum-neuron sets itself on a host without a Neuron device (instance.py @v0.4.5:
            # NEURON_PLATFORM_TARGET_OVERRIDE = INSTANCE_VALUE_MAP[instance_type]), given outright: on a
            # trn1 node (BatchModelCompilation) the host's Neuron driver is visible to the container and its
            # devices are not mapped, and the compile must not depend on which branch that takes.
            "NEURON_PLATFORM_TARGET_OVERRIDE": target,
            "BATCH_SIZE": str(self.model.graph_batch_size),
            "SEQUENCE_LENGTH": str(self.model.graph_sequence_length),
            "TENSOR_PARALLEL": str(self.plan.tensor_parallel),
            "DTYPE": self.model.dtype.lower(),
            "ENGINE": self.engine.name,
            "ENGINE_VERSION": ".".join(map(str, optimum)) if optimum else "",
            "IMAGE": f"{image.repository}:{image.tag}",
            "ARTIFACT_URI": self.artifact,
            "WORK_DIR": WORK_DIR,
            "CHECKPOINT_MOUNT": CHECKPOINT_MOUNT,
        }
        if not self.hub_route:
            # No route to the Hub: huggingface_hub makes no HTTP call with HF_HUB_OFFLINE set ("Environment
            # variables", huggingface_hub docs,
            # https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables, read
            # 2026-12-02), so nothing waits on a connection that cannot succeed; transformers and
            # optimum-neuron reach the Hub only through it. It is read at import, so it is set for the whole
            # container. Where there is a route the export stays online: optimum-neuron looks up prebuilt
            # NEFFs in its public Hub cache for every LLM compile ("Neuron Model Cache", optimum-neuron docs,
            # https://huggingface.co/docs/optimum-neuron/guides/cache_system), which offline it bypasses.
            values["HF_HUB_OFFLINE"] = "1"
        del region  # the image reference in the manifest is registry-free: the same in every region
        return values

    def upload_environment(self) -> dict[str, str]:
        """The ``upload`` container's settings."""
        return {"ARTIFACT_URI": self.artifact, "WORK_DIR": WORK_DIR}

    def task_overrides(self, region: str) -> dict[str, Any]:
        """``overrides`` for ``ecs:RunTask`` of the ModelCompilation task: each container's settings."""
        settings = {
            "fetch": self.fetch_environment(),
            "export": self.export_environment(region),
            "upload": self.upload_environment(),
        }
        return {
            "containerOverrides": [
                {"name": name, "environment": [{"name": k, "value": v} for k, v in values.items()]}
                for name, values in settings.items()
            ]
        }

    def job_overrides(self, region: str) -> dict[str, Any]:
        """``ecsPropertiesOverride`` for ``batch:SubmitJob`` of a BatchModelCompilation job: the same
        settings, container by container ("TaskContainerOverrides", AWS Batch API Reference,
        https://docs.aws.amazon.com/batch/latest/APIReference/API_TaskContainerOverrides.html, read
        2026-12-02)."""
        containers = self.task_overrides(region)["containerOverrides"]
        return {"taskProperties": [{"containers": containers}]}


__all__ = [
    "BATCH_STEP_MEMORY_MIB",
    "BATCH_STEP_VCPUS",
    "CHECKPOINT_MOUNT",
    "COMPILE_ENGINES",
    "DEFAULT_ARTIFACT_PREFIX",
    "EXPORT_MEMORY_FACTOR",
    "EXPORT_TARGET_FAMILIES",
    "FARGATE_CPU_UNITS",
    "FARGATE_EPHEMERAL_GIB",
    "FARGATE_INCLUDED_STORAGE_GIB",
    "FARGATE_MAX_WEIGHTS_GIB",
    "FARGATE_MEMORY_MIB",
    "HW_BACKENDS",
    "WORK_DIR",
    "CompileRequest",
    "HostCompile",
    "ModelSource",
    "SourceKind",
    "artifact_key_prefix",
    "check_artifact_prefix",
    "check_config_from",
    "compile_task_usd_per_hour",
    "disk_budget_gib",
    "export_memory_refusal",
    "export_target_refusal",
]
