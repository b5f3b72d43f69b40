"""The daily loop after `submit`: status --watch, logs, cancel, terminate, list, and where a failure logged.

botocore's Stubber answers Batch, CloudWatch Logs and CloudFormation with the exact requests each
command must make: moto runs multi-node jobs without per-node log streams or log configurations.
The wait between polls is a recorded no-op.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cli_support import RecordingClock

from cdk_neuron.cli import jobs
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main

REGION = "us-east-1"
QUEUE_ARN = f"arn:aws:batch:{REGION}:123456789012:job-queue/dev-training"
JOB_DEF = f"arn:aws:batch:{REGION}:123456789012:job-definition/dev-training:1"
LOG_GROUP = "dev-Training-ClusterJobLogs9F2CD2D0-AbCdEf123456"
IMAGE = f"763104351884.dkr.ecr.{REGION}.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
JOB = "0a1b2c3d-4e5f-6789-abcd-ef0123456789"

DEV = {
    "region": REGION,
    "az_ids": ["use1-az6", "use1-az4"],
    "removal_policy": "destroy",
    "training": {
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "plan": {"nodes": 2, "tensor_parallel": 32},
        "job_image": IMAGE,
    },
    "serving": {
        "instance_type": "inf2.xlarge",
        "model": {
            "model_id": "meta-llama/Llama-3.2-3B-Instruct",
            "parameters": 3_210_000_000,
            "tensor_parallel": 2,
            "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
        },
    },
}


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps(
            {"context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": {"dev": DEV}}}
        )
    )
    return str(path)


_CLIENTS: dict[str, Any] = {}


def stubbed(service: str) -> tuple[Any, Stubber]:
    if service not in _CLIENTS:
        _CLIENTS[service] = boto3.client(
            service, region_name=REGION, aws_access_key_id="stub", aws_secret_access_key="stub"
        )
    return _CLIENTS[service], Stubber(_CLIENTS[service])


def factory(**clients: Any) -> Callable[[str, str], Any]:
    def make(service: str, region: str) -> Any:
        assert region == REGION
        return clients[service]

    return make


def parent(status: str, *, nodes: int = 2, reason: str | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {
        "jobId": JOB,
        "jobName": "dev-train-20261201T000000Z",
        "jobArn": f"arn:aws:batch:{REGION}:123456789012:job/{JOB}",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "jobDefinition": JOB_DEF,
        "startedAt": 1_796_000_000_000,
        "nodeProperties": {
            "numNodes": nodes,
            "mainNode": 0,
            "nodeRangeProperties": [
                {
                    "targetNodes": f"0:{nodes - 1}",
                    "container": {
                        "image": IMAGE,
                        "logConfiguration": {
                            "logDriver": "awslogs",
                            "options": {"awslogs-group": LOG_GROUP, "awslogs-stream-prefix": "training"},
                        },
                    },
                }
            ],
        },
    }
    if reason:
        job["statusReason"] = reason
    return job


def child(index: int, status: str, *, exit_code: int | None = None, stream: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {}
    if stream:
        container["logStreamName"] = f"training/default/{JOB}-{index}"
    if exit_code is not None:
        container["exitCode"] = exit_code
        container["reason"] = "Essential container in task exited" if exit_code else None
    container = {k: v for k, v in container.items() if v is not None}
    return {
        "jobId": f"{JOB}#{index}",
        "jobName": "dev-train-20261201T000000Z",
        "jobArn": f"arn:aws:batch:{REGION}:123456789012:job/{JOB}#{index}",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "jobDefinition": JOB_DEF,
        "startedAt": 1_796_000_000_000,
        "nodeDetails": {"nodeIndex": index, "isMainNode": index == 0},
        "container": container,
    }


def expect_status(stub: Stubber, state: str, nodes: list[dict[str, Any]], reason: str | None = None) -> None:
    stub.add_response(
        "describe_jobs", {"jobs": [parent(state, nodes=len(nodes), reason=reason)]}, {"jobs": [JOB]}
    )
    stub.add_response("describe_jobs", {"jobs": nodes}, {"jobs": [f"{JOB}#{i}" for i in range(len(nodes))]})


# --------------------------------------------------------------------------------------------
# status: failures name the node, the reason, and the exact log group and stream
# --------------------------------------------------------------------------------------------


def test_failed_status_names_the_failing_node_and_its_log(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    expect_status(
        stub,
        "FAILED",
        [child(0, "FAILED", exit_code=137), child(1, "FAILED", exit_code=1)],
        reason="Essential container in task exited",
    )
    with stub:
        assert main(["status", JOB, "--config", config, "--json"], clients=factory(batch=batch)) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    # Node 0 was killed (137) when the job failed; the first non-zero exit is the cause.
    assert failure == {
        "node_index": 0,
        "reason": "Essential container in task exited",
        "exit_code": 137,
        "log_group": LOG_GROUP,
        "log_stream": f"training/default/{JOB}-0",
        "logs_command": f"cdk-neuron logs {JOB} --node 0 --config {config} --env dev",
    }


def test_failure_table_prints_the_log_location_and_the_command(
    config: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    batch, stub = stubbed("batch")
    expect_status(
        stub, "FAILED", [child(0, "SUCCEEDED", exit_code=0), child(1, "FAILED", exit_code=1)], "Node 1"
    )
    with stub:
        assert main(["status", JOB, "--config", config], clients=factory(batch=batch)) == 1
    out = capsys.readouterr().out
    assert "FAILED on node 1" in out
    assert LOG_GROUP in out and f"training/default/{JOB}-1" in out
    assert f"  cdk-neuron logs {JOB} --node 1 --config {config} --env dev\n" in out


def test_running_status_has_no_failure(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = stubbed("batch")
    expect_status(stub, "RUNNING", [child(0, "RUNNING"), child(1, "RUNNING")])
    with stub:
        assert main(["status", JOB, "--config", config, "-o", "json"], clients=factory(batch=batch)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failure"] is None
    assert [n["log_group"] for n in doc["nodes"]] == [LOG_GROUP, LOG_GROUP]


# --------------------------------------------------------------------------------------------
# status --watch
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("final", "code"), [("SUCCEEDED", 0), ("FAILED", 1)])
def test_watch_prints_transitions_and_exits_with_the_outcome(
    config: str, capsys: pytest.CaptureFixture[str], final: str, code: int
) -> None:
    batch, stub = stubbed("batch")
    expect_status(stub, "RUNNABLE", [child(0, "RUNNABLE", stream=False), child(1, "RUNNABLE", stream=False)])
    expect_status(stub, "RUNNABLE", [child(0, "RUNNABLE", stream=False), child(1, "RUNNABLE", stream=False)])
    expect_status(stub, "RUNNING", [child(0, "RUNNING"), child(1, "STARTING")])
    ends = [child(0, final, exit_code=0 if final == "SUCCEEDED" else 1), child(1, final, exit_code=0)]
    expect_status(stub, final, ends)
    sleeps = RecordingClock()
    with stub:
        result = main(
            ["status", "--watch", "--interval", "20", JOB, "--config", config, "--output", "text"],
            context=Context(clients=factory(batch=batch), clock=sleeps),
        )
    stub.assert_no_pending_responses()
    assert result == code
    assert sleeps.calls == [20, 20, 20]
    lines = capsys.readouterr().out.splitlines()
    # Each transition is stamped with the clock's time when the poll saw it: 20 s apart here.
    assert [line for line in lines if line.startswith("2026-12-01T15:00:40+00:00  ")] == [
        "2026-12-01T15:00:40+00:00  job: RUNNABLE -> RUNNING",
        "2026-12-01T15:00:40+00:00  node 0: RUNNABLE -> RUNNING",
        "2026-12-01T15:00:40+00:00  node 1: RUNNABLE -> STARTING",
    ]
    changes = [line.split("  ", 1)[1] for line in lines if line[:4].isdigit() and "  " in line]
    assert changes == [
        "job: RUNNABLE",
        "node 0: RUNNABLE",
        "node 1: RUNNABLE",
        "job: RUNNABLE -> RUNNING",
        "node 0: RUNNABLE -> RUNNING",
        "node 1: RUNNABLE -> STARTING",
        f"job: RUNNING -> {final}",
        f"node 0: RUNNING -> {final}",
        f"node 1: STARTING -> {final}",
    ]


def test_watch_json_is_one_document_with_the_transitions(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    expect_status(stub, "SUCCEEDED", [child(0, "SUCCEEDED", exit_code=0), child(1, "SUCCEEDED", exit_code=0)])
    with stub:
        code = main(["--json", "status", "--watch", JOB, "--config", config], clients=factory(batch=batch))
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["to"] for t in doc["transitions"]] == ["SUCCEEDED"] * 3


@pytest.mark.parametrize("interval", ["1", "301"])
def test_watch_interval_is_bounded(config: str, capsys: pytest.CaptureFixture[str], interval: str) -> None:
    def no_aws(service: str, region: str) -> Any:
        raise AssertionError("refused before any AWS call")

    assert main(["status", JOB, "--watch", "--interval", interval, "--config", config], clients=no_aws) == 2
    assert f"--interval={float(interval)}: use 5..300 seconds" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# logs
# --------------------------------------------------------------------------------------------


def expect_events(stub: Stubber, stream: str, token: str | None, messages: list[str], following: str) -> None:
    params: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamName": stream, "startFromHead": True}
    if token:
        params["nextToken"] = token
    events = [
        {"timestamp": 1_796_000_000_000 + i, "message": m, "ingestionTime": 1} for i, m in enumerate(messages)
    ]
    stub.add_response(
        "get_log_events", {"events": events, "nextForwardToken": following, "nextBackwardToken": "b"}, params
    )


def test_logs_of_any_node(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, batch_stub = stubbed("batch")
    logs, logs_stub = stubbed("logs")
    batch_stub.add_response("describe_jobs", {"jobs": [parent("RUNNING")]}, {"jobs": [JOB]})
    batch_stub.add_response("describe_jobs", {"jobs": [child(1, "RUNNING")]}, {"jobs": [f"{JOB}#1"]})
    stream = f"training/default/{JOB}-1"
    expect_events(logs_stub, stream, None, ["step 1 loss 2.31", "step 2 loss 2.12"], "f/1")
    expect_events(logs_stub, stream, "f/1", ["step 3 loss 2.05"], "f/2")
    expect_events(logs_stub, stream, "f/2", [], "f/2")
    with batch_stub, logs_stub:
        code = main(["logs", JOB, "--node", "1", "--config", config], clients=factory(batch=batch, logs=logs))
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == "step 1 loss 2.31\nstep 2 loss 2.12\nstep 3 loss 2.05\n"
    assert captured.err == f"cdk-neuron: node 1 of job {JOB}: log group {LOG_GROUP}, log stream {stream}\n"


def test_logs_follow_until_the_job_ends(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The main node by default; new events are printed until the node's job has ended and is drained."""
    batch, batch_stub = stubbed("batch")
    logs, logs_stub = stubbed("logs")
    batch_stub.add_response("describe_jobs", {"jobs": [parent("STARTING")]}, {"jobs": [JOB]})
    batch_stub.add_response(
        "describe_jobs", {"jobs": [child(0, "STARTING", stream=False)]}, {"jobs": [f"{JOB}#0"]}
    )
    batch_stub.add_response("describe_jobs", {"jobs": [child(0, "RUNNING")]}, {"jobs": [f"{JOB}#0"]})
    batch_stub.add_response(
        "describe_jobs", {"jobs": [child(0, "FAILED", exit_code=1)]}, {"jobs": [f"{JOB}#0"]}
    )
    stream = f"training/default/{JOB}-0"
    expect_events(logs_stub, stream, None, ["compiling"], "a")
    expect_events(logs_stub, stream, "a", [], "a")
    expect_events(logs_stub, stream, "a", ["Traceback: out of device memory"], "b")
    expect_events(logs_stub, stream, "b", [], "b")
    sleeps = RecordingClock()
    with batch_stub, logs_stub:
        code = main(
            ["logs", JOB, "--follow", "--config", config],
            context=Context(clients=factory(batch=batch, logs=logs), clock=sleeps),
        )
    batch_stub.assert_no_pending_responses()
    logs_stub.assert_no_pending_responses()
    assert code == 1  # the node failed
    assert capsys.readouterr().out == "compiling\nTraceback: out of device memory\n"
    assert sleeps.calls == [jobs.POLL_SECONDS, jobs.POLL_SECONDS]


