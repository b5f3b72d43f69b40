"""The CLI's optional dependencies: ``rich`` (table output) and ``shtab`` (completion scripts).

They are the ``cli`` extra (``pip install 'cdk-neuron[cli]'``), so an app that only uses the
constructs does not install them. ``--output json`` and ``--output text`` need neither.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRA = "cli"
INSTALL = f"pip install 'cdk-neuron[{EXTRA}]'"


class MissingExtra(Exception):
    """An optional dependency is not installed: one line naming it, what needs it and the fix."""


def require(module: str, needed_by: str) -> ModuleType:
    """``module``, imported; :class:`MissingExtra` (the CLI prints it and exits 2) when it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"{needed_by} needs the Python package {module}, which is not installed: {INSTALL}"
            + (" (or use --output json or --output text)" if module == "rich" else "")
        ) from None


__all__ = ["EXTRA", "INSTALL", "MissingExtra", "require"]
