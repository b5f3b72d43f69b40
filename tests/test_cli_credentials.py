"""Without AWS credentials every AWS command prints one sentence saying how to provide them and exits 3.

The environment is emptied of every AWS_* variable, points the shared credentials and config files
at empty files and disables the instance metadata service, so botocore finds nothing and never
waits on the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdk_neuron.cli.aws import NO_CREDENTIALS
from cdk_neuron.cli.main import main

IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
DEV = {
    "region": "us-east-1",
    "az_ids": ["use1-az6"],
    "removal_policy": "destroy",
    "training": {
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "plan": {"nodes": 2, "tensor_parallel": 32},
        "job_image": IMAGE,
    },
    "serving": {
        "instance_type": "inf2.xlarge",
        "model": {
            "model_id": "meta-llama/Llama-3.2-3B-Instruct",
            "parameters": 3_210_000_000,
            "tensor_parallel": 2,  # one replica on both cores
            "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
        },
    },
}


@pytest.fixture
def no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    empty = tmp_path / "empty"
    empty.write_text("")
    settings = {
        "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        "AWS_CONFIG_FILE": str(empty),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    return settings


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps(
            {"context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": {"dev": DEV}}}
        )
    )
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["preflight"],
        ["preflight", "--json"],
        ["submit", "--nodes", "2", "--", "python", "train.py"],
        ["status", "0a1b2c3d-job"],
        ["status", "--watch", "0a1b2c3d-job"],
        ["logs", "--follow", "0a1b2c3d-job"],
        ["cancel", "0a1b2c3d-job"],
        ["terminate", "0a1b2c3d-job"],
        ["list"],
        ["cost", "--live-prices"],
    ],
    ids=[
        "preflight",
        "preflight-json",
        "submit",
        "status",
        "status-watch",
        "logs",
        "cancel",
        "terminate",
        "list",
        "cost-live-prices",
    ],
)
def test_no_credentials_exit_3_with_one_sentence(
    no_credentials: dict[str, str], config: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main([argv[0], "--config", config, *argv[1:]]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == NO_CREDENTIALS + "\n"


def test_unknown_profile_exit_3(
    no_credentials: dict[str, str], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preflight", "--config", config, "--profile", "nope"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and "--profile" in err


def test_offline_commands_need_no_credentials(
    no_credentials: dict[str, str], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--config", config]) == 0
    assert main(["cost", "--config", config]) == 0


def test_console_script_without_credentials(no_credentials: dict[str, str], config: str) -> None:
    """The installed entry point, in a fresh process: one sentence on stderr, no traceback, exit 3."""
    script = Path(sys.executable).with_name("cdk-neuron")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | no_credentials
    # The config names this app's loader (stacks.config:deployments): the app is importable from its root.
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    result = subprocess.run(
        [str(script), "preflight", "--config", config], capture_output=True, text=True, env=env
    )
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr == NO_CREDENTIALS + "\n"
