"""The artifact manifest: what a compiled model in S3 is, written beside it as ``cdk-neuron-artifact.json``.

Plain Python (no ``aws_cdk``). Neuron serving runs static graphs: an export is traced for one batch
size, one sequence length, one tensor-parallel degree and one dtype, by one engine's exporter and one
Neuron compiler, and a runtime loads only what its own SDK can run. None of that is visible in the
files themselves until an instance has pulled them and failed to start. ``cdk-neuron compile``
therefore writes this manifest at the root of the artifact prefix (``<artifact_uri>/cdk-neuron-artifact.json``,
inside the prefix, so the fleets' read grant already covers it), and the fleets refuse an artifact
they cannot serve:

- at synthesis, from a local copy (``Ec2InferenceFleet(artifact_manifest=...)``,
  ``SageMakerInferenceFleet(artifact_manifest=...)``, cdk.json ``serving.model.artifact_manifest``);
- at ``cdk-neuron preflight``, from S3 (the ``artifact manifest`` check).

Each refusal is one :class:`~cdk_neuron.errors.NeuronConfigError` per field that differs, all reported
together. The format is documented in ``docs/compile.md`` ("The artifact manifest") and versioned by
``version``: a reader refuses a version it does not know rather than guessing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cdk_neuron.errors import ErrorCollector, NeuronConfigError, NeuronConfigErrors
from cdk_neuron.planner import BYTES_PER_DTYPE, ServingPlan
from cdk_neuron.serving.engines.image import ContainerImage
from cdk_neuron.serving.model_spec import ModelSpec, parse_s3_uri

MANIFEST_NAME = "cdk-neuron-artifact.json"
"""The manifest's file name, at the root of the artifact prefix."""
MANIFEST_FORMAT = "cdk-neuron-artifact"
"""The ``format`` every manifest declares (a JSON file that is not one is refused, not misread)."""
MANIFEST_VERSION = 1
"""The version this library writes and the newest it reads."""

SourceKind = Literal["checkpoint", "s3", "hub"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("checkpoint", "s3", "hub")

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERSION = re.compile(r"^\d+(\.\d+){1,3}([.+-][\w.+-]*)?$")
# The Neuron SDK release a DLC tag names ("...-sdk2.26.1-...", "...-sdk2.25.0-..."), all components.
_SDK_IN_TAG = re.compile(r"sdk(\d+(?:\.\d+){1,2})")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_KEYS = (
    "format",
    "version",
    "artifact_uri",
    "model",
    "source",
    "engine",
    "neuron",
    "shape",
    "files",
    "compile_seconds",
    "created",
)


@dataclass(frozen=True, kw_only=True)
class ArtifactShape:
    """The static shape an artifact was compiled for.

    :param batch_size: sequences per forward pass (the engine's batch, vLLM's ``max_num_seqs``). Required.
    :param sequence_length: total positions (prompt + generation). Required.
    :param tensor_parallel: NeuronCores the model is sharded over. Required.
    :param dtype: ``bf16``, ``fp16``, ``fp32``, ``fp8`` or ``int8``. Required.
    """

    batch_size: int
    sequence_length: int
    tensor_parallel: int
    dtype: str


@dataclass(frozen=True, kw_only=True)
class ArtifactSource:
    """Where the weights came from.

    :param kind: ``checkpoint`` (a training run's checkpoint directory, converted), ``s3`` (a Hugging
        Face checkpoint under an S3 prefix) or ``hub`` (a Hugging Face Hub id). Required.
    :param uri: the checkpoint directory, ``s3://`` prefix or Hub id. Required.
    :param step: the training step of a ``checkpoint`` source. Default: None.
    :param sha256: the hash of the source files: SHA-256 of the ``sha256sum`` lines (``<hex>  <path>``,
        sorted by path) of every file read. Default: None (a Hub source at a ``revision`` is pinned by it).
    """

    kind: SourceKind
    uri: str
    step: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class ArtifactFile:
    """One file of the artifact: its path under the prefix, size in bytes and SHA-256."""

    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True, kw_only=True)
