"""Trainium training clusters: AWS Batch multi-node parallel or a self-managed node group, with EFA.

- :class:`TrainingCluster`: the construct.
- :class:`Engine`: ``Engine.batch()`` (default) or ``Engine.auto_scaling_group()``.
- :class:`Capacity`: on-demand, a capacity reservation (by id or resource group) or a Capacity Block.
- :mod:`cdk_neuron.training.launcher`: the multi-node launcher script every Batch node runs.

Names are loaded lazily, so the pure parts (``launcher``, ``capacity``) can be imported, e.g. by the
``cdk-neuron`` CLI, without starting the jsii runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'cdk_neuron.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
