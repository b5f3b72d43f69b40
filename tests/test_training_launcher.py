"""The multi-node launcher: run the real script under bash as a main node and as a child node."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cdk_neuron import timeouts
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import program
from cdk_neuron.planner import plan_training
from cdk_neuron.training.launcher import (
    DEFAULT_MASTER_PORT,
    DEFAULT_PEER_PORT,
    DEFAULT_ROOT_COMM_PORT,
    DEFAULT_TRAINING_COMMAND,
    LAUNCHER_NAME,
    LAUNCHER_PATH,
    LAUNCHER_SCRIPT,
    TRAINING_COMMAND_PARAMETER,
    decode_training_command,
    encode_training_command,
    job_environment,
    launcher_command,
    node_environment,
)

BASH = shutil.which("bash")
LAUNCHER = program("training/launcher.sh")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

REPORT = (
    'printf "%s\\n" "MASTER_ADDR=$MASTER_ADDR" "MASTER_PORT=$MASTER_PORT" "ROOT=$NEURON_RT_ROOT_COMM_ID" '
    '"NODE_RANK=$NODE_RANK" "NNODES=$NNODES" "WORLD_SIZE=$WORLD_SIZE" "DP=$NEURON_DP_DEGREE" '
    '"TORCHRUN_ARGS=$TORCHRUN_ARGS"'
)


@pytest.fixture
def fake_ip(tmp_path: Path) -> Path:
    """A stand-in `ip` that reports 10.0.7.21/24 on eth0, as the container's task interface would."""
    script = tmp_path / "ip"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *"dev eth0"*) '
        'echo "2: eth0    inet 10.0.7.21/24 brd 10.0.7.255 scope global eth0";; esac\n'
    )
    script.chmod(0o755)
    return tmp_path


