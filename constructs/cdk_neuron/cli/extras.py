"""The CLI's optional dependencies: ``rich`` (table output) and ``shtab`` (completion scripts).

They are the ``cli`` extra, so an app that only uses the constructs does not install them.
``--output json`` and ``--output text`` need neither.

cdk-neuron is not on PyPI yet (README, "Install"), so the fix never names ``cdk-neuron[cli]``: pip
would look that name up on PyPI, and fail, or install whatever someone registered under it. It
names the extra's own packages, read from the installed distribution's metadata (one source:
pyproject.toml), which install the same way beside a wheel or a checkout.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shlex
from types import ModuleType

EXTRA = "cli"
# pyproject.toml's [project.optional-dependencies] cli, for when no metadata is installed (a source
# tree on sys.path); tests/test_cli_framework.py checks that the two agree.
_FALLBACK = ("rich>=13", "shtab>=1.7")


def extra_requirements(extra: str = EXTRA) -> tuple[str, ...]:
    """The requirements of cdk-neuron's ``extra``, e.g. ``("rich>=13", "shtab>=1.7")``."""
    try:
        requires = importlib.metadata.requires("cdk-neuron") or []
    except importlib.metadata.PackageNotFoundError:
        return _FALLBACK if extra == EXTRA else ()
    found = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if marker.replace(" ", "").replace("'", '"') == f'extra=="{extra}"':
            found.append(requirement.strip())
    return tuple(found)


def install_command() -> str:
    """``pip install 'rich>=13' 'shtab>=1.7'``: the cli extra's packages, quoted for a shell."""
    return "pip install " + " ".join(shlex.quote(r) for r in extra_requirements())


class MissingExtra(Exception):
    """An optional dependency is not installed: one line naming it, what needs it and the fix."""


def require(module: str, needed_by: str) -> ModuleType:
    """``module``, imported; :class:`MissingExtra` (the CLI prints it and exits 2) when it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"{needed_by} needs the Python package {module}, which is not installed: {install_command()}"
            + (" (or use --output json or --output text)" if module == "rich" else "")
        ) from None


__all__ = ["EXTRA", "MissingExtra", "extra_requirements", "install_command", "require"]
