"""Mutation testing of what mutmut and the table tool leave alone: decorated functions and regex edges.

mutmut 3.8.1 never mutates a decorated function other than a lone ``@staticmethod`` or
``@classmethod`` (it cannot put its trampoline around one), so every ``@property`` and
``@contextmanager`` body of the pure core would go untested by mutation; and
tools/table_mutation.py skips the patterns given to
``re.compile``. This tool makes both kinds of mutant, one change at a time, and runs them exactly
as the table tool runs its own (forked children, the mutated module installed by an import hook,
the pure tests with ``-x``):

**Decorated functions** (every function mutmut skips: any decorator except a lone ``@staticmethod``
or ``@classmethod``, which mutmut mutates itself; at module level or in a class, in the modules of
``[tool.mutmut] only_mutate``). In their bodies:

- a comparison's operator is swapped: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``,
  ``is``/``is not`` (one comparison of a chain at a time);
- an arithmetic operator is swapped: ``+``/``-``, ``*``/``/``, ``//``/``/``, ``%``/``//``;
- ``and``/``or`` are swapped and ``not x`` becomes ``x``;
- an ``int`` or ``float`` constant grows by 1, a ``bool`` is negated, a string without whitespace
  becomes ``"XX...XX"``;
- a ``return <value>`` returns ``None`` instead.

Docstrings and the decorators themselves are not mutated.

**Regular expressions** (the string given to every ``re.compile`` of those modules), at the edges a
test must pin:

- a bounded quantifier moves each bound by one: ``{12}`` -> ``{11}``, ``{13}``; ``{1,61}`` ->
  ``{0,61}``, ``{2,61}``, ``{1,60}``, ``{1,62}`` (never below 0, never inverted);
- ``+`` becomes ``*`` (one at a time) and ``?`` is dropped (one at a time);
- the end anchor (``\\Z``, or ``$``) is dropped (not ``^``: every caller uses ``match`` or
  ``fullmatch``, which anchor at the start anyway, so dropping it is always an equivalent mutant);
- one character (or range) is dropped from a character class ``[...]``.

Not mutated: escapes inside classes (``\\w``, ``\\d`` stay whole), lookarounds, and the pattern's
flags. Each mutant that the tests do not kill is a missing boundary test (or an equivalent
pattern, which the summary lists).

    python -m tools.source_mutation [--jobs 2] [--kind decorated|patterns] [--module cdk_neuron.validation] [--list]

Results go to ``mutants/decorated.json`` and ``mutants/patterns.json``; tools/mutation_summary.py
reports them.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from tools.table_mutation import ROOT, TableMutant, module_of, run

OUTPUTS = {"decorated": ROOT / "mutants" / "decorated.json", "patterns": ROOT / "mutants" / "patterns.json"}

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
}


def _offsets(source: str) -> list[int]:
    offsets = [0]
    for line in source.encode().splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _span(node: ast.AST, offsets: list[int]) -> tuple[int, int]:
    start = offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
    end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
    return start, end


def _variants(node: ast.AST) -> Iterator[ast.AST]:
    """Each single mutation of ``node`` itself (not of its children)."""
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap is not None:
                changed = copy.deepcopy(node)
                changed.ops[index] = swap()
                yield changed
    elif isinstance(node, ast.BinOp):
        swap_op = _BINOP_SWAPS.get(type(node.op))
        if swap_op is not None:
            changed_bin = copy.deepcopy(node)
            changed_bin.op = swap_op()
            yield changed_bin
    elif isinstance(node, ast.BoolOp):
        changed_bool = copy.deepcopy(node)
        changed_bool.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield changed_bool
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield ast.Constant(not value)
        elif isinstance(value, (int, float)):
            yield ast.Constant(value + 1)
        elif isinstance(value, str) and value and not any(c.isspace() for c in value):
            yield ast.Constant(f"XX{value}XX")


def _mutmut_skips(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether mutmut 3.8.1 leaves the function alone: any decorator but a lone ``@staticmethod`` or
    ``@classmethod`` (mutmut.mutation.file_mutation._skip_node_and_children)."""
    decorators = function.decorator_list
    if len(decorators) == 1 and isinstance(decorators[0], ast.Name):
        return decorators[0].id not in ("staticmethod", "classmethod")
    return bool(decorators)


def _decorated(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, function) of every function mutmut skips, at module level or in a class."""
    for node in tree.body:
        members = (
            [(node.name + ".", m) for m in node.body] if isinstance(node, ast.ClassDef) else [("", node)]
        )
        for prefix, member in members:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and _mutmut_skips(member):
                yield prefix + member.name, member


def _body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of the body, without the docstring and without the decorators."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for statement in body:
        yield from ast.walk(statement)


def decorated_mutants(source: str, *, module: str, path: str) -> list[TableMutant]:
    """Every mutant of the decorated functions of one module's source, in source order."""
    tree = ast.parse(source)
    offsets = _offsets(source)
    data = source.encode()
    found = []
    for name, function in _decorated(tree):
        for node in _body_nodes(function):
            replacements: list[tuple[ast.AST, str]] = [(node, f"({ast.unparse(v)})") for v in _variants(node)]
            if isinstance(node, ast.Return) and node.value is not None:
                replacements.append((node.value, "None"))
            for target, after in replacements:
                start, end = _span(target, offsets)
                before = data[start:end].decode()
                if before == after:
                    continue
                found.append(TableMutant(module, path, name, target.lineno, before, after, start, end))  # type: ignore[attr-defined]
    return sorted(found, key=lambda m: (m.start, m.after))