class ArtifactManifest:
    """What a compiled model artifact holds and how it was made (``cdk-neuron-artifact.json``).

    :param artifact_uri: ``s3://bucket/prefix/`` the artifact was written to. Required.
    :param model_id: the model's Hugging Face Hub id (the base model of a fine-tune). Default: None.
    :param model_revision: the Hub revision (commit) exported. Default: None.
    :param source: where the weights came from. Required.
    :param engine: the serving engine the export is for (``optimum-neuron``, ``vllm-neuron``, ``tgi``).
        Required.
    :param engine_version: the exporter's version (optimum-neuron, NxD Inference). Default: None.
    :param image: ``repository:tag`` of the image that compiled it (the serving image). Required.
    :param neuron_sdk: the Neuron SDK release of that image, e.g. ``"2.26.1"``. Default: None (unknown).
    :param compiler_version: ``neuronx-cc --version`` in that image. Default: None (unknown).
    :param shape: the compiled shape. Required.
    :param files: every file of the artifact, with size and hash. Required (at least one).
    :param compile_seconds: wall-clock seconds the export took. Required.
    :param created: when it finished, ISO 8601 UTC (``2026-12-02T04:00:00Z``). Required.
    """

    artifact_uri: str
    model_id: str | None = None
    model_revision: str | None = None
    source: ArtifactSource
    engine: str
    engine_version: str | None = None
    image: str
    neuron_sdk: str | None = None
    compiler_version: str | None = None
    shape: ArtifactShape
    files: tuple[ArtifactFile, ...] = field(default_factory=tuple)
    compile_seconds: float
    created: str

    # -- reading and writing ----------------------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        """The artifact's size: the sum of its files."""
        return sum(f.bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The manifest as JSON-ready data (the documented layout)."""
        return {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "artifact_uri": self.artifact_uri,
            "model": {"id": self.model_id, "revision": self.model_revision},
            "source": {
                "kind": self.source.kind,
                "uri": self.source.uri,
                "step": self.source.step,
                "sha256": self.source.sha256,
            },
            "engine": {"name": self.engine, "version": self.engine_version, "image": self.image},
            "neuron": {"sdk": self.neuron_sdk, "compiler": self.compiler_version},
            "shape": {
                "batch_size": self.shape.batch_size,
                "sequence_length": self.shape.sequence_length,
                "tensor_parallel": self.shape.tensor_parallel,
                "dtype": self.shape.dtype,
            },
            "files": [{"path": f.path, "bytes": f.bytes, "sha256": f.sha256} for f in self.files],
            "compile_seconds": self.compile_seconds,
            "created": self.created,
        }

    def to_json(self) -> str:
        """The manifest file's text (indented, keys in the documented order, a final newline)."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, where: str = MANIFEST_NAME) -> ArtifactManifest:
        """Parse and validate a manifest; every bad field is reported at once (``where`` names the file)."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as error:
            raise NeuronConfigError(
                where, "<unreadable>", f"is not JSON ({error}); rewrite it with cdk-neuron compile"
            ) from None
        return cls.from_dict(data, where=where)

    @classmethod
    def from_file(cls, path: str | Path) -> ArtifactManifest:
        """Read a local manifest (e.g. ``aws s3 cp s3://.../cdk-neuron-artifact.json .``)."""
        try:
            text = Path(path).read_bytes()
        except OSError as error:
            raise NeuronConfigError(
                "artifact_manifest",
                str(path),
                f"cannot be read ({error.strerror}); copy it from the artifact prefix "
                f"(aws s3 cp <artifact_uri>{MANIFEST_NAME} {path})",
            ) from None
        return cls.from_json(text, where=str(path))

    @classmethod
    def from_dict(cls, data: object, *, where: str = MANIFEST_NAME) -> ArtifactManifest:
        """Validate parsed JSON (see :meth:`from_json`)."""
        reader = _Reader(where)
        return reader.manifest(data)

    # -- what a fleet checks -------------------------------------------------------------------------

    def mismatches(
        self, model: ModelSpec, plan: ServingPlan, engine_name: str, image: ContainerImage | None
    ) -> list[NeuronConfigError]:
        """Every way this artifact differs from what a fleet would serve, one error per field.

        Compared: the artifact URI (the manifest must describe the artifact served), the compiled
        batch, sequence length, TP and dtype against the fleet's graph shape (``ModelSpec`` compiled
        fields, else its served ones; the plan's TP), the engine, and the Neuron SDK of the fleet's
        image (from its tag, e.g. ``sdk2.26.1``; an image whose tag names no SDK must be the very
        image that compiled it). ``image`` None: the image is not compared.
        """
        found: list[NeuronConfigError] = []
        # cdk-neuron compile takes no shape flags: it compiles the fleet's own current shape and engine.
        recompile = "or run cdk-neuron compile again to a new --artifact-uri (it compiles the fleet's"
        if model.artifact_uri is None:
            found.append(
                NeuronConfigError(
                    "model.artifact_uri",
                    None,
                    f"the manifest describes {self.artifact_uri}: set artifact_uri to it to serve it",
                )
            )
        elif parse_s3_uri(model.artifact_uri).uri != parse_s3_uri(self.artifact_uri).uri:
            found.append(
                NeuronConfigError(
                    "model.artifact_uri",
                    model.artifact_uri,
                    f"the manifest describes another artifact ({self.artifact_uri}): use the manifest "
                    f"beside the artifact served ({MANIFEST_NAME} at its prefix)",
                )
            )
        for name, served, compiled in (
            ("batch_size", model.graph_batch_size, self.shape.batch_size),
            ("sequence_length", model.graph_sequence_length, self.shape.sequence_length),
        ):
            if served != compiled:
                found.append(
                    NeuronConfigError(
                        f"shape.{name}",
                        served,
                        f"the artifact was compiled for {name} {compiled} and the fleet's graph is {served} "
                        f"(model.compiled_{name}, else model.{name}; Neuron graphs have static shapes): set it "
                        f"to {compiled} {recompile} {name} {served})",
                    )
                )
        if plan.tensor_parallel != self.shape.tensor_parallel:
            found.append(
                NeuronConfigError(
                    "shape.tensor_parallel",
                    plan.tensor_parallel,
                    f"the artifact is sharded for TP {self.shape.tensor_parallel}: set "
                    f"model.tensor_parallel={self.shape.tensor_parallel} (and an instance with that many "
                    f"NeuronCores) {recompile} TP {plan.tensor_parallel})",
                )
            )
        if model.dtype.lower() != self.shape.dtype:
            found.append(
                NeuronConfigError(
                    "shape.dtype",
                    model.dtype,
                    f"the artifact was compiled in {self.shape.dtype}: set model.dtype={self.shape.dtype!r} "
                    f"{recompile} dtype {model.dtype.lower()})",
                )
            )
        if engine_name != self.engine:
            found.append(
                NeuronConfigError(
                    "engine",
                    engine_name,
                    f"the artifact was exported for {self.engine}, whose layout this engine does not load: "
                    f"serve it with engine {self.engine!r}, or export it for {engine_name}: cdk-neuron compile "
                    "exports for optimum-neuron only; export other engines by hand (serving README, "
                    '"Precompiled artifacts")',
                )
            )
        if image is not None:
            found.extend(self._image_mismatch(image))
        return found

    def _image_mismatch(self, image: ContainerImage) -> list[NeuronConfigError]:
        served = image_sdk(image)
        reference = f"{image.repository}:{image.tag}"
        if served is not None and self.neuron_sdk is not None:
            # Compare the components both name (a tag may say sdk2.26 or sdk2.26.1).
            a, b = served.split("."), self.neuron_sdk.split(".")
            width = min(len(a), len(b))
            if a[:width] == b[:width]:
                return []
            return [
                NeuronConfigError(
                    "image.neuron_sdk",
                    served,
                    f"the artifact was compiled by Neuron SDK {self.neuron_sdk} ({self.image}) and {reference} runs "
                    f"{served}: a Neuron runtime loads graphs of its own compiler release; serve with an image "
                    f"of SDK {self.neuron_sdk} or recompile with this one (cdk-neuron compile uses the fleet's image)",
                )
            ]
        if reference == self.image:
            return []
        return [
            NeuronConfigError(
                "image",
                reference,
                f"its tag names no Neuron SDK, and the artifact was compiled in {self.image}"
                + (f" (SDK {self.neuron_sdk})" if self.neuron_sdk else "")
                + ": serve with that image, or recompile with this one (cdk-neuron compile uses the fleet's image)",
            )
        ]

    def check_fleet(
        self, model: ModelSpec, plan: ServingPlan, engine_name: str, image: ContainerImage | None
    ) -> None:
        """Raise every :meth:`mismatches` at once (``NeuronConfigErrors``); return when there are none."""
        found = self.mismatches(model, plan, engine_name, image)
        if found:
            raise NeuronConfigErrors(found) if len(found) > 1 else found[0]


def image_sdk(image: ContainerImage) -> str | None:
    """The Neuron SDK release an image's tag names (``...-sdk2.26.1-...`` -> ``"2.26.1"``), or None."""
    match = _SDK_IN_TAG.search(image.tag)
    return match[1] if match else None


def source_hash(lines: Mapping[str, str]) -> str:
    """The :attr:`ArtifactSource.sha256` of files given as ``{path: sha256}``: SHA-256 of the
    ``sha256sum`` lines sorted by path (what the compile program computes with ``sha256sum``)."""
    import hashlib

    text = "".join(f"{digest}  {path}\n" for path, digest in sorted(lines.items()))
    return hashlib.sha256(text.encode()).hexdigest()


class _Reader:
    """Validates parsed manifest JSON, keeping every error (fields named ``<where>:<key.path>``)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.found = ErrorCollector()

    def error(self, key: str, value: object, fix: str) -> None:
        self.found.add(NeuronConfigError(f"{self.where}:{key}", value, fix))

    def section(self, data: Mapping[str, Any], key: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
        value = data.get(key)
        if not isinstance(value, dict):
            self.error(key, value, f"must be an object with {', '.join(keys)}")
            return {}
        for extra in sorted(set(value) - set(keys)):
            self.error(f"{key}.{extra}", value[extra], f"is not a manifest field; use {', '.join(keys)}")
        return value

    def text(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        *,
        optional: bool = False,
        pattern: re.Pattern[str] | None = None,
        what: str = "a non-empty string",
    ) -> str | None:
        value = data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or (pattern is not None and not pattern.match(value)):
            self.error(path, value, f"must be {what}" + (" or null" if optional else ""))
            return None
        return value

    def whole(
        self, data: Mapping[str, Any], key: str, path: str, *, optional: bool = False, minimum: int = 1
    ) -> int | None:
        value = data.get(key)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.error(path, value, f"must be a whole number >= {minimum}" + (" or null" if optional else ""))
            return None
        return value

    def manifest(self, data: object) -> ArtifactManifest:
        if not isinstance(data, dict):
            raise NeuronConfigError(
                self.where, type(data).__name__, "must hold a JSON object (a cdk-neuron artifact manifest)"
            )
        if data.get("format") != MANIFEST_FORMAT:
            raise NeuronConfigError(
                f"{self.where}:format",
                data.get("format"),
                f'must be "{MANIFEST_FORMAT}": this is not a cdk-neuron artifact manifest',
            )
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MANIFEST_VERSION:
            raise NeuronConfigError(
                f"{self.where}:version",
                version,
                f"this cdk-neuron reads manifest versions 1 to {MANIFEST_VERSION}; upgrade cdk-neuron to read it",
            )
        for extra in sorted(set(data) - set(_KEYS)):
            self.error(extra, data[extra], f"is not a manifest field; use {', '.join(_KEYS)}")
        artifact_uri = self.text(data, "artifact_uri", "artifact_uri")
        if artifact_uri is not None:
            try:
                artifact_uri = parse_s3_uri(artifact_uri, field=f"{self.where}:artifact_uri").uri
            except NeuronConfigError as error:
                self.found.add(error)
        model = self.section(data, "model", ("id", "revision"))
        model_id = self.text(model, "id", "model.id", optional=True)
        revision = self.text(model, "revision", "model.revision", optional=True)
        source = self._source(data)
        engine = self.section(data, "engine", ("name", "version", "image"))
        engine_name = self.text(engine, "name", "engine.name")
        engine_version = self.text(
            engine,
            "version",
            "engine.version",
            optional=True,
            pattern=_VERSION,
            what="a version such as 0.4.5",
        )
        image = self.text(engine, "image", "engine.image", what="the compiling image's repository:tag")
        neuron = self.section(data, "neuron", ("sdk", "compiler"))
        sdk = self.text(
            neuron,
            "sdk",
            "neuron.sdk",
            optional=True,
            pattern=_VERSION,
            what="a Neuron SDK release such as 2.26.1",
        )
        compiler = self.text(
            neuron,
            "compiler",
            "neuron.compiler",
            optional=True,
            pattern=_VERSION,
            what="a neuronx-cc version such as 2.21.18209.0",
        )
        shape = self._shape(data)
        files = self._files(data)
        seconds = data.get("compile_seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            self.error("compile_seconds", seconds, "must be a number of seconds >= 0")
        created = self.text(
            data,
            "created",
            "created",
            pattern=_TIMESTAMP,
            what="an ISO 8601 UTC time such as 2026-12-02T04:00:00Z",
        )
        self.found.raise_if_any()
        assert artifact_uri and source and engine_name and image and shape and created is not None
        return ArtifactManifest(
            artifact_uri=artifact_uri,
            model_id=model_id,
            model_revision=revision,
            source=source,
            engine=engine_name,
            engine_version=engine_version,
            image=image,
            neuron_sdk=sdk,
            compiler_version=compiler,
            shape=shape,
            files=files,
            compile_seconds=float(seconds),  # type: ignore[arg-type]
            created=created,
        )

    def _source(self, data: Mapping[str, Any]) -> ArtifactSource | None:
        section = self.section(data, "source", ("kind", "uri", "step", "sha256"))
        kind = section.get("kind")
        if kind not in SOURCE_KINDS:
            self.error("source.kind", kind, f"must be one of {', '.join(SOURCE_KINDS)}")
        uri = self.text(section, "uri", "source.uri")
        step = self.whole(section, "step", "source.step", optional=True, minimum=0)
        digest = self.text(
            section, "sha256", "source.sha256", optional=True, pattern=_SHA256, what="64 lowercase hex digits"
        )
        if kind not in SOURCE_KINDS or uri is None:
            return None
        return ArtifactSource(kind=kind, uri=uri, step=step, sha256=digest)

    def _shape(self, data: Mapping[str, Any]) -> ArtifactShape | None:
        section = self.section(data, "shape", ("batch_size", "sequence_length", "tensor_parallel", "dtype"))
        batch = self.whole(section, "batch_size", "shape.batch_size")
        sequence = self.whole(section, "sequence_length", "shape.sequence_length")
        tp = self.whole(section, "tensor_parallel", "shape.tensor_parallel")
        dtype = section.get("dtype")
        if dtype not in BYTES_PER_DTYPE:
            self.error("shape.dtype", dtype, f"must be one of {', '.join(sorted(BYTES_PER_DTYPE))}")
            return None
        if batch is None or sequence is None or tp is None:
            return None
        return ArtifactShape(batch_size=batch, sequence_length=sequence, tensor_parallel=tp, dtype=dtype)

    def _files(self, data: Mapping[str, Any]) -> tuple[ArtifactFile, ...]:
        value = data.get("files")
        if not isinstance(value, list) or not value:
            self.error("files", value, "must list every file of the artifact ({path, bytes, sha256})")
            return ()
        files: list[ArtifactFile] = []
        for index, item in enumerate(value):
            key = f"files[{index}]"
            if not isinstance(item, dict) or set(item) != {"path", "bytes", "sha256"}:
                self.error(key, item, "must be an object with exactly path, bytes and sha256")
                continue
            path = item["path"]
            if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
                self.error(f"{key}.path", path, "must be a relative path under the artifact prefix")
                continue
            size = self.whole(item, "bytes", f"{key}.bytes", minimum=0)
            digest = self.text(
                item, "sha256", f"{key}.sha256", pattern=_SHA256, what="64 lowercase hex digits"
            )
            if size is not None and digest is not None:
                files.append(ArtifactFile(path, size, digest))
        return tuple(files)


__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "MANIFEST_VERSION",
    "SOURCE_KINDS",
    "ArtifactFile",
    "ArtifactManifest",
    "ArtifactShape",
    "ArtifactSource",
    "SourceKind",
    "image_sdk",
    "source_hash",
]