def test_logs_json(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, batch_stub = stubbed("batch")
    logs, logs_stub = stubbed("logs")
    batch_stub.add_response("describe_jobs", {"jobs": [parent("SUCCEEDED")]}, {"jobs": [JOB]})
    batch_stub.add_response(
        "describe_jobs", {"jobs": [child(0, "SUCCEEDED", exit_code=0)]}, {"jobs": [f"{JOB}#0"]}
    )
    expect_events(logs_stub, f"training/default/{JOB}-0", None, ["done"], "z")
    expect_events(logs_stub, f"training/default/{JOB}-0", "z", [], "z")
    with batch_stub, logs_stub:
        code = main(
            ["logs", f"{JOB}#0", "--json", "--config", config], clients=factory(batch=batch, logs=logs)
        )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["node_index"], doc["log_group"], doc["status"]) == (0, LOG_GROUP, "SUCCEEDED")
    assert [e["message"] for e in doc["events"]] == ["done"]


def test_logs_refuses_a_node_the_job_does_not_have(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("RUNNING")]}, {"jobs": [JOB]})
    with stub:
        assert main(["logs", JOB, "--node", "2", "--config", config], clients=factory(batch=batch)) == 2
    assert capsys.readouterr().err == f"cdk-neuron: --node=2: job {JOB} has nodes 0..1\n"


