"""The alarm topic: SNS, encrypted with a customer-managed rotating key, TLS-only.

CloudWatch alarms and EventBridge rules publish to it as AWS services, and an SNS topic encrypted with
a key they cannot use silently drops their messages. The key policy therefore lets CloudWatch use the
key and the topic policy lets it publish, for this account's alarms only; ``aws_events_targets.SnsTopic``
grants EventBridge the same (key and topic) for every rule that targets the topic.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from cdk_neuron.kms_actions import PUBLISHER_KEY_ACTIONS

ALARMS_PRINCIPAL = "cloudwatch.amazonaws.com"


def alarm_key(scope: Construct, id: str, *, environment: str, removal_policy: cdk.RemovalPolicy) -> kms.Key:
    key = kms.Key(
        scope,
        id,
        description=f"cdk-neuron {environment}: encrypts the alarm topic",
        enable_key_rotation=True,
        removal_policy=removal_policy,
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchAlarmsToPublish",
            principals=[iam.ServicePrincipal(ALARMS_PRINCIPAL)],
            actions=list(PUBLISHER_KEY_ACTIONS),
            resources=["*"],  # in a key policy "*" is this key
        )
    )
    return key


def alarm_topic(
    scope: Construct, id: str, *, environment: str, key: kms.IKey, alarm_email: str | None
) -> sns.Topic:
    topic = sns.Topic(
        scope,
        id,
        display_name=f"cdk-neuron {environment} alarms",
        master_key=key,
        enforce_ssl=True,
    )
    stack = cdk.Stack.of(scope)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowThisAccountsAlarms",
            principals=[iam.ServicePrincipal(ALARMS_PRINCIPAL)],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={
                "ArnLike": {
                    "aws:SourceArn": stack.format_arn(
                        service="cloudwatch",
                        resource="alarm",
                        resource_name="*",
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                },
                "StringEquals": {"aws:SourceAccount": stack.account},
            },
        )
    )
    if alarm_email is not None:
        topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
    return topic


__all__ = ["ALARMS_PRINCIPAL", "PUBLISHER_KEY_ACTIONS", "alarm_key", "alarm_topic"]
