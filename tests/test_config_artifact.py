"""cdk.json ``serving.model.artifact_manifest``: the fleet is checked against its artifact before synthesis.

Each difference between the manifest and the fleet's configuration is one error keyed by the cdk.json
path of the manifest and the field (``environments.<env>.serving.model.artifact_manifest.<field>``),
every one reported together, the way the fleets themselves report them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_artifact_manifest import manifest_data
from test_config import minimal_env

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from stacks.config import load_environments

ARTIFACT = "s3://models-bucket/llama-3.2-3b/"
KEY = "environments.qa.serving.model.artifact_manifest"


def _manifest(tmp_path: Path, **replace: Any) -> str:
    data = manifest_data(artifact_uri=ARTIFACT, **replace)
    path = tmp_path / "cdk-neuron-artifact.json"
    path.write_text(json.dumps(data))
    return str(path)


def _env(manifest: object, **serving: Any) -> dict[str, Any]:
    env = minimal_env()
    env["serving"]["model"]["artifact_manifest"] = manifest
    env["serving"].update(serving)
    return env


def _errors(env: dict[str, Any]) -> list[NeuronConfigError]:
    with pytest.raises(NeuronConfigError) as caught:
        load_environments({"qa": env})
    error = caught.value
    return list(error.errors) if isinstance(error, NeuronConfigErrors) else [error]


def test_a_matching_manifest_is_read_into_the_serving_configuration(tmp_path: Path) -> None:
    serving = load_environments({"qa": _env(_manifest(tmp_path))})["qa"].serving
    assert serving.artifact_manifest is not None
    assert serving.artifact_manifest.artifact_uri == ARTIFACT
    assert serving.artifact_manifest.shape.tensor_parallel == 2


def test_without_the_key_there_is_no_manifest() -> None:
    assert load_environments({"qa": minimal_env()})["qa"].serving.artifact_manifest is None


@pytest.mark.parametrize(
    ("replace", "field", "value", "fix"),
    [
        ({"shape__batch_size": 4}, "shape.batch_size", 1, "the artifact was compiled for batch_size 4"),
        (
            {"shape__sequence_length": 2048},
            "shape.sequence_length",
            4096,
            "compiled for sequence_length 2048",
        ),
        ({"shape__tensor_parallel": 8}, "shape.tensor_parallel", 2, "the artifact is sharded for TP 8"),
        ({"shape__dtype": "fp16"}, "shape.dtype", "bf16", "the artifact was compiled in fp16"),
        ({"engine__name": "vllm-neuron"}, "engine", "optimum-neuron", "exported for vllm-neuron"),
        ({"engine__version": "0.4.4"}, "engine.version", "0.4.5", "exported by optimum-neuron 0.4.4"),
        (
            {"artifact_uri": "s3://models-bucket/other/"},
            "model.artifact_uri",
            ARTIFACT,
            "describes another artifact",
        ),
    ],
)
def test_each_field_that_differs_is_named_with_its_cdk_json_key(
    tmp_path: Path, replace: dict[str, Any], field: str, value: object, fix: str
) -> None:
    path = tmp_path / "m.json"
    data = manifest_data(**{"artifact_uri": ARTIFACT, **replace})
    path.write_text(json.dumps(data))
    (error,) = _errors(_env(str(path)))
    assert error.field == f"{KEY}.{field}"
    assert error.value == value
    assert fix in error.fix


def test_every_difference_and_every_other_mistake_are_reported_at_once(tmp_path: Path) -> None:
    manifest = _manifest(
        tmp_path, shape={"batch_size": 8, "sequence_length": 1024, "tensor_parallel": 2, "dtype": "fp16"}
    )
    env = _env(manifest, max_capacity=0)
    fields = {e.field for e in _errors(env)}
    assert fields == {
        f"{KEY}.shape.batch_size",
        f"{KEY}.shape.sequence_length",
        f"{KEY}.shape.dtype",
        "environments.qa.serving.max_capacity",
    }


def test_the_sagemaker_backend_is_compared_with_the_image_sagemaker_runs(tmp_path: Path) -> None:
    # TGI's SageMaker image names its SDK differently from the EC2 image: the manifest of an
    # optimum-neuron export is refused on a TGI fleet for its engine and for its image.
    manifest = _manifest(tmp_path)
    env = _env(manifest, backend="sagemaker", engine="tgi", min_capacity=1)
    env["network"] = {"nat_gateways": 1}
    fields = {e.field for e in _errors(env)}
    assert f"{KEY}.engine" in fields
    assert any(f.startswith(f"{KEY}.image") for f in fields)


def test_an_unreadable_manifest_is_named_with_the_way_to_fetch_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.json")
    (error,) = _errors(_env(missing))
    assert (error.field, error.value) == (KEY, missing)
    assert "cannot be read" in error.fix and "aws s3 cp" in error.fix


def test_a_file_that_is_not_a_manifest_is_refused_with_every_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    data = manifest_data(artifact_uri=ARTIFACT)
    data["shape"]["batch_size"] = 0
    data["created"] = "yesterday"
    path.write_text(json.dumps(data))
    errors = _errors(_env(str(path)))
    assert {e.field for e in errors} == {KEY}
    assert [e.fix.split("=")[0] for e in errors] == [f"{path}:shape.batch_size", f"{path}:created"]


@pytest.mark.parametrize("value", ["", "  ", 5, ["m.json"]])
def test_the_path_must_be_a_non_empty_string(value: object) -> None:
    (error,) = _errors(_env(value))
    assert (error.field, error.value) == (KEY, value)
    assert "cdk-neuron use-artifact" in error.fix


def test_null_means_no_manifest() -> None:
    assert load_environments({"qa": _env(None)})["qa"].serving.artifact_manifest is None
