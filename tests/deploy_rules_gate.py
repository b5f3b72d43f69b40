"""The deploy-rules gate: our cfn-lint rules (only ours, in-process) over every template we ship or test.

Every gated template has a name, listed in ``GATED_TEMPLATES``. For each template, ``gate_params``
yields one "clean" case (no finding except the known defects of that template) and one case per
entry of ``KNOWN_DEFECTS`` for it. A known-defect case asserts that the rule does *not* fire and is
marked ``xfail(strict=True)``: it fails as expected while the defect is there, and turns into a
strict XPASS failure the day the template is fixed, which is the reminder to delete the entry.

A new defect (a rule firing that is not listed) fails the clean case with the rule's message.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from app_assembly import shipped_environments

APP_STACKS = ("Network", "Training", "Serving", "Monitoring")

# Template name -> nothing; the names the construct test modules and the app test gate. A known
# defect of a template that is not gated would never run, so test_deploy_rules_gate checks the keys.
GATED_TEMPLATES: tuple[str, ...] = (
    *(f"app:{env}/{stack}" for env in shipped_environments() for stack in APP_STACKS),
    "training_cluster:trn1",
    "training_cluster:trn1n",
    "training_cluster:trn2",
    "training_cluster:trn3",
    "training_asg:group",
    "training_hyperpod:cluster",
    "serving_ec2:stack",
    "serving_ec2:variants",
    "serving_sagemaker:stack",
    "storage_checkpoint_store:regional",
    "storage_checkpoint_store:one_zone",
    "storage_checkpoint_store:quiet",
    "storage_compile_cache:stack",
    "storage_compile_cache:custom",
    "monitoring_construct:prod",
    "monitoring_construct:dev-workloads",
    "monitoring_construct:dev-monitoring",
)

# (template name, rule id) -> what is wrong, for a defect found but not yet fixed; delete an entry when
# its case XPASSes. Empty: the five defects the gate found on 0.1.0's templates (Batch security groups
# beside EFA interfaces, EFA devices without MKNOD, a rolling-update pause over PT1H, user data over
# 16 KB) are fixed, and the 0.1.0 template stays a fixture (tests/deploy_rules/fixtures/legacy).
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}


def gate_params(*templates: str) -> list[Any]:
    """pytest params (template name, rule id or None) for the given gated templates."""
    params: list[Any] = []
    for name in templates:
        assert name in GATED_TEMPLATES, f"{name} is not in GATED_TEMPLATES"
        params.append(pytest.param(name, None, id=f"{name}-clean"))
        for (template, rule), reason in sorted(KNOWN_DEFECTS.items()):
            if template == name:
                params.append(
                    pytest.param(
                        name, rule, id=f"{name}-{rule}", marks=pytest.mark.xfail(strict=True, reason=reason)
                    )
                )
    return params


@functools.cache
def _findings(text: str, region: str) -> tuple[tuple[str, str], ...]:
    from cdk_neuron.deploy_rules import lint_template

    return tuple((m.rule.id, m.message) for m in lint_template(text, region=region))


def findings(template: dict[str, Any], region: str = "us-east-1") -> list[tuple[str, str]]:
    """(rule id, message) of every deploy-rule finding; cached, as a template is checked once per case."""
    return list(_findings(json.dumps(template, sort_keys=True), region))


def check_gate(name: str, template: dict[str, Any], rule: str | None, region: str = "us-east-1") -> None:
    found = findings(template, region)
    if rule is not None:
        # A known defect: this assertion fails (xfail) until the template is fixed.
        hits = [message for rule_id, message in found if rule_id == rule]
        assert not hits, "\n".join(hits)
        return
    known = {r for (t, r) in KNOWN_DEFECTS if t == name}
    new = [f"{rule_id} {message}" for rule_id, message in found if rule_id not in known]
    assert not new, f"new deploy defects in {name}:\n" + "\n".join(new)
