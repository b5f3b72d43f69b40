"""ModelCompilation and its programs: the task definition, the three programs run under bash exactly as
ECS starts them (the task definition's entryPoint + command), the export command line, and the
manifest written, uploaded last and read back by the fleet it was compiled for."""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Template
from image_rehearsal import Container

from cdk_neuron import timeouts
from cdk_neuron.compilation import CompileRequest, ModelCompilation, ModelSource
from cdk_neuron.compilation.construct import AWS_CLI_IMAGE, CONTAINERS
from cdk_neuron.compilation.job import FARGATE_MAX_WEIGHTS_GIB, compile_task_usd_per_hour
from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_neuron.serving import ModelSpec, ServingEngine
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest, source_hash
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_support import TEST_ACCOUNT, make_app, nag_violations

REGION = "us-east-1"
AZS = ["us-east-1a", "us-east-1b"]
ARTIFACT = "s3://models-bucket/compiled/llama-3.2-1b/run-7-step-1200/"
MODEL = ModelSpec(
    model_id="meta-llama/Llama-3.2-1B-Instruct", artifact_uri=ARTIFACT, parameters=1_240_000_000
)


@pytest.fixture(scope="module")
def synthesized() -> tuple[ModelCompilation, dict[str, Any]]:
    app = make_app(**{f"availability-zones:account={TEST_ACCOUNT}:region={REGION}": AZS})
    stack = cdk.Stack(app, "Compile", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, nat_gateways=1)
    compilation = ModelCompilation(
        stack,
        "Compilation",
        vpc=vpc,
        artifact_bucket=s3.Bucket.from_bucket_name(stack, "Models", "models-bucket"),
        compile_cache=CompileCache(stack, "Cache"),
        checkpoint_store=CheckpointStore(stack, "Checkpoints", vpc=vpc),
        hugging_face_token=secretsmanager.Secret.from_secret_name_v2(stack, "Token", "hf-token"),
    )
    return compilation, Template.from_stack(stack).to_json()


def _containers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [task] = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}


# --------------------------------------------------------------------------------------------
# The task definition
# --------------------------------------------------------------------------------------------


def test_the_task_is_the_largest_fargate_task_with_the_most_ephemeral_storage(synthesized: Any) -> None:
    _, template = synthesized
    [task] = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"
    ]
    assert (task["Cpu"], task["Memory"], task["EphemeralStorage"]) == ("16384", "122880", {"SizeInGiB": 200})
    assert task["RequiresCompatibilities"] == ["FARGATE"]
    assert task["RuntimePlatform"] == {"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"}


def test_three_containers_run_in_order_and_the_upload_ends_the_task(synthesized: Any) -> None:
    _, template = synthesized
    containers = _containers(template)
    assert list(containers) == ["fetch", "export", "upload"]
    assert [c["Essential"] for c in containers.values()] == [False, False, True]
    # COMPLETE: a failed step never leaves the next waiting; the next reads its status file instead.
    assert containers["export"]["DependsOn"] == [{"Condition": "COMPLETE", "ContainerName": "fetch"}]
    assert containers["upload"]["DependsOn"] == [{"Condition": "COMPLETE", "ContainerName": "export"}]
    assert "DependsOn" not in containers["fetch"]


def test_every_step_is_bounded_by_its_budget_from_the_timeouts_module(synthesized: Any) -> None:
    _, template = synthesized
    budgets = timeouts.compile_step_seconds(FARGATE_MAX_WEIGHTS_GIB)
    for name, container in _containers(template).items():
        assert container["EntryPoint"] == [
            "timeout", f"--kill-after={timeouts.COMPILE_KILL_AFTER}", str(budgets[name]), "bash", "-c",
        ]  # fmt: skip
    chain = timeouts.compile_chain(FARGATE_MAX_WEIGHTS_GIB)
    assert chain.violations() == []
    assert chain.seconds("compile_export") == budgets["export"] > timeouts.LLM_COMPILE_SECONDS


def test_every_container_replaces_the_image_entrypoint_with_its_program(synthesized: Any) -> None:
    from cdk_neuron.node_programs import program

    _, template = synthesized
    for name, container in _containers(template).items():
        assert container["EntryPoint"][-2:] == ["bash", "-c"]
        assert container["Command"] == [program(f"compile/{name}.sh").read_text()]
    assert _containers(template)["export"]["Image"] == ServingEngine.optimum_neuron().image.uri(REGION)
    # The AWS CLI image, through the ECR Public pull-through cache: private ECR in the task's region.
    cached = f"{TEST_ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35"
    assert _containers(template)["fetch"]["Image"] == cached == _containers(template)["upload"]["Image"]
    assert AWS_CLI_IMAGE == "public.ecr.aws/aws-cli/aws-cli:2.22.35"  # what the cache holds a copy of


def test_the_export_reads_the_checkpoints_read_only_the_cache_and_the_token(synthesized: Any) -> None:
    _, template = synthesized
    export = _containers(template)["export"]
    assert {m["ContainerPath"]: m["ReadOnly"] for m in export["MountPoints"]} == {
        "/compile": False,
        "/checkpoints": True,
    }
    assert [s["Name"] for s in export["Secrets"]] == ["HF_TOKEN"]
    names = {e["Name"] for e in export["Environment"]}
    assert names == {"NEURON_COMPILE_CACHE_URL", "WORK_DIR"}
    [task] = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"
    ]
    efs = next(v for v in task["Volumes"] if v["Name"] == "checkpoints")["EFSVolumeConfiguration"]
    assert efs["TransitEncryption"] == "ENABLED" and efs["AuthorizationConfig"]["IAM"] == "ENABLED"


def test_the_serving_image_is_pulled_from_its_one_repository(synthesized: Any) -> None:
    _, template = synthesized
    policies = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::IAM::ManagedPolicy"
    ]
    pulls = [
        s for p in policies for s in p["PolicyDocument"]["Statement"] if s.get("Sid") == "EcrPullServingImage"
    ]
    assert len(pulls) == 1
    assert "huggingface-vllm-inference-neuronx" in json.dumps(pulls[0]["Resource"])


def test_artifacts_are_listed_and_written_only_under_the_artifact_prefix(synthesized: Any) -> None:
    _, template = synthesized
    [policy] = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        and "write compiled artifacts" in r["Properties"]["Description"]
    ]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert set(statements) == {"ListArtifactPrefix", "WriteArtifacts"}
    listing = statements["ListArtifactPrefix"]
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["compiled/*"]}}
    write = statements["WriteArtifacts"]
    assert sorted(write["Action"]) == ["s3:AbortMultipartUpload", "s3:PutObject"]  # no GetObject, no delete
    assert write["Resource"] == "arn:aws:s3:::models-bucket/compiled/*"


