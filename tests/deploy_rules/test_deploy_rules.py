"""Each deploy rule against its minimal fixtures, plus the loading contract with cfn-lint.

Fixtures live in ``fixtures/rules/<RULE ID>/``: every ``fail-*.json`` declares in its Metadata
(``cdk-neuron:fixture``) the rule it must trigger, the resource and a value the message must name;
every ``pass-*.json`` must trigger none of our rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron.deploy_rules import RULES_DIR, lint_template, rule_classes

FIXTURES = Path(__file__).parent / "fixtures"
RULE_FIXTURES = sorted((FIXTURES / "rules").glob("*/*.json"))
LEGACY = FIXTURES / "legacy" / "dev-Training-0.1.0.json"


def _ids(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _ours(matches: list[Any]) -> list[Any]:
    return [m for m in matches if m.rule.id[:2] in ("E9", "W9")]


@pytest.mark.parametrize("path", [p for p in RULE_FIXTURES if p.stem.startswith("fail")], ids=_ids)
def test_failing_fixture_triggers_exactly_its_rule(path: Path) -> None:
    template = json.loads(path.read_text())
    expected = template["Metadata"]["cdk-neuron:fixture"]
    assert expected["expect"] == path.parent.name
    matches = lint_template(template)
    assert {m.rule.id for m in matches} == {expected["expect"]}, [str(m) for m in matches]
    for match in matches:
        assert match.message.startswith(f"{expected['resource']}:"), match.message
        assert str(expected["value"]) in match.message, match.message
        assert "Fix:" in match.message, match.message


@pytest.mark.parametrize("path", [p for p in RULE_FIXTURES if p.stem.startswith("pass")], ids=_ids)
def test_passing_fixture_triggers_nothing(path: Path) -> None:
    assert [str(m) for m in lint_template(json.loads(path.read_text()))] == []


def test_every_rule_has_failing_and_passing_fixtures() -> None:
    ids = {cls.id for cls in rule_classes()}
    for kind in ("fail", "pass"):
        covered = {p.parent.name for p in RULE_FIXTURES if p.stem.startswith(kind)}
        assert covered == ids, (
            f"{kind} fixtures: missing {sorted(ids - covered)}, unknown {sorted(covered - ids)}"
        )


def test_rule_metadata_is_complete() -> None:
    classes = rule_classes()
    assert len({cls.id for cls in classes}) == len(classes)
    for cls in classes:
        assert cls.id[0] in "EW" and cls.id[1:2] == "9" and len(cls.id) == 5 and cls.id[2] != "0", cls.id
        assert cls.shortdesc and len(cls.description) > 40, cls.id
        assert cls.source_url.startswith("https://"), cls.id
        assert cls.source_title and cls.read_on == "2026-12-01", cls.id
        assert cls.resource_types and all(t.startswith("AWS::") for t in cls.resource_types), cls.id


def test_legacy_training_template_is_refused_by_batch() -> None:
    """The 0.1.0 training stack shape: EFA launch template plus compute-environment security groups."""
    matches = lint_template(LEGACY.read_text())
    batch = [m for m in matches if m.rule.id == "E9101"]
    assert len(batch) == 1
    assert "ClusterComputeEnvironment2EC7120A" in batch[0].message
    assert "8 NetworkInterfaces" in batch[0].message


def test_cfn_lint_loads_the_directory_once_per_rule() -> None:
    """cfn-lint imports every [A-Za-z1-9]*.py of the directory and registers each rule class it finds."""
    from cfnlint.rules import Rules

    loaded = Rules.create_from_directory(str(RULES_DIR))  # raises DuplicateRuleError on a double
    assert sorted(loaded) == sorted(cls.id for cls in rule_classes())


def test_importing_the_package_does_not_import_cfn_lint() -> None:
    """cfn-lint is an optional extra: `import cdk_neuron.deploy_rules` (and --rules-dir) must work without it."""
    probe = (
        "import sys, cdk_neuron.deploy_rules; print(any(m.split('.')[0] == 'cfnlint' for m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_command_line_rules_dir_and_only(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "cdk_neuron.deploy_rules"]
    printed = subprocess.run([*run, "--rules-dir"], capture_output=True, text=True, check=True).stdout.strip()
    assert Path(printed) == RULES_DIR
    result = subprocess.run([*run, "--only", str(LEGACY)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "E9101 ClusterComputeEnvironment2EC7120A" in result.stdout
    # Without --only it is cfn-lint with our rules appended: same finding, cfn-lint's output format.
    full = subprocess.run(
        [*run, "--format=parseable", str(LEGACY)], capture_output=True, text=True, check=False
    )
    assert ":E9101:" in full.stdout, full.stdout + full.stderr


def test_only_refuses_what_it_cannot_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rough edge 7: a missing file is one line and exit 2, as without --only (no traceback); an
    empty file or one without Resources is not "clean" (exit 2); a real template without findings
    is (exit 0)."""
    from cdk_neuron.deploy_rules.__main__ import main as deploy_rules

    missing = tmp_path / "missing.template.json"
    assert deploy_rules(["--only", str(missing)]) == 2
    # The same code as cfn-lint's E0003 for the file, without --only.
    assert deploy_rules([str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"python -m cdk_neuron.deploy_rules: {missing}: cannot read it (")
    assert "Traceback" not in captured.err and captured.out == ""
    for text in ("", "{}", "[1, 2]", "Parameters: {}\n"):
        empty = tmp_path / "empty.template.json"
        empty.write_text(text)
        assert deploy_rules(["--only", str(empty)]) == 2, text
        assert (
            "not a CloudFormation template (no Resources object): nothing was checked"
            in capsys.readouterr().out
        )
    clean = tmp_path / "clean.template.json"
    clean.write_text('{"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}')
    assert deploy_rules(["--only", str(clean)]) == 0
    assert capsys.readouterr().out == ""


def test_cfn_lint_append_rules_reports_our_rule() -> None:
    """The documented `cfn-lint --append-rules` command finds the headline defect."""
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--append-rules",
            str(RULES_DIR),
            "--format",
            "parseable",
            "--",
            str(LEGACY),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ":E9101:" in result.stdout, result.stdout + result.stderr
    assert ":E0002:" not in result.stdout, result.stdout  # no rule raised inside cfn-lint


def _scramble(value: Any, replace: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v if k in ("Type", "Metadata") else _scramble(v, replace)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scramble(v, replace) for v in value]
    return replace(value)


@pytest.mark.parametrize(
    "replace",
    [
        pytest.param(lambda v: {"Fn::ImportValue": "elsewhere"}, id="unresolvable"),
        pytest.param(lambda v: {"Fn::If": ["C", v, {"Ref": "AWS::NoValue"}]}, id="conditional"),
        pytest.param(lambda v: [v] if isinstance(v, str) else "x", id="wrong-types"),
    ],
)
def test_rules_stay_silent_and_never_crash_on_values_they_cannot_read(replace: Any) -> None:
    """Scrambling every leaf of every fixture must not crash a rule (cfn-lint reports E0002) nor add findings."""
    for path in RULE_FIXTURES:
        template = json.loads(path.read_text())
        before = {m.rule.id for m in lint_template(template)}
        template["Resources"] = _scramble(template["Resources"], replace)
        after = lint_template(template)
        assert not [m for m in after if m.rule.id.startswith("E0")], (path, [str(m) for m in after])
        assert {m.rule.id for m in _ours(after)} <= before, (path, [str(m) for m in after])


def test_every_rule_module_is_registered() -> None:
    """A module of cdk_neuron/deploy_rules/ with a rule that MODULES leaves out never runs."""
    import importlib
    import inspect
    import pkgutil

    import cdk_neuron.deploy_rules as package
    from cdk_neuron.deploy_rules import MODULES
    from cdk_neuron.deploy_rules._base import DeployRule

    with_rules = {
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if any(
            issubclass(cls, DeployRule) and cls is not DeployRule and cls.__module__ == module.__name__
            for module in [importlib.import_module(f"{package.__name__}.{info.name}")]
            for _, cls in inspect.getmembers(module, inspect.isclass)
        )
    }
    assert with_rules == set(MODULES) and len(MODULES) == len(set(MODULES))


def test_usage_errors_exit_1_as_the_docstring_and_cfn_lint_say(capsys: pytest.CaptureFixture[str]) -> None:
    """2 means "errors found": argparse's own usage exit (2) would read as a failed lint."""
    from cdk_neuron.deploy_rules.__main__ import main as deploy_rules

    for argv in ([], ["--only", "--format=json", "x.json"]):
        with pytest.raises(SystemExit) as exited:
            deploy_rules(argv)
        assert exited.value.code == 1, argv
        assert "error: " in capsys.readouterr().err


def test_the_missing_cfn_lint_hint_is_the_lint_extra() -> None:
    from cdk_neuron.deploy_rules.__main__ import CFN_LINT_REQUIREMENT
    from tools.tomlcompat import tomllib

    with (Path(__file__).resolve().parents[2] / "pyproject.toml").open("rb") as f:
        lint = tomllib.load(f)["project"]["optional-dependencies"]["lint"]
    assert lint == [CFN_LINT_REQUIREMENT]


def test_hyperpod_region_check_covers_every_region_linted() -> None:
    """E9606 reads every region of a multi-region lint, not the first one only."""
    from cfnlint.api import lint
    from cfnlint.rules import RulesCollection

    rules = RulesCollection()
    for cls in rule_classes():
        rules.register(cls())
    text = (FIXTURES / "rules" / "E9606" / "fail-2.json").read_text()
    found = [
        m.message for m in lint(text, rules=rules, regions=["us-east-2", "eu-west-1"]) if m.rule.id == "E9606"
    ]
    assert len(found) == 1 and "does not sell in eu-west-1" in found[0], found
