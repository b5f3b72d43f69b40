"""CloudFormation custom resource: copy the pinned EFA installer into the cluster's bucket.

Runs in AWS Lambda (Python 3.12 runtime, boto3 included), outside any VPC so it can reach
``efa-installer.amazonaws.com``; nodes then fetch the copy from S3 through the VPC's S3 gateway
endpoint, so training works with or without a NAT. Properties: ``Url``, ``Sha256``, ``Bucket``,
``Key``. Create and Update download the tarball, refuse it unless its SHA-256 is the pinned one, and
upload it with that checksum. Delete removes the object so the bucket can be deleted with its stack
(after a version bump, the old object with the old properties). The result goes to CloudFormation
through :mod:`cfn_response`.
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


def mirror(properties: dict[str, Any], s3: Any) -> str:
    """Copy the installer into the bucket; return the physical id ``s3://bucket/key``."""
    url, expected = properties["Url"], properties["Sha256"].lower()
    bucket, key = properties["Bucket"], properties["Key"]
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "installer.tar.gz")
        actual = download(url, path)
        if actual != expected:
            raise ValueError(f"{url} has SHA-256 {actual}, not the pinned {expected}; refusing to mirror it")
        with open(path, "rb") as body:
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=body,
                ChecksumSHA256=base64.b64encode(bytes.fromhex(expected)).decode("ascii"),
            )
    LOG.info("mirrored %s to s3://%s/%s", url, bucket, key)
    return f"s3://{bucket}/{key}"


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
        return mirror(properties, client), {}

    def delete(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        physical_id = event.get("PhysicalResourceId") or ""
        remove(physical_id, properties, client)
        return physical_id, {}

    cfn_response.serve(event, create_or_update=copy, delete=delete)
