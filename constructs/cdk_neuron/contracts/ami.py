"""AMI contract: every command the host node programs call, and where the AMI they boot gets it.

Plain Python. Training nodes and serving instances boot the Amazon ECS-optimized Amazon Linux 2023
Neuron AMI (``cdk_neuron.ami``). aws/amazon-ecs-ami builds it (``al2023neu.pkr.hcl``) from the
*minimal* AL2023 AMI (``release-al2023.auto.pkrvars.hcl``: ``source_ami_al2023 =
al2023-ami-minimal-...``), adds ``packages_al2023`` (``variables.pkr.hcl``: amazon-efs-utils,
amazon-ssm-agent, amazon-ec2-net-utils, acpid, iproute-tc, ec2-instance-connect), swaps
gnupg2-minimal for gnupg2-full, installs Docker (``scripts/install-docker.sh``), ecs-init, and the
Neuron driver, OCI hook and tools (``scripts/enable-ecs-agent-inferentia-support.sh``:
aws-neuronx-dkms, aws-neuronx-oci-hook, oci-add-hooks, aws-neuronx-tools, whose binaries are in
/opt/aws/neuron/bin), then deletes the Neuron yum repository. It installs no AWS CLI, no EFA
software, no nginx, no mdadm.

Each :class:`AmiTool` says how a command gets onto a node:

- ``ami``: the AMI ships it, with the build step or base package that puts it there;
- ``route``: a node program installs it from the Amazon Linux repositories, which are in S3 and so
  reached over the S3 gateway endpoint (``ensure_command <command> <package>`` in
  ``lib/common.sh``, or the bootstrap's ``dnf install awscli-2``);
- ``never``: no node program may call it (not on the AMI, or the wrong tool for it); the node-program
  rehearsals stub it so a call would show.

``tests/test_ami_contract.py`` holds the programs to this list: the rehearsal sandbox
(``tests/node_sandbox.py``) puts exactly these commands on the ``PATH``, every ``route`` tool is
installed by a program before use, and no program calls a ``never`` tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ECS_AMI_REPOSITORY = "aws/amazon-ecs-ami"
ECS_AMI_COMMIT = "a2532d3503f2052a09ac18189b0de33918406db8"
"""The amazon-ecs-ami commit read (2026-08-21); its AL2023 base is al2023-ami-minimal-2023.12.20260817.0."""

Provided = Literal["ami", "route", "never"]

_BASE = "AL2023 minimal base"
_BUILD = f"{ECS_AMI_REPOSITORY} @{ECS_AMI_COMMIT[:8]}"


@dataclass(frozen=True)
class AmiTool:
    """One command a host node program runs.

    :ivar command: the command name as the programs call it.
    :ivar package: the Amazon Linux package that provides it.
    :ivar provided: ``ami``, ``route`` or ``never`` (see the module).
    :ivar evidence: where that is recorded (the AMI build step, or the program that installs it).
    """

    command: str
    package: str
    provided: Provided
    evidence: str


def _base(commands: str, package: str, why: str) -> tuple[AmiTool, ...]:
    return tuple(AmiTool(c, package, "ami", f"{_BASE}: {why}") for c in commands.split())


AMI_TOOLS: tuple[AmiTool, ...] = (
    *_base("bash sh", "bash", "the login shell; cloud-init runs user data with it"),
    *_base(
        "cat cp mv rm mkdir install ln chmod touch ls mktemp basename dirname readlink sort head tail "
        "wc cut tr date env printf seq sleep sha256sum timeout df",
        "coreutils",
        "every AL2023 image (rpm and dnf depend on it)",
    ),
    *_base("grep", "grep", "every AL2023 image"),
    *_base("sed", "sed", "every AL2023 image"),
    *_base("awk", "gawk", "every AL2023 image"),
    *_base("find xargs", "findutils", "every AL2023 image"),
    *_base("python3", "python3", "dnf and cloud-init are Python programs"),
    *_base("dnf", "dnf", "the package manager"),
    *_base("systemctl poweroff", "systemd", "the init system"),
    *_base("modprobe", "kmod", "the kernel module tools (the Neuron driver is a DKMS module)"),
    *_base("blkid lsblk findmnt mount mountpoint", "util-linux", "block devices and mounts"),
    AmiTool(
        "curl", "curl-minimal", "ami", f"{_BASE}; {_BUILD} scripts/install-exec-dependencies.sh calls curl"
    ),
    AmiTool("tar", "tar", "ami", f"{_BUILD} scripts/install-exec-dependencies.sh unpacks with tar at build"),
    AmiTool("gzip", "gzip", "ami", f"{_BASE}: tar's .tar.gz support"),
    AmiTool("docker", "docker", "ami", f"{_BUILD} scripts/install-docker.sh"),
    AmiTool(
        "neuron-ls",
        "aws-neuronx-tools",
        "ami",
        f"{_BUILD} scripts/enable-ecs-agent-inferentia-support.sh (in /opt/aws/neuron/bin, which "
        "check_neuron_devices falls back to)",
    ),
    AmiTool(
        "mount.efs", "amazon-efs-utils", "ami", f"{_BUILD} variables.pkr.hcl packages_al2023 (also ensured)"
    ),
    AmiTool("aws", "awscli-2", "route", "bootstrap.sh: dnf install -y -q awscli-2 when missing"),
    AmiTool("mkfs.xfs", "xfsprogs", "route", "ensure_command mkfs.xfs xfsprogs (node-setup.sh, boot.sh)"),
    AmiTool("mdadm", "mdadm", "route", "ensure_command mdadm mdadm (node-setup.sh)"),
    AmiTool("nginx", "nginx", "route", "ensure_command nginx nginx (serving/boot.sh)"),
    AmiTool(
        "unpigz",
        "pigz",
        "route",
        "ensure_command unpigz pigz (serving/boot.sh): dockerd decompresses layers with it when installed; "
        "a dependency of Amazon Linux's docker package, so normally already there",
    ),
    AmiTool(
        "mkfs.ext4",
        "e2fsprogs",
        "never",
        "the nodes format XFS (xfsprogs, installed over the route); 0.1's ext4 was not on the minimal base",
    ),
    AmiTool("wget", "wget", "never", "not on the AMI; the programs use curl for the metadata service only"),
    AmiTool("apt-get", "(Debian)", "never", "Amazon Linux has dnf"),
    AmiTool("snap", "(Ubuntu)", "never", "Amazon Linux has no snap store"),
    AmiTool(
        "pip", "python3-pip", "never", "no PyPI from a node: Python packages come from dnf (python3-boto3)"
    ),
)
"""Every command the host node programs may call, and how the AMI gets it."""

ROUTE_PACKAGES: dict[str, str] = {t.command: t.package for t in AMI_TOOLS if t.provided == "route"}
NEVER: frozenset[str] = frozenset(t.command for t in AMI_TOOLS if t.provided == "never")


def tool(command: str) -> AmiTool:
    """The contract's entry for ``command`` (KeyError when the contract does not list it)."""
    for entry in AMI_TOOLS:
        if entry.command == command:
            return entry
    raise KeyError(command)


__all__ = ["AMI_TOOLS", "ECS_AMI_COMMIT", "ECS_AMI_REPOSITORY", "NEVER", "ROUTE_PACKAGES", "AmiTool", "tool"]
