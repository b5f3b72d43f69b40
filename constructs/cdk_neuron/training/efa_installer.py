"""EfaInstaller: the pinned EFA software release a training cluster installs on its nodes (plain Python).

Why the nodes install it: the ECS-optimized AL2023 Neuron AMI that AWS Batch runs installs the Neuron
driver, OCI hook and tools, but not the EFA software (aws/amazon-ecs-ami
``scripts/enable-ecs-agent-inferentia-support.sh``, read 2026-12-01), while AWS Batch's EFA guide
requires "the EFA driver" on the host (AWS Batch User Guide, "Elastic Fabric Adapter", read
2026-12-01) and device RDMA (``FI_EFA_USE_DEVICE_RDMA=1``) needs the out-of-tree efa module that
the installer builds. The job image brings its own libfabric (the Neuron training DLCs run
``efa_installer.sh --skip-kmod``, aws-neuron/deep-learning-containers
``pytorch/training/2.9.0/Dockerfile.neuronx``); the host needs the kernel driver, so nodes run
``efa_installer.sh --minimal``. Keep the host's installer at least as new as the one in your job
image: the driver must support what the image's libfabric asks of it.

Why a pinned version with a checksum, mirrored into the cluster's bucket: ``-latest`` drifts under
a running cluster and differs between nodes launched a week apart; a pin with its SHA-256 is
reproducible and verifiable, and a copy in S3 in the stack's region is reachable through the S3
gateway endpoint from subnets with no NAT (the installer's own host is on the internet).
"""

from __future__ import annotations

from dataclasses import dataclass

from cdk_neuron import validation

DEFAULT_VERSION = "1.41.0"
OBJECT_PREFIX = "efa-installer/"
"""Where the mirror keeps its copies in the cluster's bucket."""
DEFAULT_SHA256 = "3506354cdfbe31ff552fe75f5d0d9bb7efd29cf79bd99457347d29c751c38f9f"
DEFAULT_SOURCE = (
    "aws/aws-parallelcluster-cookbook pull request #2953, 'Upgrade EFA installer to 1.41.0 (from "
    "1.38.1)', cookbooks/aws-parallelcluster-environment/attributes/environment.rb "
    "(efa version and sha256), merged 2025; read 2026-12-01"
)


@dataclass(frozen=True)
class EfaInstaller:
    """An EFA installer release: version and the SHA-256 of its ``.tar.gz``.

    Build it with :meth:`pinned` (the default release) or :meth:`of` (another release, with the
    checksum you verified, e.g. from the EFA documentation's "Verify the EFA installer" page).
    """

    version: str
    sha256: str

    def __post_init__(self) -> None:
        validation.matching(
            "efa_installer.version",
            self.version,
            validation.RELEASE_VERSION,
            "a release number such as '1.41.0' (never 'latest')",
        )
        validation.matching(
            "efa_installer.sha256",
            self.sha256,
            validation.SHA256,
            "the tarball's SHA-256 as 64 lower-case hex digits",
        )

    @classmethod
    def pinned(cls) -> EfaInstaller:
        """EFA installer 1.41.0 (efa driver 2.15.0, rdma-core 57.0, libfabric-aws 2.1.0)."""
        return cls(DEFAULT_VERSION, DEFAULT_SHA256)

    @classmethod
    def of(cls, version: str, sha256: str) -> EfaInstaller:
        return cls(version, sha256.lower() if isinstance(sha256, str) else sha256)

    @property
    def url(self) -> str:
        """Where AWS publishes the release (Amazon EC2 User Guide, "Get started with EFA")."""
        return f"https://efa-installer.amazonaws.com/aws-efa-installer-{self.version}.tar.gz"

    @property
    def object_key(self) -> str:
        """The copy's key in the cluster's bucket."""
        return f"{OBJECT_PREFIX}aws-efa-installer-{self.version}.tar.gz"


__all__ = ["DEFAULT_SHA256", "DEFAULT_SOURCE", "DEFAULT_VERSION", "OBJECT_PREFIX", "EfaInstaller"]
