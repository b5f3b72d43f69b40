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

from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.cli.preflight.ec2_quotas import QuotaSpec, quota_value
from cdk_neuron.compilation.job import FARGATE_CPU_UNITS

SERVICE = "fargate"
FARGATE_VCPU_QUOTA = QuotaSpec("L-3032A538", "Fargate On-Demand vCPU resource count")
"""The code ListServiceQuotas gives the quota (the name is the ECS Developer Guide's); the name the API
returns is compared, so a changed code shows as a WARN."""
TASK_VCPUS = FARGATE_CPU_UNITS // 1024
CHECK_NAME = "fargate quota"


def check_fargate_quota(ctx: CheckContext) -> list[Row]:
    if ctx.env.compilation is None:
        return []
    account, region = ctx.env.resolve_account(), ctx.env.region
    sharing = [
        env.name
        for env in ctx.all_envs
        if env.compilation is not None and env.region == region and env.resolve_account() == account
    ]
    needed = TASK_VCPUS * len(sharing)
    breakdown = " + ".join(f"{name} compile task ({TASK_VCPUS})" for name in sharing)
    spec = FARGATE_VCPU_QUOTA
    value, name = quota_value(ctx.client("service-quotas"), SERVICE, spec.code)
    subject = f"{spec.name} ({spec.code})"
    rows = []
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
    passes_when=f"for an environment with a compile task: the Fargate On-Demand vCPU quota holds {TASK_VCPUS} vCPUs "
    "for each compile task in the account and Region (other Fargate tasks are not counted)",
    calls=("servicequotas:GetServiceQuota", "servicequotas:GetAWSDefaultServiceQuota"),
)
