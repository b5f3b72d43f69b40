"""The Fargate On-Demand vCPU quota holds the compile task.

A ModelCompilation task is the largest Fargate task (16 vCPU, :data:`FARGATE_CPU_UNITS`), and Fargate
counts every running task's vCPUs against one quota per account and Region, service code
``fargate``, "Fargate On-Demand vCPU resource count" ("Amazon ECS service quotas", AWS Fargate,
Amazon ECS Developer Guide, https://docs.aws.amazon.com/AmazonECS/latest/developerguide/service-quotas.html,
read 2026-12-02). A quota below 16 leaves ``ecs:RunTask`` failing with "You've reached the limit on the
number of vCPUs you can run concurrently", so ``cdk-neuron compile`` could never start. Every
environment in the account and Region that has a compile task may run one at the same time, so
their needs add up; other Fargate tasks of the account draw on the same quota and are not known here.
"""

from __future__ import annotations

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.cli.preflight.ec2_quotas import QuotaSpec
from cdk_neuron.compilation.job import FARGATE_CPU_UNITS
from cdk_neuron.deployment import Deployment

SERVICE = "fargate"
FARGATE_VCPU_QUOTA = QuotaSpec("L-3032A538", "Fargate On-Demand vCPU resource count")
"""The code ListServiceQuotas gives the quota (the name is the ECS Developer Guide's); the name the API
returns is compared, so a changed code shows as a WARN."""
TASK_VCPUS = FARGATE_CPU_UNITS // 1024
CHECK_NAME = "fargate quota"


def _on_fargate(env: Deployment) -> bool:
    """Whether the environment compiles on Fargate (a BatchModelCompilation runs on its training cluster's
    instances, which the EC2 quota checks cover)."""
    return env.compilation is not None and env.compilation.runs_on == "fargate"


def check_fargate_quota(ctx: CheckContext) -> list[Row]:
    if not _on_fargate(ctx.env):
        return []
    account, region = ctx.env.resolve_account(), ctx.env.region
    sharing = [
        env.name
        for env in ctx.all_envs
        if _on_fargate(env) and env.region == region and env.resolve_account() == account
    ]
    needed = TASK_VCPUS * len(sharing)
    breakdown = " + ".join(f"{name} compile task ({TASK_VCPUS})" for name in sharing)
    spec = FARGATE_VCPU_QUOTA
    quotas = ctx.client("service-quotas")
    applied = True
    try:
        quota = quotas.get_service_quota(ServiceCode=SERVICE, QuotaCode=spec.code)["Quota"]
        value, name = float(quota["Value"]), str(quota.get("QuotaName", ""))
    except Exception as error:
        if error_code(error) != "NoSuchResourceException":
            raise
        applied = False
        default = quotas.get_aws_default_service_quota(ServiceCode=SERVICE, QuotaCode=spec.code)["Quota"]
        value, name = float(default["Value"]), str(default.get("QuotaName", ""))
    subject = f"{spec.name} ({spec.code})"
    rows = []
    if not applied:
        # AWS's default (4000 for this quota) is not what a new account gets: such accounts are often held
        # far below it, and the applied value is the only one that says so.
        return [
            *(
                [
                    ctx.row(
                        CHECK_NAME,
                        subject,
                        "WARN",
                        f"the API names {spec.code} {name!r}; verify the quota code",
                    )
                ]
                if name and name != spec.name
                else []
            ),
            ctx.row(
                CHECK_NAME,
                subject,
                "WARN",
                f"no applied value in this account (AWS's default is {value:g}, which new accounts are often held "
                f"below): check in the Service Quotas console (AWS Fargate) that it allows {needed} vCPUs: {breakdown}",
            ),
        ]
    if name and name != spec.name:
        rows.append(
            ctx.row(CHECK_NAME, subject, "WARN", f"the API names {spec.code} {name!r}; verify the quota code")
        )
    if value >= needed:
        rows.append(
            ctx.row(
                CHECK_NAME,
                subject,
                "PASS",
                f"{value:g} vCPUs >= {needed} needed: {breakdown} (other Fargate tasks of the account count too)",
            )
        )
    else:
        rows.append(
            ctx.row(
                CHECK_NAME,
                subject,
                "FAIL",
                f"{value:g} vCPUs < {needed} needed: {breakdown}; ecs:RunTask refuses the compile task past it. "
                "Request an increase (command below)",
                f"aws service-quotas request-service-quota-increase --service-code {SERVICE} --quota-code {spec.code} "
                f"--desired-value {needed} --region {region}",
            )
        )
    return rows


CHECK = Check(
    CHECK_NAME,
    check_fargate_quota,
    passes_when=f"for an environment that compiles on Fargate (not on its training cluster): the Fargate On-Demand vCPU quota's applied value holds "
    f"{TASK_VCPUS} vCPUs for each compile task in the account and Region (other Fargate tasks are not counted; no "
    "applied value is WARN: AWS's default is not what new accounts get)",
    calls=("servicequotas:GetServiceQuota", "servicequotas:GetAWSDefaultServiceQuota"),
)
