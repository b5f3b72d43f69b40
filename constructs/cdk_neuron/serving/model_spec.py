"""What a fleet serves: :class:`ModelSpec`, the model and the static shape it runs at.

Plain Python (no ``aws_cdk``): the spec validates itself on construction and sizes itself with
:func:`cdk_neuron.planner.size_model`, so the CLI and tests can use it without synthesizing.

Neuron serving runs static graphs: a compiled artifact was traced for one batch size, one sequence
length and one tensor-parallel degree (Neuron LLM graphs have fixed input dimensions
``[batch_size, max_length]``: source TGI-DOC in :data:`cdk_neuron.catalog.SOURCES`). A spec that
asks to serve a bigger batch, a longer sequence or another TP than its artifact was compiled for is
refused here, before anything is synthesized.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.planner import BYTES_PER_DTYPE, ServingPlan, host_memory_override_reason, size_model
from cdk_neuron.validation import HF_MODEL_ID, S3_PREFIX_URI, parameter_count

# Bucket naming rules (3-63 chars, lowercase letters, digits, dots, hyphens; starts and ends with a
# letter or digit). The key prefix may not be empty: the IAM grants are scoped to it.
# Hugging Face Hub ids: "name" or "org/name" (letters, digits, "-", "_", ".").


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix, parsed from ``s3://bucket/prefix`` (:func:`parse_s3_uri`).

    :param bucket: the bucket name. Required.
    :param prefix: the key prefix, without slashes at either end. Required.
    """

    bucket: str
    prefix: str

    @property
    def uri(self) -> str:
        """The prefix as a directory URI, with a trailing slash (what SageMaker's S3Prefix expects)."""
        return f"s3://{self.bucket}/{self.prefix}/"

    @property
    def object_pattern(self) -> str:
        """The key pattern of every object under the prefix, for IAM ``s3:GetObject``."""
        return f"{self.prefix}/*"


def parse_s3_uri(uri: str, *, field: str = "artifact_uri") -> S3Location:
    """Parse ``s3://bucket/prefix``; refuse anything else (no bucket root, no other scheme)."""
    match = S3_PREFIX_URI.match(uri) if isinstance(uri, str) else None
    if match is None or ".." in uri:
        raise NeuronConfigError(
            field,
            uri,
            "use s3://<bucket>/<prefix> (a key prefix is required: IAM read access is scoped to it)",
        )
    return S3Location(bucket=match["bucket"], prefix=match["prefix"].rstrip("/"))


