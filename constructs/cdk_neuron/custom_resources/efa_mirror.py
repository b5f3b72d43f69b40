"""CloudFormation custom resource: copy the pinned EFA installer into the cluster's bucket.

Runs in AWS Lambda (Python 3.12 runtime, boto3 included), outside any VPC so it can reach
``efa-installer.amazonaws.com``; nodes then fetch the copy from S3 through the VPC's S3 gateway
endpoint, so training works with or without a NAT. Properties: ``Url``, ``Bucket``, ``Key`` and how
to verify the tarball: ``Sha256`` (a pinned digest), or ``SignatureUrl``, ``KeyUrl`` and
``KeyFingerprint`` (AWS's documented GPG check: the key must have that fingerprint and the detached
signature must verify under it, :mod:`openpgp`). Create and Update download the tarball, refuse it
unless it verifies, and upload it with its SHA-256, which they return as the ``Sha256`` attribute (the
nodes check their download against it). Delete removes the object so the bucket can be deleted with
its stack (after a version bump, the old object with the old properties). The result goes to
CloudFormation through :mod:`cfn_response`.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import urllib.request
from typing import Any

import boto3
import cfn_response  # type: ignore[import-not-found]  # beside this file in the function's code
import openpgp  # type: ignore[import-not-found]  # beside this file in the function's code

LOG = cfn_response.LOG
CHUNK = 1024 * 1024
DOWNLOAD_TIMEOUT_SECONDS = 120


def download(url: str, path: str) -> str:
    """Stream ``url`` to ``path``; return the hex SHA-256 of what was written."""
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response, open(path, "wb") as out:
        while True:
            chunk = response.read(CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def fetch(url: str) -> bytes:
    """A small file (a key or a signature)."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        return response.read()  # type: ignore[no-any-return]


def mirror(properties: dict[str, Any], s3: Any) -> tuple[str, str]:
    """Copy the verified installer into the bucket; return the physical id ``s3://bucket/key`` and its SHA-256."""
    url, bucket, key = properties["Url"], properties["Bucket"], properties["Key"]
    expected = properties.get("Sha256")
    fingerprint = properties.get("KeyFingerprint")
    if (expected is None) == (fingerprint is None):
        raise ValueError("give either Sha256 or SignatureUrl, KeyUrl and KeyFingerprint")
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "installer.tar.gz")
        actual = download(url, path)
        if expected is not None and actual != expected.lower():
            raise ValueError(
                f"{url} has SHA-256 {actual}, not the pinned {expected.lower()}; refusing to mirror it"
            )
        if fingerprint is not None:
            signature_url, key_url = properties["SignatureUrl"], properties["KeyUrl"]
            try:
                digest = openpgp.verify_detached(path, fetch(signature_url), fetch(key_url), fingerprint)
            except openpgp.SignatureError as error:
                raise ValueError(
                    f"{url} is not signed by the EFA key {fingerprint} ({key_url}): {error}; "
                    "refusing to mirror it"
                ) from error
            LOG.info("%s: good %s signature from %s", url, digest, fingerprint)
        with open(path, "rb") as body:
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=body,
                ChecksumSHA256=base64.b64encode(bytes.fromhex(actual)).decode("ascii"),
            )
    LOG.info("mirrored %s to s3://%s/%s (SHA-256 %s)", url, bucket, key, actual)
    return f"s3://{bucket}/{key}", actual


def remove(physical_id: str, properties: dict[str, Any], s3: Any) -> None:
    """Delete the object this resource created (nothing when creation never succeeded)."""
    bucket, key = properties["Bucket"], properties["Key"]
    if physical_id == f"s3://{bucket}/{key}":
        s3.delete_object(Bucket=bucket, Key=key)


def handler(event: dict[str, Any], context: Any, s3: Any = None) -> None:
    client = s3 or boto3.client("s3")
    properties = event["ResourceProperties"]

    def copy(_: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        # An update that moves the object (a new version or key) removes the old copy afterwards:
        # CloudFormation sends a Delete for the old physical id, with the old properties.
        physical_id, digest = mirror(properties, client)
        return physical_id, {"Sha256": digest}

    def delete(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        physical_id = event.get("PhysicalResourceId") or ""
        remove(physical_id, properties, client)
        return physical_id, {}

    cfn_response.serve(event, create_or_update=copy, delete=delete)
