"""How results reach the terminal: one JSON document for programs, tables or plain lines for people.

Every command first builds a typed result (:mod:`cdk_neuron.cli.result`), then either prints its
JSON document (``--output json``) or turns it into a :class:`Report` (titled tables, prose, command
lines) that is rendered in one of two ways:

- ``table`` (the default): rich tables sized to the terminal. An identifier (an ARN, a URI, an
  image, an instance type, a number) is never broken: identifier columns do not wrap, prose
  columns wrap at spaces only, and a value that still does not fit is replaced by a marker such
  as ``[1]`` and printed whole below the table. Command lines are printed on a line of their own
  and never wrapped, so they can be copied.
- ``text``: no colour, no borders, no wrapping: a title line, then one line per row with the
  fields separated by tabs (``key: value`` for two-column tables). For CI logs, ``grep`` and
  ``cut -f``.
"""

from __future__ import annotations

import errno
import json
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from cdk_neuron.cli.extras import require

SCHEMA_VERSION = 1
"""Bumped when a key of a ``--json`` document is renamed or removed (adding keys does not bump it)."""

OutputMode = Literal["table", "json", "text"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("table", "json", "text")

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

ColumnKind = Literal["id", "text", "status"]


def document(command: str, **body: Any) -> dict[str, Any]:
    """The envelope every ``--json`` document shares."""
    return {"command": command, "schema_version": SCHEMA_VERSION, **body}


def print_json(doc: Mapping[str, Any], stream: TextIO | None = None) -> None:
    """Exactly one JSON document on stdout and nothing else, so ``| jq`` always works."""
    out = stream or sys.stdout
    json.dump(doc, out, indent=2)
    out.write("\n")


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


# --------------------------------------------------------------------------------------------
# What a command shows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A table column. ``id`` and ``status`` cells never wrap; ``text`` cells wrap at spaces only."""

    header: str
    kind: ColumnKind = "text"


@dataclass(frozen=True)
class TableBlock:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]
    show_header: bool = True


@dataclass(frozen=True)
class ProseBlock:
    """A paragraph, or a titled bullet list: wrapped at spaces, identifiers kept whole."""

    title: str | None
    lines: tuple[str, ...]
    bullets: bool
    style: str = ""


@dataclass(frozen=True)
class CommandBlock:
    """Command lines to copy: each printed whole on a line of its own."""

    title: str | None
    commands: tuple[str, ...]


Block = TableBlock | ProseBlock | CommandBlock


def _columns(columns: Sequence[str | Column]) -> tuple[Column, ...]:
    return tuple(c if isinstance(c, Column) else Column(c) for c in columns)


@dataclass
class Report:
    """Everything a command prints besides JSON, in order."""

    blocks: list[Block] = field(default_factory=list)

    def table(
        self,
        title: str,
        columns: Sequence[str | Column],
        rows: Iterable[Sequence[Any]],
        *,
        show_header: bool = True,
    ) -> None:
        cols = _columns(columns)
        self.blocks.append(
            TableBlock(title, cols, tuple(tuple(text(cell) for cell in row) for row in rows), show_header)
        )

    def pairs(self, title: str, rows: Iterable[tuple[str, Any]], *, value: ColumnKind = "text") -> None:
        """A two-column ``name | value`` table without a header; names are short labels and never wrap."""
        self.table(title, (Column("", "id"), Column("", value)), rows, show_header=False)

    def notes(self, title: str, lines: Iterable[str]) -> None:
        """A titled bullet list (nothing when empty)."""
        items = tuple(lines)
        if items:
            self.blocks.append(ProseBlock(title, items, bullets=True))

    def line(self, value: str, *, style: str = "") -> None:
        self.blocks.append(ProseBlock(None, (value,), bullets=False, style=style))

    def commands(self, title: str | None, commands: Iterable[str]) -> None:
        items = tuple(commands)
        if items:
            self.blocks.append(CommandBlock(title, items))

    def blank(self) -> None:
        self.blocks.append(ProseBlock(None, ("",), bullets=False))


