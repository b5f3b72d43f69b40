"""Trainium training clusters: AWS Batch multi-node parallel or a self-managed node group, with EFA.

- :class:`TrainingCluster`: the construct.
- :class:`Engine`: ``Engine.batch()`` (default) or ``Engine.auto_scaling_group()``.
- :class:`Capacity`: on-demand, a capacity reservation (by id or resource group) or a Capacity Block.
- :mod:`cdk_neuron.training.launcher`: the multi-node launcher script every Batch node runs.

Names are loaded lazily, so the pure parts (``launcher``, ``capacity``) can be imported, e.g. by the
``cdk-neuron`` CLI, without starting the jsii runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.catalog import EfaLayout
    from cdk_neuron.training.capacity import Capacity
    from cdk_neuron.training.cluster import OFFERING_WARNING_ID, TrainingCluster
    from cdk_neuron.training.engine import Engine
    from cdk_neuron.training.launcher import (
        DEFAULT_TRAINING_COMMAND,
        LAUNCHER_SCRIPT,
        TRAINING_COMMAND_PARAMETER,
    )

_LAZY: dict[str, str] = {
    "DEFAULT_TRAINING_COMMAND": "cdk_neuron.training.launcher",
    "LAUNCHER_SCRIPT": "cdk_neuron.training.launcher",
    "TRAINING_COMMAND_PARAMETER": "cdk_neuron.training.launcher",
    "OFFERING_WARNING_ID": "cdk_neuron.training.cluster",
    "TrainingCluster": "cdk_neuron.training.cluster",
    "Capacity": "cdk_neuron.training.capacity",
    "Engine": "cdk_neuron.training.engine",
    "EfaLayout": "cdk_neuron.catalog",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
