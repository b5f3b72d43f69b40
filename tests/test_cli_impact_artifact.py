"""``cdk-neuron impact`` on a change of serving artifact: how it rolls out, and that the old one is kept.

The change matrix rows "serving artifact (EC2)" and "serving artifact (SageMaker)" hold the resource
level (tests/test_change_matrix.py); this is what ``impact`` tells the person deploying.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from app_assembly import shipped_environments

from cdk_neuron.cli.context import Context
from cdk_neuron.cli.impact import artifact_changes
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment
from cdk_support import cdk_json_context
from stacks.change_matrix import CHANGES, synthesize_environment
from stacks.config import deployments

NEW = "s3://cdk-neuron-staging-models/meta-llama/Llama-3.2-3B-Instruct/run-7-step-1200/"
OLD = "s3://cdk-neuron-staging-models/meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096/"


def _env(name: str, artifact_uri: str | None) -> Deployment:
    env = deployments(shipped_environments())[name]
    assert env.serving is not None
    return replace(
        env, serving=replace(env.serving, model=replace(env.serving.model, artifact_uri=artifact_uri))
    )


def test_an_ec2_artifact_change_is_an_instance_refresh_at_full_capacity_and_the_old_prefix_is_kept() -> None:
    (change,) = artifact_changes(_env("prod", "s3://models-a/old/"), _env("prod", "s3://models-a/new/"))
    assert (change.backend, change.before, change.after) == (
        "ec2",
        "s3://models-a/old/",
        "s3://models-a/new/",
    )
    assert change.rollout.startswith("an instance refresh that keeps 100% of the desired capacity healthy")
    assert (
        "no capacity drop" in change.rollout and "the new instances read s3://models-a/new/" in change.rollout
    )
    assert "keep their read grant on the old artifact until CloudFormation's clean-up phase" in change.rollout
    assert change.old_artifact.startswith("s3://models-a/old/ is kept: cdk-neuron never deletes an artifact")


def test_a_sagemaker_artifact_change_is_a_blue_green_endpoint_update() -> None:
    (change,) = artifact_changes(_env("staging", OLD), _env("staging", NEW))
    assert change.backend == "sagemaker"
    assert change.rollout.startswith("a new SageMaker model and endpoint config")
    assert "(blue/green, no capacity drop)" in change.rollout


def test_from_the_hub_to_an_artifact_and_back() -> None:
    (to_artifact,) = artifact_changes(_env("dev", None), _env("dev", "s3://models-a/new/"))
    assert to_artifact.old_artifact == "none: the fleet served the Hub checkpoint"
    (to_hub,) = artifact_changes(_env("dev", "s3://models-a/old/"), _env("dev", None))
    assert "the new instances download the Hub checkpoint" in to_hub.rollout


def test_no_change_no_fleet_no_line() -> None:
    same = _env("dev", "s3://models-a/x/")
    assert artifact_changes(same, same) == []
    assert artifact_changes(None, same) == []
    assert artifact_changes(replace(same, serving=None), same) == []


@pytest.fixture(scope="module")
def assemblies(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    change = next(c for c in CHANGES if c.name == "serving artifact (SageMaker)")
    environments, context = shipped_environments(), cdk_json_context()
    old, new = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    synthesize_environment(environments, "staging", context, outdir=str(old))
    synthesize_environment(change.apply(environments), "staging", context, outdir=str(new))
    return str(old), str(new)


def _run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(args, context=Context(stdout=out, stderr=err, cwd=Path.cwd()))
    return status, out.getvalue()


@pytest.mark.slow
def test_impact_says_what_the_artifact_change_does(assemblies: tuple[str, str]) -> None:
    old, new = assemblies
    status, out = _run(["impact", old, new, "--json"])
    assert status == ExitStatus.OK
    (env,) = json.loads(out)["environments"]
    (change,) = env["artifacts"]
    assert (change["backend"], change["before"], change["after"]) == ("sagemaker", OLD, NEW)
    # Nothing stateful at risk; the endpoint is updated in place (not replaced).
    assert env["data_at_risk"] == []
    assert not [r for r in env["replaced"] if r["type"] == "AWS::SageMaker::Endpoint"]
    status, text = _run(["impact", old, new, "-o", "text"])
    assert "staging: serving artifact (sagemaker)" in text
    assert f"old artifact: {OLD} is kept" in text
