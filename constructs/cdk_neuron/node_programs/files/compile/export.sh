#!/bin/bash
# cdk-neuron compile, step 2 of 3: convert a training checkpoint if needed, export it for Inferentia2,
# and write cdk-neuron-artifact.json beside the export.
#
# Runs in the serving image itself (ModelCompilation's "export" container; the task definition
# replaces the image's serving entrypoint with `bash -c <this file>`), so the graphs are compiled by
# the very optimum-neuron and neuronx-cc the fleet will load them with. No Neuron device is needed:
# "The one-time compilation step from the standard framework-level model to NEFF binary may be
# performed on any EC2 instance or even on-premises" (Neuron Compiler FAQ, neuronx-cc,
# https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/neuronx-cc/faq.html, read
# 2026-12-02), and `--instance_type inf2` names the target instead of detecting it
# (huggingface/optimum-neuron optimum/commands/export/neuronx.py).
#
# Settings (container environment, written by cdk-neuron compile):
#   SOURCE_KIND s3 | checkpoint | hub; SOURCE_URI (prefix, path under CHECKPOINT_MOUNT, or Hub id);
#   SOURCE_STEP; MODEL_ID; MODEL_REVISION; HF_TOKEN (hub sources, from Secrets Manager);
#   CONVERT_TP, CONVERT_PP, CONVERT_KV_MULTIPLIER, CONVERT_HW_BACKEND (a neuronx-distributed training
#   checkpoint's layout, and trn1 or trn2);
#   BATCH_SIZE, SEQUENCE_LENGTH, TENSOR_PARALLEL, DTYPE; ENGINE, ENGINE_VERSION, IMAGE, NEURON_SDK;
#   ARTIFACT_URI; WORK_DIR; CHECKPOINT_MOUNT; NEURON_COMPILE_CACHE_URL (the shared S3 compile cache).
set -euo pipefail
CDK_NEURON_PROGRAM=compile-export
log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
die() {
    log "FAILED: $*"
    exit 1
}

: "${SOURCE_KIND:?}" "${SOURCE_URI:?}" "${WORK_DIR:?}" "${ARTIFACT_URI:?}" "${ENGINE:?}" "${IMAGE:?}"
: "${BATCH_SIZE:?}" "${SEQUENCE_LENGTH:?}" "${TENSOR_PARALLEL:?}" "${DTYPE:?}"
export_dir="${WORK_DIR}/export"
mkdir -p "${export_dir}"

# -- 1. the source, as a Hugging Face checkpoint directory --------------------------------------
case "${SOURCE_KIND}" in
    s3) source_dir="${WORK_DIR}/source" ;;
    checkpoint) source_dir="${CHECKPOINT_MOUNT:?}/${SOURCE_URI#/}" ;;
    hub)
        source_dir="${WORK_DIR}/source"
        log "downloading ${SOURCE_URI}${MODEL_REVISION:+ @${MODEL_REVISION}} from the Hub"
        python3 - "${SOURCE_URI}" "${source_dir}" "${MODEL_REVISION:-}" <<'PY' || die "Hub download of ${SOURCE_URI} (gated? HF_TOKEN)"
import sys
from huggingface_hub import snapshot_download
repo, target, revision = sys.argv[1], sys.argv[2], sys.argv[3] or None
snapshot_download(repo, local_dir=target, revision=revision,
                  allow_patterns=["*.json", "*.safetensors", "tokenizer*"])
PY
        ;;
    *) die "SOURCE_KIND=${SOURCE_KIND}: use s3, checkpoint or hub" ;;
esac
[ -d "${source_dir}" ] || die "no source directory ${source_dir}"
[ -f "${source_dir}/config.json" ] || die "${source_dir} has no config.json: the exporter needs the model config"

# The sha256sum lines of every source file, sorted by path: their hash is the manifest's source.sha256.
(cd "${source_dir}" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -r -d '\n' sha256sum) \
    >"${WORK_DIR}/source.sha256" || die "hashing ${source_dir}"

