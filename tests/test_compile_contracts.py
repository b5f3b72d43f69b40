"""The compile task's image contracts (cdk_neuron.contracts.images: optimum-neuron-compile, aws-cli-compile).

Three meeting points, each rehearsed:

- the task definition replaces each image's ENTRYPOINT with the contract's ``replaced_by`` and passes
  the program as the one command word;
- through the images' own entrypoints (tests/image_entrypoints) the same command would not run the
  program: the serving image would start the server, the AWS CLI image would take the program for a
  CLI command. That is why the contract replaces them;
- what ECS does start (``replaced_by`` + command) runs the programs with a PATH of exactly the tools
  the contract's ``needs`` name, so a program that starts calling another tool fails here until the
  contract (and the image) are checked for it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from image_rehearsal import Container
from test_compilation import (  # noqa: F401 - the module-scoped fixture is shared
    _AWS_EMPTY_PREFIX,
    _EXPORT,
    MODEL,
    REGION,
    _containers,
    _hf_checkpoint,
    _request,
    _settings,
    synthesized,
)

from cdk_neuron import timeouts
from cdk_neuron.compilation import ModelSource
from cdk_neuron.compilation.construct import AWS_CLI_IMAGE, step_entry_point
from cdk_neuron.compilation.job import FARGATE_MAX_WEIGHTS_GIB
from cdk_neuron.contracts.images import contract
from cdk_neuron.node_programs import program
from cdk_neuron.serving import ServingEngine
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest

EXPORT_TOOLS = (
    "timeout",
    "bash",
    "mkdir",
    "rm",
    "touch",
    "date",
    "wc",
    "du",
    "find",
    "python3",
    "optimum-cli",
)
FETCH_UPLOAD_TOOLS = ("timeout", "bash", "aws", "rm", "ls", "mkdir", "touch")
RECORDED = ("optimum-cli", "neuronx-cc", "aws")


@pytest.fixture(scope="module")
def template(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ModelCompilation stack's template (test_compilation's module fixture, synthesized once)."""
    return request.getfixturevalue("synthesized")[1]  # type: ignore[no-any-return]


def test_the_task_replaces_each_entrypoint_as_the_contracts_say(template: dict[str, Any]) -> None:
    containers = _containers(template)
    export, cli = contract("optimum-neuron-compile"), contract("aws-cli-compile")
    assert (export.platform, cli.platform) == ("ecs", "ecs")
    budgets = timeouts.compile_step_seconds(FARGATE_MAX_WEIGHTS_GIB)
    for name, item in (("fetch", cli), ("export", export), ("upload", cli)):
        definition = containers[name]
        # The contract's entryPoint, with this step's budget in place of its placeholder.
        expected = [str(budgets[name]) if w == "<step seconds>" else w for w in item.replaced_by]
        assert definition["EntryPoint"] == expected == step_entry_point(budgets[name])
        assert definition["Command"] == [program(f"compile/{name}.sh").read_text()]
    assert containers["export"]["Image"].endswith(export.image)
    assert containers["export"]["Image"] == ServingEngine.optimum_neuron().image.uri(REGION)
    # The contract's image is ECR Public's; the task pulls the same repository and tag through the
    # pull-through cache (ECR's cache keeps the upstream repository path under its prefix).
    assert cli.image == AWS_CLI_IMAGE
    upstream = cli.image.removeprefix("public.ecr.aws/")
    assert containers["fetch"]["Image"] == containers["upload"]["Image"]
    assert containers["fetch"]["Image"].endswith(f".amazonaws.com/cdk-neuron-ecr-public/{upstream}")


def test_through_the_serving_images_own_entrypoint_the_export_would_start_the_server(tmp_path: Path) -> None:
    container = Container(tmp_path)
    container.record("optimum-cli")
    text = program("compile/export.sh").read_text()
    done = container.run("optimum-neuron-compile", [text])
    assert done.returncode == 0, done.stderr
    [call] = container.calls("optimum-cli")
    assert call.argv[:4] == ["neuron", "serve", "--port", "8080"]  # the server, never the export
    assert "export" not in call.argv[:4]


def test_through_the_aws_cli_images_own_entrypoint_the_program_would_be_a_cli_command(tmp_path: Path) -> None:
    container = Container(tmp_path)
    container.record("aws")
    text = program("compile/fetch.sh").read_text()
    assert container.run("aws-cli-compile", [text]).returncode == 0
    [call] = container.calls("aws")
    assert call.argv == [text]  # `aws '<program>'`: an unknown command, the program never runs


