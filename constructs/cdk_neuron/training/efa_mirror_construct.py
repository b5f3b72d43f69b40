"""EfaInstallerMirror: the pinned EFA installer, copied at deployment into a bucket the nodes read."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk_neuron._nag import acknowledge
from cdk_neuron._scope import reported_by
from cdk_neuron.training.efa_installer import EfaInstaller

HANDLER_DIR = Path(__file__).resolve().parent / "efa_mirror"
# Downloading and checking a few hundred MB takes well under a minute in Lambda; 10 minutes leaves
# room for a slow download without approaching Lambda's 15-minute limit.
COPY_TIMEOUT = cdk.Duration.minutes(10)


class EfaInstallerMirror(Construct):
    """A bucket holding one EFA installer release, filled by a custom resource at deployment.

    The function runs outside the VPC (it reaches efa-installer.amazonaws.com, and nothing else),
    refuses a download whose SHA-256 is not the pinned one, and deletes its object when the stack
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
            copy_only = "The bucket holds only a copy of the public EFA installer, recreated from its pinned URL and checksum at any deployment"
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

            log_group = logs.LogGroup(
                self,
                "Logs",
                retention=logs.RetentionDays.THREE_MONTHS,
                encryption_key=key,
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
            role = iam.Role(
                self,
                "Role",
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description="cdk-neuron EFA installer mirror: write one object, write its logs",
            )
            object_arn = self.bucket.arn_for_objects(self.object_key)
            policy = iam.ManagedPolicy(
                self,
                "Policy",
                roles=[role],
                description="cdk-neuron EFA installer mirror: put and delete the installer copy, write logs",
                statements=[
                    iam.PolicyStatement(
                        sid="WriteInstallerCopy",
                        actions=["s3:PutObject", "s3:DeleteObject"],
                        resources=[object_arn],
                    ),
                    iam.PolicyStatement(
                        sid="EncryptInstallerCopy", actions=["kms:GenerateDataKey"], resources=[key.key_arn]
                    ),
                    iam.PolicyStatement(
                        sid="WriteLogs",
                        actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                        resources=[f"{log_group.log_group_arn}"],
                    ),
                ],
            )
            function = lambda_.Function(
                self,
                "Function",
                description="cdk-neuron: copy the pinned EFA installer into the cluster's bucket",
                runtime=lambda_.Runtime.PYTHON_3_14,
                handler="handler.handler",
                code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
                timeout=COPY_TIMEOUT,
                memory_size=1024,
                ephemeral_storage_size=cdk.Size.gibibytes(2),
                role=role,
                log_group=log_group,
            )
            # The function names its role by Fn::GetAtt already; the DependsOn on the role that the L2
            # adds is what cfn-lint W3005 reports as redundant. (The custom resource waits for the policy.)
            cfn_function = function.node.default_child
            assert isinstance(cfn_function, cdk.CfnResource)
            cfn_function.add_deletion_override("DependsOn")
            acknowledge(
                function,
                "NIST.800.53.R5-LambdaInsideVPC",
                "The function must reach efa-installer.amazonaws.com on the internet and touches nothing in "
                "the VPC; placing it in a VPC would need a NAT just for it",
            )
            acknowledge(
                function,
                "NIST.800.53.R5-LambdaConcurrency",
                "CloudFormation invokes it once per deployment that changes the installer; reserving "
                "concurrency fails in new accounts whose whole quota is the unreserved minimum of 10",
            )
            acknowledge(
                function,
                "NIST.800.53.R5-LambdaDLQ",
                "CloudFormation invokes it synchronously as a custom resource and receives every failure as the "
                "resource's status; there is no asynchronous event to lose",
            )
            copy = cdk.CustomResource(
                self,
                "Copy",
                service_token=function.function_arn,
                resource_type="Custom::CdkNeuronEfaInstaller",
                properties={
                    "Url": installer.url,
                    "Sha256": installer.sha256,
                    "Bucket": self.bucket.bucket_name,
                    "Key": self.object_key,
                },
            )
            # The function needs its permissions (and its log group) before CloudFormation invokes it.
            copy.node.add_dependency(policy)
            self._copy = copy

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
    def ready(self) -> cdk.CustomResource:
        """The copy: depend on it so nothing launches nodes before the installer is in place."""
        return self._copy


__all__ = ["EfaInstallerMirror"]
