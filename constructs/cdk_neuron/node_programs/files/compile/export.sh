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
# 2026-12-02), and `--instance_type <the fleet's family>` names the target instead of detecting it
# (huggingface/optimum-neuron optimum/commands/export/neuronx.py).
#
# What it records is what was compiled, read back from the export, never what was asked: the
# exporter's neuron_config.json (batch_size, sequence_length, tp_degree, torch_dtype, target,
# optimum_neuron_version, neuronxcc_version; optimum/neuron/configuration_utils.py @v0.4.5 writes the
# two versions, and NeuronConfig.from_dict refuses to load an export whose versions differ from the
# installed ones), and the image this container runs, from the ECS task metadata endpoint ("Amazon
# ECS task metadata endpoint version 4 for tasks on Fargate", Amazon ECS Developer Guide,
# https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-metadata-endpoint-v4-fargate.html,
# read 2026-12-02: `Image`, `ImageID`). Any difference from the request fails the compile.
#
# Settings (container environment, written by cdk-neuron compile):
#   SOURCE_KIND s3 | checkpoint | hub; SOURCE_URI (prefix, path under CHECKPOINT_MOUNT, or Hub id);
#   SOURCE_STEP; MODEL_ID; MODEL_REVISION; HF_TOKEN (hub sources, from Secrets Manager);
#   CONFIG_FROM (hub:<id>[@revision] or s3://...: config.json and tokenizer for a checkpoint that
#   has none; default hub:MODEL_ID);
#   CONVERT_TP, CONVERT_PP, CONVERT_KV_MULTIPLIER, CONVERT_HW_BACKEND (a neuronx-distributed training
#   checkpoint's layout, and trn1 or trn2);
#   EXPORT_INSTANCE_TYPE (inf2, trn1, trn1n or trn2: --instance_type), EXPORT_TARGET (trn1 or trn2);
#   BATCH_SIZE, SEQUENCE_LENGTH, TENSOR_PARALLEL, DTYPE; ENGINE, ENGINE_VERSION (the fleet's optimum-neuron,
#   checked against the export's), IMAGE (the fleet's image, used only off ECS); ARTIFACT_URI; WORK_DIR;
#   CHECKPOINT_MOUNT; NEURON_COMPILE_CACHE_URL (the shared S3 compile cache); HF_HUB_OFFLINE (1 when
#   the task has no route to the Hub).
set -euo pipefail
CDK_NEURON_PROGRAM=compile-export
log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
die() {
    log "FAILED: $*"
    exit 1
}

: "${SOURCE_KIND:?}" "${SOURCE_URI:?}" "${WORK_DIR:?}" "${ARTIFACT_URI:?}" "${ENGINE:?}" "${IMAGE:?}"
: "${BATCH_SIZE:?}" "${SEQUENCE_LENGTH:?}" "${TENSOR_PARALLEL:?}" "${DTYPE:?}"
: "${EXPORT_INSTANCE_TYPE:?}" "${EXPORT_TARGET:?}"
[ -f "${WORK_DIR}/status/fetch.ok" ] ||
    die "the fetch step did not succeed (its log: stream prefix fetch); nothing to export"
export_dir="${WORK_DIR}/export"
model_dir="${WORK_DIR}/model"
lines="${WORK_DIR}/source.lines"
mkdir -p "${export_dir}"
case "${DTYPE}" in
    bf16) torch_dtype=bfloat16 ;;
    fp16) torch_dtype=float16 ;;
    fp32) torch_dtype=float32 ;;
    *) die "DTYPE=${DTYPE}: optimum-cli export neuron loads bf16, fp16 or fp32" ;;
esac

# The program's Python steps (the serving image's python3): `helper <step> <arguments>`. A step
# that finds a problem prints it and exits 1.
helper() {
    python3 - "$@" <<'PY'
import fnmatch, hashlib, json, os, re, shutil, struct, sys, time, urllib.request
from pathlib import Path

step, args, env = sys.argv[1], sys.argv[2:], os.environ
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SHORT = {v: k for k, v in DTYPES.items()}
ST_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "I32": 4, "I64": 8,
            "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
ST_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
# What the export reads of a Hugging Face checkpoint directory (and of a training checkpoint: its
# model/ shards), and so what the source hash covers: never optimizer state, never .cache/.
READ = ("*.json", "*.safetensors", "tokenizer*", "*.model", "vocab*", "merges.txt", "*.tiktoken")
TOKENIZER = ("tokenizer.json", "tokenizer.model", "vocab.json")
# The config and tokenizer files (READ without the weights).
CONFIG_FILES = tuple(p for p in READ if p != "*.safetensors")


def fail(*problems):
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1)