def _exactly(container: Container, tools: tuple[str, ...]) -> None:
    """Leave on the container's PATH exactly ``tools``: recorders where set, else the host's real ones."""
    for entry in container.bin.iterdir():
        if entry.name not in tools:
            entry.unlink()
    for tool in tools:
        target = container.bin / tool
        if target.exists() or target.is_symlink():
            continue
        real = sys.executable if tool == "python3" else shutil.which(tool)
        assert real is not None, tool
        target.symlink_to(real)


@pytest.mark.parametrize("name", ["optimum-neuron-compile", "aws-cli-compile"])
def test_every_tool_the_programs_call_is_in_the_contract(name: str) -> None:
    needs = " ".join(contract(name).needs)
    tools = EXPORT_TOOLS if name == "optimum-neuron-compile" else FETCH_UPLOAD_TOOLS
    missing = [tool for tool in tools if tool not in needs.replace(",", " ").replace(";", " ").split()]
    assert missing == [], f"{name}: add to its needs (and check the image ships them): {missing}"


def _ecs(
    container: Container, template: dict[str, Any], name: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """What ECS starts: the task definition's entryPoint (the contract's ``replaced_by``, checked above),
    then its command."""
    argv = [*_containers(template)[name]["EntryPoint"], *_containers(template)[name]["Command"]]
    return subprocess.run(
        argv, env={**container._environment(None), **env}, capture_output=True, text=True, timeout=60,
        check=False, cwd=str(container.root),
    )  # fmt: skip


def test_the_programs_run_as_ecs_starts_them_with_only_the_contracts_tools(
    template: dict[str, Any], tmp_path: Path
) -> None:
    container = Container(tmp_path)
    container.record("optimum-cli", then=_EXPORT)
    container.record("neuronx-cc", then='print("NeuronX Compiler version 2.21.18209.0+043b1bf7")')
    container.record("aws", then=_AWS_EMPTY_PREFIX)  # a new prefix
    _hf_checkpoint(tmp_path / "checkpoints" / "run-7" / "step-1200")
    request = _request(ModelSource.checkpoint("run-7/step-1200", step=1200))
    for name, tools in (
        ("fetch", FETCH_UPLOAD_TOOLS),
        ("export", EXPORT_TOOLS),
        ("upload", FETCH_UPLOAD_TOOLS),
    ):
        _exactly(container, tuple(t for t in {*tools, *RECORDED}))
        done = _ecs(container, template, name, _settings(request, tmp_path, name))
        assert done.returncode == 0, (name, done.stderr)
        assert "command not found" not in done.stderr, (name, done.stderr)
    [export] = container.calls("optimum-cli")
    # The export command line, through what ECS starts, carries the fleet's shape.
    assert export.argv[:2] == ["export", "neuron"]
    assert export.argv[export.argv.index("--tensor_parallel_size") + 1] == str(MODEL.plan().tensor_parallel)
    manifest = ArtifactManifest.from_file(tmp_path / "work" / "export" / MANIFEST_NAME)
    assert manifest.shape.tensor_parallel == MODEL.plan().tensor_parallel


def test_a_tool_outside_the_contract_fails_the_rehearsal(template: dict[str, Any], tmp_path: Path) -> None:
    """The check above can fail: without touch (a tool the contract names) the export stops."""
    container = Container(tmp_path)
    container.record("optimum-cli", then=_EXPORT)
    container.record("neuronx-cc", then='print("2.21.18209.0")')
    _hf_checkpoint(tmp_path / "checkpoints" / "run-7" / "step-1200")
    request = _request(ModelSource.checkpoint("run-7/step-1200", step=1200))
    container.record("aws", then=_AWS_EMPTY_PREFIX)
    _exactly(container, tuple({*FETCH_UPLOAD_TOOLS, *RECORDED}))
    assert _ecs(container, template, "fetch", _settings(request, tmp_path, "fetch")).returncode == 0
    _exactly(container, tuple(t for t in {*EXPORT_TOOLS, *RECORDED} if t != "touch"))
    done = _ecs(container, template, "export", _settings(request, tmp_path, "export"))
    assert done.returncode != 0
    assert "touch: command not found" in done.stderr
