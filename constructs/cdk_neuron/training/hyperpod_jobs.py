"""How a training job runs on a HyperPod Slurm cluster: the nodes' environment and the sbatch script.

Plain Python (no ``aws_cdk``): the construct writes the environment into the lifecycle prefix, and
the construct and the CLI both write the same sbatch script.

The plan maps to Slurm this way:

- **Nodes:** ``#SBATCH --nodes`` is the plan's node count; ``--exclusive`` gives the job whole nodes
  (every NeuronCore and EFA interface of each; the instance types HyperPod accepts for Trainium all
  have EFA).
- **Tasks:** one Slurm task per node (``--ntasks-per-node=1``). Each task runs the launcher the other
  engines run (``training/launcher.sh``), and the launcher's ``torchrun`` starts the plan's
  ``NPROC_PER_NODE`` ranks on its node, so ``WORLD_SIZE``, the DP degree and ``TORCHRUN_ARGS`` are
  derived in one place for every engine.
- **Topology order:** each task orders the step's nodes by Slurm's switches
  (``hyperpod/slurm_order.py``, the launcher's own ordering fed from ``scontrol show topology``)
  and hands the launcher its rank. The EC2 topology the Batch launcher reads
  (``ec2:DescribeInstanceTopology``) is not available on HyperPod: the instances are not in the
  cluster owner's account, and ``DescribeClusterNode`` carries no network nodes (botocore 1.44
  ``ClusterNodeDetails``). HyperPod configures the Slurm topology itself ("Using topology-aware
  scheduling in Amazon SageMaker HyperPod", Amazon SageMaker AI Developer Guide,
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-topology.html, read
  2026-12-02), and ``Orchestrator.Slurm.SlurmConfigStrategy: Managed`` leaves slurm.conf to it, so the
  cluster writes no topology.conf of its own: one written beside a HyperPod-managed configuration
  would be overwritten, or, with ``topology/tree`` on and no file, refuse every sbatch
  ("Requested topology configuration is not available", aws-samples/sample-physical-ai-scaffolding-kit
  PR #14, 2026-04-30).
- **EFA:** ``FI_PROVIDER=efa`` and ``FI_EFA_USE_DEVICE_RDMA=1`` in the nodes' profile, as on the
  other engines; HyperPod installs the EFA software and checks every interface before a node joins
  ("ClusterLifeCycleConfig", Amazon SageMaker API Reference,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html).
- **Resilience:** ``srun --auto-resume=1``: when a step fails on a node HyperPod finds faulty, it
  replaces the node and re-runs the same step ("Automatic node recovery and auto-resume",
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-auto-resume.html,
  read 2026-12-02); the order, rank 0 and the rendezvous are computed again inside the re-run step.
"""

from __future__ import annotations

import re
import shlex

from cdk_neuron import validation
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import INSTALL_DIR
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.training import hyperpod_containers
from cdk_neuron.training.launcher import COMMAND_BASE64_FLAG, encode_training_command, node_environment

STEP_PROGRAM = "hyperpod/slurm-step.sh"
STEP_PATH = f"{INSTALL_DIR}/{STEP_PROGRAM}"
PROFILE_PATH = "/etc/profile.d/cdk-neuron-training.sh"
# The bundle files the lifecycle script installs under INSTALL_DIR on every node: the step, its
# ordering, and the shared launcher with the two programs it runs.
NODE_PROGRAMS: tuple[str, ...] = (
    STEP_PROGRAM,
    "hyperpod/slurm_order.py",
    "training/launcher.sh",
    "training/rank_order.py",
    "training/peer_watch.py",
)
RANK_ORDER = "slurm-topology"
"""``CDK_NEURON_RANK_ORDER`` on HyperPod: the step orders by Slurm's topology, not EC2's."""
# The EC2-topology settings of the Batch launcher that do not apply (no DescribeInstanceTopology answer
# exists on a HyperPod node), and /scratch, which HyperPod does not create.
_NOT_ON_HYPERPOD = ("CDK_NEURON_TOPOLOGY_FILE", "SCRATCH_DIR")
JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")


