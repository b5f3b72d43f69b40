"""Trainium training clusters: AWS Batch multi-node parallel or a self-managed node group, with EFA.

- :class:`BatchTrainingCluster`: AWS Batch multi-node parallel jobs (a compute environment that
  scales from zero, a job queue, job definitions); ``from_batch_training_cluster_attributes``
  imports one built elsewhere as an :class:`IBatchTrainingCluster`.
- :class:`AutoScalingTrainingCluster`: a node group for Ray, Slurm or your own launcher.
- :class:`HyperPodTrainingCluster`: a persistent SageMaker HyperPod Slurm cluster that replaces
  failed nodes itself.
- :class:`TrainingClusterBase`: what both share (nodes, EFA, launch template, metrics), with
  :class:`NodeOptions`, the node props both take;
  :class:`ITrainingCluster` / :class:`IBatchTrainingCluster`: the interfaces.
- :class:`Capacity`: on-demand, a capacity reservation (by id or resource group) or a Capacity Block.
- :class:`EfaInstaller`: the pinned EFA software release the nodes install.
- :mod:`cdk_neuron.training.launcher`: the multi-node launcher script every Batch node runs.

Names are loaded lazily, so the pure parts (``launcher``, ``capacity``) can be imported, e.g. by the
``cdk-neuron`` CLI, without starting the jsii runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.catalog import EfaLayout
    from cdk_neuron.training.auto_scaling_cluster import AutoScalingTrainingCluster
    from cdk_neuron.training.batch_cluster import BatchTrainingCluster
    from cdk_neuron.training.capacity import Capacity
    from cdk_neuron.training.cluster import (
        OFFERING_WARNING_ID,
        IBatchTrainingCluster,
        IHyperPodTrainingCluster,
        ITrainingCluster,
        NodeOptions,
        TrainingClusterBase,
    )
    from cdk_neuron.training.efa_installer import EfaInstaller
    from cdk_neuron.training.hyperpod_cluster import HyperPodTrainingCluster
    from cdk_neuron.training.launcher import (
        DEFAULT_TRAINING_COMMAND,
        LAUNCHER_SCRIPT,
        TRAINING_COMMAND_PARAMETER,
        encode_training_command,
    )
    from cdk_neuron.training.security import DEFAULT_SECURITY_GROUP_WARNING_ID

_LAZY: dict[str, str] = {
    "DEFAULT_TRAINING_COMMAND": "cdk_neuron.training.launcher",
    "LAUNCHER_SCRIPT": "cdk_neuron.training.launcher",
    "TRAINING_COMMAND_PARAMETER": "cdk_neuron.training.launcher",
    "encode_training_command": "cdk_neuron.training.launcher",
    "OFFERING_WARNING_ID": "cdk_neuron.training.cluster",
    "DEFAULT_SECURITY_GROUP_WARNING_ID": "cdk_neuron.training.security",
    "ITrainingCluster": "cdk_neuron.training.cluster",
    "IBatchTrainingCluster": "cdk_neuron.training.cluster",
    "IHyperPodTrainingCluster": "cdk_neuron.training.cluster",
    "TrainingClusterBase": "cdk_neuron.training.cluster",
    "NodeOptions": "cdk_neuron.training.cluster",
    "BatchTrainingCluster": "cdk_neuron.training.batch_cluster",
    "AutoScalingTrainingCluster": "cdk_neuron.training.auto_scaling_cluster",
    "HyperPodTrainingCluster": "cdk_neuron.training.hyperpod_cluster",
    "Capacity": "cdk_neuron.training.capacity",
    "EfaInstaller": "cdk_neuron.training.efa_installer",
    "EfaLayout": "cdk_neuron.catalog",
}

__all__ = [
    "DEFAULT_SECURITY_GROUP_WARNING_ID",
    "DEFAULT_TRAINING_COMMAND",
    "LAUNCHER_SCRIPT",
    "OFFERING_WARNING_ID",
    "TRAINING_COMMAND_PARAMETER",
    "AutoScalingTrainingCluster",
    "BatchTrainingCluster",
    "Capacity",
    "EfaInstaller",
    "EfaLayout",
    "HyperPodTrainingCluster",
    "IBatchTrainingCluster",
    "IHyperPodTrainingCluster",
    "ITrainingCluster",
    "NodeOptions",
    "TrainingClusterBase",
    "encode_training_command",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
