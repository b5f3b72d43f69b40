"""`cdk-neuron submit` and `cdk-neuron status` against moto Batch + CloudFormation, and botocore's Stubber.

moto serves the training stack's outputs (CloudFormation) and runs multi-node jobs without Docker
(``use_docker: False``), which `status` reads. moto's DescribeJobDefinitions omits
``nodeProperties`` and its DescribeJobs does not echo overrides or parameters, so the requests
`submit` makes (DescribeJobDefinitions, RegisterJobDefinition, SubmitJob) are checked with Stubber,
each against the exact parameters Batch receives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cdk_neuron.cli.main import main
from cdk_neuron.training.launcher import encode_training_command, launcher_command
from cdk_support import use_fake_aws_credentials

REGION = "us-east-1"
IMAGE = f"763104351884.dkr.ecr.{REGION}.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
NEW_IMAGE = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/my-training:2026-11-30"
QUEUE_ARN = f"arn:aws:batch:{REGION}:123456789012:job-queue/dev-training"
JOB_DEF = f"arn:aws:batch:{REGION}:123456789012:job-definition/dev-training"
COMMAND = ["torchrun $TORCHRUN_ARGS train.py", "--steps", "10"]
TRAINING_COMMAND = "torchrun $TORCHRUN_ARGS train.py --steps 10"


def environment(**training: Any) -> dict[str, Any]:
    return {
        "region": REGION,
        "az_ids": ["use1-az6", "use1-az4"],
        "removal_policy": "destroy",
        "training": {
            "instance_type": "trn1.32xlarge",
            "max_nodes": 4,
            "plan": {"nodes": 2, "tensor_parallel": 32, "pipeline_parallel": 2},
            "job_image": IMAGE,
            **training,
        },
        "serving": {
            "backend": "ec2",
            "instance_type": "inf2.xlarge",
            "model": {
                "model_id": "meta-llama/Llama-3.2-3B-Instruct",
                "parameters": 3_210_000_000,
                "tensor_parallel": 2,  # one replica on both cores
                "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
            },
        },
    }


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps(
            {
                "context": {
                    "cdk-neuron:deployments": "stacks.config:deployments",
                    "environments": {"dev": environment()},
                }
            }
        )
    )
    return str(path)


@pytest.fixture(scope="module")
def deployed() -> Iterator[dict[str, Any]]:
    """A moto account with a job queue, a multi-node job definition and a dev-Training stack exporting them."""
    with pytest.MonkeyPatch.context() as patch:
        use_fake_aws_credentials(patch, REGION)
        with mock_aws(config={"batch": {"use_docker": False}}):
            clients = {s: boto3.client(s, region_name=REGION) for s in ("batch", "cloudformation", "iam")}
            batch = clients["batch"]
            role = clients["iam"].create_role(RoleName="batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
            environment_arn = batch.create_compute_environment(
                computeEnvironmentName="dev-trn", type="UNMANAGED", state="ENABLED", serviceRole=role
            )["computeEnvironmentArn"]
            queue = batch.create_job_queue(
                jobQueueName="dev-training",
                state="ENABLED",
                priority=1,
                computeEnvironmentOrder=[{"order": 1, "computeEnvironment": environment_arn}],
            )["jobQueueArn"]
            definition = batch.register_job_definition(
                jobDefinitionName="dev-training", type="multinode", nodeProperties=node_properties(2, "0:1")
            )["jobDefinitionArn"]

            def stack(name: str, outputs: dict[str, str]) -> None:
                marker = {"Name": f"/cdk-neuron-test/{name}", "Type": "String", "Value": "x"}
                template = {
                    "Resources": {"Marker": {"Type": "AWS::SSM::Parameter", "Properties": marker}},
                    "Outputs": {key: {"Value": value} for key, value in outputs.items()},
                }
                clients["cloudformation"].create_stack(StackName=name, TemplateBody=json.dumps(template))

            stack("dev-Training", {"JobQueueArn": queue, "JobDefinitionArn": definition})
            stack("bare-Training", {"Other": "x"})
            yield {**clients, "queue": queue, "definition": definition}


def node_properties(nodes: int, *ranges: str, image: str = IMAGE) -> dict[str, Any]:
    return {
        "numNodes": nodes,
        "mainNode": 0,
        "nodeRangeProperties": [
            {
                "targetNodes": target,
                "container": {
                    "image": image,
                    "vcpus": 128,
                    "memory": 480000,
                    "command": list(launcher_command()),
                },
            }
            for target in ranges
        ],
    }


def definition(revision: int, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "jobDefinitionName": "dev-training",
        "jobDefinitionArn": f"{JOB_DEF}:{revision}",
        "revision": revision,
        "status": "ACTIVE",
        "type": "multinode",
        "parameters": {"training_command": encode_training_command("torchrun $TORCHRUN_ARGS train.py")},
        "retryStrategy": {"attempts": 2},
        "tags": {"project": "cdk-neuron"},
        "platformCapabilities": ["EC2"],
        "nodeProperties": properties,
    }


def moto_factory(deployed: dict[str, Any], **replace: Any) -> Callable[[str, str], Any]:
    def clients(service: str, region: str) -> Any:
        assert region == REGION
        return replace.get(service) or deployed[service]

    return clients


_STUB_CLIENTS: dict[str, Any] = {}


def stubbed(service: str) -> tuple[Any, Stubber]:
    """A client answered only by a fresh Stubber (clients are reused: creating one is slow)."""
    if service not in _STUB_CLIENTS:
        _STUB_CLIENTS[service] = boto3.client(
            service, region_name=REGION, aws_access_key_id="stub", aws_secret_access_key="stub"
        )
    return _STUB_CLIENTS[service], Stubber(_STUB_CLIENTS[service])


def batch_stub(
    described: dict[str, Any],
    submitted: dict[str, Any],
    *,
    active: list[dict[str, Any]] | None = None,
    registered: dict[str, Any] | None = None,
) -> tuple[Any, Stubber]:
    """DescribeJobDefinitions -> [DescribeJobDefinitions ACTIVE -> [RegisterJobDefinition]] -> SubmitJob."""
    batch, stub = stubbed("batch")
    stub.add_response(
        "describe_job_definitions",
        {"jobDefinitions": [described]},
        {"jobDefinitions": [described["jobDefinitionArn"]]},
    )
    if active is not None:
        stub.add_response(
            "describe_job_definitions",
            {"jobDefinitions": active},
            {"jobDefinitionName": "dev-training", "status": "ACTIVE"},
        )
    if registered is not None:
        stub.add_response(
            "register_job_definition",
            {"jobDefinitionName": "dev-training", "jobDefinitionArn": f"{JOB_DEF}:2", "revision": 2},
            {
                "jobDefinitionName": "dev-training",
                "type": "multinode",
                "nodeProperties": registered,
                "parameters": described["parameters"],
                "retryStrategy": {"attempts": 2},
                "tags": {"project": "cdk-neuron"},
                "platformCapabilities": ["EC2"],
            },
        )
    stub.add_response(
        "submit_job",
        {
            "jobArn": f"arn:aws:batch:{REGION}:123456789012:job/abc",
            "jobName": submitted["jobName"],
            "jobId": "abc",
        },
        submitted,
    )
    return batch, stub


def run_submit(
    config: str, clients: Callable[[str, str], Any], *options: str, command: list[str] = COMMAND
) -> int:
    return main(
        ["submit", "--config", config, "--name", "run-1", "--json", *options, "--", *command], clients=clients
    )


# --------------------------------------------------------------------------------------------
# submit
# --------------------------------------------------------------------------------------------


def test_submit_runs_the_command_through_the_launcher(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Queue and definition come from the stack's outputs; the command is the training_command parameter."""
    described = definition(1, node_properties(2, "0:1")) | {"jobDefinitionArn": deployed["definition"]}
    expected = {
        "jobName": "run-1",
        "jobQueue": deployed["queue"],
        "jobDefinition": deployed["definition"],
        "parameters": {"training_command": encode_training_command(TRAINING_COMMAND)},
    }
    batch, stub = batch_stub(described, expected)
    with stub:
        assert run_submit(config, moto_factory(deployed, batch=batch), "--nodes", "2") == 0
    stub.assert_no_pending_responses()
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {
        "command", "schema_version", "environment", "region", "stack", "job_id", "job_name", "job_arn",
        "job_queue", "job_definition", "definition_action", "image", "nodes", "training_command",
        "environment_overrides", "watch_command", "logs_command",
    }  # fmt: skip
    assert doc["stack"] == "dev-Training" and doc["job_id"] == "abc"
    assert doc["definition_action"] == "dev-training:1 as deployed"
    assert doc["training_command"] == TRAINING_COMMAND


