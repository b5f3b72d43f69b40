"""Run the pure tests once per mutant, each run in a process that has never imported the project.

The parent imports pytest and its plugins (the slow part of starting a test run) and nothing of
``cdk_neuron`` or ``stacks``; each mutant's run is a child forked from it that first installs the
mutant (``prepare``), then imports the code under test and runs the tests. For the code under test
that is a fresh interpreter: every import-time table, cache and default is computed by the mutant,
which mutmut's own runs (forked from a process that already ran the suite) cannot promise.

A child's verdict is pytest's exit code: 0 (every test passed) means the mutant survived; a failed
test, an error while collecting (the mutated module did not import) or a timeout kills it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

CHILD_TIMEOUT_SECONDS = 300
PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")

_T = TypeVar("_T", bound=Hashable)


def test_batches(module: str, tests: Sequence[str]) -> list[list[str]]:
    """The module's own test files (``cdk_neuron.validation`` -> ``tests/test_validation_*.py`` and
    ``tests/test_validation.py``), then the rest.

    Most mutants die in their module's own tests, and collecting a file or two is quick.
    """
    name = f"tests/test_{module.rpartition('.')[2]}"
    # The narrower files first (test_validation_patterns.py before test_validation.py): they are quick
    # and pin one concern, so a mutant of it dies before the broad file is even collected.
    own = [t for t in tests if t.startswith(f"{name}_")] + [t for t in tests if t == f"{name}.py"]
    rest = [t for t in tests if t not in own]
    return [own, rest] if own else [list(tests)]


def _child(
    prepare: Callable[[_T], None], item: _T, batches: Sequence[Sequence[str]], extra_args: Sequence[str]
) -> int:
    import pytest

    signal.alarm(CHILD_TIMEOUT_SECONDS)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    prepare(item)
    for batch in batches:
        code = int(pytest.main([*PYTEST_ARGS, *extra_args, *batch]))
        if code != 0:
            return code
    return 0


def run_forked(
    items: Sequence[_T],
    *,
    jobs: int,
    prepare: Callable[[_T], None],
    batches: Callable[[_T], Sequence[Sequence[str]]],
    describe: Callable[[_T], str],
    extra_args: Sequence[str] = (),
) -> dict[_T, bool]:
    """Run every item's tests in its own forked child, ``jobs`` at a time; True where they failed."""
    # Imported once here so that no child spends its time on them; never the project's modules.
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import syrupy.extensions.json  # noqa: F401

    for banned in ("cdk_neuron", "stacks"):
        if banned in sys.modules:
            raise RuntimeError(f"{banned} is already imported: a forked child would not start fresh")
    killed: dict[_T, bool] = {}
    running: dict[int, _T] = {}
    queue = list(items)
    while queue or running:
        while queue and len(running) < jobs:
            item = queue.pop(0)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:  # the child never returns into this loop
                code = 1
                try:
                    code = _child(prepare, item, batches(item), extra_args)
                finally:
                    os._exit(code)
            running[pid] = item
        pid, status = os.wait()
        item = running.pop(pid)
        killed[item] = not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        print(
            f"{len(killed)}/{len(items)} {'killed  ' if killed[item] else 'survived'} {describe(item)}",
            flush=True,
        )
    return killed
