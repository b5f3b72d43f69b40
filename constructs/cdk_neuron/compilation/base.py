"""What both model compilations share: the engine check, the artifact grant, the logs and the write-once rule.

:class:`~cdk_neuron.compilation.ModelCompilation` compiles on Fargate (models whose export fits a Fargate
task's 120 GiB); :class:`~cdk_neuron.compilation.BatchModelCompilation` compiles on a Batch training
cluster's own instances (a trn1.32xlarge holds a 70B export). One class per variant over this base, as
aws-batch's job definitions are. Both run the same three programs (``node_programs/files/compile``:
fetch, export, upload), take the same :class:`~cdk_neuron.compilation.CompileRequest`, write the same
manifest and are granted the same writes.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk_neuron._nag import acknowledge_wildcards
from cdk_neuron.compilation.job import COMPILE_ENGINES, check_artifact_prefix
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.iam_statements import allow_log_encryption
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME
from cdk_neuron.serving.engines import ServingEngine


class ModelCompilationBase(Construct):
    """The shared part of a model compilation: see :mod:`cdk_neuron.compilation.base`.

    :ivar engine: the serving engine whose image compiles.
    :ivar artifact_bucket: where artifacts are written.
    :ivar artifact_prefix: the key prefix the compile may write under.
    :ivar kms_key: the key of the compile logs.
    :ivar log_group: the compile logs.
    """

    engine: ServingEngine
    artifact_bucket: s3.IBucket
    artifact_prefix: str
    kms_key: kms.IKey
    log_group: logs.LogGroup

    @staticmethod
    def _checked_engine(engine: object) -> ServingEngine:
        engine = engine if engine is not None else ServingEngine.optimum_neuron()
        if not isinstance(engine, ServingEngine):
            raise NeuronConfigError("engine", engine, "pass ServingEngine.optimum_neuron()")
        if engine.name not in COMPILE_ENGINES:
            raise NeuronConfigError(
                "engine",
                engine.name,
                "the compile task runs optimum-neuron's export; use ServingEngine.optimum_neuron() "
                "(export other engines' artifacts by hand: serving README, Precompiled artifacts)",
            )
        return engine

    def _setup(
        self,
        *,
        engine: ServingEngine,
        artifact_bucket: s3.IBucket,
        artifact_prefix: str,
        kms_key: kms.IKey | None,
        removal_policy: cdk.RemovalPolicy,
        log_retention: logs.RetentionDays,
    ) -> None:
        """The engine, the artifact destination, the log key (``Key``) and the log group (``Logs``)."""
        self.engine = engine
        self.artifact_bucket = artifact_bucket
        self.artifact_prefix = check_artifact_prefix(artifact_prefix)
        self.kms_key = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron model compilation {self.node.path}: compile logs",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        allow_log_encryption(self.kms_key, sid="CloudWatchLogsEncryptsCompileLogs")
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            encryption_key=self.kms_key,
            retention=log_retention,
            removal_policy=removal_policy,
        )

    @property
    def _role(self) -> iam.IRole:
        """The role the compile's containers run as (the subclass's)."""
        raise NotImplementedError

    def _grant_artifact_writes(self, bucket: s3.IBucket) -> None:
        """List and write under ``artifact_prefix`` only: no read, no delete, nothing outside it."""
        prefix = self.artifact_prefix
        statements: list[tuple[iam.PolicyStatement, str]] = [
            (
                iam.PolicyStatement(
                    sid="ListArtifactPrefix",
                    actions=["s3:ListBucket"],
                    resources=[bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                ),
                f"the upload lists the destination prefix under {prefix} to refuse a non-empty one",
            ),
            (
                iam.PolicyStatement(
                    sid="WriteArtifacts",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[bucket.arn_for_objects(f"{prefix}*")],
                ),
                f"each compile writes a new prefix under {prefix} chosen when it runs (cdk-neuron compile "
                "--artifact-uri); put (and abort its own multipart uploads) only, never read or delete",
            ),
        ]
        if bucket.encryption_key is not None:
            statements.append(
                (
                    iam.PolicyStatement(
                        sid="EncryptArtifacts",
                        actions=["kms:GenerateDataKey", "kms:Decrypt"],
                        resources=[bucket.encryption_key.key_arn],
                    ),
                    "the artifact bucket's key (a multipart upload decrypts its parts to complete)",
                )
            )
        policy = iam.ManagedPolicy(
            self,
            "ArtifactWrites",
            description=f"cdk-neuron model compilation {self.node.path}: write compiled artifacts",
            roles=[self._role],
            statements=[s for s, _ in statements],
        )
        acknowledge_wildcards(policy, statements)

    # -- the interfaces ----------------------------------------------------------------------------

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The role the containers run as: grant it read access to S3 sources (:meth:`grant_read_source`)."""
        return self._role

    def grant_read_source(self, bucket: s3.IBucket, prefix: str = "*") -> iam.Grant:
        """Let the compile read a source checkpoint under ``prefix`` of ``bucket``."""
        return bucket.grant_read(self._role, prefix)

    def write_once_statement(self) -> iam.PolicyStatement:
        """A bucket-policy statement that makes every manifest under ``artifact_prefix`` write-once for
        everyone: a ``PutObject`` of a ``cdk-neuron-artifact.json`` without ``If-None-Match`` is denied
        ("Enforce conditional writes on Amazon S3 buckets", Amazon S3 User Guide,
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html, read
        2026-12-02). The manifest is one ``PutObject`` (never multipart), so no
        ``s3:ObjectCreationOperation`` exemption is needed; copies onto a manifest key are denied too.
        Add it to a bucket you own elsewhere with ``bucket.add_to_resource_policy``."""
        return iam.PolicyStatement(
            sid="CdkNeuronManifestsAreWriteOnce",
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["s3:PutObject"],
            resources=[self.artifact_bucket.arn_for_objects(f"{self.artifact_prefix}*/{MANIFEST_NAME}")],
            conditions={"Null": {"s3:if-none-match": "true"}},
        )

    def enforce_write_once(self) -> bool:
        """Add :meth:`write_once_statement` to the artifact bucket's policy. Returns False for an
        imported bucket, whose policy is not this app's (add the statement where the bucket is defined)."""
        return bool(self.artifact_bucket.add_to_resource_policy(self.write_once_statement()).statement_added)


__all__ = ["ModelCompilationBase"]
