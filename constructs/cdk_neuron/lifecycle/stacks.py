"""Stack-level lifecycle helpers for CDK apps: what no single construct can do for its stack.

Unlike the rest of :mod:`cdk_neuron.lifecycle`, this module imports ``aws_cdk``.

- :func:`follow_replacements`: a weak cross-stack reference (``Fn::GetStackOutput``) is read when
  the *consumer* is deployed, and ``cdk deploy`` skips a consumer whose template did not change.
  When a producer's resource is replaced under the same logical id (toggling ``storage.one_zone``
  replaces the checkpoint file system), the consumer would keep the old id. This names the output
  a consumer reads after the producer resource's *generation* (a hash of its create-only
  properties): a replacement renames the output, the consumer's template changes with it, and its
  deployment reads the new value.
- :func:`own_provider_logs`: aws-cdk-lib's singleton custom-resource providers (the VPC's
  default-security-group restriction, S3 ``autoDeleteObjects``) are Lambda functions without a log
  group of their own: Lambda creates ``/aws/lambda/<function>`` on the first invocation, outside the
  stack, and ``cdk destroy`` leaves it behind, never expiring. This gives each one a log group the
  stack owns, created before anything invokes the function.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection

import aws_cdk as cdk
import jsii
from aws_cdk import aws_logs as logs
from constructs import IConstruct, IValidation

from cdk_neuron._nag import acknowledge
from cdk_neuron.lifecycle import schema
from cdk_neuron.lifecycle.template import references

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


# Resources whose replacement a consumer stack must follow: the ones cdk-neuron's stacks read across
# stacks with weak references (alarms, event rules and dashboards, all updatable in place). Network
# resources are not here: their consumers feed them into create-only properties, which a renamed
# output would make CloudFormation plan as replacements (aws/aws-cdk#38829).
FOLLOWED_TYPES: frozenset[str] = frozenset(
    {
        "AWS::EFS::FileSystem",
        "AWS::SageMaker::Endpoint",
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        "AWS::Backup::BackupVault",
        "AWS::Batch::JobQueue",
        "AWS::AutoScaling::AutoScalingGroup",
    }
)
_PUBLISH = "Publish"
"""The scope aws-cdk-lib creates a weak reference's output in (core/lib/private/refs.ts, createGetStackOutput)."""


def generation(resource: cdk.CfnResource) -> str:
    """A short hash of what replacing ``resource`` changes: its type and create-only properties."""
    stack = cdk.Stack.of(resource)
    properties = resource._cfn_properties  # the L1's current values, by camelCase name
    create_only = sorted({pointer[0] for pointer in schema.create_only(resource.cfn_resource_type)})
    identity = {
        "type": resource.cfn_resource_type,
        "create_only": {
            name: stack.resolve(properties.get(name[:1].lower() + name[1:])) for name in create_only
        },
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8].upper()


@jsii.implements(IValidation)
class _FollowReplacements:
    """Renames the stack's weak-reference outputs after their resources' generations.

    A validation, because aws-cdk-lib creates those outputs while it prepares the app, after every
    construct and aspect has run, and renders them after validation: the consumer's
    ``Fn::GetStackOutput`` reads the output's logical id lazily, so both sides get the new name.
    """

    def __init__(self, stack: cdk.Stack, types: Collection[str]) -> None:
        self._stack = stack
        self._types = frozenset(types)

    def validate(self) -> list[str]:
        publish = self._stack.node.try_find_child(_PUBLISH)
        if publish is None:
            return []
        by_id = {
            self._stack.resolve(node.logical_id): node
            for node in self._stack.node.find_all()
            if isinstance(node, cdk.CfnResource)
        }
        for output in publish.node.children:
            if not isinstance(output, cdk.CfnOutput):
                continue
            targets = [by_id.get(logical) for logical, _ in references(self._stack.resolve(output.value))]
            followed = [t for t in targets if t is not None and t.cfn_resource_type in self._types]
            if len(followed) == 1:
                current = self._stack.resolve(output.logical_id)
                output.override_logical_id(f"{current}{generation(followed[0])}")
        return []


def follow_replacements(scope: IConstruct, types: Collection[str] = FOLLOWED_TYPES) -> None:
    """Make every stack under ``scope`` name the outputs its consumers read after the producer's
    generation, for resources of ``types``. Call once, on the app or a stage."""
    for node in scope.node.find_all():
        if isinstance(node, cdk.Stack):
            node.node.add_validation(_FollowReplacements(node, types))


__all__ = [
    "FOLLOWED_TYPES",
    "PROVIDER_LOG_RETENTION_DAYS",
    "follow_replacements",
    "generation",
    "own_provider_logs",
]