def test_logs_before_the_container_starts_says_how_to_wait(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("RUNNABLE")]}, {"jobs": [JOB]})
    stub.add_response("describe_jobs", {"jobs": [child(0, "RUNNABLE", stream=False)]}, {"jobs": [f"{JOB}#0"]})
    with stub:
        assert main(["logs", JOB, "--config", config], clients=factory(batch=batch, logs=None)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no log stream yet (RUNNABLE)" in err
    assert f"cdk-neuron logs {JOB} --node 0 --follow --config {config} --env dev" in err


def test_single_node_jobs_log_to_the_default_group(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, batch_stub = stubbed("batch")
    logs, logs_stub = stubbed("logs")
    job = {
        "jobId": JOB, "jobName": "one", "jobQueue": QUEUE_ARN, "status": "SUCCEEDED", "jobDefinition": JOB_DEF,
        "startedAt": 1, "container": {"logStreamName": "default/x/1"},
    }  # fmt: skip
    batch_stub.add_response("describe_jobs", {"jobs": [job]}, {"jobs": [JOB]})
    logs_stub.add_response(
        "get_log_events",
        {"events": [], "nextForwardToken": "t"},
        {"logGroupName": jobs.DEFAULT_LOG_GROUP, "logStreamName": "default/x/1", "startFromHead": True},
    )
    logs_stub.add_response(
        "get_log_events",
        {"events": [], "nextForwardToken": "t"},
        {
            "logGroupName": "/aws/batch/job",
            "logStreamName": "default/x/1",
            "startFromHead": True,
            "nextToken": "t",
        },
    )
    with batch_stub, logs_stub:
        assert main(["logs", JOB, "--config", config], clients=factory(batch=batch, logs=logs)) == 0
    logs_stub.assert_no_pending_responses()


# --------------------------------------------------------------------------------------------
# cancel and terminate
# --------------------------------------------------------------------------------------------


def test_cancel_a_queued_job(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("RUNNABLE")]}, {"jobs": [JOB]})
    stub.add_response("cancel_job", {}, {"jobId": JOB, "reason": "wrong learning rate"})
    with stub:
        code = main(
            ["cancel", JOB, "--reason", "wrong learning rate", "--config", config, "--json"],
            clients=factory(batch=batch),
        )
    stub.assert_no_pending_responses()
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["command"], doc["status_before"], doc["requested"]) == ("cancel", "RUNNABLE", True)


