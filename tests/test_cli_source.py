"""Where the CLI reads its deployments: --config (a cdk.json loader), --app (a cloud assembly), --synth.

Without an option: the cdk.json loader when ./cdk.json names one, else ./cdk.out, else one line
naming the options. ``--synth`` runs ``npx cdk synth`` (a stand-in npx here: the real CDK CLI
would synthesize for tens of seconds) and fails in one line when the CDK CLI is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from assembly_writer import serving_record, training_record, write_manifest, write_stack

from cdk_neuron.cli import source
from cdk_neuron.cli.main import main
from cdk_support import REPO_ROOT


@pytest.fixture
def cloud_assembly(tmp_path: Path) -> Path:
    folder = tmp_path / "assembly"
    artifacts = {
        "Ml": write_stack(
            folder, "Ml", records={"/Ml/Cluster": training_record(), "/Ml/Fleet": serving_record()}
        )
    }
    return write_manifest(folder, artifacts)


def test_the_cdk_json_loader_comes_first(tmp_path: Path, cloud_assembly: Path) -> None:
    shutil.copy(REPO_ROOT / "cdk.json", tmp_path / "cdk.json")
    shutil.copytree(cloud_assembly, tmp_path / "cdk.out")
    found = source.load(cwd=tmp_path)
    assert list(found.deployments) == ["dev", "staging", "prod"] and "cdk-neuron:deployments" in found.origin


def test_without_a_loader_cdk_out_is_read(tmp_path: Path, cloud_assembly: Path) -> None:
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": {}}))
    shutil.copytree(cloud_assembly, tmp_path / "cdk.out")
    found = source.load(cwd=tmp_path)
    assert list(found.deployments) == ["us-east-1"] and found.qualifier == "custom1"


def test_without_either_one_line_names_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plan"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--app DIR" in err and "--synth" in err and "--config CDK_JSON" in err


def test_app_before_or_after_the_command(cloud_assembly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--app", str(cloud_assembly), "plan", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["plan", "--json", "--app", str(cloud_assembly)]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert [e["name"] for e in first["environments"]] == ["us-east-1"]


def fake_npx(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    npx = folder / "npx"
    npx.write_text("#!/bin/sh\n" + body)
    npx.chmod(npx.stat().st_mode | stat.S_IEXEC)
    return folder


def test_synth_runs_the_cdk_cli_and_reads_what_it_writes(
    tmp_path: Path,
    cloud_assembly: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "argv"
    # argv: --no-install cdk synth --quiet -o OUTDIR '**'
    bin_dir = fake_npx(tmp_path / "bin", f'echo "$@" > {log}\ncp -R {cloud_assembly}/. "$6"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    assert main(["cost", "--synth", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in doc["summary"]] == ["us-east-1"]
    argv = log.read_text().split()
    assert argv[:5] == ["--no-install", "cdk", "synth", "--quiet", "-o"] and argv[6] == "**"
    assert not Path(argv[5]).exists()  # the temporary assembly is removed afterwards


def test_synth_failures_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["plan", "--synth"]) == 2
    assert "the CDK CLI is missing (no npx on PATH)" in capsys.readouterr().err
    missing = fake_npx(
        tmp_path / "missing",
        'echo "npm error npx canceled due to missing packages and no YES option" >&2\nexit 1\n',
    )
    monkeypatch.setenv("PATH", str(missing))
    assert main(["plan", "--synth"]) == 2
    assert "the CDK CLI is missing: install it" in capsys.readouterr().err
    broken = fake_npx(tmp_path / "broken", 'echo "Traceback..." >&2\necho "ValueError: boom" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", str(broken))
    assert main(["plan", "--synth"]) == 2
    err = capsys.readouterr().err
    assert err == "cdk-neuron: --synth=True: cdk synth failed (exit 1): ValueError: boom\n"


def test_reading_an_assembly_imports_neither_aws_cdk_nor_boto3(cloud_assembly: Path) -> None:
    """plan, cost and cost --diff from a cloud assembly stay offline and fast, like from cdk.json."""
    app = str(cloud_assembly)
    probe = (
        "import sys, io, contextlib\n"
        "from cdk_neuron.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['plan', '--app', {app!r}, '--json']) == 0\n"
        f"    assert main(['cost', '--app', {app!r}, '--json']) == 0\n"
        f"    assert main(['cost', '--diff', {app!r}, {app!r}, '--json']) == 0\n"
        "print(sorted(m for m in ('aws_cdk', 'boto3', 'botocore', 'jsii') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
