"""Is the fleet's shape compiled already? The artifacts in S3 beside the one configured (``cost --check-artifacts``).

A compiled shape is an artifact whose ``cdk-neuron-artifact.json`` fits the fleet (batch, sequence
length, TP, dtype, engine, the image's Neuron SDK: :meth:`ArtifactManifest.mismatches`). Looked at, in
order, with ``s3:GetObject`` and ``s3:ListBucket`` (ListObjectsV2) only:

1. the manifest at the fleet's ``artifact_uri``: it fits, so nothing needs compiling;
2. the manifests of the artifacts beside it (every ``*/cdk-neuron-artifact.json`` under the parent
   prefix of ``artifact_uri``, as ``cdk-neuron compile`` lays out one prefix per artifact of a model):
   one that fits is served with ``cdk-neuron use-artifact``, no compile needed;
3. otherwise the shape is new: a compile is needed, and the ``compile_seconds`` of the model's
   earlier compiles (same model id, any shape) replace the published estimate as a measured figure.

A fleet without ``artifact_uri`` compiles on its instances at every start. An S3 error (access
denied, no such bucket) leaves the answer unknown, with the error, rather than failing ``cost``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.artifacts import served_image
from cdk_neuron.deployment import ServingDeployment
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.serving.model_spec import parse_s3_uri

MAX_PAGES = 10
"""ListObjectsV2 pages read under the parent prefix (1,000 keys each)."""
MAX_MANIFESTS = 50
"""Manifests read beside the configured artifact."""


@dataclass(frozen=True)
class CacheStatus:
    """What S3 says about the fleet's shape."""

    text: str
    compiled: bool | None
    """True: an artifact of the shape exists; False: none found; None: unknown."""
    measured_seconds: float | None = None
    """The model's earlier compile time (its manifests' ``compile_seconds``), when one was read."""
    artifact_uri: str | None = None
    """The artifact that fits, when one does."""


def _read(s3: Any, bucket: str, key: str) -> bytes | None:
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except Exception as error:
        if error_code(error) in ("NoSuchKey", "404"):
            return None
        raise
    return body if isinstance(body, bytes) else str(body).encode()


def _fits(manifest: ArtifactManifest, serving: ServingDeployment) -> bool:
    model = replace(serving.model, artifact_uri=manifest.artifact_uri)
    return not manifest.mismatches(model, serving.plan, serving.engine.name, served_image(serving))


def _parse(body: bytes, where: str) -> ArtifactManifest | None:
    try:
        return ArtifactManifest.from_json(body, where=where)
    except NeuronConfigError:
        return None  # not a manifest this reader can use: neither a hit nor a measurement


def look_up(s3: Any, serving: ServingDeployment, *, env: str) -> CacheStatus:
    """Whether the fleet's shape is compiled already, from the artifacts in S3 (see the module)."""
    uri = serving.model.artifact_uri
    if uri is None:
        return CacheStatus(
            "no artifact_uri: every instance compiles (or finds the shape in the Neuron model cache on the Hub) "
            "at each start",
            False,
        )
    location = parse_s3_uri(uri)
    try:
        return _look_up(s3, serving, location.bucket, location.prefix, location.uri, env)
    except Exception as error:
        code = error_code(error) or type(error).__name__
        return CacheStatus(f"unknown: S3 answered {code} for {location.uri} ({error})", None)


def _look_up(
    s3: Any, serving: ServingDeployment, bucket: str, prefix: str, uri: str, env: str
) -> CacheStatus:
    measured: list[float] = []
    model_id = serving.model.model_id
    body = _read(s3, bucket, f"{prefix}/{MANIFEST_NAME}" if prefix else MANIFEST_NAME)
    if body is not None:
        manifest = _parse(body, f"{uri}{MANIFEST_NAME}")
        if manifest is not None and _fits(manifest, serving):
            return CacheStatus(
                f"yes: {uri} holds this shape (compiled in {manifest.compile_seconds / 60:.1f} min): no compile needed",
                True,
                manifest.compile_seconds,
                uri,
            )
        if manifest is not None and manifest.model_id == model_id:
            measured.append(manifest.compile_seconds)
    parent = prefix.rpartition("/")[0]
    parent_prefix = f"{parent}/" if parent else ""
    keys: list[str] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": parent_prefix}
    for _ in range(MAX_PAGES):
        page = s3.list_objects_v2(**kwargs)
        keys += [
            o["Key"]
            for o in page.get("Contents", [])
            if o["Key"].endswith(f"/{MANIFEST_NAME}") and o["Key"] != f"{prefix}/{MANIFEST_NAME}"
        ]
        if not page.get("IsTruncated"):
            break
        kwargs["ContinuationToken"] = page["NextContinuationToken"]
    for key in sorted(keys)[:MAX_MANIFESTS]:
        found = _read(s3, bucket, key)
        manifest = None if found is None else _parse(found, f"s3://{bucket}/{key}")
        if manifest is None:
            continue
        if _fits(manifest, serving):
            return CacheStatus(
                f"yes, beside it: {manifest.artifact_uri} holds this shape (compiled in "
                f"{manifest.compile_seconds / 60:.1f} min): serve it with cdk-neuron use-artifact --env {env} "
                f"{manifest.artifact_uri}",
                True,
                manifest.compile_seconds,
                manifest.artifact_uri,
            )
        if manifest.model_id == model_id:
            measured.append(manifest.compile_seconds)
    where = f"s3://{bucket}/{parent_prefix}"
    seen = min(len(keys), MAX_MANIFESTS)
    return CacheStatus(
        f"no: no artifact of this shape at {uri} or beside it under {where} ({seen} other manifest(s) read): "
        "a new compile (cdk-neuron compile)",
        False,
        max(measured) if measured else None,
    )


__all__ = ["MAX_MANIFESTS", "MAX_PAGES", "CacheStatus", "look_up"]
