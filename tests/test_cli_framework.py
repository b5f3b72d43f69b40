"""The CLI's frame: the command table, the Context tests inject, ExitStatus, typed results, extras.

Each command's own behaviour is tested in its test_cli_*.py module; this one tests what every command
shares, so a new command gets it by being in the table.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import types
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from cli_support import RecordingClock

from cdk_neuron.cli import commands
from cdk_neuron.cli.command import Command
from cdk_neuron.cli.context import Context, SourceOptions
from cdk_neuron.cli.main import _parser, main
from cdk_neuron.cli.result import NOT_IN_JSON, OMIT_IF_NONE, Result, key
from cdk_neuron.cli.status import ExitStatus
from tools.tomlcompat import tomllib

REPO = Path(__file__).resolve().parents[1]
CONFIG = str(REPO / "cdk.json")


# -- the table ----------------------------------------------------------------------------------


def test_the_parser_has_exactly_the_tables_commands_in_its_order() -> None:
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(action.choices) == [command.name for command in commands.TABLE]
    assert len(commands.BY_NAME) == len(commands.TABLE), "command names are unique"


def test_every_command_is_in_the_cli_guide() -> None:
    guide = (REPO / "docs" / "cli.md").read_text()
    table = guide[guide.index("| command | what it does | AWS calls |") :].split("\n\n", 1)[0]
    listed = {row.split("`")[1].split()[0] for row in table.splitlines()[2:]}
    assert listed == set(commands.BY_NAME)


def test_a_command_runs_with_its_own_arguments_and_the_shared_options() -> None:
    seen: list[tuple[argparse.Namespace, Context]] = []

    def run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
        seen.append((args, ctx))
        return ExitStatus.FAILED

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--answer", type=int)

    from cdk_neuron.cli import parser as cli_parser

    probe = Command("probe", "A command of a test's own.", run, arguments=arguments)
    args = cli_parser.build((probe,)).parse_args(["probe", "--answer", "42", "--json"])
    assert args.command == "probe" and args.answer == 42 and args.output == "json"
    assert probe.run(args, Context()) is ExitStatus.FAILED and seen


def test_only_submit_takes_a_command_after_the_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    assert [c.name for c in commands.TABLE if c.takes_job_command] == ["submit"]
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--config", CONFIG, "--", "echo"])
    assert exit_.value.code == ExitStatus.USAGE
    assert "only valid for submit, not plan" in capsys.readouterr().err


# -- ExitStatus ---------------------------------------------------------------------------------


def test_exit_statuses_keep_their_documented_values() -> None:
    assert {s.name: int(s) for s in ExitStatus} == {
        "OK": 0,
        "FAILED": 1,
        "USAGE": 2,
        "NO_CREDENTIALS": 3,
        "INTERRUPTED": 130,
        "BROKEN_PIPE": 141,
    }
    # No alias: __members__ would list it, iteration would not (and @unique refuses one at import).
    assert list(ExitStatus.__members__) == [s.name for s in ExitStatus]
    guide = (REPO / "docs" / "cli.md").read_text()
    for status in ExitStatus:
        assert f"\n| {int(status)} | " in guide, f"docs/cli.md's exit code table lacks {int(status)}"


def test_the_readme_names_every_exit_status_and_who_takes_env() -> None:
    readme = (REPO / "README.md").read_text()
    for status in ExitStatus:
        assert f"**{int(status)}**" in readme, f"README's exit codes lack {int(status)}"
    # Not every command takes --env (timings reads report files, completion takes no options).
    parser = _parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    without = {n for n, p in subcommands.items() if not any("--env" in a.option_strings for a in p._actions)}
    assert without == {"timings", "completion"}
    assert "Every command takes `--env" not in readme


def test_main_returns_an_exit_status() -> None:
    out = io.StringIO()
    status = main(["plan", "--config", CONFIG, "--json"], context=Context(stdout=out))
    assert status is ExitStatus.OK
    assert main(["plan", "--config", CONFIG, "--env", "nope"], context=Context(stderr=io.StringIO())) == 2


# -- the Context --------------------------------------------------------------------------------


def test_results_and_errors_go_to_the_contexts_streams(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    context = Context(stdout=out, stderr=err)
    assert main(["plan", "--config", CONFIG, "--env", "dev", "-o", "json"], context=context) == 0
    assert json.loads(out.getvalue())["command"] == "plan"
    assert main(["plan", "--config", CONFIG, "--env", "nope"], context=context) == ExitStatus.USAGE
    assert err.getvalue().startswith("cdk-neuron: --env='nope': unknown environment")
    assert capsys.readouterr() == ("", "")  # nothing went to the process's own streams


def test_the_context_reads_the_source_once_and_repeats_it_in_command_lines() -> None:
    ctx = Context(sources=SourceOptions(config=CONFIG))
    first = ctx.deployments
    assert ctx.deployments is first
    dev = first["dev"]
    assert ctx.command_line(dev, "status", "abc") == f"cdk-neuron status abc --config {CONFIG} --env dev"
    assert Context(sources=SourceOptions(synth=True)).command_line(dev, "list") == (
        "cdk-neuron list --synth --env dev"
    )
    assert Context().command_line(dev, "list") == "cdk-neuron list --env dev"


def test_the_clock_is_the_contexts() -> None:
    clock = RecordingClock()
    ctx = Context(clock=clock)
    ctx.clock.sleep(15)
    assert ctx.clock.now() == RecordingClock.START.replace(second=15)


def test_clients_are_made_on_first_use_through_the_factory() -> None:
    made: list[tuple[str, str]] = []
    ctx = Context(clients=lambda service, region: made.append((service, region)) or service)
    assert ctx.aws("batch", "us-west-2") == "batch" and made == [("batch", "us-west-2")]


# -- typed results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Inner:
    value: int
    renamed: str = field(metadata=key("from"))


@dataclass(frozen=True)
class _Probe(Result):
    command = "probe"
    inner: list[_Inner]
    hidden: str = field(default="x", metadata=NOT_IN_JSON)
    maybe: int | None = field(default=None, metadata=OMIT_IF_NONE)


def test_show_refuses_anything_but_a_result() -> None:
    ctx = Context(stdout=io.StringIO())
    for mode in ("json", "text"):
        with pytest.raises(TypeError, match=r"takes a cdk_neuron.cli.result.Result, not dict"):
            replace(ctx, output=mode).show({"plan": 1}, None)  # type: ignore[type-var]


def test_to_json_is_the_fields_in_order_inside_the_shared_envelope() -> None:
    doc = _Probe(inner=[_Inner(1, "a")]).to_json()
    assert list(doc) == ["command", "schema_version", "inner"]
    assert doc["inner"] == [{"value": 1, "from": "a"}]
    assert _Probe(inner=[], maybe=0).to_json()["maybe"] == 0


# completion prints a shell script for the shell to source: it has no result document.
_NO_RESULT = {"completion"}


def test_every_command_result_is_a_typed_result() -> None:
    """No command returns a plain dict: every command in the table (found from the table, so a new
    one is checked too) has its run's module define a Result subclass and show it."""
    import inspect

    modules = {c.name: sys.modules[c.run.__module__] for c in commands.TABLE if c.name not in _NO_RESULT}
    assert {"ami", "impact", "plan", "submit"} <= set(modules)  # the table, not a hand list
    results = set()
    for name, module in modules.items():
        own = {
            cls.command
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, Result) and cls is not Result
        }
        assert own, f"{name}: {module.__name__} defines no Result"
        assert "ctx.show(" in inspect.getsource(module), f"{name}: {module.__name__} never calls ctx.show"
        results |= own
    assert results == {
        "ami",
        "impact",
        "plan",
        "cost",
        "cost-diff",
        "preflight",
        "submit",
        "compile",
        "status",
        "logs",
        "stop",
        "list",
        "scale",
        "timings",
        "use-artifact",
    }


