"""``cdk-neuron use-artifact``: a manifest is checked against the fleet, then written into cdk.json.

The shipped cdk.json is copied to a temporary app directory; a manifest is read from a file or from
S3 (moto). Nothing is written unless every field fits, and then only the two values change.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from test_artifact_manifest import manifest_data

from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.cli.use_artifact import set_values
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME
from cdk_support import REPO_ROOT
from stacks.config import load_cdk_json

NEW = "s3://cdk-neuron-dev-models/meta-llama/Llama-3.2-3B-Instruct/run-7-step-1200/"
OLD = "s3://cdk-neuron-dev-models/meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096/"


def _app(tmp_path: Path) -> Path:
    config = tmp_path / "cdk.json"
    shutil.copy(REPO_ROOT / "cdk.json", config)
    return config


def _manifest(path: Path, **replace: Any) -> Path:
    """A manifest that fits dev's fleet: Llama 3.2 3B, batch 1 x 4096, TP 2, bf16, optimum-neuron, SDK 2.26.1."""
    data = manifest_data(artifact_uri=NEW, **replace)
    data["model"]["id"] = "meta-llama/Llama-3.2-3B-Instruct"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _run(args: list[str], cwd: Path, clients: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(args, context=Context(clients=clients, stdout=out, stderr=err, cwd=cwd))
    return status, out.getvalue(), err.getvalue()


def test_a_fitting_manifest_is_copied_and_only_the_two_values_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _app(tmp_path)
    manifest = _manifest(tmp_path / "downloaded.json")
    status, out, _ = _run(
        ["use-artifact", "--config", str(config), "--env", "dev", str(manifest), "--json"], tmp_path
    )
    assert status == ExitStatus.OK
    doc = json.loads(out)
    assert (doc["written"], doc["artifact_uri"], doc["previous_artifact_uri"]) == (True, NEW, OLD)
    copy = tmp_path / "artifacts" / "dev" / MANIFEST_NAME
    assert copy.read_text() == manifest.read_text()
    before = (REPO_ROOT / "cdk.json").read_text().splitlines()
    after = config.read_text().splitlines()
    # One value replaced in place, one key added after it with the same indentation: nothing else moves.
    assert len(after) == len(before) + 1
    changed = [line for line in after if line not in before]
    # dev's model ends with tensor_parallel: it gains the comma, the new key follows it.
    assert [line.strip() for line in changed] == [
        f'"artifact_uri": "{NEW}",',
        '"tensor_parallel": 2,',
        '"artifact_manifest": "artifacts/dev/cdk-neuron-artifact.json"',
    ]
    indent = {len(line) - len(line.lstrip()) for line in changed}
    assert len(indent) == 1
    environments = json.loads(config.read_text())["context"]["environments"]
    assert environments["dev"]["serving"]["model"]["artifact_uri"] == NEW
    assert "artifact_manifest" not in environments["staging"]["serving"]["model"]
    assert (
        environments["staging"]
        == json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["environments"]["staging"]
    )
    # The app reads it back and checks the fleet against the copy (paths are relative to the app).
    monkeypatch.chdir(tmp_path)
    assert load_cdk_json(config)["dev"].serving.artifact_manifest is not None


def test_a_second_run_with_the_same_artifact_writes_nothing(tmp_path: Path) -> None:
    config = _app(tmp_path)
    manifest = _manifest(tmp_path / "m.json")
    args = ["use-artifact", "--config", str(config), "--env", "dev", str(manifest), "--json"]
    assert _run(args, tmp_path)[0] == ExitStatus.OK
    written = config.read_text()
    status, out, _ = _run(args, tmp_path)
    assert status == ExitStatus.OK
    assert json.loads(out)["written"] is False
    assert "already serves" in json.loads(out)["summary"]
    assert config.read_text() == written


def test_dry_run_shows_what_it_would_write_and_writes_nothing(tmp_path: Path) -> None:
    config = _app(tmp_path)
    manifest = _manifest(tmp_path / "m.json")
    status, out, _ = _run(
        ["use-artifact", "--config", str(config), "--env", "dev", str(manifest), "--dry-run", "-o", "text"],
        tmp_path,
    )
    assert status == ExitStatus.OK
    assert "Would write" in out and f'serving.model.artifact_uri: "{NEW}"' in out
    assert "Dry run: nothing written" in out
    assert config.read_text() == (REPO_ROOT / "cdk.json").read_text()
    assert not (tmp_path / "artifacts").exists()


def test_a_manifest_that_does_not_fit_is_refused_naming_every_field_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    config = _app(tmp_path)
    manifest = _manifest(
        tmp_path / "m.json",
        shape={"batch_size": 4, "sequence_length": 4096, "tensor_parallel": 8, "dtype": "bf16"},
        neuron={"sdk": "2.26.1", "compiler": "2.21.18209.0", "target": "trn1"},
    )
    status, out, _ = _run(
        ["use-artifact", "--config", str(config), "--env", "dev", str(manifest), "--json"], tmp_path
    )
    assert status == ExitStatus.FAILED
    doc = json.loads(out)
    assert doc["written"] is False
    fields = [m.split("=")[0] for m in doc["mismatches"]]
    assert fields == ["shape.batch_size", "shape.tensor_parallel", "neuron.compiler"]
    assert "recompile" in doc["summary"]
    assert config.read_text() == (REPO_ROOT / "cdk.json").read_text()
    assert not (tmp_path / "artifacts").exists()


def test_the_sagemaker_environment_is_written_alone(tmp_path: Path) -> None:
    config = _app(tmp_path)
    staging = "s3://cdk-neuron-staging-models/llama/run-7/"
    data = manifest_data(artifact_uri=staging)
    (tmp_path / "m.json").write_text(json.dumps(data))
    status, out, _ = _run(
        ["use-artifact", "--config", str(config), "--env", "staging", str(tmp_path / "m.json"), "--json",
         "--manifest-path", "models/staging.json"],
        tmp_path,
    )  # fmt: skip
    assert status == ExitStatus.OK, out
    environments = json.loads(config.read_text())["context"]["environments"]
    assert environments["staging"]["serving"]["model"]["artifact_manifest"] == "models/staging.json"
    assert environments["dev"]["serving"]["model"]["artifact_uri"] == OLD
    assert (tmp_path / "models" / "staging.json").exists()


@pytest.mark.parametrize("where", ["", "cdk-neuron-artifact.json"])
def test_the_manifest_is_read_from_s3_by_prefix_or_by_its_own_uri(tmp_path: Path, where: str) -> None:
    config = _app(tmp_path)
    body = _manifest(tmp_path / "m.json").read_text()
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="cdk-neuron-dev-models")
        s3.put_object(
            Bucket="cdk-neuron-dev-models",
            Key="meta-llama/Llama-3.2-3B-Instruct/run-7-step-1200/cdk-neuron-artifact.json",
            Body=body.encode(),
        )
        status, out, _ = _run(
            ["use-artifact", "--config", str(config), "--env", "dev", NEW + where, "--json"],
            tmp_path,
            clients=lambda service, region: boto3.client(service, region_name=region),
        )
    assert status == ExitStatus.OK, out
    assert (tmp_path / "artifacts" / "dev" / MANIFEST_NAME).read_text() == body