def read(relative):
    if relative.startswith("model/"):
        return True  # a training checkpoint's model shards (not optim/)
    return "/" not in relative and any(fnmatch.fnmatch(relative, p) for p in READ)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_lines(path, found):
    with open(path, "a", encoding="utf-8") as handle:
        for relative, digest in sorted(found.items()):
            handle.write(f"{digest}  {relative}\n")


def headers(path):
    """A safetensors file's tensors ({name: (dtype, elements)}) from its header: 8 bytes of length, JSON."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        elements = 1
        for size in info["shape"]:
            elements *= size
        tensors[name] = (info["dtype"], elements)
    return tensors


def config_dtype(config):
    return config.get("torch_dtype") or config.get("dtype")


if step == "hub":
    # A Hub source at one resolved commit; its hash lines from the Hub's own content hashes (the LFS
    # sha256 of each weight file), the small files hashed here: no dependence on download metadata.
    repo, target, revision, lines = args
    from huggingface_hub import HfApi, snapshot_download
    info = HfApi().model_info(repo, revision=revision or None, files_metadata=True)
    snapshot_download(repo, local_dir=target, revision=info.sha, allow_patterns=list(READ),
                      ignore_patterns=["consolidated*", "original/*"])
    found = {}
    for sibling in info.siblings or []:
        path = Path(target, sibling.rfilename)
        if read(sibling.rfilename) and path.is_file():
            lfs = getattr(sibling, "lfs", None)
            found[sibling.rfilename] = lfs.sha256 if lfs is not None else sha256(path)
    write_lines(lines, found)
    print(info.sha)
elif step == "hub-config":
    # config.json and the tokenizer of a Hub repository, for a checkpoint that has none.
    repo, target = args
    repo, _, revision = repo.partition("@")
    from huggingface_hub import snapshot_download
    snapshot_download(repo, local_dir=target, revision=revision or None, allow_patterns=list(CONFIG_FILES))
elif step == "hash":
    # sha256 of every file the export reads under a directory (prefix: where it came from).
    directory, prefix, lines = args
    found = {}
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != ".cache")
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), directory)
            if read(relative):
                found[prefix + relative] = sha256(os.path.join(root, name))
    write_lines(lines, found)
elif step == "inputs":
    # The export's input directory: the weights' files, linked; config.json and the tokenizer from the
    # checkpoint, or from CONFIG_FROM for those it lacks; config.json's dtype set to the fleet's, as
    # optimum-neuron compiles LLMs in the config's dtype and drops --torch_dtype (get_neuron_config,
    # optimum/neuron/models/inference/modeling_utils.py @v0.4.5).
    # Each file from the first directory that has it: the weights, the checkpoint, then CONFIG_FROM's.
    target, dtype, sources = args[0], args[1], args[2:]
    os.makedirs(target)
    for directory in sources:
        for name in sorted(os.listdir(directory)):
            if os.path.isfile(os.path.join(directory, name)) and read(name):
                if not os.path.lexists(os.path.join(target, name)):
                    os.symlink(os.path.join(directory, name), os.path.join(target, name))
    path = os.path.join(target, "config.json")
    if not os.path.exists(path):
        fail(f"no config.json in {' or '.join(sources)}: give the model's config with --config-from "
             "hub:<org/model> or s3://<prefix>/")
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    was = config_dtype(config)
    for key in {"torch_dtype", *(k for k in ("dtype",) if k in config)}:
        config[key] = DTYPES[dtype]
    os.unlink(path)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)
    if was != DTYPES[dtype]:
        said = f"says {was}" if was else "names no dtype"
        print(f"the checkpoint's config {said}; compiling in {DTYPES[dtype]} as the fleet serves it")
elif step == "check":
    # Before the compile (which reads no weight: initialize_model_weights=False, the weights are read
    # only when the export is saved): the tokenizer, the weight files and every layer's tensors.
    directory, dtype = args
    problems = []
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    if not any(os.path.exists(os.path.join(directory, name)) for name in TOKENIZER):
        problems.append(f"no tokenizer ({', '.join(TOKENIZER)}) beside the weights: the fleet serves text; "
                        "give it with --config-from hub:<org/model> or s3://<prefix>/")
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as handle:
            files = sorted(set(json.load(handle)["weight_map"].values()))
    else:
        files = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    tensors = {}
    for name in files:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            problems.append(f"{name} is named by model.safetensors.index.json and missing")
            continue
        try:
            tensors.update(headers(path))
        except (OSError, ValueError, KeyError, struct.error) as error:
            problems.append(f"{name} is not a safetensors file ({error})")
    if not files:
        problems.append("no *.safetensors weights (optimum-neuron exports safetensors checkpoints)")
    elif tensors:
        layers = config.get("num_hidden_layers")
        found = {int(m[1]) for n in tensors if (m := re.match(r"^(?:model\.)?layers\.(\d+)\.", n))}
        if isinstance(layers, int) and found and found != set(range(layers)):
            missing = sorted(set(range(layers)) - found)[:5]
            problems.append(f"config.json has {layers} layers and the weights hold layers {min(found)}-{max(found)} "
                            f"({len(found)}; missing e.g. {missing}): a mis-converted or truncated checkpoint")
        if not any("embed_tokens" in n or n.endswith("wte.weight") for n in tensors):
            problems.append("no token embedding (embed_tokens) among the weights: not a causal LM checkpoint?")
    if problems:
        fail(*problems)
    elements = sum(e for _, e in tensors.values())
    counts = {}
    for kind, e in tensors.values():
        counts[kind] = counts.get(kind, 0) + e
    stored = max(counts, key=counts.get)
    print(json.dumps({"elements": elements, "stored": ST_DTYPES.get(stored, stored),
                      "bytes": sum(e * ST_BYTES.get(k, 4) for k, e in tensors.values())}))
elif step == "disk":
    # Fargate counts the pulled images against the same ephemeral storage ("Fargate task ephemeral
    # storage for Amazon ECS", Amazon ECS Developer Guide), and a training node's scratch is shared with
    # whatever else it holds, so what is free is measured, not assumed.
    path, need, what = args[0], int(args[1]), args[2]
    free = shutil.disk_usage(path).free
    if free < need:
        fail(f"{what} needs {need / 2**30:.1f} GiB free on the work volume and {free / 2**30:.1f} GiB is "
             "(a Fargate task has 200 GiB at most, shared with the pulled images; on the training cluster it is "
             "the node's NVMe scratch): compile this model on the training cluster (compilation.runs_on "
             "training-cluster) or on an instance with the disk (serving README: Precompiled artifacts)")
elif step == "nxd-layout":
    # Whether the run used NxD's GQA QKV layer (keys ...qkv_proj.weight_q/_k/_v: --qkv_linear) or a fused
    # one (...qkv_proj.weight_qkv: --fuse_qkv with --n_layers), from the first shard's keys: converting
    # with the wrong layout silently scrambles the attention weights.
    import glob
    import torch
    source, config_path = args
    first = sorted(glob.glob(f"{source}/model/dp_rank_*_tp_rank_00_pp_rank_00.pt"))[0]
    state = torch.load(first, map_location="cpu", weights_only=False)
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    keys = list(state)
    if any(k.endswith("qkv_proj.weight_qkv") for k in keys):
        with open(config_path, encoding="utf-8") as handle:
            layers = json.load(handle)["num_hidden_layers"]
        print("--fuse_qkv\nTrue\n--qkv_linear\nTrue\n--n_layers\n%d" % layers)
    elif any(k.endswith("qkv_proj.weight_q") for k in keys):
        print("--qkv_linear\nTrue")
elif step == "nxd-convert":
    # NxD's own merge (the step --convert_to_full_state runs), in this process, written straight to
    # safetensors: no checkpoint.pt beside it, so the disk holds one full copy, not two.
    from neuronx_distributed.scripts.checkpoint_converter import CheckpointConverterBase
    from safetensors.torch import save_file
    target, flags = args[0], args[1:]
    converter = CheckpointConverterBase()
    parsed = converter.get_arg_parser().parse_args(flags)
    state = converter.merge_tp_checkpoints(parsed)
    # safetensors refuses tensors that share memory (tied embeddings): each gets its own copy.
    seen, tensors = set(), {}
    for key, value in state.items():
        value = value.contiguous()
        if value.data_ptr() in seen:
            value = value.clone()
        seen.add(value.data_ptr())
        tensors[key] = value
    save_file(tensors, target)
elif step == "readback":
    # What was compiled, from the exporter's own record; every difference from the request fails.
    export_dir = args[0]
    try:
        with open(os.path.join(export_dir, "neuron_config.json"), encoding="utf-8") as handle:
            neuron = json.load(handle)
    except (OSError, ValueError) as error:
        fail(f"the export has no readable neuron_config.json ({error}): is this optimum-neuron's LLM export?")
    compiled = {
        "batch_size": neuron.get("batch_size"),
        "sequence_length": neuron.get("sequence_length"),
        "tensor_parallel": neuron.get("tp_degree"),
        "dtype": SHORT.get(str(neuron.get("torch_dtype")), neuron.get("torch_dtype")),
        "target": neuron.get("target"),
        "optimum_neuron_version": neuron.get("optimum_neuron_version"),
        "neuronxcc_version": neuron.get("neuronxcc_version"),
    }
    asked = {
        "batch_size": int(env["BATCH_SIZE"]),
        "sequence_length": int(env["SEQUENCE_LENGTH"]),
        "tensor_parallel": int(env["TENSOR_PARALLEL"]),
        "dtype": env["DTYPE"],
        # --instance_type inf2/trn1/trn1n compiles for the trn1 target, trn2 for trn2
        # (optimum/neuron/utils/instance.py @v0.4.5, INSTANCE_VALUE_MAP).
        "target": env["EXPORT_TARGET"],
    }
    if env.get("ENGINE_VERSION"):
        asked["optimum_neuron_version"] = env["ENGINE_VERSION"]
    problems = [
        f"neuron_config.json says {key} {compiled[key]!r}, and the fleet needs {value!r}"
        + (": the image's optimum-neuron is not the fleet's, and the fleet would refuse it"
           if key == "optimum_neuron_version" else "")
        for key, value in asked.items() if compiled[key] != value
    ]
    problems += [f"neuron_config.json has no {key}" for key in ("optimum_neuron_version", "neuronxcc_version")
                 if not compiled[key]]
    if not any(os.path.exists(os.path.join(export_dir, name)) for name in TOKENIZER):
        problems.append("the export holds no tokenizer (optimum-neuron only logs a missing one): "
                        "give it with --config-from")
    if problems:
        fail(*problems)
    print(json.dumps(compiled))
elif step == "manifest":
    export_dir, lines, seconds, compiled, revision = args
    compiled = json.loads(compiled)
    image, image_id = env["IMAGE"], None
    endpoint = env.get("ECS_CONTAINER_METADATA_URI_V4")
    if endpoint:
        try:
            with urllib.request.urlopen(endpoint, timeout=10) as answer:
                container = json.load(answer)
            image, image_id = container["Image"], container.get("ImageID") or None
        except (OSError, ValueError, KeyError) as error:
            fail(f"the task metadata endpoint did not say which image this is ({error})")
    image = image.split("/", 1)[1] if "." in image.split("/", 1)[0] and "/" in image else image
    sdk = re.search(r"sdk(\d+(?:\.\d+){1,2})", image.rpartition(":")[2])
    name = "cdk-neuron-artifact.json"
    files = []
    for root, _, names in os.walk(export_dir):
        for file in sorted(names):
            path = os.path.join(root, file)
            relative = os.path.relpath(path, export_dir)
            if relative != name:
                files.append({"path": relative, "bytes": os.path.getsize(path), "sha256": sha256(path)})
    files.sort(key=lambda f: f["path"])
    with open(lines, encoding="utf-8") as handle:
        entries = sorted(handle.readlines(), key=lambda line: line.split("  ", 1)[1])
    source_hash = hashlib.sha256("".join(entries).encode()).hexdigest()
    step_number = env.get("SOURCE_STEP") or None
    hub = env["SOURCE_KIND"] == "hub"
    manifest = {
        "format": "cdk-neuron-artifact",
        "version": 2,
        "artifact_uri": env["ARTIFACT_URI"],
        "model": {"id": (env["SOURCE_URI"] if hub else env.get("MODEL_ID")) or None,
                  "revision": revision or None},
        "source": {"kind": env["SOURCE_KIND"], "uri": env["SOURCE_URI"],
                   "step": int(step_number) if step_number else None, "sha256": source_hash},
        "engine": {"name": env["ENGINE"], "version": compiled["optimum_neuron_version"], "image": image,
                   "image_id": image_id},
        "neuron": {"sdk": sdk[1] if sdk else None, "compiler": compiled["neuronxcc_version"],
                   "target": compiled["target"]},
        "shape": {k: compiled[k] for k in ("batch_size", "sequence_length", "tensor_parallel", "dtype")},
        "files": files,
        "compile_seconds": float(seconds),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(os.path.join(export_dir, name), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
else:
    fail(f"unknown step {step}")
PY
}

# -- 1. the source --------------------------------------------------------------------------------
revision="${MODEL_REVISION:-}"
: >"${lines}"
case "${SOURCE_KIND}" in
    s3) source_dir="${WORK_DIR}/source" ;;
    checkpoint) source_dir="${CHECKPOINT_MOUNT:?}/${SOURCE_URI#/}" ;;
    hub)
        source_dir="${WORK_DIR}/source"
        log "downloading ${SOURCE_URI}${MODEL_REVISION:+ @${MODEL_REVISION}} from the Hub"
        revision=$(helper hub "${SOURCE_URI}" "${source_dir}" "${MODEL_REVISION:-}" "${lines}") ||
            die "Hub download of ${SOURCE_URI} (gated? HF_TOKEN)"
        ;;
    *) die "SOURCE_KIND=${SOURCE_KIND}: use s3, checkpoint or hub" ;;
esac
[ -d "${source_dir}" ] || die "no source directory ${source_dir}"
nxd=false
if compgen -G "${source_dir}/model/dp_rank_*" >/dev/null; then nxd=true; fi
# NxD writes a checkpoint's `done` last, after every rank's files (save_checkpoint,
# neuronx_distributed/trainer/checkpoint.py @v2.26.0); without it the checkpoint is still being
# written, or its save failed.
if ${nxd} && [ ! -f "${source_dir}/done" ]; then
    die "${source_dir} has no done marker: NxD has not finished writing this checkpoint (or its save failed); compile a finished step"
fi

# config.json and the tokenizer, for a checkpoint without them (an NxD checkpoint has neither: its
# tag holds model/, optim/, scheduler.pt, user_content.pt and done). CONFIG_FROM names where they
# are; an s3:// one was fetched into ${WORK_DIR}/config by the fetch step.
config_dir=""
if [ ! -f "${source_dir}/config.json" ] || ! compgen -G "${source_dir}/tokenizer*" >/dev/null; then
    config_from="${CONFIG_FROM:-}"
    if [ -z "${config_from}" ] && [ -n "${MODEL_ID:-}" ]; then
        # HF_HUB_OFFLINE=1: the task has no route to the Hub (cdk-neuron compile sets it).
        [ "${HF_HUB_OFFLINE:-}" != 1 ] ||
            die "${source_dir} has no config.json or tokenizer and this compile cannot reach the Hub for ${MODEL_ID}'s: give them with --config-from s3://<prefix>/"
        config_from="hub:${MODEL_ID}"
    fi
    case "${config_from}" in
        s3://*) config_dir="${WORK_DIR}/config" ;;
        hub:*)
            config_dir="${WORK_DIR}/config"
            log "config.json and tokenizer from ${config_from} (the checkpoint lacks them)"
            helper hub-config "${config_from#hub:}" "${config_dir}" || die "Hub download of ${config_from}'s config"
            ;;
        "") ;;
        *) die "CONFIG_FROM=${config_from}: use hub:<org/model>[@revision] or s3://<prefix>/" ;;
    esac
    [ -z "${config_dir}" ] || [ -d "${config_dir}" ] || die "no ${config_dir}: the fetch step copied no config"
fi

# The source hash covers what the export reads, and nothing else (not optim/, not .cache/).
if [ "${SOURCE_KIND}" != hub ]; then
    helper hash "${source_dir}" "" "${lines}" || die "hashing ${source_dir}"
fi
if [ -n "${config_dir}" ]; then
    helper hash "${config_dir}" "config-from/" "${lines}" || die "hashing ${config_dir}"
fi

# -- 2. a training checkpoint, converted ----------------------------------------------------------
# A neuronx-distributed training checkpoint (model/dp_rank_*_tp_rank_*_pp_rank_*.pt, sharded per
# rank) becomes one full state dict with NxD's own converter, the one NxD Training's
# checkpoint_converter.py runs (neuronx_distributed.scripts.checkpoint_converter.CheckpointConverterBase,
# its argument parser and merge_tp_checkpoints; "Checkpoint Conversion", NxD Training,
# https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-training/tutorials/checkpoint_conversion.html,
# read 2026-12-02), written as safetensors.
weights_dir="${source_dir}"
if ${nxd}; then
    : "${CONVERT_TP:?a sharded training checkpoint needs CONVERT_TP, the TP of the training run}"
    converted="${WORK_DIR}/converted"
    mkdir -p "${converted}"
    config_json="${source_dir}/config.json"
    [ -f "${config_json}" ] || config_json="${config_dir:-${source_dir}}/config.json"
    [ -f "${config_json}" ] ||
        die "${source_dir} has no config.json, which NxD's converter needs: give it with --config-from hub:<org/model> or s3://<prefix>/"
    helper disk "${WORK_DIR}" "$(($(du -sb "${source_dir}/model" | cut -f1) * 11 / 10))" "the conversion" ||
        die "not enough storage to convert"
    # The converter's flags. Its boolean flags are argparse `type=bool`, so any value given, "False"
    # included, reads as True: a flag that must be False is left out. --hw_backend is required (NxD
    # 2.21+).
    flags=(--model_style hf --input_dir "${source_dir}/model" --output_dir "${converted}"
        --config "${config_json}" --hw_backend "${CONVERT_HW_BACKEND:-trn1}"
        --tp_size "${CONVERT_TP}" --pp_size "${CONVERT_PP:-1}"
        --kv_size_multiplier "${CONVERT_KV_MULTIPLIER:-1}" --convert_to_full_state)
    if compgen -G "${source_dir}/model/*.tensors" >/dev/null; then flags+=(--load_xser True); fi
    layout=$(helper nxd-layout "${source_dir}" "${config_json}") || die "reading the layout of ${source_dir}/model"
    if [ -n "${layout}" ]; then
        mapfile -t layout_flags <<<"${layout}"
        flags+=("${layout_flags[@]}")
    fi
    log "converting the tp=${CONVERT_TP} pp=${CONVERT_PP:-1} ${CONVERT_HW_BACKEND:-trn1} training checkpoint to a full state dict"
    helper nxd-convert "${converted}/model.safetensors" "${flags[@]}" || die "checkpoint conversion"
    weights_dir="${converted}"
fi

# -- 3. the export's input, checked before the compile --------------------------------------------
rm -rf "${model_dir}"
inputs=("${weights_dir}")
if ${nxd}; then inputs+=("${source_dir}"); fi
if [ -n "${config_dir}" ]; then inputs+=("${config_dir}"); fi
cast=$(helper inputs "${model_dir}" "${DTYPE}" "${inputs[@]}") || die "preparing the export's input"
[ -z "${cast}" ] || log "${cast}"
checked=$(helper check "${model_dir}" "${DTYPE}") || die "the checkpoint in ${source_dir} cannot be exported"
elements=$(printf '%s' "${checked}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["elements"])')
# The export writes the weights again, TP-sharded in the fleet's dtype, beside the compiler's work.
per_element=$([ "${DTYPE}" = fp32 ] && echo 4 || echo 2)
helper disk "${WORK_DIR}" "$((elements * per_element * 12 / 10 + 5 * 1024 * 1024 * 1024))" "the export" ||
    die "not enough storage to export"

# -- 4. the export --------------------------------------------------------------------------------
log "exporting for ${EXPORT_INSTANCE_TYPE} (target ${EXPORT_TARGET}): batch ${BATCH_SIZE} x ${SEQUENCE_LENGTH}, TP ${TENSOR_PARALLEL}, ${DTYPE}"
started=$(date +%s)
# --torch_dtype is given for exporters that read it; optimum-neuron's LLM export takes the dtype from
# config.json (set above) and the read-back below checks what it did. Where the task reaches the Hub it
# stays online: optimum-neuron looks up prebuilt NEFFs in its public Hub cache for every LLM compile
# ("Neuron Model Cache", optimum-neuron docs); without a route, cdk-neuron compile sets HF_HUB_OFFLINE=1
# for the container and the lookup is skipped at once.
optimum-cli export neuron --model "${model_dir}" --task text-generation --instance_type "${EXPORT_INSTANCE_TYPE}" \
    --batch_size "${BATCH_SIZE}" --sequence_length "${SEQUENCE_LENGTH}" \
    --tensor_parallel_size "${TENSOR_PARALLEL}" --torch_dtype "${torch_dtype}" "${export_dir}" ||
    die "optimum-cli export neuron"
finished=$(date +%s)

# -- 5. what was compiled, and the manifest -------------------------------------------------------
compiled=$(helper readback "${export_dir}") || die "the export is not what the fleet needs"
helper manifest "${export_dir}" "${lines}" "$((finished - started))" "${compiled}" "${revision}" ||
    die "writing cdk-neuron-artifact.json"
log "exported $(find "${export_dir}" -type f | wc -l) file(s) in $((finished - started)) s"
touch "${WORK_DIR}/status/export.ok"