# -- the reader of the output going away (rough edge 4) -----------------------------------------


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly_with_141() -> None:
    err = io.StringIO()
    status = main(
        ["plan", "--config", CONFIG, "-o", "json"], context=Context(stdout=_ClosedPipe(), stderr=err)
    )
    assert status is ExitStatus.BROKEN_PIPE and err.getvalue() == ""


@pytest.mark.parametrize("output", ["table", "json", "text"])
def test_a_closed_pipe_prints_no_traceback_through_the_console_script(output: str) -> None:
    """``cdk-neuron plan | head -1``: the reader is gone before the first write. In every output
    mode, the table's too: rich's own broken-pipe handler exits 1 (FAILED) unless the CLI's
    console hands the error to main."""
    script = Path(sys.executable).with_name("cdk-neuron")
    process = subprocess.Popen(
        [str(script), "plan", "--config", CONFIG, "-o", output],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader goes away, as head does after its line
    error = process.stderr.read().decode()
    assert process.wait(timeout=60) == ExitStatus.BROKEN_PIPE
    assert error == ""


# -- the cli extra --------------------------------------------------------------------------------


def test_table_output_without_rich_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)  # an import of rich now fails
    err = io.StringIO()
    assert main(["plan", "--config", CONFIG], context=Context(stdout=io.StringIO(), stderr=err)) == 2
    assert err.getvalue() == (
        "cdk-neuron: the table output needs the Python package rich, which is not installed: "
        "pip install 'rich>=13' 'shtab>=1.7' (or use --output json or --output text)\n"
    )
    out = io.StringIO()
    assert main(["plan", "--config", CONFIG, "-o", "text"], context=Context(stdout=out)) == 0
    assert "training placement" in out.getvalue()


