"""Facts the training node programs share with the job definitions (plain Python).

The programs themselves are files: ``cdk_neuron/node_programs/files/training`` (``efa-install.sh``,
``node-setup.sh``); the cluster writes their settings into user data.
"""

from __future__ import annotations

# Open files per process: 32+ ranks per node each open many EFA and Neuron handles; a low limit shows
# up as "Timeout waiting for RX" (aws-neuron-sdk#713, root cause "Too many open files"). The job
# containers get it as a ulimit; the self-managed node group's hosts in limits.d.
NOFILE_LIMIT = 1_048_576

# ECS registers a little less memory than the instance has (the kernel and the agent keep some), and
# a job asking for more than the registered amount never leaves RUNNABLE. 90 % leaves the host page
# cache, the ECS agent and the Neuron driver room on every size (trn1.32xlarge: 471,859 of 524,288 MiB).
CONTAINER_MEMORY_FRACTION = 0.9


def container_memory_mib(memory_gib: float) -> int:
    """The memory a job on a node of ``memory_gib`` may ask for (:data:`CONTAINER_MEMORY_FRACTION`)."""
    return int(memory_gib * 1024 * CONTAINER_MEMORY_FRACTION)


__all__ = ["CONTAINER_MEMORY_FRACTION", "NOFILE_LIMIT", "container_memory_mib"]
