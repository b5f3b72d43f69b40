"""Offline verification of the committed integ snapshots: the integ runner's snapshot mode, here.

Each suite's snapshot is ``tests/integ/integ_<suite>.py.snapshot/``: its cloud assembly as synthesis
writes it, less the asset directories, in the layout ``integ-runner`` keeps. Verifying synthesizes the
suite again and compares every file, JSON against JSON. Values that change on every synthesis without
changing what deploys are masked first: asset hashes (as ``integ-runner`` ignores asset changes
unless ``diffAssets``), the ``salt`` every ``AwsApiCall`` carries so CloudFormation re-runs it (and
the ids derived from it), and the jsii kernel's temporary directory in stack traces.
So a construct change that changes a template is a failed verification until the snapshot is updated
(``make integ-snapshots``) and the change is reviewed in the diff.

Why not ``integ-runner`` itself: its newest release (2.197.10) reads cloud assemblies up to schema
53, and aws-cdk-lib 2.275.0 writes schema 55 (docs/integ.md, "Why not integ-runner").
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SUITE_DIR = Path(__file__).resolve().parents[1]
_HASH = re.compile(r"[0-9a-f]{64}")
# Ids integ-tests-alpha derives from an assertion's properties, which include the salt.
_SALTED_ID = re.compile(r"[0-9a-f]{32}")
# The jsii kernel unpacks aws-cdk-lib into a new temporary directory on every run; stack traces in
# the metadata name it.
_KERNEL_DIR = re.compile(r"jsii-kernel-[A-Za-z0-9]+")
# Asset publishing destinations are named after the asset's hash.
_DESTINATION = re.compile(r"(current_account-[a-z0-9-]+)-[0-9a-f]{8}$")
# A HyperPod cluster's lifecycle prefix is a hash of its files (compared themselves) and of its asset
# hashes (masked above): a change to any node program in the bundle would move it.
_LIFECYCLE_PREFIX = re.compile(r"lifecycle/[0-9a-f]{16}/")
_SKIPPED_DIRS = ("asset.", ".cache")


def suite_files() -> list[Path]:
    return sorted(SUITE_DIR.glob("integ_*.py"))


def suite_name(path: Path) -> str:
    return path.stem.removeprefix("integ_")


def suite_file(name: str) -> Path:
    path = SUITE_DIR / f"integ_{name}.py"
    if not path.exists():
        known = ", ".join(suite_name(p) for p in suite_files())
        raise SystemExit(f"no suite {name!r}; suites: {known}")
    return path


def snapshot_dir(path: Path) -> Path:
    return path.with_name(path.name + ".snapshot")


def synthesize(path: Path, outdir: Path) -> Path:
    """Synthesize suite ``path`` into ``outdir`` in this process, with the default settings."""
    if str(SUITE_DIR) not in sys.path:
        sys.path.insert(0, str(SUITE_DIR))
    from integ_support.settings import Settings
    from integ_support.stacks import integ_app

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = integ_app(outdir=str(outdir))
    module.build(app, Settings())
    app.synth()
    return outdir


def snapshot_files(assembly: Path) -> list[str]:
    """The files of an assembly that belong in a snapshot (no asset directories)."""
    return sorted(p.name for p in assembly.iterdir() if p.is_file() and not p.name.startswith(_SKIPPED_DIRS))


def _text(value: str) -> str:
    value = _KERNEL_DIR.sub("jsii-kernel", _SALTED_ID.sub("<id>", _HASH.sub("<hash>", value)))
    value = _LIFECYCLE_PREFIX.sub("lifecycle/<hash>/", value)
    return _DESTINATION.sub(r"\1-<hash>", value)


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            _text(k): ("<salt>" if k == "salt" and isinstance(v, str) else _masked(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, str):
        return _text(value)
    return value


def normalized(path: Path) -> Any:
    text = path.read_text()
    try:
        return _masked(json.loads(text))
    except json.JSONDecodeError:
        return _text(text)


def _paths(expected: Any, actual: Any, where: str = "") -> Iterator[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            if key not in actual:
                yield f"{where}/{key}: only in the snapshot"
            elif key not in expected:
                yield f"{where}/{key}: only in the new synthesis"
            else:
                yield from _paths(expected[key], actual[key], f"{where}/{key}")
    elif isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            yield from _paths(e, a, f"{where}/{index}")
    elif expected != actual:
        yield f"{where or '/'}: {json.dumps(expected)[:120]} -> {json.dumps(actual)[:120]}"


def _in_snapshot_account(value: Any, account: str | None) -> Any:
    """``value`` with a run's ``account`` written as the snapshots' (it names the artifact buckets)."""
    from integ_support.settings import SNAPSHOT_ACCOUNT

    if account is None or account == SNAPSHOT_ACCOUNT:
        return value
    return json.loads(json.dumps(value).replace(account, SNAPSHOT_ACCOUNT))


def differences(snapshot: Path, assembly: Path, limit: int = 25, *, account: str | None = None) -> list[str]:
    """What differs between a committed snapshot and a new synthesis (empty when they agree).

    ``account``: the account the synthesis was made for; it is compared as the snapshots' account.
    """
    if not snapshot.is_dir():
        return [f"{snapshot.name}: no snapshot; create it with `make integ-snapshots`"]
    found: list[str] = []
    expected, actual = set(snapshot_files(snapshot)), set(snapshot_files(assembly))
    found += [f"{name}: only in the snapshot" for name in sorted(expected - actual)]
    found += [f"{name}: only in the new synthesis" for name in sorted(actual - expected)]
    for name in sorted(expected & actual):
        actual_value = _in_snapshot_account(normalized(assembly / name), account)
        found += [f"{name} {change}" for change in _paths(normalized(snapshot / name), actual_value)]
    return found[:limit] + ([f"... and {len(found) - limit} more"] if len(found) > limit else [])


def update(path: Path, assembly: Path) -> list[str]:
    """Write the snapshot of ``path`` from ``assembly``; a file equal once masked is left as it is."""
    target = snapshot_dir(path)
    target.mkdir(exist_ok=True)
    changed: list[str] = []
    keep = set(snapshot_files(assembly))
    for name in snapshot_files(target):
        if name not in keep:
            (target / name).unlink()
            changed.append(name)
    for name in sorted(keep):
        old = target / name
        if old.exists() and normalized(old) == normalized(assembly / name):
            continue
        shutil.copyfile(assembly / name, old)
        changed.append(name)
    return changed


def main(argv: list[str]) -> int:
    """``verify [SUITE...]`` or ``update [SUITE...]`` (all suites when none is named)."""
    if not argv or argv[0] not in ("verify", "update"):
        print("usage: snapshots.py verify|update [SUITE ...]", file=sys.stderr)
        return 2
    files = [suite_file(name) for name in argv[1:]] or suite_files()
    failed = 0
    for path in files:
        with tempfile.TemporaryDirectory(prefix="cdk-neuron-integ-") as tmp:
            assembly = synthesize(path, Path(tmp) / "out")
            if argv[0] == "update":
                changed = update(path, assembly)
                print(
                    f"{suite_name(path)}: {len(changed)} file(s) updated"
                    + (f": {', '.join(changed)}" if changed else "")
                )
                continue
            diffs = differences(snapshot_dir(path), assembly)
            print(f"{suite_name(path)}: {'snapshot matches' if not diffs else 'CHANGED'}")
            for line in diffs:
                print(f"  {line}")
            failed += bool(diffs)
    if failed:
        print(
            f"{failed} suite(s) changed: review the diff, then `make integ-snapshots` to accept it",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(SUITE_DIR))
    raise SystemExit(main(sys.argv[1:]))
