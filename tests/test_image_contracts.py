"""Rehearse the meeting points with the images: run what Batch, docker and SageMaker run, through their entrypoints.

Every test composes the exact process a platform starts (the image's ENTRYPOINT plus what replaces
its CMD, with the container's environment) from what cdk-neuron synthesizes or renders, runs it
under bash through a reproduction of the image's entrypoint (``tests/image_entrypoints``), and
checks what reaches the program the image finally runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from app_assembly import synthesized_app
from image_rehearsal import (
    ENTRYPOINT_COMMANDS,
    Container,
    batch_command,
    batch_pattern_matches,
    free_port,
    retry_action,
)

from cdk_neuron.contracts.images import IMAGE_CONTRACTS, TRAINING_DLC_COMMIT, TRAINING_DLC_IMAGE, contract
from cdk_neuron.timeouts import PEER_LOST_EXIT_CODE
from cdk_neuron.training.launcher import DEFAULT_TRAINING_COMMAND, encode_training_command
from tools.contracts_doc import BEGIN, DOC, END, render

ROOT = Path(__file__).resolve().parent.parent
# Where users read how to submit: every `cdk-neuron submit ... -- '<command>'` in these documents.
SUBMIT_DOCUMENTS = (
    "README.md",
    "docs/troubleshooting.md",
    "docs/cli.md",
    "constructs/cdk_neuron/training/README.md",
)
_SUBMITTED = re.compile(r"cdk-neuron submit [^'`]*?--\s*\\?\s*'([^']+)'", re.DOTALL)
# Commands that exercise the shell syntax a re-parse would mangle.
HARD_COMMANDS = (
    "printf %s \"$PROGRAM\" | base64 -d > /tmp/p.py && torchrun $TORCHRUN_ARGS /tmp/p.py --note 'two words'",
    "export X=1; torchrun $TORCHRUN_ARGS train.py --glob '*.json' --x \"$X\"",
)


def documented_commands() -> list[str]:
    found = []
    for name in SUBMIT_DOCUMENTS:
        found += _SUBMITTED.findall((ROOT / name).read_text(encoding="utf-8"))
    commands = [c for c in found if "torchrun" in c]  # not the `'COMMAND'` placeholders
    assert len(commands) >= 3, found
    return commands


@pytest.fixture(scope="module")
def dev_job() -> dict[str, Any]:
    """The dev environment's job definition (2 x trn1.32xlarge, the 2.28 training DLC), as synthesized."""
    template = synthesized_app().template("dev", "Training")
    (definition,) = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Batch::JobDefinition"
    ]
    (node_range,) = definition["NodeProperties"]["NodeRangeProperties"]
    assert TRAINING_DLC_IMAGE.split(":")[1] in json.dumps(node_range["Container"]["Image"])
    return {
        "container": node_range["Container"],
        "parameters": definition["Parameters"],
        "retry": definition["RetryStrategy"],
    }


def _node_command(
    container: Container,
    job: dict[str, Any],
    parameters: dict[str, str],
    *,
    index: int,
    nodes: int,
    main: str | None,
    extra: dict[str, str] | None,
) -> tuple[list[str], dict[str, str]]:
    """One node of the job as Batch starts it: the substituted command and the container environment."""
    # Values CloudFormation resolves at deployment (the compile cache's bucket) stand in as text.
    env = {
        e["Name"]: e["Value"] if isinstance(e["Value"], str) else "deployed"
        for e in job["container"]["Environment"]
    }
    env.update(AWS_BATCH_JOB_NODE_INDEX=str(index), AWS_BATCH_JOB_NUM_NODES=str(nodes))
    if main is not None:  # Batch sets the main node's address on child nodes only
        env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = main
    env.update(extra or {})
    command = container.mounted(
        batch_command(job["container"]["Command"], {**job["parameters"], **parameters})
    )
    return command, env


def _batch_node(
    container: Container,
    job: dict[str, Any],
    parameters: dict[str, str],
    *,
    index: int = 0,
    nodes: int = 1,
    main: str | None = None,
    extra: dict[str, str] | None = None,
) -> Any:
    """Run one node of the job to the end, through the DLC entrypoint."""
    command, env = _node_command(container, job, parameters, index=index, nodes=nodes, main=main, extra=extra)
    return container.run("training-dlc", command, env)


def _start_batch_node(
    container: Container,
    job: dict[str, Any],
    parameters: dict[str, str],
    *,
    index: int,
    nodes: int,
    main: str | None = None,
    extra: dict[str, str] | None = None,
) -> Any:
    command, env = _node_command(container, job, parameters, index=index, nodes=nodes, main=main, extra=extra)
    return container.start("training-dlc", command, env)


def _reference(tmp_path: Path, command: str, torchrun_args: str) -> list[list[str]]:
    """What torchrun receives when bash runs ``command`` directly with the launcher's TORCHRUN_ARGS."""
    reference = Container(tmp_path / "reference")
    reference.record("torchrun")
    reference.record_and_run_arguments("neuron_parallel_compile")
    reference.shell(command, {"TORCHRUN_ARGS": torchrun_args})
    return [c.argv for c in reference.calls("torchrun")]


