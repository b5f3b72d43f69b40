"""``make mutate``: mutation testing of the pure core with mutmut, each survivor re-run in a fresh
interpreter, then the summary (tools/mutation_summary.py).

    python -m tools.mutation all        # make mutate: a clean run of everything below
    python -m tools.mutation run        # mutmut run (cached: only changed functions are re-tested)
    python -m tools.mutation recheck    # every mutant not killed, again, in a fresh interpreter
    python -m tools.table_mutation      # the data tables (mutmut mutates only inside functions)
    python -m tools.source_mutation     # decorated functions (mutmut skips them) and regex edges
    python -m tools.mutation_summary --write   # the summary into docs/mutation-testing.md

What is mutated and which tests run is ``[tool.mutmut]`` in pyproject.toml. Two things mutmut 3
does not know about this repository are set here:

- **The source root.** mutmut names a mutant after its file's path (``constructs/cdk_neuron/x.py``
  -> ``constructs.cdk_neuron.x``) and only strips a ``src.`` prefix, while the trampoline it puts in
  each function reports the module the tests imported (``cdk_neuron.x``). Without the mapping below
  every mutant is "no tests". And the editable install puts the *original* ``constructs/`` on
  ``sys.path``: mutmut's copy in ``mutants/constructs`` has to come first, or the tests never see a
  mutant at all.
- **Fresh interpreters.** mutmut forks every mutant's test run from a process that already imported
  the package and ran the suite, so anything computed at import time or cached was computed by the
  original code. ``recheck`` runs each survivor (and each "no tests" mutant) again in a process that
  has never imported the project, with ``MUTANT_UNDER_TEST`` set before the first import, against
  the whole pure test selection, and records the verdict in ``mutants/recheck.json``, which the
  summary reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import tomllib

from tools.forked_pytest import run_forked, test_batches

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
RECHECK_FILE = MUTANTS / "recheck.json"
# The source root of the library (src layout, see pyproject.toml [tool.setuptools.packages.find]).
SOURCE_ROOT = "constructs"
# mutmut's exit-code meaning (mutmut.stats.status_by_exit_code, 3.8.1): the statuses that are not a kill.
NOT_KILLED = ("survived", "no tests", "suspicious")
DEFAULT_JOBS = 2


def mutmut_config(root: Path = ROOT) -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    return config


def module_name(mutmut_name: str) -> str:
    """The name the tests import a mutant's module by: mutmut's path-derived name without the source root.

    >>> module_name("constructs.cdk_neuron.catalog.x_get_instance__mutmut_3")
    'cdk_neuron.catalog.x_get_instance__mutmut_3'
    >>> module_name("stacks.config.x__az_ids__mutmut_1")
    'stacks.config.x__az_ids__mutmut_1'
    """
    prefix = SOURCE_ROOT + "."
    return mutmut_name[len(prefix) :] if mutmut_name.startswith(prefix) else mutmut_name


def mutant_sys_path(mutants: Path, path: Sequence[str]) -> list[str]:
    """``path`` with the mutated source root first and the original source root removed."""
    original = (mutants.parent / SOURCE_ROOT).resolve()
    kept = [p for p in path if not p or Path(p).resolve() != original]
    return [str(mutants / SOURCE_ROOT), *kept]


def _patch_mutmut() -> None:
    """Teach mutmut 3.8.1 the constructs/ source root (see the module docstring)."""
    import mutmut.__main__ as main
    import mutmut.mutation.file_mutation as file_mutation
    import mutmut.utils.format_utils as format_utils

    original_name: Callable[[Path, str], str] = format_utils.get_mutant_name
    original_setup: Callable[[], None] = getattr(main, "setup_source_paths")  # noqa: B009 (not re-exported)

    def get_mutant_name(relative_source_path: Path, mutant_method_name: str) -> str:
        return module_name(original_name(relative_source_path, mutant_method_name))

    def setup_source_paths() -> None:
        original_setup()
        sys.path[:] = mutant_sys_path(MUTANTS.resolve(), sys.path)

    for module in (format_utils, main, file_mutation):
        setattr(module, "get_mutant_name", get_mutant_name)  # noqa: B010 (each module's own binding)
    setattr(main, "setup_source_paths", setup_source_paths)  # noqa: B010


def refresh_data_files(root: Path = ROOT, mutants: Path = MUTANTS) -> list[Path]:
    """Copy every changed non-Python file of the source paths into ``mutants/``; return them.

    mutmut re-copies Python files on each run but copies other files (the node programs the reach
    model reads, package data) only once, so an incremental run after a pull would test against
    stale ones.
    """
    copied = []
    for source_path in mutmut_config(root)["source_paths"]:
        for path in sorted((root / source_path).rglob("*")):
            if not path.is_file() or path.suffix == ".py" or "__pycache__" in path.parts:
                continue
            target = mutants / path.relative_to(root)
            if target.exists() and target.read_bytes() == path.read_bytes():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied.append(target)
    return copied


def run(jobs: int, names: Sequence[str] = ()) -> None:
    """``mutmut run`` with the patches; results land in mutants/**/*.meta."""
    os.chdir(ROOT)
    if MUTANTS.exists():
        refresh_data_files()
    _patch_mutmut()
    import mutmut.__main__ as main

    main._run(list(names), jobs)


# -- recheck ---------------------------------------------------------------------------------------


def load_statuses(mutants: Path = MUTANTS) -> dict[str, str]:
    """Every mutant's status as mutmut recorded it (mutants/**/*.py.meta)."""
    from mutmut.stats import status_by_exit_code

    statuses: dict[str, str] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        for name, code in data["exit_code_by_key"].items():
            statuses[name] = status_by_exit_code[code]
    return statuses


