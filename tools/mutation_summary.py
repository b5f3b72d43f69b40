"""The committed summary of ``make mutate``: killed, survived, equivalent and scores per module.

Reads what the run left in ``mutants/`` (git-ignored):

- ``**/*.py.meta``: mutmut's verdict per mutant (exit codes, see ``mutmut.stats.status_by_exit_code``);
- ``**/*.py``: the mutated sources, where each mutant is a copy of its function
  (``x_<function>__mutmut_<n>``) next to the original (``x_<function>__mutmut_orig``);
- ``recheck.json``: the fresh-interpreter verdict of every mutant mutmut did not kill (tools/mutation.py);
- ``tables.json``: the data-table mutants (tools/table_mutation.py);
- ``decorated.json`` and ``patterns.json``: the mutants of decorated functions (which mutmut skips)
  and of regular-expression edges (tools/source_mutation.py);
- ``run.json``: when the run started and how long it took;

and ``mutation/equivalent.toml``, the reviewed equivalent mutants, each with its reason. It writes
the section between the ``mutation-summary`` markers of ``docs/mutation-testing.md``.

Scores:

- **behaviour score**: killed / (all mutants - equivalent mutants);
- **error-argument score**: the same over the mutants whose change lies inside the parentheses of a
  ``NeuronConfigError(...)`` call (with or without ``raise``), i.e. in the field, value or fix a
  user reads.

An equivalent entry names the function and the changed line before and after the mutation, not
mutmut's number (which shifts whenever the function changes). An entry that matches no surviving
mutant is stale: the summary lists it and ``make mutate`` fails, so the list never hides a mutant
that a test now kills, or a change that made the mutant real.

Usage: python -m tools.mutation_summary [--write] [--mutants DIR]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import json
import math
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import tomllib

from tools.markers import replace_between

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
DOC = ROOT / "docs" / "mutation-testing.md"
EQUIVALENT_FILE = ROOT / "mutation" / "equivalent.toml"
BEGIN = "<!-- mutation-summary:begin -->"
END = "<!-- mutation-summary:end -->"
ERROR_CLASS = "NeuronConfigError"

# mutmut 3.8.1's exit codes (mutmut.stats.status_by_exit_code), copied so the summary can be read
# without importing mutmut. A timeout, a crash (-9/-11) and a type-check failure end the test run
# with a failure, so they count as kills, as mutmut counts them.
_STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    2: "interrupted",
    None: "not checked",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    37: "caught by type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
}
KILLING_STATUSES = frozenset({"killed", "timeout", "caught by type check", "segfault"})


def mutmut_status(exit_code: int | None) -> str:
    return _STATUS_BY_EXIT_CODE.get(exit_code, "suspicious")


# -- where a mutation is ---------------------------------------------------------------------------


def changed_region(original: str, mutant: str) -> tuple[int, int]:
    """Byte offsets ``[start, end)`` of ``original`` that the mutant replaced (empty for an insertion)."""
    a, b = original.encode(), mutant.encode()
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    return prefix, len(a) - suffix


def _line_offsets(code: str) -> list[int]:
    offsets = [0]
    for line in code.encode().splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def error_argument_spans(code: str) -> list[tuple[int, int]]:
    """Byte offsets ``[start, end)`` between the parentheses of every ``NeuronConfigError(...)`` call."""
    tree = ast.parse(code)
    lines = _line_offsets(code)
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != ERROR_CLASS or node.end_lineno is None or node.end_col_offset is None:
            continue
        # ast offsets are UTF-8 byte columns: the call ends at its ")", the arguments start after
        # the "(" that follows the callee.
        callee_end = lines[func.end_lineno - 1] + func.end_col_offset  # type: ignore[operator]
        start = code.encode().index(b"(", callee_end) + 1
        end = lines[node.end_lineno - 1] + node.end_col_offset - 1
        spans.append((start, end))
    return sorted(spans)


def in_error_arguments(original: str, mutant: str) -> bool:
    """Whether the mutation lies wholly inside the arguments of a ``NeuronConfigError(...)`` call."""
    start, end = changed_region(original, mutant)
    return any(lo <= start and end <= hi for lo, hi in error_argument_spans(original))


def changed_lines(original: str, mutant: str) -> tuple[str, str]:
    """The lines the mutation changed, before and after, each stripped and joined by " / "."""
    before: list[str] = []
    after: list[str] = []
    for line in difflib.ndiff(original.splitlines(), mutant.splitlines()):
        if line.startswith("- "):
            before.append(line[2:].strip())
        elif line.startswith("+ "):
            after.append(line[2:].strip())
    return " / ".join(before), " / ".join(after)


# -- reading a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    name: str
    """mutmut's name, e.g. ``cdk_neuron.catalog.x_get_instance__mutmut_3``."""
    module: str
    function: str
    """``get_instance``, or ``Class.method``."""
    status: str
    """``killed``, ``survived`` or ``equivalent``, after the fresh-interpreter recheck."""
    mutmut_status: str
    before: str
    after: str
    error_argument: bool
    reason: str = ""


