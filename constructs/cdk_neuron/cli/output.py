"""How results reach the terminal: rich tables for people, one JSON document for programs.

Every command first builds a JSON-ready ``dict`` with stable keys and then either prints it with
``--json`` or renders tables from that same dict, so the two views cannot disagree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

SCHEMA_VERSION = 1
"""Bumped when a key of a ``--json`` document is renamed or removed (adding keys does not bump it)."""

Status = Literal["PASS", "WARN", "FAIL", "INFO"]
STATUS_STYLE: dict[str, str] = {
    "PASS": "green",
    "WARN": "yellow",
    "FAIL": "bold red",
    "INFO": "cyan",
    # AWS Batch job states
    "SUCCEEDED": "green",
    "FAILED": "bold red",
    "RUNNING": "cyan",
}


def document(command: str, **body: Any) -> dict[str, Any]:
    """The envelope every ``--json`` document shares."""
    return {"command": command, "schema_version": SCHEMA_VERSION, **body}


def print_json(doc: Mapping[str, Any], stream: TextIO | None = None) -> None:
    """Exactly one JSON document on stdout and nothing else, so ``| jq`` always works."""
    out = stream or sys.stdout
    json.dump(doc, out, indent=2)
    out.write("\n")


def make_console(stream: TextIO | None = None) -> Console:
    return Console(file=stream or sys.stdout, highlight=False)


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, show_header: bool = True
) -> Table:
    """A table whose cells are shown literally (data never parsed as rich markup)."""
    out = Table(title=title, title_justify="left", title_style="bold", show_header=show_header)
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*(cell if isinstance(cell, Text) else Text(text(cell)) for cell in row))
    return out


def status_cell(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def text(value: Any) -> str:
    """A cell: ``None`` is 'n/a', floats are trimmed, booleans read as yes/no, lists are joined."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) or "-"
    return str(value)


def usd(value: float | None) -> str:
    """Dollars to the cent; below a cent, to a tenth of a cent ($0.004), so a small charge is not shown as $0.00."""
    if value is None:
        return "n/a"
    if 0 < abs(value) < 0.01:
        return f"${value:.3f}"
    return f"${value:,.2f}"


def notes(out: Console, title: str, lines: Iterable[str]) -> None:
    """A titled bullet list printed literally."""
    items = list(lines)
    if not items:
        return
    out.print(Text(title, style="bold"))
    for line in items:
        # Soft wrap: the terminal folds long lines, so copied text (commands, ARNs) stays whole.
        out.print(Text(f"  - {line}"), soft_wrap=True)
