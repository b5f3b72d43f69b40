"""A model artifact_uri holds a self-contained precompiled model."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection
from typing import Any

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.deployment import ServingDeployment
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.serving.engines import ContainerImage
from cdk_neuron.serving.model_spec import parse_s3_uri

# What a self-contained precompiled model holds (README "Precompiled artifacts"), by the layouts the
# engines load. optimum-neuron's NxD backend (the vLLM DLC) saves config.json, neuron_config.json and
# model.pt (model_<bundle>.pt for multi-bundle models), and, only when exported from a local
# directory, checkpoint/weights/tp<rank>_sharded_checkpoint.safetensors (save() and _save_pretrained()
# in optimum/neuron/models/inference/backend/pretrained_model.py @v0.4.5 abf59858). Without
# checkpoint/ it loads *.safetensors (model.safetensors or the model-*-of-*.safetensors index layout)
# from the directory, then falls back to downloading the checkpoint from the Hub
# (load_weights(), same file; modules/checkpoint.py load_state_dict()). optimum-neuron's older
# transformers-neuronx backend (TGI 3.2.3's optimum-neuron 0.1.0) saves compiled/*.neff and, from a
# local directory, a checkpoint/ copy (modeling_decoder.py _save_pretrained() @v0.1.0). NxD Inference
# (vllm-neuron, NEURON_COMPILED_ARTIFACTS) keeps model.pt and neuron_config.json next to the
# checkpoint or its weights/ shards.
_GRAPH = re.compile(r"^(model(_[\w.-]+)?\.pt|compiled/.+\.neff)$")


_WEIGHTS = re.compile(r"(^|/)[^/]+\.safetensors$")


_SHARD = re.compile(r"^(?P<dir>(.+/)?)weights/tp(?P<rank>\d+)_sharded_checkpoint\.safetensors$")


_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


EXPORT_FIX = (
    "export from a local download of the checkpoint so the weights are saved with the graphs "
    "(README: Precompiled artifacts) and upload the whole output directory"
)


def _artifact_keys(s3: Any, bucket: str, prefix: str) -> dict[str, int] | None:
    """Keys under ``prefix/``, relative to it, with their sizes; None when the bucket does not exist."""
    keys: dict[str, int] = {}
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": f"{prefix}/"}
    while True:
        try:
            page = s3.list_objects_v2(**kwargs)
        except Exception as error:
            if error_code(error) == "NoSuchBucket":
                return None
            raise
        keys.update((o["Key"][len(prefix) + 1 :], o.get("Size", 0)) for o in page.get("Contents", []))
        if not page.get("IsTruncated"):
            return keys
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def _graph_row(ctx: CheckContext, uri: str, keys: Collection[str]) -> Row:
    graphs = sorted(k for k in keys if _GRAPH.match(k))
    traced = [k for k in graphs if k.endswith(".pt")]
    if traced and "neuron_config.json" not in keys:
        return ctx.row(
            "artifact graph",
            uri,
            "FAIL",
            f"{', '.join(traced)} without neuron_config.json: the engine would not recognise a Neuron model; "
            "upload the export's whole output directory",
        )
    if graphs:
        shown = traced or [f"{len(graphs)} NEFF file(s) under compiled/"]
        return ctx.row(
            "artifact graph", uri, "PASS", ", ".join(shown) + (" + neuron_config.json" if traced else "")
        )
    return ctx.row(
        "artifact graph",
        uri,
        "FAIL",
        "no compiled graph (model.pt with neuron_config.json, or compiled/*.neff): instances would compile "
        "at start-up; run optimum-cli export neuron and upload its output",
    )


def _weights_row(ctx: CheckContext, uri: str, keys: Collection[str]) -> Row:
    weights = [k for k in keys if _WEIGHTS.search(k)]
    if not weights:
        return ctx.row(
            "artifact weights",
            uri,
            "FAIL",
            "no weights (*.safetensors): an export from a Hub id stores only the checkpoint's name, so every "
            "instance would download it from the Hub (impossible with network isolation, no NAT or a gated "
            f"model without a token); {EXPORT_FIX}",
        )
    ranks: dict[str, set[int]] = defaultdict(set)
    for key in weights:
        match = _SHARD.match(key)
        if match:
            ranks[match["dir"]].add(int(match["rank"]))
    if not ranks:
        return ctx.row(
            "artifact weights", uri, "PASS", f"{len(weights)} safetensors file(s) (unsharded checkpoint)"
        )
    assert ctx.env.serving is not None
    tensor_parallel = ctx.env.serving.plan.tensor_parallel
    for directory, found in sorted(ranks.items()):
        if found != set(range(tensor_parallel)):
            return ctx.row(
                "artifact weights",
                uri,
                "FAIL",
                f"{directory}weights/ holds shards for ranks {sorted(found)}, but the plan serves TP "
                f"{tensor_parallel} (ranks 0-{tensor_parallel - 1}); export with --tensor_parallel_size "
                f"{tensor_parallel} or set serving.model.tensor_parallel to the exported TP",
            )
    where = ", ".join(f"{d}weights/" for d in sorted(ranks))
    return ctx.row("artifact weights", uri, "PASS", f"TP {tensor_parallel} shards in {where}")


def _files_row(ctx: CheckContext, uri: str, keys: Collection[str]) -> Row:
    missing = [name for name in ("config.json",) if name not in keys]
    if not any(name in keys for name in _TOKENIZER):
        missing.append(" or ".join(_TOKENIZER))
    if missing:
        return ctx.row(
            "artifact config",
            uri,
            "FAIL",
            f"missing {'; '.join(missing)} at the prefix: the engine loads the model config and tokenizer from "
            "there; upload the export's whole output directory (optimum-cli export neuron saves both)",
        )
    return ctx.row("artifact config", uri, "PASS", "config.json and tokenizer files")


def _served_image(ctx: CheckContext) -> ContainerImage | None:
    assert ctx.env.serving is not None
    return served_image(ctx.env.serving)


def served_image(serving: ServingDeployment) -> ContainerImage | None:
    """The image the fleet runs: as synthesized (read from the assembly), else the engine's."""
    if serving.image is not None:
        reference, _, tag = serving.image.rpartition(":")
        registry, _, repository = reference.rpartition("/")
        if registry and repository and tag and "/" not in tag:
            return ContainerImage(registry, repository, tag)
    if serving.backend == "sagemaker":
        return serving.engine.sagemaker_image
    return serving.engine.image


