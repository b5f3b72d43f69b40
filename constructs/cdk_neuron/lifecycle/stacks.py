"""Stack-level lifecycle helpers for CDK apps: what no single construct can do for its stack.

Unlike the rest of :mod:`cdk_neuron.lifecycle`, this module imports ``aws_cdk``.

- :func:`own_provider_logs`: aws-cdk-lib's singleton custom-resource providers (the VPC's
  default-security-group restriction, S3 ``autoDeleteObjects``) are Lambda functions without a log
  group of their own: Lambda creates ``/aws/lambda/<function>`` on the first invocation, outside the
  stack, and ``cdk destroy`` leaves it behind, never expiring. This gives each one a log group the
  stack owns, created before anything invokes the function.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs
from constructs import IConstruct

from cdk_neuron._nag import acknowledge

PROVIDER_LOG_RETENTION_DAYS = 90


def _custom_resources(scope: IConstruct) -> list[cdk.CfnResource]:
    return [
        node
        for node in scope.node.find_all()
        if isinstance(node, cdk.CfnResource)
        and (
            node.cfn_resource_type.startswith("Custom::")
            or node.cfn_resource_type == "AWS::CloudFormation::CustomResource"
        )
    ]


def own_provider_logs(stack: cdk.Stack, removal_policy: cdk.RemovalPolicy) -> list[logs.CfnLogGroup]:
    """A log group ``/aws/lambda/<handler>`` for every aws-cdk-lib custom-resource provider in ``stack``.

    Every custom resource of the stack waits for the groups (so the function never creates its own
    first). Call it once, after the stack's constructs are built. Returns the groups created.
    """
    created = []
    for child in stack.node.children:
        if not isinstance(child, cdk.CustomResourceProviderBase):
            continue
        handler = child.node.try_find_child("Handler")
        if not isinstance(handler, cdk.CfnResource) or child.node.try_find_child("Logs") is not None:
            continue
        group = logs.CfnLogGroup(
            child,
            "Logs",
            log_group_name=cdk.Fn.join("", ["/aws/lambda/", handler.ref]),
            retention_in_days=PROVIDER_LOG_RETENTION_DAYS,
        )
        group.apply_removal_policy(removal_policy)
        acknowledge(
            group,
            "NIST.800.53.R5-CloudWatchLogGroupEncrypted",
            "The log of an aws-cdk-lib custom-resource provider that only CloudFormation invokes: request "
            "ids and errors, no data; CloudWatch Logs encrypts it at rest with its own keys",
        )
        created.append(group)
    for resource in _custom_resources(stack) if created else ():
        for group in created:
            resource.node.add_dependency(group)
    return created


__all__ = ["PROVIDER_LOG_RETENTION_DAYS", "own_provider_logs"]