# A neuronx-distributed training checkpoint (model/dp_rank_*_tp_rank_*_pp_rank_*.pt, sharded per
# rank) becomes one full state dict with NxD's own converter, the one NxD Training's
# checkpoint_converter.py runs (neuronx_distributed.scripts.checkpoint_converter.CheckpointConverterBase,
# --convert_to_full_state; "Checkpoint Conversion", NxD Training,
# https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-training/tutorials/checkpoint_conversion.html,
# read 2026-12-02), then safetensors beside the checkpoint's config and tokenizer.
if compgen -G "${source_dir}/model/dp_rank_*" >/dev/null; then
    : "${CONVERT_TP:?a sharded training checkpoint needs CONVERT_TP, the TP of the training run}"
    converted="${WORK_DIR}/converted"
    mkdir -p "${converted}"
    # The converter's flags. Its boolean flags are argparse `type=bool`, so any value given, "False"
    # included, reads as True: a flag that must be False is left out. --hw_backend is required (NxD
    # 2.21+). Whether the run used NxD's GQA QKV layer (keys ...qkv_proj.weight_q/_k/_v: --qkv_linear)
    # or a fused one (...qkv_proj.weight_qkv: --fuse_qkv with --n_layers) is read from the first shard's
    # keys, because converting with the wrong layout silently scrambles the attention weights.
    flags=(--model_style hf --input_dir "${source_dir}/model" --output_dir "${converted}"
        --config "${source_dir}/config.json" --hw_backend "${CONVERT_HW_BACKEND:-trn1}"
        --tp_size "${CONVERT_TP}" --pp_size "${CONVERT_PP:-1}"
        --kv_size_multiplier "${CONVERT_KV_MULTIPLIER:-1}" --convert_to_full_state)
    if compgen -G "${source_dir}/model/*.tensors" >/dev/null; then flags+=(--load_xser True); fi
    layout=$(python3 - "${source_dir}" <<'PY'
import glob, json, sys
import torch
source = sys.argv[1]
first = sorted(glob.glob(f"{source}/model/dp_rank_*_tp_rank_00_pp_rank_00.pt"))[0]
state = torch.load(first, map_location="cpu", weights_only=False)
if isinstance(state, dict) and isinstance(state.get("model"), dict):
    state = state["model"]
keys = list(state)
if any(k.endswith("qkv_proj.weight_qkv") for k in keys):
    with open(f"{source}/config.json", encoding="utf-8") as handle:
        layers = json.load(handle)["num_hidden_layers"]
    print("--fuse_qkv\nTrue\n--qkv_linear\nTrue\n--n_layers\n%d" % layers)
elif any(k.endswith("qkv_proj.weight_q") for k in keys):
    print("--qkv_linear\nTrue")
PY
    ) || die "reading the layout of ${source_dir}/model"
    if [ -n "${layout}" ]; then
        mapfile -t layout_flags <<<"${layout}"
        flags+=("${layout_flags[@]}")
    fi
    log "converting the tp=${CONVERT_TP} pp=${CONVERT_PP:-1} ${CONVERT_HW_BACKEND:-trn1} training checkpoint to a full state dict"
    python3 - "${flags[@]}" <<'PY' || die "checkpoint conversion"
from neuronx_distributed.scripts.checkpoint_converter import CheckpointConverterBase
converter = CheckpointConverterBase()
converter.run(converter.get_arg_parser().parse_args())
PY
    python3 - "${converted}/checkpoint.pt" "${converted}/model.safetensors" <<'PY' || die "writing safetensors"
import sys
import torch
from safetensors.torch import save_file
state = torch.load(sys.argv[1], map_location="cpu")
# safetensors refuses tensors that share memory (tied embeddings): each gets its own copy.
seen, tensors = set(), {}
for key, value in state.items():
    value = value.contiguous()
    if value.data_ptr() in seen:
        value = value.clone()
    seen.add(value.data_ptr())
    tensors[key] = value