def recheck(jobs: int, mutants: Path = MUTANTS) -> dict[str, bool]:
    """Run every mutant mutmut did not kill again in a fresh process; write ``recheck.json``.

    Each run is a child of a process that has never imported the project (tools/forked_pytest.py):
    ``MUTANT_UNDER_TEST`` is set before the mutated copy in ``mutants/`` is first imported, so
    import-time code runs the mutant too. The whole pure test selection runs, not only the tests
    mutmut associated with the function: a table built at import time is read by tests that never
    call the function that built it.
    """
    statuses = load_statuses(mutants)
    todo = sorted(name for name, status in statuses.items() if status in NOT_KILLED)
    config = mutmut_config()
    tests: list[str] = config["pytest_add_cli_args_test_selection"]
    mutants = mutants.resolve()

    def install(name: str) -> None:
        os.chdir(mutants)
        os.environ["MUTANT_UNDER_TEST"] = name
        os.environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
        sys.path[:] = mutant_sys_path(mutants, [str(mutants), *sys.path])

    started = time.monotonic()
    killed = run_forked(
        todo,
        jobs=jobs,
        prepare=install,
        batches=lambda name: test_batches(name.rpartition(".")[0], tests),
        describe=str,
        extra_args=config.get("pytest_add_cli_args", []),
    )
    (mutants / RECHECK_FILE.name).write_text(json.dumps(killed, indent=1, sort_keys=True) + "\n")
    print(f"rechecked {len(todo)} mutants in {time.monotonic() - started:.0f} s")
    return killed


def measure_all(jobs: int) -> int:
    """What ``make mutate`` does: a clean measurement, each stage in its own interpreter.

    mutmut leaves its mutated copy first on ``sys.path`` and its state in the process, so the
    recheck, the table mutation (which must import the original sources) and the summary each
    start fresh.
    """
    shutil.rmtree(MUTANTS, ignore_errors=True)
    timings: dict[str, float] = {"jobs": jobs}
    stages = {
        "mutmut_seconds": [sys.executable, "-m", "tools.mutation", "run", f"--jobs={jobs}"],
        "recheck_seconds": [sys.executable, "-m", "tools.mutation", "recheck", f"--jobs={jobs}"],
        "tables_seconds": [sys.executable, "-m", "tools.table_mutation", f"--jobs={jobs}"],
        "sources_seconds": [sys.executable, "-m", "tools.source_mutation", f"--jobs={jobs}"],
    }
    started = time.monotonic()
    for key, command in stages.items():
        stage_started = time.monotonic()
        subprocess.run(command, cwd=ROOT, check=True)
        timings[key] = round(time.monotonic() - stage_started)
    timings["wall_seconds"] = round(time.monotonic() - started)
    (MUTANTS / "run.json").write_text(json.dumps(timings, indent=1) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "tools.mutation_summary", "--write"], cwd=ROOT, check=False
    ).returncode


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "recheck", "all"))
    parser.add_argument("names", nargs="*", help="mutant names or globs (run only)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MUTATE_JOBS", DEFAULT_JOBS)))
    args = parser.parse_intermixed_args(list(argv) if argv is not None else None)
    if args.command == "run":
        run(args.jobs, args.names)
    elif args.command == "recheck":
        recheck(args.jobs)
    else:
        return measure_all(args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