def test_a_prefix_without_a_manifest_is_named(tmp_path: Path) -> None:
    config = _app(tmp_path)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="cdk-neuron-dev-models")
        status, _, err = _run(
            ["use-artifact", "--config", str(config), "--env", "dev", NEW],
            tmp_path,
            clients=lambda service, region: boto3.client(service, region_name=region),
        )
    assert status == ExitStatus.USAGE
    assert f"{NEW}{MANIFEST_NAME}" in err and "no manifest there" in err


def test_a_manifest_path_outside_the_app_is_refused(tmp_path: Path) -> None:
    config = _app(tmp_path)
    manifest = _manifest(tmp_path / "m.json")
    status, _, err = _run(
        [
            "use-artifact",
            "--config",
            str(config),
            "--env",
            "dev",
            str(manifest),
            "--manifest-path",
            "../x.json",
        ],
        tmp_path,
    )
    assert status == ExitStatus.USAGE
    assert "--manifest-path" in err and "relative to cdk.json" in err


def test_set_values_replaces_in_place_and_appends_with_the_objects_indentation() -> None:
    text = '{\n  "a": {\n    "model": {\n      "x": 1,\n      "y": "old"\n    }\n  },\n  "b": {"model": {"y": "old"}}\n}\n'
    updated = set_values(text, ("a", "model"), {"y": "new", "z": [1, 2]})
    assert updated == (
        '{\n  "a": {\n    "model": {\n      "x": 1,\n      "y": "new",\n      "z": [1, 2]\n    }\n  },\n'
        '  "b": {"model": {"y": "old"}}\n}\n'
    )
    # A one-line object gets the member on the same line.
    assert set_values(text, ("b", "model"), {"z": True}).endswith(
        '"b": {"model": {"y": "old", "z": true}}\n}\n'
    )


