"""``cdk-neuron compile --env prod``: prod's 70B compiles on its training cluster as a Batch job.

From the app's own cdk.json (prod: ``compilation.runs_on training-cluster``), with botocore's Stubber for
CloudFormation (the pinned job queue and job definition) and Batch (SubmitJob with the request as
``ecsPropertiesOverride``, DescribeJobs to the end), moto for the manifest read back.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from cli_support import RecordingClock
from moto import mock_aws
from test_artifact_manifest import manifest_data

from cdk_neuron import catalog, timeouts
from cdk_neuron.cli.compile_batch import job_name
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.compilation.job import HostCompile
from cdk_support import use_fake_aws_credentials

REGION = "us-west-2"
CONFIG = str(Path(__file__).resolve().parent.parent / "cdk.json")
QUEUE = f"arn:aws:batch:{REGION}:111111111111:job-queue/CompileJobQueue-abc"
DEFINITION = f"arn:aws:batch:{REGION}:111111111111:job-definition/CompileJobDefinition-abc:1"
JOB_ID = "0123abcd-0000-4000-8000-000000000001"
ARTIFACT = "s3://cdk-neuron-prod-models/compiled/llama-3-70b/run-9/"
ARGS = [
    "compile", "--config", CONFIG, "--env", "prod", "--json", "--source", "checkpoint:run-9/step-4000",
    "--step", "4000", "--source-tp", "32", "--source-pp", "8", "--artifact-uri", ARTIFACT,
]  # fmt: skip


def _cloudformation() -> tuple[Any, Stubber]:
    client = boto3.client("cloudformation", region_name=REGION)
    stub = Stubber(client)
    for logical, physical in (("CompileJobQueue", QUEUE), ("CompileJobDefinition", DEFINITION)):
        stub.add_response(
            "describe_stack_resource",
            {
                "StackResourceDetail": {
                    "LogicalResourceId": logical,
                    "PhysicalResourceId": physical,
                    "ResourceType": "AWS::Batch::X",
                    "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            },
            {"StackName": "prod-Training", "LogicalResourceId": logical},
        )
    return client, stub


class _StubbedBatch:
    """A real boto3 Batch client under botocore's Stubber: SubmitJob (its override captured as the client
    sent it, for the assertions; Stubber matches the rest), DescribeJobDefinitions, then DescribeJobs
    answering ``states`` in order."""

    def __init__(self, *states: dict[str, Any]) -> None:
        self.client = boto3.client("batch", region_name=REGION)
        self.stub = Stubber(self.client)
        self.submitted: dict[str, Any] = {}
        self.client.meta.events.register(
            "provide-client-params.batch.SubmitJob", lambda params, **_: self.submitted.update(params)
        )
        options = {"awslogs-group": "prod-compile-logs", "awslogs-region": REGION}
        containers = [
            {"name": n, "image": "x", "logConfiguration": {"logDriver": "awslogs", "options": {**options, "awslogs-stream-prefix": n}}}
            for n in ("fetch", "export", "upload")
        ]  # fmt: skip
        self.stub.add_response(
            "describe_job_definitions",
            {"jobDefinitions": [{"jobDefinitionName": "d", "jobDefinitionArn": DEFINITION, "revision": 1,
                                 "type": "container", "ecsProperties": {"taskProperties": [{"containers": containers}]}}]},
            {"jobDefinitions": [DEFINITION]},
        )  # fmt: skip
        self.stub.add_response(
            "submit_job",
            {"jobArn": f"arn:aws:batch:{REGION}:111111111111:job/{JOB_ID}", "jobName": "cdk-neuron-compile-prod",
             "jobId": JOB_ID},
            {"jobName": "cdk-neuron-compile-prod", "jobQueue": QUEUE, "jobDefinition": DEFINITION,
             "ecsPropertiesOverride": ANY, "propagateTags": True},
        )  # fmt: skip
        for state in states:
            self.stub.add_response("describe_jobs", {"jobs": [state]}, {"jobs": [JOB_ID]})


def _job(status: str, exits: tuple[int | None, ...] = (), attempts: int = 0) -> dict[str, Any]:
    containers = [
        {
            "name": name,
            **({"exitCode": code} if code is not None else {}),
            "logStreamName": f"{name}/{name}/task-1",
            "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": "prod-compile-logs"}},
        }
        for name, code in zip(("fetch", "export", "upload"), exits or (None, None, None), strict=True)
    ]
    return {
        "jobName": "cdk-neuron-compile-prod", "jobId": JOB_ID, "jobQueue": QUEUE, "status": status,
        "startedAt": 1, "jobDefinition": DEFINITION, "ecsProperties": {"taskProperties": [{"containers": containers}]},
        "attempts": [{"statusReason": "Host EC2 (instance i-0123) terminated."} for _ in range(attempts)],
    }  # fmt: skip


def _run(
    batch: _StubbedBatch, *extra: str, s3: Any = None
) -> tuple[int, dict[str, Any], str, RecordingClock]:
    cloudformation, stub = _cloudformation()
    out, err, clock = io.StringIO(), io.StringIO(), RecordingClock()
    clients = {"cloudformation": cloudformation, "batch": batch.client, "s3": s3}
    with stub, batch.stub:
        code = main(
            [*ARGS, *extra],
            context=Context(
                clients=lambda service, region: clients[service], clock=clock, stdout=out, stderr=err
            ),
        )
    stub.assert_no_pending_responses()
    batch.stub.assert_no_pending_responses()
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue(), clock


def test_prod_submits_a_batch_job_with_the_fleets_shape_to_its_compile_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    batch = _StubbedBatch()
    code, doc, err, _ = _run(batch)
    assert code == ExitStatus.OK, err
    sent = batch.submitted
    assert (sent["jobQueue"], sent["jobDefinition"], sent["jobName"]) == (
        QUEUE,
        DEFINITION,
        "cdk-neuron-compile-prod",
    )
    [task] = sent["ecsPropertiesOverride"]["taskProperties"]
    env = {c["name"]: {e["name"]: e["value"] for e in c["environment"]} for c in task["containers"]}
    export = env["export"]
    # prod's fleet: Llama-3-70B at TP 24, batch 4 x 4096, bf16, on inf2.48xlarge (target trn1).
    assert (export["TENSOR_PARALLEL"], export["BATCH_SIZE"], export["SEQUENCE_LENGTH"], export["DTYPE"]) == (
        "24", "4", "4096", "bf16",
    )  # fmt: skip
    assert (export["EXPORT_INSTANCE_TYPE"], export["EXPORT_TARGET"]) == ("inf2", "trn1")
    # The training checkpoint converts with its own layout, on prod's trn1 cluster's backend.
    assert (export["CONVERT_TP"], export["CONVERT_PP"], export["CONVERT_HW_BACKEND"]) == ("32", "8", "trn1")
    assert env["upload"]["ARTIFACT_URI"] == ARTIFACT
    assert doc["runs_on"] == "training-cluster" and doc["job_id"] == JOB_ID
    assert doc["task_arn"].endswith(f"job/{JOB_ID}") and doc["cluster"] == QUEUE
    assert f"aws batch describe-jobs --region {REGION} --jobs {JOB_ID}" == doc["wait_command"]
    assert doc["logs_command"] == (
        f"aws logs tail prod-compile-logs --region {REGION} --log-stream-name-prefix export/export/ --follow"
    )


def test_wait_follows_a_job_that_waits_for_a_node_then_reads_the_manifest_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(
            Bucket="cdk-neuron-prod-models", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        data = manifest_data(
            artifact_uri=ARTIFACT,
            model={"id": "meta-llama/Meta-Llama-3-70B-Instruct", "revision": None},
            shape={"batch_size": 4, "sequence_length": 4096, "tensor_parallel": 24, "dtype": "bf16"},
        )
        s3.put_object(
            Bucket="cdk-neuron-prod-models", Key="compiled/llama-3-70b/run-9/cdk-neuron-artifact.json",
            Body=json.dumps(data).encode(),
        )  # fmt: skip
        batch = _StubbedBatch(_job("RUNNABLE"), _job("RUNNING"), _job("SUCCEEDED", (0, 0, 0)))
        code, doc, err, clock = _run(batch, "--wait", s3=s3)
    assert "runnable (waiting for a compile node)" in err
    assert f"submitted arn:aws:batch:{REGION}:111111111111:job/{JOB_ID} (job id {JOB_ID})" in err
    outcome = doc["outcome"]
    assert outcome["status"] == "succeeded", (outcome, err)
    assert clock.calls == [30, 30]
    assert outcome["next_command"] == f"cdk-neuron use-artifact --env prod {ARTIFACT}"
    assert outcome["deadline_seconds"] == timeouts.compile_job_seconds(
        HostCompile.on(catalog.get_instance("trn1.32xlarge")).max_weights_gib
    )
    assert outcome["containers"][1]["logs_command"] == (
        f"aws logs tail prod-compile-logs --region {REGION} --log-stream-names export/export/task-1"
    )
    assert code == ExitStatus.OK


def test_a_step_stopped_by_its_budget_is_reported_timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    batch = _StubbedBatch(_job("FAILED", (0, 124, 1)))
    code, doc, _, _ = _run(batch, "--wait")
    assert code == ExitStatus.FAILED
    assert doc["outcome"]["status"] == "timed out"
    assert [c["timed_out"] for c in doc["outcome"]["containers"]] == [False, True, False]


def test_a_job_running_past_its_budget_is_reported_lost_with_the_command_that_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    host = HostCompile.on(catalog.get_instance("trn1.32xlarge"))
    polls = timeouts.compile_job_seconds(host.max_weights_gib) // 30 + 2
    batch = _StubbedBatch(*(_job("RUNNING") for _ in range(polls)))
    code, doc, _, _ = _run(batch, "--wait")
    assert code == ExitStatus.FAILED
    assert doc["outcome"]["status"] == "lost"
    assert f"aws batch terminate-job --region {REGION} --job-id {JOB_ID}" in doc["outcome"]["stopped_reason"]


def test_job_names_keep_to_batchs_characters() -> None:
    assert job_name("prod") == "cdk-neuron-compile-prod"
    assert job_name("eu.west/1") == "cdk-neuron-compile-eu-west-1"
    assert len(job_name("x" * 300)) == 128


def test_a_retry_after_a_lost_host_gets_a_budget_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempt 1 runs most of its budget, its host is lost, the job waits and runs again past where the first
    attempt's budget would have ended: the second attempt's own budget holds, and the job succeeds."""
    use_fake_aws_credentials(monkeypatch, REGION)
    host = HostCompile.on(catalog.get_instance("trn1.32xlarge"))
    budget = timeouts.compile_job_seconds(host.max_weights_gib)
    near = budget // 30 - 1  # polls of attempt 1: just inside its budget
    states = [
        *(_job("RUNNING") for _ in range(near)),
        _job("RUNNABLE", attempts=1),
        _job("STARTING", attempts=1),
        *(_job("RUNNING", attempts=1) for _ in range(near)),
        _job("SUCCEEDED", (0, 0, 0), attempts=1),
    ]
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(
            Bucket="cdk-neuron-prod-models", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        data = manifest_data(
            artifact_uri=ARTIFACT,
            model={"id": "meta-llama/Meta-Llama-3-70B-Instruct", "revision": None},
            shape={"batch_size": 4, "sequence_length": 4096, "tensor_parallel": 24, "dtype": "bf16"},
        )
        s3.put_object(
            Bucket="cdk-neuron-prod-models", Key="compiled/llama-3-70b/run-9/cdk-neuron-artifact.json",
            Body=json.dumps(data).encode(),
        )  # fmt: skip
        code, doc, err, clock = _run(_StubbedBatch(*states), "--wait", s3=s3)
    assert sum(clock.calls) > budget  # the whole wait outlasted one budget...
    assert doc["outcome"]["status"] == "succeeded", err  # ...and no attempt did
    assert code == ExitStatus.OK


def test_a_job_that_never_starts_is_reported_still_queued_not_terminated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cdk_neuron.cli.compile_batch import MAX_QUEUE_SECONDS

    use_fake_aws_credentials(monkeypatch, REGION)
    waiting = {**_job("RUNNABLE"), "statusReason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"}
    polls = int(MAX_QUEUE_SECONDS // 30) + 1
    code, doc, _, _ = _run(_StubbedBatch(*(waiting for _ in range(polls))), "--wait")
    assert code == ExitStatus.FAILED and doc["outcome"]["status"] == "lost"
    reason = doc["outcome"]["stopped_reason"]
    assert reason.startswith(
        "still RUNNABLE after 24 h (CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY); the job stays queued"
    )
    assert (
        f"aws batch cancel-job --region {REGION} --job-id {JOB_ID}" in reason
        and "terminate-job" not in reason
    )


def test_without_describe_job_definitions_the_job_is_still_submitted_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    batch = _StubbedBatch()
    # Replace the queued DescribeJobDefinitions answer with AccessDenied: the logs hint falls back.
    batch.stub = Stubber(batch.client)
    batch.stub.add_client_error("describe_job_definitions", service_error_code="AccessDeniedException")
    batch.stub.add_response(
        "submit_job",
        {"jobArn": f"arn:aws:batch:{REGION}:111111111111:job/{JOB_ID}", "jobName": "cdk-neuron-compile-prod", "jobId": JOB_ID},
    )  # fmt: skip
    code, doc, err, _ = _run(batch)
    assert code == ExitStatus.OK, err
    assert doc["job_id"] == JOB_ID
    assert doc["logs_command"].startswith(f"aws batch describe-jobs --region {REGION} --jobs {JOB_ID}")
