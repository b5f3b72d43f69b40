"""CloudFormation custom resource: write a HyperPod cluster's lifecycle scripts into its bucket.

SageMaker HyperPod reads lifecycle scripts from an S3 prefix that the managed instance policy can
read only in buckets named ``sagemaker-*`` ("ClusterLifeCycleConfig", Amazon SageMaker API
Reference). This function puts the scripts there. Properties:

- ``Bucket``, ``Prefix``: where (the prefix ends with ``/`` and carries a hash of the content, so
  a node HyperPod replaces later runs exactly the scripts the cluster was created with, and a change
  is a new prefix);
- ``Files``: ``{relative path: text}``, written as they are;
- ``Copies``: ``{relative path: "s3://bucket/key"}``, objects copied in (a package the scripts
  install, from the CDK asset bucket).

Create and Update write everything; the physical id is ``s3://<bucket>/<prefix>``. Delete removes
what this resource wrote (CloudFormation sends it for the old prefix after an update moved it), so
the bucket is empty when its stack deletes it.
"""

from __future__ import annotations

from typing import Any

import boto3
import cfn_response  # type: ignore[import-not-found]  # beside this file in the function's code

LOG = cfn_response.LOG


def _keys(properties: dict[str, Any]) -> list[str]:
    prefix = properties["Prefix"]
    names = [*properties.get("Files", {}), *properties.get("Copies", {})]
    return [f"{prefix}{name}" for name in sorted(names)]


def write(properties: dict[str, Any], s3: Any) -> str:
    """Write the files and copies; return the physical id ``s3://bucket/prefix``."""
    bucket, prefix = properties["Bucket"], properties["Prefix"]
    if not prefix.endswith("/"):
        raise ValueError(f"Prefix {prefix!r} must end with '/'")
    for name, text in sorted(properties.get("Files", {}).items()):
        s3.put_object(Bucket=bucket, Key=f"{prefix}{name}", Body=text.encode("utf-8"))
    for name, source in sorted(properties.get("Copies", {}).items()):
        if not source.startswith("s3://") or "/" not in source[5:]:
            raise ValueError(f"Copies[{name!r}] = {source!r} is not an s3://bucket/key URI")
        source_bucket, source_key = source[5:].split("/", 1)
        s3.copy_object(
            Bucket=bucket, Key=f"{prefix}{name}", CopySource={"Bucket": source_bucket, "Key": source_key}
        )
    LOG.info("wrote %d objects under s3://%s/%s", len(_keys(properties)), bucket, prefix)
    return f"s3://{bucket}/{prefix}"


def remove(physical_id: str, properties: dict[str, Any], s3: Any) -> None:
    """Delete what this resource wrote (nothing when its creation never succeeded)."""
    bucket, prefix = properties["Bucket"], properties["Prefix"]
    if physical_id != f"s3://{bucket}/{prefix}":
        return
    keys = _keys(properties)
    if keys:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True})


def handler(event: dict[str, Any], context: Any, s3: Any = None) -> None:
    client = s3 or boto3.client("s3")
    properties = event["ResourceProperties"]

    def create_or_update(_: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return write(properties, client), {}

    def delete(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        physical_id = event.get("PhysicalResourceId") or ""
        remove(physical_id, properties, client)
        return physical_id, {}

    cfn_response.serve(event, create_or_update=create_or_update, delete=delete)