@pytest.mark.parametrize("prefix", ["", "/models/", "a/*", "../x/", "with space/"])
def test_a_bad_artifact_prefix_is_refused(prefix: str) -> None:
    app = make_app()
    stack = cdk.Stack(app, "Prefix", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    with pytest.raises(NeuronConfigError, match=r"^Prefix/C: artifact_prefix=.*: give a key prefix"):
        ModelCompilation(
            stack,
            "C",
            vpc=ec2.Vpc(stack, "Vpc"),
            artifact_bucket=s3.Bucket(stack, "B"),
            artifact_prefix=prefix,
        )


def test_the_log_key_serves_only_this_accounts_log_groups(synthesized: Any) -> None:
    _, template = synthesized
    keys = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::KMS::Key"]
    [logs_statement] = [
        s
        for key in keys
        for s in key["KeyPolicy"]["Statement"]
        if s.get("Principal", {}).get("Service") == "logs.us-east-1.amazonaws.com"
    ]
    assert "kms:EncryptionContext:aws:logs:arn" in json.dumps(logs_statement["Condition"]["ArnLike"])


def test_the_compilation_passes_the_nag_packs(synthesized: Any) -> None:
    compilation, _ = synthesized
    assert nag_violations(compilation) == [], "\n".join(nag_violations(compilation))


def test_another_engine_is_refused_with_the_way_to_export_it() -> None:
    app = make_app()
    stack = cdk.Stack(app, "Refused", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc")
    with pytest.raises(
        NeuronConfigError, match=r"^Refused/C: engine='tgi': the compile task runs optimum-neuron's export"
    ):
        ModelCompilation(
            stack, "C", vpc=vpc, artifact_bucket=s3.Bucket(stack, "B"), engine=ServingEngine.tgi()
        )


# --------------------------------------------------------------------------------------------
# The request
# --------------------------------------------------------------------------------------------


def _request(source: ModelSource, model: ModelSpec = MODEL, engine: Any = None) -> CompileRequest:
    engine = engine or ServingEngine.optimum_neuron()
    return CompileRequest(source=source, artifact_uri=ARTIFACT, model=model, plan=model.plan(), engine=engine)


def test_the_request_carries_the_fleets_shape_and_image() -> None:
    env = _request(ModelSource.checkpoint("run-7/step-1200", step=1200)).export_environment(REGION)
    assert env["BATCH_SIZE"] == "1" and env["SEQUENCE_LENGTH"] == "4096" and env["DTYPE"] == "bf16"
    assert env["TENSOR_PARALLEL"] == str(MODEL.plan().tensor_parallel)
    assert (
        env["IMAGE"]
        == "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
    )
    # The fleet's optimum-neuron: the export must have been made by it (the read-back checks).
    assert (env["ENGINE_VERSION"], env["SOURCE_STEP"], env["CONFIG_FROM"]) == ("0.4.5", "1200", "")
    # The compiler's target, given outright (inf2 compiles for optimum-neuron's trn1 target).
    assert env["NEURON_PLATFORM_TARGET_OVERRIDE"] == env["EXPORT_TARGET"] == "trn1"


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: ModelSource.checkpoint("../x"), r"source='../x': give the checkpoint directory relative"),
        (lambda: ModelSource.checkpoint("run", step=-1), r"step=-1"),
        (lambda: ModelSource.checkpoint("run", tensor_parallel=0), r"tensor_parallel=0"),
        (lambda: ModelSource.s3("https://x"), r"source='https://x': use s3://"),
        (lambda: ModelSource.hub("not a model"), r"source='not a model'"),
        (lambda: ModelSource.hub("org/m", revision=" "), r"revision=' '"),
    ],
)
def test_a_bad_source_is_named(build: Any, needle: str) -> None:
    with pytest.raises(NeuronConfigError, match=needle):
        build()


def test_a_request_reports_every_problem_at_once() -> None:
    big = ModelSpec(
        model_id="meta-llama/Llama-3.1-70B-Instruct",
        artifact_uri=ARTIFACT,
        parameters=70_000_000_000,
        dtype="int8",
    )
    with pytest.raises(NeuronConfigErrors) as raised:
        _request(ModelSource.hub("meta-llama/Llama-3.1-70B-Instruct"), big, ServingEngine.tgi())
    assert [e.field for e in raised.value.errors] == ["engine", "dtype"] or [
        e.field for e in raised.value.errors
    ] == ["engine", "dtype", "model.parameters"]
    huge = ModelSpec(
        model_id="meta-llama/Llama-3.1-70B-Instruct", artifact_uri=ARTIFACT, parameters=70_000_000_000
    )
    with pytest.raises(
        NeuronConfigError, match=r"model.parameters=70000000000: 130 GiB of weights need about 3 x"
    ):
        _request(ModelSource.hub("meta-llama/Llama-3.1-70B-Instruct"), huge)
    assert FARGATE_MAX_WEIGHTS_GIB == 40


# --------------------------------------------------------------------------------------------
# The programs, as ECS runs them
# --------------------------------------------------------------------------------------------

# optimum-cli as its LLM export behaves (optimum-neuron v0.4.5): the dtype comes from the model's
# config.json, never from --torch_dtype (get_neuron_config); --instance_type inf2 compiles for target
# trn1; neuron_config.json records the shape and the installed versions; the tokenizer is saved only
# when the model directory has one. FAKE_OPTIMUM (JSON) overrides what it writes, as another image would.
_EXPORT = """
import json, os, pathlib, shutil
args = sys.argv[1:]
value = lambda flag: args[args.index(flag) + 1]
model, out = pathlib.Path(value("--model")), pathlib.Path(args[-1])
config = json.loads((model / "config.json").read_text())
neuron = {"batch_size": int(value("--batch_size")), "sequence_length": int(value("--sequence_length")),
          "tp_degree": int(value("--tensor_parallel_size")), "torch_dtype": config.get("torch_dtype"),
          "target": {"inf2": "trn1", "trn1": "trn1", "trn2": "trn2"}[value("--instance_type")],
          "optimum_neuron_version": "0.4.5", "neuronxcc_version": "2.21.33363.0", "_serialized_key": "NxDNeuronConfig"}
neuron.update(json.loads(os.environ.get("FAKE_OPTIMUM", "{}")))
out.mkdir(parents=True, exist_ok=True)
(out / "neuron_config.json").write_text(json.dumps(neuron))
(out / "config.json").write_text(json.dumps(config))
(out / "model.pt").write_text("graphs")
if (model / "tokenizer.json").exists():
    shutil.copy(model / "tokenizer.json", out / "tokenizer.json")
for rank in range(neuron["tp_degree"]):
    shard = out / "checkpoint" / "weights" / f"tp{rank}_sharded_checkpoint.safetensors"
    shard.parent.mkdir(parents=True, exist_ok=True)
    shard.write_bytes(b"w" * (rank + 1))
"""
# NxD's converter as the serving image has it: its argument parser exactly as neuronx-distributed
# defines it (aws-neuron/neuronx-distributed tag v2.26.0 @fecfe75b, the NxD of the image's SDK 2.26;
# unchanged at @fbac349b, 2026-04-09: src/neuronx_distributed/scripts/checkpoint_converter.py,
# get_arg_parser: --hw_backend required, boolean flags parsed with type=bool), so a command line the
# real converter would refuse or misread fails here too. merge_tp_checkpoints records what it parsed and
# returns a Llama-shaped state dict of the config's layer count.
_NXD = """
import argparse, json, os, sys
from torch import Tensor
class CheckpointConverterBase:
    def get_arg_parser(self):
        parser = argparse.ArgumentParser()
        parser.add_argument("--input_dir", type=str, default=None)
        parser.add_argument("--hf_model_name", type=str, default=None)
        parser.add_argument("--output_dir", type=str, required=True)
        parser.add_argument("--hw_backend", type=str, required=True)
        parser.add_argument("--config", type=str)
        parser.add_argument("--model_key", type=str, default="model")
        parser.add_argument("--tp_size", type=int, default=1)
        parser.add_argument("--pp_size", type=int, default=1)
        parser.add_argument("--ep_size", type=int, default=1)
        parser.add_argument("--virtual_pp_size", type=int, default=1)
        parser.add_argument("--n_layers", type=int, default=0)
        parser.add_argument("--coalesce_qkv", type=bool, default=False)
        parser.add_argument("--kv_size_multiplier", type=int, default=1)
        parser.add_argument("--qkv_linear", type=bool, default=False)
        parser.add_argument("--fuse_qkv", type=bool, default=False)
        parser.add_argument("--i_tp_round_factor", type=int, default=0)
        parser.add_argument("--pad_attn_heads", type=bool, default=False)
        parser.add_argument("--load_xser", type=bool, default=False)
        parser.add_argument("--save_xser", type=bool, default=False)
        parser.add_argument("--convert_from_xser", action="store_true")
        parser.add_argument("--convert_to_xser", action="store_true")
        parser.add_argument("--convert_from_full_state", action="store_true")
        parser.add_argument("--convert_to_full_state", action="store_true")
        parser.add_argument("--model_style", type=str, choices=["hf", "megatron"], default="hf")
        parser.add_argument("--nxdt_yaml_config", type=str)
        return parser
    def merge_tp_checkpoints(self, args):
        with open(os.environ["REHEARSAL_LOG"], "a") as log:
            log.write(json.dumps({"program": "nxd-converter", "argv": sys.argv[1:], "env": vars(args)}) + "\\n")
        layers = json.load(open(args.config))["num_hidden_layers"]
        names = ["model.embed_tokens.weight", "lm_head.weight"]
        names += [f"model.layers.{i}.self_attn.q_proj.weight" for i in range(layers)]
        return {name: Tensor() for name in names}
"""
# torch as the programs use it: torch.load of a shard a test wrote as a JSON list of its keys, and
# tensors that only need to be made contiguous and told apart.
_TORCH = """
import json
class Tensor:
    def contiguous(self):
        return self
    def clone(self):
        return Tensor()
    def data_ptr(self):
        return id(self)
def load(path, map_location=None, weights_only=None):
    try:
        value = json.loads(open(path).read())
    except ValueError:
        return {}
    return {key: None for key in value} if isinstance(value, list) else value
"""
# safetensors.torch.save_file writing a real safetensors header (every tensor bf16 [4], no data).
_SAFETENSORS = """
import json, struct
def save_file(tensors, path):
    header = json.dumps({n: {"dtype": "BF16", "shape": [4], "data_offsets": [0, 0]} for n in tensors}).encode()
    open(path, "wb").write(struct.pack("<Q", len(header)) + header)
"""
# huggingface_hub as the programs use it: a repository at one commit whose weight is LFS (the Hub
# gives its sha256) and whose download leaves the .cache metadata huggingface_hub writes (with the
# time in it, _local_folder.py write_download_metadata).
_HUB = """
import json, os, pathlib, struct, time, types
COMMIT = "0123456789abcdef0123456789abcdef01234567"
def _files():
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 0]},
                         "model.layers.0.mlp.weight": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 0]}}).encode()
    return {"config.json": json.dumps({"num_hidden_layers": 1, "torch_dtype": "bfloat16"}).encode(),
            "tokenizer.json": b"{}", "model.safetensors": struct.pack("<Q", len(header)) + header}
class HfApi:
    def model_info(self, repo, revision=None, files_metadata=False):
        lfs = types.SimpleNamespace(sha256="ab" * 32)
        siblings = [types.SimpleNamespace(rfilename=n, lfs=lfs if n.endswith(".safetensors") else None) for n in _files()]
        return types.SimpleNamespace(sha=COMMIT, siblings=siblings)
def snapshot_download(repo, local_dir=None, revision=None, allow_patterns=None, ignore_patterns=None):
    with open(os.environ["REHEARSAL_LOG"], "a") as log:
        log.write(json.dumps({"program": "snapshot_download", "argv": [repo, revision, local_dir],
                              "env": {"allow": allow_patterns, "ignore": ignore_patterns}}) + "\\n")
    root = pathlib.Path(local_dir)
    (root / ".cache" / "huggingface" / "download").mkdir(parents=True, exist_ok=True)
    (root / ".cache" / "huggingface" / "download" / "config.json.metadata").write_text(f"{COMMIT}\\netag\\n{time.time()}\\n")
    for name, data in _files().items():
        if name == "model.safetensors" and "*.safetensors" not in allow_patterns:
            continue
        (root / name).write_bytes(data)
    return str(root)
"""