def _optional_positive(field: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NeuronConfigError(field, value, "must be a whole number >= 1, or None")
    return value


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A model to serve on Neuron, and the static shape it is served at.

    Give ``model_id`` (a Hugging Face Hub id), ``artifact_uri`` (``s3://bucket/prefix`` of precompiled
    Neuron artifacts), or both: then the artifacts are what is served and ``model_id`` names them
    (the model name clients see, and where the tokenizer came from). Serving from ``artifact_uri`` is
    what makes scale-out fast: new instances download compiled graphs instead of compiling, and
    SageMaker can then run with network isolation. The artifacts must hold the weights too:
    ``optimum-cli export neuron`` saves them only when it exports from a local copy of the checkpoint
    (README "Precompiled artifacts"; ``cdk-neuron preflight`` checks the prefix).

    :param model_id: Hugging Face Hub id, e.g. ``"meta-llama/Llama-3.1-8B-Instruct"``. Default: None.
    :param artifact_uri: ``s3://bucket/prefix`` of a self-contained precompiled export (graphs,
        weights, config, tokenizer). Default: None.
    :param parameters: parameter count, e.g. ``8_000_000_000``. Required: it drives HBM sizing, disk
        sizes and start-up timeouts.
    :param dtype: weight dtype (``bf16``, ``fp16``, ``fp32``, ``fp8``, ``int8``). Default: ``"bf16"``.
    :param sequence_length: maximum total tokens per sequence (prompt + generation). Default: 4096.
    :param batch_size: sequences served concurrently per replica (continuous-batching slots).
        Default: 1.
    :param tensor_parallel: NeuronCores per replica. Default: None - the compiled TP when
        ``compiled_tensor_parallel`` is given, else :func:`~cdk_neuron.planner.size_model` picks the
        smallest TP that fits, so small models run several replicas per instance.
    :param compiled_batch_size: batch size the artifact was compiled for. Default: None - the artifact
        was compiled for ``batch_size``.
    :param compiled_sequence_length: sequence length the artifact was compiled for. Default: None -
        compiled for ``sequence_length``.
    :param compiled_tensor_parallel: TP degree the artifact was compiled for. Default: None - compiled
        for the planned TP.
    :param max_input_tokens: longest prompt accepted (TGI's ``MAX_INPUT_TOKENS``); must be below
        ``sequence_length``. Default: None - the engine's default (TGI: half the sequence length).
    :param layers: transformer layers, for the KV-cache estimate. Default: None - nearest reference
        model shape (see :func:`~cdk_neuron.planner.size_model`).
    :param kv_heads: key/value heads, for the KV-cache estimate. Default: None - reference shape.
    :param hidden_size: hidden size, for the KV-cache estimate of multi-head attention models.
        Default: None.
    :param host_memory_override: the reason the host-memory check does not apply to this model, e.g.
        ``"measured: 15.4 GiB peak RSS while loading on inf2.xlarge, 2026-11-30"``. The check refuses an
        instance whose RAM cannot hold the weights of its replicas (15/16 of it, calibrated on the 7-8B
        deployments published on inf2.xlarge); with a reason it is skipped, and the plan records why.
        Default: None - checked.
    """

    model_id: str | None = None
    artifact_uri: str | None = None
    parameters: int
    dtype: str = "bf16"
    sequence_length: int = 4096
    batch_size: int = 1
    tensor_parallel: int | None = None
    compiled_batch_size: int | None = None
    compiled_sequence_length: int | None = None
    compiled_tensor_parallel: int | None = None
    max_input_tokens: int | None = None
    layers: int | None = None
    kv_heads: int | None = None
    hidden_size: int | None = None
    host_memory_override: str | None = None

    def __post_init__(self) -> None:
        """Every field is checked, and every bad one reported at once (``NeuronConfigErrors``)."""
        found = ErrorCollector()
        if self.model_id is None and self.artifact_uri is None:
            found.add(
                NeuronConfigError(
                    "model_id",
                    None,
                    "give model_id (a Hugging Face Hub id), artifact_uri (s3://bucket/prefix of precompiled "
                    "Neuron artifacts), or both",
                )
            )
        if self.model_id is not None and (
            not isinstance(self.model_id, str) or not HF_MODEL_ID.match(self.model_id)
        ):
            found.add(
                NeuronConfigError(
                    "model_id", self.model_id, 'use a Hugging Face Hub id such as "org/model-name"'
                )
            )
        if self.artifact_uri is not None:
            found.run(lambda: parse_s3_uri(self.artifact_uri or ""))
        # One rule for parameter counts everywhere (size_model, the checkpoint advisor, cdk.json): a
        # whole number, also when written 8e9.
        parameters = found.run(lambda: parameter_count("parameters", self.parameters))
        if parameters is not None:
            object.__setattr__(self, "parameters", parameters)
        if not isinstance(self.dtype, str) or self.dtype.lower() not in BYTES_PER_DTYPE:
            found.add(
                NeuronConfigError("dtype", self.dtype, f"use one of {', '.join(sorted(BYTES_PER_DTYPE))}")
            )
        for field in ("sequence_length", "batch_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                found.add(NeuronConfigError(field, value, "must be a whole number >= 1"))
        for field in (
            "tensor_parallel",
            "compiled_batch_size",
            "compiled_sequence_length",
            "compiled_tensor_parallel",
            "max_input_tokens",
            "layers",
            "kv_heads",
            "hidden_size",
        ):
            found.run(functools.partial(_optional_positive, field, getattr(self, field)))
        reason = found.run(functools.partial(host_memory_override_reason, self.host_memory_override))
        found.raise_if_any()
        object.__setattr__(self, "host_memory_override", reason)
        self._check_static_shape()

    def _check_static_shape(self) -> None:
        """Refuse serving parameters the compiled graph cannot run (Neuron shapes are static)."""
        if self.compiled_batch_size is not None and self.batch_size > self.compiled_batch_size:
            raise NeuronConfigError(
                "batch_size",
                self.batch_size,
                f"the artifact was compiled for batch {self.compiled_batch_size}; Neuron graphs have static "
                f"shapes, so serve batch_size <= {self.compiled_batch_size} or recompile",
            )
        if self.compiled_sequence_length is not None and self.sequence_length > self.compiled_sequence_length:
            raise NeuronConfigError(
                "sequence_length",
                self.sequence_length,
                f"the artifact was compiled for {self.compiled_sequence_length} positions; serve "
                f"sequence_length <= {self.compiled_sequence_length} or recompile",
            )
        if (
            self.compiled_tensor_parallel is not None
            and self.tensor_parallel is not None
            and self.tensor_parallel != self.compiled_tensor_parallel
        ):
            raise NeuronConfigError(
                "tensor_parallel",
                self.tensor_parallel,
                f"the artifact was sharded for TP {self.compiled_tensor_parallel}; a compiled model runs only "
                f"at its own TP, so use tensor_parallel={self.compiled_tensor_parallel} (or leave it unset)",
            )
        if self.max_input_tokens is not None and self.max_input_tokens >= self.sequence_length:
            raise NeuronConfigError(
                "max_input_tokens",
                self.max_input_tokens,
                f"must be below sequence_length ({self.sequence_length}) to leave room for generated tokens",
            )

    # ----------------------------------------------------------------------------------------
    # Derived values
    # ----------------------------------------------------------------------------------------

    @property
    def artifact(self) -> S3Location | None:
        """The parsed ``artifact_uri``, or None when the model comes from the Hub."""
        return parse_s3_uri(self.artifact_uri) if self.artifact_uri is not None else None

    @property
    def precompiled(self) -> bool:
        """Whether instances load compiled artifacts from S3 (no Hub download, no compilation)."""
        return self.artifact_uri is not None

    @property
    def served_model_name(self) -> str:
        """The name clients use in requests: the Hub id, else the artifact prefix's last segment.

        The engines start the server with it (:meth:`ServingEngine.listed_model_name`), so
        ``/v1/models`` lists it even when the weights come from an artifact directory.
        """
        if self.model_id is not None:
            return self.model_id
        artifact = self.artifact
        assert artifact is not None
        return artifact.prefix.rsplit("/", 1)[-1]

    @property
    def graph_batch_size(self) -> int:
        """The batch the graph is compiled for: HBM for its KV cache is reserved whatever is served."""
        return self.compiled_batch_size or self.batch_size

    @property
    def graph_sequence_length(self) -> int:
        """The sequence length the graph is compiled for."""
        return self.compiled_sequence_length or self.sequence_length

    @property
    def fixed_tensor_parallel(self) -> int | None:
        """The TP the spec pins (given, or fixed by the compiled artifact), else None."""
        return self.tensor_parallel or self.compiled_tensor_parallel

    def plan(self, instance_type: str | None = None) -> ServingPlan:
        """Size the model with :func:`~cdk_neuron.planner.size_model` at its compiled shape.

        Without ``instance_type`` the planner picks the cheapest instance that fits; with it, the
        instance is validated and refused (naming one that fits) when the model does not fit its HBM
        or the TP exceeds its NeuronCores.
        """
        return size_model(
            self.parameters,
            dtype=self.dtype,
            sequence_length=self.graph_sequence_length,
            batch_size=self.graph_batch_size,
            kv_heads=self.kv_heads,
            layers=self.layers,
            hidden_size=self.hidden_size,
            instance_type=instance_type,
            tensor_parallel=self.fixed_tensor_parallel,
            host_memory_override=self.host_memory_override,
        )


__all__ = ["ModelSpec", "S3Location", "parse_s3_uri"]