def test_cancel_refuses_a_running_job_and_names_terminate(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("RUNNING")]}, {"jobs": [JOB]})
    with stub:
        assert main(["cancel", JOB, "--config", config], clients=factory(batch=batch)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.endswith(f"stop it with: cdk-neuron terminate {JOB} --config {config} --env dev\n")


def test_terminate_a_running_job_with_the_default_reason(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("RUNNING")]}, {"jobs": [JOB]})
    stub.add_response("terminate_job", {}, {"jobId": JOB, "reason": "Terminated with cdk-neuron terminate"})
    with stub:
        assert main(["terminate", JOB, "--config", config, "-o", "text"], clients=factory(batch=batch)) == 0
    stub.assert_no_pending_responses()
    out = capsys.readouterr().out
    assert "outcome: requested" in out and f"cdk-neuron status {JOB} --config {config} --env dev" in out


def test_stopping_an_ended_job_does_nothing(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = stubbed("batch")
    stub.add_response("describe_jobs", {"jobs": [parent("SUCCEEDED")]}, {"jobs": [JOB]})
    with stub:
        assert main(["terminate", JOB, "--config", config, "--json"], clients=factory(batch=batch)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["requested"] is False and "already ended (SUCCEEDED)" in doc["outcome"]


def test_cancel_acts_on_the_whole_job(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cancel", f"{JOB}#1", "--config", config], clients=factory()) == 2
    assert f"give {JOB}" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def expect_stack(stub: Stubber) -> None:
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "dev-Training",
                    "CreationTime": "2026-11-30T00:00:00Z",
                    "StackStatus": "CREATE_COMPLETE",
                    "Outputs": [
                        {"OutputKey": "JobQueueArn", "OutputValue": QUEUE_ARN},
                        {"OutputKey": "JobDefinitionArn", "OutputValue": JOB_DEF},
                    ],
                }
            ]
        },
        {"StackName": "dev-Training"},
    )


