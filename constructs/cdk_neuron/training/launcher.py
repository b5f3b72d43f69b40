"""The multi-node launcher every Batch job runs, and the environment it and the nodes get.

Plain Python (no ``aws_cdk``). The launcher itself is a node program,
``node_programs/files/training/launcher.sh``; the job container runs it from the host's bundle,
mounted read-only, and it orders ranks by the EC2 topology (``training/rank_order.py``) before the
training command starts (docs/neuronlink.md).

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

Then it runs the training command, the job's ``training_command`` parameter, with bash, so the
command may use the variables above, e.g. ``torchrun $TORCHRUN_ARGS train.py --tp $NEURON_TP_DEGREE``.

How the command travels: AWS Batch substitutes ``Ref::`` parameters only inside the container
command, and the container command goes through the image's entrypoint, which a job definition
cannot override. The Neuron training DLCs have ``ENTRYPOINT ["bash", "-m",
"start_with_right_hostname.sh"]``, and that script runs ``eval "$@"`` for every command but
``train`` (aws-neuron/deep-learning-containers ``pytorch/training/2.9.0/Dockerfile.neuronx`` and
``common/start_with_right_hostname.sh`` @6776548 = tag 2.28.0, unchanged at 2be9ed1, 2026-08-17): a
plain command in the argument list is joined and re-parsed, so ``$TORCHRUN_ARGS`` expands to nothing
before the launcher sets it and the launcher receives the command in pieces. So the parameter holds
the command **base64-encoded** (:func:`encode_training_command`): one word of ``[A-Za-z0-9+/=]``,
which a re-parse leaves whole and an entrypoint-less image passes as is. The launcher decodes it
and refuses (exit 2, before any training step) anything that is not one base64 word, saying how to
encode. What users give stays a plain command: the construct's ``training_command`` and
``cdk-neuron submit -- 'COMMAND'`` encode it; with the AWS CLI, ``aws batch submit-job --parameters
training_command="$(printf '%s' 'COMMAND' | base64 | tr -d '\\n')"``.
"""

from __future__ import annotations

import base64
import binascii

from cdk_neuron import timeouts
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import INSTALL_DIR, program
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.validation import ENVIRONMENT_VARIABLE

LAUNCHER_NAME = "cdk-neuron-launcher"
TRAINING_COMMAND_PARAMETER = "training_command"
DEFAULT_TRAINING_COMMAND = "torchrun $TORCHRUN_ARGS train.py"
DEFAULT_MASTER_PORT = 29500
DEFAULT_ROOT_COMM_PORT = 29600
SCRATCH_DIR = "/scratch"

# Batch refuses environment names starting with AWS_BATCH; ECS allows letters, digits and '_'.

# The launcher is a node program (node_programs/files/training/launcher.sh, shellcheck-clean and run
# under bash in the tests). The job definition mounts the host's bundle read-only at INSTALL_DIR and
# runs the file from there (docs/neuronlink.md says why a mount and not the text in the command).
LAUNCHER_PROGRAM = "training/launcher.sh"
LAUNCHER_PATH = f"{INSTALL_DIR}/{LAUNCHER_PROGRAM}"
LAUNCHER_SCRIPT = program(LAUNCHER_PROGRAM).read_text(encoding="utf-8")
"""The launcher's text (what ``LAUNCHER_PATH`` holds on every node)."""
# Where each host writes its own DescribeInstanceTopology answer at boot (training/node-setup.sh); the
# job definition mounts the directory read-only at the same path in the container.
TOPOLOGY_DIR = "/var/lib/cdk-neuron"
TOPOLOGY_FILE = f"{TOPOLOGY_DIR}/topology.json"
# The rank-order exchange listens on the main node (TCP, within the task security group), below
# Linux's ephemeral range like the two rendezvous ports.
DEFAULT_RANK_ORDER_PORT = 29700
TOPOLOGY_ACTION = "ec2:DescribeInstanceTopology"
# The peer watch (training/peer_watch.py) listens on the main node, below the ephemeral range too.
DEFAULT_PEER_PORT = 29800


COMMAND_BASE64_FLAG = "--command-base64"


def launcher_command() -> list[str]:
    """The container command: bash runs the mounted launcher with the base64-encoded training command.

    Every word is free of shell syntax, so an entrypoint that re-parses its arguments (``eval "$@"``)
    runs exactly what an entrypoint-less image runs.
    """
    return ["/bin/bash", LAUNCHER_PATH, COMMAND_BASE64_FLAG, f"Ref::{TRAINING_COMMAND_PARAMETER}"]


