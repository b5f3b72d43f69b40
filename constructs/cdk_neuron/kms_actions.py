"""KMS key-policy action lists, spelled out (no ``kms:Encrypt*``-style wildcards), defined once."""

from __future__ import annotations

# What a service needs to encrypt and decrypt data under a key on someone's behalf: EBS volumes
# launched by EC2 Auto Scaling or Batch, CloudWatch Logs log groups.
DATA_KEY_ACTIONS: tuple[str, ...] = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:DescribeKey",
)

# What a service needs to publish to a KMS-encrypted SNS topic (SNS developer guide, "Enable
# compatibility between event sources from AWS services and encrypted topics"): SNS asks for a
# data key on the publisher's behalf and decrypts it.
PUBLISHER_KEY_ACTIONS: tuple[str, ...] = ("kms:GenerateDataKey", "kms:Decrypt")
