#!/bin/bash
# cdk-neuron HyperPod job step: every node of a Slurm step runs this once (srun --ntasks-per-node=1),
# as the sbatch script of cdk_neuron.training.hyperpod_jobs writes it:
#     srun --auto-resume=1 ... /bin/bash /opt/cdk-neuron/hyperpod/slurm-step.sh --command-base64 <base64>
# The lifecycle script installed it, with the launcher it hands over to, under /opt/cdk-neuron.
#
# 1. The node order: the step's nodes (SLURM_STEP_NODELIST, which HyperPod's auto-resume rewrites when
#    it replaces a node and re-runs the step) ordered by the switches Slurm knows (`scontrol show
#    topology`; hyperpod/slurm_order.py, the same ordering as the Batch launcher's EC2 topology order).
#    Every node computes the same order from the same inputs. A cluster without a topology plugin keeps
#    the node-list order; that is said in the log, not hidden.
# 2. The shared launcher (training/launcher.sh) with this node's rank, the node count and rank 0's name
#    as its scheduler inputs: it derives MASTER_ADDR/MASTER_PORT, NEURON_RT_ROOT_COMM_ID, WORLD_SIZE, the
#    DP degree and TORCHRUN_ARGS exactly as on the other engines, watches the peers, and runs the command.
#    Everything is computed inside the step, never in the batch script: after a node is replaced the
#    re-run step has a new node list, and rank 0 may be a new node.
#
# In the cluster's job image (srun --container-image, Pyxis) the same file runs from the read-only mount
# of /opt/cdk-neuron, with the topology the batch step read (CDK_NEURON_SLURM_TOPOLOGY_B64): the image
# has python3 and base64 but no Slurm client.
#
# Slurm gives every task SLURM_STEP_NODELIST (the step's nodes) and SLURMD_NODENAME (the node running
# the task): srun(1), "OUTPUT ENVIRONMENT VARIABLES", https://slurm.schedmd.com/srun.html.
set -euo pipefail
CDK_NEURON_PROGRAM=hyperpod-step
HOME_DIR="${CDK_NEURON_HOME:-/opt/cdk-neuron}"

log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
refuse() {
    log "REFUSED: $*; no training step ran"
    exit 3
}

nodelist="${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-}}"
[ -n "${nodelist}" ] || refuse "SLURM_STEP_NODELIST is not set: run this through srun inside an sbatch job"
host="${SLURMD_NODENAME:-}"
[ -n "${host}" ] || refuse "SLURMD_NODENAME is not set: run this through srun"
command -v python3 >/dev/null 2>&1 || refuse "python3 is missing on this node"

topology="$(mktemp)"
trap 'rm -f "${topology}"' EXIT
if [ -n "${CDK_NEURON_SLURM_TOPOLOGY_B64+set}" ]; then
    # In the job image (Pyxis): no scontrol there; the batch step read the topology on its host. A node
    # that replaced another after the batch step started is not in it: the order falls back to the node
    # list, and slurm_order.py says so (ORDERED_BY=node-list).
    printf %s "${CDK_NEURON_SLURM_TOPOLOGY_B64}" | base64 -d >"${topology}" ||
        refuse "CDK_NEURON_SLURM_TOPOLOGY_B64 is not base64"
    [ -s "${topology}" ] || log "the batch step found no Slurm topology (topology/flat): ranks follow the step's node list"
else
    command -v scontrol >/dev/null 2>&1 || refuse "scontrol is missing on this node"
    if ! scontrol show topology >"${topology}" 2>/dev/null; then
        log "Slurm reports no topology (topology/flat): ranks follow the step's node list"
        : >"${topology}"
    fi
fi
status=0
assignment="$(python3 "${HOME_DIR}/hyperpod/slurm_order.py" --host "${host}" --nodes "${nodelist}" \
    --topology "${topology}" --group-instances "${CDK_NEURON_DOMAIN_GROUP_INSTANCES:-1}" \
    --ultraserver "${CDK_NEURON_ULTRASERVER:-0}")" || status=$?
[ "${status}" -eq 0 ] || refuse "the step's nodes cannot be ordered (see above)"

rank="" main="" nnodes="" order="" ordered_by=""
while IFS='=' read -r key value; do
    case "${key}" in
        NODE_RANK) rank="${value}" ;;
        MASTER_ADDR) main="${value}" ;;
        NNODES) nnodes="${value}" ;;
        RANK_ORDER) order="${value}" ;;
        ORDERED_BY) ordered_by="${value}" ;;
    esac
done <<<"${assignment}"
[ -n "${rank}" ] && [ -n "${main}" ] && [ -n "${nnodes}" ] || refuse "slurm_order.py gave no assignment"
log "node ${host}: rank ${rank} of ${nnodes}, rank order ${order} (by ${ordered_by})"

# The order is applied: the launcher keeps it (scheduler order) instead of asking EC2 again.
export CDK_NEURON_NODE_INDEX="${rank}" CDK_NEURON_NNODES="${nnodes}" CDK_NEURON_MAIN_ADDRESS="${main}"
export CDK_NEURON_RANK_ORDER=scheduler
exec /bin/bash "${HOME_DIR}/training/launcher.sh" "$@"