def test_completion_without_shtab_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "shtab", None)
    err = io.StringIO()
    assert main(["completion", "bash"], context=Context(stderr=err)) == 2
    assert "cdk-neuron completion needs the Python package shtab" in err.getvalue()
    assert "pip install 'rich>=13' 'shtab>=1.7'" in err.getvalue()


def test_the_install_hint_names_the_extras_packages_never_an_unpublished_name() -> None:
    """cdk-neuron is not on PyPI: ``pip install 'cdk-neuron[cli]'`` would resolve the name there
    (dependency confusion). The hint installs the extra's own packages, from pyproject.toml."""
    from cdk_neuron.cli import extras

    with (REPO / "pyproject.toml").open("rb") as f:
        declared = tomllib.load(f)["project"]["optional-dependencies"]["cli"]
    assert extras.extra_requirements() == tuple(declared) == extras._FALLBACK
    assert extras.install_command() == "pip install 'rich>=13' 'shtab>=1.7'"
    assert "cdk-neuron[" not in extras.install_command()


def test_the_guides_recipe_for_a_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md, "Adding a command": its module, built into a parser and run as main runs it."""
    import re

    from cdk_neuron.cli import parser as cli_parser

    guide = (REPO / "docs" / "cli.md").read_text()
    (block,) = re.findall(r"^```python\n(# cdk_neuron/cli/hello\.py\n.*?)^```", guide, re.S | re.M)
    module = types.ModuleType("cdk_neuron.cli.hello")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(block, "docs/cli.md (Adding a command)", "exec"), module.__dict__)
    hello = module.COMMAND
    assert isinstance(hello, Command)
    args = cli_parser.build((hello,)).parse_args(["hello", "--env", "dev"])
    out = io.StringIO()
    ctx = Context(stdout=out, output="json", sources=SourceOptions(config=CONFIG))
    assert hello.run(args, ctx) is ExitStatus.OK
    assert json.loads(out.getvalue()) == {"command": "hello", "schema_version": 1, "environments": ["dev"]}
