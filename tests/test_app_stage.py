"""The app: one stage per environment, `-c env=NAME` selection, accounts, tags and protection."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
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
    # Only dev leaves its account open (it destroys its data); staging and prod name theirs.
    accounts = {name: stage.account for name, stage in built.stages.items()}
    assert accounts == {"dev": PLACEHOLDER_ACCOUNT, "staging": "111111111111", "prod": "222222222222"}


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


def _messages(stage: cdk.Stage, kind: str) -> dict[str, list[str]]:
    """The annotations of ``kind`` (``aws:cdk:warning``, ``aws:cdk:error``) on each stack of ``stage``."""
    return {
        stack.node.path: [str(entry.data) for entry in stack.node.metadata if entry.type == kind]
        for stack in stage.node.children
        if isinstance(stack, cdk.Stack)
    }


def test_credentials_for_another_account_stop_only_that_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rough edge 1: ``cdk deploy 'dev/**'`` with dev's credentials synthesizes although prod names
    another account; prod's stacks say why the CDK CLI will not deploy them with these credentials,
    and selecting prod (``-c env=prod``, as ``make deploy ENV=prod`` does) is refused outright."""
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "999999999999")
    shipped = shipped_environments()
    two = {name: shipped[name] for name in ("dev", "prod")}
    dev, prod = build_app(make_app(environments=two))
    assert set(_messages(dev, "aws:cdk:warning")) == {
        "dev/Network",
        "dev/Training",
        "dev/Serving",
        "dev/Monitoring",
    }
    for stage in (dev, prod):  # no error anywhere: the recommended flags fail a whole synthesis on one
        assert all(not errors for errors in _messages(stage, "aws:cdk:error").values())
    assert not any(
        "999999999999" in w for warnings in _messages(dev, "aws:cdk:warning").values() for w in warnings
    )
    expected = (
        "environments.prod.account='222222222222': the credentials are for account 999999999999: deploy prod "
        "with credentials for 222222222222, or from another account through CDK bootstrap trust with "
        "-c cross_account=true"
    )
    for stack, warnings in _messages(prod, "aws:cdk:warning").items():
        assert [w for w in warnings if "999999999999" in w] == [
            f"{expected} [ack: @cdk-neuron/app:otherAccount]"
        ], stack

    with pytest.raises(NeuronConfigErrors) as raised:
        build_app(make_app(environments=two, env="prod"))
    assert str(raised.value) == expected


def test_cross_account_context_and_matching_credentials_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "222222222222")
    (stage,) = build_app(make_app(environments=shipped_environments(), env="prod"))
    assert stage.account == "222222222222"
    stages = build_app(make_app(environments=shipped_environments(), cross_account="true"))
    assert [s.stage_name for s in stages] == ["dev", "staging", "prod"]


def test_a_broken_cdk_json_prints_one_line_per_error_and_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from stacks.app_builder import report

    environments = shipped_environments()
    broken = {name: dict(env) for name, env in environments.items()}
    broken["dev"]["regoin"] = "us-east-1"
    broken["prod"]["account"] = "12"
    with pytest.raises(NeuronConfigError) as raised:
        build_app(make_app(environments=broken))
    assert report(raised.value) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "cdk-neuron: environments.dev.regoin='us-east-1': unknown key; did you mean 'region'? valid keys here: "
        "account, region, az_ids, removal_policy, tags, network, training, storage, serving, monitoring, ami_release, "
        "compilation",
        "cdk-neuron: environments.prod.account='12': must be a 12-digit AWS account id, or null",
    ]


def test_make_diff_and_deploy_select_one_environment_and_deploy_shows_its_impact_first() -> None:
    import subprocess

    from cdk_support import REPO_ROOT

    def dry_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "-n", "--no-print-directory", *args], cwd=REPO_ROOT, capture_output=True, text=True
        )

    assert "cdk diff -c env=dev 'dev/*'" in dry_run("diff", "ENV=dev").stdout
    deploy = dry_run("deploy", "ENV=prod").stdout.splitlines()
    synth = deploy.index("cdk synth -c env=prod 'prod/*' --quiet --no-notices --output build/deploy-prod")
    # What the deploy will do comes first, from the very assembly that is then deployed, and risk stops it.
    shown = deploy.index(
        "cdk-neuron impact --deployed --app build/deploy-prod --env prod --unblock --fail-on-risk"
    )
    deployed = deploy.index("cdk deploy --app build/deploy-prod 'prod/*' --no-notices")
    assert synth < shown < deployed
    accepted = dry_run("deploy", "ENV=prod", "ACCEPT_RISK=1").stdout
    assert "--fail-on-risk" not in accepted and "cdk deploy --app build/deploy-prod" in accepted
    missing = dry_run("diff")
    assert missing.returncode != 0
    assert "give the environment: make diff ENV=<name>" in missing.stderr
