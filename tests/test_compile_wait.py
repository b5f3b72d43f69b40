"""``compile --wait`` (cdk_neuron.cli.compile_wait): the task followed to its end with botocore's Stubber
for ECS (DescribeTasks, DescribeTaskDefinition) and moto for the manifest read back from S3."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cli_support import RecordingClock
from moto import mock_aws
from test_artifact_manifest import manifest_data

from cdk_neuron.cli.compile_wait import render_outcome, wait_for_compile
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report, render
from cdk_neuron.deployment import ServingDeployment
from cdk_support import REPO_ROOT
from stacks.config import deployments

REGION = "us-east-1"
CLUSTER = f"arn:aws:ecs:{REGION}:111111111111:cluster/dev-Compile"
TASK = f"arn:aws:ecs:{REGION}:111111111111:task/dev-Compile/0123456789abcdef"
TASK_DEF = f"arn:aws:ecs:{REGION}:111111111111:task-definition/devCompileTask:3"
ARTIFACT = "s3://cdk-neuron-dev-models/compiled/llama-3.2-3b/run-7/"


def _serving() -> ServingDeployment:
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    serving = deployments(context)["dev"].serving
    assert serving is not None
    return serving


def _task(status: str, containers: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"tasks": [{"taskArn": TASK, "taskDefinitionArn": TASK_DEF, "lastStatus": status,
                       "containers": containers or [], **extra}], "failures": []}  # fmt: skip


def _containers(*codes: int | None) -> list[dict[str, Any]]:
    names = ("fetch", "export", "upload")
    return [{"name": n, **({} if c is None else {"exitCode": c})} for n, c in zip(names, codes, strict=True)]


_DEFINITION = {
    "taskDefinition": {
        "containerDefinitions": [
            {"name": n, "logConfiguration": {"logDriver": "awslogs", "options": {
                "awslogs-group": "devCompileLogs", "awslogs-stream-prefix": n, "awslogs-region": REGION}}}
            for n in ("fetch", "export", "upload")
        ]
    }
}  # fmt: skip


def _ecs(*responses: dict[str, Any], definition: bool = True) -> tuple[Any, Stubber]:
    client = boto3.client("ecs", region_name=REGION)
    stub = Stubber(client)
    for response in responses:
        stub.add_response("describe_tasks", response, {"cluster": CLUSTER, "tasks": [TASK]})
    if definition:
        stub.add_response("describe_task_definition", _DEFINITION, {"taskDefinition": TASK_DEF})
    return client, stub


def _wait(ecs: Any, s3: Any = None, *, deadline: int = 3600) -> tuple[Any, RecordingClock]:
    clock = RecordingClock()
    clients = {"ecs": ecs, "s3": s3}
    ctx = Context(clients=lambda service, region: clients[service], clock=clock, stdout=io.StringIO())
    outcome = wait_for_compile(
        ctx, env="dev", region=REGION, cluster=CLUSTER, task_arn=TASK, artifact_uri=ARTIFACT,
        serving=_serving(), deadline_seconds=deadline, timed_out_exit_code=124, poll_seconds=30,
    )  # fmt: skip
    return outcome, clock


@pytest.fixture
def s3() -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket="cdk-neuron-dev-models")
        yield client


def _put_manifest(s3: Any, **replace: Any) -> None:
    data = manifest_data(artifact_uri=ARTIFACT, **replace)
    data["model"]["id"] = "meta-llama/Llama-3.2-3B-Instruct"
    s3.put_object(Bucket="cdk-neuron-dev-models", Key="compiled/llama-3.2-3b/run-7/cdk-neuron-artifact.json",
                  Body=json.dumps(data).encode())  # fmt: skip


def test_a_compile_that_succeeds_is_read_back_and_named_for_use_artifact(s3: Any) -> None:
    _put_manifest(s3)
    ecs, stub = _ecs(_task("RUNNING"), _task("RUNNING"), _task("STOPPED", _containers(0, 0, 0)))
    with stub:
        outcome, clock = _wait(ecs, s3)
    assert clock.calls == [30, 30]  # polled until STOPPED, never past it
    assert outcome.status == "succeeded"
    assert [(c.name, c.exit_code, c.timed_out) for c in outcome.containers] == [
        ("fetch", 0, False), ("export", 0, False), ("upload", 0, False)
    ]  # fmt: skip
    assert outcome.manifest is not None and "compiled in 25.2 min" in outcome.manifest
    assert outcome.next_command == f"cdk-neuron use-artifact --env dev {ARTIFACT}"
    assert outcome.containers[1].logs_command == (
        f"aws logs tail devCompileLogs --region {REGION} --log-stream-names export/export/0123456789abcdef"
    )


def test_a_step_stopped_by_its_timeout_is_named_timed_out_with_its_logs() -> None:
    ecs, stub = _ecs(
        _task("STOPPED", _containers(0, 124, None), stoppedReason="Essential container in task exited")
    )
    with stub:
        outcome, _ = _wait(ecs)
    assert outcome.status == "timed out"
    export = outcome.containers[1]
    assert (export.exit_code, export.timed_out) == (124, True)
    assert outcome.containers[2].exit_code is None
    report = Report()
    render_outcome(outcome, report)
    text = io.StringIO()
    render(report, "text", text)
    assert "export: exit 124 (timed out)" in text.getvalue()
    assert "upload: did not run" in text.getvalue()
    assert "log-stream-names export/export/0123456789abcdef" in text.getvalue()


def test_a_failed_step_fails_the_compile_and_nothing_is_read_back() -> None:
    ecs, stub = _ecs(_task("STOPPED", _containers(0, 1, None)))
    with stub:
        outcome, _ = _wait(ecs)  # no s3 client: reading it back would fail the test
    assert (outcome.status, outcome.manifest, outcome.next_command) == ("failed", None, None)


def test_a_manifest_that_no_longer_fits_the_fleet_fails_naming_the_field(s3: Any) -> None:
    _put_manifest(s3, shape={"batch_size": 4, "sequence_length": 4096, "tensor_parallel": 2, "dtype": "bf16"})
    ecs, stub = _ecs(_task("STOPPED", _containers(0, 0, 0)))
    with stub:
        outcome, _ = _wait(ecs, s3)
    assert outcome.status == "failed" and outcome.next_command is None
    assert [m.split("=")[0] for m in outcome.mismatches] == ["shape.batch_size"]


def test_an_upload_that_left_no_manifest_fails(s3: Any) -> None:
    ecs, stub = _ecs(_task("STOPPED", _containers(0, 0, 0)))
    with stub:
        outcome, _ = _wait(ecs, s3)
    assert outcome.status == "failed"
    assert "could not be read (NoSuchKey)" in outcome.mismatches[0]


def test_a_task_still_running_at_its_deadline_is_lost_with_the_stop_command() -> None:
    ecs, stub = _ecs(_task("RUNNING"), _task("RUNNING"), _task("RUNNING"), definition=False)
    with stub:
        outcome, clock = _wait(ecs, deadline=60)
    assert clock.calls == [30, 30]
    assert outcome.status == "lost"
    assert (
        outcome.stopped_reason is not None
        and f"aws ecs stop-task --region {REGION}" in outcome.stopped_reason
    )


def test_a_task_ecs_no_longer_knows_is_lost() -> None:
    missing = {"tasks": [], "failures": [{"arn": TASK, "reason": "MISSING"}]}
    ecs, stub = _ecs(missing, definition=False)
    with stub:
        outcome, _ = _wait(ecs)
    assert outcome.status == "lost" and "MISSING" in str(outcome.stopped_reason)


def test_a_step_killed_after_its_timeout_or_out_of_memory_says_so() -> None:
    """GNU timeout exits 137 when it had to SIGKILL a step that ignored SIGTERM: not 124, so not "timed out",
    and named as killed (which an out-of-memory kill also is) rather than as a plain failure."""
    ecs, stub = _ecs(_task("STOPPED", _containers(0, 137, None)))
    with stub:
        outcome, _ = _wait(ecs)
    assert outcome.status == "failed"
    export = outcome.containers[1]
    assert (export.exit_code, export.timed_out, export.killed) == (137, False, True)
    report = Report()
    render_outcome(outcome, report)
    text = io.StringIO()
    render(report, "text", text)
    assert "export: exit 137 (killed: its budget's SIGKILL, or out of memory)" in text.getvalue()


def test_a_manifest_denied_names_both_causes(s3: Any) -> None:
    from botocore.stub import Stubber as S3Stubber

    denied = boto3.client("s3", region_name=REGION)
    s3_stub = S3Stubber(denied)
    s3_stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
    ecs, stub = _ecs(_task("STOPPED", _containers(0, 0, 0)))
    with stub, s3_stub:
        outcome, _ = _wait(ecs, denied)
    assert outcome.status == "failed"
    [problem] = outcome.mismatches
    assert "(AccessDenied): the upload did not finish, or this principal lacks s3:GetObject" in problem
    assert "s3:ListBucket, without which S3 says 403 for a missing key" in problem
