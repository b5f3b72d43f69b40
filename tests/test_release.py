"""The release workflow publishes by trusted publishing only, and refuses a release that disagrees with itself."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdk_support import REPO_ROOT
from tools import release_check
from tools.tomlcompat import tomllib

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def test_it_runs_on_version_tags_only(workflow: dict[str, Any]) -> None:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    assert workflow[True] == {"push": {"tags": ["v*.*.*"]}}


def test_only_the_publish_job_may_mint_an_oidc_token_and_no_secret_is_used(workflow: dict[str, Any]) -> None:
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert jobs["publish"]["permissions"] == {"id-token": "write"}
    assert jobs["publish"]["environment"]["name"] == "pypi"
    assert "permissions" not in jobs["build"]
    assert "secrets." not in WORKFLOW.read_text()
    assert [s.get("uses") for s in jobs["publish"]["steps"]][-1] == "pypa/gh-action-pypi-publish@release/v1"


def test_the_build_job_tests_then_checks_before_uploading(workflow: dict[str, Any]) -> None:
    runs = [step.get("run", "") for step in workflow["jobs"]["build"]["steps"]]
    test, build, check = (
        next(i for i, run in enumerate(runs) if word in run)
        for word in ("make test", "-m build", "release_check")
    )
    assert test < build < check


def fake_release(root: Path, *, version: str = "0.2.0", section: str = "## [0.2.0] - 2026-12-01") -> Path:
    (root / release_check.INIT).parent.mkdir(parents=True)
    (root / release_check.INIT).write_text(f'"""cdk-neuron."""\n\n__version__ = "{version}"\n')
    (root / "CHANGELOG.md").write_text(f"# Changelog\n\n## [Unreleased]\n\n{section}\n\n- things\n")
    dist = root / "dist"
    dist.mkdir()
    with zipfile.ZipFile(dist / f"cdk_neuron-{version}-py3-none-any.whl", "w") as wheel:
        for name in release_check.REQUIRED_IN_WHEEL:
            wheel.writestr(name + ("x.sh" if name.endswith("/") else ""), "")
    (dist / f"cdk_neuron-{version}.tar.gz").write_bytes(b"")
    return dist


def test_a_consistent_release_passes(tmp_path: Path) -> None:
    assert release_check.problems("v0.2.0", fake_release(tmp_path), tmp_path) == []


def test_a_tag_that_is_not_the_version_is_refused(tmp_path: Path) -> None:
    (problem,) = release_check.problems("v0.2.1", fake_release(tmp_path), tmp_path)
    assert problem.startswith("tag 'v0.2.1': cdk_neuron.__version__ is 0.2.0")


def test_a_release_without_its_changelog_section_is_refused(tmp_path: Path) -> None:
    (problem,) = release_check.problems("v0.2.0", fake_release(tmp_path, section=""), tmp_path)
    assert "no '## [0.2.0] - YYYY-MM-DD' section" in problem


def test_a_wheel_missing_package_data_is_refused(tmp_path: Path) -> None:
    dist = fake_release(tmp_path)
    with zipfile.ZipFile(dist / "cdk_neuron-0.2.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("cdk_neuron/__init__.py", "")
    found = release_check.problems("v0.2.0", dist, tmp_path)
    assert len(found) == len(release_check.REQUIRED_IN_WHEEL)
    assert "missing cdk_neuron/node_programs/files/" in "\n".join(found)


def test_a_stale_wheel_of_another_version_is_refused(tmp_path: Path) -> None:
    dist = fake_release(tmp_path)
    with zipfile.ZipFile(dist / "cdk_neuron-0.1.0-py3-none-any.whl", "w") as stale:
        for name in release_check.REQUIRED_IN_WHEEL:
            stale.writestr(name + ("x.sh" if name.endswith("/") else ""), "")
    (problem,) = release_check.problems("v0.2.0", dist, tmp_path)
    assert "cdk_neuron-0.1.0-py3-none-any.whl" in problem and "clean dist/ first" in problem


def test_main_prints_one_line_per_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = fake_release(tmp_path, version="0.2")
    assert release_check.main(["--tag", "v0.2", str(dist), "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "release: cdk_neuron.__version__ '0.2': not a release number; set major.minor.patch"


# -- Rough edge 12: between releases main carries a development version ---------------------------


def test_main_carries_a_development_version_that_every_pin_agrees_with() -> None:
    """0.1.0 shipped the 0.1 API; main, with the Unreleased changes, must not claim to be it."""
    import re

    import cdk_neuron

    version = release_check.project_version(REPO_ROOT)
    assert release_check.DEV_VERSION.match(version), version
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - ", (REPO_ROOT / "CHANGELOG.md").read_text(), re.M)
    assert version.rsplit(".dev", 1)[0] not in released
    assert cdk_neuron.__version__ == version
    # One source: pyproject.toml names no version of its own, it reads cdk_neuron.__version__.
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "cdk_neuron.__version__"}
    example = (REPO_ROOT / "examples" / "reserved-trn1n-sagemaker" / "requirements.txt").read_text()
    assert f"\ncdk-neuron=={version}\n" in example


def test_a_development_version_is_never_tagged(tmp_path: Path) -> None:
    dist = fake_release(tmp_path, version="0.2.0.dev0")
    found = release_check.problems("v0.2.0.dev0", dist, tmp_path)
    assert found[0] == (
        "cdk_neuron.__version__ '0.2.0.dev0': a development version; set the release number (0.2.0) in "
        "constructs/cdk_neuron/__init__.py before tagging"
    )
