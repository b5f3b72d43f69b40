"""IAM statements both serving backends grant, each paired with the reason cdk-nag is told."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from cdk_neuron.serving.engines import ContainerImage
from cdk_neuron.serving.settings import FleetSettings


def artifact_read_statements(
    stack: cdk.Stack, settings: FleetSettings
) -> list[tuple[iam.PolicyStatement, str]]:
    """Read access to exactly the model artifact prefix (and its key), each with its nag reason."""
    artifact = settings.model.artifact
    if artifact is None:
        return []
    statements: list[tuple[iam.PolicyStatement, str]] = [
        (
            iam.PolicyStatement(
                sid="ReadModelArtifacts",
                actions=["s3:GetObject"],
                resources=[f"arn:{stack.partition}:s3:::{artifact.bucket}/{artifact.object_pattern}"],
            ),
            "s3:GetObject covers exactly the objects under the model artifact prefix",
        ),
        (
            iam.PolicyStatement(
                sid="ListModelArtifacts",
                actions=["s3:ListBucket"],
                resources=[f"arn:{stack.partition}:s3:::{artifact.bucket}"],
                conditions={"StringLike": {"s3:prefix": [artifact.prefix, artifact.object_pattern]}},
            ),
            "listing limited to the artifact prefix",
        ),
    ]
    if settings.artifact_key is not None:
        statements.append(
            (
                iam.PolicyStatement(
                    sid="DecryptModelArtifacts",
                    actions=["kms:Decrypt"],
                    resources=[settings.artifact_key.key_arn],
                ),
                "the artifact bucket's key",
            )
        )
    return statements


def image_pull_statements(stack: cdk.Stack, image: ContainerImage) -> list[tuple[iam.PolicyStatement, str]]:
    """ECR login and pull from exactly the image's repository, each with its nag reason."""
    return [
        (
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            "ecr:GetAuthorizationToken has no resource-level permissions",
        ),
        (
            iam.PolicyStatement(
                sid="EcrPullServingImage",
                actions=[
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchCheckLayerAvailability",
                ],
                resources=[
                    stack.format_arn(
                        service="ecr",
                        region=image.ecr_region(stack.region),
                        account=image.ecr_account,
                        resource="repository",
                        resource_name=image.repository,
                    )
                ],
            ),
            "one repository",
        ),
    ]
