"""The library's own CloudFormation custom resources: one Lambda each, from ``custom_resources/``.

Each handler (the EFA installer mirror, the backup-vault emptier, the fleet capacity reader) runs
with its own role and customer-managed policy, writes to a log group the stack owns (so ``cdk
destroy`` leaves no ``/aws/lambda/...`` group behind), and answers CloudFormation itself
(``custom_resources/cfn_response.py``). The code of all of them is one asset: the directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_neuron._nag import acknowledge, acknowledge_wildcards
from cdk_neuron.lifecycle.checks import EMPTIES_METADATA

HANDLERS_DIR = Path(__file__).resolve().parent / "custom_resources"

# Why the usual Lambda rules do not apply to a function only CloudFormation calls.
_ACKNOWLEDGMENTS = {
    "NIST.800.53.R5-LambdaConcurrency": "CloudFormation invokes it once per deployment that changes the resource; "
    "reserving concurrency fails in new accounts whose whole quota is the unreserved minimum of 10",
    "NIST.800.53.R5-LambdaDLQ": "CloudFormation invokes it synchronously as a custom resource and receives every "
    "failure as the resource's status; there is no asynchronous event to lose",
}


@dataclass(frozen=True)
class HandlerFunction:
    """A custom-resource handler: its function, managed policy and the log group it writes to."""

    function: lambda_.Function
    policy: iam.ManagedPolicy
    log_group: logs.LogGroup

    def resource(
        self,
        scope: Construct,
        id: str,
        *,
        resource_type: str,
        properties: Mapping[str, Any],
        empties: Sequence[cdk.CfnResource] = (),
    ) -> cdk.CustomResource:
        """A custom resource this function serves; ``empties``: the buckets or vaults it empties on delete
        (declared for ``cdk_neuron.lifecycle.teardown_findings``)."""
        found = cdk.CustomResource(
            scope,
            id,
            service_token=self.function.function_arn,
            resource_type=resource_type,
            properties=dict(properties),
        )
        # The function needs its permissions (and its log group) before CloudFormation invokes it.
        found.node.add_dependency(self.policy)
        if empties:
            cfn = found.node.default_child
            assert isinstance(cfn, cdk.CfnResource)
            cfn.add_metadata(EMPTIES_METADATA, [empty.ref for empty in empties])
        return found


def handler_function(
    scope: Construct,
    *,
    handler: str,
    description: str,
    statements: Sequence[tuple[iam.PolicyStatement, str]],
    timeout: cdk.Duration,
    removal_policy: cdk.RemovalPolicy,
    outside_vpc_reason: str,
    kms_key: kms.IKey | None = None,
    memory_size: int = 256,
    ephemeral_storage: cdk.Size | None = None,
    acknowledgments: Mapping[str, str] | None = None,
) -> HandlerFunction:
    """The function, role, policy and log group, as children ``Function``, ``Role``, ``Policy`` and
    ``Logs`` of ``scope``.

    :param handler: ``<module>.handler`` in ``custom_resources/``.
    :param description: the function's, role's and policy's description.
    :param statements: what the handler may do (besides writing its logs), each with the reason its
        wildcard resources (if any) are acknowledged for cdk-nag's AwsSolutions-IAM5.
    :param timeout: the function's timeout.
    :param removal_policy: for the log group.
    :param outside_vpc_reason: why the function runs outside the VPC (the acknowledgment of
        ``NIST.800.53.R5-LambdaInsideVPC``).
    :param kms_key: encrypts the log group (the key must let CloudWatch Logs use it). Default: none.
    :param memory_size: MiB. Default: 256.
    :param ephemeral_storage: /tmp size. Default: Lambda's 512 MiB.
    :param acknowledgments: the reasons for the Lambda rules a function invoked by something other
        than CloudFormation answers differently. Default: a custom resource's.
    """
    log_group = logs.LogGroup(
        scope,
        "Logs",
        retention=logs.RetentionDays.THREE_MONTHS,
        encryption_key=kms_key,
        removal_policy=removal_policy,
    )
    role = iam.Role(
        scope, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description
    )
    policy = iam.ManagedPolicy(
        scope,
        "Policy",
        roles=[role],
        description=description,
        statements=[
            *(statement for statement, _ in statements),
            iam.PolicyStatement(
                sid="WriteLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            ),
        ],
    )
    function = lambda_.Function(
        scope,
        "Function",
        description=description,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler=handler,
        code=lambda_.Code.from_asset(str(HANDLERS_DIR), exclude=["__pycache__", "*.pyc"]),
        timeout=timeout,
        memory_size=memory_size,
        ephemeral_storage_size=ephemeral_storage,
        role=role,
        log_group=log_group,
    )
    # The function names its role by Fn::GetAtt already; the DependsOn on the role that the L2 adds is
    # what cfn-lint W3005 reports as redundant. (The custom resource waits for the policy.)
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, cdk.CfnResource)
    cfn_function.add_deletion_override("DependsOn")
    acknowledge_wildcards(policy, statements)
    if kms_key is None:
        acknowledge(
            log_group,
            "NIST.800.53.R5-CloudWatchLogGroupEncrypted",
            "The function logs request ids and errors of its own API calls, no data; CloudWatch Logs encrypts "
            "it at rest with its own keys",
        )
    reasons = {**(_ACKNOWLEDGMENTS if acknowledgments is None else acknowledgments)}
    for rule, reason in {**reasons, "NIST.800.53.R5-LambdaInsideVPC": outside_vpc_reason}.items():
        acknowledge(function, rule, reason)
    return HandlerFunction(function=function, policy=policy, log_group=log_group)


__all__ = ["HANDLERS_DIR", "HandlerFunction", "handler_function"]
