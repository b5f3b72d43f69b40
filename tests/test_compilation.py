"""ModelCompilation and its programs: the task definition, the three programs run under bash exactly as
ECS starts them (the task definition's entryPoint + command), the export command line, and the
manifest written, uploaded last and read back by the fleet it was compiled for."""

from __future__ import annotations

import json
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

from cdk_neuron.compilation import CompileRequest, ModelCompilation, ModelSource
from cdk_neuron.compilation.construct import AWS_CLI_IMAGE
from cdk_neuron.compilation.job import FARGATE_MAX_WEIGHTS_GIB, compile_task_usd_per_hour
from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_neuron.serving import ModelSpec, ServingEngine
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_support import TEST_ACCOUNT, make_app, nag_violations

REGION = "us-east-1"
AZS = ["us-east-1a", "us-east-1b"]
ARTIFACT = "s3://models-bucket/llama-3.2-1b/run-7-step-1200/"
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
    assert containers["export"]["DependsOn"] == [{"Condition": "SUCCESS", "ContainerName": "fetch"}]
    assert containers["upload"]["DependsOn"] == [{"Condition": "SUCCESS", "ContainerName": "export"}]
    assert "DependsOn" not in containers["fetch"]


def test_every_container_replaces_the_image_entrypoint_with_its_program(synthesized: Any) -> None:
    from cdk_neuron.node_programs import program

    _, template = synthesized
    for name, container in _containers(template).items():
        assert container["EntryPoint"] == ["bash", "-c"]
        assert container["Command"] == [program(f"compile/{name}.sh").read_text()]
    assert _containers(template)["export"]["Image"] == ServingEngine.optimum_neuron().image.uri(REGION)
    assert (
        _containers(template)["fetch"]["Image"] == AWS_CLI_IMAGE == _containers(template)["upload"]["Image"]
    )


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