@pytest.mark.parametrize(
    "command", sorted({*documented_commands(), DEFAULT_TRAINING_COMMAND, *HARD_COMMANDS})
)
def test_the_training_command_reaches_the_launcher_whole_through_the_dlc_entrypoint(
    dev_job: dict[str, Any], tmp_path: Path, command: str
) -> None:
    """The DLC's `bash -m start_with_right_hostname.sh` runs `eval "$@"` on Batch's command."""
    container = Container(tmp_path)
    container.record("torchrun")
    container.record_and_run_arguments("neuron_parallel_compile")
    container.record("hostname", then="print('10.0.7.21 ')")
    # What `cdk-neuron submit -- '<command>'` sends (cli/submit.py): the parameter, encoded.
    result = _batch_node(container, dev_job, {"training_command": encode_training_command(command)})
    assert result.returncode == 0, result.stderr
    calls = container.calls("torchrun")
    assert calls, f"torchrun never ran: {result.stderr}"
    torchrun_args = calls[0].env["TORCHRUN_ARGS"]
    assert torchrun_args.startswith("--nnodes=1 --node_rank=0 --nproc_per_node=32 --master_addr=10.0.7.21")
    # Exactly what bash gives torchrun when it runs the command itself with the launcher's variables.
    assert [c.argv for c in calls] == _reference(tmp_path, command, torchrun_args)
    assert f"training command: {command}" in result.stderr


def test_the_job_definition_default_command_runs_as_written(dev_job: dict[str, Any], tmp_path: Path) -> None:
    container = Container(tmp_path)
    container.record("torchrun")
    container.record("hostname", then="print('10.0.7.21 ')")
    result = _batch_node(container, dev_job, {})  # no parameter: the job definition's default
    assert result.returncode == 0, result.stderr
    (call,) = container.calls("torchrun")
    assert call.argv == [*shlex.split(call.env["TORCHRUN_ARGS"]), "train.py"]


def test_a_plain_command_from_the_aws_cli_is_refused_before_any_training_step(
    dev_job: dict[str, Any], tmp_path: Path
) -> None:
    """`aws batch submit-job --parameters training_command='torchrun ...'` (not encoded) stops clearly."""
    container = Container(tmp_path)
    container.record("torchrun")
    container.record("hostname", then="print('10.0.7.21 ')")
    result = _batch_node(container, dev_job, {"training_command": "torchrun $TORCHRUN_ARGS train.py"})
    assert result.returncode == 2
    assert "REFUSED: expected one base64 word after --command-base64, got 2 word(s)" in result.stderr
    assert "base64 | tr -d" in result.stderr
    assert container.calls("torchrun") == []


def test_every_contract_has_an_entrypoint_reproduction_and_a_pinned_source() -> None:
    assert {c.name for c in IMAGE_CONTRACTS} == set(ENTRYPOINT_COMMANDS)
    for item in IMAGE_CONTRACTS:
        assert re.search(r"@[0-9a-f]{7,40}\b", item.source), item.name  # a commit, not a branch
        assert item.entrypoint, item.name
    training = contract("training-dlc")
    assert TRAINING_DLC_COMMIT[:7] in training.source
    assert training.arguments == "eval"


def _two_node_env(container: Container, index: int, ports: dict[str, str]) -> dict[str, str]:
    return {
        "RANK_ORDER_PORT": ports["rank"],
        "CDK_NEURON_PEER_PORT": ports["peer"],
        "CDK_NEURON_TOPOLOGY_FILE": str(container.root / "no-topology.json"),
    }


