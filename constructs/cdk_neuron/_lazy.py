"""Lazy attribute loading for packages (PEP 562).

The package namespaces expose construct classes whose modules import ``aws_cdk`` (seconds of jsii
start-up). Loading them on first attribute access keeps ``import cdk_neuron.catalog``, the planner
and the CLI free of jsii.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package``.

    ``exports`` maps a public name to the module defining it; a name equal to that module's last
    component (``"catalog": "cdk_neuron.catalog"``) is the module itself. A loaded value is cached in
    the package namespace so later lookups skip this hook.
    """

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
