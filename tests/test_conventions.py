"""Conventions the library keeps in every module (issue: L2-quality API)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "constructs" / "cdk_neuron"
WARNING_ID = re.compile(r"^@cdk-neuron/[a-z]+:[a-z][A-Za-z]+$")


def _modules() -> list[tuple[Path, ast.Module]]:
    return [
        (p, ast.parse(p.read_text()))
        for p in sorted(LIBRARY.rglob("*.py"))
        if "node_programs/files" not in p.as_posix()
    ]


def test_every_synth_warning_id_is_a_named_constant_in_one_scheme() -> None:
    """aws-cdk-lib's "@scope/module:camelCase" ids, each a *_WARNING_ID constant users can acknowledge."""
    ids = {}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.endswith("_WARNING_ID"):
                        ids[target.id] = (path.name, node.value.value)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_warning_v2"
            ):
                assert not isinstance(node.args[0], ast.Constant), f"{path}: a literal warning id"
    assert len(ids) >= 8
    assert all(WARNING_ID.match(value) for _, value in ids.values()), ids
    assert len({value for _, value in ids.values()}) == len(ids), "two constants share an id"


def test_docstrings_use_one_style() -> None:
    """reST fields (``:param x:``), never Google-style ``Args:``/``Attributes:`` sections."""
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef, ast.Module)):
                doc = ast.get_docstring(node) or ""
                if re.search(r"^\s*(Args|Attributes|Returns|Raises):\s*$", doc, re.M):
                    offenders.append(f"{path.relative_to(LIBRARY)}:{getattr(node, 'name', '<module>')}")
    assert offenders == []


_AZ_ID_REGEX = re.compile(r"-az(\\d|\[0-9\])")  # "-az\d" or "-az[0-9]" inside a regular expression


def test_one_az_id_pattern() -> None:
    """Validation, preflight and the deploy rules read an AZ ID the same way: cdk_neuron.validation.AZ_ID
    is the only pattern that spells one (a second one refused Local Zone IDs validation accepts)."""
    spelled = [
        path.relative_to(LIBRARY).as_posix()
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _AZ_ID_REGEX.search(node.value)
    ]
    assert spelled == ["validation.py"]


def test_one_nag_acknowledgment_helper() -> None:
    """Every construct acknowledges a cdk-nag finding through cdk_neuron._nag.acknowledge, which renders
    wildcard resources the way cdk-nag names them (two helpers did that differently)."""
    calling = sorted(
        path.relative_to(LIBRARY).as_posix()
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "Acknowledgment"
    )
    assert calling == ["_nag.py"]
