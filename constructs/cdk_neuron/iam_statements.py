"""IAM and key-policy statements more than one construct grants, each with the reason cdk-nag is given."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron._nag import acknowledge
from cdk_neuron.kms_actions import DATA_KEY_ACTIONS

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
