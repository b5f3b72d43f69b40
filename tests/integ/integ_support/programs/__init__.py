"""The programs the training suites run in their Batch jobs, and how they get there.

A program is one self-contained Python file beside this module. It travels base64-encoded in the job
definition's environment (:data:`PROGRAM_VARIABLE`), so a suite needs no image of its own and no
upload step, and a changed program shows up as a changed snapshot. The job's training command
decodes it and runs it with ``torchrun $TORCHRUN_ARGS`` (the cluster's launcher sets the arguments).

Programs report with one JSON object per line after :data:`LOG_MARKER` (``CDK_NEURON_INTEG
{"event": ...}``) in the job's log; the assertions filter the log for them and the timing collector
reads them (:func:`events`). A program exits non-zero when a check fails, so the job FAILS.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROGRAM_VARIABLE = "CDK_NEURON_INTEG_PROGRAM"
LOG_MARKER = "CDK_NEURON_INTEG"
PROGRAM_PATH = "/tmp/cdk_neuron_integ.py"
_HERE = Path(__file__).resolve().parent


def source(name: str) -> str:
    """The text of program ``name`` (``smoke``, ``allreduce``)."""
    return (_HERE / f"{name}.py").read_text()


def environment(name: str) -> dict[str, str]:
    """The job environment that carries program ``name``."""
    return {PROGRAM_VARIABLE: base64.b64encode(source(name).encode()).decode()}


def training_command(*args: str) -> str:
    """Decode the program and run it on every NeuronCore of every node of the job."""
    extra = "".join(f" {arg}" for arg in args)
    return (
        f'printf %s "${PROGRAM_VARIABLE}" | base64 -d > {PROGRAM_PATH} && '
        f"torchrun $TORCHRUN_ARGS {PROGRAM_PATH}{extra}"
    )


def events(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The report objects in log lines (other lines, and malformed objects, are skipped)."""
    found: list[dict[str, Any]] = []
    for line in lines:
        _, marker, rest = line.partition(LOG_MARKER)
        if not marker:
            continue
        try:
            value = json.loads(rest.strip())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("event"), str):
            found.append(value)
    return found
