"""A Deployment with only some parts: training only, serving only, AZ IDs unknown at synthesis.

Every command handles a missing part: ``plan`` and ``cost`` omit its section and say so,
``preflight`` skips its checks (one INFO row says which), and the job commands refuse clearly
when there is no AWS Batch training cluster.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron import planner
from cdk_neuron.cli import cost, plan, preflight, submit
from cdk_neuron.cli.main import main
from cdk_neuron.cli.output import Report, render_text
from cdk_neuron.cli.preflight import (
    artifacts,
    capacity,
    certificate,
    offerings,
    sagemaker_quota,
    scope,
    secret,
    service_linked_roles,
)
from cdk_neuron.cli.pricing import PriceBook
from cdk_neuron.deployment import (
    CheckpointSizing,
    Deployment,
    ServingDeployment,
    StandingResources,
    TrainingDeployment,
)
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import ModelSpec, ServingEngine


def training(**overrides: Any) -> TrainingDeployment:
    values: dict[str, Any] = {
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "plan": planner.plan_training("trn1.32xlarge", 2, 32),
        "checkpoint": CheckpointSizing(model_parameters=8_000_000_000, writers=2),
    }
    return TrainingDeployment(**{**values, **overrides})


def serving(backend: str = "ec2") -> ServingDeployment:
    model = ModelSpec(
        model_id="meta-llama/Llama-3.2-3B-Instruct", parameters=3_210_000_000, tensor_parallel=2
    )
    return ServingDeployment(
        backend=backend,  # type: ignore[arg-type]
        engine=ServingEngine.optimum_neuron(),
        model=model,
        plan=model.plan("inf2.xlarge"),
        min_capacity=1,
        max_capacity=2,
        instance_type="inf2.xlarge",
    )


def plain(report: Report) -> str:
    out = io.StringIO()
    render_text(report, out)
    return out.getvalue()


def deployment(**parts: Any) -> Deployment:
    return Deployment(**{"name": "lab", "region": "us-east-1", "az_ids": ("use1-az6",), **parts})


def test_a_deployment_needs_a_part() -> None:
    with pytest.raises(NeuronConfigError, match="training cluster, an inference fleet or both"):
        Deployment(name="empty", region="us-east-1", az_ids=())


def test_az_ids_may_be_unknown() -> None:
    assert deployment(training=training(), az_ids=()).training_az_id is None


def test_plan_omits_the_missing_part_and_says_so() -> None:
    result = plan.build([deployment(training=training()), deployment(name="web", serving=serving())])
    lab, web = result.environments
    assert lab.serving is None and lab.training is not None and lab.training.nodes == 2
    assert lab.checkpoint is not None
    assert lab.omitted == ["no inference fleet: serving sizing omitted"]
    assert web.training is None and web.checkpoint is None
    assert web.serving is not None and web.serving.tensor_parallel == 2
    assert web.omitted == ["no training cluster: training placement and checkpoint estimate omitted"]
    text = plain(plan.render(result))
    assert "lab (us-east-1): no inference fleet: serving sizing omitted" in text
    assert "web (us-east-1): no training cluster" in text
    assert "serving sizing" in text and "training placement" in text


def test_plan_of_training_with_unknown_az() -> None:
    result = plan.build([deployment(training=training(), az_ids=())])
    assert result.to_json()["environments"][0]["training"]["az_id"] is None
    assert "an AZ unknown at synthesis" in plain(plan.render(result))


def test_cost_of_serving_only_has_no_training_lines() -> None:
    result = cost.build([deployment(serving=serving())])
    env = result.environments[0]
    items = [line.item for line in env.full_scale.lines]
    assert "serving instances (max_capacity)" in items
    assert not any(item.startswith("training") or item == "EFS checkpoints" for item in items)
    assert env.gpu_comparison.training == [] and env.gpu_comparison.serving
    assert env.claims and all("Inferentia" in c.claim for c in env.claims)
    assert env.omitted and result.summary[0].omitted == env.omitted
    text = plain(cost.render(result, details=True))
    assert "training cluster vs GPU clusters" not in text
    assert "lab: no training cluster: not priced" in plain(cost.render(result))


def test_cost_of_training_only_has_no_serving_lines() -> None:
    result = cost.build([deployment(training=training())])
    env = result.environments[0]
    items = [line.item for line in env.full_scale.lines]
    assert "training nodes (max_nodes)" in items and "EFS checkpoints" in items
    assert not any(item.startswith("serving") for item in items)
    assert env.gpu_comparison.serving == []
    assert cost.ec2_types(deployment(training=training())) >= {"trn1.32xlarge"}
    assert cost.sagemaker_types(deployment(training=training())) == set()


def test_log_groups_and_flow_logs_are_listed_not_priced() -> None:
    env = deployment(training=training(), standing=StandingResources(log_groups=3, flow_logs=1))
    lines = {line.item: line for line in cost.idle(env, PriceBook())}
    logs = lines["CloudWatch Logs groups and VPC flow logs"]
    assert logs.quantity == "3 log groups, 1 flow log" and logs.usd_per_hour == 0.0
    assert logs.basis.startswith("not priced")


def never_called(service: str, region: str) -> Any:
    raise AssertionError(f"no AWS call expected, got {service} in {region}")


def ctx(env: Deployment) -> preflight.CheckContext:
    return preflight.CheckContext(env, [env], never_called)


def test_preflight_skips_what_is_not_there() -> None:
    rows = scope.CHECK.run(ctx(deployment(training=training())))
    assert [(r.subject, r.status) for r in rows] == [("serving", "INFO")]
    env = deployment(serving=serving())
    assert [(r.subject, r.status) for r in scope.CHECK.run(ctx(env))] == [("training", "INFO")]
    training_only = ctx(deployment(training=training()))
    for check in (certificate.CHECK, secret.CHECK, artifacts.CHECK, sagemaker_quota.CHECK):
        assert check.run(training_only) == [], check.name
    assert capacity.CHECK.run(ctx(env)) == []
    roles = [r.name for r in service_linked_roles._service_linked_roles(env)]
    assert "AWSServiceRoleForBatch" not in roles and "AWSServiceRoleForAmazonElasticFileSystem" not in roles
    roles = [r.name for r in service_linked_roles._service_linked_roles(deployment(training=training()))]
    assert "AWSServiceRoleForElasticLoadBalancing" not in roles and "AWSServiceRoleForBatch" in roles


def test_preflight_reports_unknown_az_ids_as_info_without_calling_aws() -> None:
    env = deployment(training=training(), serving=serving(), az_ids=())
    rows = offerings.CHECK.run(ctx(env))
    assert [(r.status, r.detail.split(":")[0]) for r in rows] == [("INFO", "training"), ("INFO", "serving")]
    assert all("AZ IDs unknown at synthesis" in r.detail for r in rows)


def test_the_job_commands_refuse_without_a_batch_cluster() -> None:
    with pytest.raises(NeuronConfigError, match="web has no training cluster"):
        submit.batch_training(deployment(name="web", serving=serving()), "status")
    with pytest.raises(NeuronConfigError, match="Auto Scaling group"):
        submit.batch_training(deployment(training=training(engine="auto-scaling-group")), "submit")


@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "--", "python", "train.py"],
        ["status", "JOB"],
        ["logs", "JOB"],
        ["cancel", "JOB"],
        ["terminate", "JOB"],
        ["list"],
    ],
)
def test_job_commands_on_a_serving_only_app_refuse_in_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembly_writer import serving_record, write_manifest, write_stack

    write_manifest(tmp_path, {"Web": write_stack(tmp_path, "Web", records={"/Web/Fleet": serving_record()})})
    cut = argv.index("--") if "--" in argv else len(argv)
    full = [*argv[:cut], "--app", str(tmp_path), *argv[cut:]]
    assert main(full, clients=never_called) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "us-east-1 has no training cluster" in err


def test_plan_of_a_serving_only_app_says_what_it_omits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembly_writer import serving_record, write_manifest, write_stack

    write_manifest(tmp_path, {"Web": write_stack(tmp_path, "Web", records={"/Web/Fleet": serving_record()})})
    assert main(["plan", "--app", str(tmp_path), "-o", "text"]) == 0
    out = capsys.readouterr().out
    assert (
        "us-east-1 (us-east-1): no training cluster: training placement and checkpoint estimate omitted"
        in out
    )
    assert main(["cost", "--app", str(tmp_path), "-o", "text"]) == 0
    assert "us-east-1: no training cluster: not priced" in capsys.readouterr().out


class _Offerings:
    """An EC2 client that records how each DescribeInstanceTypeOfferings call names its locations."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def describe_instance_type_offerings(self, **kwargs: Any) -> dict[str, Any]:
        locations = next(f["Values"] for f in kwargs["Filters"] if f["Name"] == "location")
        self.calls.append((kwargs["LocationType"], locations))
        return {
            "InstanceTypeOfferings": [{"InstanceType": "inf2.xlarge", "Location": loc} for loc in locations]
        }


def test_preflight_reads_a_local_zone_id_as_an_az_id_as_validation_does() -> None:
    """One AZ-ID pattern (cdk_neuron.validation.AZ_ID): usw2-lax1-az1 is an ID, us-west-2a a name."""
    from dataclasses import replace

    from cdk_neuron.validation import AZ_ID

    assert AZ_ID.match("usw2-lax1-az1") and not AZ_ID.match("us-west-2a")
    fleet = replace(serving(), availability_zones=("usw2-lax1-az1", "us-west-2a"))
    ec2 = _Offerings()
    env = deployment(serving=fleet, region="us-west-2", az_ids=())
    rows = offerings.CHECK.run(preflight.CheckContext(env, [env], lambda service, region: ec2))
    assert sorted(ec2.calls) == [
        ("availability-zone", ["us-west-2a"]),
        ("availability-zone-id", ["usw2-lax1-az1"]),
    ]
    assert [(r.subject, r.status) for r in rows] == [
        ("inf2.xlarge @ usw2-lax1-az1", "PASS"),
        ("inf2.xlarge @ us-west-2a", "PASS"),
    ]
