"""Facts the training node programs share with the job definitions (plain Python).

The programs themselves are files: ``cdk_neuron/node_programs/files/training`` (``efa-install.sh``,
``node-setup.sh``); the cluster writes their settings into user data.
"""

from __future__ import annotations

# Open files per process: 32+ ranks per node each open many EFA and Neuron handles; a low limit shows
# up as "Timeout waiting for RX" (aws-neuron-sdk#713, root cause "Too many open files"). The job
# containers get it as a ulimit; the self-managed node group's hosts in limits.d.
NOFILE_LIMIT = 1_048_576

__all__ = ["NOFILE_LIMIT"]
