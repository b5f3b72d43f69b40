"""``cdk-neuron compile --wait`` through the command: the task run, followed to its end, the manifest read
back; Stubber for CloudFormation and ECS, moto for S3. The outcome logic itself: tests/test_compile_wait.py."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from cli_support import RecordingClock
from moto import mock_aws
from test_artifact_manifest import manifest_data
from test_cli_compile import DEFINITION, IDS, REGION, TASK, TASK_DEF, _stubs, assembly  # noqa: F401 - its fixture is used by name
from test_compile_wait import _containers, _task

from cdk_neuron import timeouts
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_support import use_fake_aws_credentials

ARTIFACT = "s3://models/llama-1b/run-7/"


@pytest.fixture
def app_dir(request: pytest.FixtureRequest) -> str:
    """test_cli_compile's hand-written cloud assembly (its ``assembly`` fixture)."""
    return str(request.getfixturevalue("assembly"))


def _compile(
    assembly_dir: str, clients: dict[str, Any], *extra: str
) -> tuple[int, dict[str, Any], str, RecordingClock]:
    out, err, clock = io.StringIO(), io.StringIO(), RecordingClock()
    code = main(
        ["compile", "--app", assembly_dir, "--json", "--source", "s3://checkpoints/llama/",
         "--artifact-uri", ARTIFACT, *extra],
        context=Context(clients=lambda service, region: clients[service], clock=clock, stdout=out, stderr=err),
    )  # fmt: skip
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue(), clock


def _with_task(stub: Any, *responses: dict[str, Any]) -> None:
    stub.add_response("run_task", {"tasks": [{"taskArn": TASK}], "failures": []})
    stub.add_response("describe_task_definition", DEFINITION, {"taskDefinition": TASK_DEF})
    for response in responses:
        stub.add_response("describe_tasks", response, {"cluster": IDS["CompileCluster1"], "tasks": [TASK]})
    if responses and responses[-1]["tasks"][0]["lastStatus"] == "STOPPED":
        stub.add_response("describe_task_definition", DEFINITION, {"taskDefinition": TASK_DEF})


def test_without_wait_it_prints_where_the_export_logs(app_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, ecs, stub = _stubs(IDS)
    _with_task(stub)
    with cf, stub:
        code, doc, _, _ = _compile(app_dir, {"cloudformation": cloudformation, "ecs": ecs})
    assert code == ExitStatus.OK
    assert doc["logs_command"] == (
        f"aws logs tail devCompileLogs --region {REGION} --log-stream-names export/export/0123456789abcdef --follow"
    )
    assert "outcome" not in doc


def test_wait_reports_success_reads_the_manifest_and_names_use_artifact(
    app_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="models")
        data = manifest_data(artifact_uri=ARTIFACT)
        data["model"]["id"] = "meta-llama/Llama-3.2-1B-Instruct"
        s3.put_object(
            Bucket="models", Key="llama-1b/run-7/cdk-neuron-artifact.json", Body=json.dumps(data).encode()
        )
        cloudformation, cf, ecs, stub = _stubs(IDS)
        _with_task(stub, _task("RUNNING"), _task("STOPPED", _containers(0, 0, 0)))
        with cf, stub:
            code, doc, err, clock = _compile(
                app_dir, {"cloudformation": cloudformation, "ecs": ecs, "s3": s3}, "--wait"
            )
    assert code == ExitStatus.OK, err
    assert doc["outcome"]["status"] == "succeeded"
    assert doc["outcome"]["next_command"] == f"cdk-neuron use-artifact --env {doc['environment']} {ARTIFACT}"
    assert doc["outcome"]["deadline_seconds"] == timeouts.compile_task_seconds(40)
    assert clock.calls == [30]
    assert "cdk-neuron compile: running after 0 min" in err


def test_wait_fails_on_a_timed_out_step(app_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, ecs, stub = _stubs(IDS)
    _with_task(stub, _task("STOPPED", _containers(0, timeouts.TIMED_OUT_EXIT_CODE, None)))
    with cf, stub:
        code, doc, _, _ = _compile(app_dir, {"cloudformation": cloudformation, "ecs": ecs}, "--wait")
    assert code == ExitStatus.FAILED
    assert doc["outcome"]["status"] == "timed out"
