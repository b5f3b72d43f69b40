"""IAM statements both serving backends grant, each paired with the reason cdk-nag is told."""

from __future__ import annotations

import hashlib

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from cdk_neuron._nag import acknowledge_wildcards
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


def artifact_policy(
    scope: Construct,
    settings: FleetSettings,
    role: iam.IRole,
    *,
    reader: str,
    id_prefix: str = "ArtifactPolicy",
) -> iam.ManagedPolicy | None:
    """Read access to the model artifact, in a managed policy of its own named after the artifact.

    A change of artifact must not take the old prefix away from what still serves it: an EC2 instance
    refresh keeps the old instances in service (and starting replicas) until their replacements are,
    and a SageMaker endpoint update keeps the old fleet (which may launch instances from the old
    model) until the new one serves. A new artifact is a new logical ID, so CloudFormation creates the
    new policy before the fleet changes and deletes the old one only in its clean-up phase, after the
    update completed ("Update behaviors of stack resources", AWS CloudFormation User Guide: the old
    resource of a replacement is deleted during UPDATE_COMPLETE_CLEANUP_IN_PROGRESS). The old prefix
    itself is never deleted by cdk-neuron. ``reader``: who reads it, for the description; ``id_prefix``:
    the construct id before the artifact's hash (each backend its own, so switching backends never
    turns one backend's grant into the other's in place).
    """
    artifact = settings.model.artifact
    statements = artifact_read_statements(cdk.Stack.of(scope), settings)
    if artifact is None or not statements:
        return None
    digest = hashlib.sha256(artifact.uri.encode()).hexdigest()[:8].upper()
    policy = iam.ManagedPolicy(
        scope,
        f"{id_prefix}{digest}",
        description=f"cdk-neuron {reader}: read the model artifact {artifact.uri}",
        statements=[statement for statement, _ in statements],
        roles=[role],
    )
    acknowledge_wildcards(policy, statements)
    return policy


def image_pull_statements(
    stack: cdk.Stack, image: ContainerImage, *, sid: str = "EcrPullServingImage"
) -> list[tuple[iam.PolicyStatement, str]]:
    """ECR login and pull from exactly the image's repository, each with its nag reason."""
    return [
        (
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            "ecr:GetAuthorizationToken has no resource-level permissions",
        ),
        (
            iam.PolicyStatement(
                sid=sid,
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
