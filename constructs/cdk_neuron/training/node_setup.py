"""Shell lines the nodes run at first boot (user data). Plain Python, so tests can read them.

Both engines launch the ECS-optimized AL2023 Neuron AMI, whose ECS agent starts only after
cloud-init's final stage, so everything here is done before a Batch job can land on the node.
"""

from __future__ import annotations

import shlex

from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.training.launcher import SCRATCH_DIR

# Nitro names instance-store NVMe controllers by this model string; EBS volumes report
# "Amazon Elastic Block Store". Matching the model (not /dev/nvme1n1..) keeps the root EBS volume
# out of the array whatever order the kernel enumerates the controllers in.
INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
SCRATCH_LABEL = "neuron-scratch"
PROFILE_PATH = "/etc/profile.d/cdk-neuron-training.sh"
LIMITS_PATH = "/etc/security/limits.d/90-cdk-neuron.conf"
# Open files per process: 32+ ranks per node each open many EFA and Neuron handles; a low limit shows
# up as "Timeout waiting for RX" (aws-neuron-sdk#713, root cause "Too many open files").
NOFILE_LIMIT = 1_048_576


def scratch_commands(instance: NeuronInstance, mount_point: str = SCRATCH_DIR) -> list[str]:
    """Stripe every instance-store NVMe disk (RAID 0) into one XFS file system at ``mount_point``.

    Non-fatal: if it fails, the node still joins the cluster and ``mount_point`` is a directory on
    the root volume. Mounted by label with ``nofail`` so a reboot keeps it and a stop/start (which
    empties instance store) does not hang the boot. No-op on instance types without instance store.
    """
    if instance.nvme_gb <= 0:
        return []
    target = shlex.quote(mount_point)
    return [
        f"# Instance-store NVMe ({instance.nvme_gb} GB on {instance.name}) as scratch at {mount_point}.",
        "setup_scratch() {",
        "  local disks=() model dev",
        "  for model in /sys/block/nvme*n1/device/model; do",
        '    [ -e "$model" ] || continue',
        f"    if grep -q '{INSTANCE_STORE_MODEL}' \"$model\"; then",
        '      dev="${model#/sys/block/}"; disks+=("/dev/${dev%%/*}")',
        "    fi",
        "  done",
        '  if [ "${#disks[@]}" -eq 0 ]; then echo "cdk-neuron: no instance-store NVMe found" >&2; return 0; fi',
        f"  mountpoint -q {target} && return 0",
        '  if [ "${#disks[@]}" -gt 1 ]; then',
        "    command -v mdadm >/dev/null 2>&1 || dnf install -y mdadm || return 1",
        '    mdadm --create /dev/md/scratch --run --force --level=0 --raid-devices="${#disks[@]}" "${disks[@]}" || return 1',
        "    dev=/dev/md/scratch",
        "  else",
        '    dev="${disks[0]}"',
        "  fi",
        f'  mkfs.xfs -f -L {SCRATCH_LABEL} "$dev" || return 1',
        f'  mkdir -p {target} && mount -o noatime "$dev" {target} || return 1',
        f"  chmod 1777 {target}",
        f"  grep -qs ' {mount_point} ' /etc/fstab || "
        f"echo 'LABEL={SCRATCH_LABEL} {mount_point} xfs defaults,noatime,nofail 0 2' >> /etc/fstab",
        "}",
        f"setup_scratch || {{ echo 'cdk-neuron: NVMe scratch setup failed; {mount_point} is on the root volume' >&2; "
        f"mkdir -p {target}; }}",
    ]


def host_limits_commands() -> list[str]:
    """memlock unlimited (EFA registers memory) and a high open-files limit for host processes."""
    lines = [f"* {kind} {item} {value}" for item, value in (("memlock", "unlimited"), ("nofile", NOFILE_LIMIT))
             for kind in ("soft", "hard")]  # fmt: skip
    return _write_file(LIMITS_PATH, lines)


def profile_commands(environment: dict[str, str]) -> list[str]:
    """Export the training environment in every login shell (SSM sessions, Slurm/Ray workers)."""
    lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(environment.items())]
    return [*_write_file(PROFILE_PATH, lines), f"chmod 0644 {PROFILE_PATH}"]


def _write_file(path: str, lines: list[str]) -> list[str]:
    # A quoted here-document: the shell expands nothing inside it.
    return [f"cat > {path} <<'CDK_NEURON_EOF'", *lines, "CDK_NEURON_EOF"]


def disable_ecs_agent_commands() -> list[str]:
    """The self-managed node group runs no ECS agent (the AMI ships one for Batch).

    ``--no-block``: the agent's start job is ordered after cloud-init's final stage, which is running
    this script; waiting for it would deadlock.
    """
    return ["systemctl disable --now --no-block ecs.service || true"]


__all__ = [
    "INSTANCE_STORE_MODEL",
    "LIMITS_PATH",
    "NOFILE_LIMIT",
    "PROFILE_PATH",
    "SCRATCH_LABEL",
    "disable_ecs_agent_commands",
    "host_limits_commands",
    "profile_commands",
    "scratch_commands",
]
