"""The deploy-rules gate over the whole app (every environment and stack of cdk.json).

The construct test modules gate their own stacks with the same helper (``deploy_rules_gate``).
"""

from __future__ import annotations

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app
from deploy_rules_gate import APP_STACKS, GATED_TEMPLATES, KNOWN_DEFECTS, check_gate, findings, gate_params

ENVIRONMENTS = shipped_environments()


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "rule"), gate_params(*(f"app:{env}/{stack}" for env in ENVIRONMENTS for stack in APP_STACKS))
)
def test_app_templates_pass_the_deploy_rules(built: SynthesizedApp, name: str, rule: str | None) -> None:
    env, stack = name.removeprefix("app:").split("/")
    check_gate(name, built.template(env, stack), rule, region=ENVIRONMENTS[env]["region"])


def test_every_known_defect_names_a_gated_template_and_a_rule() -> None:
    from cdk_neuron.deploy_rules import rule_classes

    ids = {cls.id for cls in rule_classes()}
    for (template, rule), reason in KNOWN_DEFECTS.items():
        assert template in GATED_TEMPLATES, template
        assert rule in ids, rule
        assert len(reason) > 40, (template, rule)


def test_the_gate_can_fail() -> None:
    """A template with a defect that is not a known one fails the clean case."""
    template = {
        "Resources": {
            "Tg": {
                "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
                "Properties": {"HealthCheckIntervalSeconds": 5, "HealthCheckTimeoutSeconds": 6},
            }
        }
    }
    assert [rule for rule, _ in findings(template)] == ["E9402"]
    with pytest.raises(AssertionError, match="new deploy defects in app:dev/Network"):
        check_gate("app:dev/Network", template, None)
    with pytest.raises(AssertionError, match="HealthCheckTimeoutSeconds 6"):
        check_gate("app:dev/Network", template, "E9402")