def test_env_vars_are_container_overrides_on_every_node_range(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    described = definition(1, node_properties(2, "0", "1:")) | {"jobDefinitionArn": deployed["definition"]}
    environment = [
        {"name": "NEURON_CC_FLAGS", "value": "--model-type=transformer"},
        {"name": "SEED", "value": "7"},
    ]
    expected = {
        "jobName": "run-1",
        "jobQueue": deployed["queue"],
        "jobDefinition": deployed["definition"],
        "parameters": {"training_command": encode_training_command(TRAINING_COMMAND)},
        "nodeOverrides": {
            "nodePropertyOverrides": [
                {"targetNodes": "0", "containerOverrides": {"environment": environment}},
                {"targetNodes": "1:", "containerOverrides": {"environment": environment}},
            ]
        },
    }
    batch, stub = batch_stub(described, expected)
    options = ["--nodes", "2", "--env-var", "NEURON_CC_FLAGS=--model-type=transformer", "--env-var", "SEED=7"]
    with stub:
        assert run_submit(config, moto_factory(deployed, batch=batch), *options) == 0
    stub.assert_no_pending_responses()
    doc = json.loads(capsys.readouterr().out)
    assert doc["environment_overrides"] == {"NEURON_CC_FLAGS": "--model-type=transformer", "SEED": "7"}


def test_open_ended_definition_takes_a_num_nodes_override(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    described = definition(1, node_properties(2, "0:")) | {"jobDefinitionArn": deployed["definition"]}
    expected = {
        "jobName": "run-1",
        "jobQueue": deployed["queue"],
        "jobDefinition": deployed["definition"],
        "parameters": {"training_command": encode_training_command(TRAINING_COMMAND)},
        "nodeOverrides": {"numNodes": 4},
    }
    batch, stub = batch_stub(described, expected)
    with stub:
        assert run_submit(config, moto_factory(deployed, batch=batch), "--nodes", "4") == 0
    stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("options", "registered", "action"),
    [
        # A closed range (what TrainingCluster deploys) cannot take numNodes: a resized revision.
        (["--nodes", "4"], node_properties(4, "0:3"), "registered revision 2 of dev-training with 4 nodes"),
        (
            ["--nodes", "2", "--image", NEW_IMAGE],
            node_properties(2, "0:1", image=NEW_IMAGE),
            f"with image {NEW_IMAGE}",
        ),
        (
            ["--nodes", "4", "--image", NEW_IMAGE],
            node_properties(4, "0:3", image=NEW_IMAGE),
            f"with image {NEW_IMAGE} (container overrides cannot change the image) and 4 nodes",
        ),
    ],
)
def test_image_or_node_count_change_registers_a_revision_once(
    config: str,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    registered: dict[str, Any],
    action: str,
) -> None:
    deployed_definition = definition(1, node_properties(2, "0:1"))
    expected = {
        "jobName": "run-1",
        "jobQueue": QUEUE_ARN,
        "jobDefinition": f"{JOB_DEF}:2",
        "parameters": {"training_command": encode_training_command(TRAINING_COMMAND)},
    }
    cloudformation, stack = stack_stub()
    services: dict[str, Any] = {"cloudformation": cloudformation}

    # First submission: no active revision matches, so one is registered.
    services["batch"], stub = batch_stub(
        deployed_definition, expected, active=[deployed_definition], registered=registered
    )
    with stub, stack:
        assert run_submit(config, lambda service, region: services[service], *options) == 0
    stub.assert_no_pending_responses()
    doc = json.loads(capsys.readouterr().out)
    assert doc["job_definition"] == f"{JOB_DEF}:2" and action in doc["definition_action"]

    # Second submission: the revision exists and is reused.
    cloudformation, stack = stack_stub()
    services["cloudformation"] = cloudformation
    active = [deployed_definition, definition(2, registered)]
    services["batch"], stub = batch_stub(deployed_definition, expected, active=active)
    with stub, stack:
        assert run_submit(config, lambda service, region: services[service], *options) == 0
    stub.assert_no_pending_responses()
    assert json.loads(capsys.readouterr().out)["definition_action"].startswith("reused revision 2")


def test_image_already_deployed_changes_nothing(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    described = definition(1, node_properties(2, "0:1"))
    expected = {
        "jobName": "run-1",
        "jobQueue": QUEUE_ARN,
        "jobDefinition": f"{JOB_DEF}:1",
        "parameters": {"training_command": encode_training_command(TRAINING_COMMAND)},
    }
    batch, stub = batch_stub(described, expected)
    cloudformation, stack = stack_stub()
    services = {"batch": batch, "cloudformation": cloudformation}
    with stub, stack:
        assert (
            run_submit(config, lambda service, region: services[service], "--nodes", "2", "--image", IMAGE)
            == 0
        )
    stub.assert_no_pending_responses()
    assert json.loads(capsys.readouterr().out)["definition_action"] == "dev-training:1 as deployed"


def test_multi_range_closed_definition_cannot_be_resized(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, stub = stubbed("batch")
    described = definition(1, node_properties(2, "0", "1"))
    stub.add_response(
        "describe_job_definitions", {"jobDefinitions": [described]}, {"jobDefinitions": [f"{JOB_DEF}:1"]}
    )
    cloudformation, stack = stack_stub()
    services = {"batch": batch, "cloudformation": cloudformation}
    with stub, stack:
        assert run_submit(config, lambda service, region: services[service], "--nodes", "4") == 1
    assert "has 2 node ranges and no open-ended one" in capsys.readouterr().err


def stack_stub() -> tuple[Any, Stubber]:
    cloudformation, stub = stubbed("cloudformation")
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
                        {"OutputKey": "JobDefinitionArn", "OutputValue": f"{JOB_DEF}:1"},
                    ],
                }
            ]
        },
        {"StackName": "dev-Training"},
    )
    return cloudformation, stub


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--stack", "absent-Training"], "stack absent-Training does not exist"),
        (["--stack", "bare-Training"], "has no output JobQueueArn (outputs: Other)"),
    ],
)
def test_missing_stack_or_output_exit_1(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    assert run_submit(config, moto_factory(deployed), "--nodes", "2", *extra) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and needle in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--nodes", "5", "--", "python", "t.py"], "--nodes=5: use 1..4"),
        # TP 32 x PP 2 = 64 ranks do not divide 3 nodes x 32 cores
        (["--nodes", "3", "--", "python", "t.py"], "--nodes=3: breaks the configured plan"),
        (["--nodes", "2", "--"], "COMMAND=[]"),
        (["--nodes", "2", "--name", "bad name", "--", "python", "t.py"], "--name='bad name'"),
        (["--nodes", "2", "--env-var", "AWS_BATCH_X=1", "--", "python", "t.py"], "--env-var='AWS_BATCH_X=1'"),
        (["--nodes", "2", "--env-var", "NOVALUE", "--", "python", "t.py"], "--env-var='NOVALUE'"),
        # Rough edge 3: the image-pinning rule of job_image and cdk.json applies on the CLI path too.
        (["--image", "foo:latest", "--", "python", "t.py"], "--image='foo:latest': pin the image"),
        (["--image", "foo", "--", "python", "t.py"], "--image='foo': pin the image"),
        (["--image", "repo:LATEST", "--", "python", "t.py"], "--image='repo:LATEST'"),
        (["--image", "a b:1", "--", "python", "t.py"], "--image='a b:1': give an image URI"),
    ],
)
def test_submit_refuses_bad_input_exit_2(
    config: str, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    def no_aws(service: str, region: str) -> Any:
        raise AssertionError("bad input must be refused before any AWS call")

    assert main(["submit", "--config", config, *argv], clients=no_aws) == 2
    assert needle in capsys.readouterr().err


def test_submit_needs_the_batch_engine_and_one_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cdk.json"
    node_group = environment(engine="auto-scaling-group")
    del node_group["training"]["job_image"]  # a self-managed node group runs no Batch job containers
    envs = {"dev": node_group, "research": environment()}
    path.write_text(
        json.dumps({"context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": envs}})
    )
    argv = ["submit", "--config", str(path), "--nodes", "2", "--", "python", "t.py"]
    assert main(argv) == 2
    assert "--env=None: choose the environment: dev, research" in capsys.readouterr().err
    assert main([*argv[:3], "--env", "dev", *argv[3:]]) == 2
    assert "training.engine='auto-scaling-group'" in capsys.readouterr().err


