"""What the job commands print, shared by both schedulers: AWS Batch (:mod:`cdk_neuron.cli.jobs`) and
Slurm on HyperPod (:mod:`cdk_neuron.cli.slurm_jobs`).

Each engine builds its own typed result; these functions give ``cancel``/``terminate`` and ``list`` one
layout whatever the engine, and the commands one way to follow a job on the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Column, Report
from cdk_neuron.cli.transitions import Transition


def stop_report(
    *, environment: str, action: str, job_id: str, pairs: Sequence[tuple[str, object]], status_command: str
) -> Report:
    """``cancel``/``terminate``: the job, what it was, what happened (``pairs``), and how to check it."""
    out = Report()
    out.pairs(f"{environment}: {action} {job_id}", list(pairs))
    out.commands("Check it with:", [status_command])
    return out


def list_report(
    *,
    environment: str,
    states: Sequence[str],
    rows: Iterable[tuple[object, ...]],
    shown: int,
    time_column: str,
    place: tuple[str, str],
    empty_place: str,
    truncated: bool,
    notes: Sequence[str] = (),
) -> Report:
    """``list``: newest first, one row per job (id, name, status, nodes, ``time_column``), the queue or
    cluster they are in (``place``; ``empty_place`` ends the "none" line), the engine's notes, and a
    hint when ``--limit`` cut the list."""
    out = Report()
    title = f"{environment}: {', '.join(states)} jobs"
    if not shown:
        out.line(f"{title}: none {empty_place}")
    else:
        out.table(
            title,
            (
                Column("job id", "id"),
                Column("name"),
                Column("status", "status"),
                Column("nodes", "id"),
                Column(time_column, "id"),
            ),
            rows,
        )
        out.pairs("", [place])
    for note in notes:
        out.line(note)
    if truncated:
        out.line(f"Showing the newest {shown}; raise --limit for more.")
    return out


@dataclass(frozen=True)
class Printers:
    """How a following command reports as it goes: nothing in ``--output json`` (the document says it
    all at the end), else each transition and each log line on the terminal."""

    on_transition: Callable[[Transition], None]
    write: Callable[[str], None] | None
    announce: Callable[[str], None] | None


def printers(ctx: Context, transition_line: Callable[[Transition], str]) -> Printers:
    if ctx.output == "json":
        return Printers(on_transition=lambda t: None, write=None, announce=None)
    return Printers(on_transition=lambda t: ctx.line(transition_line(t)), write=ctx.line, announce=ctx.note)


__all__ = ["Printers", "list_report", "printers", "stop_report"]
