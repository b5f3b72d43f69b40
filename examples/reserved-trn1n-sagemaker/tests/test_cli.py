"""The ``cdk-neuron`` CLI of the installed wheel, on this app's cloud assembly (no cdk.json of ours).

This app's cdk.json names no environments and no loader: the CLI reads what the constructs
recorded in the cloud assembly (``--app``). ``plan`` and ``cost`` run through the installed
console script; ``submit`` runs against botocore's Stubber, which checks that the job queue and
job definition are found by their recorded logical ids (``cloudformation:DescribeStackResource``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from botocore.stub import Stubber

import cdk_neuron
from app import JOB_IMAGE, build
from cdk_neuron.cli.main import main
from cdk_neuron.training import encode_training_command

REGION = "us-east-2"
STACK = "ReservedTrainingAndEndpoint"
QUEUE_ARN = f"arn:aws:batch:{REGION}:123456789012:job-queue/TrainingJobQueue-AbCdEf"
JOB_DEF = f"arn:aws:batch:{REGION}:123456789012:job-definition/TrainingJobDefinition-AbCdEf:1"


@pytest.fixture(scope="module")
def cloud_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("cdk.out")
    with open("cdk.json") as f:
        app = cdk.App(outdir=str(outdir), context=json.load(f)["context"])
    build(app)
    app.synth()
    return outdir


def cli(*argv: str) -> dict[str, Any]:
    """The installed console script, as a user runs it."""
    script = shutil.which("cdk-neuron")
    assert script is not None and "site-packages" in (cdk_neuron.__file__ or "")
    done = subprocess.run([script, *argv, "--json"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_plan_from_the_cloud_assembly(cloud_assembly: Path) -> None:
    (env,) = cli("plan", "--app", str(cloud_assembly))["environments"]
    assert (env["name"], env["region"]) == (REGION, REGION)
    assert env["training"]["instance_type"] == "trn1n.32xlarge" and env["training"]["az_id"] == "use2-az3"
    assert env["training"]["capacity"] == "reservation" and env["training"]["world_size"] == 128
    assert env["serving"]["instance_type"] == "inf2.8xlarge" and env["serving"]["tensor_parallel"] == 2


def test_cost_from_the_synthesized_templates(cloud_assembly: Path) -> None:
    doc = cli("cost", "--app", str(cloud_assembly), "--path", f"{STACK}/Training")
    (env,) = doc["environments"]
    idle = {line["item"]: line for line in env["idle"]["lines"]}
    # A capacity reservation bills whether used or not; one NAT gateway; the flow log is listed.
    assert idle["training capacity reservation"]["quantity"] == "4 x trn1n.32xlarge"
    assert idle["NAT gateways"]["quantity"] == "1"
    assert idle["CloudWatch Logs groups and VPC flow logs"]["quantity"].endswith("1 flow log")


def test_submit_finds_the_queue_by_logical_id(
    cloud_assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cdk_neuron.cli import assembly

    jobs = assembly.load(cloud_assembly)[REGION].training.jobs  # type: ignore[union-attr]
    assert jobs is not None and jobs.stack_name == STACK
    clients = {
        s: boto3.client(s, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
        for s in ("cloudformation", "batch")
    }
    cloudformation, batch = Stubber(clients["cloudformation"]), Stubber(clients["batch"])
    for logical_id, arn in (
        (jobs.job_queue_logical_id, QUEUE_ARN),
        (jobs.job_definition_logical_id, JOB_DEF),
    ):
        cloudformation.add_response(
            "describe_stack_resource",
            {
                "StackResourceDetail": {
                    "LogicalResourceId": logical_id,
                    "PhysicalResourceId": arn,
                    "ResourceType": "AWS::Batch::JobQueue"
                    if arn == QUEUE_ARN
                    else "AWS::Batch::JobDefinition",
                    "LastUpdatedTimestamp": datetime(2026, 12, 1, tzinfo=timezone.utc),
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            },
            {"StackName": STACK, "LogicalResourceId": logical_id},
        )
    definition = {
        "jobDefinitionName": "TrainingJobDefinition-AbCdEf",
        "jobDefinitionArn": JOB_DEF,
        "revision": 1,
        "type": "multinode",
        "nodeProperties": {
            "numNodes": 4,
            "mainNode": 0,
            "nodeRangeProperties": [{"targetNodes": "0:3", "container": {"image": JOB_IMAGE}}],
        },
    }
    batch.add_response(
        "describe_job_definitions", {"jobDefinitions": [definition]}, {"jobDefinitions": [JOB_DEF]}
    )
    batch.add_response(
        "submit_job",
        {"jobName": "run-1", "jobId": "job-1"},
        {
            "jobName": "run-1",
            "jobQueue": QUEUE_ARN,
            "jobDefinition": JOB_DEF,
            # The command travels base64-encoded (cdk_neuron.training.launcher).
            "parameters": {"training_command": encode_training_command("torchrun $TORCHRUN_ARGS train.py")},
        },
    )
    argv = [
        "submit",
        "--app",
        str(cloud_assembly),
        "--name",
        "run-1",
        "--json",
        "--",
        "torchrun $TORCHRUN_ARGS train.py",
    ]
    with cloudformation, batch:
        assert main(argv, clients=lambda service, region: clients[service]) == 0
    cloudformation.assert_no_pending_responses()
    batch.assert_no_pending_responses()
    assert json.loads(capsys.readouterr().out)["job_id"] == "job-1"
