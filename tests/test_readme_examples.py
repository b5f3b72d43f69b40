"""The READMEs' Python examples run against the current code, so they cannot go stale.

Every README in the repository is listed here; each ```python block in it is either executed (the
top-level README's end-to-end example and its acknowledgment snippet, every block of each
construct package's README, in order, in one stack, as their text says) or named here as not
runnable on its own, with the reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cdk_support import REPO_ROOT, make_app, nag_violations, template_of

PACKAGE = REPO_ROOT / "constructs" / "cdk_neuron"
CONSTRUCT_READMES = {
    "training": PACKAGE / "training" / "README.md",
    "serving": PACKAGE / "serving" / "README.md",
    "storage": PACKAGE / "storage" / "README.md",
    "monitoring": PACKAGE / "monitoring" / "README.md",
}
CATALOG_DOC = REPO_ROOT / "docs" / "catalog-and-planner.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


TOP = python_blocks(REPO_ROOT / "README.md")
# The end-to-end app; an acknowledgment on its VPC; a user's test module, which imports their own
# `app` and runs under their pytest (examples/reserved-trn1n-sagemaker/tests/test_stack.py is the
# worked, executed version of it).
STANDALONE, ACKNOWLEDGMENT, USER_TEST = TOP


# Build output, dependencies and make mutate's copy of the sources (mutants/), none of them ours to check.
IGNORED_DIRS = {"node_modules", "cdk.out", "build", ".venv", "dist", "mutants"}


def test_every_readme_is_checked_here() -> None:
    """A README with Python blocks that this module does not know would go unexecuted."""
    readmes = {
        path
        for path in REPO_ROOT.rglob("README.md")
        if not IGNORED_DIRS & set(path.relative_to(REPO_ROOT).parts)
        and not any(part.startswith(".") for part in path.relative_to(REPO_ROOT).parts)
    }
    with_python = {path for path in readmes if python_blocks(path)}
    assert with_python == {REPO_ROOT / "README.md", *CONSTRUCT_READMES.values()}


def test_the_readme_has_the_examples_this_test_expects() -> None:
    assert "class NeuronStack(cdk.Stack)" in STANDALONE
    assert "Validations.of(vpc).acknowledge" in ACKNOWLEDGMENT
    assert USER_TEST.startswith("# tests/test_stack.py")


def _standalone_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path))
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(STANDALONE, "README.md (an environment in one stack)", "exec"), namespace)
    return namespace


def test_standalone_app_example_synthesizes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    namespace = _standalone_app(monkeypatch, tmp_path)
    stack = namespace["app"].node.find_child("Neuron")
    types = {r["Type"] for r in template_of(stack)["Resources"].values()}
    assert {"AWS::Batch::JobQueue", "AWS::EFS::FileSystem", "AWS::AutoScaling::AutoScalingGroup"} <= types
    assert "AWS::CloudWatch::Dashboard" in types


def test_standalone_app_example_synthesizes_without_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Copied into app.py, ``cdk synth`` needs no AWS call: the assembly lists no missing context."""
    namespace = _standalone_app(monkeypatch, tmp_path)
    manifest = json.loads((Path(namespace["app"].synth().directory) / "manifest.json").read_text())
    assert "missing" not in manifest


def test_the_standalone_stack_has_nag_findings_only_on_the_plain_vpc(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What the README says after the example: the cdk-neuron constructs report no finding."""
    namespace = _standalone_app(monkeypatch, tmp_path)
    findings = nag_violations(namespace["app"].node.find_child("Neuron"))
    assert findings
    for finding in findings:
        paths = finding.split(": ", 1)[1].split(", ")
        assert all(path.startswith("Neuron/Vpc") for path in paths), finding


def test_the_acknowledgment_example_runs_on_the_standalone_vpc(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    namespace = _standalone_app(monkeypatch, tmp_path)
    vpc = namespace["app"].node.find_child("Neuron").node.find_child("Vpc")
    exec(compile(ACKNOWLEDGMENT, "README.md (cdk-nag acknowledgments)", "exec"), {"vpc": vpc})
    assert not [f for f in nag_violations(vpc) if f.startswith("AwsSolutions-VPC7:")]


def test_the_user_test_module_is_valid_python() -> None:
    compile(USER_TEST, "README.md (snapshot tests in your CI)", "exec")


def test_catalog_and_planner_example_runs() -> None:
    (block,) = python_blocks(CATALOG_DOC)
    exec(compile(block, f"{CATALOG_DOC.name} (catalog and planner)", "exec"), {"__name__": "readme"})


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
    # "a queue for 2-node jobs of 32 ranks each (TP 32 inside each node, data parallel across them)"
    plan = namespace["cluster"].plan
    assert (plan.nodes, plan.tensor_parallel, plan.ranks_per_node, plan.data_parallel) == (2, 32, 32, 2)
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
