"""IAM statements more than one construct grants, each with the reason cdk-nag is given."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

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
    cdk.Validations.of(policy).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions-IAM5[Resource::*]", reason=f"{PUT_METRIC_DATA_REASON} ({namespace})"
        )
    )
    return policy