def _manifest_rows(ctx: CheckContext, bucket: str, prefix: str, uri: str, keys: dict[str, int]) -> list[Row]:
    """The artifact's manifest: present, valid, describing what the fleet serves, and its files intact."""
    if MANIFEST_NAME not in keys:
        return [
            ctx.row(
                "artifact manifest",
                uri,
                "WARN",
                f"no {MANIFEST_NAME}: the batch, sequence length, TP, dtype, engine and Neuron SDK it was compiled "
                "for cannot be checked until an instance fails to load it; compile it with cdk-neuron compile, "
                "which writes the manifest",
            )
        ]
    body = ctx.client("s3").get_object(Bucket=bucket, Key=f"{prefix}/{MANIFEST_NAME}")["Body"].read()
    try:
        manifest = ArtifactManifest.from_json(body, where=f"{uri}{MANIFEST_NAME}")
    except NeuronConfigError as error:
        return [ctx.row("artifact manifest", uri, "FAIL", str(error))]
    serving = ctx.env.serving
    assert serving is not None
    copy = serving.artifact_manifest
    if copy is not None and copy.to_dict() != manifest.to_dict():
        differs = sorted(k for k, v in copy.to_dict().items() if manifest.to_dict().get(k) != v)
        return [
            ctx.row(
                "artifact manifest",
                uri,
                "FAIL",
                f"the app's copy (serving.model.artifact_manifest) differs from {MANIFEST_NAME} in S3 in "
                f"{', '.join(differs)}: synthesis checked the fleet against a manifest that does not describe "
                "this artifact; take the copy again with cdk-neuron use-artifact",
            )
        ]
    mismatches = manifest.mismatches(serving.model, serving.plan, serving.engine.name, _served_image(ctx))
    if mismatches:
        return [
            ctx.row(
                "artifact manifest",
                uri,
                "FAIL",
                "; ".join(str(e) for e in mismatches),
            )
        ]
    shape = manifest.shape
    rows = [
        ctx.row(
            "artifact manifest",
            uri,
            "PASS",
            f"{manifest.engine} {manifest.engine_version or ''}".rstrip()
            + f", batch {shape.batch_size} x {shape.sequence_length}, TP {shape.tensor_parallel}, {shape.dtype}, "
            f"SDK {manifest.neuron_sdk or 'unknown'}, compiled in {manifest.compile_seconds / 60:.1f} min",
        )
    ]
    changed = [
        f.path if f.path in keys else f"{f.path} (missing)"
        for f in manifest.files
        if keys.get(f.path) != f.bytes
    ]
    if changed:
        rows.append(
            ctx.row(
                "artifact files",
                uri,
                "FAIL",
                f"{len(changed)} file(s) differ in size from the manifest or are missing: {', '.join(changed[:5])}"
                + (" ..." if len(changed) > 5 else "")
                + "; the prefix was changed after it was compiled: upload the whole export again or recompile",
            )
        )
    else:
        gib = manifest.total_bytes / 2**30
        rows.append(
            ctx.row(
                "artifact files",
                uri,
                "PASS",
                f"{len(manifest.files)} file(s), {gib:.1f} GiB, sizes as compiled",
            )
        )
    return rows


def check_artifacts(ctx: CheckContext) -> list[Row]:
    if ctx.env.serving is None:
        return []
    uri = ctx.env.serving.model.artifact_uri
    if uri is None:
        return []
    location = parse_s3_uri(uri)
    keys = _artifact_keys(ctx.client("s3"), location.bucket, location.prefix)
    if keys is None:
        return [ctx.row("artifacts", location.uri, "FAIL", f"bucket {location.bucket} does not exist")]
    if not keys:
        return [
            ctx.row(
                "artifacts",
                location.uri,
                "FAIL",
                f"nothing under the prefix: {EXPORT_FIX}, e.g. aws s3 sync ./export/ {location.uri}",
            )
        ]
    return [
        ctx.row("artifacts", location.uri, "PASS", f"{len(keys)} object(s)"),
        _graph_row(ctx, location.uri, keys),
        _weights_row(ctx, location.uri, keys),
        _files_row(ctx, location.uri, keys),
        *_manifest_rows(ctx, location.bucket, location.prefix, location.uri, keys),
    ]


CHECK = Check(
    "artifacts",
    check_artifacts,
    passes_when=(
        "`serving.model.artifact_uri` holds a compiled graph, weights, config and tokenizer, and its "
        "`cdk-neuron-artifact.json` describes the fleet's shape, engine and image SDK and the files present, "
        "and equals the app's copy (`serving.model.artifact_manifest`) when there is one"
    ),
    calls=("s3:ListBucket", "s3:GetObject"),
)
