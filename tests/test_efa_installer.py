"""The pinned EFA installer: its value object and the custom resource that mirrors it into S3.

The handler runs against moto's S3; the download and CloudFormation's response URL are stubbed, so
nothing leaves the machine. Signatures are checked with test keys made by gpg 2.2 for these tests
(``tests/fixtures/openpgp``: an RSA 2048 signer, a second "other" signer, a tarball stand-in and its
binary SHA-256 and armored SHA-512 detached signatures).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from handler_support import event, load_handler
from moto import mock_aws

from cdk_neuron._custom_resource import HANDLERS_DIR
from cdk_neuron.contracts.images import TRAINING_DLC_EFA_INSTALLER
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.training.efa_installer import AWS_EFA_KEY_FINGERPRINT, EfaInstaller
from cdk_support import use_fake_aws_credentials

FIXTURES = Path(__file__).parent / "fixtures" / "openpgp"
PAYLOAD = (FIXTURES / "installer.tar.gz").read_bytes()
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()
SIGNER = "AFFB E9C6 6148 F135 61C0  5D91 5C1C 4D36 A186 0785"  # the test key, printed as gpg does
URL = "https://efa-installer.amazonaws.com/aws-efa-installer-1.41.0.tar.gz"
KEY_URL = "https://efa-installer.amazonaws.com/aws-efa-installer.key"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_pinned_release_and_its_urls() -> None:
    pinned = EfaInstaller.pinned()
    assert (pinned.version, pinned.sha256, pinned.verification) == ("1.47.0", None, "signature")
    assert pinned.url == "https://efa-installer.amazonaws.com/aws-efa-installer-1.47.0.tar.gz"
    assert pinned.signature_url == pinned.url + ".sig"
    assert pinned.object_key == "efa-installer/aws-efa-installer-1.47.0.tar.gz"
    # The EC2 User Guide's fingerprint of the EFA signing key, "4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC".
    assert "4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC".replace(" ", "") == AWS_EFA_KEY_FINGERPRINT
    digest = EfaInstaller.of("1.47.0", "A" * 64)
    assert (digest.sha256, digest.verification) == ("a" * 64, "sha256")
    assert EfaInstaller.signed("1.48.0").verification == "signature"


def test_the_host_installs_efa_at_least_as_new_as_the_training_image() -> None:
    # Issue 22, defect 6: the DLC's libfabric comes from EFA installer 1.47.0; the host drove it with
    # 1.41.0's kernel driver.
    assert _version(EfaInstaller.pinned().version) >= _version(TRAINING_DLC_EFA_INSTALLER)


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

    files = {
        URL: PAYLOAD,
        URL + ".sig": (FIXTURES / "installer.tar.gz.sig").read_bytes(),
        KEY_URL: (FIXTURES / "signer.key").read_bytes(),
    }

    def download(url: str) -> bytes:
        return files[url]

    module = load_handler("efa_mirror", monkeypatch, responses, download)
    module.FILES = files  # the tests swap a signature or key in
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="mirror")
        yield module, responses


def _event(
    kind: str, sha256: str | None = DIGEST, physical_id: str | None = None, fingerprint: str | None = None
) -> dict[str, Any]:
    properties = {"Url": URL, "Bucket": "mirror", "Key": "efa-installer/aws-efa-installer-1.41.0.tar.gz"}
    if sha256 is not None:
        properties["Sha256"] = sha256
    if fingerprint is not None:
        properties.update({"SignatureUrl": URL + ".sig", "KeyUrl": KEY_URL, "KeyFingerprint": fingerprint})
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


def test_create_mirrors_a_release_whose_signature_verifies_and_returns_its_digest(
    handler: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, responses = handler
    module.handler(_event("Create", sha256=None, fingerprint=SIGNER), None)
    assert _object() == PAYLOAD
    (response,) = responses
    assert response["Status"] == "SUCCESS", response
    assert response["Data"] == {"Sha256": DIGEST}


@pytest.mark.parametrize(
    ("swap", "fingerprint", "reason"),
    [
        # a signature by another key, with the pinned key served
        ({URL + ".sig": "other.sig"}, SIGNER, "names issuer"),
        # another key served in place of the pinned one (its own signature verifies under it)
        ({URL + ".sig": "other.sig", KEY_URL: "other.key"}, SIGNER, "not the pinned AFFBE9C6"),
        # the right key and signature, over different bytes
        ({URL: b"a tampered tarball\n"}, SIGNER, "does not"),
        # AWS's fingerprint, a key that is not AWS's
        ({}, "4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC", "not the pinned 4E9091BC"),
    ],
    ids=["other-signer", "other-key", "tampered", "not-aws-key"],
)
def test_a_release_whose_signature_does_not_verify_is_not_mirrored(
    handler: tuple[ModuleType, list[dict[str, Any]]], swap: dict[str, Any], fingerprint: str, reason: str
) -> None:
    module, responses = handler
    for url, name in swap.items():
        module.FILES[url] = name if isinstance(name, bytes) else (FIXTURES / name).read_bytes()
    module.handler(_event("Create", sha256=None, fingerprint=fingerprint), None)
    assert _object() is None
    (response,) = responses
    assert response["Status"] == "FAILED"
    assert "is not signed by the EFA key" in response["Reason"] and reason in response["Reason"], response[
        "Reason"
    ]


def test_the_mirror_needs_exactly_one_way_to_verify(handler: tuple[ModuleType, list[dict[str, Any]]]) -> None:
    module, responses = handler
    module.handler(_event("Create", sha256=None), None)
    module.handler(_event("Create", fingerprint=SIGNER), None)
    assert [r["Status"] for r in responses] == ["FAILED", "FAILED"]
    assert all("either Sha256 or SignatureUrl" in r["Reason"] for r in responses)
    assert _object() is None


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
        "boot_failure_breaker.py",
        "cfn_response.py",
        "efa_mirror.py",
        "lifecycle_scripts.py",
        "openpgp.py",
        "vault_emptier.py",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "boot_failure_breaker.py",
        "cfn_response.py",
        "efa_mirror.py",
        "lifecycle_scripts.py",
        "openpgp.py",
        "vault_emptier.py",
    ],
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
        "openpgp",
    }


@pytest.fixture
def openpgp(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    from handler_support import load_file

    return load_file(HANDLERS_DIR / "openpgp.py", "cr_openpgp")


def test_openpgp_verifies_binary_and_armored_signatures(openpgp: ModuleType) -> None:
    key = (FIXTURES / "signer.key").read_bytes()
    data = str(FIXTURES / "installer.tar.gz")
    assert (
        openpgp.verify_detached(data, (FIXTURES / "installer.tar.gz.sig").read_bytes(), key, SIGNER)
        == "sha256"
    )
    assert (
        openpgp.verify_detached(data, (FIXTURES / "installer.tar.gz.asc").read_bytes(), key, SIGNER)
        == "sha512"
    )


def test_openpgp_refuses_a_forged_signature_value(openpgp: ModuleType) -> None:
    # Keep every byte the digest covers (and the two check bytes) but change the RSA value itself.
    signature = bytearray((FIXTURES / "installer.tar.gz.sig").read_bytes())
    signature[-1] ^= 0x01
    with pytest.raises(openpgp.SignatureError, match="the RSA signature does not verify"):
        openpgp.verify_detached(
            str(FIXTURES / "installer.tar.gz"),
            bytes(signature),
            (FIXTURES / "signer.key").read_bytes(),
            SIGNER,
        )


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        (b"", "0 signature packets found"),
        (b"not a packet", "no packet header"),
        (b"-----BEGIN PGP SIGNATURE-----\n\n-----END PGP SIGNATURE-----\n", "holds no data"),
    ],
)
def test_openpgp_refuses_what_does_not_parse(openpgp: ModuleType, signature: bytes, message: str) -> None:
    with pytest.raises(openpgp.SignatureError, match=message):
        openpgp.verify_detached(
            str(FIXTURES / "installer.tar.gz"), signature, (FIXTURES / "signer.key").read_bytes(), SIGNER
        )