def test_submit_reports_argument_and_environment_mistakes_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The checks that need only the arguments run before the environment is chosen: without --env
    (two environments), an unpinned image, a bad name and a bad --env-var are all reported at once."""
    path = tmp_path / "cdk.json"
    envs = {"dev": environment(), "research": environment()}
    path.write_text(
        json.dumps({"context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": envs}})
    )
    argv = ["submit", "--config", str(path), "--image", "foo:latest", "--name", "bad name"]
    assert main([*argv, "--env-var", "NOVALUE", "--", "echo"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.removeprefix("cdk-neuron: ").split("=")[0] for line in lines] == [
        "--env-var",
        "--name",
        "--image",
        "--env",
    ], lines


def test_submit_defaults_to_the_planned_node_count_and_says_how_to_follow_the_job(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    described = definition(1, node_properties(2, "0:1")) | {"jobDefinitionArn": deployed["definition"]}
    expected = {
        "jobName": "run-1",
        "jobQueue": deployed["queue"],
        "jobDefinition": deployed["definition"],
        "parameters": {"training_command": encode_training_command("python t.py")},
    }
    batch, stub = batch_stub(described, expected)
    with stub:
        code = main(
            ["submit", "--config", config, "--name", "run-1", "--", "python", "t.py"],
            clients=moto_factory(deployed, batch=batch),
        )
    assert code == 0
    out = capsys.readouterr().out
    assert "dev: submitted" in out and f"cdk-neuron status --watch abc --config {config} --env dev" in out
    assert f"cdk-neuron logs --follow abc --config {config} --env dev" in out


# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------


def _job(job_id: str, status: str, **extra: Any) -> dict[str, Any]:
    job = {
        "jobId": job_id,
        "jobName": "run-1",
        "jobArn": f"arn:aws:batch:{REGION}:123456789012:job/{job_id}",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "jobDefinition": f"{JOB_DEF}:1",
        "startedAt": 1_796_000_000_000,
        **extra,
    }
    return {k: v for k, v in job.items() if v is not None}


def _status_stub(parent: str, nodes: list[str]) -> tuple[Any, Stubber]:
    batch, stub = stubbed("batch")
    attempts = [
        {
            "startedAt": 1_796_000_000_000,
            "stoppedAt": 1_796_000_600_000,
            "statusReason": "Essential container in task exited",
            "container": {"exitCode": 1, "logStreamName": "dev-training/default/1"},
        }
    ]
    stub.add_response(
        "describe_jobs",
        {
            "jobs": [
                _job(
                    "abc",
                    parent,
                    createdAt=1_795_999_000_000,
                    statusReason="Node 1 failed" if parent == "FAILED" else None,
                    nodeProperties={"numNodes": len(nodes), "mainNode": 0, "nodeRangeProperties": []},
                    attempts=attempts if parent == "FAILED" else [],
                )
            ]
        },
        {"jobs": ["abc"]},
    )
    children = [
        _job(
            f"abc#{i}",
            state,
            nodeDetails={"nodeIndex": i, "isMainNode": i == 0},
            container={
                "exitCode": 1 if state == "FAILED" else None,
                "logStreamName": f"dev-training/default/{i}",
            },
        )
        for i, state in enumerate(nodes)
    ]
    for child in children:
        if child["container"]["exitCode"] is None:
            del child["container"]["exitCode"]
    stub.add_response("describe_jobs", {"jobs": children}, {"jobs": [f"abc#{i}" for i in range(len(nodes))]})
    return batch, stub


def test_status_shows_nodes_and_attempts(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = _status_stub("RUNNING", ["RUNNING", "RUNNING"])
    with stub:
        code = main(["status", "--config", config, "abc", "--json"], clients=lambda s, r: batch)
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {
        "command", "schema_version", "environment", "region", "job_id", "job_name", "status", "status_reason",
        "job_queue", "job_definition", "num_nodes", "created_at", "started_at", "stopped_at", "attempts", "nodes",
        "failure",
    }  # fmt: skip
    assert doc["status"] == "RUNNING" and doc["num_nodes"] == 2
    assert doc["started_at"] == "2026-11-30T00:53:20+00:00"
    assert [(n["node_index"], n["is_main_node"], n["status"]) for n in doc["nodes"]] == [
        (0, True, "RUNNING"),
        (1, False, "RUNNING"),
    ]
    assert doc["nodes"][1]["log_stream"] == "dev-training/default/1"


def test_failed_job_exit_1_and_says_why(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    batch, stub = _status_stub("FAILED", ["SUCCEEDED", "FAILED"])
    with stub:
        code = main(["status", "--config", config, "abc", "--output", "text"], clients=lambda s, r: batch)
    assert code == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "Node 1 failed" in out and "exit 1, Essential container in task exited" in out


def test_status_of_a_moto_job_and_of_an_unknown_one(
    deployed: dict[str, Any], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = deployed["batch"].submit_job(
        jobName="moto-run",
        jobQueue=deployed["queue"],
        jobDefinition=deployed["definition"],
        parameters={"training_command": "python t.py"},
    )["jobId"]
    code = main(["status", "--config", config, job_id, "--json"], clients=moto_factory(deployed))
    doc = json.loads(capsys.readouterr().out)
    assert doc["job_id"] == job_id and doc["job_queue"] == deployed["queue"]
    assert code == (1 if doc["status"] == "FAILED" else 0)

    assert main(["status", "--config", config, "no-such-job"], clients=moto_factory(deployed)) == 1
    assert "no job no-such-job in us-east-1" in capsys.readouterr().err