def test_batchs_stop_signal_reaches_the_training_processes_through_the_dlc_entrypoint(
    dev_job: dict[str, Any], tmp_path: Path
) -> None:
    """Review (issue 22, S1): Batch stops a job with SIGTERM to the container's init (initProcessEnabled:
    tini), which signals only its child, the entrypoint bash, unless TINI_KILL_PROCESS_GROUP is set;
    that bash forwards nothing, so the training code never saw the signal and was SIGKILLed."""
    container = Container(tmp_path)
    marker = tmp_path / "torchrun-got-sigterm"
    container.record(
        "torchrun",
        then=(
            "import signal, time, pathlib\n"
            f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(marker)!r}).write_text('TERM'), sys.exit(143)))\n"
            f"pathlib.Path({str(tmp_path / 'torchrun-started')!r}).write_text('up')\n"
            "time.sleep(60)"
        ),
    )
    container.record("hostname", then="print('10.0.7.21 ')")
    assert dev_job["container"]["LinuxParameters"]["InitProcessEnabled"] is True
    process = _start_batch_node(container, dev_job, {}, index=0, nodes=1)
    started = tmp_path / "torchrun-started"
    for _ in range(200):
        if started.exists():
            break
        time.sleep(0.05)
    assert started.exists(), "torchrun never started"
    env = {e["Name"]: e["Value"] for e in dev_job["container"]["Environment"]}
    # tini (Docker's --init, which initProcessEnabled is): the child's process group with -g /
    # TINI_KILL_PROCESS_GROUP, else the child alone (krallin/tini README).
    if env.get("TINI_KILL_PROCESS_GROUP") == "1":
        os.killpg(process.pid, signal.SIGTERM)
    else:
        os.kill(process.pid, signal.SIGTERM)
    try:
        process.communicate(timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert marker.exists(), "the training process never received Batch's SIGTERM"


def test_a_two_node_dev_job_runs_both_nodes_through_the_dlc_entrypoint(
    dev_job: dict[str, Any], tmp_path: Path
) -> None:
    """Main and child node of the dev job, each through the DLC entrypoint, with the peer watch between them."""
    ports = {"rank": str(free_port()), "peer": str(free_port())}
    nodes = []
    for index in (0, 1):
        container = Container(tmp_path / f"node{index}")
        container.record("torchrun")
        container.record("hostname", then=f"print('127.0.0.{index + 1} ')")
        nodes.append(container)
    parameters = {"training_command": encode_training_command(DEFAULT_TRAINING_COMMAND)}
    processes = [
        _start_batch_node(nodes[i], dev_job, parameters, index=i, nodes=2, main="127.0.0.1" if i else None,
                          extra=_two_node_env(nodes[i], i, ports))
        for i in (0, 1)
    ]  # fmt: skip
    results = [p.communicate(timeout=60) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], [err for _, err in results]
    ranks = [shlex.split(n.calls("torchrun")[0].env["TORCHRUN_ARGS"]) for n in nodes]
    assert [r[1] for r in ranks] == ["--node_rank=0", "--node_rank=1"]
    assert {r[3] for r in ranks} == {"--master_addr=127.0.0.1"}
    assert "every node joined" in results[0][1]


def test_a_child_that_never_starts_ends_the_attempt_with_the_retried_exit_code(
    dev_job: dict[str, Any], tmp_path: Path
) -> None:
    container = Container(tmp_path)
    container.record("torchrun")
    container.record("hostname", then="print('127.0.0.1 ')")
    extra = {**_two_node_env(container, 0, {"rank": str(free_port()), "peer": str(free_port())}),
             "CDK_NEURON_PEER_JOIN_TIMEOUT": "1"}  # fmt: skip
    process = _start_batch_node(container, dev_job, {}, index=0, nodes=2, extra=extra)
    _, err = process.communicate(timeout=60)
    assert process.returncode == PEER_LOST_EXIT_CODE, err
    assert container.calls("torchrun") == []  # no training step ran
    assert retry_action(dev_job["retry"], exit_code=PEER_LOST_EXIT_CODE) == "RETRY"


@pytest.mark.parametrize(
    ("exit_code", "status_reason", "action"),
    [
        (PEER_LOST_EXIT_CODE, "Essential container in task exited", "RETRY"),  # a child node was lost
        (None, "Host EC2 (instance i-0123456789abcdef0) terminated.", "RETRY"),  # the main node's host
        (1, "Essential container in task exited", "EXIT"),  # the training code's own failure
        (3, "Essential container in task exited", "EXIT"),  # a refused plan
        (2, "Essential container in task exited", "EXIT"),  # a command that was not base64
    ],
)
def test_the_retry_rules_retry_lost_nodes_and_never_the_training_codes_failures(
    dev_job: dict[str, Any], exit_code: int | None, status_reason: str, action: str
) -> None:
    assert retry_action(dev_job["retry"], exit_code=exit_code, status_reason=status_reason) == action


@pytest.mark.parametrize(
    ("value", "pattern", "matches"),
    [
        ("75", "75", True),
        ("175", "75", False),
        ("Host EC2 (instance i-0abc) terminated.", "Host EC2*", True),
        ("A Host EC2 terminated", "Host EC2*", False),
        ("7", "*", True),
    ],
)
def test_the_rehearsal_matches_retry_patterns_as_batch_does(value: str, pattern: str, matches: bool) -> None:
    # Review (issue 22, N4): fnmatch accepted '?', '[...]' and inner '*', which Batch does not.
    assert batch_pattern_matches(value, pattern) is matches


@pytest.mark.parametrize("pattern", ["7?", "[0-9]5", "Host*EC2"])
def test_a_pattern_batch_would_not_read_as_a_wildcard_is_refused(pattern: str) -> None:
    with pytest.raises(AssertionError, match="only a trailing"):
        batch_pattern_matches("75", pattern)


def test_the_contracts_document_is_generated_and_linked_from_the_readme() -> None:
    text = DOC.read_text()
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section == "\n" + render(), "docs/image-and-ami-contracts.md is stale: run `make contracts-doc`"
    assert "(docs/image-and-ami-contracts.md)" in (ROOT / "README.md").read_text()
