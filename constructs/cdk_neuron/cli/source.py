"""Where the CLI gets its :class:`~cdk_neuron.deployment.Deployment` objects.

- ``--config CDK_JSON``: the loader the app's cdk.json names (:mod:`cdk_neuron.cli.deployments`);
- ``--app DIR``: a cloud assembly ``cdk synth`` wrote (:mod:`cdk_neuron.cli.assembly`), any app;
- ``--synth``: run ``npx cdk synth --quiet -o <temporary folder> '**'`` in the current folder
  first (the CDK CLI, ``aws-cdk``, must be installed), then read that assembly.

Without any of them: the cdk.json loader when ./cdk.json names one, else ./cdk.out when it holds
a cloud assembly, else a one-line error naming the options.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cdk_neuron.cli import assembly, deployments
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError

DEFAULT_CONFIG = "cdk.json"
DEFAULT_ASSEMBLY = "cdk.out"
SYNTH_COMMAND = ("npx", "--no-install", "cdk", "synth", "--quiet", "-o")
"""``npx cdk synth`` without downloading: the app's own (or a global) CDK CLI, or none."""

Run = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class Source:
    deployments: dict[str, Deployment]
    qualifier: str
    """The CDK bootstrap qualifier the app synthesizes with."""
    origin: str
    """What the deployments were read from, for messages."""


def _names_loader(path: Path) -> bool:
    try:
        context = json.loads(path.read_text()).get("context")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(context, dict) and deployments.LOADER_KEY in context


def from_config(path: str | Path) -> Source:
    return Source(
        deployments.load(path), deployments.bootstrap_qualifier(path), f"{path} ({deployments.LOADER_KEY})"
    )


def from_assembly(directory: str | Path, *, origin: str | None = None) -> Source:
    qualifier = assembly.bootstrap_qualifier(directory) or deployments.DEFAULT_BOOTSTRAP_QUALIFIER
    return Source(assembly.load(directory), qualifier, origin or str(directory))


def synthesize(outdir: str | Path, *, run: Run = subprocess.run, cwd: str | Path | None = None) -> None:
    """``npx cdk synth --quiet -o OUTDIR '**'``: every stack, also those inside Stages."""
    if shutil.which("npx") is None:
        raise NeuronConfigError(
            "--synth",
            True,
            "the CDK CLI is missing (no npx on PATH): install Node.js and the CDK CLI (npm install aws-cdk), "
            "or run cdk synth yourself and pass --app cdk.out",
        )
    command: Sequence[str] = [*SYNTH_COMMAND, str(outdir), "**"]
    try:
        done = run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as error:
        raise NeuronConfigError("--synth", True, f"cannot run {' '.join(command)} ({error})") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
        missing = any(
            "could not determine executable" in line or "missing packages" in line for line in lines
        )
        if missing:
            raise NeuronConfigError(
                "--synth",
                True,
                "the CDK CLI is missing: install it in the app (npm install aws-cdk) or globally, or run "
                "cdk synth yourself and pass --app cdk.out",
            )
        last = lines[-1] if lines else "no output"
        raise NeuronConfigError("--synth", True, f"cdk synth failed (exit {done.returncode}): {last}")


def load(
    *,
    config: str | None = None,
    app: str | None = None,
    synth: bool = False,
    run: Run = subprocess.run,
    cwd: str | Path | None = None,
) -> Source:
    """The Deployments from the one source given, else from the default (module docstring)."""
    given = [name for name, value in (("--config", config), ("--app", app), ("--synth", synth)) if value]
    if len(given) > 1:
        raise NeuronConfigError(
            " and ".join(given), True, "give one source: --config CDK_JSON, --app DIR or --synth"
        )
    if config:
        return from_config(config)
    if app:
        return from_assembly(app)
    if synth:
        with tempfile.TemporaryDirectory(prefix="cdk-neuron-synth-") as outdir:
            synthesize(outdir, run=run, cwd=cwd)
            return from_assembly(outdir, origin="cdk synth")
    here = Path(cwd) if cwd is not None else Path()
    if _names_loader(here / DEFAULT_CONFIG):
        return from_config(here / DEFAULT_CONFIG)
    if assembly.has_manifest(here / DEFAULT_ASSEMBLY):
        return from_assembly(here / DEFAULT_ASSEMBLY)
    raise NeuronConfigError(
        "source",
        None,
        f"no deployments here: ./{DEFAULT_CONFIG} names no {deployments.LOADER_KEY} loader and "
        f"./{DEFAULT_ASSEMBLY} holds no cloud assembly; pass --app DIR (what cdk synth wrote), --synth "
        "(runs npx cdk synth here) or --config CDK_JSON",
    )


__all__ = [
    "DEFAULT_ASSEMBLY",
    "DEFAULT_CONFIG",
    "Source",
    "from_assembly",
    "from_config",
    "load",
    "synthesize",
]
