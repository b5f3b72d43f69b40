"""CompileCache: an S3 bucket for the Neuron persistent compile cache (``NEURON_COMPILE_CACHE_URL``).

:class:`ICompileCache` is what a training cluster or job needs of a cache (``url``, ``environment``,
grants); :class:`CompileCache` builds one and :meth:`CompileCache.from_compile_cache_attributes`
imports one built elsewhere.

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

from typing import TYPE_CHECKING, Protocol, cast

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from cdk_neuron import _cdk_values, validation
from cdk_neuron._nag import acknowledge
from cdk_neuron._scope import reported_by

COMPILE_CACHE_ENV = "NEURON_COMPILE_CACHE_URL"
DEFAULT_EXPIRE_AFTER = cdk.Duration.days(30)
DEFAULT_PREFIX = "neuron-compile-cache/"

# Object-level and bucket-level actions the cache needs, spelled out (no wildcards).
_OBJECT_READ = ("s3:GetObject",)
_OBJECT_WRITE = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
_LIST = ("s3:ListBucket",)
_KEY_READ = ("kms:Decrypt",)
_KEY_WRITE = ("kms:GenerateDataKey",)


def _prefix(value: object) -> str:
    return validation.matching(
        "prefix",
        value,
        validation.S3_KEY_PREFIX,
        "S3-safe path segments ending in '/', e.g. 'neuron-compile-cache/'",
    )


class ICompileCache(IConstruct, Protocol):
    """A Neuron compile cache under one S3 prefix. Built by :class:`CompileCache`, or imported with
    :meth:`CompileCache.from_compile_cache_attributes`."""

    @property
    def bucket(self) -> s3.IBucket:
        """The bucket that holds the cache."""
        ...

    @property
    def prefix(self) -> str:
        """The cache's key prefix, ending in ``/``."""
        ...

    @property
    def kms_key(self) -> kms.IKey | None:
        """The bucket's key, granted with the objects; None when an import names none."""
        ...

    @property
    def url(self) -> str:
        """``s3://<bucket>/<prefix>``: the value for ``NEURON_COMPILE_CACHE_URL``."""
        ...

    @property
    def environment(self) -> dict[str, str]:
        """``{"NEURON_COMPILE_CACHE_URL": url}`` for a container or a node profile."""
        ...

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read cached graphs under the prefix."""
        ...

    def grant_read_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read and write cached graphs under the prefix."""
        ...


class _CompileCacheBase(Construct):
    """What a built and an imported cache share: the URL and the grants, over ``bucket`` and ``prefix``."""

    _bucket: s3.IBucket
    _prefix: str
    _kms_key: kms.IKey | None

    @property
    def bucket(self) -> s3.IBucket:
        """The bucket that holds the cache."""
        return self._bucket

    @property
    def prefix(self) -> str:
        """The cache's key prefix, ending in ``/``; grants are confined to it."""
        return self._prefix

    @property
    def kms_key(self) -> kms.IKey | None:
        """The bucket's key (granted with the objects); None when an import names none."""
        return self._kms_key

    @property
    def url(self) -> str:
        """``s3://<bucket>/<prefix>``: the value for ``NEURON_COMPILE_CACHE_URL``."""
        return f"s3://{self._bucket.bucket_name}/{self._prefix}"

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
            resource_arns=[self._bucket.arn_for_objects(f"{self._prefix}*")],
            resource=self._bucket,
        )
        listing = iam.Grant.add_to_principal_or_resource(
            grantee=grantee,
            actions=list(_LIST),
            resource_arns=[self._bucket.bucket_arn],
            resource=self._bucket,
            conditions={"StringLike": {"s3:prefix": [self._prefix, f"{self._prefix}*"]}},
        )
        grant = objects.combine(listing)
        if self._kms_key is not None:
            grant = grant.combine(self._kms_key.grant(grantee, *key_actions))
        return grant


