"""The README's Python examples run against the current code, so they cannot go stale."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cdk_support import REPO_ROOT, make_app, template_of

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO_ROOT / "README.md").read_text(), re.S)
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
