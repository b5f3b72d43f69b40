"""``preflight`` on a HyperPod environment: SageMaker's cluster quotas, found by name (Stubber), and
no EC2 vCPU quota for the HyperPod nodes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cdk_neuron import planner
from cdk_neuron.cli.preflight import ec2_quotas, hyperpod_quotas, run, training_plan
from cdk_neuron.cli.preflight.base import CheckContext, Row
from cdk_neuron.deployment import Deployment, HyperPodLocation, TrainingDeployment

REGION = "us-east-1"
ACCOUNT = "123456789012"


def hyperpod_env(
    name: str, *, max_nodes: int = 4, instance_type: str = "trn1.32xlarge", **location: Any
) -> Deployment:
    return Deployment(
        name=name,
        region=REGION,
        account=ACCOUNT,
        az_ids=("use1-az6",),
        training=TrainingDeployment(
            instance_type=instance_type,
            max_nodes=max_nodes,
            plan=planner.plan_training(instance_type, 2, 32),
            engine="hyperpod",
            worker_count=0,
            hyperpod=HyperPodLocation(stack_name=f"{name}-Training", **location),
        ),
    )


def batch_env(name: str) -> Deployment:
    return Deployment(
        name=name,
        region=REGION,
        account=ACCOUNT,
        az_ids=("use1-az6",),
        training=TrainingDeployment(
            instance_type="trn1.32xlarge", max_nodes=2, plan=planner.plan_training("trn1.32xlarge", 2, 32)
        ),
    )


def q(name: str, code: str, value: float) -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaCode": code, "QuotaName": name, "Value": value}


TRN = "ml.trn1.32xlarge for cluster usage"
M5 = "ml.m5.xlarge for cluster usage"


def quotas(applied: list[dict[str, Any]], defaults: list[dict[str, Any]], *, pages: bool = False) -> Any:
    client = boto3.client(
        "service-quotas", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stub = Stubber(client)
    if pages and applied:
        stub.add_response(
            "list_service_quotas", {"Quotas": applied[:1], "NextToken": "2"}, {"ServiceCode": "sagemaker"}
        )
        stub.add_response(
            "list_service_quotas", {"Quotas": applied[1:]}, {"ServiceCode": "sagemaker", "NextToken": "2"}
        )
    else:
        stub.add_response("list_service_quotas", {"Quotas": applied}, {"ServiceCode": "sagemaker"})
    stub.add_response("list_aws_default_service_quotas", {"Quotas": defaults}, {"ServiceCode": "sagemaker"})
    stub.activate()
    return client, stub


def check(envs: list[Deployment], client: Any, only: Deployment | None = None) -> list[Row]:
    return run(
        [only or envs[0]],
        envs,
        lambda service, region: client,
        checks=(hyperpod_quotas.CHECK, ec2_quotas.CHECK),
    )


def table(rows: list[Row]) -> list[tuple[str, str, str]]:
    return [(r.check, r.subject, r.status) for r in rows]


def test_every_cluster_quota_is_checked_by_name_and_ec2_is_not_asked() -> None:
    client, stub = quotas(
        [q(TRN, "L-0000TRN1", 8), q(hyperpod_quotas.TOTAL_QUOTA, "L-3308CCC7", 30)],
        [
            q(M5, "L-00000M5X", 4),
            q(hyperpod_quotas.PER_CLUSTER_QUOTA, "L-2CE978FC", 20),
            q(TRN, "L-0000TRN1", 0),
        ],
        pages=True,
    )
    rows = check([hyperpod_env("dev")], client)
    stub.assert_no_pending_responses()  # no GetServiceQuota for EC2's Trn vCPUs
    assert table(rows) == [
        ("hyperpod quota", f"{TRN} (L-0000TRN1)", "PASS"),
        ("hyperpod quota", f"{M5} (L-00000M5X)", "PASS"),
        ("hyperpod quota", f"{hyperpod_quotas.PER_CLUSTER_QUOTA} (L-2CE978FC)", "PASS"),
        ("hyperpod quota", f"{hyperpod_quotas.TOTAL_QUOTA} (L-3308CCC7)", "PASS"),
    ]
    # The applied value wins over the default of the same quota.
    assert rows[0].detail == "8 >= 4 needed: dev workers (4)"
    assert rows[3].detail == "30 >= 5 needed: dev (5)"


def test_a_low_quota_fails_with_the_increase_command_and_counts_every_hyperpod_environment() -> None:
    envs = [hyperpod_env("dev", max_nodes=4), hyperpod_env("prod", max_nodes=16), batch_env("staging")]
    client, _ = quotas(
        [q(TRN, "L-0000TRN1", 16), q(M5, "L-00000M5X", 2)],
        [
            q(hyperpod_quotas.PER_CLUSTER_QUOTA, "L-2CE978FC", 20),
            q(hyperpod_quotas.TOTAL_QUOTA, "L-3308CCC7", 0),
        ],
    )
    rows = check(envs, client)
    by_subject = {r.subject: r for r in rows}
    trn = by_subject[f"{TRN} (L-0000TRN1)"]
    assert trn.status == "FAIL"
    assert trn.detail.startswith("16 < 20 needed: dev workers (4) + prod workers (16)")
    assert trn.command == (
        "aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code L-0000TRN1 "
        f"--desired-value 20 --region {REGION}"
    )
    assert by_subject[f"{M5} (L-00000M5X)"].status == "PASS"  # two controllers, quota 2
    total = by_subject[f"{hyperpod_quotas.TOTAL_QUOTA} (L-3308CCC7)"]
    assert (total.status, total.detail.split(".")[0]) == ("FAIL", "0 < 22 needed: dev (5) + prod (17)")


def test_a_quota_not_found_by_name_is_a_warning_not_a_pass() -> None:
    client, _ = quotas([], [q(M5, "L-00000M5X", 4)])
    rows = check([hyperpod_env("dev")], client)
    trn = next(r for r in rows if r.subject == TRN)
    assert trn.status == "WARN"
    assert "no SageMaker quota of that name" in trn.detail and "allows 4: dev workers (4)" in trn.detail


def test_the_controller_type_the_app_names_is_the_one_counted() -> None:
    client, _ = quotas([q(TRN, "L-0000TRN1", 8), q("ml.c5.2xlarge for cluster usage", "L-0000C52X", 1)], [])
    rows = check([hyperpod_env("dev", controller_instance_type="ml.c5.2xlarge")], client)
    assert ("hyperpod quota", "ml.c5.2xlarge for cluster usage (L-0000C52X)", "PASS") in table(rows)


def test_other_engines_are_not_checked_against_sagemaker() -> None:
    env = batch_env("dev")
    assert hyperpod_quotas.check_hyperpod_quotas(CheckContext(env, [env], lambda s, r: None)) == []


def test_ec2_vcpus_leave_hyperpod_training_out_of_a_shared_account() -> None:
    envs = [hyperpod_env("dev", max_nodes=16), batch_env("staging")]
    client = boto3.client(
        "service-quotas", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stub = Stubber(client)
    stub.add_response(
        "get_service_quota",
        {
            "Quota": {
                "ServiceCode": "ec2",
                "QuotaCode": "L-2C3B7624",
                "QuotaName": "Running On-Demand Trn instances",
                "Value": 256,
            }
        },
        {"ServiceCode": "ec2", "QuotaCode": "L-2C3B7624"},
    )
    stub.activate()
    rows = run([envs[1]], envs, lambda s, r: client, checks=(hyperpod_quotas.CHECK, ec2_quotas.CHECK))
    (row,) = rows
    assert (
        row.status == "PASS"
        and row.detail == "256 vCPUs >= 256 needed: staging training 2 x trn1.32xlarge (256)"
    )


# -- the training plan ------------------------------------------------------------------------------

PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/trn1-week"


def plan_env(**overrides: Any) -> Deployment:
    from dataclasses import replace

    from cdk_neuron.training.capacity import Capacity

    env = hyperpod_env("dev", **overrides)
    assert env.training is not None
    return replace(env, training=replace(env.training, capacity=Capacity.training_plan(PLAN)))


def described_plan(**changes: Any) -> dict[str, Any]:
    from cli_support import RecordingClock

    start = RecordingClock.START
    plan: dict[str, Any] = {
        "TrainingPlanArn": PLAN,
        "TrainingPlanName": "trn1-week",
        "Status": "Active",
        "StartTime": start - timedelta(days=1),
        "EndTime": start + timedelta(days=6),
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/rc-1",
                "InstanceType": "ml.trn1.32xlarge",
                "TotalInstanceCount": 4,
                "Status": "Active",
                "AvailabilityZone": "us-east-1b",
                "AvailabilityZoneId": "use1-az6",
            }
        ],
    }
    plan.update(changes)
    return plan


def plan_rows(env: Deployment, response: dict[str, Any] | None) -> list[Row]:
    from cli_support import RecordingClock

    sagemaker = boto3.client(
        "sagemaker", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(sagemaker)
    if response is None:
        stub.add_client_error(
            "describe_training_plan",
            "ResourceNotFound",
            "not found",
            expected_params={"TrainingPlanName": PLAN},
        )
    else:
        stub.add_response("describe_training_plan", response, {"TrainingPlanName": PLAN})
    stub.activate()
    rows = run(
        [env], [env], lambda service, region: sagemaker, checks=(training_plan.CHECK,), clock=RecordingClock()
    )
    stub.assert_no_pending_responses()
    return rows


def test_an_active_plan_for_hyperpod_in_the_training_az_passes() -> None:
    rows = plan_rows(plan_env(), described_plan())
    assert [(r.subject, r.status) for r in rows] == [(PLAN, "PASS"), (f"{PLAN} ml.trn1.32xlarge", "PASS")]
    assert rows[1].detail == "4 reserved in use1-az6, the training AZ"


@pytest.mark.parametrize(
    ("changes", "status", "detail"),
    [
        ({"TargetResources": ["training-job"]}, "FAIL", "the plan serves training-job, not HyperPod clusters"),
        ({"Status": "Expired"}, "FAIL", "the plan is Expired"),
        ({"Status": "Pending"}, "WARN", "the plan is Pending"),
        ({"EndTime": datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)}, "WARN", "the plan is Active and ends 2026-12-02T12:00"),
    ],
)  # fmt: skip
def test_a_plan_that_cannot_serve_the_cluster_now_is_named(
    changes: dict[str, Any], status: str, detail: str
) -> None:
    (first, *_) = [r for r in plan_rows(plan_env(), described_plan(**changes)) if r.status == status]
    assert detail in first.detail


def test_a_plan_in_another_az_fails_and_a_small_one_warns() -> None:
    summary = described_plan()["ReservedCapacitySummaries"][0] | {
        "AvailabilityZoneId": "use1-az4",
        "TotalInstanceCount": 2,
    }
    rows = plan_rows(plan_env(), described_plan(ReservedCapacitySummaries=[summary]))
    by_status = {r.status: r.detail for r in rows if r.subject.endswith("ml.trn1.32xlarge")}
    assert by_status["WARN"].startswith("the plan reserves 2 instances and max_nodes is 4")
    assert "reserved in use1-az4, and the cluster's subnets are in use1-az6" in by_status["FAIL"]


def test_a_plan_for_another_type_and_a_missing_plan_fail() -> None:
    summary = described_plan()["ReservedCapacitySummaries"][0] | {"InstanceType": "ml.trn2.48xlarge"}
    rows = plan_rows(plan_env(), described_plan(ReservedCapacitySummaries=[summary]))
    assert rows[-1].status == "FAIL" and "reserves ml.trn2.48xlarge, not ml.trn1.32xlarge" in rows[-1].detail
    (missing,) = plan_rows(plan_env(), None)
    assert missing.status == "FAIL" and "no such training plan in us-east-1" in missing.detail


def test_on_demand_hyperpod_has_no_training_plan_row() -> None:
    assert training_plan.check_training_plan(CheckContext(hyperpod_env("dev"), [], lambda s, r: None)) == []


# -- every check on a HyperPod environment ----------------------------------------------------------


class Refusing:
    """A client whose every call AWS refuses: a check that is not built for HyperPod then shows up as
    an exception that is not an AWS error (preflight re-raises those), not as a FAIL row."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __getattr__(self, name: str) -> Any:
        from botocore.exceptions import ClientError

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, name)

        return refuse