def test_artifacts_are_listed_and_written_never_deleted(synthesized: Any) -> None:
    _, template = synthesized
    [policy] = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        and "write compiled artifacts" in r["Properties"]["Description"]
    ]
    actions = sorted(
        a
        for s in policy["PolicyDocument"]["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    assert actions == ["s3:GetObject", "s3:ListBucket", "s3:PutObject"]


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
    assert (env["NEURON_SDK"], env["ENGINE_VERSION"], env["SOURCE_STEP"]) == ("2.26.1", "0.4.5", "1200")


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

# optimum-cli as its export leaves a directory: graphs, configs, tokenizer and TP-sharded weights.
_EXPORT = """
import pathlib
out = pathlib.Path(sys.argv[-1])
tp = int(sys.argv[sys.argv.index("--tensor_parallel_size") + 1])
for name in ("config.json", "neuron_config.json", "model.pt", "tokenizer.json"):
    (out / name).write_text(name)
for rank in range(tp):
    shard = out / "checkpoint" / "weights" / f"tp{rank}_sharded_checkpoint.safetensors"
    shard.parent.mkdir(parents=True, exist_ok=True)
    shard.write_bytes(b"w" * (rank + 1))
"""
# NxD's converter as the serving image has it: its argument parser as neuronx-distributed defines it
# (aws-neuron/neuronx-distributed @fbac349b, src/neuronx_distributed/scripts/checkpoint_converter.py,
# get_arg_parser: --hw_backend required, boolean flags parsed with type=bool), so a command line the
# real converter would refuse or misread fails here too; it records what it parsed.
_NXD = """
import argparse, json, os, sys
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
    def run(self, args):
        assert sum(int(getattr(args, f)) for f in ("convert_from_full_state", "convert_to_full_state",
                   "convert_from_xser", "convert_to_xser")) == 1
        with open(os.environ["REHEARSAL_LOG"], "a") as log:
            log.write(json.dumps({"program": "nxd-converter", "argv": sys.argv[1:], "env": vars(args)}) + "\\n")
        os.makedirs(args.output_dir, exist_ok=True)
        open(os.path.join(args.output_dir, "checkpoint.pt"), "w").write("{}")
"""


_TORCH = """
import json
def load(path, map_location=None, weights_only=None):
    try:
        value = json.loads(open(path).read())
    except ValueError:
        return {}
    return {key: None for key in value} if isinstance(value, list) else value
"""


def _sandbox(tmp_path: Path) -> tuple[Container, Path]:
    container = Container(tmp_path)
    for tool in ("find", "sort", "xargs", "sha256sum", "date", "wc", "mkdir", "chmod", "ls", "cp", "grep"):
        real = subprocess.run(["which", tool], capture_output=True, text=True, check=False).stdout.strip()
        if real and not (container.bin / tool).exists():
            (container.bin / tool).symlink_to(real)
    container.record("optimum-cli", then=_EXPORT)
    container.record("neuronx-cc", then='print("NeuronX Compiler version 2.21.18209.0+043b1bf7")')
    container.record("aws")
    fakes = tmp_path / "site"
    (fakes / "neuronx_distributed" / "scripts").mkdir(parents=True)
    (fakes / "neuronx_distributed" / "__init__.py").write_text("")
    (fakes / "neuronx_distributed" / "scripts" / "__init__.py").write_text("")
    (fakes / "neuronx_distributed" / "scripts" / "checkpoint_converter.py").write_text(_NXD)
    # torch.load as the programs use it: a shard written by a test as a JSON list of its keys.
    (fakes / "torch.py").write_text(_TORCH)
    (fakes / "safetensors" / "torch.py").parent.mkdir()
    (fakes / "safetensors" / "__init__.py").write_text("")
    (fakes / "safetensors" / "torch.py").write_text(
        "def save_file(state, path):\n    open(path, 'wb').write(b'st')\n"
    )
    return container, fakes


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
    return {**values, "WORK_DIR": str(work), "CHECKPOINT_MOUNT": str(tmp_path / "checkpoints")}


def _hf_checkpoint(directory: Path) -> None:
    directory.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (directory / name).write_text(name)


def test_a_checkpoint_is_exported_described_and_uploaded_manifest_last(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    _hf_checkpoint(tmp_path / "checkpoints" / "run-7" / "step-1200")
    request = _request(ModelSource.checkpoint("run-7/step-1200", step=1200))
    container.record("aws", then='sys.exit(1 if sys.argv[1:3] == ["s3", "ls"] else 0)')  # a new prefix
    for name in ("fetch", "export", "upload"):
        done = _run(
            container, template, name, {**_settings(request, tmp_path, name), "PYTHONPATH": str(fakes)}
        )
        assert done.returncode == 0, (name, done.stderr)

    [export] = container.calls("optimum-cli")
    plan = MODEL.plan()
    assert export.argv == [
        "export", "neuron", "--model", str(tmp_path / "checkpoints/run-7/step-1200"), "--task", "text-generation",
        "--instance_type", "inf2", "--batch_size", "1", "--sequence_length", "4096",
        "--tensor_parallel_size", str(plan.tensor_parallel), "--torch_dtype", "bfloat16", str(tmp_path / "work/export"),
    ]  # fmt: skip
    manifest = ArtifactManifest.from_file(tmp_path / "work" / "export" / MANIFEST_NAME)
    assert manifest.artifact_uri == ARTIFACT and manifest.compiler_version == "2.21.18209.0+043b1bf7"
    assert (manifest.source.kind, manifest.source.step, manifest.neuron_sdk) == ("checkpoint", 1200, "2.26.1")
    assert "checkpoint/weights/tp0_sharded_checkpoint.safetensors" in [f.path for f in manifest.files]
    # The artifact serves on the fleet it was compiled for.
    engine = ServingEngine.optimum_neuron()
    assert manifest.mismatches(MODEL, plan, engine.name, engine.image) == []
    # Upload: never over an existing manifest; the files; the manifest last, alone.
    uploads = [c.argv for c in container.calls("aws")]
    assert uploads[0][:2] == ["s3", "ls"]
    assert uploads[1] == [
        "s3",
        "sync",
        f"{tmp_path}/work/export/",
        ARTIFACT,
        "--exclude",
        MANIFEST_NAME,
        "--only-show-errors",
    ]
    assert uploads[2] == [
        "s3",
        "cp",
        f"{tmp_path}/work/export/{MANIFEST_NAME}",
        f"{ARTIFACT}{MANIFEST_NAME}",
        "--only-show-errors",
    ]


_PLAIN = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]
_GQA = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight_q", "lm_head.weight"]
_FUSED = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight_qkv", "lm_head.weight"]


@pytest.mark.parametrize(
    ("keys", "xser", "hw_backend", "parsed"),
    [
        # A plain model (no NxD attention layer): every boolean flag stays False, left out.
        (_PLAIN, False, "trn1", {"qkv_linear": False, "fuse_qkv": False, "load_xser": False, "n_layers": 0}),
        # NxD's GQA QKV layer: --qkv_linear; saved with xser: --load_xser.
        (_GQA, True, "trn2", {"qkv_linear": True, "fuse_qkv": False, "load_xser": True, "n_layers": 0}),
        # A fused QKV weight: --fuse_qkv with the layer count from config.json.
        (_FUSED, False, "trn1", {"qkv_linear": True, "fuse_qkv": True, "load_xser": False, "n_layers": 24}),
    ],
)
def test_a_sharded_training_checkpoint_is_converted_with_the_nxd_converter(
    synthesized: Any, tmp_path: Path, keys: list[str], xser: bool, hw_backend: str, parsed: dict[str, Any]
) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    checkpoint = tmp_path / "checkpoints" / "run-7" / "step-1200"
    (checkpoint / "model").mkdir(parents=True)
    for rank in range(2):
        (checkpoint / "model" / f"dp_rank_00_tp_rank_{rank:02d}_pp_rank_00.pt").write_text(json.dumps(keys))
        if xser:
            (checkpoint / "model" / f"dp_rank_00_tp_rank_{rank:02d}_pp_rank_00.pt.tensors").mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"num_hidden_layers": 24}))
    (checkpoint / "tokenizer.json").write_text("{}")
    source = ModelSource.checkpoint("run-7/step-1200", tensor_parallel=2, step=1200, hw_backend=hw_backend)
    request = _request(source)
    done = _run(
        container, template, "export", {**_settings(request, tmp_path, "export"), "PYTHONPATH": str(fakes)}
    )
    assert done.returncode == 0, done.stderr
    [converter] = container.calls("nxd-converter")
    # What NxD's own parser made of the command line.
    assert converter.env["tp_size"] == 2 and converter.env["hw_backend"] == hw_backend
    assert converter.env["convert_to_full_state"] and converter.env["model_style"] == "hf"
    assert converter.env["input_dir"] == str(checkpoint / "model")
    assert converter.env["config"] == str(checkpoint / "config.json")
    assert {key: converter.env[key] for key in parsed} == parsed
    assert sorted(p.name for p in (tmp_path / "work" / "converted").iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    [export] = container.calls("optimum-cli")
    assert export.argv[export.argv.index("--model") + 1] == str(tmp_path / "work" / "converted")


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
    container, fakes = _sandbox(tmp_path)
    checkpoint = tmp_path / "checkpoints" / "run"
    (checkpoint / "model").mkdir(parents=True)
    (checkpoint / "model" / "dp_rank_00_tp_rank_00_pp_rank_00.pt").write_text("shard")
    (checkpoint / "config.json").write_text("{}")
    request = _request(ModelSource.checkpoint("run"))
    done = _run(
        container, template, "export", {**_settings(request, tmp_path, "export"), "PYTHONPATH": str(fakes)}
    )
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


def test_an_upload_never_overwrites_an_artifact(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    container, _ = _sandbox(tmp_path)
    (tmp_path / "work" / "export").mkdir(parents=True)
    (tmp_path / "work" / "export" / MANIFEST_NAME).write_text("{}")
    request = _request(ModelSource.hub("meta-llama/Llama-3.2-1B-Instruct"))
    done = _run(
        container, template, "upload", _settings(request, tmp_path, "upload")
    )  # aws s3 ls succeeds: it exists
    assert done.returncode != 0 and "artifacts are written once" in done.stderr
    assert [c.argv[:2] for c in container.calls("aws")] == [["s3", "ls"]]


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


def test_the_compile_task_is_priced_per_vcpu_memory_and_storage_above_the_included() -> None:
    # 16 vCPU x $0.04048 + 120 GB x $0.004445 + (200 - 20) GB x $0.000111 (catalog SVC-FARGATE).
    assert compile_task_usd_per_hour() == pytest.approx(16 * 0.04048 + 120 * 0.004445 + 180 * 0.000111)
    assert compile_task_usd_per_hour() == pytest.approx(1.20106)
