"""``cdk-neuron preflight``: will ``cdk deploy`` work in this account? Read-only checks, one row each.

- the credentials' account is the configured one (``sts:GetCallerIdentity``);
- every configured AZ ID offers the instance types (``ec2:DescribeInstanceTypeOfferings`` with
  location type ``availability-zone-id``);
- the On-Demand vCPU quotas cover max nodes and the max fleet (``servicequotas:GetServiceQuota``),
  and for SageMaker the endpoint-instance quota (``servicequotas:ListServiceQuotas``); a HyperPod
  cluster is counted against SageMaker's cluster quotas instead of EC2's (per ``ml.*`` type, per
  cluster, and in total: ``ListServiceQuotas``, ``ListAWSDefaultServiceQuotas``);
- a HyperPod environment's training plan exists, serves HyperPod clusters, is Active or Scheduled,
  reserves the worker type and does so in the training AZ (``sagemaker:DescribeTrainingPlan``);
- a configured capacity reservation or Capacity Block exists, is active and matches the instance
  type and the training AZ ID (``ec2:DescribeCapacityReservations``; groups via
  ``resource-groups:GetGroup`` / ``ListGroupResources``); a reservation made in a cluster placement
  group has that group named, and the group is an available cluster group
  (``ec2:DescribePlacementGroups``);
- on UltraServer servers (trn2u.48xlarge, Trn3): the account's EC2 quotas that name Trn3 or
  UltraServers (``servicequotas:ListServiceQuotas``), the UltraServer Capacity Blocks it holds in the
  training AZ (``ec2:DescribeCapacityBlocks``) and, where EC2's UltraServer type name is known, the
  offerings (``ec2:DescribeCapacityBlockOfferings``);
- the AMI SSM parameters resolve (``ssm:GetParameter``);
- the account and Region are CDK-bootstrapped at the version the templates require: the
  ``/cdk-bootstrap/<qualifier>/version`` parameter (``ssm:GetParameter``) and the ``CDKToolkit``
  stack (``cloudformation:DescribeStacks``);
- the job and serving images exist and their tags resolve (``ecr:DescribeImages``, falling back to
  ``ecr:BatchGetImage`` where only pulling is allowed, as for the AWS Deep Learning Containers); an
  image outside ECR cannot be resolved here and is INFO, not PASS;
- the certificate is ISSUED, in the Region, and not about to expire (``acm:DescribeCertificate``);
  the token secret exists, has a current value, is in the Region and is readable with the
  permissions the stack grants (``secretsmanager:DescribeSecret``, ``kms:DescribeKey``);
- the service-linked roles the stacks rely on exist (``iam:GetRole``); one the deploying service
  creates on first use is INFO when missing, one a key policy names is FAIL;
- for HyperPod, the Session Manager plugin the job commands need is on PATH (local, WARN when missing);
- a model ``artifact_uri`` holds a self-contained precompiled model: a compiled graph, weights,
  and the config and tokenizer (``s3:ListBucket`` on the prefix, i.e. ``ListObjectsV2``).

Any FAIL row makes the command exit 1, and each names its fix (a command where one exists). A check
that AWS refuses to answer (for example AccessDenied) is a FAIL row that says so: an unverified
check is not a pass.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cdk_neuron.cli.aws import ClientFactory, credentials_problem, error_summary
from cdk_neuron.cli.command import Command, environment_options, in_region, selected
from cdk_neuron.cli.context import Clock, Context, SystemClock
from cdk_neuron.cli.output import Column, Report, Status
from cdk_neuron.cli.preflight import (
    account,
    amis,
    artifacts,
    bootstrap,
    capacity,
    certificate,
    ec2_quotas,
    fargate_quota,
    hyperpod_quotas,
    images,
    offerings,
    sagemaker_quota,
    scope,
    secret,
    service_linked_roles,
    session_plugin,
    training_plan,
    ultraserver,
)
from cdk_neuron.cli.preflight.base import DEFAULT_QUALIFIER, Check, CheckContext, Finding, Row
from cdk_neuron.cli.preflight.bootstrap import REQUIRED_BOOTSTRAP_VERSION
from cdk_neuron.cli.preflight.ec2_quotas import EC2_VCPU_QUOTAS, QuotaSpec
from cdk_neuron.cli.preflight.ultraserver import ultraserver_capacity_findings, ultraserver_quota_findings
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment

CHECKS: tuple[Check, ...] = (
    scope.CHECK,
    account.CHECK,
    bootstrap.CHECK,
    offerings.CHECK,
    ec2_quotas.CHECK,
    hyperpod_quotas.CHECK,
    fargate_quota.CHECK,
    sagemaker_quota.CHECK,
    capacity.CHECK,
    training_plan.CHECK,
    ultraserver.CHECK,
    amis.CHECK,
    images.CHECK,
    certificate.CHECK,
    secret.CHECK,
    service_linked_roles.CHECK,
    artifacts.CHECK,
    session_plugin.CHECK,
)
"""Every check, in the order it runs (and docs/cli.md lists it). A new check is a module with a
``CHECK`` added here."""


@dataclass(frozen=True)
class PreflightResult(Result):
    """``cdk-neuron preflight``: every row of every check, for every environment."""

    command = "preflight"
    ok: bool
    failures: int
    checks: list[Row]


def _is_aws_error(error: BaseException) -> bool:
    import botocore.exceptions as bx

    return isinstance(error, (bx.ClientError, bx.BotoCoreError))


def run(
    envs: Iterable[Deployment],
    all_envs: Sequence[Deployment],
    clients: ClientFactory,
    *,
    qualifier: str = DEFAULT_QUALIFIER,
    clock: Clock | None = None,
    checks: Sequence[Check] = CHECKS,
) -> list[Row]:
    """Run every check for every environment. Credential problems abort; other AWS errors become FAIL rows."""
    rows: list[Row] = []
    for env in envs:
        ctx = CheckContext(env, all_envs, clients, qualifier, clock or SystemClock())
        for check in checks:
            try:
                rows.extend(check.run(ctx))
            except Exception as error:
                problem = credentials_problem(error)
                if problem is not None:
                    raise problem from error
                if not _is_aws_error(error):
                    raise
                rows.append(ctx.row(check.name, "-", "FAIL", f"could not check: {error_summary(error)}"))
    return rows


def build(rows: Sequence[Row]) -> PreflightResult:
    failed = sum(r.status == "FAIL" for r in rows)
    return PreflightResult(ok=failed == 0, failures=failed, checks=list(rows))


_STATUSES: tuple[Status, ...] = ("FAIL", "WARN", "PASS", "INFO")


def render(result: PreflightResult) -> Report:
    """A summary per environment first, then each environment's checks, then the fix commands."""
    out = Report()
    checks = result.checks
    environments = list(dict.fromkeys(c.environment for c in checks))
    out.table(
        "preflight (read-only)",
        (Column("environment", "id"), *(Column(s.lower(), "id") for s in _STATUSES)),
        (
            (env, *(sum(c.environment == env and c.status == s for c in checks) for s in _STATUSES))
            for env in environments
        ),
    )
    for env in environments:
        out.table(
            f"{env}: checks",
            (Column("check"), Column("subject"), Column("status", "status"), Column("detail")),
            ((c.check, c.subject, c.status, c.detail) for c in checks if c.environment == env),
        )
    fixes = [c for c in checks if c.command and c.status in ("FAIL", "WARN")]
    if fixes:
        out.commands(
            "Fixes (copy and run):",
            [line for c in fixes for line in (f"# {c.environment} {c.check}: {c.subject}", str(c.command))],
        )
    if result.ok:
        out.line("All checks passed.")
    else:
        out.line(f"{result.failures} check(s) failed.", style="bold red")
    return out


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    envs = ctx.deployments
    chosen = in_region(selected(envs, args), args.region)
    rows = run(chosen, list(envs.values()), ctx.aws, qualifier=ctx.source.qualifier, clock=ctx.clock)
    result = build(rows)
    ctx.show(result, render)
    return ExitStatus.OK if result.ok else ExitStatus.FAILED


COMMAND = Command(
    "preflight",
    "Read-only checks of the live account; exits 1 on any failure.",
    _run,
    arguments=lambda parser: environment_options(parser, one=False),
    aws=True,
)

__all__ = [
    "CHECKS",
    "COMMAND",
    "EC2_VCPU_QUOTAS",
    "REQUIRED_BOOTSTRAP_VERSION",
    "Check",
    "CheckContext",
    "Finding",
    "PreflightResult",
    "QuotaSpec",
    "Row",
    "build",
    "render",
    "run",
    "ultraserver_capacity_findings",
    "ultraserver_quota_findings",
]
