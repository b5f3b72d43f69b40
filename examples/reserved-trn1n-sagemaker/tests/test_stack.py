"""Snapshot and property tests for a user's own stack built from cdk-neuron.

This is the pattern to copy into your CI: synthesize once per module, assert the properties you
rely on, and snapshot the whole template with volatile values (asset hashes, bootstrap version)
removed, so an upgrade of cdk-neuron shows up as a reviewable diff.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

import cdk_neuron
from app import build
from cdk_neuron.deploy_rules import lint_template
from cdk_neuron.lifecycle import lifecycle_findings


@pytest.fixture(scope="module")
def stack() -> cdk.Stack:
    with open("cdk.json") as f:  # the same feature flags `cdk synth` uses
        return build(cdk.App(context=json.load(f)["context"]))


@pytest.fixture(scope="module")
def template(stack: cdk.Stack) -> Template:
    return Template.from_stack(stack)


def normalize(template: dict[str, Any]) -> dict[str, Any]:
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    template.get("Rules", {}).pop("CheckBootstrapVersion", None)
    return json.loads(re.sub(r"[0-9a-f]{64}", "ASSET_HASH", json.dumps(template, sort_keys=True)))


def test_synthesizes_without_credentials(tmp_path: Any) -> None:
    """``cdk synth`` makes no AWS call: cdk.context.json answers every context lookup.

    The VPC checks its ``availability_zones`` against the stack's, which is an
    ``availability-zones`` lookup for an environment-specific stack. Without the committed answer,
    ``cdk synth`` stops with "Need to perform AWS calls ... no credentials have been configured".
    """
    with open("cdk.json") as f, open("cdk.context.json") as g:
        context = {**json.load(f)["context"], **json.load(g)}
    app = cdk.App(context=context, outdir=str(tmp_path))
    build(app)
    with open(f"{app.synth().directory}/manifest.json") as f:
        assert json.load(f).get("missing") is None


def test_uses_the_installed_package_not_a_checkout() -> None:
    assert "site-packages" in (cdk_neuron.__file__ or "")


def test_training_launches_only_into_the_reservation(template: Template) -> None:
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "InstanceType": "trn1n.32xlarge",
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
                    },
                }
            )
        },
    )


def test_sixteen_efa_interfaces_on_trn1n(template: Template) -> None:
    (lt,) = template.find_resources("AWS::EC2::LaunchTemplate").values()
    interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    assert sorted(i["NetworkCardIndex"] for i in interfaces) == list(range(16))


def test_sagemaker_endpoint_on_inf2(template: Template) -> None:
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InstanceType": "ml.inf2.8xlarge"})]},
    )


def test_snapshot(template: Template, snapshot: SnapshotAssertion) -> None:
    assert normalize(template.to_json()) == snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("pack", [AwsSolutionsChecks, NIST80053R5Checks])
def test_no_unacknowledged_nag_findings(stack: cdk.Stack, pack: Any) -> None:
    report = pack().validate_scope(stack)
    assert [(v.rule_name, [r.construct_path for r in v.violating_resources]) for v in report.violations] == []


def test_deploy_rules_find_no_defect(template: Template) -> None:
    """cdk-neuron's deploy rules: the constraints AWS services enforce at create time."""
    assert [f"{m.rule.id} {m.message}" for m in lint_template(template.to_json())] == []


def test_survives_a_failed_first_deploy_and_keeps_no_key_it_deletes(
    stack: cdk.Stack, template: Template
) -> None:
    """The lifecycle checks cdk-neuron runs on its own app: nothing a rolled-back first create keeps
    has a fixed name (the retry would fail), and no deleted key encrypts kept data. For a stack
    you destroy every evening, pass teardown=True as well."""
    found = lifecycle_findings({stack.stack_name: template.to_json()}, teardown=False)
    assert [str(f) for f in found] == []
