"""cdk-nag acknowledgments, one way for every construct (internal).

:func:`acknowledge` answers one finding on the narrowest construct that causes it, with its reason
(the generated trail, docs/acknowledgments.md, lists them all). cdk-nag names wildcard findings after the flattened resource string
(``AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::bucket/prefix/*]``). The flattening below
follows cdk-nag 3.0.2 ``utils/flatten-cfn-reference`` so an acknowledgment names exactly the finding
it answers, whatever the stack's environment resolves to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one finding on the narrowest construct that causes it."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))


def flatten_cfn_reference(node: Any) -> str:
    """A resolved CloudFormation value as cdk-nag prints it in finding ids."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict):
        if "Fn::Join" in node:
            delimiter, items = node["Fn::Join"]
            return str(delimiter).join(flatten_cfn_reference(i) for i in items)
        if "Fn::Sub" in node:
            return flatten_cfn_reference(node["Fn::Sub"])
        if "Fn::GetAtt" in node:
            resource, attribute = node["Fn::GetAtt"]
            return f"<{flatten_cfn_reference(resource)}.{flatten_cfn_reference(attribute)}>"
        if "Fn::ImportValue" in node:
            return flatten_cfn_reference(node["Fn::ImportValue"])
        if "Ref" in node:
            return f"<{flatten_cfn_reference(node['Ref'])}>"
    return json.dumps(node, separators=(",", ":"))


def acknowledge_wildcards(policy: IConstruct, statements: Iterable[tuple[iam.PolicyStatement, str]]) -> None:
    """Acknowledge each wildcard resource of ``statements`` (AwsSolutions-IAM5) with its statement's reason."""
    stack = cdk.Stack.of(policy)
    reasons: dict[str, list[str]] = {}
    for statement, reason in statements:
        for resource in statement.resources:
            flat = flatten_cfn_reference(stack.resolve(resource))
            if "*" in flat:
                reasons.setdefault(f"AwsSolutions-IAM5[Resource::{flat}]", []).append(reason)
    for finding, why in reasons.items():
        acknowledge(policy, finding, "; ".join(dict.fromkeys(why)))
