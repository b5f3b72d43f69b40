"""Preflight's ``artifact manifest`` row against the app's local copy (cdk.json ``serving.model.artifact_manifest``):
synthesis checked the fleet against the copy, so a copy that no longer matches S3's manifest fails (moto)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from test_artifact_manifest import manifest_data

from cdk_neuron.cli.preflight.artifacts import check_artifacts
from cdk_neuron.cli.preflight.base import CheckContext
from cdk_neuron.deployment import Deployment
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_support import REPO_ROOT
from stacks.config import deployments

BUCKET = "cdk-neuron-dev-models"
PREFIX = "meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096"
URI = f"s3://{BUCKET}/{PREFIX}/"


def _data(**replace_: Any) -> dict[str, Any]:
    data = manifest_data(artifact_uri=URI, **replace_)
    data["model"]["id"] = "meta-llama/Llama-3.2-3B-Instruct"
    return data


@pytest.fixture
def s3() -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for f in _data()["files"]:
            client.put_object(
                Bucket=BUCKET,
                Key=f"{PREFIX}/{f['path']}",
                Body=b"x" * f["bytes"] if f["bytes"] < 10_000 else b"x",
            )
        client.put_object(
            Bucket=BUCKET, Key=f"{PREFIX}/cdk-neuron-artifact.json", Body=json.dumps(_data()).encode()
        )
        yield client


def _env(copy: ArtifactManifest | None) -> Deployment:
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    env = deployments(context)["dev"]
    assert env.serving is not None
    return replace(env, serving=replace(env.serving, artifact_manifest=copy))


def _manifest_row(s3: Any, env: Deployment) -> Any:
    ctx = CheckContext(env=env, all_envs=[env], clients=lambda service, region: s3)
    (row,) = [r for r in check_artifacts(ctx) if r.check == "artifact manifest"]
    return row


def test_a_copy_equal_to_the_manifest_in_s3_passes(s3: Any) -> None:
    row = _manifest_row(s3, _env(ArtifactManifest.from_dict(_data())))
    assert row.status == "PASS"


def test_without_a_copy_the_manifest_in_s3_is_checked_as_before(s3: Any) -> None:
    assert _manifest_row(s3, _env(None)).status == "PASS"


def test_a_copy_that_differs_from_s3_fails_naming_what_differs(s3: Any) -> None:
    stale = ArtifactManifest.from_dict(_data(compile_seconds=99.0, created="2026-11-30T00:00:00Z"))
    row = _manifest_row(s3, _env(stale))
    assert row.status == "FAIL"
    assert "differs from cdk-neuron-artifact.json in S3 in compile_seconds, created" in row.detail
    assert "cdk-neuron use-artifact" in row.detail
