"""The service-linked roles the stacks rely on exist."""

from __future__ import annotations

from dataclasses import dataclass

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.output import Status
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row
from cdk_neuron.deployment import Deployment


@dataclass(frozen=True)
class ServiceLinkedRole:
    name: str
    service: str
    needed_by: str
    missing: Status
    """FAIL when a resource names the role before anything creates it; INFO when its service creates it."""
    why_missing: str


def _service_linked_roles(env: Deployment) -> list[ServiceLinkedRole]:
    roles: list[ServiceLinkedRole] = []
    serving_backend = env.serving.backend if env.serving is not None else None
    training_engine = env.training.engine if env.training is not None else None
    # HyperPod launches its nodes itself: no Auto Scaling group behind them.
    if serving_backend == "ec2" or training_engine in ("batch", "auto-scaling-group"):
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForAutoScaling",
                "autoscaling.amazonaws.com",
                "the serving fleet's Auto Scaling group"
                if serving_backend == "ec2"
                else "the Auto Scaling groups that launch training nodes",
                "INFO",
                "EC2 Auto Scaling creates it with the first group (the key policies name it only in an "
                "aws:PrincipalArn condition, which KMS does not resolve)",
            )
        )
    if serving_backend == "sagemaker":
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
                "sagemaker.application-autoscaling.amazonaws.com",
                "the endpoint's scaling",
                "INFO",
                "Application Auto Scaling creates it when the endpoint's scalable target is registered",
            )
        )
    if env.training is not None and env.training.engine == "batch":
        roles += [
            ServiceLinkedRole(
                "AWSServiceRoleForBatch",
                "batch.amazonaws.com",
                "the Batch compute environment",
                "INFO",
                "AWS Batch creates it with the compute environment (which names no service role)",
            ),
            ServiceLinkedRole(
                "AWSServiceRoleForECS",
                "ecs.amazonaws.com",
                "the ECS cluster Batch runs jobs on",
                "INFO",
                "Amazon ECS creates it when Batch creates the cluster",
            ),
        ]
    if serving_backend == "ec2":
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForElasticLoadBalancing",
                "elasticloadbalancing.amazonaws.com",
                "the serving load balancer",
                "INFO",
                "Elastic Load Balancing creates it with the first load balancer",
            )
        )
    if training_engine == "hyperpod":
        # "created automatically on first cluster creation" (awslabs/agent-plugins,
        # hyperpod-cluster-debugger SKILL.md, "Service-linked role (SLR)", read 2026-12-02);
        # AmazonSageMakerHyperPodServiceRolePolicy, Amazon SageMaker AI Developer Guide.
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForSageMakerHyperPod",
                "hyperpod.sagemaker.amazonaws.com",
                "the HyperPod cluster",
                "INFO",
                "SageMaker HyperPod creates it with the first cluster (an SCP or permission boundary that blocks "
                "iam:CreateServiceLinkedRole fails that cluster's creation)",
            )
        )
    if env.training is not None:
        roles.append(
            ServiceLinkedRole(
                "AWSServiceRoleForAmazonElasticFileSystem",
                "elasticfilesystem.amazonaws.com",
                "the checkpoint file system",
                "INFO",
                "Amazon EFS creates it with the first file system",
            )
        )
    return roles


def check_service_linked_roles(ctx: CheckContext) -> list[Row]:
    iam = ctx.client("iam")
    rows = []
    for role in _service_linked_roles(ctx.env):
        subject = role.name
        try:
            found = iam.get_role(RoleName=role.name)["Role"]
        except Exception as error:
            if error_code(error) != "NoSuchEntity":
                raise
            created_by = (
                "; the deploying role needs iam:CreateServiceLinkedRole (the bootstrap's default execution "
                "role has it)"
                if role.missing == "INFO"
                else "; create it first (command below)"
            )
            rows.append(
                ctx.row(
                    "service-linked role",
                    subject,
                    role.missing,
                    f"missing, needed by {role.needed_by}: {role.why_missing}{created_by}",
                    f"aws iam create-service-linked-role --aws-service-name {role.service}",
                )
            )
            continue
        rows.append(ctx.row("service-linked role", subject, "PASS", f"exists ({found.get('Path', '/')})"))
    return rows


CHECK = Check(
    "service-linked role",
    check_service_linked_roles,
    passes_when="see below",
    calls=("iam:GetRole",),
)
