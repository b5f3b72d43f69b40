"""Mutation testing of the data tables that mutmut leaves alone.

mutmut 3 mutates code inside functions only; the pure core's facts live in module-level (and
dataclass-default) literals: instance specs, purchase options, prices, optimizer bytes, retention
periods. This tool mutates those literals one at a time and runs the pure tests against each:

- an ``int`` or ``float`` becomes itself + 1 (an ``int`` of a million or more: + 0.1 %), a ``bool`` its negation, a ``str`` ``"XX" + s + "XX"``
  (mutmut's own string mutation);
- in the value of every module-level assignment and every class-level default of the modules in
  ``[tool.mutmut] only_mutate``, except what :data:`NOT_TABLES` lists (each with its reason) and
  strings with whitespace in them (prose: notes, citations, messages; their words are tested where
  a user reads them, not letter by letter).

Each mutant runs in a child forked from a process that has imported pytest but not the project
(tools/forked_pytest.py), with the mutated source installed as the module by an import hook, so the
working tree is never written. The child runs the pure tests with ``-x``, the mutated module's own
test file first, then the others; a failing test, an import error or a timeout kills it.

    python -m tools.table_mutation [--jobs 2] [--module cdk_neuron.catalog] [--list]

Results go to ``mutants/tables.json``; tools/mutation_summary.py reports them.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.forked_pytest import run_forked, test_batches

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "mutants" / "tables.json"
SOURCE_ROOTS = ("constructs", ".")
PYTEST_EXTRA_ARGS = ("--hypothesis-seed=0",)

# Module-level names that are not data tables, and why they are not mutated.
NOT_TABLES: dict[str, str] = {
    "__all__": "the export list; tests/test_public_api.py checks it as a whole",
    "SOURCES": "citations and their dates: documentation, checked by reading; a key that other entries "
    "name is still mutated there (the sources= tuples)",
}
# Calls whose literal arguments are not table data.
NOT_TABLE_CALLS: dict[str, str] = {
    "compile": "regular expressions: a mutated pattern ('XX^...XX') matches nothing, which any "
    "acceptance test notices; tools/source_mutation.py mutates their edges (bounds, quantifiers, "
    "anchors, class items), which tests/test_validation_patterns.py pins",
    "TypeVar": "a typing construct",
    "Literal": "a type alias",
}


@dataclass(frozen=True)
class TableMutant:
    module: str
    """``cdk_neuron.catalog``."""
    path: str
    """Relative to the repository root."""
    table: str
    """The assignment target: ``INSTANCES``, or ``NetworkConfig.cidr`` for a class-level default."""
    line: int
    before: str
    after: str
    start: int
    """Byte offsets of the literal in the source."""
    end: int


def _mutated_literal(value: object) -> str | None:
    if isinstance(value, bool):
        return repr(not value)
    if isinstance(value, int):
        # +1 is the sharpest change; a byte count of 10**9 + 1 is not a different fact a test can
        # tell (approximate comparisons), so large numbers grow by 0.1 %.
        return repr(value + 1 if abs(value) < 1_000_000 else value + value // 1000)
    if isinstance(value, float):
        return repr(value + 1)
    if isinstance(value, str) and value and not any(c.isspace() for c in value):
        return repr(f"XX{value}XX")
    return None


def _callee(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _literals(node: ast.AST) -> Iterator[ast.Constant]:
    """Constants under ``node``, skipping f-strings and the arguments of :data:`NOT_TABLE_CALLS`."""
    if isinstance(node, ast.Constant):
        yield node
        return
    if isinstance(node, ast.JoinedStr):
        return
    if isinstance(node, ast.Call) and _callee(node.func) in NOT_TABLE_CALLS:
        return
    if isinstance(node, ast.Subscript) and _callee(node.value) in NOT_TABLE_CALLS:
        return
    for child in ast.iter_child_nodes(node):
        yield from _literals(child)


def _assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of module-level assignments and class-level defaults."""

    def target_name(node: ast.Assign | ast.AnnAssign) -> str:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        return ast.unparse(target)

    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            yield target_name(node), node.value
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.Assign, ast.AnnAssign)) and member.value is not None:
                    yield f"{node.name}.{target_name(member)}", member.value


