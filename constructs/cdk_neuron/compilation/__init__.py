"""Compiling for Inferentia2: :class:`ModelCompilation` (Fargate), :class:`BatchModelCompilation` (nodes built
from a Batch training cluster's launch template, for models Fargate cannot hold), and the request one compile runs.

``ModelSource`` and ``CompileRequest`` are plain Python; only the construct imports ``aws_cdk``.
Names are loaded lazily. The workflow, from a training run to a served endpoint: docs/compile.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.compilation.base import ModelCompilationBase
    from cdk_neuron.compilation.batch import BatchModelCompilation
    from cdk_neuron.compilation.construct import ModelCompilation
    from cdk_neuron.compilation.job import CompileRequest, ModelSource

_LAZY: dict[str, str] = {
    "BatchModelCompilation": "cdk_neuron.compilation.batch",
    "ModelCompilation": "cdk_neuron.compilation.construct",
    "ModelCompilationBase": "cdk_neuron.compilation.base",
    "CompileRequest": "cdk_neuron.compilation.job",
    "ModelSource": "cdk_neuron.compilation.job",
}

__all__ = [
    "BatchModelCompilation",
    "CompileRequest",
    "ModelCompilation",
    "ModelCompilationBase",
    "ModelSource",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
