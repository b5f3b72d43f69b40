"""The compliance gate, on every stack of every environment in cdk.json.

- cdk-nag v3, AwsSolutions and NIST 800-53 rev 5: nothing left after acknowledgments.
- cfn-lint: no error and no warning, linted for the environment's own region.
- No security group ingress from the whole internet.
- No context lookup left unresolved in the assembly (the app synthesizes without credentials).
- A snapshot of every stack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app
from syrupy.assertion import SnapshotAssertion

from cdk_support import nag_violations, normalize_template
from stacks.stage import EnvironmentStage

ENVIRONMENTS = shipped_environments()
STACKS = [(env, stack_id) for env in ENVIRONMENTS for stack_id in EnvironmentStage.STACK_IDS]
STACK_IDS = [f"{env}-{stack_id}" for env, stack_id in STACKS]
OPEN_CIDRS = {"0.0.0.0/0", "::/0"}


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.mark.parametrize("env", list(ENVIRONMENTS))
def test_cdk_nag_reports_nothing_unacknowledged(built: SynthesizedApp, env: str) -> None:
    assert nag_violations(built.stages[env]) == []


def _cfn_lint(template: Path, region: str) -> list[str]:
    from cfnlint.api import lint_file
    from cfnlint.config import ManualArgs

    return [str(match) for match in lint_file(template, config=ManualArgs(regions=[region]))]


@pytest.mark.parametrize(("env", "stack_id"), STACKS, ids=STACK_IDS)
def test_cfn_lint_finds_no_error_or_warning(built: SynthesizedApp, env: str, stack_id: str) -> None:
    assert _cfn_lint(built.template_path(env, stack_id), ENVIRONMENTS[env]["region"]) == []


def _open_ingress(template: dict[str, Any]) -> list[str]:
    found = []
    for resource_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::EC2::SecurityGroup":
            rules = properties.get("SecurityGroupIngress", [])
        elif resource["Type"] == "AWS::EC2::SecurityGroupIngress":
            rules = [properties]
        else:
            continue
        found += [resource_id for rule in rules if {rule.get("CidrIp"), rule.get("CidrIpv6")} & OPEN_CIDRS]
    return found


@pytest.mark.parametrize(("env", "stack_id"), STACKS, ids=STACK_IDS)
def test_no_security_group_ingress_from_the_internet(built: SynthesizedApp, env: str, stack_id: str) -> None:
    assert _open_ingress(built.template(env, stack_id)) == []


def test_the_open_ingress_check_can_fail() -> None:
    template = {
        "Resources": {
            "Sg": {
                "Type": "AWS::EC2::SecurityGroup",
                "Properties": {"SecurityGroupIngress": [{"CidrIp": "0.0.0.0/0"}]},
            },
            "In": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {"CidrIpv6": "::/0"}},
        }
    }
    assert _open_ingress(template) == ["Sg", "In"]


def test_the_assembly_has_no_missing_context(built: SynthesizedApp) -> None:
    manifests = built.manifests()
    assert len(manifests) == 1 + len(ENVIRONMENTS)  # the app's and one per stage
    assert [m.get("missing", []) for m in manifests] == [[]] * len(manifests)


@pytest.mark.parametrize(("env", "stack_id"), STACKS, ids=STACK_IDS)
def test_snapshot(built: SynthesizedApp, env: str, stack_id: str, snapshot_json: SnapshotAssertion) -> None:
    assert normalize_template(built.template(env, stack_id)) == snapshot_json
