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
MANIFEST_VERSION = 2
"""The version this library writes and the newest it reads. Version 2 added ``engine.image_id`` and
``neuron.target``; a version 1 manifest is still read (those fields None)."""
TARGETS = ("trn1", "trn2")
"""``neuron.target``: the Neuron target the graphs were compiled for, as optimum-neuron names it
(``optimum/neuron/utils/instance.py`` @v0.4.5 ``INSTANCE_VALUE_MAP``: inf2, trn1 and trn1n compile for
``trn1``; trn2 for ``trn2``). An export loads only on its target (``_from_pretrained``)."""

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
    :param sha256: the hash of the source: SHA-256 of the ``sha256sum`` lines (``<hex>  <path>``, sorted
        by path) of every file the export reads (config, tokenizer and weights; a training checkpoint's
        ``model/`` shards, never ``optim/``; files taken from ``config_from`` as ``config-from/<name>``).
        A Hub source's weights are hashed by the Hub (their LFS sha256), so the same commit always gives
        the same hash. Default: None.
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
    :param engine_version: the exporter's version as the export records it (optimum-neuron's
        ``neuron_config.json`` ``optimum_neuron_version``). Default: None (unknown).
    :param image: ``repository:tag`` of the image that compiled it (the serving image, as the task
        metadata endpoint reports it). Required.
    :param image_id: that image's ID (``sha256:...``) from the task metadata endpoint. Default: None.
    :param neuron_sdk: the Neuron SDK release that image's tag names, e.g. ``"2.26.1"``. Default: None.
    :param compiler_version: the neuronx-cc that compiled it (``neuron_config.json``
        ``neuronxcc_version``). Default: None (unknown).
    :param target: the Neuron target compiled for (:data:`TARGETS`). Default: None (a version 1 manifest).
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
    image_id: str | None = None
    neuron_sdk: str | None = None
    compiler_version: str | None = None
    target: str | None = None
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
            "engine": {
                "name": self.engine,
                "version": self.engine_version,
                "image": self.image,
                "image_id": self.image_id,
            },
            "neuron": {"sdk": self.neuron_sdk, "compiler": self.compiler_version, "target": self.target},
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
        fields, else its served ones; the plan's TP), the target against the plan's instance family,
        the engine, and the versions the fleet's image loads. optimum-neuron refuses an export whose
        ``optimum_neuron_version`` or ``neuronxcc_version`` is not exactly the installed one
        (``NeuronConfig.from_dict``, optimum/neuron/configuration_utils.py @v0.4.5), so when the
        fleet's tag names its optimum-neuron release, ``engine.version`` must equal it, and
        ``neuron.compiler`` must equal the neuronx-cc that release pins
        (:data:`~cdk_neuron.serving.engines.image.OPTIMUM_NEURON_COMPILERS`). For an image whose tag
        names no optimum-neuron release, the Neuron SDK release the tags name is compared, and an image
        that names neither must be the very image that compiled it. ``image`` None: no image check.
        """
        found: list[NeuronConfigError] = []
        again = "or run cdk-neuron compile again (it compiles the fleet's current shape and image) to a new --artifact-uri"
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
                    f"beside the artifact served ({MANIFEST_NAME} at its prefix); a copy under another prefix "
                    "keeps the original's manifest and is refused: compile into this prefix's bucket "
                    "(docs/compile.md, A copied artifact is refused)",
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
                        f"(Neuron graphs have static shapes): set serving.model.compiled_{name} (else "
                        f"serving.model.{name}) to {compiled} and redeploy, {again}",
                    )
                )
        if plan.tensor_parallel != self.shape.tensor_parallel:
            found.append(
                NeuronConfigError(
                    "shape.tensor_parallel",
                    plan.tensor_parallel,
                    f"the artifact is sharded for TP {self.shape.tensor_parallel}: set "
                    f"serving.model.tensor_parallel to {self.shape.tensor_parallel} (on an instance with that "
                    f"many NeuronCores) and redeploy, {again}",
                )
            )
        if model.dtype.lower() != self.shape.dtype:
            found.append(
                NeuronConfigError(
                    "shape.dtype",
                    model.dtype,
                    f"the artifact was compiled in {self.shape.dtype}: set serving.model.dtype to "
                    f"{self.shape.dtype!r} and redeploy, {again}",
                )
            )
        wanted = fleet_target(plan.instance_type)
        if self.target is not None and wanted is not None and self.target != wanted:
            found.append(
                NeuronConfigError(
                    "neuron.target",
                    plan.instance_type,
                    f"the artifact was compiled for target {self.target} and {plan.instance_type} runs {wanted} "
                    f"graphs (optimum-neuron refuses another target): serve it on a {self.target} instance, {again}",
                )
            )
        if engine_name != self.engine:
            found.append(
                NeuronConfigError(
                    "engine",
                    engine_name,
                    f"the artifact was exported for {self.engine}, whose layout this engine does not load: "
                    f"set serving.engine to {self.engine!r} and redeploy, {again}",
                )
            )
        if image is not None:
            # The versions an export records are its engine's: compared only with a fleet of that engine.
            found.extend(self._image_mismatch(image, again, same_engine=engine_name == self.engine))
        return found

    def _image_mismatch(
        self, image: ContainerImage, again: str, *, same_engine: bool
    ) -> list[NeuronConfigError]:
        reference = f"{image.repository}:{image.tag}"
        optimum = image.optimum_neuron_version
        if same_engine and optimum is not None and self.engine_version is not None:
            served = ".".join(map(str, optimum))
            found = []
            if served != self.engine_version:
                found.append(
                    NeuronConfigError(
                        "engine.version",
                        served,
                        f"the artifact was exported by optimum-neuron {self.engine_version} ({self.image}) and "
                        f"{reference} runs {served}, which refuses an export of another version: serve with an "
                        f"image of optimum-neuron {self.engine_version}, {again}",
                    )
                )
            compiler = image.neuronx_cc_version
            if (
                compiler is not None
                and self.compiler_version is not None
                and compiler != self.compiler_version
            ):
                found.append(
                    NeuronConfigError(
                        "neuron.compiler",
                        compiler,
                        f"the artifact was compiled by neuronx-cc {self.compiler_version} and {reference} has "
                        f"{compiler} (optimum-neuron {served} pins it), which refuses graphs of another compiler: "
                        f"serve with the compiling image, {again}",
                    )
                )
            return found
        served_sdk = image_sdk(image)
        if served_sdk is not None and self.neuron_sdk is not None:
            # Compare the components both name (a tag may say sdk2.26 or sdk2.26.1).
            a, b = served_sdk.split("."), self.neuron_sdk.split(".")
            width = min(len(a), len(b))
            if a[:width] == b[:width]:
                return []
            return [
                NeuronConfigError(
                    "image.neuron_sdk",
                    served_sdk,
                    f"the artifact was compiled by Neuron SDK {self.neuron_sdk} ({self.image}) and {reference} runs "
                    f"{served_sdk}: a Neuron runtime loads graphs of its own compiler release; serve with an image "
                    f"of SDK {self.neuron_sdk}, {again}",
                )
            ]
        if reference == self.image:
            return []
        return [
            NeuronConfigError(
                "image",
                reference,
                f"its tag names no optimum-neuron release or Neuron SDK, and the artifact was compiled in {self.image}"
                + (f" (SDK {self.neuron_sdk})" if self.neuron_sdk else "")
                + f": serve with that image, {again}",
            )
        ]

    def check_fleet(
        self, model: ModelSpec, plan: ServingPlan, engine_name: str, image: ContainerImage | None
    ) -> None:
        """Raise every :meth:`mismatches` at once (``NeuronConfigErrors``); return when there are none."""
        found = self.mismatches(model, plan, engine_name, image)
        if found:
            raise NeuronConfigErrors(found) if len(found) > 1 else found[0]


def fleet_target(instance_type: str) -> str | None:
    """The Neuron target an instance type runs (:data:`TARGETS`): inf2, trn1 and trn1n run ``trn1``
    graphs, trn2 ``trn2``; None for a family optimum-neuron does not name."""
    family = instance_type.split(".", 1)[0]
    return {"inf2": "trn1", "trn1": "trn1", "trn1n": "trn1", "trn2": "trn2"}.get(family)


def image_sdk(image: ContainerImage) -> str | None:
    """The Neuron SDK release an image's tag names (``...-sdk2.26.1-...`` -> ``"2.26.1"``), or None."""
    match = _SDK_IN_TAG.search(image.tag)
    return match[1] if match else None


def source_hash(lines: Mapping[str, str]) -> str:
    """The :attr:`ArtifactSource.sha256` of files given as ``{path: sha256}``: SHA-256 of the
    ``sha256sum`` lines sorted by path (what the compile program computes)."""
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
        engine = self.section(data, "engine", ("name", "version", "image", "image_id"))
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
        image_id = self.text(
            engine, "image_id", "engine.image_id", optional=True, what="an image ID such as sha256:..."
        )
        neuron = self.section(data, "neuron", ("sdk", "compiler", "target"))
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
            what="a neuronx-cc version such as 2.21.33363.0",
        )
        target = neuron.get("target")
        if target is not None and target not in TARGETS:
            self.error("neuron.target", target, f"must be one of {', '.join(TARGETS)} or null")
            target = None
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
            image_id=image_id,
            neuron_sdk=sdk,
            compiler_version=compiler,
            target=target,
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
    "TARGETS",
    "ArtifactFile",
    "ArtifactManifest",
    "ArtifactShape",
    "ArtifactSource",
    "SourceKind",
    "fleet_target",
    "image_sdk",
    "source_hash",
]
