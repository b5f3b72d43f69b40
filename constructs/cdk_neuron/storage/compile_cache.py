"""CompileCache: an S3 bucket for the Neuron persistent compile cache (``NEURON_COMPILE_CACHE_URL``).

Why S3 and not a directory on the shared checkpoint file system: the Neuron docs report that a
NeuronCache directory "placed in a directory that is part of a NFS mounted drive shared among
multiple instances" gives "file errors such as file not found, file corruption, or KeyError ...
a result of limitations to file locking on NFS. EFS/FSx also exhibit similar limitation", and
suggest one cache directory per instance (aws-neuron-sdk ``archive/nxd-training/training-troubleshooting.rst``
@43a8962). A per-instance cache is lost when nodes are replaced, so every new node recompiles
(25 minutes for a 16-node Llama-3 70B job, awsome-distributed-training llama3 README @6abac09).
Neuron supports ``s3://`` cache URLs directly ("if the bucket exists and is read/write";
aws-neuron-sdk ``general/arch/neuron-features/neuron-caching.rst`` @4c317ca): S3 needs no locks,
objects are written whole, and all nodes share every compiled graph.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.storage import _props

COMPILE_CACHE_ENV = "NEURON_COMPILE_CACHE_URL"
DEFAULT_EXPIRE_AFTER = cdk.Duration.days(30)
_PREFIX = re.compile(r"^[A-Za-z0-9!_.()'-]+(/[A-Za-z0-9!_.()'-]+)*/$")

# Object-level and bucket-level actions the cache needs, spelled out (no wildcards).
_OBJECT_READ = ("s3:GetObject",)
_OBJECT_WRITE = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
_LIST = ("s3:ListBucket",)
_KEY_READ = ("kms:Decrypt",)
_KEY_WRITE = ("kms:GenerateDataKey",)


class CompileCache(Construct):
    """A KMS-encrypted, TLS-only, private S3 bucket for the Neuron persistent compile cache.

    Set ``NEURON_COMPILE_CACHE_URL`` to ``cache.url`` (``cache.environment`` has it ready) and
    ``cache.grant_read_write(job_role)``.

    Entries expire ``expire_after`` days after they were written: S3 lifecycle counts from
    creation, not last use, so a hot entry also expires and costs one recompilation. The cache key
    includes the compiler version, so after an SDK upgrade old entries are never read again.

    Args:
        kms_key: customer-managed key for the bucket. Default: a new key with yearly rotation.
        expire_after: age (whole days) at which cache entries are deleted. Default 30 days.
        removal_policy: for the bucket and the key the cache creates. Default RETAIN. ``DESTROY``
            deletes the bucket only when it is empty (no auto-delete Lambda is added).
        prefix: key prefix of the cache, ending in ``/``. Default ``"neuron-compile-cache/"``.
        server_access_logs_bucket: bucket for S3 server access logs. Default None (no access
            logs: the cache holds only regenerable compiler output).
        server_access_logs_prefix: key prefix for the access logs. Default ``"<prefix>"``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        kms_key: kms.IKey | None = None,
        expire_after: cdk.Duration = DEFAULT_EXPIRE_AFTER,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
        prefix: str = "neuron-compile-cache/",
        server_access_logs_bucket: s3.IBucket | None = None,
        server_access_logs_prefix: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        removal = _props.removal_policy("removal_policy", removal_policy)
        expire_days = _props.whole_days("expire_after", expire_after)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise NeuronConfigError(
                "prefix", prefix, "use S3-safe path segments ending in '/', e.g. 'neuron-compile-cache/'"
            )
        self.prefix = prefix

        self.kms_key: kms.IKey = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron compile cache {self.node.path}",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.kms_key,
            # One data key per bucket instead of per object: the cache writes many small files.
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            versioned=False,
            removal_policy=removal,
            server_access_logs_bucket=server_access_logs_bucket,
            server_access_logs_prefix=(server_access_logs_prefix or prefix)
            if server_access_logs_bucket
            else None,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireStaleCompileCacheEntries",
                    prefix=prefix,
                    expiration=cdk.Duration.days(expire_days),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
                )
            ],
        )
        self._acknowledge_cache_findings(logged=server_access_logs_bucket is not None)

    @property
    def url(self) -> str:
        """``s3://<bucket>/<prefix>``: the value for ``NEURON_COMPILE_CACHE_URL``."""
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"

    @property
    def environment(self) -> dict[str, str]:
        """Container environment that points Neuron at this cache."""
        return {COMPILE_CACHE_ENV: self.url}

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read cached graphs under the prefix (e.g. a fleet that only loads precompiled NEFFs)."""
        return self._grant(grantee, _OBJECT_READ, _KEY_READ)

    def grant_read_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read and write cached graphs under the prefix, and nothing else in the bucket."""
        return self._grant(grantee, _OBJECT_READ + _OBJECT_WRITE, _KEY_READ + _KEY_WRITE)

    def _grant(
        self, grantee: iam.IGrantable, object_actions: tuple[str, ...], key_actions: tuple[str, ...]
    ) -> iam.Grant:
        objects = iam.Grant.add_to_principal_or_resource(
            grantee=grantee,
            actions=list(object_actions),
            resource_arns=[self.bucket.arn_for_objects(f"{self.prefix}*")],
            resource=self.bucket,
        )
        listing = iam.Grant.add_to_principal_or_resource(
            grantee=grantee,
            actions=list(_LIST),
            resource_arns=[self.bucket.bucket_arn],
            resource=self.bucket,
            conditions={"StringLike": {"s3:prefix": [self.prefix, f"{self.prefix}*"]}},
        )
        key = self.kms_key.grant(grantee, *key_actions)
        return objects.combine(listing).combine(key)

    def _acknowledge_cache_findings(self, *, logged: bool) -> None:
        reason = (
            "Compile-cache bucket: holds only regenerable compiler output keyed by graph hash; a lost "
            "or overwritten entry costs one recompilation, so versions and replicas would only add cost."
        )
        ids = ["NIST.800.53.R5-S3BucketReplicationEnabled", "NIST.800.53.R5-S3BucketVersioningEnabled"]
        if not logged:
            ids += ["AwsSolutions-S1", "NIST.800.53.R5-S3BucketLoggingEnabled"]
            reason += " Server access logs are off unless server_access_logs_bucket is given."
        for rule in ids:
            cdk.Validations.of(self.bucket).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))
