"""IAM statements more than one construct grants, each with the reason cdk-nag is given."""

from __future__ import annotations

from aws_cdk import aws_iam as iam

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