def hyperpod_environment(
    instance: NeuronInstance,
    plan: TrainingPlan,
    *,
    compile_cache_url: str | None,
    checkpoint_dir: str | None,
) -> dict[str, str]:
    """The training environment of every HyperPod node (``/etc/cdk-neuron/training-profile.env``):
    the engines' shared :func:`~cdk_neuron.training.launcher.node_environment`, ordered by Slurm."""
    env = node_environment(instance, plan, compile_cache_url=compile_cache_url, checkpoint_dir=checkpoint_dir)
    for name in _NOT_ON_HYPERPOD:
        env.pop(name, None)
    env["CDK_NEURON_RANK_ORDER"] = RANK_ORDER
    env["CDK_NEURON_DOMAIN_GROUP_INSTANCES"] = str(plan.domain_group_instances)
    env["CDK_NEURON_ULTRASERVER"] = "1" if instance.is_ultraserver else "0"
    return env


def step_command(command: str) -> list[str]:
    """What ``srun`` runs on each node: the step program with the command base64-encoded, so the
    command reaches the launcher as one word whatever it contains."""
    return ["/bin/bash", STEP_PATH, COMMAND_BASE64_FLAG, encode_training_command(command)]


def sbatch_script(*, nodes: int, partition: str, command: str, job_name: str = "train") -> str:
    """The sbatch script that runs ``command`` once per node over ``nodes`` nodes of ``partition``,
    each node with the plan's ranks, in Slurm's topology order, with HyperPod's auto-resume
    (``command`` must resume from its latest checkpoint: a re-run step runs it again).

    The command sees the launcher's variables (``$TORCHRUN_ARGS``, ``$NODE_RANK``, ``$MASTER_ADDR``,
    ``$WORLD_SIZE``, ``$NEURON_DP_DEGREE``) and the cluster's profile (``$CHECKPOINT_DIR``,
    ``$NEURON_COMPILE_CACHE_URL``), e.g. ``torchrun $TORCHRUN_ARGS train.py``.
    """
    found = validation.whole_number("nodes", nodes, minimum=1)
    validation.matching(
        "partition", partition, JOB_NAME, fix="letters, digits and single hyphens, e.g. 'train'"
    )
    validation.matching("job_name", job_name, JOB_NAME, fix="letters, digits and hyphens, e.g. 'train'")
    if not isinstance(command, str) or not command.strip():
        raise NeuronConfigError(
            "command", command, "give the command each node runs, e.g. 'torchrun $TORCHRUN_ARGS train.py'"
        )
    image, mounts, names, topology = (
        hyperpod_containers.IMAGE_VARIABLE,
        hyperpod_containers.MOUNTS_VARIABLE,
        hyperpod_containers.CONTAINER_ENV_VARIABLE,
        hyperpod_containers.TOPOLOGY_VARIABLE,
    )
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --partition={partition}",
        f"#SBATCH --nodes={found}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
        "set -euo pipefail",
        # The cluster's training environment; srun passes it on to every task (--export=ALL by default).
        f". {PROFILE_PATH}",
        # A cluster with a job image runs the step in it (Pyxis, without the image's ENTRYPOINT); the
        # image has no scontrol, so the batch step hands it Slurm's topology. Without one: the hosts.
        "container=()",
        f'if [ -n "${{{image}:-}}" ]; then',
        '    if slurm_topology="$(scontrol show topology 2>/dev/null)"; then',
        f'        {topology}="$(printf %s "${{slurm_topology}}" | base64 -w 0)"',
        "    else",
        f"        {topology}=",
        "    fi",
        f"    export {topology}",
        f'    container=(--container-image="${{{image}}}" --container-mounts="${{{mounts}}}"',
        f'        --container-env="${{{names}}}" --no-container-entrypoint)',
        "fi",
        'srun --auto-resume=1 "${container[@]}" ' + shlex.join(step_command(command)),
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "NODE_PROGRAMS",
    "PROFILE_PATH",
    "RANK_ORDER",
    "STEP_PATH",
    "STEP_PROGRAM",
    "hyperpod_environment",
    "sbatch_script",
    "step_command",
]