def render(report: Report, mode: OutputMode, out: TextIO) -> None:
    """``report`` as rich tables (``table``) or plain lines (``text``); ``json`` prints the result's
    document instead (:meth:`cdk_neuron.cli.context.Context.show`)."""
    if mode == "text":
        render_text(report, out)
    else:
        render_table(report, out)


# --------------------------------------------------------------------------------------------
# text: one line per row, never wrapped
# --------------------------------------------------------------------------------------------


def _text_lines(block: Block) -> list[str]:
    if isinstance(block, TableBlock):
        lines = [block.title] if block.title else []
        if len(block.columns) == 2 and not block.show_header:
            lines += [f"{name}: {value}" if name else value for name, value in block.rows]
            return lines
        if block.show_header:
            lines.append("\t".join(c.header for c in block.columns))
        lines += ["\t".join(row) for row in block.rows]
        return lines
    if isinstance(block, CommandBlock):
        return ([block.title] if block.title else []) + list(block.commands)
    prefix = "  - " if block.bullets else ""
    return ([block.title] if block.title else []) + [prefix + line for line in block.lines]


def render_text(report: Report, out: TextIO) -> None:
    for block in report.blocks:
        for line in _text_lines(block):
            out.write(line + "\n")
    out.flush()


# --------------------------------------------------------------------------------------------
# table: rich tables that never break an identifier
# --------------------------------------------------------------------------------------------

# A rich table with edges and padding (0, 1) takes 3 columns per column plus 1 for the right edge.
_PER_COLUMN = 3


