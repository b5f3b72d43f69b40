"""The node-program bundle as one CDK file asset per stack, and the user-data size check."""

from __future__ import annotations

import math
import re
from typing import Any

import aws_cdk as cdk
import constructs
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets

from cdk_neuron.node_programs import BUNDLE_EXCLUDE, FILES_DIR, USER_DATA_LIMIT_BYTES, BundleLocation

BUNDLE_ID = "CdkNeuronNodePrograms"


def node_bundle(scope: constructs.Construct) -> s3_assets.Asset:
    """The stack's node-program asset (created once per stack, shared by every construct in it).

    ``cdk deploy`` uploads it to the environment's bootstrap bucket; nodes download it through the
    S3 gateway endpoint or a NAT. Grant each node role :func:`grant_bundle_read`.
    """
    stack = cdk.Stack.of(scope)
    existing = stack.node.try_find_child(BUNDLE_ID)
    if isinstance(existing, s3_assets.Asset):
        return existing
    return s3_assets.Asset(stack, BUNDLE_ID, path=str(FILES_DIR), exclude=list(BUNDLE_EXCLUDE))


def bundle_location(asset: s3_assets.Asset) -> BundleLocation:
    return BundleLocation(
        region=cdk.Stack.of(asset).region, bucket=asset.s3_bucket_name, key=asset.s3_object_key
    )


def bundle_object_arn(asset: s3_assets.Asset) -> str:
    """The ARN of the bundle's one object in the bootstrap bucket."""
    return f"arn:{cdk.Stack.of(asset).partition}:s3:::{asset.s3_bucket_name}/{asset.s3_object_key}"


def grant_bundle_read(asset: s3_assets.Asset, grantee: iam.IGrantable) -> iam.Grant:
    """Let a node role read the bundle: ``s3:GetObject`` on its one object, not the whole bucket.

    (``Asset.grant_read`` would grant every object of the bootstrap bucket, which holds the assets
    of every CDK app in the account.) The default bootstrap bucket encrypts with the AWS managed key
    ``aws/s3``, whose key policy lets the account's principals use it through S3; a bootstrap with a
    customer-managed key needs ``kms:Decrypt`` on it as well.
    """
    return iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:GetObject"], resource_arns=[bundle_object_arn(asset)]
    )


# Longest value each CloudFormation pseudo parameter can take (AWS::StackName: 128 characters;
# CloudFormation User Guide, "Pseudo parameters reference" and the CreateStack API's StackName).
_PSEUDO_LENGTH = {
    "AWS::AccountId": 12,
    "AWS::Region": 20,
    "AWS::Partition": 10,
    "AWS::URLSuffix": 20,
    "AWS::StackName": 128,
    "AWS::StackId": 128,
    "AWS::NoValue": 0,
}
# Anything else unknown at synthesis (a resource id, an attribute, an import) counts this much: a
# generous bound for ids, names and ARNs that user data carries.
UNKNOWN_VALUE_BYTES = 256
_SUB_PLACEHOLDER = re.compile(r"\$\{([^}!][^}]*)\}")


def estimated_size(value: Any) -> int:
    """Upper bound, in bytes, of a resolved CloudFormation string expression once deployed."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, (int, float)):
        return len(str(value))
    if isinstance(value, list):
        return sum(estimated_size(item) for item in value)
    if isinstance(value, dict) and len(value) == 1:
        (function, argument), *_ = value.items()
        if function == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            separator, items = argument
            items = items if isinstance(items, list) else [items]
            return estimated_size(separator) * max(len(items) - 1, 0) + sum(estimated_size(i) for i in items)
        if function == "Fn::Base64":
            return 4 * math.ceil(estimated_size(argument) / 3)
        if function == "Ref" and isinstance(argument, str) and argument in _PSEUDO_LENGTH:
            return _PSEUDO_LENGTH[argument]
        if function == "Fn::Sub":
            template = argument[0] if isinstance(argument, list) else argument
            if isinstance(template, str):
                placeholders = _SUB_PLACEHOLDER.findall(template)
                literal = _SUB_PLACEHOLDER.sub("", template)
                return len(literal.encode("utf-8")) + sum(
                    _PSEUDO_LENGTH.get(name, UNKNOWN_VALUE_BYTES) for name in placeholders
                )
    return UNKNOWN_VALUE_BYTES


@jsii.implements(constructs.IValidation)
class UserDataSizeLimit:
    """Refuses a launch template whose user data can exceed EC2's 16 KB at deployment.

    A node validation, because user data stays mutable until synthesis (``add_user_data``). The
    message names the construct, the size and the fix.
    """

    def __init__(self, owner: constructs.Construct, user_data: ec2.UserData) -> None:
        self._owner = owner
        self._user_data = user_data

    def validate(self) -> list[str]:
        resolved = cdk.Stack.of(self._owner).resolve(self._user_data.render())
        size = estimated_size(resolved)
        if size <= USER_DATA_LIMIT_BYTES:
            return []
        return [
            f"{self._owner.node.path}: user data may reach {size:,} bytes, over EC2's limit of "
            f"{USER_DATA_LIMIT_BYTES:,} bytes (16 KB, raw, before base64); move commands into a node "
            "program file or an S3 asset and keep only settings in user data"
        ]


def limit_user_data_size(owner: constructs.Construct, user_data: ec2.UserData) -> None:
    owner.node.add_validation(UserDataSizeLimit(owner, user_data))


__all__ = [
    "BUNDLE_ID",
    "UNKNOWN_VALUE_BYTES",
    "UserDataSizeLimit",
    "bundle_location",
    "bundle_object_arn",
    "estimated_size",
    "grant_bundle_read",
    "limit_user_data_size",
    "node_bundle",
]
