"""The Hugging Face token secret exists, has a current value and is readable by the serving role."""

from __future__ import annotations

import re

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row

_SECRET_ARN_REGION = re.compile(r"^arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z0-9-]+):")


def check_secret(ctx: CheckContext) -> list[Row]:
    if ctx.env.serving is None:
        return []
    secret = ctx.env.serving.token_secret
    if secret is None:
        return []
    match = _SECRET_ARN_REGION.match(secret)
    region = ctx.env.region
    if match and match["region"] != region:
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"the secret is in {match['region']}; the serving nodes read it in {region}: replicate it there "
                "and name the replica",
                f"aws secretsmanager replicate-secret-to-regions --secret-id {secret} "
                f"--add-replica-regions Region={region} --region {match['region']}",
            )
        ]
    try:
        described = ctx.client("secretsmanager").describe_secret(SecretId=secret)
    except Exception as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"no secret {secret} in {region}: create it with the Hugging Face token (command below)",
                f'aws secretsmanager create-secret --name {secret} --secret-string "$HF_TOKEN" --region {region}',
            )
        ]
    name = described.get("ARN", secret)
    if described.get("DeletedDate"):
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                f"scheduled for deletion on {described['DeletedDate']}: restore it (command below)",
                f"aws secretsmanager restore-secret --secret-id {name} --region {region}",
            )
        ]
    stages = {stage for stages in (described.get("VersionIdsToStages") or {}).values() for stage in stages}
    if "AWSCURRENT" not in stages:
        return [
            ctx.row(
                "secret",
                secret,
                "FAIL",
                "has no current value (no AWSCURRENT version): store the token (command below)",
                f'aws secretsmanager put-secret-value --secret-id {name} --secret-string "$HF_TOKEN" --region {region}',
            )
        ]
    key = described.get("KmsKeyId")
    if key and key != "alias/aws/secretsmanager":
        manager = ctx.client("kms").describe_key(KeyId=key)["KeyMetadata"].get("KeyManager")
        if manager != "AWS":
            return [
                ctx.row(
                    "secret",
                    secret,
                    "WARN",
                    f"encrypted with customer managed key {key}: the stack grants the serving role "
                    "secretsmanager:GetSecretValue but no kms:Decrypt on a key it does not know, so the nodes "
                    "cannot read it unless that key's policy lets them; allow kms:Decrypt via "
                    f"secretsmanager.{region}.amazonaws.com in the key policy, or store the token under the "
                    "aws/secretsmanager key",
                )
            ]
    return [
        ctx.row(
            "secret",
            secret,
            "PASS",
            "exists with a current value, encrypted with the aws/secretsmanager key the serving role can use",
        )
    ]


CHECK = Check(
    "secret",
    check_secret,
    passes_when="`serving.hugging_face_token_secret` exists in the Region, is not scheduled for deletion and has a current value; WARN when a customer managed key encrypts it, because the stack grants the serving role no `kms:Decrypt` on an imported secret's key",
    calls=("secretsmanager:DescribeSecret", "kms:DescribeKey"),
)
