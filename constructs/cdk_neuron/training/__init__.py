"""Trainium training clusters: AWS Batch multi-node parallel or a self-managed node group, with EFA.

- :class:`TrainingCluster`: the construct.
- :class:`Engine`: ``Engine.batch()`` (default) or ``Engine.auto_scaling_group()``.
- :class:`Capacity`: on-demand, a capacity reservation (by id or resource group) or a Capacity Block.
- :mod:`cdk_neuron.training.launcher`: the multi-node launcher script every Batch node runs.
"""

from __future__ import annotations

from cdk_neuron.catalog import EfaLayout
from cdk_neuron.training.capacity import Capacity
from cdk_neuron.training.cluster import OFFERING_WARNING_ID, TrainingCluster
from cdk_neuron.training.engine import Engine
from cdk_neuron.training.launcher import DEFAULT_TRAINING_COMMAND, LAUNCHER_SCRIPT, TRAINING_COMMAND_PARAMETER

__all__ = [
    "DEFAULT_TRAINING_COMMAND",
    "LAUNCHER_SCRIPT",
    "OFFERING_WARNING_ID",
    "TRAINING_COMMAND_PARAMETER",
    "Capacity",
    "EfaLayout",
    "Engine",
    "TrainingCluster",
]