def table_mutants(source: str, *, module: str, path: str) -> list[TableMutant]:
    """Every table mutant of one module's source, in source order."""
    tree = ast.parse(source)
    offsets = [0]
    for line in source.encode().splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    found = []
    for name, value in _assignments(tree):
        if name.split("[")[0] in NOT_TABLES:
            continue
        for constant in _literals(value):
            after = _mutated_literal(constant.value)
            if after is None or constant.end_lineno is None or constant.end_col_offset is None:
                continue
            start = offsets[constant.lineno - 1] + constant.col_offset
            end = offsets[constant.end_lineno - 1] + constant.end_col_offset
            found.append(
                TableMutant(
                    module=module,
                    path=path,
                    table=name,
                    line=constant.lineno,
                    before=source.encode()[start:end].decode(),
                    after=after,
                    start=start,
                    end=end,
                )
            )
    return sorted(found, key=lambda m: m.start)


def apply(source: str, mutant: TableMutant) -> str:
    data = source.encode()
    return (data[: mutant.start] + mutant.after.encode() + data[mutant.end :]).decode()


def module_of(path: str) -> str:
    """``constructs/cdk_neuron/catalog.py`` -> ``cdk_neuron.catalog``; ``stacks/config.py`` -> ``stacks.config``."""
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[1:] if parts[0] in SOURCE_ROOTS else parts)


# -- running ---------------------------------------------------------------------------------------


class _MutatedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``name`` from ``source`` instead of its file (which stays as it is)."""

    def __init__(self, name: str, path: Path, source: str) -> None:
        self.name, self.path, self.source = name, path, source

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        exec(compile(self.source, str(self.path), "exec"), module.__dict__)


def run(
    mutants: Sequence[TableMutant], tests: Sequence[str], *, jobs: int, root: Path = ROOT
) -> dict[TableMutant, bool]:
    """Run every mutant's tests in a forked child, ``jobs`` at a time; True where the tests killed it."""
    sources = {m.path: (root / m.path).read_text() for m in mutants}
    os.chdir(root)
    sys.path[:0] = [str(root / "constructs"), str(root)]

    def install(mutant: TableMutant) -> None:
        sys.meta_path.insert(
            0, _MutatedModule(mutant.module, root / mutant.path, apply(sources[mutant.path], mutant))
        )

    return run_forked(
        mutants,
        jobs=jobs,
        prepare=install,
        batches=lambda m: test_batches(m.module, tests),
        describe=lambda m: f"{m.module}:{m.line} {m.table}: {m.before} -> {m.after}",
        extra_args=PYTEST_EXTRA_ARGS,
    )


def all_mutants(paths: Iterable[str], root: Path = ROOT) -> list[TableMutant]:
    return [
        mutant
        for path in paths
        for mutant in table_mutants((root / path).read_text(), module=module_of(path), path=path)
    ]


def main(argv: list[str] | None = None) -> int:
    from tools.mutation import mutmut_config

    parser = argparse.ArgumentParser(
        prog="python -m tools.table_mutation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MUTATE_JOBS", 2)))
    parser.add_argument(
        "--module", action="append", help="only this module (repeatable), e.g. cdk_neuron.catalog"
    )
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    config = mutmut_config()
    mutants = [m for m in all_mutants(config["only_mutate"]) if not args.module or m.module in args.module]
    if args.list:
        for m in mutants:
            print(f"{m.module}:{m.line} {m.table}: {m.before} -> {m.after}")
        return 0
    started = time.monotonic()
    killed = run(mutants, config["pytest_add_cli_args_test_selection"], jobs=args.jobs)
    seconds = time.monotonic() - started
    results = [
        {k: v for k, v in asdict(m).items() if k not in ("start", "end")} | {"killed": killed[m]}
        for m in mutants
    ]
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps({"seconds": round(seconds), "mutants": results}, indent=1) + "\n")
    survived = sum(1 for m in mutants if not killed[m])
    print(
        f"{len(mutants)} table mutants, {len(mutants) - survived} killed, {survived} survived, {seconds:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
