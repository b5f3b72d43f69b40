"""EfaInstallerMirror: the pinned EFA installer, copied at deployment into a bucket the nodes read."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk_neuron._custom_resource import handler_function
from cdk_neuron._nag import acknowledge
from cdk_neuron._scope import reported_by
from cdk_neuron.training.efa_installer import AWS_EFA_KEY_FINGERPRINT, KEY_URL, OBJECT_PREFIX, EfaInstaller

# Downloading and checking a few hundred MB takes well under a minute in Lambda; 10 minutes leaves
# room for a slow download without approaching Lambda's 15-minute limit.
COPY_TIMEOUT = cdk.Duration.minutes(10)


class EfaInstallerMirror(Construct):
    """A bucket holding one EFA installer release, filled by a custom resource at deployment.

    The function runs outside the VPC (it reaches efa-installer.amazonaws.com, and nothing else),
    refuses a download whose SHA-256 is not the pinned one, or, for a release verified by signature,
    whose GPG signature does not verify under AWS's EFA key (pinned by fingerprint), and returns the
    copy's SHA-256 (:attr:`sha256`) for the nodes to check. It deletes its object when the stack
    deletes it, so the bucket goes with the stack: it holds only a copy of public software.

    :param installer: the release to copy.
    :param kms_key: the key that encrypts the bucket and the function's logs (the cluster's).

    :ivar bucket: the bucket that holds the copy.
    :ivar object_key: the copy's key in it.
    :ivar installer: the release.
    :ivar kms_key: the bucket's key.
    """

    def __init__(self, scope: Construct, id: str, *, installer: EfaInstaller, kms_key: kms.IKey) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self.installer = installer
            self.object_key = installer.object_key
            self.kms_key = kms_key
            key = kms_key
            self.bucket = s3.Bucket(
                self,
                "Bucket",
                encryption=s3.BucketEncryption.KMS,
                encryption_key=key,
                bucket_key_enabled=True,
                enforce_ssl=True,
                minimum_tls_version=1.2,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
            copy_only = "The bucket holds only a copy of the public EFA installer, recreated from its pinned URL and verified at any deployment"
            for rule in ("AwsSolutions-S1", "NIST.800.53.R5-S3BucketLoggingEnabled"):
                acknowledge(
                    self.bucket, rule, f"{copy_only}; access logs would record nodes reading public software"
                )
            for rule in (
                "NIST.800.53.R5-S3BucketVersioningEnabled",
                "NIST.800.53.R5-S3BucketReplicationEnabled",
            ):
                acknowledge(
                    self.bucket, rule, f"{copy_only}; versions or replicas of it would protect nothing"
                )

            # The whole prefix, not one key: after a version bump CloudFormation deletes the old copy
            # (the old key) once the policy already names the new one.
            copies = self.bucket.arn_for_objects(f"{OBJECT_PREFIX}*")
            handler = handler_function(
                self,
                handler="efa_mirror.handler",
                description="cdk-neuron: copy the pinned EFA installer into the cluster's bucket",
                statements=[
                    (
                        iam.PolicyStatement(
                            sid="WriteInstallerCopy",
                            actions=["s3:PutObject", "s3:DeleteObject"],
                            resources=[copies],
                        ),
                        "The installer copies under efa-installer/ only: the current release, and the previous "
                        "one, which CloudFormation deletes after a version bump",
                    ),
                    (
                        iam.PolicyStatement(
                            sid="EncryptInstallerCopy",
                            actions=["kms:GenerateDataKey"],
                            resources=[key.key_arn],
                        ),
                        "",
                    ),
                ],
                timeout=COPY_TIMEOUT,
                removal_policy=cdk.RemovalPolicy.DESTROY,
                outside_vpc_reason="The function must reach efa-installer.amazonaws.com on the internet and touches "
                "nothing in the VPC; placing it in a VPC would need a NAT just for it",
                kms_key=key,
                memory_size=1024,
                ephemeral_storage=cdk.Size.gibibytes(2),
            )
            bucket = self.bucket.node.default_child
            assert isinstance(bucket, cdk.CfnResource)
            # Its Delete removes the copy, so the bucket is empty when CloudFormation deletes it.
            self._copy = handler.resource(
                self,
                "Copy",
                resource_type="Custom::CdkNeuronEfaInstaller",
                properties=_copy_properties(installer, self.bucket.bucket_name, self.object_key),
                empties=[bucket],
            )

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` download the installer: ``s3:GetObject`` on it and ``kms:Decrypt`` on its key."""
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:GetObject"],
            resource_arns=[self.bucket.arn_for_objects(self.object_key)],
        )
        return grant.combine(
            iam.Grant.add_to_principal(
                grantee=grantee, actions=["kms:Decrypt"], resource_arns=[self.kms_key.key_arn]
            )
        )

    @property
    def sha256(self) -> str:
        """The SHA-256 of the verified copy, which every node checks its download against: the pinned
        one, or (for a signature-verified release) what the mirror computed after verifying it."""
        if self.installer.sha256 is not None:
            return self.installer.sha256
        return self._copy.get_att_string("Sha256")

    @property
    def ready(self) -> cdk.CustomResource:
        """The copy: depend on it so nothing launches nodes before the installer is in place."""
        return self._copy


def _copy_properties(installer: EfaInstaller, bucket: str, key: str) -> dict[str, str]:
    """What the mirror function needs: where to download, how to verify, where to put the copy."""
    properties = {"Url": installer.url, "Bucket": bucket, "Key": key}
    if installer.sha256 is not None:
        properties["Sha256"] = installer.sha256
    else:
        properties.update(
            {
                "SignatureUrl": installer.signature_url,
                "KeyUrl": KEY_URL,
                "KeyFingerprint": AWS_EFA_KEY_FINGERPRINT,
            }
        )
    return properties


__all__ = ["EfaInstallerMirror"]
