#!/bin/bash
# cdk-neuron HyperPod lifecycle script of the controller group (its OnInitComplete entry point): the
# same setup as every node (on-init-complete.sh), told that this node is the Slurm controller, where
# the cluster's controller_program runs.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CDK_NEURON_NODE_ROLE=controller exec /bin/bash "${HERE}/on-init-complete.sh" "$@"
