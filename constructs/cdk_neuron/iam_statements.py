"""IAM and key-policy statements more than one construct grants, each with the reason cdk-nag is given."""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron._nag import acknowledge
from cdk_neuron.kms_actions import DATA_KEY_ACTIONS

AUTO_SCALING_SERVICE_ROLE = "aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
"""The EC2 Auto Scaling service-linked role (path and name), which launches a group's instances."""
BATCH_SERVICE_ROLE = "aws-service-role/batch.amazonaws.com/AWSServiceRoleForBatch"
"""The AWS Batch service-linked role, which manages a compute environment's instances."""

PUT_METRIC_DATA_REASON = (
    "cloudwatch:PutMetricData has no resource-level permissions (its only resource is *); "
    "the namespace is pinned by condition"
)


def put_metric_data(namespace: str, *, sid: str) -> iam.PolicyStatement:
    """``cloudwatch:PutMetricData`` into one namespace only (the action takes no resource ARN)."""
    return iam.PolicyStatement(
        sid=sid,
        actions=["cloudwatch:PutMetricData"],
        resources=["*"],
        conditions={"StringEquals": {"cloudwatch:namespace": namespace}},
    )


def node_metrics_policy(scope: Construct, id: str, *, role: iam.IRole, namespace: str) -> iam.ManagedPolicy:
    """A customer-managed policy on ``role`` allowing ``cloudwatch:PutMetricData`` into ``namespace`` only.

    PutMetricData supports no resource-level permissions (Resource must be ``*``); the
    ``cloudwatch:namespace`` condition key is what confines it. A managed policy rather than an
    inline one, which NIST 800-53 R5 (IAMNoInlinePolicy) refuses.
    """
    policy = iam.ManagedPolicy(
        scope,
        id,
        description=f"cdk-neuron nodes: publish Neuron metrics into the {namespace} namespace only",
        roles=[role],
        statements=[put_metric_data(namespace, sid="PublishNeuronMetrics")],
    )
    acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", f"{PUT_METRIC_DATA_REASON} ({namespace})")
    return policy


def allow_instance_launches(key: kms.IKey, role_paths: Sequence[str] = (AUTO_SCALING_SERVICE_ROLE,)) -> bool:
    """Let the services that launch instances for us create volumes encrypted with ``key``.

    Instances launched by an Auto Scaling group (a fleet's, a node group's, or one that Batch
    manages) get their encrypted volumes through the launching service's service-linked role;
    without these statements every launch fails with ``Client.InternalError`` ("Required AWS KMS
    key policy for use with encrypted volumes", Amazon EC2 Auto Scaling User Guide,
    https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html).

    The roles are matched by ``aws:PrincipalArn`` under ``Principal: *`` (pinned to this account by
    ``kms:CallerAccount``), never named as principals: "The principals in the key policy must exist
    and be visible to KMS" (CreateKey, AWS KMS API Reference,
    https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html, read 2026-12-01), and a
    service-linked role exists only once its service was first used in the account, so a key policy
    naming ``AWSServiceRoleForAutoScaling`` fails the first deployment in an account that never used
    Auto Scaling (``MalformedPolicyDocumentException``). The deploy rule W9904 flags that form.

    :param role_paths: the roles' path and name under ``arn:<partition>:iam::<account>:role/``.
    :returns: False when ``key`` is imported: its policy must then grant the same (each construct
        documents it on its ``kms_key`` prop).
    """
    stack = cdk.Stack.of(key)
    role_arns = [f"arn:{stack.partition}:iam::{stack.account}:role/{path}" for path in role_paths]
    conditions = {
        "ArnEquals": {"aws:PrincipalArn": role_arns},
        "StringEquals": {"kms:CallerAccount": stack.account},
    }
    use = key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowInstanceLaunchesToUseTheKeyForEncryptedVolumes",
            principals=[iam.AnyPrincipal()],
            actions=list(DATA_KEY_ACTIONS),
            resources=["*"],
            conditions=conditions,
        )
    )
    grant = key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowInstanceLaunchesToGrantEbsUseOfTheKey",
            principals=[iam.AnyPrincipal()],
            actions=["kms:CreateGrant"],
            resources=["*"],
            conditions={**conditions, "Bool": {"kms:GrantIsForAWSResource": "true"}},
        )
    )
    return bool(use.statement_added and grant.statement_added)


def allow_log_encryption(key: kms.IKey, *, sid: str) -> bool:
    """Let CloudWatch Logs encrypt this account's log groups in the key's region with ``key``.

    CloudWatch Logs uses a log group's key only if the key policy allows the
    ``logs.<region>.amazonaws.com`` service principal ("Encrypt log data in CloudWatch Logs using AWS
    KMS", Amazon CloudWatch Logs User Guide); the encryption-context condition limits it to log groups
    of this account and region. The group's own name cannot be named here: the group references the
    key, so a key policy naming a generated group name would be a circular dependency.

    Returns whether the statement was added (False for an imported key, whose policy is not ours).
    """
    stack = cdk.Stack.of(key)
    result = key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=list(DATA_KEY_ACTIONS),
            resources=["*"],
            conditions={
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": (
                        f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:*"
                    )
                }
            },
        )
    )
    return bool(result.statement_added)
