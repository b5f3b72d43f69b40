"""The AMI SSM parameters the nodes resolve at deploy time exist."""

from __future__ import annotations

from cdk_neuron import catalog
from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row

# Which AMI parameter each part of the deployment resolves at deploy time.
TRAINING_AMI_PARAMETERS: dict[str, str] = {
    "batch": catalog.ECS_NEURON_AMI_PARAMETER,
    "auto-scaling-group": catalog.ECS_NEURON_AMI_PARAMETER,
}


# EC2 serving instances boot the same ECS-optimized AL2023 Neuron AMI (cdk_neuron.serving.ec2_backend).
SERVING_AMI_PARAMETER = catalog.ECS_NEURON_AMI_PARAMETER


def _parameter_row(ctx: CheckContext, name: str, role: str) -> Row:
    try:
        value = ctx.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except Exception as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return ctx.row("AMI parameter", name, "FAIL", f"{role}: parameter not found in {ctx.env.region}")
    return ctx.row("AMI parameter", name, "PASS", f"{role}: {value}")


def check_amis(ctx: CheckContext) -> list[Row]:
    """One row per AMI parameter the nodes resolve at deploy time, naming the roles that use it."""
    roles: dict[str, list[str]] = {}
    if ctx.env.training is not None:
        roles[TRAINING_AMI_PARAMETERS[ctx.env.training.engine]] = ["training"]
    if ctx.env.serving is not None and ctx.env.serving.backend == "ec2":
        roles.setdefault(SERVING_AMI_PARAMETER, []).append("serving")
    return [_parameter_row(ctx, name, " and ".join(users)) for name, users in roles.items()]


CHECK = Check(
    "AMI parameter",
    check_amis,
    passes_when="the ECS Neuron AMI parameter resolves",
    calls=("ssm:GetParameter",),
)
