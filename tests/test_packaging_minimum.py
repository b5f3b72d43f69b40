"""pyproject's aws-cdk-lib bound is the oldest release that synthesizes this app (review N10).

The evidence (which release brought what the library uses, and the synthesis checks) is in
``tools.cdk_minimum``; these tests keep the bound, the README and that evidence in step.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.cdk_minimum import EVIDENCE, MINIMUM
from tools.tomlcompat import tomllib

REPO = Path(__file__).resolve().parent.parent


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_pyproject_requires_the_documented_minimum() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    [cdk] = [d for d in dependencies if d.startswith("aws-cdk-lib")]
    assert cdk == f"aws-cdk-lib>={MINIMUM},<3.0.0"


def test_the_minimum_is_the_newest_version_the_evidence_needs() -> None:
    versions = [_version(v) for v, _ in EVIDENCE]
    assert versions == sorted(versions)
    assert versions[-1] == _version(MINIMUM)
    # The update policy the serving group uses arrived in 2.263.0: a bound below it cannot synthesize.
    assert _version(MINIMUM) >= (2, 263, 0)


def test_the_pinned_development_version_is_inside_the_bound() -> None:
    pinned = re.search(r"^aws-cdk-lib==(\S+)$", (REPO / "requirements.txt").read_text(), re.M)
    assert pinned is not None and _version(pinned.group(1)) >= _version(MINIMUM)


def test_the_readme_states_the_same_bound() -> None:
    major, minor, _ = MINIMUM.split(".")
    assert f"aws-cdk-lib >= {major}.{minor}, < 3" in (REPO / "README.md").read_text()


def test_the_library_uses_the_update_policy_that_sets_the_floor() -> None:
    # If the serving group stops using AutoScalingInstanceRefresh, the evidence above must change too.
    backend = (REPO / "constructs/cdk_neuron/serving/ec2_backend.py").read_text()
    assert "cdk.CfnAutoScalingInstanceRefresh(" in backend
