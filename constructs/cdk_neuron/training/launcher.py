"""The multi-node launcher every Batch job runs, and the environment it and the nodes get.

Plain Python (no ``aws_cdk``), so the script text can be read and tested on its own.

Why a launcher: AWS Batch sets ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS`` only on the child
nodes of a multi-node job, never on the main node (AWS Batch User Guide, "Environment variables" for
multi-node parallel jobs, https://docs.aws.amazon.com/batch/latest/userguide/mnp-env-vars.html). A job
that reads it blindly gets an empty master address on node 0; the public Neuron Batch sample works
around it in its training script and still sets ``NEURON_RT_ROOT_COMM_ID=localhost:48620`` and
``WORLD_SIZE=1`` (aws-neuron/aws-neuron-samples
torch-neuronx/training/aws-batch/llama2/docker/llama_batch_training.sh @0bb2b5b). The launcher
derives everything once, for every node:

- ``MASTER_ADDR``: the Batch variable on children; on the main node its own address (the container's
  ``eth0``, which in Batch's ``awsvpc`` mode is the task's own network interface, then ``hostname -I``,
  then Python's resolver).
- ``MASTER_PORT`` (torch's rendezvous store, default 29500, torch's own default) and
  ``NEURON_RT_ROOT_COMM_ID=$MASTER_ADDR:$ROOT_COMM_PORT`` (the Neuron runtime's root communicator,
  default port 29600). They are two listeners on the main node, so they need two ports, and both
  sit below Linux's ephemeral range (32768-60999), so no outgoing connection can take them first.
  The sample's 41000 needed ``sysctl net.ipv4.ip_local_reserved_ports``, which an unprivileged
  container cannot set.
- ``NODE_RANK`` / ``NNODES`` from Batch, ``WORLD_SIZE = NNODES x NPROC_PER_NODE`` and
  ``NEURON_DP_DEGREE = WORLD_SIZE / (TP x PP)`` computed at run time, so a job submitted with a
  different node count still gets consistent numbers (and a clear error if TP x PP does not divide).
- ``TORCHRUN_ARGS``: ``--nnodes --node_rank --nproc_per_node --master_addr --master_port``.

Then it runs the training command, the job's ``training_command`` parameter: Batch substitutes
``Ref::training_command`` in the container command, so ``aws batch submit-job --parameters
training_command='...'`` replaces the job definition's default per job. bash runs the command, so it
may use the variables above, e.g. ``torchrun $TORCHRUN_ARGS train.py --tp $NEURON_TP_DEGREE``.
"""

from __future__ import annotations

from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.validation import ENVIRONMENT_VARIABLE

LAUNCHER_NAME = "cdk-neuron-launcher"
TRAINING_COMMAND_PARAMETER = "training_command"
DEFAULT_TRAINING_COMMAND = "torchrun $TORCHRUN_ARGS train.py"
DEFAULT_MASTER_PORT = 29500
DEFAULT_ROOT_COMM_PORT = 29600
SCRATCH_DIR = "/scratch"

# Batch refuses environment names starting with AWS_BATCH; ECS allows letters, digits and '_'.

LAUNCHER_SCRIPT = r"""set -euo pipefail
log() { echo "cdk-neuron-launcher: $*" >&2; }
own_address() {
  local addr=""
  if command -v ip >/dev/null 2>&1; then
    addr="$(ip -4 -o addr show dev "${CCOM_SOCKET_IFNAME:-eth0}" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')"
  fi
  if [ -z "$addr" ] && command -v hostname >/dev/null 2>&1; then
    addr="$(hostname -I 2>/dev/null | awk '{print $1}')"
  fi
  if [ -z "$addr" ] && command -v python3 >/dev/null 2>&1; then
    addr="$(python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))' 2>/dev/null || true)"
  fi
  printf '%s' "$addr"
}
# Batch sets the main node's address only on child nodes; the main node uses its own.
if [ -n "${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-}" ]; then
  MASTER_ADDR="$AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"
else
  MASTER_ADDR="$(own_address)"
fi
if [ -z "$MASTER_ADDR" ]; then log "cannot determine the main node's address"; exit 1; fi
export MASTER_ADDR
export MASTER_PORT="${MASTER_PORT:-29500}"
export NEURON_RT_ROOT_COMM_ID="${MASTER_ADDR}:${ROOT_COMM_PORT:-29600}"
export NODE_RANK="${AWS_BATCH_JOB_NODE_INDEX:-0}"
export NNODES="${AWS_BATCH_JOB_NUM_NODES:-1}"
export WORLD_SIZE=$(( NNODES * NPROC_PER_NODE ))
model_parallel=$(( NEURON_TP_DEGREE * NEURON_PP_DEGREE ))
if (( WORLD_SIZE % model_parallel != 0 )); then
  log "world size ${WORLD_SIZE} (${NNODES} nodes x ${NPROC_PER_NODE}) is not divisible by TP x PP = ${model_parallel}"
  exit 1
fi
export NEURON_DP_DEGREE=$(( WORLD_SIZE / model_parallel ))
export TORCHRUN_ARGS="--nnodes=${NNODES} --node_rank=${NODE_RANK} --nproc_per_node=${NPROC_PER_NODE} --master_addr=${MASTER_ADDR} --master_port=${MASTER_PORT}"
command_line="${1:-}"
if [ -z "$command_line" ]; then log "no training command: set the training_command parameter"; exit 2; fi
log "node ${NODE_RANK}/${NNODES}, main ${MASTER_ADDR}:${MASTER_PORT}, root comm ${NEURON_RT_ROOT_COMM_ID}, world ${WORLD_SIZE} = TP ${NEURON_TP_DEGREE} x PP ${NEURON_PP_DEGREE} x DP ${NEURON_DP_DEGREE}"
exec "${BASH:-/bin/bash}" -c "$command_line"
"""


