"""Run what AWS Batch, ``docker run`` and SageMaker would run, through reproductions of image entrypoints.

A :class:`Container` is a scratch directory standing in for one container: a ``PATH`` of harmless
real tools plus *recorders* (programs that append their name, arguments and environment to a log as
one JSON line), the image's entrypoint reproduction (``tests/image_entrypoints``), and the host's
node-program bundle where a job definition bind-mounts it. :meth:`Container.run` starts
``ENTRYPOINT + arguments`` with the container's environment, exactly as the platform would;
:meth:`Container.calls` reads back what reached each recorded program.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdk_neuron.node_programs import FILES_DIR, INSTALL_DIR

ENTRYPOINTS = Path(__file__).resolve().parent / "image_entrypoints"

# The entrypoint of each image contract (cdk_neuron.contracts.images), as a command the test runs.
ENTRYPOINT_COMMANDS: dict[str, tuple[str, ...]] = {
    "training-dlc": ("bash", "-m", str(ENTRYPOINTS / "neuron_training_dlc.sh")),
    "optimum-neuron-ec2": (str(ENTRYPOINTS / "optimum_neuron_vllm.sh"),),
    "optimum-neuron-sagemaker": (str(ENTRYPOINTS / "optimum_neuron_vllm.sh"),),
    "vllm-neuron-ec2": (sys.executable, str(ENTRYPOINTS / "vllm_neuron_dlc.py")),
    "tgi-ec2": (str(ENTRYPOINTS / "tgi_neuron.sh"),),
    "tgi-sagemaker": (str(ENTRYPOINTS / "tgi_sagemaker.sh"),),
    # ModelCompilation's containers: their ENTRYPOINT is replaced by the task definition (bash -c);
    # the reproductions show what the images would do with the command if it were not.
    "optimum-neuron-compile": (str(ENTRYPOINTS / "optimum_neuron_vllm.sh"),),
    "aws-cli-compile": (str(ENTRYPOINTS / "aws_cli.sh"),),
    # BatchModelCompilation's containers: AWS Batch runs each image's own ENTRYPOINT.
    "optimum-neuron-batch-compile": (str(ENTRYPOINTS / "optimum_neuron_vllm.sh"),),
    "training-dlc-compile": ("bash", "-m", str(ENTRYPOINTS / "neuron_training_dlc.sh")),
}

# Real tools an image's shell may use; none of them reaches the network or the host.
CONTAINER_TOOLS = (
    "bash", "sh", "cat", "sed", "grep", "awk", "tr", "env", "mktemp", "rm", "base64", "dirname",
    "basename", "head", "tail", "sleep", "kill", "setsid",
)  # fmt: skip

_RECORDER = """#!{python}
import json, os, sys
entry = {{"program": os.path.basename(sys.argv[0]), "argv": sys.argv[1:], "env": dict(os.environ)}}
with open(os.environ["REHEARSAL_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(entry) + "\\n")
{then}
"""


@dataclass(frozen=True)
class Call:
    """What reached one recorded program."""

    program: str
    argv: list[str]
    env: dict[str, str]


class Container:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "container"
        self.bin = self.root / "bin"
        self.log = self.root / "calls.jsonl"
        self.bin.mkdir(parents=True)
        self.log.touch()
        for tool in CONTAINER_TOOLS:
            real = shutil.which(tool)
            if real is not None:
                (self.bin / tool).symlink_to(real)
        (self.bin / "python3").symlink_to(sys.executable)

    @property
    def bundle(self) -> Path:
        """The host's node-program bundle, as the job definition mounts it at INSTALL_DIR."""
        target = self.root / INSTALL_DIR.lstrip("/")
        if not target.exists():
            shutil.copytree(FILES_DIR, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return target

    def record(self, name: str, then: str = "sys.exit(0)") -> None:
        """Replace ``name`` with a recorder; ``then`` is Python run after recording (e.g. an exec)."""
        path = self.bin / name
        if path.exists() or path.is_symlink():
            path.unlink()
        path.write_text(_RECORDER.format(python=sys.executable, then=then))
        path.chmod(0o755)

    def record_and_run_arguments(self, name: str) -> None:
        """A recorder that then runs its arguments as a command (``neuron_parallel_compile torchrun ...``)."""
        self.record(name, then="os.execvp(sys.argv[1], sys.argv[1:])")

    def mounted(self, words: Sequence[str]) -> list[str]:
        """``words`` with the bind-mounted bundle path pointing at this container's copy."""
        return [w.replace(INSTALL_DIR, str(self.bundle)) for w in words]

    def _environment(self, env: Mapping[str, str] | None) -> dict[str, str]:
        return {
            "PATH": str(self.bin),
            "HOME": str(self.root),
            "REHEARSAL_LOG": str(self.log),
            "CDK_NEURON_HOME": str(self.bundle),
            **(env or {}),
        }

    def start(
        self, contract: str, arguments: Sequence[str], env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """Like :meth:`run`, without waiting (several nodes of one job)."""
        return subprocess.Popen(
            [*ENTRYPOINT_COMMANDS[contract], *arguments],
            env=self._environment(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(self.root),
            # Its own session and process group, as the container's init gives its child: a test may
            # signal the group the way tini does, and never its own.
            start_new_session=True,
        )

    def run(
        self,
        contract: str,
        arguments: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Start ``contract``'s entrypoint with ``arguments`` (what replaces CMD) and ``env``."""
        return subprocess.run(
            [*ENTRYPOINT_COMMANDS[contract], *arguments],
            env=self._environment(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(self.root),
            check=False,
        )

    def exec(
        self, arguments: Sequence[str], env: Mapping[str, str] | None = None, *, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run ``arguments`` as the container's process without its ENTRYPOINT (what Pyxis does with
        ``--no-container-entrypoint``: the srun command itself)."""
        return subprocess.run(
            list(arguments), env=self._environment(env), capture_output=True, text=True, timeout=timeout,
            cwd=str(self.root), check=False,
        )  # fmt: skip

    def shell(self, command: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``bash -c command`` with this container's PATH (a reference run, no entrypoint)."""
        environment = {
            "PATH": str(self.bin),
            "HOME": str(self.root),
            "REHEARSAL_LOG": str(self.log),
            **(env or {}),
        }
        return subprocess.run(
            ["bash", "-c", command], env=environment, capture_output=True, text=True, timeout=60,
            cwd=str(self.root), check=False,
        )  # fmt: skip

    def calls(self, program: str | None = None) -> list[Call]:
        entries = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return [Call(**e) for e in entries if program is None or e["program"] == program]


def batch_command(command: Sequence[str], parameters: Mapping[str, str]) -> list[str]:
    """A job definition's command after Batch substitutes ``Ref::<name>`` with each parameter."""
    return [
        parameters.get(word[len("Ref::") :], word) if word.startswith("Ref::") else word for word in command
    ]


def docker_env_file(text: str) -> dict[str, str]:
    """A ``docker --env-file`` file: ``NAME=value`` lines taken literally (comments and blanks skipped)."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


def docker_run(argv: Sequence[str], read: Any) -> tuple[str, dict[str, str], list[str]]:
    """(image, environment, arguments) of a ``docker run`` command line whose options use ``--opt=value``.

    ``read(path)`` returns the text of an ``--env-file`` (the test maps node paths to its sandbox).
    """
    words = list(argv)
    assert words[0] == "run", words
    env: dict[str, str] = {}
    position = 1
    while words[position].startswith("-"):
        option, _, value = words[position].partition("=")
        if option == "--env":
            name, _, setting = value.partition("=")
            env[name] = setting
        elif option == "--env-file":
            env.update(docker_env_file(read(value)))
        position += 1
    return words[position], env, words[position + 1 :]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def batch_pattern_matches(value: str, pattern: str) -> bool:
    """How Batch matches an EvaluateOnExit pattern: the whole value exactly, or, when the pattern ends in
    ``*`` (its only wildcard), the value's start ("EvaluateOnExit", AWS Batch API Reference). A pattern
    with any other wildcard is refused: Batch would not treat it as one."""
    body = pattern[:-1] if pattern.endswith("*") else pattern
    assert not set("*?[") & set(body), f"{pattern!r}: Batch's patterns allow only a trailing '*'"
    return value.startswith(body) if pattern.endswith("*") else value == body


def retry_action(
    strategy: Mapping[str, Any], *, exit_code: int | None, status_reason: str = "", reason: str = ""
) -> str:
    """What Batch does with a failed attempt under ``strategy`` (a job definition's RetryStrategy).

    The first ``EvaluateOnExit`` entry whose every given pattern matches decides: ``OnExitCode`` the
    container's exit code, ``OnStatusReason`` the attempt's status reason (e.g. "Host EC2 ...
    terminated."), ``OnReason`` the container's own reason; with none matching, Batch retries (the
    attempts permitting; AWS Batch User Guide, "Automated job retries").
    """
    for rule in strategy.get("EvaluateOnExit", []):
        checks = []
        if "OnExitCode" in rule:
            checks.append(exit_code is not None and batch_pattern_matches(str(exit_code), rule["OnExitCode"]))
        if "OnStatusReason" in rule:
            checks.append(batch_pattern_matches(status_reason, rule["OnStatusReason"]))
        if "OnReason" in rule:
            checks.append(batch_pattern_matches(reason, rule["OnReason"]))
        if checks and all(checks):
            return str(rule["Action"]).upper()
    return "RETRY"
