"""The programs that run on cdk-neuron's EC2 nodes, and the user data that starts them.

Plain Python (no ``aws_cdk``). Every program is a real file under ``files/`` (shell, systemd units,
the Python metrics publisher, nginx configuration), shipped in the wheel as package data, checked
by shellcheck in ``make lint`` and run under bash with ``aws``/``docker``/``curl`` stubbed in the
tests. :mod:`cdk_neuron.node_programs.bundle` publishes the whole directory as one CDK file asset.

User data carries only settings and :file:`files/bootstrap.sh` (EC2 caps user data at 16 KB, raw,
before base64). :func:`render_boot_script` renders it: each settings file is written with a quoted
here-document (the shell expands nothing in it), then the bootstrap fetches the bundle and runs one
program from it. Settings are data, never code: values are shell-quoted on one line each.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cdk_neuron.errors import NeuronConfigError

FILES_DIR = Path(__file__).resolve().parent / "files"
"""The bundle's source directory: exactly what nodes unpack into :data:`INSTALL_DIR`."""

INSTALL_DIR = "/opt/cdk-neuron"
SETTINGS_DIR = "/etc/cdk-neuron"
BUNDLE_SETTINGS = f"{SETTINGS_DIR}/bundle.env"
# Files the asset leaves out: bytecode a test run may have written next to the Python publisher.
BUNDLE_EXCLUDE = ("__pycache__", "*.pyc")

USER_DATA_LIMIT_BYTES = 16 * 1024
"""EC2: "User data is limited to 16 KB, in raw form, before it is base64-encoded" (Amazon EC2 User
Guide, "Run commands when you launch an EC2 instance with user data input", read 2026-12-01)."""

_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_HEREDOC = "CDK_NEURON_EOF"


def program(path: str) -> Path:
    """The file of one node program, e.g. ``program("serving/boot.sh")``; refuses unknown paths."""
    file = (FILES_DIR / path).resolve()
    if FILES_DIR not in file.parents or not file.is_file():
        raise NeuronConfigError("program", path, f"no such node program under {FILES_DIR}")
    return file


def programs(suffix: str = ".sh") -> tuple[Path, ...]:
    """Every node program with ``suffix``, sorted (e.g. for shellcheck and the reach analysis)."""
    return tuple(sorted(p for p in FILES_DIR.rglob(f"*{suffix}") if "__pycache__" not in p.parts))


SettingValue = str | int | None


def render_settings(values: Mapping[str, SettingValue]) -> str:
    """``NAME='value'`` lines a program sources (``None`` is the empty string).

    Names are upper-case shell identifiers; values are one line each (a newline would end the
    setting early), quoted with :func:`shlex.quote` so the shell reads them literally.
    """
    lines = []
    for name, value in values.items():
        if not _NAME.match(name):
            raise NeuronConfigError("setting", name, "use upper-case letters, digits and '_' (a shell name)")
        text = "" if value is None else str(value)
        if "\n" in text or "\r" in text:
            raise NeuronConfigError(f"setting {name}", text, "settings are single-line values")
        lines.append(f"{name}={shlex.quote(text)}")
    return "\n".join(lines) + "\n"


def render_docker_env(values: Sequence[tuple[str, str]]) -> str:
    """A ``docker --env-file`` file: ``KEY=value`` taken literally, one per line, no quoting."""
    lines = []
    for key, value in values:
        if not key or "=" in key or any(c.isspace() for c in key):
            raise NeuronConfigError("environment", key, "variable names have no '=' or spaces")
        if "\n" in value or "\r" in value:
            raise NeuronConfigError(f"environment[{key!r}]", value, "values must be single-line")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def render_lines(values: Sequence[str], *, field: str) -> str:
    """One value per line (container arguments read with ``mapfile``): no value may hold a newline."""
    for value in values:
        if "\n" in value or "\r" in value:
            raise NeuronConfigError(field, value, "each value must be a single line")
    return "".join(f"{value}\n" for value in values)


@dataclass(frozen=True)
class BundleLocation:
    """Where the node-program bundle lies: the stack's region and the asset's bucket and key."""

    region: str
    bucket: str
    key: str


def render_boot_script(
    *,
    bundle: BundleLocation,
    settings: Mapping[str, str],
    program_path: str,
    purpose: str,
    shebang: bool = True,
) -> str:
    """A complete bash user-data script: write ``settings``, then bootstrap ``program_path``.

    ``shebang=False`` leaves out the ``#!/bin/bash`` line, for user data that adds its own.

    ``settings`` maps a file name under ``/etc/cdk-neuron`` to its content (see
    :func:`render_settings`). Values may be CDK tokens; they resolve inside the final string. If the
    bootstrap or the program fails, the node gives up and powers off to be replaced
    (``cdk_neuron_give_up`` in :file:`files/bootstrap.sh`).
    """
    program(program_path)  # refuses a path that is not in the bundle
    files = {
        "bundle.env": render_settings(
            {"REGION": bundle.region, "BUNDLE_BUCKET": bundle.bucket, "BUNDLE_KEY": bundle.key}
        ),
        **settings,
    }
    parts = [
        *(["#!/bin/bash"] if shebang else []),
        f"# cdk-neuron {purpose}: settings, then the bootstrap (cdk_neuron/node_programs/files/bootstrap.sh).",
        "set -euo pipefail",
        # CDK_NEURON_ROOT is empty on a node; the tests run this script under a scratch directory.
        f'install -d -m 0755 "${{CDK_NEURON_ROOT:-}}{SETTINGS_DIR}"',
    ]
    for name, content in files.items():
        if "/" in name or not name:
            raise NeuronConfigError("settings file", name, "give a plain file name under /etc/cdk-neuron")
        if _HEREDOC in content:
            raise NeuronConfigError(
                f"settings file {name}", _HEREDOC, "content may not contain the here-document marker"
            )
        parts.append(
            f"cat > \"${{CDK_NEURON_ROOT:-}}{SETTINGS_DIR}/{name}\" <<'{_HEREDOC}'\n{content.rstrip(chr(10))}\n{_HEREDOC}"
        )
    parts.append(program("bootstrap.sh").read_text(encoding="utf-8").rstrip("\n"))
    parts.append(
        f"cdk_neuron_bootstrap {shlex.quote(program_path)} || "
        f"cdk_neuron_give_up {shlex.quote(purpose + ' failed')}"
    )
    return "\n".join(parts) + "\n"


__all__ = [
    "BUNDLE_EXCLUDE",
    "BUNDLE_SETTINGS",
    "FILES_DIR",
    "INSTALL_DIR",
    "SETTINGS_DIR",
    "USER_DATA_LIMIT_BYTES",
    "BundleLocation",
    "program",
    "programs",
    "render_boot_script",
    "render_docker_env",
    "render_lines",
    "render_settings",
]