save_file(tensors, sys.argv[2])
PY
    rm -f "${converted}/checkpoint.pt"
    for file in "${source_dir}"/*.json "${source_dir}"/tokenizer*; do
        [ -f "${file}" ] && cp "${file}" "${converted}/"
    done
    source_dir="${converted}"
fi

# -- 2. the export -----------------------------------------------------------------------------
case "${DTYPE}" in
    bf16) torch_dtype=bfloat16 ;;
    fp16) torch_dtype=float16 ;;
    fp32) torch_dtype=float32 ;;
    *) die "DTYPE=${DTYPE}: optimum-cli export neuron loads bf16, fp16 or fp32" ;;
esac
# `neuronx-cc --version` prints the compiler's version on its first versioned line.
compiler_version=$(neuronx-cc --version 2>&1 | grep -oE '[0-9]+(\.[0-9]+){2,3}[^[:space:]]*' | head -n 1) ||
    die "neuronx-cc --version: is this a Neuron serving image?"
log "exporting for inf2: batch ${BATCH_SIZE} x ${SEQUENCE_LENGTH}, TP ${TENSOR_PARALLEL}, ${DTYPE} (neuronx-cc ${compiler_version:-unknown})"
started=$(date +%s)
optimum-cli export neuron --model "${source_dir}" --task text-generation --instance_type inf2 \
    --batch_size "${BATCH_SIZE}" --sequence_length "${SEQUENCE_LENGTH}" \
    --tensor_parallel_size "${TENSOR_PARALLEL}" --torch_dtype "${torch_dtype}" "${export_dir}" ||
    die "optimum-cli export neuron"
finished=$(date +%s)

# -- 3. the manifest ---------------------------------------------------------------------------
python3 - "${export_dir}" "${WORK_DIR}/source.sha256" "$((finished - started))" "${compiler_version}" <<'PY' ||
import hashlib, json, os, sys, time
export_dir, source_lines, seconds, compiler = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
env = os.environ
name = "cdk-neuron-artifact.json"
files = []
for root, _, names in os.walk(export_dir):
    for file in sorted(names):
        path = os.path.join(root, file)
        relative = os.path.relpath(path, export_dir)
        if relative == name:
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        files.append({"path": relative, "bytes": os.path.getsize(path), "sha256": digest.hexdigest()})
files.sort(key=lambda f: f["path"])
with open(source_lines, "rb") as handle:
    source_hash = hashlib.sha256(handle.read()).hexdigest()
step = env.get("SOURCE_STEP") or None
manifest = {
    "format": "cdk-neuron-artifact",
    "version": 1,
    "artifact_uri": env["ARTIFACT_URI"],
    "model": {"id": env.get("MODEL_ID") or None, "revision": env.get("MODEL_REVISION") or None},
    "source": {"kind": env["SOURCE_KIND"], "uri": env["SOURCE_URI"], "step": int(step) if step else None,
               "sha256": source_hash},
    "engine": {"name": env["ENGINE"], "version": env.get("ENGINE_VERSION") or None, "image": env["IMAGE"]},
    "neuron": {"sdk": env.get("NEURON_SDK") or None, "compiler": compiler or None},
    "shape": {"batch_size": int(env["BATCH_SIZE"]), "sequence_length": int(env["SEQUENCE_LENGTH"]),
              "tensor_parallel": int(env["TENSOR_PARALLEL"]), "dtype": env["DTYPE"]},
    "files": files,
    "compile_seconds": seconds,
    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
}
with open(os.path.join(export_dir, name), "w", encoding="utf-8") as handle:
    json.dump(manifest, handle, indent=2)
    handle.write("\n")
PY
    die "writing cdk-neuron-artifact.json"
log "exported $(find "${export_dir}" -type f | wc -l) file(s) in $((finished - started)) s"