def split_name(name: str) -> tuple[str, str, str]:
    """(module, readable function, generated function) of a mutant name.

    >>> split_name("cdk_neuron.catalog.xǁPurchaseOptionsǁcapacity_block_kind__mutmut_2")
    ('cdk_neuron.catalog', 'PurchaseOptions.capacity_block_kind', 'xǁPurchaseOptionsǁcapacity_block_kind__mutmut_2')
    """
    module, _, generated = name.rpartition(".")
    mangled = generated.partition("__mutmut_")[0]
    if mangled.startswith("xǁ"):
        _, cls, method = mangled.split("ǁ")
        return module, f"{cls}.{method}", generated
    return module, mangled.removeprefix("x_"), generated


def generated_functions(source: str) -> dict[str, str]:
    """Every ``x_...__mutmut_*`` function of a mutated file, by name, as dedented source."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[str, str] = {}
    bodies: list[ast.stmt] = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bodies.extend(node.body)
    for node in bodies:
        if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name:
            text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            found[node.name] = textwrap.dedent(text).replace(node.name, "_", 1)
    return found


def read_mutants(mutants: Path = MUTANTS) -> list[Mutant]:
    """Every mutant of the run, with mutmut's verdict overridden by the fresh-interpreter recheck."""
    recheck_file = mutants / "recheck.json"
    recheck: dict[str, bool] = json.loads(recheck_file.read_text()) if recheck_file.exists() else {}
    result = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        functions = generated_functions(meta.with_suffix("").read_text())
        for name, code in sorted(codes.items()):
            module, function, generated = split_name(name)
            original = functions[generated.partition("__mutmut_")[0] + "__mutmut_orig"]
            mutant = functions[generated]
            status = mutmut_status(code)
            final = "killed" if status in KILLING_STATUSES or recheck.get(name) is True else "survived"
            before, after = changed_lines(original, mutant)
            result.append(
                Mutant(
                    name=name,
                    module=module,
                    function=function,
                    status=final,
                    mutmut_status=status,
                    before=before,
                    after=after,
                    error_argument=in_error_arguments(original, mutant),
                )
            )
    return result


@dataclass(frozen=True)
class Equivalent:
    function: str
    """``module.function`` as in the summary, e.g. ``cdk_neuron.catalog.get_instance``."""
    before: str
    after: str
    reason: str


def read_equivalents(path: Path = EQUIVALENT_FILE) -> list[Equivalent]:
    if not path.exists():
        return []
    entries: list[dict[str, Any]] = tomllib.loads(path.read_text()).get("mutant", [])
    equivalents = []
    for entry in entries:
        missing = {"function", "before", "after", "reason"} - set(entry)
        if missing or not str(entry.get("reason", "")).strip():
            raise ValueError(f"{path}: an entry needs function, before, after and a reason: {entry}")
        equivalents.append(
            Equivalent(entry["function"], entry["before"].strip(), entry["after"].strip(), entry["reason"])
        )
    return equivalents


def apply_equivalents(
    mutants: Sequence[Mutant], equivalents: Sequence[Equivalent]
) -> tuple[list[Mutant], list[Equivalent]]:
    """Mark survivors that an entry describes as equivalent; return them and the stale entries."""
    used: set[int] = set()
    marked = []
    for mutant in mutants:
        qualified = f"{mutant.module}.{mutant.function}"
        match = next(
            (
                i
                for i, e in enumerate(equivalents)
                if (e.function, e.before, e.after) == (qualified, mutant.before, mutant.after)
            ),
            None,
        )
        if match is not None and mutant.status == "survived":
            used.add(match)
            mutant = dataclasses.replace(mutant, status="equivalent", reason=equivalents[match].reason)
        marked.append(mutant)
    return marked, [e for i, e in enumerate(equivalents) if i not in used]


