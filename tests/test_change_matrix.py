"""The change matrix: every common change users make, synthesized and classified resource by resource.

The baseline is the session's whole-app synthesis (app_assembly); each change synthesizes only the
environment it touches (stacks.change_matrix). A common change may replace or delete nothing
stateful; a change that must (``replaces``) pins what and why, and that is what ``cdk-neuron impact``
warns about. The table in docs/lifecycle.md is generated from these results and held to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from app_assembly import shipped_environments, synthesized_app

from cdk_neuron.lifecycle import Change as Kind
from cdk_neuron.lifecycle import StackImpact, lifecycle_findings, stateful_losses
from cdk_support import cdk_json_context
from stacks.change_matrix import CHANGES, Change, compute, table
from stacks.config import load_environments
from tools.change_matrix import BEGIN, DOC, END

Results = dict[Change, list[StackImpact]]


_AFTERS: dict[Change, Mapping[str, Any]] = {}


@pytest.fixture(scope="session")
def matrix() -> Results:
    built = synthesized_app()
    return compute(shipped_environments(), built.environment, cdk_json_context(), afters=_AFTERS)


def _by_name(name: str) -> Change:
    return next(c for c in CHANGES if c.name == name)


def _changed(impacts: Sequence[StackImpact]) -> dict[str, Kind]:
    return {r.logical_id: r.change for s in impacts for r in s.resources if r.change is not Kind.UNCHANGED}


@pytest.mark.slow
@pytest.mark.parametrize("change", [c for c in CHANGES if c.common], ids=lambda c: f"{c.name}-{c.env}")
def test_a_common_change_replaces_and_deletes_nothing_stateful(matrix: Results, change: Change) -> None:
    assert [str(r.data_at_risk) for _, r in stateful_losses(matrix[change])] == []
    assert _changed(matrix[change]), "the change must change something, or it tests nothing"


@pytest.mark.slow
@pytest.mark.parametrize("change", CHANGES, ids=lambda c: f"{c.name}-{c.env}")
def test_after_every_change_the_environment_still_survives_a_retry_and_its_teardown(
    matrix: Results, change: Change
) -> None:
    """The retry and teardown checks hold for what each change deploys, not only for the baseline."""
    assert change in matrix
    teardown = load_environments(change.apply(shipped_environments()))[change.env].removal_policy == "destroy"
    assert [str(f) for f in lifecycle_findings(_AFTERS[change], teardown=teardown)] == []


@pytest.mark.slow
@pytest.mark.parametrize("change", [c for c in CHANGES if not c.common], ids=lambda c: f"{c.name}-{c.env}")
def test_a_change_that_must_replace_state_replaces_exactly_what_it_pins(
    matrix: Results, change: Change
) -> None:
    lost = {r.logical_id for _, r in stateful_losses(matrix[change])}
    assert {p for p in change.replaces if any(logical.startswith(p) for logical in lost)} == set(
        change.replaces
    )
    assert all(any(logical.startswith(p) for p in change.replaces) for logical in lost), lost


@pytest.mark.slow
def test_no_change_is_one_a_service_refuses(matrix: Results) -> None:
    refused = [
        (c.name, r.logical_id, r.fails)
        for c, impacts in matrix.items()
        for s in impacts
        for r in s.resources
        if r.fails
    ]
    assert refused == []


@pytest.mark.slow
def test_what_restarts_is_said_for_batch_sagemaker_and_the_serving_group(matrix: Results) -> None:
    ami = {r.logical_id: r for s in matrix[_by_name("AMI release")] for r in s.resources}
    compute = next(r for k, r in ami.items() if k.startswith("ClusterComputeEnvironment"))
    assert compute.change is Kind.UPDATED
    assert "running jobs may run 360 more minutes (6 h), then are terminated" in str(compute.restarts)
    # The serving group stays, and so does its capacity: its instances are refreshed, new ones first.
    model = {r.logical_id: r for s in matrix[_by_name("serving artifact (EC2)")] for r in s.resources}
    for found in (ami, model):
        group = next(r for k, r in found.items() if k.startswith("FleetGroupASG"))
        assert group.change is Kind.UPDATED
        assert group.restarts == (
            "every instance, by an instance refresh keeping 100% to 110% of the desired capacity healthy, "
            "launching each replacement before terminating the instance it replaces; the group and its "
            "capacity stay"
        )
    endpoint = {r.type: r for s in matrix[_by_name("serving instance type (SageMaker)")] for r in s.resources}
    assert endpoint["AWS::SageMaker::Endpoint"].change is Kind.REPLACED


@pytest.mark.slow
def test_monitoring_follows_a_replaced_file_system(matrix: Results) -> None:
    impacts = {s.stack: s for s in matrix[_by_name("storage.one_zone")]}
    alarms = [r for r in impacts["staging-Monitoring"].resources if r.type == "AWS::CloudWatch::Alarm"]
    assert any(r.change is Kind.UPDATED for r in alarms)
    # The consumer's template itself changes (the output it reads is renamed after the new file system's
    # generation): cdk deploy skips a stack whose template is unchanged, which is defect 6.
    from cdk_neuron.lifecycle.template import stack_outputs

    def read(template: Mapping[str, Any]) -> set[str]:
        return {output for stack, output in stack_outputs(template) if stack == "staging-Training"}

    before = synthesized_app().environment("staging")["staging-Monitoring"]
    after = _AFTERS[_by_name("storage.one_zone")]["staging-Monitoring"]
    assert read(before) and read(before) != read(after)


@pytest.mark.slow
def test_a_tag_edit_replaces_no_compute_environment_or_placement_group(matrix: Results) -> None:
    """Tags are create-only on both: a cost-center tag must not take running jobs down with the compute
    environment (stacks/stage.py applies only the identity tags there)."""
    replaced = [
        r.logical_id
        for s in matrix[_by_name("tags edited")]
        for r in s.resources
        if r.change is Kind.REPLACED
    ]
    assert replaced == []


@pytest.mark.slow
def test_only_the_dev_nat_follows_new_releases(matrix: Results) -> None:
    assert {k: v for k, v in _changed(matrix[_by_name("new AWS releases, no edit")]).items()
            if v is Kind.REPLACED} == {"VpcPublicSubnet1NatInstance57B636B8": Kind.REPLACED}  # fmt: skip


@pytest.mark.slow
def test_the_documented_table_is_the_matrix(matrix: Results) -> None:
    text = DOC.read_text()
    section = text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")
    assert section == table(matrix), "run: make change-matrix-doc"


def test_changes_are_named_once_and_each_environment_is_covered() -> None:
    names = [c.name for c in CHANGES]
    assert len(names) == len(set(names))
    assert {c.env for c in CHANGES} == set(shipped_environments())


@pytest.mark.slow
def test_a_new_model_keeps_the_fleet_its_capacity_warm_pool_and_the_old_grant_through_the_cut_over(
    matrix: Results,
) -> None:
    """Defect 5: a fleet scaled to 8 must not fall to min_capacity, the warm pool must not start empty,
    and instances still serving the old model must keep reading it until they are replaced.

    CloudFormation deletes a resource removed from the template only in the clean-up phase, after every
    update of the stack (the instance refresh included) has completed ("Update behaviors of stack
    resources", AWS CloudFormation User Guide), so the old model's grant, a separate managed policy,
    outlives the old instances; the new one exists before the group is updated (the group depends on it).
    """
    impacts = {s.stack: s for s in matrix[_by_name("serving artifact (EC2)")]}
    serving = impacts["prod-Serving"]
    grants = sorted(
        (r.change.value for r in serving.resources if r.logical_id.startswith("FleetArtifactPolicy")),
    )
    assert grants == [Kind.ADDED.value, Kind.DELETED.value]  # never narrowed in place
    role = [r for r in serving.resources if r.type == "AWS::IAM::Role"]
    assert role and all(r.change is Kind.UNCHANGED for r in role)
    (pool,) = [r for r in serving.resources if r.type == "AWS::AutoScaling::WarmPool"]
    assert pool.change is Kind.UNCHANGED  # the pool and its stopped instances stay

    template = synthesized_app().template("prod", "Serving")["Resources"]
    (group,) = [r for r in template.values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    assert "DesiredCapacity" not in group["Properties"]  # a deploy never resets what auto scaling set
    assert "AutoScalingReplacingUpdate" not in group["UpdatePolicy"]
    assert any(d.startswith("FleetArtifactPolicy") for d in group["DependsOn"])


@pytest.mark.slow
def test_a_new_sagemaker_artifact_updates_the_endpoint_blue_green_and_keeps_the_old_grant(
    matrix: Results,
) -> None:
    """The SageMaker side of the same rule: a new model and endpoint config, the endpoint updated (not
    replaced: its name and clients stay), and the old artifact's read grant a policy of its own that
    CloudFormation deletes only at clean-up, after the endpoint update completed."""
    (serving,) = [s for s in matrix[_by_name("serving artifact (SageMaker)")] if s.stack == "staging-Serving"]
    by_type: dict[str, list[Any]] = {}
    for r in serving.resources:
        by_type.setdefault(r.type, []).append(r)
    grants = sorted(
        r.change.value for r in serving.resources if r.logical_id.startswith("FleetSageMakerArtifactPolicy")
    )
    assert grants == [Kind.ADDED.value, Kind.DELETED.value]
    (model,) = by_type["AWS::SageMaker::Model"]
    (config,) = by_type["AWS::SageMaker::EndpointConfig"]
    (endpoint,) = by_type["AWS::SageMaker::Endpoint"]
    assert (model.change, config.change, endpoint.change) == (Kind.REPLACED, Kind.REPLACED, Kind.UPDATED)
    assert "starts the new configuration's instances, shifts traffic, then stops the old ones" in str(
        endpoint.restarts
    )
    (execution,) = [r for r in serving.resources if r.logical_id.startswith("FleetExecutionPolicy")]
    assert execution.change is Kind.UNCHANGED  # the artifact grant no longer lives in it