def _safetensors(path: Path, names: list[str], shape: tuple[int, ...] = (4,)) -> None:
    """A safetensors file of bf16 tensors: its header (length, JSON) and no data."""
    header = json.dumps(
        {n: {"dtype": "BF16", "shape": list(shape), "data_offsets": [0, 0]} for n in names}
    ).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header)


def _sandbox(tmp_path: Path) -> tuple[Container, Path]:
    container = Container(tmp_path)
    tools = ("find", "sort", "date", "wc", "mkdir", "ls", "cp", "grep", "timeout", "touch", "du", "cut")
    for tool in tools:
        real = subprocess.run(["which", tool], capture_output=True, text=True, check=False).stdout.strip()
        if real and not (container.bin / tool).exists():
            (container.bin / tool).symlink_to(real)
    container.record("optimum-cli", then=_EXPORT)
    container.record("aws", then=_AWS_EMPTY_PREFIX)
    fakes = tmp_path / "site"
    (fakes / "neuronx_distributed" / "scripts").mkdir(parents=True)
    (fakes / "neuronx_distributed" / "__init__.py").write_text("")
    (fakes / "neuronx_distributed" / "scripts" / "__init__.py").write_text("")
    (fakes / "neuronx_distributed" / "scripts" / "checkpoint_converter.py").write_text(_NXD)
    (fakes / "torch.py").write_text(_TORCH)
    (fakes / "safetensors").mkdir()
    (fakes / "safetensors" / "__init__.py").write_text("")
    (fakes / "safetensors" / "torch.py").write_text(_SAFETENSORS)
    (fakes / "huggingface_hub.py").write_text(_HUB)
    return container, fakes


# The AWS CLI against a new, empty prefix: list-objects-v2 --query KeyCount --output text prints 0.
_AWS_EMPTY_PREFIX = 'print("0") if sys.argv[1:3] == ["s3api", "list-objects-v2"] else None'


def _run(
    container: Container, template: dict[str, Any], name: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``entryPoint + command`` of the task definition's container, under bash, as ECS starts it."""
    definition = _containers(template)[name]
    argv = [*definition["EntryPoint"], *definition["Command"]]
    return subprocess.run(
        argv, env={**container._environment(None), **env}, capture_output=True, text=True, timeout=60, check=False,
        cwd=str(container.root),
    )  # fmt: skip


def _settings(request: CompileRequest, tmp_path: Path, name: str) -> dict[str, str]:
    work = tmp_path / "work"
    values = {
        "fetch": request.fetch_environment(),
        "export": request.export_environment(REGION),
        "upload": request.upload_environment(),
    }[name]
    static = {"ARTIFACT_PREFIX": "compiled/"} if name == "upload" else {}
    return {**values, **static, "WORK_DIR": str(work), "CHECKPOINT_MOUNT": str(tmp_path / "checkpoints")}


def _fetched(tmp_path: Path) -> None:
    """The state the fetch step leaves when it succeeded (a checkpoint or Hub source: nothing fetched)."""
    (tmp_path / "work" / "status").mkdir(parents=True, exist_ok=True)
    (tmp_path / "work" / "status" / "fetch.ok").touch()


_LAYERS = 2
_WEIGHTS = ["model.embed_tokens.weight", "lm_head.weight"] + [
    f"model.layers.{i}.self_attn.q_proj.weight" for i in range(_LAYERS)
]


def _hf_checkpoint(directory: Path, *, dtype: str = "bfloat16", weights: list[str] = _WEIGHTS) -> None:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"num_hidden_layers": _LAYERS, "torch_dtype": dtype}))
    (directory / "tokenizer.json").write_text("{}")
    _safetensors(directory / "model.safetensors", weights)


def _export(
    template: dict[str, Any], tmp_path: Path, source: ModelSource, **env: str
) -> tuple[Container, subprocess.CompletedProcess[str]]:
    container, fakes = _sandbox(tmp_path)
    _fetched(tmp_path)
    settings = {**_settings(_request(source), tmp_path, "export"), "PYTHONPATH": str(fakes), **env}
    return container, _run(container, template, "export", settings)


def _manifest(tmp_path: Path) -> ArtifactManifest:
    return ArtifactManifest.from_file(tmp_path / "work" / "export" / MANIFEST_NAME)