class CompileCache(_CompileCacheBase):
    """A KMS-encrypted, TLS-only, private S3 bucket for the Neuron persistent compile cache.

    Set ``NEURON_COMPILE_CACHE_URL`` to ``cache.url`` (``cache.environment`` has it ready) and
    ``cache.grant_read_write(job_role)`` (a training cluster given ``compile_cache=cache`` does both).

    Entries expire ``expire_after`` days after they were written: S3 lifecycle counts from
    creation, not last use, so a hot entry also expires and costs one recompilation. The cache key
    includes the compiler version, so after an SDK upgrade old entries are never read again.

    :param kms_key: customer-managed key for the bucket. Default: a new key with yearly rotation.
    :param expire_after: age (whole days) at which cache entries are deleted. Default: 30 days.
    :param removal_policy: for the bucket and the key the cache creates. ``DESTROY`` empties the
        bucket before CloudFormation deletes it (aws-cdk-lib's ``autoDeleteObjects``: a custom
        resource that first denies new writes, then deletes every object), so ``cdk destroy`` does
        not fail on the entries the cluster wrote. Default:
        ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``.
    :param prefix: key prefix of the cache, ending in ``/``. Default: ``"neuron-compile-cache/"``.
    :param server_access_logs_bucket: bucket for S3 server access logs. Default: None (no access
        logs: the cache holds only regenerable compiler output).
    :param server_access_logs_prefix: key prefix for the access logs. Default: ``prefix``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        kms_key: kms.IKey | None = None,
        expire_after: cdk.Duration = DEFAULT_EXPIRE_AFTER,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        prefix: str = DEFAULT_PREFIX,
        server_access_logs_bucket: s3.IBucket | None = None,
        server_access_logs_prefix: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            removal = _cdk_values.removal_policy("removal_policy", removal_policy)
            expire_days = _cdk_values.whole_duration("expire_after", expire_after, "days")
            self._prefix = _prefix(prefix)

            key: kms.IKey = kms_key or kms.Key(
                self,
                "Key",
                description=f"cdk-neuron compile cache {self.node.path}",
                enable_key_rotation=True,
                removal_policy=removal,
            )
            self._kms_key = key
            self._bucket = s3.Bucket(
                self,
                "Bucket",
                encryption=s3.BucketEncryption.KMS,
                encryption_key=key,
                # One data key per bucket instead of per object: the cache writes many small files.
                bucket_key_enabled=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                enforce_ssl=True,
                minimum_tls_version=1.2,
                versioned=False,
                removal_policy=removal,
                auto_delete_objects=removal == cdk.RemovalPolicy.DESTROY,
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
    def bucket(self) -> s3.Bucket:
        """The bucket that holds the cache."""
        return cast(s3.Bucket, self._bucket)

    @property
    def kms_key(self) -> kms.IKey:
        """The bucket's key: the one given, or the one the cache created."""
        assert self._kms_key is not None
        return self._kms_key

    @staticmethod
    def from_compile_cache_attributes(
        scope: Construct,
        id: str,
        *,
        bucket_name: str,
        prefix: str = DEFAULT_PREFIX,
        kms_key_arn: str | None = None,
    ) -> ICompileCache:
        """A cache built elsewhere (another stack or app), for clusters and jobs to use.

        The minimal attributes are the bucket's name and the cache's prefix. ``url``,
        ``environment``, ``grant_read`` and ``grant_read_write`` work as on the cache itself; the
        grants include the key only when ``kms_key_arn`` is given (without it, the key's own policy
        must let the grantee use it). It creates no resource.

        :param scope: the scope of the import.
        :param id: its construct id.
        :param bucket_name: the cache's bucket (``cache.bucket.bucket_name``), or a token.
        :param prefix: the cache's prefix, ending in ``/``. Default: ``"neuron-compile-cache/"``.
        :param kms_key_arn: the bucket's key (``cache.kms_key.key_arn``), granted ``kms:Decrypt`` (and
            ``kms:GenerateDataKey`` to writers). Default: None (no key grant).
        """
        return _ImportedCompileCache(
            scope, id, bucket_name=bucket_name, prefix=prefix, kms_key_arn=kms_key_arn
        )

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
            acknowledge(self._bucket, rule, reason)


class _ImportedCompileCache(_CompileCacheBase):
    """An existing cache (see :meth:`CompileCache.from_compile_cache_attributes`)."""

    def __init__(
        self, scope: Construct, id: str, *, bucket_name: str, prefix: str, kms_key_arn: str | None
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            _cdk_values.identifier(
                "bucket_name",
                bucket_name,
                validation.S3_BUCKET_NAME,
                "an S3 bucket name (3-63 of a-z 0-9 . -)",
            )
            self._prefix = _prefix(prefix)
            if kms_key_arn is not None:
                _cdk_values.identifier(
                    "kms_key_arn",
                    kms_key_arn,
                    validation.KMS_KEY_ARN,
                    "a KMS key ARN, e.g. arn:aws:kms:us-east-1:111111111111:key/<key id>",
                )
            self._bucket = s3.Bucket.from_bucket_name(self, "Bucket", bucket_name)
            self._kms_key = None if kms_key_arn is None else kms.Key.from_key_arn(self, "Key", kms_key_arn)


def is_compile_cache(value: object) -> bool:
    """Whether ``value`` is a :class:`CompileCache` or an imported one."""
    return isinstance(value, _CompileCacheBase)


if TYPE_CHECKING:  # mypy proves both meet the interface
    _BUILT: type[ICompileCache] = CompileCache
    _IMPORTED: type[ICompileCache] = _ImportedCompileCache

__all__ = ["COMPILE_CACHE_ENV", "DEFAULT_PREFIX", "CompileCache", "ICompileCache", "is_compile_cache"]
