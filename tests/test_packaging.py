"""The published wheel must contain the library and nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import cdk_neuron
from cdk_support import REPO_ROOT


def _library_files() -> set[str]:
    root = REPO_ROOT / "constructs"
    files = {
        p.relative_to(root).as_posix()
        for p in (root / "cdk_neuron").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    return files


def test_wheel_contains_exactly_the_library(tmp_path: Path) -> None:
    # setuptools copies into build/lib and never deletes there: a module removed from the source
    # would still ship from an earlier build.
    shutil.rmtree(REPO_ROOT / "build" / "lib", ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(REPO_ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("cdk_neuron-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    payload = {n for n in names if not n.startswith("cdk_neuron-")}
    assert payload == _library_files()
    assert "cdk_neuron/py.typed" in payload
    # The node programs and the EFA mirror function ship as files, for CDK to publish as assets.
    assert "cdk_neuron/node_programs/files/serving/units/cdk-neuron-replica@.service" in payload
    assert "cdk_neuron/node_programs/files/monitoring/neuron-monitor.json" in payload
    assert "cdk_neuron/custom_resources/efa_mirror.py" in payload
    # Each construct package's README (purpose, examples, API tables) ships with it.
    for package in ("training", "serving", "storage", "monitoring"):
        assert f"cdk_neuron/{package}/README.md" in payload
    assert not any(n.startswith(("stacks/", "tests/", "examples/", "bench/")) or n == "app.py" for n in names)
    metadata = next(n for n in names if n.endswith("METADATA"))
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(metadata).decode()
    assert "Name: cdk-neuron" in text
    assert f"Version: {cdk_neuron.__version__}" in text  # pyproject.toml agrees (test_release.py)
    # The deploy rules ship in the wheel, but cfn-lint is only the `lint` extra, never a runtime dependency.
    assert "cdk_neuron/deploy_rules/batch.py" in payload
    assert "Provides-Extra: lint" in text
    cfn_lint = [line for line in text.splitlines() if line.startswith("Requires-Dist: cfn-lint")]
    assert cfn_lint and all('extra == "lint"' in line or 'extra == "dev"' in line for line in cfn_lint), (
        cfn_lint
    )
    # The CLI's table output and completion scripts are the `cli` extra: construct users do not get them.
    assert "Provides-Extra: cli" in text
    for package in ("rich", "shtab"):
        required = [line for line in text.splitlines() if line.startswith(f"Requires-Dist: {package}")]
        assert required and all('extra == "cli"' in line for line in required), required
    assert "License-Expression: Apache-2.0" in text
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    with zipfile.ZipFile(wheel) as zf:
        assert "cdk-neuron = cdk_neuron.cli.main:main" in zf.read(entry_points).decode()


def test_the_library_holds_no_app_code() -> None:
    """The app (app.py, stacks/, its cdk.json schema) uses the library; the library never uses the app.

    No module of the wheel imports ``stacks`` or ``app``, reads the app's ``environments`` context or
    names its stacks; the CLI reaches an app's settings only through the loader cdk.json names.
    """
    import ast

    library = REPO_ROOT / "constructs" / "cdk_neuron"
    assert not (library / "config.py").exists()
    for path in sorted(library.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                roots = set()
            assert not roots & {"stacks", "app", "tools"}, f"{path}: imports {roots}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                assert "context.environments" not in text and "context']['environments" not in text, path
                assert "-Training" not in text and "-Serving" not in text, f"{path}: names the app's stacks"
