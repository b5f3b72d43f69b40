"""Generated sections inside hand-written documents: the text between a begin and an end marker.

``make acknowledgments``, ``make deploy-rules-doc``, ``make construct-docs``, ``make cli-docs``,
``make mutate`` and the NeuronLink diagram each rewrite one such section and leave the prose around it alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def replace_between(document: str, begin: str, end: str, section: str, *, where: str) -> str:
    """``document`` with the text between ``begin`` and ``end`` replaced by ``section``.

    ``section`` starts on the line after ``begin`` and runs up to ``end`` exactly, so it carries its own
    trailing newline. Both markers must be present (``where`` names the document in the error): a
    missing end marker would otherwise drop everything after the section.
    """
    head, found_begin, rest = document.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not found_begin or not found_end:
        raise ValueError(f"{where} needs the markers {begin} and {end}")
    return f"{head}{begin}\n{section}{end}{tail}"


def table_cell(text: str) -> str:
    """One Markdown table cell: on one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def section_main(
    argv: list[str] | None,
    *,
    description: str,
    repo: Path,
    doc: Path,
    begin: str,
    end: str,
    render: Callable[[], str],
) -> int:
    """The command line of a generator of one marked section: print it, or ``--write`` it into ``doc``."""
    where = str(doc.relative_to(repo))
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", action="store_true", help=f"update {where} in place")
    args = parser.parse_args(argv)
    section = render()
    if args.write:
        doc.write_text(replace_between(doc.read_text(), begin, end, section, where=where))
        print(f"wrote {where}")
    else:
        print(section, end="")
    return 0