# -- scores ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0

    @property
    def score(self) -> float | None:
        """killed / (mutants - equivalent); None when nothing counts."""
        counted = self.mutants - self.equivalent
        return self.killed / counted if counted else None

    def add(self, mutant: Mutant) -> Tally:
        return Tally(
            self.mutants + 1,
            self.killed + (mutant.status == "killed"),
            self.survived + (mutant.status == "survived"),
            self.equivalent + (mutant.status == "equivalent"),
        )


def tally(mutants: Iterable[Mutant]) -> Tally:
    total = Tally()
    for mutant in mutants:
        total = total.add(mutant)
    return total


def percent(value: float | None) -> str:
    """One decimal, rounded down: 4,161 of 4,162 is 99.9 %, never a 100.0 % that hides a survivor."""
    if value is None:
        return "n/a"
    return f"{math.floor(round(1000 * value, 6)) / 10:.1f} %"


# -- the summary -----------------------------------------------------------------------------------


# The mutants tools/table_mutation.py and tools/source_mutation.py write, with their section titles.
LITERAL_KINDS = {
    "tables": (
        "all tables",
        "Data tables (module-level and class-level literals, `tools/table_mutation.py`):",
    ),
    "decorated": (
        "all decorated",
        "Decorated functions (`@property`, `@staticmethod`, `@contextmanager` bodies, which mutmut skips; "
        "`tools/source_mutation.py`):",
    ),
    "patterns": (
        "all patterns",
        "Regular-expression edges (bounds, `+`, `?`, end anchors, character-class items; "
        "`tools/source_mutation.py`):",
    ),
}


def _literal_section(kind: str, data: Mapping[str, Any]) -> list[str]:
    """The per-module table of one kind of literal or source mutant, and its survivors."""
    total_label, title = LITERAL_KINDS[kind]
    lines = ["", title, "", "| module | mutants | killed | survived | score |", "|---|---:|---:|---:|---:|"]
    entries_all: list[dict[str, Any]] = data.get("mutants", [])
    by_module: dict[str, list[dict[str, Any]]] = {}
    for entry in entries_all:
        by_module.setdefault(entry["module"], []).append(entry)
    for module in sorted(by_module):
        entries = by_module[module]
        killed = sum(1 for e in entries if e["killed"])
        lines.append(
            f"| `{module}` | {len(entries)} | {killed} | {len(entries) - killed} | {percent(killed / len(entries))} |"
        )
    killed_all = sum(1 for e in entries_all if e["killed"])
    lines.append(
        f"| **{total_label}** | **{len(entries_all)}** | **{killed_all}** | **{len(entries_all) - killed_all}** | "
        f"**{percent(killed_all / len(entries_all) if entries_all else None)}** |"
    )
    survivors = [e for e in entries_all if not e["killed"]]
    if survivors:
        lines += ["", f"Surviving {kind} mutants:", ""]
        lines += [f"- `{e['module']}` line {e['line']}: `{e['before']}` -> `{e['after']}`" for e in survivors]
    return lines