def launcher_command() -> list[str]:
    """The container command: bash runs the launcher with the training command as ``$1``."""
    return ["/bin/bash", "-c", LAUNCHER_SCRIPT, LAUNCHER_NAME, f"Ref::{TRAINING_COMMAND_PARAMETER}"]


def training_command(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise NeuronConfigError(
            field, value, f"give the command each node runs, e.g. {DEFAULT_TRAINING_COMMAND!r}"
        )
    return value


def node_environment(
    instance: NeuronInstance,
    plan: TrainingPlan,
    *,
    compile_cache_url: str | None,
    checkpoint_dir: str | None,
) -> dict[str, str]:
    """Environment every training process needs, whichever engine runs it.

    ``FI_PROVIDER=efa`` and ``FI_EFA_USE_DEVICE_RDMA=1`` select EFA with RDMA for the Neuron
    collectives (EFA-SETUP). ``FI_EFA_FORK_SAFE`` is left out: the Neuron docs need it only on AL2
    kernels, and the nodes run AL2023. The plan's degrees are exported so scripts do not hard-code them.
    """
    env = {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "NEURON_TP_DEGREE": str(plan.tensor_parallel),
        "NEURON_PP_DEGREE": str(plan.pipeline_parallel),
        "NPROC_PER_NODE": str(plan.ranks_per_node),
    }
    if plan.logical_nc_config is not None:
        # The compiler's --logical-nc-config must match the runtime's (LNC); exported for both.
        env["NEURON_LOGICAL_NC_CONFIG"] = str(plan.logical_nc_config)
    if compile_cache_url is not None:
        env["NEURON_COMPILE_CACHE_URL"] = compile_cache_url
    if checkpoint_dir is not None:
        env["CHECKPOINT_DIR"] = checkpoint_dir
    if instance.nvme_gb > 0:
        env["SCRATCH_DIR"] = SCRATCH_DIR
    return env


def job_environment(
    instance: NeuronInstance,
    plan: TrainingPlan,
    *,
    compile_cache_url: str | None,
    checkpoint_dir: str | None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The Batch container environment: :func:`node_environment` plus the launcher's inputs.

    ``CCOM_SOCKET_IFNAME=eth0`` pins the Neuron collectives' bootstrap sockets to the task's network
    interface (as the Neuron Batch sample does); ``extra`` is merged last and may override anything.
    """
    env = node_environment(instance, plan, compile_cache_url=compile_cache_url, checkpoint_dir=checkpoint_dir)
    env.update(
        {
            "CCOM_SOCKET_IFNAME": "eth0",
            "MASTER_PORT": str(DEFAULT_MASTER_PORT),
            "ROOT_COMM_PORT": str(DEFAULT_ROOT_COMM_PORT),
        }
    )
    for name, value in (extra or {}).items():
        if (
            not isinstance(name, str)
            or not ENVIRONMENT_VARIABLE.fullmatch(name)
            or name.startswith("AWS_BATCH")
        ):
            raise NeuronConfigError(
                "environment", name, "use names of letters, digits and '_' that do not start with AWS_BATCH"
            )
        if not isinstance(value, str):
            raise NeuronConfigError(f"environment[{name!r}]", value, "environment values must be strings")
        env[name] = value
    return env


__all__ = [
    "DEFAULT_MASTER_PORT",
    "DEFAULT_ROOT_COMM_PORT",
    "DEFAULT_TRAINING_COMMAND",
    "LAUNCHER_NAME",
    "LAUNCHER_SCRIPT",
    "SCRATCH_DIR",
    "TRAINING_COMMAND_PARAMETER",
    "job_environment",
    "launcher_command",
    "node_environment",
    "training_command",
]
