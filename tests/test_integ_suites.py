"""The integ suites, offline: snapshots verified, safety checked, programs and probe exercised.

``make test`` never deploys. It synthesizes every suite in ``tests/integ`` (the integ runner's
snapshot mode, ``integ_support.snapshots``), so a construct change that changes what a suite would
deploy fails here until its snapshot is updated (``make integ-snapshots``) and reviewed. The other
tests hold each suite to what a live run relies on: everything is deleted with its stack, every
waiter stops before CloudFormation gives up on it, the programs and the probe do what the assertions
expect of them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cdk_support import REPO_ROOT
from integ_support import estimate, programs, snapshots
from integ_support.probe import handler as probe
from integ_support.programs import allreduce, finetune, smoke
from integ_support.registry import SUITES as INFO
from integ_support.settings import ACCOUNT_VARIABLE, SNAPSHOT_ACCOUNT, Settings, choose_az_ids
from integ_support.steps import compile_task as compile_step
from integ_support.steps import training_job

SUITES = {snapshots.suite_name(p): p for p in snapshots.suite_files()}
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def assemblies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {
        name: snapshots.synthesize(path, tmp_path_factory.mktemp(name) / "out")
        for name, path in SUITES.items()
    }


def _templates(assembly: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in assembly.glob("*.template.json")}


def test_every_suite_is_here() -> None:
    assert sorted(SUITES) == [
        "scale_from_zero",
        "serving_ec2",
        "serving_sagemaker",
        "train_compile_serve",
        "training_efa",
        "training_hyperpod",
        "training_smoke",
    ]


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_snapshot_matches(assemblies: dict[str, Path], suite: str) -> None:
    diffs = snapshots.differences(snapshots.snapshot_dir(SUITES[suite]), assemblies[suite])
    assert not diffs, "\n".join([f"{suite} changed; review, then `make integ-snapshots`:", *diffs])


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_everything_is_deleted_with_its_stack(assemblies: dict[str, Path], suite: str) -> None:
    for name, template in _templates(assemblies[suite]).items():
        for logical_id, resource in template["Resources"].items():
            assert resource.get("DeletionPolicy", "Delete") == "Delete", f"{name} {logical_id}"
            assert resource.get("UpdateReplacePolicy", "Delete") == "Delete", f"{name} {logical_id}"
            if resource["Type"] == "AWS::KMS::Key":
                assert resource["Properties"]["PendingWindowInDays"] == 7, f"{name} {logical_id}"


# Buckets emptied otherwise: the EFA installer mirror's custom resource deletes the one object it put
# ("Delete removes the object so the bucket can be deleted with its stack", custom_resources/efa_mirror.py).
# The HyperPod lifecycle bucket is emptied by the custom resource that writes the scripts into it
# (lifecycle_scripts handler: Delete of the stack's last prefix empties the bucket).
EMPTIED_BY_THEIR_OWNER = ("ClusterEfaInstallerBucket", "ClusterLifecycleBucket")


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_buckets_are_emptied_before_deletion(assemblies: dict[str, Path], suite: str) -> None:
    for name, template in _templates(assemblies[suite]).items():
        resources = template["Resources"]
        emptied = {
            json.dumps(r["Properties"]["BucketName"])
            for r in resources.values()
            if r["Type"] == "Custom::S3AutoDeleteObjects"
        }
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::S3::Bucket" and not logical_id.startswith(EMPTIED_BY_THEIR_OWNER):
                assert json.dumps({"Ref": logical_id}) in emptied, f"{name} {logical_id} is not emptied"


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_assertions_exist_and_every_waiter_is_bounded(assemblies: dict[str, Path], suite: str) -> None:
    manifest = json.loads((assemblies[suite] / "integ.json").read_text())
    (case,) = manifest["testCases"].values()
    assertion_stack = json.loads((assemblies[suite] / f"{case['assertionStack']}.template.json").read_text())
    assert any(key.startswith("AssertionResults") for key in assertion_stack["Outputs"]), "no assertion"
    for resource in assertion_stack["Resources"].values():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        definition = json.loads(
            "".join(
                p for p in resource["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
            )
        )
        (retry,) = definition["States"]["framework-isComplete-task"]["Retry"]
        # A custom resource waits at most an hour for its provider.
        assert retry["IntervalSeconds"] * retry["MaxAttempts"] < 3600


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_the_estimate_counts_every_kms_key(assemblies: dict[str, Path], suite: str) -> None:
    keys = sum(
        1
        for template in _templates(assemblies[suite]).values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::KMS::Key"
    )
    assert keys == INFO[suite].kms_keys


def test_other_regions_get_az_ids_from_the_offerings() -> None:
    assert Settings().az_ids == ("use1-az6", "use1-az4")
    assert choose_az_ids("us-west-2")[0] in ("usw2-az1", "usw2-az4")
    with pytest.raises(SystemExit, match="no AZ ID offers"):
        choose_az_ids("eu-west-1")


# -- the programs the jobs run ---------------------------------------------------------------------


def test_programs_travel_in_the_job_environment_and_report_in_the_log() -> None:
    env = programs.environment("smoke")
    assert list(env) == [programs.PROGRAM_VARIABLE]
    assert "torchrun $TORCHRUN_ARGS" in programs.training_command("--floor", "10")
    lines = [
        "noise",
        f'{programs.LOG_MARKER} {{"event": "checkpoint", "ok": true}}',
        f"{programs.LOG_MARKER} {{bad",
    ]
    assert programs.events(lines) == [{"event": "checkpoint", "ok": True}]


def test_smoke_checks_the_mount_and_the_bytes(tmp_path: Path) -> None:
    mounts = "fs-1.efs.us-east-1.amazonaws.com:/ /checkpoints nfs4 rw 0 0\n/dev/root / ext4 rw 0 0\n"
    assert smoke.mounted_filesystem("/checkpoints/", mounts) == "nfs4"
    assert smoke.mounted_filesystem("/scratch", mounts) is None
    result = smoke.write_and_read_back(tmp_path, size=3 * smoke.CHUNK + 5)
    assert result["read_back_matches"] and result["bytes"] == 3 * smoke.CHUNK + 5
    assert not any(tmp_path.iterdir())
    assert smoke.expected_sum(2) == 3


def test_allreduce_bus_bandwidth_is_nccl_tests_definition() -> None:
    # 1 GiB in 1 s over 64 ranks: algbw 1 GiB/s, busbw x 2 x 63 / 64.
    assert allreduce.bus_bandwidth_gib_per_second(2**30, 1.0, 64) == pytest.approx(1.96875)
    with pytest.raises(ValueError):
        allreduce.bus_bandwidth_gib_per_second(1, 0, 2)


# -- the probe, against a fake server on loopback ----------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    status = 200
    model = "Qwen/Qwen2.5-0.5B-Instruct"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.status)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if self.status == 200:
            for piece in ("Mars", "."):
                chunk = {"model": self.model, "choices": [{"delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fleet() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        _Fake.status, _Fake.model = 200, "Qwen/Qwen2.5-0.5B-Instruct"


def test_probe_reads_a_streamed_answer(fleet: str) -> None:
    answer = probe.handler({"action": "chat", "url": fleet, "model": _Fake.model})
    assert answer["verdict"] == "ok" and answer["status"] == 200 and answer["text"] == "Mars."
    assert answer["first_token_ms"] is not None and answer["model"] == _Fake.model


def test_probe_names_what_is_wrong(fleet: str) -> None:
    assert probe.handler({"url": fleet, "model": "other/model"})["verdict"] == f"model={_Fake.model}"
    _Fake.status = 503
    assert probe.handler({"url": fleet, "model": _Fake.model})["verdict"] == "status=503"
    woken = probe.handler({"action": "wake", "url": fleet, "model": _Fake.model})
    assert woken["status"] == 503 and woken["t0_ms"] > 0


def test_probe_judges_the_wake_against_its_budget(fleet: str) -> None:
    now_ms = probe._now_ms()
    event = {"action": "poll", "url": fleet, "model": _Fake.model, "budget_seconds": 60}
    assert probe.handler({**event, "t0_ms": now_ms - 10_000})["verdict"] == "ok"
    assert probe.handler({**event, "t0_ms": now_ms - 120_000})["verdict"] == "slow"
    _Fake.status = 503
    assert probe.handler({**event, "t0_ms": now_ms})["verdict"] == "waiting"


# -- the runner: cost guard, estimate, assertion results (nothing here reaches AWS) ------------------


def test_run_refuses_without_confirmation_and_names_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    import run

    assert run.main(["run", "--confirm", "no"]) == 3
    captured = capsys.readouterr()
    assert "Refusing to deploy" in captured.err and "could cost up to $" in captured.err
    assert "trn1.2xlarge" in captured.out and "training_efa" not in captured.out  # opt-in only


def test_estimate_prices_every_line_from_the_catalog() -> None:
    text, expected, most = estimate.render([INFO["training_efa"]], "us-east-1")
    # Two trn1.32xlarge at the table's $21.50/h for 0.75 h (at most 1.5 h), plus the small lines.
    assert 32.25 < expected < 34 and 64.5 < most < 66
    assert "2 x trn1.32xlarge" in text


def test_assertion_results_are_read_as_integ_runner_reads_them() -> None:
    import run

    outputs = {
        "S-Assert": {
            "AssertionResultsA": json.dumps({"status": "success"}),
            "AssertionResultsB": '{"status": "fail", "message": "line\none"}',
            "JobId": "j",
        }
    }
    assert [(k, r["status"]) for k, r in run.assertion_results(outputs, "S-Assert")] == [
        ("AssertionResultsA", "success"),
        ("AssertionResultsB", "fail"),
    ]


@pytest.mark.parametrize("doc", ["docs/integ.md"])
def test_the_documented_costs_are_the_estimate(doc: str) -> None:
    """Each suite's expected and most cost, as docs/integ.md prints them, is what
    ``make integ`` computes from the price tables; a price or hours change must update it."""
    text = (REPO_ROOT / doc).read_text()
    for name, suite in INFO.items():
        mine = estimate.lines(suite)
        expected = f"~${sum(line.expected_usd for line in mine):.2f}"
        most = f"${sum(line.most_usd for line in mine):.2f}"
        row = next(
            line
            for line in text.splitlines()
            if line.startswith((f"| `{name}`", f"| {name}")) and "~$" in line
        )
        assert expected in row and most in row, (doc, row)
    default = [suite for suite in INFO.values() if not suite.opt_in]
    _, _, most_default = estimate.render(default, "us-east-1")
    assert f"${most_default:.2f}" in text


# -- compile, then serve -----------------------------------------------------------------------------

SERVING_SUITES = ("scale_from_zero", "serving_ec2", "serving_sagemaker")
COMPILING_SUITES = (*SERVING_SUITES, "train_compile_serve")
FLEET_TYPES = ("AWS::AutoScaling::AutoScalingGroup", "AWS::SageMaker::Endpoint", "AWS::SageMaker::Model")


def _test_template(assembly: Path) -> dict[str, Any]:
    manifest = json.loads((assembly / "integ.json").read_text())
    (case,) = manifest["testCases"].values()
    (stack,) = case["stacks"]
    return json.loads((assembly / f"{stack}.template.json").read_text())


def _compile_step(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (k, r) for k, r in template["Resources"].items() if r["Type"] == "Custom::CdkNeuronIntegCompile"
    ]
    return found


def _served(template: dict[str, Any]) -> dict[str, Any]:
    (record,) = [r for r in template["Metadata"]["cdk-neuron:workloads"].values() if r["kind"] == "serving"]
    return dict(record)


def test_the_compiling_suites_are_the_serving_ones() -> None:
    assert sorted(name for name, info in INFO.items() if info.compile is not None) == sorted(COMPILING_SUITES)
    assert INFO["train_compile_serve"].opt_in


@pytest.mark.parametrize("suite", COMPILING_SUITES)
def test_the_fleet_is_created_only_after_the_compile_step(assemblies: dict[str, Path], suite: str) -> None:
    template = _test_template(assemblies[suite])
    step, _ = _compile_step(template)
    fleet = [(k, r) for k, r in template["Resources"].items() if r["Type"] in FLEET_TYPES]
    assert fleet
    for logical_id, resource in fleet:
        assert step in resource.get("DependsOn", []), f"{logical_id} does not wait for {step}"


@pytest.mark.parametrize("suite", SERVING_SUITES)
def test_the_compile_step_sends_what_cdk_neuron_compile_sends(
    assemblies: dict[str, Path], suite: str
) -> None:
    """The task overrides are CompileRequest.task_overrides for the fleet's own shape and engine, the
    artifact is the one the fleet serves, and the manifest is checked for that shape."""
    from cdk_neuron.compilation import CompileRequest, ModelSource
    from cdk_neuron.serving import ServingEngine
    from integ_support.serving import INSTANCE_TYPE, model
    from integ_support.settings import MODEL_ID

    template = _test_template(assemblies[suite])
    _, step = _compile_step(template)
    properties = step["Properties"]
    served = _served(template)
    artifact_uri = served["model"]["artifact_uri"]
    bucket = Settings().artifact_bucket(suite)
    assert artifact_uri == f"s3://{bucket}/compiled/qwen2.5-0.5b-instruct/" == properties["ArtifactUri"]
    spec = model()
    request = CompileRequest(
        source=ModelSource.hub(MODEL_ID),
        artifact_uri=artifact_uri,
        model=spec,
        plan=spec.plan(INSTANCE_TYPE),
        engine=ServingEngine.optimum_neuron(),
    )
    assert json.loads(properties["Overrides"]) == request.task_overrides("us-east-1")
    assert json.loads(properties["Shape"]) == {
        "batch_size": served["model"]["batch_size"],
        "sequence_length": served["model"]["sequence_length"],
        "tensor_parallel": served["tensor_parallel"],
        "dtype": served["model"]["dtype"],
    }
    # The task it runs is the suite's ModelCompilation, in the fleet's VPC.
    (compilation,) = [
        r for r in template["Metadata"]["cdk-neuron:workloads"].values() if r["kind"] == "compilation"
    ]
    assert properties["TaskDefinition"] == {"Ref": compilation["task_definition_logical_id"]}
    assert properties["Subnets"] == compilation["subnets"]
    buckets = [
        r["Properties"].get("BucketName")
        for r in template["Resources"].values()
        if r["Type"] == "AWS::S3::Bucket"
    ]
    assert bucket in buckets


@pytest.mark.parametrize("suite", COMPILING_SUITES)
def test_the_compile_wait_ends_before_cloudformation_gives_up(
    assemblies: dict[str, Path], suite: str
) -> None:
    template = _test_template(assemblies[suite])
    machines = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert machines
    for resource in machines:
        definition = json.loads(
            "".join(
                p for p in resource["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
            )
        )
        (retry,) = definition["States"]["framework-isComplete-task"]["Retry"]
        assert retry["IntervalSeconds"] * retry["MaxAttempts"] < 3600


def test_train_compile_serve_trains_then_compiles_that_checkpoint_then_serves(
    assemblies: dict[str, Path],
) -> None:
    from integ_train_compile_serve import RUN_NAME, STEPS, checkpoint_source, served_model

    from cdk_neuron.compilation import CompileRequest
    from cdk_neuron.serving import ServingEngine

    template = _test_template(assemblies["train_compile_serve"])
    resources = template["Resources"]
    (train,) = [k for k, r in resources.items() if r["Type"] == "Custom::CdkNeuronIntegTrainingJob"]
    compile_id, step = _compile_step(template)
    # Train, then compile, then serve.
    assert train in step["DependsOn"]
    (group,) = [r for r in resources.values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    assert compile_id in group["DependsOn"]
    # The job is the cluster's, and it saves where the compile reads.
    workloads = template["Metadata"]["cdk-neuron:workloads"]
    (training,) = [r for r in workloads.values() if r["kind"] == "training"]
    assert resources[train]["Properties"]["JobQueue"] == {
        "Fn::GetAtt": [training["job_queue_logical_id"], "JobQueueArn"]
    }
    assert resources[train]["Properties"]["JobDefinition"] == {"Ref": training["job_definition_logical_id"]}
    assert training["plan"] == {"nodes": 1, "tensor_parallel": 1, "pipeline_parallel": 1}
    assert (
        finetune.checkpoint_dir("/checkpoints", RUN_NAME, STEPS)
        == Path("/checkpoints") / checkpoint_source().uri
    )
    (compilation,) = [r for r in workloads.values() if r["kind"] == "compilation"]
    assert compilation["checkpoints"] is True
    properties = step["Properties"]
    assert json.loads(properties["Source"]) == {
        "kind": "checkpoint",
        "uri": f"{RUN_NAME}/step-{STEPS}",
        "step": STEPS,
    }
    spec = served_model()
    request = CompileRequest(
        source=checkpoint_source(),
        artifact_uri=properties["ArtifactUri"],
        model=spec,
        plan=spec.plan("inf2.xlarge"),
        engine=ServingEngine.optimum_neuron(),
    )
    assert json.loads(properties["Overrides"]) == request.task_overrides("us-east-1")
    export = request.export_environment("us-east-1")
    assert (export["CONVERT_TP"], export["CONVERT_HW_BACKEND"], export["TENSOR_PARALLEL"]) == (
        "1",
        "trn1",
        "1",
    )
    # The job carries the program and its settings.
    [definition] = [r for r in resources.values() if r["Type"] == "AWS::Batch::JobDefinition"]
    (node,) = definition["Properties"]["NodeProperties"]["NodeRangeProperties"]
    env = {e["Name"]: e["Value"] for e in node["Container"]["Environment"]}
    assert (env["NEURON_TP_DEGREE"], env["NPROC_PER_NODE"]) == ("1", "2")
    assert env[programs.PROGRAM_VARIABLE] == programs.environment("finetune")[programs.PROGRAM_VARIABLE]
    assert (env["RUN_NAME"], env["TRAIN_STEPS"], env["MODEL_ID"]) == (RUN_NAME, str(STEPS), spec.model_id)


def test_the_finetune_program_checks_what_the_compile_needs(tmp_path: Path) -> None:
    target = finetune.checkpoint_dir(str(tmp_path), "run", 5)
    assert target == tmp_path / "run" / "step-5"
    (target / "model").mkdir(parents=True)
    assert finetune.missing_files(target) == [finetune.SHARD, "config.json", "tokenizer*"]
    (target / finetune.SHARD).write_text("shard")
    model = tmp_path / "hub"
    model.mkdir()
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "vocab.json", "merges.txt", "model.safetensors", "README.md"):  # fmt: skip
        (model / name).write_text(name)
    copied = finetune.copy_beside(model, target)
    assert "model.safetensors" not in copied and "README.md" not in copied
    assert {"config.json", "tokenizer.json", "merges.txt", "vocab.json"} <= set(copied)
    assert finetune.missing_files(target) == []


def test_the_finetune_program_refuses_missing_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("MODEL_ID", "RUN_NAME", "CHECKPOINT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MODEL_ID", "org/m")
    with pytest.raises(SystemExit) as exited:
        finetune.main()
    assert exited.value.code == 1
    assert programs.events(capsys.readouterr().out.splitlines()) == [
        {"event": "settings", "ok": False, "unset": ["run", "root"]}
    ]


def test_the_artifact_bucket_is_named_for_the_account_region_and_suite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (
        Settings().artifact_bucket("serving_ec2")
        == f"cdk-neuron-integ-{SNAPSHOT_ACCOUNT}-us-east-1-serving-ec2"
    )
    monkeypatch.setenv(ACCOUNT_VARIABLE, "123456789012")
    settings = Settings.from_environment()
    assert (
        settings.is_default and settings.artifact_bucket("x") == "cdk-neuron-integ-123456789012-us-east-1-x"
    )
    with pytest.raises(SystemExit, match="at most 63 characters"):
        settings.artifact_bucket("a_suite_name_far_too_long_for_a_bucket")
    monkeypatch.setenv(ACCOUNT_VARIABLE, "12345")
    with pytest.raises(SystemExit, match=r"CDK_NEURON_INTEG_ACCOUNT='12345': give the 12-digit account id"):
        Settings.from_environment()


def test_a_runs_account_is_compared_as_the_snapshots_account(tmp_path: Path) -> None:
    snapshot, assembly = tmp_path / "snap", tmp_path / "out"
    snapshot.mkdir()
    assembly.mkdir()
    (snapshot / "s.template.json").write_text(json.dumps({"B": f"cdk-neuron-integ-{SNAPSHOT_ACCOUNT}-x"}))
    (assembly / "s.template.json").write_text(json.dumps({"B": "cdk-neuron-integ-123456789012-x"}))
    assert snapshots.differences(snapshot, assembly, account="123456789012") == []
    assert snapshots.differences(snapshot, assembly) != []


# The compile step's functions, against botocore's Stubber.

TASK = "arn:aws:ecs:us-east-1:111111111111:task/cluster/abc"
CLUSTER = "arn:aws:ecs:us-east-1:111111111111:cluster/c"
ARTIFACT = "s3://cdk-neuron-integ-111111111111-us-east-1-serving-ec2/compiled/qwen/"
SHAPE = {"batch_size": 1, "dtype": "bf16", "sequence_length": 4096, "tensor_parallel": 2}
PROPERTIES = {
    "Cluster": CLUSTER,
    "TaskDefinition": "arn:aws:ecs:us-east-1:111111111111:task-definition/t:1",
    "Subnets": ["subnet-1", "subnet-2"],
    "SecurityGroups": ["sg-1"],
    "Overrides": json.dumps({"containerOverrides": [{"name": "export", "environment": []}]}),
    "ArtifactUri": ARTIFACT,
    "Shape": json.dumps(SHAPE),
    "Source": json.dumps({"kind": "checkpoint", "uri": "run/step-5", "step": 5}),
}


def _clients() -> tuple[Any, Any, Any, Any]:
    import boto3
    from botocore.stub import Stubber

    keys = {"region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    ecs, s3 = boto3.client("ecs", **keys), boto3.client("s3", **keys)
    return ecs, Stubber(ecs), s3, Stubber(s3)


def _event(kind: str, physical_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": PROPERTIES}
    if physical_id:
        event["PhysicalResourceId"] = physical_id
    return event


def _stopped(exits: dict[str, int], reason: str = "Essential container in task exited") -> dict[str, Any]:
    return {
        "tasks": [
            {
                "taskArn": TASK,
                "lastStatus": "STOPPED",
                "stoppedReason": reason,
                "containers": [{"name": name, "exitCode": code} for name, code in exits.items()],
            }
        ],
        "failures": [],
    }


def _manifest(**changes: Any) -> bytes:
    value = {
        "format": "cdk-neuron-artifact",
        "version": 2,
        "artifact_uri": ARTIFACT,
        "shape": SHAPE,
        "files": [{"path": "model.pt", "bytes": 1, "sha256": "0" * 64}],
        "compile_seconds": 312.5,
        "neuron": {"sdk": "2.26.1", "compiler": "2.21.33363.0", "target": "trn1"},
        "source": {"kind": "checkpoint", "uri": "run/step-5", "step": 5, "sha256": "a" * 64},
        **changes,
    }
    return json.dumps(value).encode()


def test_the_compile_step_requires_the_manifest_version_the_export_writes() -> None:
    from cdk_neuron.serving.artifact_manifest import MANIFEST_VERSION

    # The Lambda bundle cannot import cdk_neuron: its copy of the version is held equal here.
    assert compile_step.MANIFEST_VERSION == MANIFEST_VERSION


def test_the_compile_step_starts_the_task_as_cdk_neuron_compile_does() -> None:
    ecs, ecs_stub, s3, _ = _clients()
    ecs_stub.add_response(
        "run_task",
        {"tasks": [{"taskArn": TASK}], "failures": []},
        {
            "cluster": CLUSTER,
            "taskDefinition": PROPERTIES["TaskDefinition"],
            "launchType": "FARGATE",
            "count": 1,
            "startedBy": "cdk-neuron-integ",
            "networkConfiguration": {
                "awsvpcConfiguration": {
                    "subnets": ["subnet-1", "subnet-2"],
                    "securityGroups": ["sg-1"],
                    "assignPublicIp": "DISABLED",
                }
            },
            "overrides": json.loads(PROPERTIES["Overrides"]),
        },
    )
    with ecs_stub:
        assert compile_step.on_event(_event("Create"), clients=(ecs, s3)) == {"PhysicalResourceId": TASK}
    ecs_stub.add_response("run_task", {"tasks": [], "failures": [{"arn": "x", "reason": "RESOURCE:MEMORY"}]})
    with (
        ecs_stub,
        pytest.raises(compile_step.CompileFailed, match="started no compile task: x RESOURCE:MEMORY"),
    ):
        compile_step.on_event(_event("Create"), clients=(ecs, s3))


def test_the_compile_step_waits_while_the_task_runs() -> None:
    ecs, ecs_stub, s3, _ = _clients()
    ecs_stub.add_response(
        "describe_tasks",
        {"tasks": [{"taskArn": TASK, "lastStatus": "RUNNING"}], "failures": []},
        {"cluster": CLUSTER, "tasks": [TASK]},
    )
    with ecs_stub:
        assert compile_step.is_complete(_event("Create", TASK), clients=(ecs, s3)) == {"IsComplete": False}


def test_the_compile_step_names_the_step_that_failed() -> None:
    ecs, ecs_stub, s3, _ = _clients()
    ecs_stub.add_response("describe_tasks", _stopped({"fetch": 0, "export": 1}))
    with (
        ecs_stub,
        pytest.raises(
            compile_step.CompileFailed,
            match=r"failed: export: exit code 1; upload: exit code None; task: Essential",
        ),
    ):
        compile_step.is_complete(_event("Create", TASK), clients=(ecs, s3))


def test_the_compile_step_completes_on_a_manifest_for_the_fleets_shape() -> None:
    ecs, ecs_stub, s3, s3_stub = _clients()
    ecs_stub.add_response("describe_tasks", _stopped({"fetch": 0, "export": 0, "upload": 0}))
    import io

    from botocore.response import StreamingBody

    body = _manifest()
    s3_stub.add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(body), len(body))},
        {
            "Bucket": "cdk-neuron-integ-111111111111-us-east-1-serving-ec2",
            "Key": "compiled/qwen/cdk-neuron-artifact.json",
        },
    )
    with ecs_stub, s3_stub:
        done = compile_step.is_complete(_event("Create", TASK), clients=(ecs, s3))
    assert done == {
        "IsComplete": True,
        "Data": {
            "ManifestUri": f"{ARTIFACT}cdk-neuron-artifact.json",
            "CompileSeconds": "312.5",
            "Files": "1",
            "Compiler": "2.21.33363.0",
            "SourceSha256": "a" * 64,
        },
    }


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"shape": {**SHAPE, "tensor_parallel": 1}}, r"shape.tensor_parallel=1, the fleet serves 2"),
        ({"version": 1}, r"version=1, expected 2"),
        ({"artifact_uri": "s3://other/p/"}, r"artifact_uri='s3://other/p/'"),
        ({"files": []}, r"files: the artifact lists no file"),
        (
            {"source": {"kind": "checkpoint", "uri": "run/step-4", "step": 4}},
            r"source.uri='run/step-4', the compile was asked for 'run/step-5'; source.step=4",
        ),
    ],
)
def test_the_compile_step_refuses_a_manifest_the_fleet_cannot_serve(
    changes: dict[str, Any], needle: str
) -> None:
    ecs, ecs_stub, s3, s3_stub = _clients()
    ecs_stub.add_response("describe_tasks", _stopped({"fetch": 0, "export": 0, "upload": 0}))
    import io

    from botocore.response import StreamingBody

    body = _manifest(**changes)
    s3_stub.add_response("get_object", {"Body": StreamingBody(io.BytesIO(body), len(body))})
    with ecs_stub, s3_stub, pytest.raises(compile_step.CompileFailed, match=needle):
        compile_step.is_complete(_event("Create", TASK), clients=(ecs, s3))


def test_the_compile_step_fails_without_a_manifest() -> None:
    ecs, ecs_stub, s3, s3_stub = _clients()
    ecs_stub.add_response("describe_tasks", _stopped({"fetch": 0, "export": 0, "upload": 0}))
    s3_stub.add_client_error("get_object", "NoSuchKey")
    with (
        ecs_stub,
        s3_stub,
        pytest.raises(compile_step.CompileFailed, match=r"no readable s3://.*cdk-neuron-artifact\.json"),
    ):
        compile_step.is_complete(_event("Create", TASK), clients=(ecs, s3))


def test_deleting_the_step_stops_a_task_still_running() -> None:
    ecs, ecs_stub, s3, _ = _clients()
    ecs_stub.add_response(
        "stop_task", {}, {"cluster": CLUSTER, "task": TASK, "reason": "integ stack deleted"}
    )
    with ecs_stub:
        assert compile_step.on_event(_event("Delete", TASK), clients=(ecs, s3)) == {
            "PhysicalResourceId": TASK
        }
    ecs_stub.assert_no_pending_responses()
    # A create that never started a task has no task to stop; update and delete complete at once.
    with ecs_stub:
        compile_step.on_event(_event("Delete", "request-id"), clients=(ecs, s3))
        assert compile_step.is_complete(_event("Update", TASK), clients=(ecs, s3)) == {"IsComplete": True}


# The training step's functions, against botocore's Stubber.

JOB_PROPERTIES = {
    "JobName": "cdk-neuron-integ-train-compile-serve",
    "JobQueue": "arn:aws:batch:us-east-1:111111111111:job-queue/q",
    "JobDefinition": "arn:aws:batch:us-east-1:111111111111:job-definition/d:1",
}


def _batch() -> tuple[Any, Any]:
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def _job(status: str, **extra: Any) -> dict[str, Any]:
    job = {
        "jobName": "j", "jobId": "job-1", "jobQueue": "q", "status": status, "jobDefinition": "d",
        "startedAt": 1_000_000, "stoppedAt": 1_600_000, **extra,
    }  # fmt: skip
    return {"jobs": [job]}


def test_the_training_step_submits_the_clusters_job() -> None:
    batch, stub = _batch()
    stub.add_response(
        "submit_job",
        {"jobName": "j", "jobId": "job-1"},
        {"jobName": JOB_PROPERTIES["JobName"], "jobQueue": JOB_PROPERTIES["JobQueue"],
         "jobDefinition": JOB_PROPERTIES["JobDefinition"]},
    )  # fmt: skip
    with stub:
        done = training_job.on_event(
            {"RequestType": "Create", "ResourceProperties": JOB_PROPERTIES}, batch=batch
        )
    assert done == {"PhysicalResourceId": "job-1"}


def test_the_training_step_waits_then_completes_on_success() -> None:
    batch, stub = _batch()
    event = {"RequestType": "Create", "ResourceProperties": JOB_PROPERTIES, "PhysicalResourceId": "job-1"}
    stub.add_response("describe_jobs", _job("RUNNING"), {"jobs": ["job-1"]})
    stub.add_response("describe_jobs", _job("SUCCEEDED"), {"jobs": ["job-1"]})
    with stub:
        assert training_job.is_complete(event, batch=batch) == {"IsComplete": False}
        assert training_job.is_complete(event, batch=batch) == {
            "IsComplete": True,
            "Data": {"JobId": "job-1", "RunningSeconds": "600"},
        }


def test_a_failed_training_job_fails_the_step_with_batchs_reasons() -> None:
    batch, stub = _batch()
    event = {"RequestType": "Create", "ResourceProperties": JOB_PROPERTIES, "PhysicalResourceId": "job-1"}
    failed = _job(
        "FAILED",
        statusReason="Essential container in task exited",
        container={"exitCode": 1, "reason": "OutOfMemoryError"},
    )
    stub.add_response("describe_jobs", failed)
    with (
        stub,
        pytest.raises(
            training_job.TrainingFailed,
            match=r"job-1 FAILED: Essential container in task exited; OutOfMemoryError; exit code 1",
        ),
    ):
        training_job.is_complete(event, batch=batch)


def test_deleting_the_training_step_terminates_a_job_still_running() -> None:
    batch, stub = _batch()
    stub.add_response("describe_jobs", _job("RUNNING"), {"jobs": ["job-1"]})
    stub.add_response("terminate_job", {}, {"jobId": "job-1", "reason": "integ stack deleted"})
    stub.add_response("describe_jobs", _job("SUCCEEDED"), {"jobs": ["job-1"]})
    delete = {"RequestType": "Delete", "ResourceProperties": JOB_PROPERTIES, "PhysicalResourceId": "job-1"}
    with stub:
        training_job.on_event(delete, batch=batch)
        training_job.on_event(delete, batch=batch)  # finished: nothing to terminate
    stub.assert_no_pending_responses()


def test_a_compiling_suites_report_carries_the_compile_time() -> None:
    """The collector reads CompileSeconds from the outputs; what it cannot read is listed, not fatal."""
    from cdk_neuron.measurements import TimingReport
    from integ_support.collect import Collector

    class NoAws:
        def client(self, name: str, region_name: str) -> Any:
            raise RuntimeError(f"no {name} here")

    outputs = {"CdkNeuronInteg-TrainCompileServe": {"CompileSeconds": "312.5", "JobId": "job-1"}}
    report = Collector("train_compile_serve", "us-east-1", outputs, NoAws()).report("passed")
    assert isinstance(report, TimingReport)
    assert report.timings == {"compile_seconds": 312.5}
    assert report.model is not None and report.model["model_id"] == "HuggingFaceTB/SmolLM2-360M-Instruct"
    assert any(error.startswith("batch job: RuntimeError") for error in report.errors)
    assert any(error.startswith("fleet: ") for error in report.errors)
