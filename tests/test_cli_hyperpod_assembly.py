"""A HyperPod cluster read from a cloud assembly: its workload record names the cluster's logical id,
and the job commands find the cluster through ``cloudformation:DescribeStackResource`` (the physical
id of an ``AWS::SageMaker::Cluster`` is its ARN)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import RecordingClock
from test_cli_hyperpod import (
    CLUSTER,
    CLUSTER_ARN,
    REGION,
    SCONTROL_RUNNING,
    Cloud,
    Controller,
    described,
)

from cdk_neuron.cli import assembly
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main

ACCOUNT = "111111111111"
AZS = ["us-east-1a", "us-east-1b"]
PLAN_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/trn1-week"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A cloud assembly with one HyperPod cluster, and the cluster's logical id."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.training import Capacity, HyperPodTrainingCluster
    from cdk_support import cdk_json_context

    out = tmp_path_factory.mktemp("assembly")
    app = cdk.App(outdir=str(out), context=cdk_json_context())

    class Pinned(cdk.Stack):
        @property
        def availability_zones(self) -> list[str]:
            return AZS

    stack = Pinned(app, "Lab", env=cdk.Environment(account=ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS)
    cluster = HyperPodTrainingCluster(
        stack,
        "Slurm",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=4,
        worker_count=0,
        vpc_subnets=ec2.SubnetSelection(
            availability_zones=[AZS[0]], subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        ),
        availability_zone_id="use1-az6",
        capacity=Capacity.training_plan(PLAN_ARN),
        controller_instance_type="ml.c5.2xlarge",
    )
    logical_id = stack.resolve(stack.get_logical_id(cluster.cluster))
    app.synth()
    return out, str(logical_id)


def test_the_record_carries_what_the_job_commands_and_cost_need(synthesized: tuple[Path, str]) -> None:
    out, logical_id = synthesized
    (env,) = assembly.load(out).values()
    training = env.training
    assert training is not None and training.engine == "hyperpod"
    assert training.hyperpod is not None
    assert (training.hyperpod.stack_name, training.hyperpod.cluster_logical_id) == ("Lab", logical_id)
    assert training.hyperpod.controller_instance_type == "ml.c5.2xlarge"
    assert training.worker_count == 0 and training.max_nodes == 4
    assert training.capacity.kind == "training-plan" and training.capacity.training_plan_arn == PLAN_ARN
    assert training.jobs is None  # no Batch queue


def test_status_from_an_assembly_finds_the_cluster_by_logical_id(
    synthesized: tuple[Path, str], tmp_path: Path
) -> None:
    out, logical_id = synthesized
    cloud = Cloud()
    controller = Controller(tmp_path / "controller")
    cloud.stubs["cloudformation"].add_response(
        "describe_stack_resource",
        {
            "StackResourceDetail": {
                "StackName": "Lab",
                "LogicalResourceId": logical_id,
                "PhysicalResourceId": CLUSTER_ARN,
                "ResourceType": "AWS::SageMaker::Cluster",
                "LastUpdatedTimestamp": "2026-12-01T10:00:00Z",
                "ResourceStatus": "CREATE_COMPLETE",
            }
        },
        {"StackName": "Lab", "LogicalResourceId": logical_id},
    )
    cloud.stubs["sagemaker"].add_response("describe_cluster", described(), {"ClusterName": CLUSTER_ARN})
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    stdout, stderr = io.StringIO(), io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=stdout, stderr=stderr, run=controller.run)
    code = main(["status", "--app", str(out), "42", "--json"], context=context)
    assert code == 0, stderr.getvalue()
    document: dict[str, Any] = json.loads(stdout.getvalue())
    assert (document["cluster"], document["job"]["state"]) == (CLUSTER, "RUNNING")
    cloud.done()
