"""Run node programs under bash in a scratch root, with every command that touches the world stubbed.

A :class:`Sandbox` copies the node-program bundle to ``<root>/opt/cdk-neuron`` and runs a program
with ``CDK_NEURON_ROOT=<root>`` (every path the programs write is under it) and a ``PATH`` holding
only harmless real tools plus stubs. Each stub appends ``name arg...`` to a call log and runs a bash
body the test gives it (default: succeed silently), so a test can assert what was called, in what
order, and that a failed step stops the program.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from cdk_neuron.node_programs import FILES_DIR, render_settings

# Real tools the programs may use freely: none reaches the network or changes the machine outside
# the sandbox (every path the programs write is under CDK_NEURON_ROOT).
REAL_TOOLS = (
    "bash", "cat", "sed", "grep", "awk", "mkdir", "install", "cp", "mv", "rm", "sha256sum", "cut", "tar",
    "gzip", "python3", "mktemp", "basename", "dirname", "tr", "sort", "head", "tail", "wc", "date", "env",
    "chmod", "find", "ls", "touch", "ln", "printf", "sh", "seq", "xargs", "readlink", "timeout",
)  # fmt: skip
# Commands that reach AWS, the network, devices or the host's services: always stubs.
STUBBED = (
    "aws", "docker", "curl", "systemctl", "dnf", "mount", "mountpoint", "mkfs.xfs", "mkfs.ext4", "mdadm",
    "modprobe", "poweroff", "blkid", "lsblk", "findmnt", "nginx", "sleep", "wget", "apt-get", "snap", "pip",
    "neuron-ls", "mount.efs", "df", "unpigz",
)  # fmt: skip


# mkfs.xfs as the real one treats its label: "XFS filesystem labels can be at most 12 characters long;
# if label is longer than 12 characters, mkfs.xfs will not proceed with creating the filesystem"
# (xfsprogs man/man8/mkfs.xfs.8.in, -L; kernel.org xfsprogs-dev @93fed768).
MKFS_XFS = """label=""
while [ $# -gt 0 ]; do
  case "$1" in -L) label=$2; shift 2 ;; *) shift ;; esac
done
if [ "${#label}" -gt 12 ]; then
  echo "mkfs.xfs: label ${label} is too long (at most 12 characters)" >&2
  exit 1
fi"""


NEURON = {"NEURON_DEVICES": 1, "NEURON_DEVICE_WAIT": 0}
"""The Neuron settings of a one-chip node that does not wait for its devices (write /dev/neuron0)."""


class Sandbox:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "calls.log"
        self.home = self.root / "opt" / "cdk-neuron"
        self.etc = self.root / "etc" / "cdk-neuron"
        shutil.copytree(FILES_DIR, self.home, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        self.etc.mkdir(parents=True)
        self.bin.mkdir()
        for tool in REAL_TOOLS:
            real = shutil.which(tool)
            assert real is not None, f"{tool} is not installed"
            (self.bin / tool).symlink_to(real)
        for name in STUBBED:
            self.stub(name)
        self.stub("mkfs.xfs", MKFS_XFS)
        self.log.touch()

    def stub(self, name: str, body: str = "exit 0") -> None:
        """Replace ``name`` with a script that logs its call, then runs ``body`` (bash)."""
        script = self.bin / name
        if script.is_symlink() or script.exists():
            script.unlink()
        script.write_text(f'#!/bin/bash\nprintf "%s\\n" "{name} $*" >> {self.log}\n{body}\n')
        script.chmod(0o755)

    def settings(self, name: str, values: Mapping[str, str | int | None]) -> None:
        (self.etc / name).write_text(render_settings(values))

    def run(
        self, program: str, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.run_script(str(self.home / program), *args, env=env)

    def run_script(
        self, path: str, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": str(self.bin),
            "HOME": str(self.root),
            "CDK_NEURON_ROOT": str(self.root),
            **(env or {}),
        }
        return subprocess.run(
            [str(self.bin / "bash"), path, *args],
            env=environment,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=str(self.root),
        )

    def calls(self, prefix: str = "") -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(prefix)]

    def file(self, path: str) -> Path:
        """A path on the node (``/etc/fstab``) inside the sandbox."""
        return self.root / path.lstrip("/")

    def write(self, path: str, content: str) -> Path:
        target = self.file(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return target


def index_of(calls: list[str], prefix: str) -> int:
    """Position of the first call starting with ``prefix`` (fails the test when there is none)."""
    for position, call in enumerate(calls):
        if call.startswith(prefix):
            return position
    raise AssertionError(f"no call starting with {prefix!r} in {calls}")
