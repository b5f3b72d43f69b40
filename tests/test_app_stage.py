"""The app: one stage per environment, `-c env=NAME` selection, accounts, tags and protection."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron.errors import NeuronConfigError
from cdk_support import make_app
from stacks.app_builder import build_app
from stacks.config import PLACEHOLDER_ACCOUNT
from stacks.stage import EnvironmentStage


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.fixture
def no_default_account() -> Iterator[None]:
    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    yield
    if saved is not None:
        os.environ["CDK_DEFAULT_ACCOUNT"] = saved


def test_one_stage_per_environment_with_its_stacks(built: SynthesizedApp) -> None:
    assert list(built.stages) == ["dev", "staging", "prod"]
    for name, stage in built.stages.items():
        assert [s.node.id for s in stage.stacks] == list(EnvironmentStage.STACK_IDS)
        assert all(s.stack_name.startswith(f"{name}-") for s in stage.stacks)
        assert stage.region == shipped_environments()[name]["region"]


def test_the_account_falls_back_to_a_placeholder_without_credentials(built: SynthesizedApp) -> None:
    assert {stage.account for stage in built.stages.values()} == {PLACEHOLDER_ACCOUNT}


def test_cdk_default_account_is_used_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "222222222222")
    (stage,) = build_app(make_app(environments=shipped_environments(), env="dev"))
    assert stage.account == "222222222222"


def test_env_context_selects_one_environment(no_default_account: None) -> None:
    stages = build_app(make_app(environments=shipped_environments(), env="prod"))
    assert [s.stage_name for s in stages] == ["prod"]


def test_unknown_env_is_refused_listing_the_defined_ones(no_default_account: None) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^env='qa': unknown environment; defined: dev, prod, staging"
    ):
        build_app(make_app(environments=shipped_environments(), env="qa"))


def test_a_broken_environment_fails_even_when_another_is_selected(no_default_account: None) -> None:
    environments: dict[str, Any] = shipped_environments()
    environments["staging"]["serving"]["min_capacity"] = 0
    with pytest.raises(NeuronConfigError, match=r"^environments\.staging\.serving\.min_capacity=0"):
        build_app(make_app(environments=environments, env="dev"))


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_environment_tags_reach_every_taggable_resource(built: SynthesizedApp, env: str) -> None:
    expected = shipped_environments()[env]["tags"]
    tagged = 0
    for stack_id in EnvironmentStage.STACK_IDS:
        for resource_id, resource in built.template(env, stack_id)["Resources"].items():
            tags = resource.get("Properties", {}).get("Tags")
            if isinstance(tags, list):
                tagged += 1
                assert expected.items() <= {t["Key"]: t["Value"] for t in tags}.items(), resource_id
    assert tagged >= 10


def test_stacks_that_retain_data_are_termination_protected(built: SynthesizedApp) -> None:
    for name, stage in built.stages.items():
        retain = shipped_environments()[name].get("removal_policy", "retain") == "retain"
        assert all(stack.termination_protection is retain for stack in stage.stacks), name


def test_cdk_provider_lambdas_carry_reasoned_lint_and_checkov_skips(built: SynthesizedApp) -> None:
    handlers = [
        resource
        for env in built.stages
        for stack_id in EnvironmentStage.STACK_IDS
        for resource in built.template(env, stack_id)["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler") == "__entrypoint__.handler"
    ]
    assert handlers
    for handler in handlers:
        assert handler["Metadata"]["cfn-lint"] == {"config": {"ignore_checks": ["W3005"]}}
        skips = handler["Metadata"]["checkov"]["skip"]
        assert {s["id"] for s in skips} == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117"}
        assert all(len(s["comment"]) > 20 for s in skips)
