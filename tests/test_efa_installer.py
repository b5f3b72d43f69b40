"""The pinned EFA installer: its value object and the custom resource that mirrors it into S3.

The handler runs against moto's S3; the download and CloudFormation's response URL are stubbed, so
nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from handler_support import event, load_handler
from moto import mock_aws

from cdk_neuron._custom_resource import HANDLERS_DIR
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.training.efa_installer import EfaInstaller
from cdk_support import use_fake_aws_credentials

PAYLOAD = b"pretend EFA installer tarball"
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


def test_pinned_release_and_its_urls() -> None:
    pinned = EfaInstaller.pinned()
    # aws/aws-parallelcluster-cookbook PR #2953 (transcribed by hand).
    assert (pinned.version, pinned.sha256) == (
        "1.41.0",
        "3506354cdfbe31ff552fe75f5d0d9bb7efd29cf79bd99457347d29c751c38f9f",
    )
    assert pinned.url == "https://efa-installer.amazonaws.com/aws-efa-installer-1.41.0.tar.gz"
    assert pinned.object_key == "efa-installer/aws-efa-installer-1.41.0.tar.gz"
    assert EfaInstaller.of("1.47.0", "A" * 64).sha256 == "a" * 64


@pytest.mark.parametrize(
    ("version", "sha256", "field"),
    [
        ("latest", "a" * 64, "efa_installer.version"),
        ("1.41", "a" * 64, "efa_installer.version"),
        ("1.41.0", "a" * 63, "efa_installer.sha256"),
        ("1.41.0", "g" * 64, "efa_installer.sha256"),
        ("1.41.0", 42, "efa_installer.sha256"),
    ],
)
def test_unpinned_or_unverifiable_releases_are_refused(version: str, sha256: Any, field: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^{re.escape(field)}="):
        EfaInstaller.of(version, sha256)


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[dict[str, Any]]]]:
    """The handler module, with the download and the CloudFormation response captured."""
    use_fake_aws_credentials(monkeypatch, "us-east-1")
    responses: list[dict[str, Any]] = []

    def download(url: str) -> bytes:
        assert url == "https://efa-installer.amazonaws.com/aws-efa-installer-1.41.0.tar.gz"
        return PAYLOAD

    module = load_handler("efa_mirror", monkeypatch, responses, download)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="mirror")
        yield module, responses


def _event(kind: str, sha256: str = DIGEST, physical_id: str | None = None) -> dict[str, Any]:
    properties = {
        "Url": "https://efa-installer.amazonaws.com/aws-efa-installer-1.41.0.tar.gz",
        "Sha256": sha256,
        "Bucket": "mirror",
        "Key": "efa-installer/aws-efa-installer-1.41.0.tar.gz",
    }
    return event(kind, properties, physical_id, logical_id="ClusterEfaInstallerCopy")


def _object(key: str = "efa-installer/aws-efa-installer-1.41.0.tar.gz") -> bytes | None:
    s3 = boto3.client("s3", region_name="us-east-1")
    try:
        return s3.get_object(Bucket="mirror", Key=key)["Body"].read()  # type: ignore[no-any-return]
    except s3.exceptions.NoSuchKey:
        return None


def test_create_mirrors_the_verified_installer(handler: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, responses = handler
    module.handler(_event("Create"), None)
    assert _object() == PAYLOAD
    (response,) = responses
    assert response["Status"] == "SUCCESS"
    assert response["PhysicalResourceId"] == "s3://mirror/efa-installer/aws-efa-installer-1.41.0.tar.gz"
    assert (response["RequestId"], response["LogicalResourceId"]) == ("req-1", "ClusterEfaInstallerCopy")


def test_a_download_that_is_not_the_pinned_release_fails_the_deployment(
    handler: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, responses = handler
    module.handler(_event("Create", sha256="0" * 64), None)
    assert _object() is None
    (response,) = responses
    assert response["Status"] == "FAILED"
    assert f"has SHA-256 {DIGEST}, not the pinned {'0' * 64}" in response["Reason"]
    assert response["PhysicalResourceId"] == "failed-req-1"


def test_delete_removes_only_what_it_created(handler: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, responses = handler
    module.handler(_event("Create"), None)
    # A failed creation's id names no object: deleting it touches nothing.
    module.handler(_event("Delete", physical_id="failed-req-0"), None)
    assert _object() == PAYLOAD
    module.handler(_event("Delete", physical_id=responses[0]["PhysicalResourceId"]), None)
    assert _object() is None
    assert [r["Status"] for r in responses] == ["SUCCESS", "SUCCESS", "SUCCESS"]


def test_an_update_to_a_new_release_deletes_the_old_copy(
    handler: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    """CloudFormation deletes the old physical id with the old properties once the new copy exists."""
    module, responses = handler
    module.handler(_event("Create"), None)
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket="mirror", Key="efa-installer/aws-efa-installer-1.47.0.tar.gz", Body=b"new"
    )
    module.handler(_event("Delete", physical_id=responses[0]["PhysicalResourceId"]), None)
    assert _object() is None
    assert _object("efa-installer/aws-efa-installer-1.47.0.tar.gz") == b"new"


def test_the_function_code_is_a_real_file_of_the_package() -> None:
    assert sorted(p.name for p in HANDLERS_DIR.iterdir() if p.name != "__pycache__") == [
        "cfn_response.py",
        "efa_mirror.py",
        "lifecycle_scripts.py",
        "vault_emptier.py",
    ]


@pytest.mark.parametrize(
    "name", ["cfn_response.py", "efa_mirror.py", "lifecycle_scripts.py", "vault_emptier.py"]
)
def test_handlers_need_only_the_lambda_runtime(name: str) -> None:
    import ast

    tree = ast.parse((HANDLERS_DIR / name).read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imported <= {
        "__future__",
        "base64",
        "collections",
        "hashlib",
        "json",
        "logging",
        "os",
        "tempfile",
        "time",
        "urllib",
        "typing",
        "boto3",
        "cfn_response",
    }
