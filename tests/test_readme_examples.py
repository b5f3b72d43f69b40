"""The READMEs' Python examples run against the current code, so they cannot go stale."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cdk_support import REPO_ROOT, make_app, template_of

PACKAGE = REPO_ROOT / "constructs" / "cdk_neuron"
CONSTRUCT_READMES = {
    "training": PACKAGE / "training" / "README.md",
    "serving": PACKAGE / "serving" / "README.md",
    "storage": PACKAGE / "storage" / "README.md",
    "monitoring": PACKAGE / "monitoring" / "README.md",
}


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


BLOCKS = python_blocks(REPO_ROOT / "README.md")
# The last block is a user's test module (it imports their own `app`); the example app runs it.
STANDALONE, PURE, *IN_A_STACK, _USER_TEST = BLOCKS


def test_the_readme_has_the_examples_this_test_expects() -> None:
    assert "class NeuronStack(cdk.Stack)" in STANDALONE
    assert "plan_training(" in PURE
    assert len(IN_A_STACK) == 7
    assert _USER_TEST.startswith("# tests/test_stack.py")


def test_standalone_app_example_synthesizes(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path))
    exec(compile(STANDALONE, "README.md (quick example)", "exec"), {"__name__": "readme"})


def test_pure_example_runs() -> None:
    exec(compile(PURE, "README.md (catalog and planner)", "exec"), {"__name__": "readme"})


def test_construct_examples_run_in_one_stack() -> None:
    """Each construct section's snippet, in order, in the stack the README's text describes."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    stack = cdk.Stack(make_app(), "Readme", env=cdk.Environment(account="111111111111", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a", "us-east-1b"], nat_gateways=1)
    namespace: dict[str, Any] = {
        "__name__": "readme",
        "self": stack,
        "vpc": vpc,
        "training_subnets": ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1a"]
        ),
    }
    for number, block in enumerate(IN_A_STACK, start=1):
        exec(compile(block, f"README.md (construct example {number})", "exec"), namespace)
    assert namespace["fleet"].plan.instance_type == "inf2.48xlarge"
    assert "AWS::Batch::JobQueue" in {r["Type"] for r in template_of(stack)["Resources"].values()}


def _run_in_one_stack(name: str) -> tuple[Any, dict[str, Any]]:
    """Every block of a construct README, in order, inside the stack its text describes."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    stack = cdk.Stack(make_app(), "Readme", env=cdk.Environment(account="111111111111", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a", "us-east-1b"], nat_gateways=1)
    namespace: dict[str, Any] = {
        "__name__": "readme",
        "self": stack,
        "vpc": vpc,
        "training_subnets": ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1a"]
        ),
    }
    blocks = python_blocks(CONSTRUCT_READMES[name])
    assert blocks, name
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{name}/README.md (example {number})", "exec"), namespace)
    return stack, namespace


def _resource_types(stack: Any) -> set[str]:
    return {r["Type"] for r in template_of(stack)["Resources"].values()}


def test_training_readme_examples_run() -> None:
    from cdk_neuron import AutoScalingTrainingCluster, BatchTrainingCluster

    stack, namespace = _run_in_one_stack("training")
    assert isinstance(namespace["cluster"], BatchTrainingCluster)
    assert isinstance(namespace["group"], AutoScalingTrainingCluster)
    assert namespace["prod"].plan.world_size == 512
    assert {"AWS::Batch::JobQueue", "AWS::AutoScaling::AutoScalingGroup", "AWS::CloudWatch::Alarm"} <= (
        _resource_types(stack)
    )


def test_serving_readme_examples_run() -> None:
    from cdk_neuron import Ec2InferenceFleet, SageMakerInferenceFleet

    stack, namespace = _run_in_one_stack("serving")
    assert isinstance(namespace["fleet"], Ec2InferenceFleet)
    assert isinstance(namespace["endpoint"], SageMakerInferenceFleet)
    assert namespace["fleet"].plan.instance_type == "inf2.48xlarge"
    assert {"AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::SageMaker::Endpoint"} <= _resource_types(stack)


def test_storage_readme_examples_run() -> None:
    stack, namespace = _run_in_one_stack("storage")
    assert namespace["checkpoints"].checkpoint_estimate is not None
    assert {"AWS::EFS::FileSystem", "AWS::S3::Bucket", "AWS::Backup::BackupPlan"} <= _resource_types(stack)


def test_monitoring_readme_examples_run() -> None:
    stack, namespace = _run_in_one_stack("monitoring")
    assert namespace["monitoring"].alarms
    assert {"AWS::CloudWatch::Dashboard", "AWS::SNS::Topic"} <= _resource_types(stack)