# -- --verify: the files at the prefix are the ones the manifest describes (moto) ----------------------


def _seeded(s3: Any, tmp_path: Path, *, tamper: str | None = None, drop: str | None = None) -> str:
    """The artifact's files at NEW with the manifest listing their real sizes and hashes; ``tamper``: one
    file rewritten after the manifest; ``drop``: one file missing. Returns the manifest's text."""
    import hashlib

    bucket, _, prefix = NEW.removeprefix("s3://").partition("/")
    s3.create_bucket(Bucket=bucket)
    contents = {
        "model.pt": b"graph" * 100,
        "config.json": b"{}",
        "checkpoint/weights/tp0_sharded_checkpoint.safetensors": b"w" * 300,
    }
    files = [
        {"path": k, "bytes": len(v), "sha256": hashlib.sha256(v).hexdigest()}
        for k, v in sorted(contents.items())
    ]
    for key, body in contents.items():
        if key == drop:
            continue
        s3.put_object(Bucket=bucket, Key=f"{prefix}{key}", Body=b"x" * len(body) if key == tamper else body)
    path = _manifest(tmp_path / "m.json", files=files)
    s3.put_object(Bucket=bucket, Key=f"{prefix}{MANIFEST_NAME}", Body=path.read_bytes())
    return path.read_text()


def test_verify_reads_every_file_back_and_writes_when_all_match(tmp_path: Path) -> None:
    config = _app(tmp_path)
    with mock_aws():
        _seeded(boto3.client("s3", region_name="us-east-1"), tmp_path)
        status, out, _ = _run(
            ["use-artifact", "--config", str(config), "--env", "dev", NEW, "--verify", "--json"],
            tmp_path,
            clients=lambda service, region: boto3.client(service, region_name=region),
        )
    assert status == ExitStatus.OK, out
    doc = json.loads(out)
    assert doc["verified"] == 3 and doc["written"] is True


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"tamper": "model.pt"}, "verify: model.pt: sha256 "),
        ({"drop": "config.json"}, f"verify: config.json: missing or unreadable at {NEW}"),
    ],
)
def test_verify_refuses_files_the_manifest_does_not_describe_and_writes_nothing(
    tmp_path: Path, change: dict[str, str], needle: str
) -> None:
    config = _app(tmp_path)
    before = config.read_text()
    with mock_aws():
        _seeded(boto3.client("s3", region_name="us-east-1"), tmp_path, **change)
        status, out, _ = _run(
            ["use-artifact", "--config", str(config), "--env", "dev", NEW, "--verify", "--json"],
            tmp_path,
            clients=lambda service, region: boto3.client(service, region_name=region),
        )
    assert status == ExitStatus.FAILED
    doc = json.loads(out)
    assert any(m.startswith(needle) for m in doc["mismatches"]), doc["mismatches"]
    assert (
        doc["verified"] == 2
        and doc["written"] is False
        and "not the ones its manifest describes" in doc["summary"]
    )
    assert config.read_text() == before and not (tmp_path / "artifacts").exists()


def test_a_denied_manifest_names_a_missing_one_and_the_missing_permissions(tmp_path: Path) -> None:
    from botocore.stub import Stubber

    config = _app(tmp_path)
    client = boto3.client("s3", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
    with stub:
        status, _, err = _run(
            ["use-artifact", "--config", str(config), "--env", "dev", NEW],
            tmp_path,
            clients=lambda service, region: client,
        )
    assert status == ExitStatus.USAGE and "Traceback" not in err
    assert f"{NEW}{MANIFEST_NAME}" in err
    assert "access denied: either no manifest is there yet" in err and "lack s3:ListBucket" in err