def encode_training_command(command: str) -> str:
    """The ``training_command`` parameter value for ``command``: its UTF-8 bytes, base64-encoded."""
    return base64.b64encode(command.encode("utf-8")).decode("ascii")


def decode_training_command(value: str) -> str | None:
    """The command a ``training_command`` parameter value carries; None when it is not base64 of UTF-8."""
    try:
        return base64.b64decode(value.encode("ascii"), validate=True).decode("utf-8")
    except (UnicodeError, binascii.Error, ValueError):
        return None


def rank_order_environment(instance: NeuronInstance, plan: TrainingPlan) -> dict[str, str]:
    """What the launcher needs to order ranks by topology (``CDK_NEURON_*``), for an EFA instance.

    ``CDK_NEURON_DOMAIN_GROUP_INSTANCES``: instances one TP x EP group spans (the launcher refuses
    nodes that cannot hold such groups inside one domain); ``CDK_NEURON_ULTRASERVER``: 1 when the
    type is an UltraServer server, so domains are Capacity Blocks.
    """
    if not instance.supports_efa:
        return {}
    return {
        "CDK_NEURON_RANK_ORDER": "topology",
        "CDK_NEURON_TOPOLOGY_FILE": TOPOLOGY_FILE,
        "CDK_NEURON_DOMAIN_GROUP_INSTANCES": str(plan.domain_group_instances),
        "CDK_NEURON_ULTRASERVER": "1" if instance.is_ultraserver else "0",
    }


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
    collectives (EFA-SETUP). ``CDK_NEURON_PEER_*`` and ``CDK_NEURON_STOP_GRACE`` configure the
    launcher's peer watch (``training/peer_watch.py``: a lost node ends the attempt with exit 75,
    which the retry rules retry), from :mod:`cdk_neuron.timeouts`. ``FI_EFA_FORK_SAFE`` is left out: the Neuron docs need it only on AL2
    kernels, and the nodes run AL2023. The plan's degrees are exported so scripts do not hard-code them.
    """
    env = {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "NEURON_TP_DEGREE": str(plan.tensor_parallel),
        "NEURON_PP_DEGREE": str(plan.pipeline_parallel),
        "NPROC_PER_NODE": str(plan.ranks_per_node),
        # The launcher's peer watch: where it listens and its timings (cdk_neuron.timeouts).
        "CDK_NEURON_PEER_PORT": str(DEFAULT_PEER_PORT),
        **timeouts.peer_settings(),
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
    env.update(rank_order_environment(instance, plan))
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
            # The job runs with an init (initProcessEnabled, Docker's tini) above the DLC entrypoint,
            # `bash -m start_with_right_hostname.sh`, which runs the launcher as its child through
            # `eval` and forwards no signal. tini signals only its direct child unless told to signal
            # the child's process group ("-g", or this variable: krallin/tini README); without a tty
            # `bash -m` has no job control, so that group holds the launcher, the peer watch and
            # torchrun, and Batch's SIGTERM (job timeout, termination, an infrastructure update) reaches
            # them within ECS's stop timeout instead of the kernel's SIGKILL (tests/test_image_contracts.py).
            "TINI_KILL_PROCESS_GROUP": "1",
            "CCOM_SOCKET_IFNAME": "eth0",
            "MASTER_PORT": str(DEFAULT_MASTER_PORT),
            "ROOT_COMM_PORT": str(DEFAULT_ROOT_COMM_PORT),
        }
    )
    if instance.supports_efa:
        env["RANK_ORDER_PORT"] = str(DEFAULT_RANK_ORDER_PORT)
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
    "COMMAND_BASE64_FLAG",
    "DEFAULT_MASTER_PORT",
    "DEFAULT_PEER_PORT",
    "DEFAULT_RANK_ORDER_PORT",
    "DEFAULT_ROOT_COMM_PORT",
    "DEFAULT_TRAINING_COMMAND",
    "LAUNCHER_NAME",
    "LAUNCHER_PATH",
    "LAUNCHER_PROGRAM",
    "LAUNCHER_SCRIPT",
    "SCRATCH_DIR",
    "TOPOLOGY_ACTION",
    "TOPOLOGY_DIR",
    "TOPOLOGY_FILE",
    "TRAINING_COMMAND_PARAMETER",
    "decode_training_command",
    "encode_training_command",
    "job_environment",
    "launcher_command",
    "node_environment",
    "rank_order_environment",
    "training_command",
]