def summary(job_id: str, status: str, created: int) -> dict[str, Any]:
    return {"jobId": job_id, "jobName": f"run-{job_id}", "status": status, "createdAt": created,
            "nodeProperties": {"numNodes": 2}, "jobArn": f"arn:aws:batch:{REGION}:123456789012:job/{job_id}"}  # fmt: skip


def test_list_one_state_of_the_queue_submit_uses(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    cloudformation, stack = stubbed("cloudformation")
    batch, stub = stubbed("batch")
    expect_stack(stack)
    stub.add_response(
        "list_jobs",
        {"jobSummaryList": [summary("a", "RUNNING", 1)], "nextToken": "n"},
        {"jobQueue": QUEUE_ARN, "jobStatus": "RUNNING", "maxResults": 50},
    )
    stub.add_response(
        "list_jobs",
        {"jobSummaryList": [summary("b", "RUNNING", 2)]},
        {"jobQueue": QUEUE_ARN, "jobStatus": "RUNNING", "maxResults": 50, "nextToken": "n"},
    )
    with stack, stub:
        code = main(
            ["list", "--state", "RUNNING", "--config", config, "--json"],
            clients=factory(batch=batch, cloudformation=cloudformation),
        )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job_queue"] == QUEUE_ARN and doc["states"] == ["RUNNING"]
    assert [j["job_id"] for j in doc["jobs"]] == ["b", "a"]  # newest first
    assert doc["jobs"][0]["num_nodes"] == 2


def test_list_active_asks_every_unfinished_state(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    cloudformation, stack = stubbed("cloudformation")
    batch, stub = stubbed("batch")
    expect_stack(stack)
    for state in jobs.ACTIVE_STATES:
        found = [summary(state.lower(), state, 10)] if state in ("RUNNABLE", "RUNNING") else []
        stub.add_response(
            "list_jobs",
            {"jobSummaryList": found},
            {"jobQueue": QUEUE_ARN, "jobStatus": state, "maxResults": 2},
        )
    with stack, stub:
        code = main(
            ["list", "--limit", "2", "--config", config, "-o", "text"],
            clients=factory(batch=batch, cloudformation=cloudformation),
        )
    stub.assert_no_pending_responses()
    assert code == 0
    out = capsys.readouterr().out
    assert "runnable\trun-runnable\tRUNNABLE" in out and "running\trun-running\tRUNNING" in out
