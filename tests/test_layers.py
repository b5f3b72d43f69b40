"""Layers point one way: no import cycle and no import back up, in the library and in the app.

Every import counts, wherever it stands: at module level, inside a function, under
``TYPE_CHECKING``, or as ``importlib.import_module("...")`` with a literal name. A name built at run
time (``import_module(f"{__name__}.{module_name}")``, as deploy_rules/__init__.py loads its rule
modules) is invisible here: harmless while it points down into the importer's own package (one
room), and the place to look first if a cycle ever slips past this test. A file imports the
module it names (``from cdk_neuron.storage import CheckpointStore`` imports the ``storage`` package's
``__init__``; ``from cdk_neuron import validation`` imports ``validation.py``).

Two graphs are checked for cycles:

- files: no two modules import each other, directly or around a loop;
- rooms (a top-level module of ``cdk_neuron``, a sub-package of it as a whole, ``stacks/`` as a
  whole): a room that imports another never imported by it, so every room stands on a floor above
  all it imports and no arrow runs back up.

The layers the guide names are asserted too: the metric vocabulary (``cdk_neuron.metrics``) at the
bottom of the constructs, the monitoring facade at the top, the pure core (catalog, planner) under
every construct, the CLI above the library and nothing in the library importing the app.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from cdk_support import REPO_ROOT

SOURCE_ROOTS = {"cdk_neuron": REPO_ROOT / "constructs" / "cdk_neuron", "stacks": REPO_ROOT / "stacks"}
# Programs that run on instances: shipped as files, never imported. (The Lambda handlers in
# custom_resources/ are plain modules that import nothing of ours: they stay in the graph.)
NOT_IMPORTED = ("cdk_neuron/node_programs/files/",)


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the library and the app."""
    modules: dict[str, Path] = {}
    for package, root in SOURCE_ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            relative = Path(package, path.relative_to(root))
            if any(relative.as_posix().startswith(prefix) for prefix in NOT_IMPORTED):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _target(name: str, known: Iterable[str]) -> str | None:
    """``name`` itself if it is a known module, else its longest known parent package."""
    names = set(known)
    while name:
        if name in names:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, source: str, known: Iterable[str], *, is_package: bool = False) -> set[str]:
    """The known modules ``source`` (the text of ``module``) imports, anywhere in the file."""
    names = set(known)
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(t for alias in node.names if (t := _target(alias.name, names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = _target(f"{base}.{alias.name}", names)
                if target != f"{base}.{alias.name}":
                    target = _target(base, names)
                if target:
                    found.add(target)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ) and (target := _target(node.args[0].value, names)):
            found.add(target)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {
        name: imports_of(name, path.read_text(), modules, is_package=path.name == "__init__.py")
        for name, path in modules.items()
    }


def room(module: str, packages: set[str]) -> str:
    """``stacks``; a sub-package of ``cdk_neuron`` as a whole; else the module itself."""
    parts = module.split(".")
    if parts[0] == "stacks":
        return "stacks"
    if len(parts) > 1 and f"cdk_neuron.{parts[1]}" in packages:
        return f"cdk_neuron.{parts[1]}"
    return module


def rooms_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    packages = {name for name, path in module_files().items() if path.name == "__init__.py"}
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = room(module, packages)
        rooms.setdefault(here, set()).update(room(t, packages) for t in targets)
        rooms[here].discard(here)
    return rooms


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(graph: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """The shortest loop inside ``component`` (breadth first from each member), first node repeated
    last: one bad import shows as the few edges to remove, not the whole component."""
    members = set(component)
    best: list[str] = []
    for start in component:
        parents: dict[str, str] = {}
        queue = [start]
        while queue:
            node = queue.pop(0)
            successors = sorted(s for s in graph.get(node, ()) if s in members)
            if start in successors:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                loop = [*reversed(path), start]
                if not best or len(loop) < len(best):
                    best = loop
                break
            for successor in successors:
                if successor not in parents and successor != start:
                    parents[successor] = node
                    queue.append(successor)
    return best


def _describe(graph: Mapping[str, set[str]], component: list[str]) -> str:
    return f"{len(component)} modules, shortest loop: " + " -> ".join(shortest_cycle(graph, component))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_file_imports_itself_around_a_loop(graph: dict[str, set[str]]) -> None:
    found = cycles(graph)
    assert not found, "import cycles: " + " | ".join(_describe(graph, c) for c in found)


def test_no_import_runs_back_up_between_rooms(graph: dict[str, set[str]]) -> None:
    rooms = rooms_graph(graph)
    found = cycles(rooms)
    assert not found, "rooms importing each other: " + " | ".join(_describe(rooms, c) for c in found)


def _importers(graph: Mapping[str, set[str]], prefix: str) -> set[str]:
    """Modules outside ``prefix`` that import a module inside it."""
    inside = {m for m in graph if m == prefix or m.startswith(prefix + ".")}
    return {m for m, targets in graph.items() if m not in inside and targets & inside}


def test_the_metric_vocabulary_is_under_every_construct(graph: dict[str, set[str]]) -> None:
    vocabulary = {m for m in graph if m.startswith("cdk_neuron.metrics")}
    assert vocabulary, "cdk_neuron.metrics is the vocabulary's package"
    above = ("cdk_neuron.storage", "cdk_neuron.training", "cdk_neuron.serving", "cdk_neuron.monitoring")
    for module in vocabulary:
        wrong = {t for t in graph[module] if t.startswith(above) or t.startswith("cdk_neuron.cli")}
        assert not wrong, f"{module} imports {sorted(wrong)}, which stand above the metric vocabulary"


def test_monitoring_is_the_facade_nothing_in_the_constructs_imports(graph: dict[str, set[str]]) -> None:
    # The package's face (cdk_neuron/__init__) names it lazily; the CLI and the app stand above it.
    allowed = {"cdk_neuron"}
    importers = {
        m
        for m in _importers(graph, "cdk_neuron.monitoring")
        if not m.startswith(("cdk_neuron.cli", "stacks"))
    }
    assert importers <= allowed, f"monitoring imported from below: {sorted(importers - allowed)}"


@pytest.mark.parametrize("pure", ["cdk_neuron.catalog", "cdk_neuron.planner", "cdk_neuron.errors"])
def test_the_pure_core_imports_no_construct(graph: dict[str, set[str]], pure: str) -> None:
    constructs = ("cdk_neuron.storage", "cdk_neuron.training", "cdk_neuron.serving", "cdk_neuron.monitoring")
    assert not {t for t in graph[pure] if t.startswith(constructs)}


def test_the_library_never_imports_the_app_or_the_cli_from_below(graph: dict[str, set[str]]) -> None:
    library = {m for m in graph if m.startswith("cdk_neuron")}
    assert not {m for m in library if any(t.startswith("stacks") for t in graph[m])}
    cli_importers = {m for m in _importers(graph, "cdk_neuron.cli") if not m.startswith("stacks")}
    assert not cli_importers, f"the CLI is imported from below: {sorted(cli_importers)}"


# -- the checker itself -----------------------------------------------------------------------------


def test_imports_inside_functions_and_under_type_checking_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.b import B\n"
        "def f():\n    from pkg import c\n    import importlib\n    importlib.import_module('pkg.d')\n"
        "from . import e\nfrom .sub import thing\n"
    )
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub"}
    assert imports_of("pkg.a", source, known) == {"pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub"}


def test_a_name_from_a_package_imports_the_package_face() -> None:
    assert imports_of("pkg.a", "from pkg.sub import Name\n", {"pkg.a", "pkg.sub", "pkg.sub.mod"}) == {
        "pkg.sub"
    }


def test_the_cycle_finder_finds_loops_and_only_loops() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert _describe(graph, ["a", "b", "c"]) == "3 modules, shortest loop: a -> b -> c -> a"


def test_rooms_are_packages_and_top_level_modules() -> None:
    packages = {"cdk_neuron.serving", "cdk_neuron.serving.engines"}
    assert room("cdk_neuron.serving.engines.tgi", packages) == "cdk_neuron.serving"
    assert room("cdk_neuron.catalog", packages) == "cdk_neuron.catalog"
    assert room("stacks.config", packages) == "stacks"


def test_every_excluded_folder_exists() -> None:
    """An exclusion naming nothing hides nothing today, and would silently hide a future folder."""
    for prefix in NOT_IMPORTED:
        package, _, rest = prefix.partition("/")
        assert (SOURCE_ROOTS[package] / rest).is_dir(), prefix


def test_a_failure_names_the_shortest_loop() -> None:
    # a -> b -> c -> a, plus a shortcut c -> b: the loop to report is b -> c -> b.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "b"}}
    (component,) = cycles(graph)
    assert shortest_cycle(graph, component) == ["b", "c", "b"]
    assert _describe(graph, component) == "3 modules, shortest loop: b -> c -> b"
