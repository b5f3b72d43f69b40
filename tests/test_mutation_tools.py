"""The tools behind ``make mutate``: naming, locating a mutation, scoring, and the table mutants.

Pure and quick: small sources and a synthetic ``mutants/`` directory, never a mutmut run.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
import textwrap
from datetime import date
from pathlib import Path

import pytest

from tools import mutation, mutation_summary, table_mutation
from tools.forked_pytest import test_batches as batches_for
from tools.mutation_summary import (
    Equivalent,
    Mutant,
    Tally,
    apply_equivalents,
    changed_lines,
    changed_region,
    error_argument_spans,
    gate,
    generated_functions,
    in_error_arguments,
    read_equivalents,
    read_mutants,
    render,
    replace_section,
    split_name,
    tally,
)

# --------------------------------------------------------------------------------------------
# tools/mutation.py: mutmut and our constructs/ source root
# --------------------------------------------------------------------------------------------


def test_mutant_names_drop_the_source_root_only() -> None:
    assert (
        mutation.module_name("constructs.cdk_neuron.catalog.x_f__mutmut_1")
        == "cdk_neuron.catalog.x_f__mutmut_1"
    )
    assert mutation.module_name("stacks.config.x__az_ids__mutmut_2") == "stacks.config.x__az_ids__mutmut_2"
    assert mutation.module_name("constructsx.a.x_f__mutmut_1") == "constructsx.a.x_f__mutmut_1"


def test_the_mutated_copy_comes_first_and_the_original_source_root_goes(tmp_path: Path) -> None:
    mutants = tmp_path / "mutants"
    original = str(tmp_path / "constructs")
    path = mutation.mutant_sys_path(mutants, ["", original, "/usr/lib/python3"])
    assert path == [str(mutants / "constructs"), "", "/usr/lib/python3"]


def _defines(module: str, name: str) -> bool:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    return any(
        (isinstance(node, ast.FunctionDef) and node.name == name)
        or (isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names))
        for node in tree.body
    )


def test_the_mutmut_functions_we_patch_are_where_we_patch_them() -> None:
    # tools/mutation.py replaces these module attributes of mutmut 3.8.1 (pinned in
    # requirements-dev.txt); an upgrade that moves them must fail here, not as "no tests" everywhere.
    assert _defines("mutmut.utils.format_utils", "get_mutant_name")
    assert _defines("mutmut.__main__", "get_mutant_name")
    assert _defines("mutmut.mutation.file_mutation", "get_mutant_name")
    assert _defines("mutmut.__main__", "setup_source_paths")


def test_changed_data_files_are_copied_into_the_mutants_directory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n')
    (tmp_path / "pkg" / "files").mkdir(parents=True)
    (tmp_path / "pkg" / "m.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "files" / "setup.sh").write_text("echo new\n")
    (tmp_path / "pkg" / "same.txt").write_text("same\n")
    mutants = tmp_path / "mutants"
    (mutants / "pkg").mkdir(parents=True)
    (mutants / "pkg" / "same.txt").write_text("same\n")
    copied = mutation.refresh_data_files(tmp_path, mutants)
    assert copied == [mutants / "pkg" / "files" / "setup.sh"]  # never .py files, never unchanged ones
    assert (mutants / "pkg" / "files" / "setup.sh").read_text() == "echo new\n"


def test_mutmut_config_is_read_from_pyproject() -> None:
    config = mutation.mutmut_config()
    assert config["source_paths"] == ["constructs/cdk_neuron", "stacks"]
    assert "stacks/config.py" in config["only_mutate"]
    assert all(path.startswith("tests/test_") for path in config["pytest_add_cli_args_test_selection"])


def test_recheck_batches_run_the_module_s_own_tests_first() -> None:
    tests = ["tests/test_catalog.py", "tests/test_config.py", "tests/test_planner.py"]
    assert batches_for("stacks.config", tests) == [
        ["tests/test_config.py"],
        ["tests/test_catalog.py", "tests/test_planner.py"],
    ]
    assert batches_for("cdk_neuron.validation", tests) == [tests]
    # A module's other test files (test_<module>_*.py) are its own too; test_config_x.py is not test_config.
    more = ["tests/test_validation.py", "tests/test_config.py", "tests/test_validation_patterns.py"]
    assert batches_for("cdk_neuron.validation", more) == [
        ["tests/test_validation_patterns.py", "tests/test_validation.py"],
        ["tests/test_config.py"],
    ]
    assert batches_for("cdk_neuron.valid", more) == [more]


# --------------------------------------------------------------------------------------------
# tools/mutation_summary.py: where a mutation is, and the scores
# --------------------------------------------------------------------------------------------

ORIGINAL = textwrap.dedent(
    """\
    def _(field, value):
        if value < 0:
            raise NeuronConfigError(field, value, "must be >= 0 (µs)")
        errors.NeuronConfigError("x", 1, "y")
        return value
    """
)


def test_changed_region_is_the_smallest_replaced_span_in_bytes() -> None:
    assert changed_region("abcdef", "abXYef") == (2, 4)
    assert changed_region("f(a, b)", "f(b)") == (2, 5)  # "a, " removed
    assert changed_region("abc", "abc") == (3, 3)
    # Offsets are bytes: "µ" takes two.
    assert changed_region("µa", "µb") == (2, 3)


def test_error_argument_spans_cover_every_neuron_config_error_call() -> None:
    spans = error_argument_spans(ORIGINAL)
    data = ORIGINAL.encode()
    assert [data[start:end].decode() for start, end in spans] == [
        'field, value, "must be >= 0 (µs)"',
        '"x", 1, "y"',
    ]


@pytest.mark.parametrize(
    ("mutant", "inside"),
    [
        (ORIGINAL.replace("field, value, ", "field, None, "), True),
        (ORIGINAL.replace('"must be >= 0 (µs)"', '"XXmust be >= 0 (µs)XX"'), True),
        (ORIGINAL.replace("(field, value, ", "(value, "), True),
        (ORIGINAL.replace('"x", 1, "y"', '"x", 2, "y"'), True),
        (ORIGINAL.replace("value < 0", "value <= 0"), False),
        (ORIGINAL.replace("return value", "return None"), False),
    ],
)
def test_a_mutation_is_an_error_argument_only_inside_the_parentheses(mutant: str, inside: bool) -> None:
    assert in_error_arguments(ORIGINAL, mutant) is inside


def test_changed_lines_are_stripped_and_joined() -> None:
    assert changed_lines("a\n  b\nc", "a\n  B\nc") == ("b", "B")
    assert changed_lines("a\nb\nc", "a\nc") == ("b", "")


def test_split_name_of_functions_and_methods() -> None:
    assert split_name("cdk_neuron.catalog.x_get_instance__mutmut_3") == (
        "cdk_neuron.catalog",
        "get_instance",
        "x_get_instance__mutmut_3",
    )
    assert split_name("stacks.config.xǁ_SectionǁGet__mutmut_12") == (
        "stacks.config",
        "_Section.Get",
        "xǁ_SectionǁGet__mutmut_12",
    )
    # A dunder method keeps its underscores.
    assert split_name("m.xǁAǁ__post_init____mutmut_1")[1] == "A.__post_init__"


MUTATED_FILE = textwrap.dedent(
    """\
    def x_f__mutmut_orig(value):
        return value + 1
    def x_f__mutmut_1(value):
        return value - 1
    def x_f__mutmut_2(value):
        raise NeuronConfigError("f", None, "fix")
    class A:
        def xǁAǁg__mutmut_orig(self):
            return 1
        def xǁAǁg__mutmut_1(self):
            return 2
    """
)


def test_generated_functions_are_read_dedented_with_one_name() -> None:
    functions = generated_functions(MUTATED_FILE)
    assert set(functions) == {
        "x_f__mutmut_orig",
        "x_f__mutmut_1",
        "x_f__mutmut_2",
        "xǁAǁg__mutmut_orig",
        "xǁAǁg__mutmut_1",
    }
    assert functions["xǁAǁg__mutmut_1"] == "def _(self):\n    return 2"


def write_run(root: Path, codes: dict[str, int | None], recheck: dict[str, bool] | None = None) -> Path:
    mutants = root / "mutants"
    (mutants / "pkg").mkdir(parents=True)
    (mutants / "pkg" / "m.py").write_text(MUTATED_FILE)
    (mutants / "pkg" / "m.py.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    if recheck is not None:
        (mutants / "recheck.json").write_text(json.dumps(recheck))
    return mutants


def test_read_mutants_applies_the_recheck(tmp_path: Path) -> None:
    mutants = write_run(
        tmp_path,
        {"pkg.m.x_f__mutmut_1": 0, "pkg.m.x_f__mutmut_2": 33, "pkg.m.xǁAǁg__mutmut_1": 1},
        recheck={"pkg.m.x_f__mutmut_2": True},
    )
    found = {m.name: m for m in read_mutants(mutants)}
    assert found["pkg.m.x_f__mutmut_1"].status == "survived"
    assert (found["pkg.m.x_f__mutmut_1"].before, found["pkg.m.x_f__mutmut_1"].after) == (
        "return value + 1",
        "return value - 1",
    )
    # "no tests" in mutmut, killed in a fresh interpreter.
    assert (found["pkg.m.x_f__mutmut_2"].mutmut_status, found["pkg.m.x_f__mutmut_2"].status) == (
        "no tests",
        "killed",
    )
    assert found["pkg.m.xǁAǁg__mutmut_1"].status == "killed"
    assert found["pkg.m.xǁAǁg__mutmut_1"].function == "A.g"
    assert [m.error_argument for m in found.values()] == [False, False, False]


def test_timeouts_and_crashes_kill_and_unchecked_mutants_survive(tmp_path: Path) -> None:
    mutants = write_run(tmp_path, {"pkg.m.x_f__mutmut_1": 36, "pkg.m.x_f__mutmut_2": None})
    statuses = {m.name: m.status for m in read_mutants(mutants)}
    assert statuses == {"pkg.m.x_f__mutmut_1": "killed", "pkg.m.x_f__mutmut_2": "survived"}


def mutant(status: str, *, before: str = "a", after: str = "b", error_argument: bool = False) -> Mutant:
    return Mutant(
        name="m.x_f__mutmut_1",
        module="m",
        function="f",
        status=status,
        mutmut_status=status,
        before=before,
        after=after,
        error_argument=error_argument,
    )


def test_equivalents_match_survivors_by_text_and_stale_ones_are_returned() -> None:
    entries = [
        Equivalent("m.f", "a", "b", "a and b are the same here"),
        Equivalent("m.f", "c", "d", "no longer in the code"),
    ]
    marked, stale = apply_equivalents([mutant("survived"), mutant("killed", before="c", after="d")], entries)
    assert [m.status for m in marked] == ["equivalent", "killed"]
    assert marked[0].reason == "a and b are the same here"
    # The second entry matches only a killed mutant: a test can tell it apart, so it is stale.
    assert stale == [entries[1]]


def test_equivalent_entries_need_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text('[[mutant]]\nfunction = "m.f"\nbefore = "a"\nafter = "b"\nreason = " "\n')
    with pytest.raises(ValueError, match="needs function, before, after and a reason"):
        read_equivalents(path)
    path.write_text('[[mutant]]\nfunction = "m.f"\nbefore = " a "\nafter = "b"\nreason = "r"\n')
    assert read_equivalents(path) == [Equivalent("m.f", "a", "b", "r")]
    assert read_equivalents(tmp_path / "missing.toml") == []


def test_the_committed_equivalent_list_is_well_formed() -> None:
    for entry in read_equivalents():
        assert entry.function.count(".") >= 2 and entry.reason.strip()


def test_scores_leave_equivalent_mutants_out() -> None:
    t = tally([mutant("killed"), mutant("killed"), mutant("survived"), mutant("equivalent")])
    assert t == Tally(mutants=4, killed=2, survived=1, equivalent=1)
    assert t.score == pytest.approx(2 / 3)
    assert Tally(mutants=1, equivalent=1).score is None


def test_the_gate_holds_the_floors() -> None:
    passing = [mutant("killed")] * 19 + [mutant("survived")]  # 95 %
    assert gate(passing, []) == []
    failing = [mutant("killed")] * 18 + [mutant("survived")] * 2  # 90 %
    assert gate(failing, []) == ["behaviour score 90.0 % is below 95.0 %"]
    errors = [mutant("killed", error_argument=True)] * 8 + [mutant("survived", error_argument=True)] * 2
    assert "error-argument score 80.0 % is below 90.0 %" in gate([mutant("killed")] * 200 + errors, [])
    assert gate(passing, [Equivalent("m.f", "a", "b", "r")]) == [
        "1 stale equivalence entries in mutation/equivalent.toml"
    ]


def test_render_reports_scores_survivors_tables_and_stale_entries() -> None:
    mutants = [
        mutant("killed", error_argument=True),
        mutant("survived", before="x < 1", after="x <= 1"),
        mutant("equivalent"),
    ]
    tables = {
        "mutants": [
            {"module": "m", "line": 3, "before": "4", "after": "5", "killed": True},
            {"module": "m", "line": 4, "before": '"a"', "after": "'XXaXX'", "killed": False},
        ]
    }
    text = render(
        mutants,
        [Equivalent("m.g", "c", "d", "r")],
        tables=tables,
        run={
            "jobs": 2,
            "wall_seconds": 3600,
            "mutmut_seconds": 1800,
            "recheck_seconds": 600,
            "tables_seconds": 1200,
        },
        measured=date(2026, 12, 1),
        mutmut_version="3.8.1",
    )
    assert text.startswith(
        "Measured 2026-12-01 with mutmut 3.8.1, `make mutate` on 2 workers: 60 min wall time"
    )
    assert "| `m` | 3 | 1 | 1 | 1 | 50.0 % |" in text
    assert (
        "Error-argument score (1 mutants inside the arguments of a `NeuronConfigError(...)`): **100.0 %**"
        in text
    )
    assert "| **all tables** | **2** | **1** | **1** | **50.0 %** |" in text
    assert "- `m` line 4: `\"a\"` -> `'XXaXX'`" in text
    assert "- `m.x_f__mutmut_1`: `x < 1` -> `x <= 1`" in text
    assert "**Stale equivalence entries (1)**" in text


def test_render_without_survivors_says_so() -> None:
    text = render(
        [mutant("killed")], [], tables=None, run={}, measured=date(2026, 12, 1), mutmut_version="3.8.1"
    )
    assert "No surviving mutant." in text
    assert "Data tables" not in text and "Stale" not in text


def test_replace_section_rewrites_only_between_the_markers() -> None:
    doc = f"head\n{mutation_summary.BEGIN}\nold\n{mutation_summary.END}\ntail\n"
    assert (
        replace_section(doc, "new") == f"head\n{mutation_summary.BEGIN}\nnew\n{mutation_summary.END}\ntail\n"
    )
    with pytest.raises(ValueError, match="needs the markers"):
        replace_section("no markers", "new")


def test_the_committed_summary_has_its_markers() -> None:
    text = mutation_summary.DOC.read_text()
    assert text.count(mutation_summary.BEGIN) == 1 and text.count(mutation_summary.END) == 1


def test_also_copy_names_top_level_files_or_folders_mutmut_can_copy() -> None:
    """mutmut 3.8.1 copies a file entry to mutants/<path> without creating its folder (a
    FileNotFoundError before any mutant runs): files below the top level go in by their folder."""
    for entry in mutation.mutmut_config()["also_copy"]:
        path = mutation.ROOT / entry
        assert path.exists(), entry
        assert path.is_dir() or "/" not in entry, entry
    # The pure tests read these; mutmut runs them from mutants/.
    copied = mutation.mutmut_config()["also_copy"]
    assert "cdk.json" in copied and "docs" in copied


def test_the_results_name_every_mutated_module() -> None:
    """Review-24 finding 6: a module added to ``only_mutate`` (economics) must have a row in the results,
    generated or dated by hand, or the page claims a measurement that was never made."""
    text = mutation_summary.DOC.read_text()
    results = text[text.index("## Results") :]
    for path in mutation.mutmut_config()["only_mutate"]:
        module = path.removesuffix(".py").replace("/", ".").removeprefix("constructs.")
        assert re.search(rf"^\| `{re.escape(module)}` \| \d+ \| \d+ \|", results, re.MULTILINE), module


# --------------------------------------------------------------------------------------------
# tools/table_mutation.py
# --------------------------------------------------------------------------------------------

TABLE_SOURCE = textwrap.dedent(
    """\
    import re
    from typing import Literal, TypeVar
    Kind = Literal["a", "b"]
    _T = TypeVar("_T")
    __all__ = ["SIZES"]
    PATTERN = re.compile(r"^x$")
    NOTE = "a note with spaces"
    SIZES = {"fp32": 4, "bf16": 2.5, "on": True, "neg": -1, "big": 2_000_000}
    SOURCES = {"K": "citation"}
    LABEL = f"{SIZES}"

    class Config:
        days: int = 35
        name = "x"

    def f():
        return 7
    """
)


def test_table_mutants_are_the_literals_of_data_assignments() -> None:
    found = table_mutation.table_mutants(TABLE_SOURCE, module="pkg.m", path="pkg/m.py")
    assert [(m.table, m.before, m.after) for m in found] == [
        ("SIZES", '"fp32"', "'XXfp32XX'"),
        ("SIZES", "4", "5"),
        ("SIZES", '"bf16"', "'XXbf16XX'"),
        ("SIZES", "2.5", "3.5"),
        ("SIZES", '"on"', "'XXonXX'"),
        ("SIZES", "True", "False"),
        ("SIZES", '"neg"', "'XXnegXX'"),
        ("SIZES", "1", "2"),
        ("SIZES", '"big"', "'XXbigXX'"),
        ("SIZES", "2_000_000", "2002000"),  # a million or more grows by 0.1 %
        ("Config.days", "35", "36"),
        ("Config.name", '"x"', "'XXxXX'"),
    ]
    assert {m.line for m in found if m.table == "SIZES"} == {8}


def test_applying_a_table_mutant_changes_exactly_that_literal() -> None:
    found = table_mutation.table_mutants(TABLE_SOURCE, module="pkg.m", path="pkg/m.py")
    mutated = table_mutation.apply(TABLE_SOURCE, found[3])
    assert mutated == TABLE_SOURCE.replace('"bf16": 2.5', '"bf16": 3.5')


def test_module_of_a_path_under_a_source_root() -> None:
    assert table_mutation.module_of("constructs/cdk_neuron/catalog.py") == "cdk_neuron.catalog"
    assert table_mutation.module_of("stacks/config.py") == "stacks.config"


def test_the_import_hook_loads_the_mutated_source(tmp_path: Path) -> None:
    path = tmp_path / "table_hook_probe.py"
    path.write_text("SIZE = 3\n")
    hook = table_mutation._MutatedModule("table_hook_probe", path, "SIZE = 4\n")
    sys.meta_path.insert(0, hook)
    try:
        import table_hook_probe  # type: ignore[import-not-found]

        assert table_hook_probe.SIZE == 4
        assert table_hook_probe.__file__ == str(path)
        assert path.read_text() == "SIZE = 3\n"  # the file is never written
    finally:
        sys.meta_path.remove(hook)
        sys.modules.pop("table_hook_probe", None)


def test_every_pure_module_has_table_mutants() -> None:
    modules = {m.module for m in table_mutation.all_mutants(mutation.mutmut_config()["only_mutate"])}
    assert modules == {
        "cdk_neuron.catalog",
        "cdk_neuron.planner",
        "cdk_neuron.checkpoint_advisor",
        "cdk_neuron.validation",
        "cdk_neuron.economics",
        "stacks.config",
    }


def test_scores_are_rounded_down_so_a_survivor_never_shows_as_100() -> None:
    assert mutation_summary.percent(4161 / 4162) == "99.9 %"
    assert mutation_summary.percent(1.0) == "100.0 %"
    assert mutation_summary.percent(0.29) == "29.0 %"  # 1000 x 0.29 is 289.99999999999997 in binary
    assert mutation_summary.percent(None) == "n/a"