class _Footnotes:
    """Values moved out of a table, numbered in reading order (the same value keeps its number)."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def mark_width(self) -> str:
        return f"[{len(self.values) + 1}]"

    def mark(self, value: str) -> str:
        """A placeholder as wide as ``[n]``; :func:`_renumber` turns it into ``[n]`` in reading order."""
        if value not in self.values:
            self.values.append(value)
        return f"\ue000{self.values.index(value) + 1}\ue001"


def _words(value: str) -> list[str]:
    return value.split(" ")


def _min_width(column: Column, cells: Sequence[str]) -> int:
    """The narrowest the column can be without breaking a cell (id) or a word (text)."""
    if column.kind != "text":  # the header does not wrap either
        return max([len(column.header), *(len(cell) for cell in cells)])
    header = max((len(w) for w in _words(column.header)), default=0)
    if column.kind == "text":
        longest = max((len(w) for cell in cells for w in _words(cell)), default=0)
        return max(header, longest)
    return max(header, max((len(cell) for cell in cells), default=0))


def _natural_width(column: Column, cells: Sequence[str]) -> int:
    return max([len(column.header), *(len(cell) for cell in cells)])


def _shrink(column: Column, cells: list[str], width: int, notes: _Footnotes) -> list[str]:
    """Replace every cell (id) or word (text) of ``width`` characters or more by a footnote marker."""
    if column.kind == "text":
        return [" ".join(notes.mark(w) if len(w) >= width else w for w in _words(cell)) for cell in cells]
    return [notes.mark(cell) if len(cell) >= width else cell for cell in cells]


def layout(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, notes: _Footnotes
) -> tuple[list[int], list[list[str]]]:
    """Column widths that fit ``width``, and the rows with what cannot fit moved to ``notes``.

    Identifier cells keep their full length; prose wraps at spaces. While even the narrowest
    layout is too wide, the longest identifier (or word) in the widest column becomes a footnote.
    """
    budget = max(width - _PER_COLUMN * len(columns) - 1, len(columns))
    cells = [[row[i] for row in rows] for i in range(len(columns))]
    while True:
        minimum = [_min_width(c, cells[i]) for i, c in enumerate(columns)]
        if sum(minimum) <= budget:
            break
        widest = max(range(len(columns)), key=lambda i: minimum[i])
        marker = len(notes.mark_width())
        floor = max(marker, *(len(w) for w in _words(columns[widest].header)))
        if minimum[widest] <= floor:
            break  # nothing left to move out: let the terminal cope
        shrunk = _shrink(columns[widest], cells[widest], max(minimum[widest], floor + 1), notes)
        if shrunk == cells[widest]:
            break
        cells[widest] = shrunk
    if notes.values:
        reading = _renumber([[cells[i][r] for i in range(len(columns))] for r in range(len(rows))], notes)
        cells = [[row[i] for row in reading] for i in range(len(columns))]
        minimum = [_min_width(c, cells[i]) for i, c in enumerate(columns)]
    natural = [_natural_width(c, cells[i]) for i, c in enumerate(columns)]
    widths = list(minimum)
    if sum(natural) <= budget:
        widths = natural
    else:
        spare = budget - sum(minimum)
        wants = [n - m for n, m in zip(natural, minimum, strict=True)]
        total = sum(wants)
        if spare > 0 and total > 0:
            extra = [spare * w // total for w in wants]
            left = spare - sum(extra)
            for i in sorted(range(len(wants)), key=lambda i: -wants[i]):
                if left <= 0:
                    break
                if extra[i] < wants[i]:
                    extra[i] += 1
                    left -= 1
            widths = [m + e for m, e in zip(minimum, extra, strict=True)]
    return widths, [[cells[i][r] for i in range(len(columns))] for r in range(len(rows))]


_MARKER = re.compile("\ue000(\\d+)\ue001")


def _renumber(rows: list[list[str]], notes: _Footnotes) -> list[list[str]]:
    """Number the notes in reading order (they were made widest column first)."""
    order: list[int] = []
    for row in rows:
        for cell in row:
            for match in _MARKER.finditer(cell):
                number = int(match[1])
                if number not in order:
                    order.append(number)
    new_number = {old: new for new, old in enumerate(order, start=1)}
    notes.values = [notes.values[old - 1] for old in order]

    def swap(match: re.Match[str]) -> str:
        return f"[{new_number[int(match[1])]}]"

    return [[_MARKER.sub(swap, cell) for cell in row] for row in rows]


def _wrap(value: str, width: int, indent: str = "", subsequent: str = "") -> list[str]:
    """Wrap at spaces only: a word longer than the line stays whole on a line of its own."""
    if not value:
        return [indent.rstrip()]
    return textwrap.wrap(
        value,
        width=max(width, len(indent) + 1),
        initial_indent=indent,
        subsequent_indent=subsequent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def render_table(report: Report, out: TextIO) -> None:
    require("rich", "the table output")
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's default points sys.stdout at /dev/null and raises SystemExit(1), which would
            # report a closed pipe as FAILED; main's handler owns that exit (BROKEN_PIPE, 141).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    console = _Console(file=out, highlight=False)
    width = console.width
    for block in report.blocks:
        if isinstance(block, TableBlock):
            notes = _Footnotes()
            widths, rows = layout(block.columns, block.rows, width, notes)
            table = Table(
                title=block.title,
                title_justify="left",
                title_style="bold",
                show_header=block.show_header,
            )
            for column, column_width in zip(block.columns, widths, strict=True):
                table.add_column(
                    column.header, width=column_width, no_wrap=column.kind != "text", overflow="fold"
                )
            for row in rows:
                table.add_row(
                    *(
                        Text(cell, style=STATUS_STYLE.get(cell, "") if column.kind == "status" else "")
                        for column, cell in zip(block.columns, row, strict=True)
                    )
                )
            console.print(table)
            for number, value in enumerate(notes.values, start=1):
                console.print(Text(f"[{number}] {value}"), soft_wrap=True)
        elif isinstance(block, CommandBlock):
            if block.title:
                for line in _wrap(block.title, width):
                    console.print(Text(line, style="bold"), soft_wrap=True)
            for command in block.commands:
                console.print(Text(f"  {command}"), soft_wrap=True)
        else:
            if block.title:
                for line in _wrap(block.title, width):
                    console.print(Text(line, style="bold"), soft_wrap=True)
            for item in block.lines:
                lines = _wrap(item, width, "  - ", "    ") if block.bullets else _wrap(item, width)
                for line in lines:
                    console.print(Text(line, style=block.style), soft_wrap=True)
