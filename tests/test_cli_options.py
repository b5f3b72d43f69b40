"""Options every command shares: --output/--json anywhere, --region/--profile on AWS commands, completion."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cdk_neuron.cli.main import _parser, main

REPO = Path(__file__).resolve().parents[1]
CONFIG = str(REPO / "cdk.json")
AWS_COMMANDS = ("cost", "preflight", "submit", "status", "logs", "cancel", "terminate", "list")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "plan", "--config", CONFIG],
        ["plan", "--config", CONFIG, "--json"],
        ["--output", "json", "plan", "--config", CONFIG],
        ["--config", CONFIG, "plan", "-o", "json"],
    ],
    ids=["json-before", "json-after", "output-before", "output-after"],
)
def test_output_is_accepted_before_or_after_the_command(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["command"] == "plan"


def test_text_output_has_no_borders_or_wrapping(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["cost", "--config", CONFIG, "--details", "--output", "text"]) == 0
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "│┃━─")
    assert "environment\tregion\tidle / month\tfull / hour\tfull / month\tprices" in out
    assert any(len(line) > 40 for line in out.splitlines())  # never wrapped to the terminal


@pytest.mark.parametrize("command", AWS_COMMANDS)
def test_every_aws_command_takes_region_and_profile(command: str) -> None:
    options = {o for a in _subcommands()[command]._actions for o in a.option_strings}
    assert {"--region", "--profile", "--output", "--json", "--config"} <= options


def test_offline_commands_take_no_aws_options() -> None:
    options = {o for a in _subcommands()["plan"]._actions for o in a.option_strings}
    assert "--region" not in options and "--profile" not in options


def test_region_prices_an_environment_somewhere_else(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "--config", CONFIG, "--env", "dev", "--region", "eu-west-1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (summary,) = doc["summary"]
    assert summary["region"] == "eu-west-1" and "NAT instances" in summary["other_region_lines"]
    assert main(["cost", "--config", CONFIG, "--region", "Mars-1"]) == 2
    assert "--region='Mars-1'" in capsys.readouterr().err
    # The shape of a Region is not enough: it must exist, as cdk.json's region must.
    assert main(["cost", "--config", CONFIG, "--region", "eu-west-9"]) == 2
    assert "--region='eu-west-9': no such AWS Region; did you mean eu-west-1" in capsys.readouterr().err


@pytest.mark.parametrize("shell", ["bash", "zsh", "tcsh"])
def test_completion_scripts_name_every_command_and_option(
    capsys: pytest.CaptureFixture[str], shell: str
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    words = ["plan", "cost", "preflight", "submit", "status", "logs", "cancel", "terminate", "list"]
    if shell != "tcsh":  # shtab's tcsh script completes the commands only
        words += ["--follow", "--watch", "--live-prices", "--details", "--output", "--region", "--profile"]
    for word in words:
        assert word in script, word
