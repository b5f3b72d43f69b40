"""The AMI the nodes boot is published in the environment's Region.

Training nodes and EC2 serving instances boot the pinned ECS-optimized AL2023 Neuron AMI release
(:mod:`cdk_neuron.ami`), resolved at deploy time from the release's own SSM parameter; a Region
where that release is not published fails the deploy.
"""

from __future__ import annotations

from cdk_neuron import ami
from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row


def ami_parameter(release: str | None) -> str:
    """The parameter the nodes resolve: the deployment's release, else the constructs' default."""
    return ami.release_parameter(release or ami.RELEASE)


def _parameter_row(ctx: CheckContext, name: str, role: str) -> Row:
    try:
        value = ctx.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except Exception as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return ctx.row(
            "AMI parameter",
            name,
            "FAIL",
            f"{role}: parameter not found in {ctx.env.region} (is the release published there? cdk-neuron ami)",
        )
    return ctx.row("AMI parameter", name, "PASS", f"{role}: {value}")


def check_amis(ctx: CheckContext) -> list[Row]:
    """One row for the AMI release parameter the nodes resolve at deploy time, naming who boots it."""
    roles = []
    # HyperPod nodes boot HyperPod's own image, not the ECS Neuron AMI.
    if ctx.env.training is not None and ctx.env.training.engine != "hyperpod":
        roles.append("training")
    if ctx.env.serving is not None and ctx.env.serving.backend == "ec2":
        roles.append("serving")
    if not roles:
        return []
    return [_parameter_row(ctx, ami_parameter(ctx.env.ami_release), " and ".join(roles))]


CHECK = Check(
    "AMI parameter",
    check_amis,
    passes_when="the pinned ECS Neuron AMI release's parameter resolves",
    calls=("ssm:GetParameter",),
)