def test_a_checkpoint_is_exported_described_and_uploaded_manifest_last(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    _hf_checkpoint(tmp_path / "checkpoints" / "run-7" / "step-1200")
    request = _request(ModelSource.checkpoint("run-7/step-1200", step=1200))
    for name in ("fetch", "export", "upload"):
        done = _run(
            container, template, name, {**_settings(request, tmp_path, name), "PYTHONPATH": str(fakes)}
        )
        assert done.returncode == 0, (name, done.stderr)

    [export] = container.calls("optimum-cli")
    plan = MODEL.plan()
    assert export.argv == [
        "export", "neuron", "--model", str(tmp_path / "work/model"), "--task", "text-generation",
        "--instance_type", "inf2", "--batch_size", "1", "--sequence_length", "4096",
        "--tensor_parallel_size", str(plan.tensor_parallel), "--torch_dtype", "bfloat16", str(tmp_path / "work/export"),
    ]  # fmt: skip
    # The export's input: the checkpoint's files, linked, and its config (a copy the dtype is set in).
    model = tmp_path / "work" / "model"
    assert (
        model / "model.safetensors"
    ).resolve() == tmp_path / "checkpoints/run-7/step-1200/model.safetensors"
    assert not (model / "config.json").is_symlink()
    manifest = _manifest(tmp_path)
    # What the exporter recorded, and the image that ran (off ECS: the fleet's image, as requested).
    assert manifest.artifact_uri == ARTIFACT
    assert (manifest.engine_version, manifest.compiler_version, manifest.target) == (
        "0.4.5",
        "2.21.33363.0",
        "trn1",
    )
    assert (manifest.source.kind, manifest.source.step, manifest.neuron_sdk) == ("checkpoint", 1200, "2.26.1")
    assert manifest.model_id == MODEL.model_id
    assert "checkpoint/weights/tp0_sharded_checkpoint.safetensors" in [f.path for f in manifest.files]
    # The artifact serves on the fleet it was compiled for.
    engine = ServingEngine.optimum_neuron()
    assert manifest.mismatches(MODEL, plan, engine.name, engine.image) == []
    # Upload: only to an empty prefix; every file (cp, not sync); the manifest last, alone, write-once.
    key = "compiled/llama-3.2-1b/run-7-step-1200/"
    assert [c.argv for c in container.calls("aws")] == [
        ["s3api", "list-objects-v2", "--bucket", "models-bucket", "--prefix", key, "--max-keys", "1",
         "--query", "KeyCount", "--output", "text"],
        ["s3", "cp", f"{tmp_path}/work/export/", ARTIFACT, "--recursive", "--exclude", MANIFEST_NAME,
         "--only-show-errors"],
        ["s3api", "put-object", "--bucket", "models-bucket", "--key", f"{key}{MANIFEST_NAME}",
         "--body", f"{tmp_path}/work/export/{MANIFEST_NAME}", "--if-none-match", "*"],
    ]  # fmt: skip


def test_a_checkpoint_saved_in_another_dtype_is_compiled_in_the_fleets(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    _hf_checkpoint(tmp_path / "checkpoints" / "run", dtype="float32")
    _, done = _export(template, tmp_path, ModelSource.checkpoint("run"))
    assert done.returncode == 0, done.stderr
    assert "the checkpoint's config says float32; compiling in bfloat16 as the fleet serves it" in done.stderr
    assert json.loads((tmp_path / "work" / "model" / "config.json").read_text())["torch_dtype"] == "bfloat16"
    assert _manifest(tmp_path).shape.dtype == "bf16"
    # The checkpoint itself is untouched (the CheckpointStore is mounted read-only).
    assert json.loads((tmp_path / "checkpoints/run/config.json").read_text())["torch_dtype"] == "float32"


@pytest.mark.parametrize(
    ("wrote", "needle"),
    [
        ({"torch_dtype": "float32"}, "neuron_config.json says dtype 'fp32', and the fleet needs 'bf16'"),
        ({"batch_size": 4}, "neuron_config.json says batch_size 4, and the fleet needs 1"),
        ({"tp_degree": 8}, "neuron_config.json says tensor_parallel 8, and the fleet needs 1"),
        ({"target": "trn2"}, "neuron_config.json says target 'trn2', and the fleet needs 'trn1'"),
        (
            {"optimum_neuron_version": "0.4.4"},
            "says optimum_neuron_version '0.4.4', and the fleet needs '0.4.5': the image's optimum-neuron is not "
            "the fleet's",
        ),
        ({"neuronxcc_version": None}, "neuron_config.json has no neuronxcc_version"),
    ],
)
def test_an_export_that_is_not_what_the_fleet_needs_fails_the_compile(
    synthesized: Any, tmp_path: Path, wrote: dict[str, Any], needle: str
) -> None:
    _, template = synthesized
    _hf_checkpoint(tmp_path / "checkpoints" / "run")
    _, done = _export(template, tmp_path, ModelSource.checkpoint("run"), FAKE_OPTIMUM=json.dumps(wrote))
    assert done.returncode == 1 and needle in done.stderr
    assert "FAILED: the export is not what the fleet needs" in done.stderr
    assert not (tmp_path / "work" / "export" / MANIFEST_NAME).exists()
    assert not (tmp_path / "work" / "status" / "export.ok").exists()


def test_the_manifest_names_the_image_the_task_metadata_endpoint_reports(
    synthesized: Any, tmp_path: Path
) -> None:
    import http.server
    import threading

    image = "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"

    class Metadata(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"Name": "export", "Image": image, "ImageID": "sha256:" + "c" * 64}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _, template = synthesized
        _hf_checkpoint(tmp_path / "checkpoints" / "run")
        _, done = _export(
            template,
            tmp_path,
            ModelSource.checkpoint("run"),
            ECS_CONTAINER_METADATA_URI_V4=f"http://127.0.0.1:{server.server_port}/v4/abc",
            IMAGE="something-else:asked",
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    manifest = _manifest(tmp_path)
    assert manifest.image == image.split("/", 1)[1] and manifest.image_id == "sha256:" + "c" * 64
    assert manifest.neuron_sdk == "2.26.1"


def test_a_hub_source_is_pinned_to_its_commit_and_hashed_reproducibly(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    hashes = []
    for attempt in ("a", "b"):
        container, done = _export(template, tmp_path / attempt, ModelSource.hub("org/other-model"))
        assert done.returncode == 0, done.stderr
        manifest = _manifest(tmp_path / attempt)
        hashes.append(manifest.source.sha256)
    # The download's .cache metadata (which holds the time) is not hashed: the same commit, the same hash.
    assert hashes[0] == hashes[1]
    [download] = container.calls("snapshot_download")
    assert download.argv[:2] == ["org/other-model", "0123456789abcdef0123456789abcdef01234567"]
    assert download.env["ignore"] == ["consolidated*", "original/*"]
    # The source's id and resolved commit, not the fleet's model id.
    assert (manifest.model_id, manifest.model_revision) == (
        "org/other-model",
        "0123456789abcdef0123456789abcdef01234567",
    )
    config = hashlib.sha256(
        json.dumps({"num_hidden_layers": 1, "torch_dtype": "bfloat16"}).encode()
    ).hexdigest()
    assert manifest.source.sha256 == source_hash(
        {
            "config.json": config,
            "model.safetensors": "ab" * 32,
            "tokenizer.json": hashlib.sha256(b"{}").hexdigest(),
        }
    )


def test_a_checkpoints_hash_covers_its_weights_not_its_optimizer_state(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized

    def compiled(where: Path, optimizer: str, weights: list[str] = _WEIGHTS) -> str | None:
        _hf_checkpoint(where / "checkpoints" / "run", weights=weights)
        (where / "checkpoints" / "run" / "optim").mkdir()
        (where / "checkpoints" / "run" / "optim" / "state.pt").write_text(optimizer)
        (where / "checkpoints" / "run" / "scheduler.pt").write_text(optimizer)
        _, done = _export(template, where, ModelSource.checkpoint("run"))
        assert done.returncode == 0, done.stderr
        return _manifest(where).source.sha256

    first = compiled(tmp_path / "a", "adam state 1")
    assert compiled(tmp_path / "b", "adam state 2") == first
    assert compiled(tmp_path / "c", "adam state 1", weights=[*_WEIGHTS, "model.norm.weight"]) != first


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (
            lambda d: (d / "tokenizer.json").unlink(),
            "no tokenizer (tokenizer.json, tokenizer.model, vocab.json)",
        ),
        (
            lambda d: _safetensors(d / "model.safetensors", _WEIGHTS[:-1]),
            "config.json has 2 layers and the weights hold layers 0-0 (1; missing e.g. [1]): a mis-converted or "
            "truncated checkpoint",
        ),
        (
            lambda d: (d / "model.safetensors.index.json").write_text(
                json.dumps({"weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}})
            ),
            "model-00002-of-00002.safetensors is named by model.safetensors.index.json and missing",
        ),
        (
            lambda d: (d / "model.safetensors").write_bytes(b"x"),
            "model.safetensors is not a safetensors file",
        ),
        (
            lambda d: _safetensors(d / "model.safetensors", _WEIGHTS, shape=(10**9, 10**5)),
            "the export needs",
        ),
    ],
)
def test_a_checkpoint_the_export_would_choke_on_is_refused_before_the_compile(
    synthesized: Any, tmp_path: Path, damage: Any, needle: str
) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _hf_checkpoint(checkpoint)
    damage(checkpoint)
    # No model id: nowhere to take a missing tokenizer from.
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run"), MODEL_ID="")
    assert done.returncode == 1 and needle in done.stderr
    assert container.calls("optimum-cli") == []


def test_a_checkpoint_without_a_tokenizer_takes_the_fleets_models(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _hf_checkpoint(checkpoint)
    (checkpoint / "tokenizer.json").unlink()
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run"))
    assert done.returncode == 0, done.stderr
    [download] = container.calls("snapshot_download")
    assert download.argv[0] == MODEL.model_id
    assert (tmp_path / "work" / "model" / "tokenizer.json").exists()
    assert [f.path for f in _manifest(tmp_path).files if f.path.startswith("tokenizer")] == ["tokenizer.json"]


def test_an_export_without_a_tokenizer_is_not_uploaded(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _hf_checkpoint(checkpoint)
    (checkpoint / "tokenizer.json").rename(
        checkpoint / "tokenizer.model"
    )  # the fake exporter saves tokenizer.json only
    _, done = _export(template, tmp_path, ModelSource.checkpoint("run"))
    assert done.returncode == 1
    assert "the export holds no tokenizer (optimum-neuron only logs a missing one)" in done.stderr


_PLAIN = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]
_GQA = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight_q", "lm_head.weight"]
_FUSED = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight_qkv", "lm_head.weight"]


def _nxd_checkpoint(
    checkpoint: Path, keys: list[str] = _PLAIN, *, xser: bool = False, done: bool = True
) -> None:
    """An NxD Training checkpoint tag as save_checkpoint leaves it: model/ shards, optim/, no config."""
    (checkpoint / "model").mkdir(parents=True)
    (checkpoint / "optim").mkdir()
    for rank in range(2):
        (checkpoint / "model" / f"dp_rank_00_tp_rank_{rank:02d}_pp_rank_00.pt").write_text(json.dumps(keys))
        (checkpoint / "optim" / f"dp_rank_00_tp_rank_{rank:02d}_pp_rank_00.pt").write_text("adam")
        if xser:
            (checkpoint / "model" / f"dp_rank_00_tp_rank_{rank:02d}_pp_rank_00.pt.tensors").mkdir()
    (checkpoint / "scheduler.pt").write_text("s")
    (checkpoint / "user_content.pt").write_text("u")
    if done:
        (checkpoint / "done").write_text("1")


@pytest.mark.parametrize(
    ("keys", "xser", "hw_backend", "parsed"),
    [
        # A plain model (no NxD attention layer): every boolean flag stays False, left out.
        (_PLAIN, False, "trn1", {"qkv_linear": False, "fuse_qkv": False, "load_xser": False, "n_layers": 0}),
        # NxD's GQA QKV layer: --qkv_linear; saved with xser: --load_xser.
        (_GQA, True, "trn2", {"qkv_linear": True, "fuse_qkv": False, "load_xser": True, "n_layers": 0}),
        # A fused QKV weight: --fuse_qkv with the layer count from config.json.
        (
            _FUSED,
            False,
            "trn1",
            {"qkv_linear": True, "fuse_qkv": True, "load_xser": False, "n_layers": _LAYERS},
        ),
    ],
)
def test_a_sharded_training_checkpoint_is_converted_with_the_nxd_converter(
    synthesized: Any, tmp_path: Path, keys: list[str], xser: bool, hw_backend: str, parsed: dict[str, Any]
) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run-7" / "step-1200"
    _nxd_checkpoint(checkpoint, keys, xser=xser)
    (checkpoint / "config.json").write_text(
        json.dumps({"num_hidden_layers": _LAYERS, "torch_dtype": "bfloat16"})
    )
    (checkpoint / "tokenizer.json").write_text("{}")
    source = ModelSource.checkpoint("run-7/step-1200", tensor_parallel=2, step=1200, hw_backend=hw_backend)
    container, done = _export(template, tmp_path, source)
    assert done.returncode == 0, done.stderr
    [converter] = container.calls("nxd-converter")
    # What NxD's own parser made of the command line.
    assert converter.env["tp_size"] == 2 and converter.env["hw_backend"] == hw_backend
    assert converter.env["convert_to_full_state"] and converter.env["model_style"] == "hf"
    assert converter.env["input_dir"] == str(checkpoint / "model")
    assert converter.env["config"] == str(checkpoint / "config.json")
    assert {key: converter.env[key] for key in parsed} == parsed
    # One full copy, written as safetensors in the conversion itself: no checkpoint.pt beside it.
    assert sorted(p.name for p in (tmp_path / "work" / "converted").iterdir()) == ["model.safetensors"]
    assert sorted(p.name for p in (tmp_path / "work" / "model").iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    [export] = container.calls("optimum-cli")
    assert export.argv[export.argv.index("--model") + 1] == str(tmp_path / "work" / "model")


def test_a_training_checkpoint_takes_its_config_and_tokenizer_from_the_fleets_model(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    _nxd_checkpoint(tmp_path / "checkpoints" / "run")
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run", tensor_parallel=2))
    assert done.returncode == 0, done.stderr
    [download] = container.calls("snapshot_download")
    assert download.argv[0] == MODEL.model_id and download.argv[2] == str(tmp_path / "work" / "config")
    [converter] = container.calls("nxd-converter")
    assert converter.env["config"] == str(tmp_path / "work" / "config" / "config.json")
    assert (tmp_path / "work" / "model" / "tokenizer.json").exists()


def test_a_training_checkpoints_own_config_wins_over_the_fallback_for_its_tokenizer(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _nxd_checkpoint(checkpoint)
    (checkpoint / "config.json").write_text(
        json.dumps({"num_hidden_layers": _LAYERS, "torch_dtype": "bfloat16"})
    )
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run", tensor_parallel=2))
    assert done.returncode == 0, done.stderr
    # The Hub's config (1 layer) would not match the converted weights (2): the checkpoint's own is used.
    model = tmp_path / "work" / "model"
    assert json.loads((model / "config.json").read_text())["num_hidden_layers"] == _LAYERS
    assert (model / "tokenizer.json").resolve() == tmp_path / "work" / "config" / "tokenizer.json"
    [converter] = container.calls("nxd-converter")
    assert converter.env["config"] == str(checkpoint / "config.json")


def test_a_training_checkpoint_takes_its_config_from_s3_when_told(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    # The fetch step copies config.json and the tokenizer from the prefix.
    container.record(
        "aws",
        then="import pathlib, json; d = pathlib.Path(sys.argv[4]); d.mkdir(parents=True); "
        "(d / 'config.json').write_text(json.dumps({'num_hidden_layers': 2})); (d / 'tokenizer.json').write_text('{}')",
    )
    _nxd_checkpoint(tmp_path / "checkpoints" / "run")
    source = ModelSource.checkpoint("run", tensor_parallel=2, config_from="s3://models-bucket/base/llama/")
    request = _request(source)
    for name in ("fetch", "export"):
        done = _run(
            container, template, name, {**_settings(request, tmp_path, name), "PYTHONPATH": str(fakes)}
        )
        assert done.returncode == 0, (name, done.stderr)
    [fetch] = container.calls("aws")
    assert fetch.argv[:4] == ["s3", "cp", "s3://models-bucket/base/llama/", f"{tmp_path}/work/config/"]
    assert container.calls("snapshot_download") == []
    [converter] = container.calls("nxd-converter")
    assert converter.env["config"] == str(tmp_path / "work" / "config" / "config.json")


def test_an_unfinished_training_checkpoint_is_refused_before_converting(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    _nxd_checkpoint(tmp_path / "checkpoints" / "run", done=False)
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run", tensor_parallel=2))
    assert done.returncode == 1
    assert "has no done marker: NxD has not finished writing this checkpoint" in done.stderr
    assert container.calls("nxd-converter") == [] and container.calls("optimum-cli") == []


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (None, None),
        ("hub:meta-llama/Llama-3.1-8B", "hub:meta-llama/Llama-3.1-8B"),
        ("hub:meta-llama/Llama-3.1-8B@main", "hub:meta-llama/Llama-3.1-8B@main"),
        ("s3://models-bucket/base/llama", "s3://models-bucket/base/llama/"),
    ],
)
def test_config_from_names_the_hub_or_s3(value: str | None, stored: str | None) -> None:
    assert ModelSource.checkpoint("run", config_from=value).config_from == stored


@pytest.mark.parametrize("value", ["llama", "hub:not a model", "s3://b", "https://x/y/"])
def test_a_bad_config_from_is_refused(value: str) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^config_from=.*: use hub:<org/model>\[@revision\] or s3://"
    ):
        ModelSource.checkpoint("run", config_from=value)


def test_a_checkpoint_source_names_the_trainium_generation() -> None:
    env = _request(ModelSource.checkpoint("run", tensor_parallel=8, hw_backend="trn2")).export_environment(
        REGION
    )
    assert env["CONVERT_HW_BACKEND"] == "trn2"
    assert ModelSource.checkpoint("run").hw_backend == "trn1"
    with pytest.raises(NeuronConfigError, match=r"^hw_backend='trn3': use one of trn1, trn2"):
        ModelSource.checkpoint("run", hw_backend="trn3")


def test_a_sharded_checkpoint_without_its_tp_stops_before_exporting(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _nxd_checkpoint(checkpoint)
    (checkpoint / "config.json").write_text("{}")
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run"))
    assert done.returncode != 0 and "needs CONVERT_TP" in done.stderr
    assert container.calls("optimum-cli") == []


def test_an_s3_source_is_fetched_onto_the_shared_volume(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    container, _ = _sandbox(tmp_path)
    container.record("aws", then="import pathlib; pathlib.Path(sys.argv[-2], 'config.json').write_text('{}')")
    request = _request(ModelSource.s3("s3://models-bucket/checkpoints/llama/"))
    done = _run(container, template, "fetch", _settings(request, tmp_path, "fetch"))
    assert done.returncode == 0, done.stderr
    [fetch] = container.calls("aws")
    assert fetch.argv == [
        "s3",
        "sync",
        "s3://models-bucket/checkpoints/llama/",
        f"{tmp_path}/work/source/",
        "--only-show-errors",
    ]


def _exported(tmp_path: Path) -> None:
    (tmp_path / "work" / "export").mkdir(parents=True)
    (tmp_path / "work" / "status").mkdir(parents=True)
    (tmp_path / "work" / "export" / MANIFEST_NAME).write_text("{}")
    (tmp_path / "work" / "status" / "export.ok").touch()


@pytest.mark.parametrize(
    ("aws", "needle", "calls"),
    [
        # Something is already there (a manifest, or the files of a failed attempt): refused.
        ('print("1")', "already holds objects: artifacts are written once", [["s3api", "list-objects-v2"]]),
        # The listing itself fails (denied, throttled, no route): never read as "empty".
        ("sys.exit(254)", "cannot tell whether it is empty", [["s3api", "list-objects-v2"]]),
        # Another compile wrote the manifest first: S3 answers 412 to If-None-Match.
        (
            'print("0") if sys.argv[2] == "list-objects-v2" else None; '
            'sys.exit(254 if sys.argv[2] == "put-object" else 0) if sys.argv[2] != "put-object" else '
            '(print("An error occurred (PreconditionFailed) when calling the PutObject operation: At least one '
            'of the pre-conditions you specified did not hold", file=sys.stderr), sys.exit(254))',
            "was written by another compile while this one uploaded",
            [["s3api", "list-objects-v2"], ["s3", "cp"], ["s3api", "put-object"]],
        ),
    ],
)
def test_an_upload_never_overwrites_an_artifact(
    synthesized: Any, tmp_path: Path, aws: str, needle: str, calls: list[list[str]]
) -> None:
    _, template = synthesized
    container, _ = _sandbox(tmp_path)
    container.record("aws", then=aws)
    _exported(tmp_path)
    request = _request(ModelSource.hub("meta-llama/Llama-3.2-1B-Instruct"))
    done = _run(container, template, "upload", _settings(request, tmp_path, "upload"))
    assert done.returncode == 1 and needle in done.stderr
    assert [c.argv[:2] for c in container.calls("aws")] == calls


def test_an_upload_outside_the_granted_prefix_is_refused_before_any_call(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    container, _ = _sandbox(tmp_path)
    _exported(tmp_path)
    request = _request(ModelSource.hub("meta-llama/Llama-3.2-1B-Instruct"))
    settings = {**_settings(request, tmp_path, "upload"), "ARTIFACT_URI": "s3://models-bucket/elsewhere/x/"}
    done = _run(container, template, "upload", settings)
    assert done.returncode == 1
    assert (
        "outside compiled/, the only prefix this task may write: use s3://models-bucket/compiled/<name>/"
        in done.stderr
    )
    assert container.calls("aws") == []


@pytest.mark.parametrize(("failed", "then"), [("fetch", "export"), ("export", "upload")])
def test_a_failed_step_stops_the_next_one_at_once(
    synthesized: Any, tmp_path: Path, failed: str, then: str
) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    # An S3 source that cannot be fetched, or an export that fails.
    container.record("aws", then="sys.exit(1)")
    container.record("optimum-cli", then="sys.exit(1)")
    _hf_checkpoint(tmp_path / "work" / "source")
    request = _request(ModelSource.s3("s3://models-bucket/checkpoints/llama/"))
    order = ["fetch", "export", "upload"]
    for name in order[: order.index(then) + 1]:
        env = {**_settings(request, tmp_path, name), "PYTHONPATH": str(fakes)}
        done = _run(container, template, name, env)
        if name == failed:
            assert done.returncode == 1, done.stderr
    assert done.returncode == 1
    assert f"the {failed} step did not succeed (its log: stream prefix {failed})" in done.stderr
    assert not (tmp_path / "work" / "status" / f"{then}.ok").exists()


def test_a_hung_step_is_stopped_by_its_timeout(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    _hf_checkpoint(tmp_path / "checkpoints" / "run")
    container.record("optimum-cli", then="import time; time.sleep(60)")
    request = _request(ModelSource.checkpoint("run"))
    definition = _containers(template)["export"]
    # The task definition's entryPoint, with its budget shortened to one second for the rehearsal.
    entry = [*definition["EntryPoint"]]
    assert entry[:2] == ["timeout", "--kill-after=30"]
    entry[1:3] = ["--kill-after=1", "1"]
    env = {**container._environment(None), **_settings(request, tmp_path, "export"), "PYTHONPATH": str(fakes)}
    (tmp_path / "work" / "status").mkdir(parents=True)
    (tmp_path / "work" / "status" / "fetch.ok").touch()
    done = subprocess.run(
        [*entry, *definition["Command"]], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == timeouts.TIMED_OUT_EXIT_CODE
    assert not (tmp_path / "work" / "status" / "export.ok").exists()


def test_a_one_zone_checkpoint_store_pins_the_task_to_its_zone() -> None:
    app = make_app(**{f"availability-zones:account={TEST_ACCOUNT}:region={REGION}": AZS})
    stack = cdk.Stack(app, "OneZone", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, nat_gateways=1)
    store = CheckpointStore(
        stack,
        "Checkpoints",
        vpc=vpc,
        one_zone=True,
        vpc_subnets=ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1b"]
        ),
    )
    compilation = ModelCompilation(
        stack, "C", vpc=vpc, artifact_bucket=s3.Bucket(stack, "B"), checkpoint_store=store
    )
    [record] = [m.data for m in compilation.node.metadata if m.type == "cdk-neuron:workload"]
    [subnet] = record["subnets"]
    zone_b = vpc.select_subnets(
        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1b"]
    ).subnet_ids
    assert stack.resolve(subnet) == stack.resolve(zone_b[0])
    with pytest.raises(
        NeuronConfigError,
        match=r"^OneZone/D: vpc_subnets=.*: the One Zone checkpoint_store is in us-east-1b.*select a subnet in us-east-1b",
    ):
        ModelCompilation(
            stack,
            "D",
            vpc=vpc,
            artifact_bucket=s3.Bucket(stack, "B2"),
            checkpoint_store=store,
            vpc_subnets=ec2.SubnetSelection(
                subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1a"]
            ),
        )


def test_a_one_zone_store_whose_zone_is_unknown_is_not_guessed_at() -> None:
    """The app's own case: the store's AZ comes from its subnet at deploy time (a token). One subnet is
    given as is; several, which might place the task where the store has no mount target, are refused."""
    app = make_app(**{f"availability-zones:account={TEST_ACCOUNT}:region={REGION}": AZS})
    stack = cdk.Stack(app, "Unknown", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, nat_gateways=1)
    zone_b = ec2.SubnetSelection(
        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1b"]
    )
    [subnet] = vpc.select_subnets(
        **{"subnet_type": ec2.SubnetType.PRIVATE_WITH_EGRESS, "availability_zones": ["us-east-1b"]}
    ).subnets
    store = CheckpointStore(
        stack, "Checkpoints", vpc=vpc, one_zone=True, vpc_subnets=zone_b,
        availability_zone=cdk.Token.as_string(subnet.node.default_child.get_att("AvailabilityZone")),  # type: ignore[union-attr]
    )  # fmt: skip
    assert cdk.Token.is_unresolved(store.availability_zone)
    ModelCompilation(
        stack,
        "One",
        vpc=vpc,
        artifact_bucket=s3.Bucket(stack, "B"),
        checkpoint_store=store,
        vpc_subnets=zone_b,
    )
    with pytest.raises(
        NeuronConfigError,
        match=r"^Unknown/Both: vpc_subnets=.*: the checkpoint_store is One Zone and its only mount target's AZ "
        r"cannot be matched to these 2 subnets at synthesis .*select only the subnet in the store's AZ",
    ):
        ModelCompilation(
            stack, "Both", vpc=vpc, artifact_bucket=s3.Bucket(stack, "B2"), checkpoint_store=store
        )


def test_the_task_is_recorded_for_the_cli(synthesized: Any) -> None:
    compilation, template = synthesized
    [record] = [m.data for m in compilation.node.metadata if m.type == "cdk-neuron:workload"]
    assert record["kind"] == "compilation" and record["engine"] == "optimum-neuron"
    for key, kind in (
        ("cluster_logical_id", "AWS::ECS::Cluster"),
        ("task_definition_logical_id", "AWS::ECS::TaskDefinition"),
        ("security_group_logical_id", "AWS::EC2::SecurityGroup"),
    ):
        resolved = cdk.Stack.of(compilation).resolve(record[key])
        assert template["Resources"][resolved]["Type"] == kind
    assert record["checkpoints"] is True and len(record["subnets"]) == 2
    assert (record["artifact_bucket"], record["artifact_prefix"]) == ("models-bucket", "compiled/")
    assert record["image"] == ServingEngine.optimum_neuron().image.uri(REGION)


def test_the_compile_task_is_priced_per_vcpu_memory_and_storage_above_the_included() -> None:
    # 16 vCPU x $0.04048 + 120 GB x $0.004445 + (200 - 20) GB x $0.000111 (catalog SVC-FARGATE).
    assert compile_task_usd_per_hour() == pytest.approx(16 * 0.04048 + 120 * 0.004445 + 180 * 0.000111)
    assert compile_task_usd_per_hour() == pytest.approx(1.20106)


def test_the_largest_model_a_task_holds_in_memory_also_fits_its_disk_with_the_images() -> None:
    from cdk_neuron.compilation.job import FARGATE_EPHEMERAL_GIB, disk_budget_gib

    # Two copies of the serving image (pulled and unpacked), the AWS CLI image, source, converted copy, export.
    assert disk_budget_gib(FARGATE_MAX_WEIGHTS_GIB) == 2 * timeouts.COMPILE_IMAGE_GIB + 1 + 3 * 40
    assert disk_budget_gib(FARGATE_MAX_WEIGHTS_GIB) <= FARGATE_EPHEMERAL_GIB


def test_the_task_definition_stays_under_the_ecs_size_limit(synthesized: Any) -> None:
    """The programs travel inside the task definition (each container's command), and ECS registers a
    task definition of at most 64 KiB ("Amazon ECS service quotas", Amazon ECS Developer Guide,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/service-quotas.html: task definition size)."""
    _, template = synthesized
    [task] = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    size = len(json.dumps(task["Properties"]["ContainerDefinitions"]).encode())
    assert size < 64 * 1024 * 0.75, size  # with room for the overrides and the registry's own fields


def test_each_step_runs_with_only_the_tools_its_image_ships(synthesized: Any, tmp_path: Path) -> None:
    """A whole compile (an S3 config for an NxD checkpoint, conversion, export, upload), each program with
    only its STEP_TOOLS on the PATH: a command its image does not ship fails here."""
    from image_rehearsal import CONTAINER_TOOLS

    from cdk_neuron.compilation.construct import STEP_TOOLS

    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    container.record(
        "aws",
        then="import pathlib, json\n"
        "if sys.argv[1:3] == ['s3api', 'list-objects-v2']: print('0')\n"
        "elif sys.argv[1:2] == ['s3'] and sys.argv[4].endswith('/config/'):\n"
        "    d = pathlib.Path(sys.argv[4]); d.mkdir(parents=True)\n"
        "    (d / 'config.json').write_text(json.dumps({'num_hidden_layers': 2})); (d / 'tokenizer.json').write_text('{}')",
    )
    _nxd_checkpoint(tmp_path / "checkpoints" / "run")
    source = ModelSource.checkpoint("run", tensor_parallel=2, config_from="s3://models-bucket/base/llama/")
    request = _request(source)
    everything = {p.name for p in container.bin.iterdir()}
    for name in CONTAINERS:
        allowed = set(STEP_TOOLS[name])
        for tool in everything:
            path = container.bin / tool
            hidden = container.root / "hidden" / tool
            hidden.parent.mkdir(exist_ok=True)
            if tool in allowed and not path.exists() and hidden.exists():
                hidden.rename(path)
            elif tool not in allowed and path.exists():
                path.rename(hidden)
        assert allowed <= {p.name for p in container.bin.iterdir()}, allowed
        done = _run(
            container, template, name, {**_settings(request, tmp_path, name), "PYTHONPATH": str(fakes)}
        )
        assert done.returncode == 0, (name, done.stderr)
    assert (tmp_path / "work" / "export" / MANIFEST_NAME).exists()
    assert "bash" in CONTAINER_TOOLS  # the rehearsal's shell is the one each image ships


def test_manifests_can_be_made_write_once_for_everyone_by_the_bucket_policy() -> None:
    app = make_app()
    stack = cdk.Stack(app, "WriteOnce", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc")
    bucket = s3.Bucket(stack, "Models")
    compilation = ModelCompilation(stack, "C", vpc=vpc, artifact_bucket=bucket)
    assert compilation.enforce_write_once() is True
    statements = Template.from_stack(stack).to_json()
    [policy] = [
        r["Properties"] for r in statements["Resources"].values() if r["Type"] == "AWS::S3::BucketPolicy"
    ]
    [deny] = [
        s for s in policy["PolicyDocument"]["Statement"] if s.get("Sid") == "CdkNeuronManifestsAreWriteOnce"
    ]
    assert (deny["Effect"], deny["Action"], deny["Principal"]) == ("Deny", "s3:PutObject", {"AWS": "*"})
    assert deny["Condition"] == {"Null": {"s3:if-none-match": "true"}}
    assert json.dumps(deny["Resource"]).endswith(f'/compiled/*/{MANIFEST_NAME}"]]}}')
    # An imported bucket's policy is not this app's: the statement is for its owner to add.
    imported = ModelCompilation(
        stack, "D", vpc=vpc, artifact_bucket=s3.Bucket.from_bucket_name(stack, "Other", "other-bucket")
    )
    assert imported.enforce_write_once() is False
    assert (
        imported.write_once_statement().to_json()["Resource"]
        == f"arn:aws:s3:::other-bucket/compiled/*/{MANIFEST_NAME}"
    )


# --------------------------------------------------------------------------------------------
# Where the task runs: images it can pull, subnets that follow the network, the Hub where it is reachable
# --------------------------------------------------------------------------------------------


def _isolated(stack_id: str, **props: Any) -> tuple[cdk.Stack, ModelCompilation]:
    """A ModelCompilation in a VPC without NAT: isolated subnets only."""
    app = make_app(**{f"availability-zones:account={TEST_ACCOUNT}:region={REGION}": AZS})
    stack = cdk.Stack(app, stack_id, env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        availability_zones=AZS,
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        ],
    )
    return stack, ModelCompilation(
        stack, "C", vpc=vpc, artifact_bucket=s3.Bucket.from_bucket_name(stack, "B", "models-bucket"), **props
    )


def _record(compilation: ModelCompilation) -> dict[str, Any]:
    [record] = [m.data for m in compilation.node.metadata if m.type == "cdk-neuron:workload"]
    return dict(record)


def test_without_a_nat_the_task_runs_in_the_isolated_subnets_and_says_it_has_no_internet() -> None:
    stack, compilation = _isolated("NoNat")
    record = _record(compilation)
    isolated = stack.resolve(compilation.node.scope.node.find_child("Vpc").isolated_subnets[0].subnet_id)  # type: ignore[union-attr]
    assert isolated in [stack.resolve(s) for s in record["subnets"]] and len(record["subnets"]) == 2
    assert record["internet"] is False and compilation.has_internet is False


def test_with_a_nat_the_task_says_it_reaches_the_internet(synthesized: Any) -> None:
    compilation, _ = synthesized
    assert _record(compilation)["internet"] is True and compilation.has_internet


def test_the_aws_cli_image_comes_from_ecr_public_through_a_pull_through_cache_this_stack_owns(
    synthesized: Any,
) -> None:
    compilation, template = synthesized
    [rule] = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECR::PullThroughCacheRule"]
    assert rule["Properties"] == {
        "EcrRepositoryPrefix": "cdk-neuron-ecr-public",
        "UpstreamRegistryUrl": "public.ecr.aws",
    }
    [(logical, repository)] = [
        (k, r) for k, r in template["Resources"].items() if r["Type"] == "AWS::ECR::Repository"
    ]
    # The cache's own repository for the image, created first so that CloudFormation owns it.
    assert repository["Properties"]["RepositoryName"] == "cdk-neuron-ecr-public/aws-cli/aws-cli"
    # Always deleted, emptied first, though the construct retains its key and logs by default: a retained
    # repository of this fixed name would fail the next create ("already exists").
    assert repository["DeletionPolicy"] == "Delete" and repository["Properties"]["EmptyOnDelete"] is True
    # The execution role pulls (and, the first time, imports) exactly that repository.
    [policy] = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        and "pull (and import) the AWS CLI image" in r["Properties"]["Description"]
    ]
    [pull] = [s for s in policy["PolicyDocument"]["Statement"] if s.get("Sid") == "EcrPullAwsCliImage"]
    assert "ecr:BatchImportUpstreamImage" in pull["Action"] and "ecr:BatchGetImage" in pull["Action"]
    assert pull["Resource"] == {"Fn::GetAtt": [logical, "Arn"]}
    record = _record(compilation)
    assert record["aws_cli_cache_repository"] == "cdk-neuron-ecr-public/aws-cli/aws-cli"
    assert record["aws_cli_image"] == _containers(template)["fetch"]["Image"]


def test_a_destroyed_environment_empties_the_cache_repository() -> None:
    stack, _ = _isolated("Destroyed", removal_policy=cdk.RemovalPolicy.DESTROY)
    [repository] = [
        r
        for r in Template.from_stack(stack).to_json()["Resources"].values()
        if r["Type"] == "AWS::ECR::Repository"
    ]
    assert repository["DeletionPolicy"] == "Delete" and repository["Properties"]["EmptyOnDelete"] is True


def test_an_aws_cli_image_in_private_ecr_is_pulled_as_is_with_a_pull_grant_on_its_repository() -> None:
    from cdk_neuron.serving.engines import ContainerImage

    image = ContainerImage(f"{TEST_ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com", "mirror/aws-cli", "2.22.35")
    stack, compilation = _isolated("Mirror", aws_cli_image=image)
    template = Template.from_stack(stack).to_json()
    assert _containers(template)["upload"]["Image"] == image.uri(REGION)
    assert not [r for r in template["Resources"].values() if r["Type"].startswith("AWS::ECR::")]
    statements = [
        s
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "EcrPullAwsCliImage"
    ]
    [statement] = statements
    from cdk_neuron._nag import flatten_cfn_reference

    assert flatten_cfn_reference(statement["Resource"]).endswith(
        f":ecr:{REGION}:{TEST_ACCOUNT}:repository/mirror/aws-cli"
    )
    assert _record(compilation).get("aws_cli_cache_repository") is None  # None is left out of metadata


@pytest.mark.parametrize("prefix", ["x", "Upper", "a" * 31, "ends-", "two//slashes"])
def test_a_bad_cache_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"ecr_public_cache_prefix='{prefix}': 2-30 characters"):
        _isolated("BadPrefix", ecr_public_cache_prefix=prefix)


def _routed(source: ModelSource, hub_route: bool) -> CompileRequest:
    return CompileRequest(
        source=source,
        artifact_uri=ARTIFACT,
        model=MODEL,
        plan=MODEL.plan(),
        engine=ServingEngine.optimum_neuron(),
        hub_route=hub_route,
    )


@pytest.mark.parametrize(
    "source",
    [
        ModelSource.checkpoint("run", config_from="s3://models-bucket/configs/llama/"),
        ModelSource.s3("s3://models-bucket/hf/llama/"),
    ],
)
def test_the_export_is_offline_exactly_where_the_task_has_no_route_to_the_hub(source: ModelSource) -> None:
    assert _routed(source, hub_route=False).export_environment(REGION)["HF_HUB_OFFLINE"] == "1"
    # With a route it stays online: optimum-neuron's public Hub cache of prebuilt NEFFs is looked up.
    assert "HF_HUB_OFFLINE" not in _routed(source, hub_route=True).export_environment(REGION)
    assert "HF_HUB_OFFLINE" not in _request(ModelSource.hub("org/model")).export_environment(REGION)


def test_without_a_route_a_training_checkpoint_without_config_is_refused_before_anything_runs() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^config_from=None: a neuronx-distributed training checkpoint"
    ):
        _routed(ModelSource.checkpoint("run", tensor_parallel=8), hub_route=False)
    # A Hugging Face checkpoint (nothing to convert) may hold its own config: it is not refused.
    assert _routed(ModelSource.checkpoint("run"), hub_route=False).source.kind == "checkpoint"


def test_without_a_route_to_the_hub_hub_sources_and_hub_config_are_refused_at_once() -> None:
    def request(source: ModelSource) -> CompileRequest:
        return CompileRequest(
            source=source,
            artifact_uri=ARTIFACT,
            model=MODEL,
            plan=MODEL.plan(),
            engine=ServingEngine.optimum_neuron(),
            hub_route=False,
        )

    with pytest.raises(
        NeuronConfigError, match=r"^source='hub:org/model': the compile task's subnets have no route"
    ):
        request(ModelSource.hub("org/model"))
    with pytest.raises(NeuronConfigError, match=r"^config_from='hub:org/model': .*--config-from s3://"):
        request(ModelSource.checkpoint("run", config_from="hub:org/model"))


def test_the_export_reads_the_hub_setting_from_the_task_and_sets_none_of_its_own(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    _hf_checkpoint(tmp_path / "checkpoints" / "run")
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run"))
    assert done.returncode == 0, done.stderr
    [export] = container.calls("optimum-cli")
    assert "HF_HUB_OFFLINE" not in export.env  # a route: the public Hub cache is looked up


def test_offline_a_checkpoint_without_config_is_refused_instead_of_asking_the_hub(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    checkpoint = tmp_path / "checkpoints" / "run"
    _hf_checkpoint(checkpoint)
    (checkpoint / "tokenizer.json").unlink()
    container, done = _export(template, tmp_path, ModelSource.checkpoint("run"), HF_HUB_OFFLINE="1")
    assert done.returncode == 1
    assert (
        "this compile cannot reach the Hub for meta-llama/Llama-3.2-1B-Instruct's: give them with --config-from s3://"
        in done.stderr
    )
    assert container.calls("snapshot_download") == [] and container.calls("optimum-cli") == []


@pytest.mark.parametrize("region", ["cn-north-1", "us-gov-west-1"])
def test_where_pull_through_cache_rules_cannot_be_created_an_aws_cli_image_is_required(region: str) -> None:
    app = make_app()
    stack = cdk.Stack(app, "Partition", env=cdk.Environment(account=TEST_ACCOUNT, region=region))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=[f"{region}a", f"{region}b"])
    with pytest.raises(
        NeuronConfigError,
        match=rf"aws_cli_image=None: ECR pull-through cache rules cannot be created in {region}",
    ):
        ModelCompilation(stack, "C", vpc=vpc, artifact_bucket=s3.Bucket(stack, "B"))