# -- regular expressions ---------------------------------------------------------------------------

_QUANTIFIER = re.compile(r"(?<!\\)\{(\d+)(,(\d*))?\}")
_CLASS = re.compile(r"(?<!\\)\[(\^?)((?:\\.|[^\]\\])+)\]")
_CLASS_ITEM = re.compile(r"\\.|.-.|.", re.DOTALL)


def pattern_variants(pattern: str) -> list[str]:
    """Every edge mutant of a regular expression's source (see the module docstring), deduplicated."""
    found: list[str] = []

    def add(candidate: str) -> None:
        if candidate != pattern and candidate not in found:
            found.append(candidate)

    for match in _QUANTIFIER.finditer(pattern):
        low = int(match[1])
        high_text = match[3]
        bounds: list[str] = []
        if match[2] is None:  # {n}
            bounds += [f"{{{low - 1}}}"] if low > 0 else []
            bounds.append(f"{{{low + 1}}}")
        else:
            high = int(high_text) if high_text else None
            if low > 0:
                bounds.append(f"{{{low - 1},{high_text}}}")
            if high is None or low + 1 <= high:
                bounds.append(f"{{{low + 1},{high_text}}}")
            if high is not None:
                if high - 1 >= low:
                    bounds.append(f"{{{low},{high - 1}}}")
                bounds.append(f"{{{low},{high + 1}}}")
        for bound in bounds:
            add(pattern[: match.start()] + bound + pattern[match.end() :])
    for index, char in enumerate(pattern):
        escaped = index > 0 and pattern[index - 1] == "\\"
        if escaped or _inside_class(pattern, index):
            continue
        if char == "+":
            add(pattern[:index] + "*" + pattern[index + 1 :])
        elif char == "?" and index > 0 and pattern[index - 1] not in "(":
            add(pattern[:index] + pattern[index + 1 :])
    for anchor in ("\\Z", "$"):
        if pattern.endswith(anchor) and not pattern.endswith("\\" + anchor):
            add(pattern[: -len(anchor)])
    for match in _CLASS.finditer(pattern):
        items = _CLASS_ITEM.findall(match[2])
        if len(items) < 2:
            continue
        for drop in range(len(items)):
            kept = "".join(item for i, item in enumerate(items) if i != drop)
            add(pattern[: match.start(2)] + kept + pattern[match.end(2) :])
    return found


def _inside_class(pattern: str, index: int) -> bool:
    return any(m.start() < index < m.end() for m in _CLASS.finditer(pattern))


def _compiled_patterns(tree: ast.Module) -> Iterator[tuple[str, ast.Constant]]:
    """(assigned name, pattern constant) of every ``re.compile("...")`` at module level."""
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "compile"
        ):
            continue
        if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            yield ast.unparse(target), call.args[0]


def pattern_mutants(source: str, *, module: str, path: str) -> list[TableMutant]:
    """Every regex-edge mutant of one module's source, in source order."""
    tree = ast.parse(source)
    offsets = _offsets(source)
    data = source.encode()
    found = []
    for name, constant in _compiled_patterns(tree):
        start, end = _span(constant, offsets)
        before = data[start:end].decode()
        for variant in pattern_variants(str(constant.value)):
            found.append(TableMutant(module, path, name, constant.lineno, before, repr(variant), start, end))
    return found


GENERATORS = {"decorated": decorated_mutants, "patterns": pattern_mutants}


def all_mutants(kind: str, paths: list[str], root: Path = ROOT) -> list[TableMutant]:
    generate = GENERATORS[kind]
    return [
        mutant
        for path in paths
        for mutant in generate((root / path).read_text(), module=module_of(path), path=path)
    ]


def main(argv: list[str] | None = None) -> int:
    from tools.mutation import mutmut_config

    parser = argparse.ArgumentParser(
        prog="python -m tools.source_mutation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--kind", choices=tuple(GENERATORS), action="append", help="default: both")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MUTATE_JOBS", 2)))
    parser.add_argument("--module", action="append", help="only this module (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    args = parser.parse_args(argv)
    config = mutmut_config()
    for kind in args.kind or tuple(GENERATORS):
        mutants = [
            m for m in all_mutants(kind, config["only_mutate"]) if not args.module or m.module in args.module
        ]
        if args.list:
            for m in mutants:
                print(f"{kind} {m.module}:{m.line} {m.table}: {m.before} -> {m.after}")
            continue
        started = time.monotonic()
        killed = run(mutants, config["pytest_add_cli_args_test_selection"], jobs=args.jobs)
        seconds = time.monotonic() - started
        results = [
            {k: v for k, v in asdict(m).items() if k not in ("start", "end")} | {"killed": killed[m]}
            for m in mutants
        ]
        output = OUTPUTS[kind]
        output.parent.mkdir(exist_ok=True)
        output.write_text(json.dumps({"seconds": round(seconds), "mutants": results}, indent=1) + "\n")
        survived = sum(1 for m in mutants if not killed[m])
        print(
            f"{len(mutants)} {kind} mutants, {len(mutants) - survived} killed, {survived} survived, {seconds:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