def test_no_check_breaks_on_a_hyperpod_environment_on_a_training_plan() -> None:
    from cdk_neuron.cli.preflight import CHECKS

    env = plan_env()
    rows = run([env], [env], lambda service, region: Refusing(service), checks=CHECKS)
    failed = {r.check for r in rows if r.status == "FAIL"}
    assert {"hyperpod quota", "training plan"} <= failed  # asked, refused, reported
    # Neither the EC2 capacity-reservation check, nor the ECS AMI (HyperPod boots its own image).
    assert not [r for r in rows if r.check in ("capacity", "capacity exists", "AMI parameter")]


def test_hyperpod_needs_its_own_service_linked_role_and_not_auto_scaling() -> None:
    from cdk_neuron.cli.preflight.service_linked_roles import _service_linked_roles

    names = {role.name: role for role in _service_linked_roles(hyperpod_env("dev"))}
    assert names["AWSServiceRoleForSageMakerHyperPod"].service == "hyperpod.sagemaker.amazonaws.com"
    assert names["AWSServiceRoleForSageMakerHyperPod"].missing == "INFO"
    assert "AWSServiceRoleForAutoScaling" not in names
    assert "AWSServiceRoleForAutoScaling" in {r.name for r in _service_linked_roles(batch_env("dev"))}


def test_the_session_plugin_is_looked_for_only_for_hyperpod(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from cdk_neuron.cli.preflight import session_plugin

    monkeypatch.setenv("PATH", str(tmp_path))
    (row,) = session_plugin.check_session_plugin(CheckContext(hyperpod_env("dev"), [], lambda s, r: None))
    assert row.status == "WARN" and "not on PATH" in row.detail
    plugin = tmp_path / "session-manager-plugin"
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(0o755)
    (row,) = session_plugin.check_session_plugin(CheckContext(hyperpod_env("dev"), [], lambda s, r: None))
    assert row.status == "PASS" and row.detail == str(plugin)
    assert session_plugin.check_session_plugin(CheckContext(batch_env("dev"), [], lambda s, r: None)) == []
