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

Why a pinned version, verified, mirrored into the cluster's bucket: ``-latest`` drifts under a
running cluster and differs between nodes launched a week apart; a pinned release is reproducible,
and a copy in S3 in the stack's region is reachable through the S3 gateway endpoint from subnets with
no NAT (the installer's own host is on the internet).

How it is verified. AWS documents two checks for the tarball ("Get started with EFA and MPI", Amazon
EC2 User Guide, "Verify the authenticity and integrity of the EFA tarball", read 2026-12-02): its GPG
signature (``aws-efa-installer-<version>.tar.gz.sig``) under the key ``aws-efa-installer.key`` whose
fingerprint is :data:`AWS_EFA_KEY_FINGERPRINT`, or an MD5/SHA-256 checksum from the "Verify the EFA
installer using a checksum" page. The default release is verified the first way, by the mirror at
deployment (``custom_resources/openpgp.py``: the key's fingerprint must be the pinned one and the
signature must verify); the mirror then records the copy's SHA-256, and every node checks its download
against that. :meth:`EfaInstaller.of` pins a release by a SHA-256 you took from that page instead.

Which release. At least as new as the EFA installer inside the job image, whose libfabric asks the
host's driver for what it supports: the training DLC pinned by
:data:`cdk_neuron.contracts.images.TRAINING_DLC_IMAGE` was built with installer
:data:`cdk_neuron.contracts.images.TRAINING_DLC_EFA_INSTALLER`, and a test holds
:data:`DEFAULT_VERSION` to at least that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cdk_neuron import validation

DEFAULT_VERSION = "1.47.0"
"""The release the nodes install by default: the one in the pinned training DLC (TRAINING_DLC_EFA_INSTALLER)."""
OBJECT_PREFIX = "efa-installer/"
"""Where the mirror keeps its copies in the cluster's bucket."""
AWS_EFA_KEY_FINGERPRINT = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
"""The fingerprint of AWS's EFA installer signing key, as the EC2 User Guide prints it ("4E90 91BC
BB97 A96B 26B1 5E59 A054 80B1 DD2D 3CCC", "Get started with EFA and MPI", read 2026-12-02)."""
KEY_URL = "https://efa-installer.amazonaws.com/aws-efa-installer.key"
"""Where AWS publishes that key (same page)."""
DEFAULT_SOURCE = (
    "Amazon EC2 User Guide, 'Get started with EFA and MPI' (efa-start.html): download "
    "aws-efa-installer-1.47.0.tar.gz, verify its .sig with aws-efa-installer.key, fingerprint "
    "4E90 91BC BB97 A96B 26B1 5E59 A054 80B1 DD2D 3CCC; read 2026-12-02"
)

Verification = Literal["signature", "sha256"]


@dataclass(frozen=True)
class EfaInstaller:
    """An EFA installer release and how its tarball is verified.

    Build it with :meth:`pinned` (the default release, verified by AWS's signature), :meth:`signed`
    (another release, verified the same way) or :meth:`of` (a release and the SHA-256 you verified,
    e.g. from the EFA documentation's "Verify the EFA installer using a checksum" page).

    :ivar version: the release number, e.g. ``"1.47.0"``.
    :ivar sha256: the tarball's pinned SHA-256; None when the signature verifies it (the mirror then
        records the SHA-256 of what it verified, and nodes check their download against that).
    """

    version: str
    sha256: str | None = None

    def __post_init__(self) -> None:
        validation.matching(
            "efa_installer.version",
            self.version,
            validation.RELEASE_VERSION,
            "a release number such as '1.47.0' (never 'latest')",
        )
        if self.sha256 is not None:
            validation.matching(
                "efa_installer.sha256",
                self.sha256,
                validation.SHA256,
                "the tarball's SHA-256 as 64 lower-case hex digits",
            )

    @classmethod
    def pinned(cls) -> EfaInstaller:
        """EFA installer 1.47.0, the release in the pinned training DLC, verified by AWS's GPG signature."""
        return cls(DEFAULT_VERSION)

    @classmethod
    def signed(cls, version: str) -> EfaInstaller:
        """``version``, verified at deployment by AWS's GPG signature (:data:`AWS_EFA_KEY_FINGERPRINT`)."""
        return cls(version)

    @classmethod
    def of(cls, version: str, sha256: str) -> EfaInstaller:
        """``version``, verified by the SHA-256 you give (64 hex digits)."""
        if not isinstance(sha256, str):
            validation.matching("efa_installer.sha256", sha256, validation.SHA256, "64 hex digits")
        return cls(version, sha256.lower())

    @property
    def verification(self) -> Verification:
        """``signature`` (AWS's GPG signature, checked by the mirror) or ``sha256`` (the pinned digest)."""
        return "signature" if self.sha256 is None else "sha256"

    @property
    def url(self) -> str:
        """Where AWS publishes the release (Amazon EC2 User Guide, "Get started with EFA")."""
        return f"https://efa-installer.amazonaws.com/aws-efa-installer-{self.version}.tar.gz"

    @property
    def signature_url(self) -> str:
        """The release's detached GPG signature."""
        return f"{self.url}.sig"

    @property
    def object_key(self) -> str:
        """The copy's key in the cluster's bucket."""
        return f"{OBJECT_PREFIX}aws-efa-installer-{self.version}.tar.gz"


__all__ = [
    "AWS_EFA_KEY_FINGERPRINT",
    "DEFAULT_SOURCE",
    "DEFAULT_VERSION",
    "KEY_URL",
    "OBJECT_PREFIX",
    "EfaInstaller",
    "Verification",
]
