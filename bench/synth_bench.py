"""Synthesis benchmark: the whole app against an empty-stack floor, plus the test suite's wall time.

Each sample is a fresh interpreter (``python app.py`` / ``python bench/floor_app.py``) started the
way the CDK CLI starts the app: context from cdk.json in ``CDK_CONTEXT_JSON`` and a new, empty
output directory in ``CDK_OUTDIR`` (the built-in validator hashes the whole outdir, so a stale one
would slow it down). ``CDK_VALIDATION`` is passed through unchanged to both. Samples alternate
app/floor, and the order flips every round, so load from other processes hits both alike.

Goals: median(app) / median(floor) <= 1.5; the test suite under 60 s on a 2-core machine.

    python bench/synth_bench.py [--rounds 5] [--skip-tests]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATIO_GOAL = 1.5
SUITE_GOAL_SECONDS = 60.0


def _environment(context: dict[str, object], outdir: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CDK_CONTEXT_JSON"] = json.dumps(context)
    env["CDK_OUTDIR"] = outdir
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env.pop("CDK_DEFAULT_ACCOUNT", None)  # both synthesize the no-credentials path
    return env


def _time_synth(script: str, context: dict[str, object]) -> float:
    with tempfile.TemporaryDirectory(prefix="cdk-bench-") as outdir:
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, script],
            cwd=ROOT,
            env=_environment(context, outdir),
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{script} failed:\n{result.stderr[-4000:]}")
    return elapsed


def _time_tests() -> tuple[float, int]:
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "auto",
            "--dist",
            "loadfile",
        ],  # as make unit
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    last = result.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  pytest: {last[0]}")
    return elapsed, result.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="app/floor pairs to time (default 5)")
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    args = parser.parse_args(argv)

    cdk_json = json.loads((ROOT / "cdk.json").read_text())
    app_context = cdk_json["context"]
    floor_context = {k: v for k, v in app_context.items() if k != "environments"}
    runs = {"app": ("app.py", app_context), "floor": ("bench/floor_app.py", floor_context)}

    print(
        f"cores: {os.cpu_count()}  CDK_VALIDATION={os.environ.get('CDK_VALIDATION', '(unset: on)')}  "
        f"environments: {', '.join(app_context['environments'])}"
    )
    samples: dict[str, list[float]] = {"app": [], "floor": []}
    _time_synth(*runs["floor"])  # warm the file cache and node's compile cache; not counted
    for round_ in range(args.rounds):
        order = ("app", "floor") if round_ % 2 == 0 else ("floor", "app")
        for name in order:
            samples[name].append(_time_synth(*runs[name]))
        print(f"  round {round_ + 1}: app {samples['app'][-1]:.2f} s, floor {samples['floor'][-1]:.2f} s")

    app_median = statistics.median(samples["app"])
    floor_median = statistics.median(samples["floor"])
    ratio = app_median / floor_median
    print(f"synth, whole app (median of {args.rounds}): {app_median:.2f} s")
    print(f"synth, floor (median of {args.rounds}):     {floor_median:.2f} s")
    print(f"ratio: {ratio:.2f} (goal <= {RATIO_GOAL}) {'OK' if ratio <= RATIO_GOAL else 'OVER'}")

    status = 0
    if not args.skip_tests:
        suite, returncode = _time_tests()
        print(
            f"test suite wall time: {suite:.1f} s (goal < {SUITE_GOAL_SECONDS:.0f} s on 2 cores) "
            f"{'OK' if suite < SUITE_GOAL_SECONDS else 'OVER'}"
        )
        status = returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