def render(
    mutants: Sequence[Mutant],
    stale: Sequence[Equivalent],
    *,
    tables: Mapping[str, Any] | None,
    run: Mapping[str, Any],
    measured: date,
    mutmut_version: str,
    sources: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    modules = sorted({m.module for m in mutants})
    lines = [
        f"Measured {measured.isoformat()} with mutmut {mutmut_version}, `make mutate` on "
        f"{run.get('jobs', '?')} workers: {run.get('wall_seconds', 0) / 60:.0f} min wall time "
        f"(mutmut {run.get('mutmut_seconds', 0) / 60:.0f} min, fresh-interpreter recheck "
        f"{run.get('recheck_seconds', 0) / 60:.0f} min, data tables {run.get('tables_seconds', 0) / 60:.0f} min, "
        f"decorated functions and patterns {run.get('sources_seconds', 0) / 60:.0f} min).",
        "",
        "| module | mutants | killed | survived | equivalent | behaviour score |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for module in modules:
        t = tally(m for m in mutants if m.module == module)
        lines.append(
            f"| `{module}` | {t.mutants} | {t.killed} | {t.survived} | {t.equivalent} | {percent(t.score)} |"
        )
    total = tally(mutants)
    errors = tally(m for m in mutants if m.error_argument)
    lines += [
        f"| **pure core** | **{total.mutants}** | **{total.killed}** | **{total.survived}** | "
        f"**{total.equivalent}** | **{percent(total.score)}** |",
        "",
        f"- Behaviour score (killed / (all - equivalent)): **{percent(total.score)}**; "
        f"killed / all: {percent(total.killed / total.mutants if total.mutants else None)}.",
        f"- Error-argument score ({errors.mutants} mutants inside the arguments of a `NeuronConfigError(...)`): "
        f"**{percent(errors.score)}** ({errors.killed} killed, {errors.survived} survived, "
        f"{errors.equivalent} equivalent).",
    ]
    rechecked = [m for m in mutants if m.mutmut_status not in KILLING_STATUSES]
    rescued = [m for m in rechecked if m.status == "killed"]
    lines.append(
        f"- Fresh-interpreter recheck: {len(rechecked)} mutants mutmut did not kill were run again in a new "
        f"interpreter; {len(rescued)} of them were killed there."
    )
    if tables:
        lines += _literal_section("tables", tables)
    for kind, data in (sources or {}).items():
        lines += _literal_section(kind, data)
    survivors = [m for m in mutants if m.status == "survived"]
    lines += ["", f"Surviving mutants ({len(survivors)}):" if survivors else "No surviving mutant."]
    if survivors:
        lines.append("")
        lines += [f"- `{m.name}`: `{m.before}` -> `{m.after}`" for m in survivors]
    if stale:
        lines += ["", f"**Stale equivalence entries ({len(stale)})**: they match no surviving mutant.", ""]
        lines += [f"- `{e.function}`: `{e.before}` -> `{e.after}`" for e in stale]
    return "\n".join(lines)


def replace_section(document: str, section: str) -> str:
    return replace_between(document, BEGIN, END, f"{section}\n", where=DOC.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.mutation_summary", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)} in place")
    parser.add_argument("--mutants", type=Path, default=MUTANTS)
    parser.add_argument("--date", type=date.fromisoformat, default=date.today())
    args = parser.parse_args(argv)
    from importlib.metadata import version

    mutants, stale = apply_equivalents(read_mutants(args.mutants), read_equivalents())
    tables_file = args.mutants / "tables.json"
    run_file = args.mutants / "run.json"
    sources = {
        kind: json.loads((args.mutants / f"{kind}.json").read_text())
        for kind in ("decorated", "patterns")
        if (args.mutants / f"{kind}.json").exists()
    }
    section = render(
        mutants,
        stale,
        tables=json.loads(tables_file.read_text()) if tables_file.exists() else None,
        run=json.loads(run_file.read_text()) if run_file.exists() else {},
        measured=args.date,
        mutmut_version=version("mutmut"),
        sources=sources,
    )
    print(section)
    if args.write:
        DOC.write_text(replace_section(DOC.read_text(), section))
    failures = gate(mutants, stale, sources)
    for failure in failures:
        print(f"mutation: {failure}", file=sys.stderr)
    return 1 if failures else 0


# The floors issue 18 set: make mutate fails below them, so the scores only ratchet up. Issue 24 adds
# one for the decorated functions and the pattern edges.
MIN_BEHAVIOUR_SCORE = 0.95
MIN_ERROR_ARGUMENT_SCORE = 0.90
MIN_SOURCE_SCORE = 0.95


def gate(
    mutants: Sequence[Mutant],
    stale: Sequence[Equivalent],
    sources: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Why this run does not meet the floors (empty when it does)."""
    failures = []
    for kind, data in (sources or {}).items():
        entries = data.get("mutants", [])
        score = sum(1 for e in entries if e["killed"]) / len(entries) if entries else None
        if score is not None and score < MIN_SOURCE_SCORE:
            failures.append(f"{kind} score {percent(score)} is below {percent(MIN_SOURCE_SCORE)}")
    behaviour = tally(mutants).score
    errors = tally(m for m in mutants if m.error_argument).score
    if behaviour is None or behaviour < MIN_BEHAVIOUR_SCORE:
        failures.append(f"behaviour score {percent(behaviour)} is below {percent(MIN_BEHAVIOUR_SCORE)}")
    if errors is not None and errors < MIN_ERROR_ARGUMENT_SCORE:
        failures.append(
            f"error-argument score {percent(errors)} is below {percent(MIN_ERROR_ARGUMENT_SCORE)}"
        )
    if stale:
        failures.append(f"{len(stale)} stale equivalence entries in {EQUIVALENT_FILE.relative_to(ROOT)}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
