"""The artifact manifest (cdk-neuron-artifact.json): its format, its validation, and the fleets that
refuse an artifact compiled for something else, one error per field that differs."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_neuron.serving import ContainerImage, ModelSpec, ServingEngine
from cdk_neuron.serving.artifact_manifest import (
    MANIFEST_NAME,
    MANIFEST_VERSION,
    ArtifactManifest,
    fleet_target,
    image_sdk,
    source_hash,
)

URI = "s3://my-models/llama-3.1-8b/neuron/"
OPTIMUM_IMAGE = "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
DIGEST = "a" * 64


def manifest_data(**replace: Any) -> dict[str, Any]:
    """A manifest as cdk-neuron compile writes it: Llama-3.1-8B for inf2.xlarge (TP 2, batch 1, 4096)."""
    data: dict[str, Any] = {
        "format": "cdk-neuron-artifact",
        "version": 2,
        "artifact_uri": URI,
        "model": {"id": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f249a16976918f6564b8830bc894c89659"},
        "source": {"kind": "checkpoint", "uri": "/checkpoints/run-7/step-1200", "step": 1200, "sha256": DIGEST},
        "engine": {"name": "optimum-neuron", "version": "0.4.5", "image": OPTIMUM_IMAGE, "image_id": "sha256:" + "d" * 64},
        "neuron": {"sdk": "2.26.1", "compiler": "2.21.33363.0", "target": "trn1"},
        "shape": {"batch_size": 1, "sequence_length": 4096, "tensor_parallel": 2, "dtype": "bf16"},
        "files": [
            {"path": "model.pt", "bytes": 1234, "sha256": "b" * 64},
            {"path": "checkpoint/weights/tp0_sharded_checkpoint.safetensors", "bytes": 8_000_000_000, "sha256": "c" * 64},
        ],
        "compile_seconds": 1512.5,
        "created": "2026-12-02T04:00:00Z",
    }  # fmt: skip
    for key, value in replace.items():
        section, _, leaf = key.partition("__")
        if leaf:
            data[section][leaf] = value
        else:
            data[section] = value
    return data


def parse(data: dict[str, Any]) -> ArtifactManifest:
    return ArtifactManifest.from_json(json.dumps(data))


MODEL = ModelSpec(model_id="meta-llama/Llama-3.1-8B-Instruct", artifact_uri=URI, parameters=8_000_000_000)


# --------------------------------------------------------------------------------------------
# The format
# --------------------------------------------------------------------------------------------


def test_a_manifest_reads_back_what_was_written() -> None:
    manifest = parse(manifest_data())
    assert manifest.shape.tensor_parallel == 2 and manifest.source.step == 1200
    assert manifest.total_bytes == 8_000_001_234
    again = ArtifactManifest.from_json(manifest.to_json())
    assert again == manifest
    assert json.loads(manifest.to_json()) == manifest_data()
    assert list(json.loads(manifest.to_json())) == list(manifest_data())  # the documented key order


def test_the_uri_is_kept_as_a_directory() -> None:
    assert parse(manifest_data(artifact_uri="s3://my-models/llama-3.1-8b/neuron")).artifact_uri == URI


def test_a_file_is_read_and_a_missing_one_named(tmp_path: Path) -> None:
    path = tmp_path / MANIFEST_NAME
    path.write_text(json.dumps(manifest_data()))
    assert ArtifactManifest.from_file(path).engine == "optimum-neuron"
    with pytest.raises(
        NeuronConfigError, match=r"artifact_manifest='.*nowhere.json': cannot be read .*aws s3 cp"
    ):
        ArtifactManifest.from_file(tmp_path / "nowhere.json")


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(NeuronConfigError, match=r"cdk-neuron-artifact.json='<unreadable>': is not JSON"):
        ArtifactManifest.from_json("{not json")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ([], r"cdk-neuron-artifact.json='list': must hold a JSON object"),
        ({"format": "other"}, r":format='other': must be \"cdk-neuron-artifact\""),
        (manifest_data(version=MANIFEST_VERSION + 1), r":version=3: this cdk-neuron reads manifest versions 1 to 2"),
        (manifest_data(version=0), r":version=0"),
        (manifest_data(version=True), r":version=True"),
    ],
)  # fmt: skip
def test_another_format_or_a_newer_version_is_refused_outright(data: object, needle: str) -> None:
    with pytest.raises(NeuronConfigError, match=needle):
        ArtifactManifest.from_dict(data)


@pytest.mark.parametrize(
    ("replace", "field"),
    [
        ({"artifact_uri": "https://bucket/x"}, "artifact_uri"),
        ({"artifact_uri": None}, "artifact_uri"),
        ({"model": "llama"}, "model"),
        ({"model__id": ""}, "model.id"),
        ({"model__extra": 1}, "model.extra"),
        ({"source__kind": "ftp"}, "source.kind"),
        ({"source__uri": None}, "source.uri"),
        ({"source__step": -1}, "source.step"),
        ({"source__step": 1.5}, "source.step"),
        ({"source__sha256": "ABC"}, "source.sha256"),
        ({"engine__name": None}, "engine.name"),
        ({"engine__version": "latest"}, "engine.version"),
        ({"engine__image": ""}, "engine.image"),
        ({"neuron__sdk": "two"}, "neuron.sdk"),
        ({"neuron__compiler": "x"}, "neuron.compiler"),
        ({"shape__batch_size": 0}, "shape.batch_size"),
        ({"shape__sequence_length": "4096"}, "shape.sequence_length"),
        ({"shape__tensor_parallel": True}, "shape.tensor_parallel"),
        ({"shape__dtype": "bfloat17"}, "shape.dtype"),
        ({"files": []}, "files"),
        ({"files": [{"path": "model.pt"}]}, "files[0]"),
        ({"files": [{"path": "../x", "bytes": 1, "sha256": DIGEST}]}, "files[0].path"),
        ({"files": [{"path": "/x", "bytes": 1, "sha256": DIGEST}]}, "files[0].path"),
        ({"files": [{"path": "x", "bytes": -1, "sha256": DIGEST}]}, "files[0].bytes"),
        ({"files": [{"path": "x", "bytes": 1, "sha256": "z"}]}, "files[0].sha256"),
        ({"compile_seconds": -1}, "compile_seconds"),
        ({"compile_seconds": None}, "compile_seconds"),
        ({"created": "yesterday"}, "created"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_each_bad_field_is_named(replace: dict[str, Any], field: str) -> None:
    with pytest.raises(NeuronConfigError) as raised:
        parse(manifest_data(**replace))
    assert [e.field for e in getattr(raised.value, "errors", (raised.value,))] == [f"{MANIFEST_NAME}:{field}"]


def test_every_bad_field_is_reported_at_once() -> None:
    with pytest.raises(NeuronConfigErrors) as raised:
        parse(manifest_data(shape__batch_size=0, shape__dtype="x", created="now", source__kind="ftp"))
    assert sorted(e.field.split(":")[1] for e in raised.value.errors) == [
        "created",
        "shape.batch_size",
        "shape.dtype",
        "source.kind",
    ]


def test_optional_fields_may_be_null() -> None:
    manifest = parse(
        manifest_data(
            model={"id": None, "revision": None},
            source={"kind": "hub", "uri": "meta-llama/Llama-3.1-8B-Instruct", "step": None, "sha256": None},
            neuron={"sdk": None, "compiler": None},
            engine={"name": "tgi", "version": None, "image": "text-generation-inference:3.2.3-neuron"},
        )
    )
    assert manifest.model_id is None and manifest.neuron_sdk is None and manifest.source.kind == "hub"


def test_the_source_hash_is_the_hash_of_sorted_sha256sum_lines() -> None:
    lines = {"b.safetensors": "2" * 64, "a/config.json": "1" * 64}
    expected = hashlib.sha256(f"{'1' * 64}  a/config.json\n{'2' * 64}  b.safetensors\n".encode()).hexdigest()
    assert source_hash(lines) == expected


@pytest.mark.parametrize(
    ("tag", "sdk"),
    [
        ("0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04", "2.26.1"),
        ("0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04", "2.25.0"),
        ("1.0-sdk2.27-x", "2.27"),
        ("3.2.3-neuron", None),
    ],
)
def test_the_image_sdk_is_read_from_its_tag(tag: str, sdk: str | None) -> None:
    assert image_sdk(ContainerImage("r", "repo", tag)) == sdk


# --------------------------------------------------------------------------------------------
# What a fleet refuses
# --------------------------------------------------------------------------------------------


def _mismatches(manifest: ArtifactManifest, model: ModelSpec = MODEL, engine: Any = None) -> dict[str, str]:
    engine = engine or ServingEngine.optimum_neuron()
    found = manifest.mismatches(model, model.plan(), engine.name, engine.image)
    return {e.field: e.fix for e in found}


def test_a_matching_artifact_has_no_mismatch() -> None:
    assert _mismatches(parse(manifest_data())) == {}


@pytest.mark.parametrize(
    ("replace", "field", "needle"),
    [
        ({"shape__batch_size": 4}, "shape.batch_size", "compiled for batch_size 4 and the fleet's graph is 1"),
        ({"shape__sequence_length": 2048}, "shape.sequence_length", "compiled for sequence_length 2048"),
        ({"shape__tensor_parallel": 8}, "shape.tensor_parallel", "sharded for TP 8: set serving.model.tensor_parallel to 8"),
        ({"shape__dtype": "fp16"}, "shape.dtype", "compiled in fp16: set serving.model.dtype to 'fp16' and redeploy"),
        ({"engine__name": "tgi"}, "engine", "exported for tgi"),
        ({"engine__version": "0.4.4"}, "engine.version", "exported by optimum-neuron 0.4.4"),
        ({"neuron__compiler": "2.21.18209.0"}, "neuron.compiler", "compiled by neuronx-cc 2.21.18209.0 and"),
        ({"neuron__target": "trn2"}, "neuron.target", "compiled for target trn2 and inf2.xlarge runs trn1 graphs"),
        ({"artifact_uri": "s3://my-models/other/"}, "model.artifact_uri", "describes another artifact"),
    ],
)  # fmt: skip
def test_each_field_that_differs_is_named(replace: dict[str, Any], field: str, needle: str) -> None:
    found = _mismatches(parse(manifest_data(**replace)))
    assert list(found) == [field]
    assert needle in found[field]
    # Every fix is one a user can carry out: a cdk.json key, or a new compile (no made-up flags).
    assert "--batch-size" not in found[field] and "--tensor-parallel" not in found[field]


def test_the_fix_of_a_shape_difference_names_the_cdk_json_key_or_a_new_compile() -> None:
    fix = _mismatches(parse(manifest_data(shape__batch_size=4)))["shape.batch_size"]
    assert fix == (
        "the artifact was compiled for batch_size 4 and the fleet's graph is 1 (Neuron graphs have static "
        "shapes): set serving.model.compiled_batch_size (else serving.model.batch_size) to 4 and redeploy, or run "
        "cdk-neuron compile again (it compiles the fleet's current shape and image) to a new --artifact-uri"
    )


def test_a_version_1_manifest_is_still_read_and_compared_without_a_target() -> None:
    data = manifest_data(version=1)
    del data["engine"]["image_id"], data["neuron"]["target"]
    manifest = parse(data)
    assert (manifest.target, manifest.image_id) == (None, None)
    assert _mismatches(manifest) == {}


@pytest.mark.parametrize(
    ("instance_type", "target"),
    [
        ("inf2.xlarge", "trn1"),
        ("trn1.32xlarge", "trn1"),
        ("trn1n.32xlarge", "trn1"),
        ("trn2.48xlarge", "trn2"),
        ("g5.xlarge", None),
    ],
)
def test_the_target_an_instance_runs(instance_type: str, target: str | None) -> None:
    assert fleet_target(instance_type) == target


def test_a_bad_target_is_named() -> None:
    with pytest.raises(NeuronConfigError, match=r":neuron.target='inf2': must be one of trn1, trn2 or null"):
        parse(manifest_data(neuron__target="inf2"))


def test_the_compiler_of_each_known_optimum_release_is_pinned() -> None:
    """optimum-neuron 0.4.5 pins neuronx-cc==2.21.33363.0 (its pyproject.toml @v0.4.5)."""
    assert ServingEngine.optimum_neuron().image.neuronx_cc_version == "2.21.33363.0"
    assert ContainerImage("r", "repo", "0.11.0-optimum0.4.9-sdk2.30.0").neuronx_cc_version is None


def test_every_fix_names_only_options_cdk_neuron_compile_has() -> None:
    """A fix that says "run cdk-neuron compile ... --flag" must name a flag the command takes (review-27 S6)."""
    import re

    from cdk_neuron.cli.commands import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    options = set(subparsers.choices["compile"]._option_string_actions)  # type: ignore[attr-defined]
    manifest = parse(
        manifest_data(
            shape__batch_size=4, shape__sequence_length=2048, shape__tensor_parallel=8, shape__dtype="fp16",
            engine__name="tgi", neuron__sdk="2.25.0",
        )
    )  # fmt: skip
    fixes = _mismatches(manifest)
    assert len(fixes) == 6
    for field, fix in fixes.items():
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", fix):
            assert flag in options, (field, flag, fix)
    assert "--artifact-uri" in fixes["shape.batch_size"]


def test_every_mismatch_is_reported_together() -> None:
    manifest = parse(manifest_data(shape__batch_size=4, shape__tensor_parallel=8, engine__name="tgi"))
    with pytest.raises(NeuronConfigErrors) as raised:
        manifest.check_fleet(MODEL, MODEL.plan(), "optimum-neuron", None)
    assert [e.field for e in raised.value.errors] == ["shape.batch_size", "shape.tensor_parallel", "engine"]


def test_the_compiled_shape_fields_are_what_is_compared() -> None:
    """A fleet serving batch 2 of a batch-4 graph states compiled_batch_size=4: no mismatch."""
    model = ModelSpec(
        model_id="meta-llama/Llama-3.1-8B-Instruct",
        artifact_uri=URI,
        parameters=8_000_000_000,
        batch_size=2,
        compiled_batch_size=4,
    )
    assert _mismatches(parse(manifest_data(shape__batch_size=4)), model, ServingEngine.tgi()).keys() == {
        "engine",
        "image",
    }  # TGI serves below its compiled batch; only the engine and image differ here
    assert _mismatches(parse(manifest_data(shape__batch_size=2)), model, ServingEngine.tgi()).keys() == {
        "shape.batch_size",
        "engine",
        "image",
    }


def test_an_sdk_named_to_the_minor_release_matches_its_patch() -> None:
    engine = ServingEngine.optimum_neuron(image=ContainerImage("r", "repo", "1.0-sdk2.26"))
    assert _mismatches(parse(manifest_data()), engine=engine) == {}


def test_an_image_that_names_no_optimum_release_falls_back_to_the_sdk() -> None:
    engine = ServingEngine.optimum_neuron(image=ContainerImage("r", "repo", "1.0-sdk2.26"))
    found = _mismatches(parse(manifest_data(neuron__sdk="2.25.0")), engine=engine)
    assert (
        list(found) == ["image.neuron_sdk"] and "compiled by Neuron SDK 2.25.0" in found["image.neuron_sdk"]
    )


def test_an_image_without_an_sdk_in_its_tag_must_be_the_compiling_image() -> None:
    tgi = ServingEngine.tgi()
    same = manifest_data(
        engine={"name": "tgi", "version": None, "image": "text-generation-inference:3.2.3-neuron"}
    )
    assert _mismatches(parse(same), engine=tgi) == {}
    other = copy.deepcopy(same)
    other["engine"]["image"] = "text-generation-inference:3.2.1-neuron"
    found = _mismatches(parse(other), engine=tgi)
    assert list(found) == ["image"]
    assert (
        "its tag names no optimum-neuron release or Neuron SDK, and the artifact was compiled in "
        "text-generation-inference:3.2.1" in found["image"]
    )


def test_a_manifest_without_versions_compares_the_image() -> None:
    found = _mismatches(
        parse(manifest_data(neuron__sdk=None, engine__version=None, engine__image="repo:other"))
    )
    assert list(found) == ["image"]


def test_a_manifest_for_a_fleet_serving_from_the_hub_names_the_uri() -> None:
    hub = ModelSpec(model_id="meta-llama/Llama-3.1-8B-Instruct", parameters=8_000_000_000)
    found = _mismatches(parse(manifest_data()), hub)
    assert list(found) == ["model.artifact_uri"]
    assert found["model.artifact_uri"] == f"the manifest describes {URI}: set artifact_uri to it to serve it"