def run_launcher(env: dict[str, str], command: str, path: Path) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": f"{path}:{os.environ['PATH']}",
        "NPROC_PER_NODE": "32",
        "NEURON_TP_DEGREE": "32",
        "NEURON_PP_DEGREE": "1",
        "MASTER_PORT": str(DEFAULT_MASTER_PORT),
        "ROOT_COMM_PORT": str(DEFAULT_ROOT_COMM_PORT),
        "CDK_NEURON_PEER_PORT": str(DEFAULT_PEER_PORT),
        **timeouts.peer_settings(),
        # These tests look at one node's variables alone; tests/test_peer_watch.py runs whole jobs.
        "CDK_NEURON_PEER_WATCH": "off",
    }
    assert BASH is not None
    return subprocess.run(
        [BASH, str(LAUNCHER), command],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def parsed(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in result.stdout.strip().splitlines())


def test_main_node_uses_its_own_address(fake_ip: Path) -> None:
    # Batch does not set AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS on the main node.
    out = parsed(
        run_launcher({"AWS_BATCH_JOB_NODE_INDEX": "0", "AWS_BATCH_JOB_NUM_NODES": "4"}, REPORT, fake_ip)
    )
    assert out["MASTER_ADDR"] == "10.0.7.21"
    assert out["ROOT"] == f"10.0.7.21:{DEFAULT_ROOT_COMM_PORT}"
    assert out["NODE_RANK"] == "0"


def test_child_node_uses_the_main_node_address(fake_ip: Path) -> None:
    out = parsed(
        run_launcher(
            {
                "AWS_BATCH_JOB_NODE_INDEX": "3",
                "AWS_BATCH_JOB_NUM_NODES": "4",
                "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.7.5",
            },
            REPORT,
            fake_ip,
        )
    )
    assert out["MASTER_ADDR"] == "10.0.7.5"
    assert out["ROOT"] == f"10.0.7.5:{DEFAULT_ROOT_COMM_PORT}"
    assert out["NODE_RANK"] == "3"
    assert out["NNODES"] == "4"
    # 4 nodes x 32 ranks, TP 32 x PP 1 -> DP 4; the sample's hard-coded WORLD_SIZE=1 is gone.
    assert out["WORLD_SIZE"] == "128"
    assert out["DP"] == "4"
    assert out["TORCHRUN_ARGS"] == (
        f"--nnodes=4 --node_rank=3 --nproc_per_node=32 --master_addr=10.0.7.5 --master_port={DEFAULT_MASTER_PORT}"
    )


def test_torch_and_neuron_root_communicator_use_different_non_ephemeral_ports(fake_ip: Path) -> None:
    out = parsed(run_launcher({"AWS_BATCH_JOB_NUM_NODES": "2"}, REPORT, fake_ip))
    ports = {int(out["MASTER_PORT"]), int(out["ROOT"].rsplit(":", 1)[1])}
    assert len(ports) == 2
    assert all(port < 32768 for port in ports)  # below Linux's default ephemeral range


def test_layout_that_does_not_divide_the_world_fails_clearly(fake_ip: Path) -> None:
    result = run_launcher(
        {"AWS_BATCH_JOB_NUM_NODES": "3", "NEURON_PP_DEGREE": "2"}, "echo should-not-run", fake_ip
    )
    assert result.returncode == 1
    assert "not divisible by TP x PP = 64" in result.stderr
    assert "should-not-run" not in result.stdout


def test_empty_training_command_is_refused(fake_ip: Path) -> None:
    result = run_launcher({"AWS_BATCH_JOB_NUM_NODES": "1"}, "", fake_ip)
    assert result.returncode == 2
    assert "no training command" in result.stderr


def test_command_runs_through_bash_with_the_exported_variables(fake_ip: Path) -> None:
    result = run_launcher(
        {"AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_NODE_INDEX": "1",
         "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.7.5"},
        'echo "rank $NODE_RANK of $NNODES"; exit 7',
        fake_ip,
    )  # fmt: skip
    assert result.stdout.strip() == "rank 1 of 2"
    assert result.returncode == 7  # the command's own exit code reaches Batch (retry policy reads it)


def _bin_with(tmp_path: Path, scripts: dict[str, str]) -> Path:
    """A PATH holding only awk plus the given stand-in tools."""
    bare = tmp_path / "bin"
    bare.mkdir()
    awk = shutil.which("awk")
    assert awk is not None
    (bare / "awk").symlink_to(awk)
    for name, body in scripts.items():
        (bare / name).write_text(f"#!/bin/sh\n{body}\n")
        (bare / name).chmod(0o755)
    return bare


def _run_bare(path: Path) -> subprocess.CompletedProcess[str]:
    assert BASH is not None
    return subprocess.run(
        [BASH, str(LAUNCHER), "echo $MASTER_ADDR"],
        env={"PATH": str(path), "NPROC_PER_NODE": "2", "NEURON_TP_DEGREE": "2", "NEURON_PP_DEGREE": "1"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_main_node_address_falls_back_to_hostname_without_ip(tmp_path: Path) -> None:
    result = _run_bare(_bin_with(tmp_path, {"hostname": 'echo "10.1.2.3 10.9.9.9 "'}))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "10.1.2.3"


def test_main_node_without_any_address_tool_fails_loudly(tmp_path: Path) -> None:
    result = _run_bare(_bin_with(tmp_path, {}))
    assert result.returncode == 1
    assert "cannot determine the main node's address" in result.stderr


def test_container_command_runs_the_mounted_launcher_with_the_batch_parameter() -> None:
    command = launcher_command()
    assert command == ["/bin/bash", LAUNCHER_PATH, "--command-base64", f"Ref::{TRAINING_COMMAND_PARAMETER}"]
    # No word of the command is shell syntax: an entrypoint that re-parses it (eval) runs the same words.
    assert all(re.fullmatch(r"[A-Za-z0-9/:._-]+", word) for word in command)
    assert LAUNCHER_PATH == "/opt/cdk-neuron/training/launcher.sh"
    assert LAUNCHER.read_text() == LAUNCHER_SCRIPT  # the public text is the file's
    assert "$TORCHRUN_ARGS" in DEFAULT_TRAINING_COMMAND
    assert LAUNCHER_NAME == "cdk-neuron-launcher"


def test_script_key_lines() -> None:
    assert (
        'MAIN_ADDRESS="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-${CDK_NEURON_MAIN_ADDRESS:-}}"'
        in LAUNCHER_SCRIPT
    )
    assert 'export NEURON_RT_ROOT_COMM_ID="${MASTER_ADDR}:${ROOT_COMM_PORT:-29600}"' in LAUNCHER_SCRIPT
    assert 'NODE_INDEX="${AWS_BATCH_JOB_NODE_INDEX:-${CDK_NEURON_NODE_INDEX:-0}}"' in LAUNCHER_SCRIPT
    assert 'exec "${BASH:-/bin/bash}" -c "${command_line}"' in LAUNCHER_SCRIPT
    assert "localhost" not in LAUNCHER_SCRIPT


def test_environment_from_plan_and_catalog() -> None:
    trn2 = get_instance("trn2.48xlarge")
    plan = plan_training("trn2.48xlarge", 8, tensor_parallel=32, pipeline_parallel=4)
    env = job_environment(trn2, plan, compile_cache_url="s3://b/p/", checkpoint_dir="/checkpoints")
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["NEURON_COMPILE_CACHE_URL"] == "s3://b/p/"
    assert env["NEURON_TP_DEGREE"] == "32"
    assert env["NEURON_PP_DEGREE"] == "4"
    assert env["NPROC_PER_NODE"] == "64"  # logical cores at LNC=2
    assert env["NEURON_LOGICAL_NC_CONFIG"] == "2"
    assert env["CHECKPOINT_DIR"] == "/checkpoints"
    assert env["MASTER_PORT"] != env["ROOT_COMM_PORT"]
    trn1 = get_instance("trn1.32xlarge")
    bare = node_environment(
        trn1, plan_training("trn1.32xlarge", 2, 32), compile_cache_url=None, checkpoint_dir=None
    )
    assert "NEURON_COMPILE_CACHE_URL" not in bare
    assert "CHECKPOINT_DIR" not in bare
    assert "NEURON_LOGICAL_NC_CONFIG" not in bare  # LNC does not exist on trn1


@pytest.mark.parametrize("name", ["AWS_BATCH_JOB_ID", "has-dash", "1LEADING", ""])
def test_extra_environment_names_are_validated(name: str) -> None:
    trn1 = get_instance("trn1.32xlarge")
    with pytest.raises(NeuronConfigError, match="environment"):
        job_environment(
            trn1,
            plan_training("trn1.32xlarge", 1, 32),
            compile_cache_url=None,
            checkpoint_dir=None,
            extra={name: "x"},
        )


def test_extra_environment_overrides_cluster_values() -> None:
    trn1 = get_instance("trn1.32xlarge")
    env = job_environment(
        trn1,
        plan_training("trn1.32xlarge", 1, 32),
        compile_cache_url=None,
        checkpoint_dir=None,
        extra={"MASTER_PORT": "29500", "XLA_USE_BF16": "1"},
    )
    assert env["MASTER_PORT"] == "29500"
    assert env["XLA_USE_BF16"] == "1"


@pytest.mark.parametrize(
    "command",
    [
        DEFAULT_TRAINING_COMMAND,
        "neuron_parallel_compile torchrun $TORCHRUN_ARGS train.py",
        "printf %s \"$PROGRAM\" | base64 -d > /tmp/p.py && torchrun $TORCHRUN_ARGS /tmp/p.py --x 'a b'",
        "python3 -c 'print(\"é\")'; echo $((1 + 2))",
    ],
)
def test_encoding_is_one_base64_word_that_decodes_to_the_command(command: str) -> None:
    encoded = encode_training_command(command)
    assert re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", encoded)
    assert decode_training_command(encoded) == command


@pytest.mark.parametrize("value", ["torchrun $TORCHRUN_ARGS train.py", "abc", "!!!!", "//79"])
def test_decoding_refuses_what_is_not_base64_of_text(value: str) -> None:
    assert decode_training_command(value) is None


def test_launcher_decodes_the_base64_command(fake_ip: Path) -> None:
    assert BASH is not None
    result = subprocess.run(
        [BASH, str(LAUNCHER), "--command-base64", encode_training_command(f'{REPORT} && echo "$1"')],
        env={
            "PATH": f"{fake_ip}:{os.environ['PATH']}",
            "NPROC_PER_NODE": "32",
            "NEURON_TP_DEGREE": "32",
            "NEURON_PP_DEGREE": "1",
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "TORCHRUN_ARGS=--nnodes=1 --node_rank=0 --nproc_per_node=32" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (["--command-base64", "torchrun", "$TORCHRUN_ARGS", "train.py"], "expected one base64 word"),
        (["--command-base64", "torchrun $TORCHRUN_ARGS train.py"], "is not base64"),
        (["--command-base64", "dHJhaW4"], "is not base64"),  # 7 characters: not a whole base64 text
        (["--command-base64", "ICAg"], "the decoded command is empty"),  # three spaces
        (["torchrun", "--nnodes=1", "train.py"], "got 3 arguments"),
    ],
)
def test_launcher_refuses_a_command_that_did_not_arrive_as_one_base64_word(
    fake_ip: Path, arguments: list[str], why: str
) -> None:
    assert BASH is not None
    result = subprocess.run(
        [BASH, str(LAUNCHER), *arguments],
        env={"PATH": f"{fake_ip}:{os.environ['PATH']}", "NPROC_PER_NODE": "32", "NEURON_TP_DEGREE": "32",
             "NEURON_PP_DEGREE": "1"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert why in result.stderr
    assert "base64 | tr -d" in result.stderr  # how to send it
    assert "TORCHRUN_ARGS=" not in result.stdout
