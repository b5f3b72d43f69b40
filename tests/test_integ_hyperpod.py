"""training_hyperpod offline: the controller's check under bash with Slurm stubbed, the store reader,
the job command the check submits, the standing cost, and the live-run guard."""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cdk_support import REPO_ROOT

INTEG = REPO_ROOT / "tests" / "integ"
CHECK = INTEG / "integ_support" / "programs" / "hyperpod_check.sh"
TOOLS = (
    "bash",
    "cat",
    "grep",
    "tail",
    "head",
    "cut",
    "mkdir",
    "sha256sum",
    "base64",
    "python3",
    "tr",
    "sleep",
)


def _module(name: str, path: Path) -> ModuleType:
    if str(INTEG) not in sys.path:
        sys.path.insert(0, str(INTEG))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = _module("integ_training_hyperpod", INTEG / "integ_training_hyperpod.py")
reader = _module("store_reader_handler", INTEG / "integ_support" / "store_reader" / "handler.py")


class Controller:
    """A controller's view for the check: PATH of real tools plus sinfo/sbatch stubs, a report dir."""

    def __init__(self, tmp_path: Path) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            real = shutil.which(tool)
            assert real is not None, tool
            (self.bin / tool).symlink_to(real)
        self.report_dir = tmp_path / "store" / "integ"
        self.settings = tmp_path / "controller-program.env"
        self.log = tmp_path / "calls.log"
        self.log.touch()

    def stub(self, name: str, body: str) -> None:
        script = self.bin / name
        script.write_text(f'#!/bin/bash\nprintf "%s\\n" "{name} $*" >> {self.log}\n{body}\n')
        script.chmod(0o755)

    def run(self, job: str = "#!/bin/bash\necho job\n", wait: int = 2) -> subprocess.CompletedProcess[str]:
        self.settings.write_text(
            "\n".join(
                [
                    "PARTITION=train",
                    f"REPORT_DIR={self.report_dir}",
                    "JOB_NAME=integ",
                    f"JOB_SCRIPT_B64={base64.b64encode(job.encode()).decode()}",
                    f"WAIT_SECONDS={wait}",
                    "POLL_SECONDS=1",
                ]
            )
            + "\n"
        )
        return subprocess.run(
            [str(self.bin / "bash"), str(CHECK)],
            env={"PATH": str(self.bin), "CDK_NEURON_CONTROLLER_SETTINGS": str(self.settings)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    def report(self) -> dict[str, Any]:
        return json.loads((self.report_dir / "report.json").read_text())


@pytest.fixture
def controller(tmp_path: Path) -> Controller:
    box = Controller(tmp_path)
    box.stub("sinfo", 'echo "ip-10-90-1-5 idle 128 512000"')
    # sbatch --parsable --wait job.sh, run in REPORT_DIR: the job writes a checkpoint and its output.
    box.stub(
        "sbatch",
        'ckpt="$PWD/ckpt-7.bin"; printf "weights" > "$ckpt"\n'
        'sum=$(sha256sum "$ckpt" | cut -d " " -f 1)\n'
        'printf "train_ok steps=8 world=32 first_loss=1.9 last_loss=0.4\\ncheckpoint_ok %s %s\\n" "$ckpt" "$sum" > integ-7.out\n'
        "echo 7",
    )
    return box


def test_every_check_passes_and_the_report_says_so(controller: Controller) -> None:
    result = controller.run(job="#!/bin/bash\n#SBATCH --nodes=1\nsrun true\n")
    assert result.returncode == 0, result.stderr
    report = controller.report()
    assert report["ok"] is True and report["stage"] == "passed"
    assert report["sinfo"] == "ip-10-90-1-5 idle 128 512000" and report["job_id"] == "7"
    assert "train_ok steps=8" in report["detail"]
    # The job submitted is the one the suite rendered, waited for.
    assert (controller.report_dir / "job.sh").read_text() == "#!/bin/bash\n#SBATCH --nodes=1\nsrun true\n"
    assert "sbatch --parsable --wait job.sh" in controller.log.read_text()


def test_no_idle_node_is_reported_as_the_sinfo_stage(controller: Controller) -> None:
    controller.stub("sinfo", '[ "$1" = --noheader ] && exit 0; echo "train up 1 maint ip-10-90-1-5"')
    result = controller.run(wait=1)
    assert result.returncode == 1
    report = controller.report()
    assert report["ok"] is False and report["stage"] == "sinfo"
    assert "no idle node in partition train" in report["detail"] and "maint" in report["detail"]
    assert "sbatch" not in controller.log.read_text()


@pytest.mark.parametrize(
    ("sbatch", "stage", "detail"),
    [
        ('printf "boom\\n" > integ-8.out; echo 8; exit 3', "job", "job 8 exited 3: boom"),
        ('printf "checkpoint_ok /x 00\\n" > integ-9.out; echo 9', "training", "reported no training steps"),
        (
            'printf "train_ok steps=8\\n" > integ-9.out; echo 9',
            "checkpoint",
            "reported no checkpoint",
        ),
        (
            'printf "train_ok steps=8\\ncheckpoint_ok %s/c.bin 00\\n" "$PWD" > integ-9.out; '
            "printf x > c.bin; echo 9",
            "checkpoint",
            "the job wrote 00",
        ),
    ],
)
def test_each_failed_check_names_its_stage(
    controller: Controller, sbatch: str, stage: str, detail: str
) -> None:
    controller.stub("sbatch", sbatch)
    result = controller.run()
    assert result.returncode == 1
    report = controller.report()
    assert (report["ok"], report["stage"]) == (False, stage)
    assert detail in report["detail"], report


def test_the_job_command_trains_in_the_image_with_the_program_it_carries() -> None:
    from integ_support import programs

    command = suite.JOB_COMMAND
    prefix = f"export {programs.PROGRAM_VARIABLE}="
    assert command.startswith(prefix)
    carried, _, rest = command[len(prefix) :].partition("; ")
    assert base64.b64decode(carried).decode() == programs.source("train_steps")
    assert rest == programs.training_command()


def test_the_training_program_checks_its_loss_and_names_its_checkpoint() -> None:
    steps = _module("train_steps", INTEG / "integ_support" / "programs" / "train_steps.py")
    assert steps.loss_fell([2.0, 1.0, 0.5])
    assert not steps.loss_fell([2.0, 1.9])  # 0.95 of the first: not trained
    assert not steps.loss_fell([2.0])
    assert not steps.loss_fell([2.0, float("nan")])
    assert str(steps.checkpoint_path("/checkpoints", "42")) == "/checkpoints/integ/steps-42.pt"
    with pytest.raises(ValueError, match="CHECKPOINT_DIR is not set"):
        steps.checkpoint_path("", "42")


def test_the_reader_returns_the_report_or_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MOUNT", str(tmp_path))
    assert reader.handler({"path": "integ/report.json"}, None)["stage"] == "pending"
    (tmp_path / "integ").mkdir()
    (tmp_path / "integ" / "report.json").write_text(
        json.dumps({"ok": True, "stage": "passed", "job_id": "7"})
    )
    assert reader.handler({"path": "integ/report.json"}, None) == {
        "ok": True,
        "stage": "passed",
        "job_id": "7",
    }
    (tmp_path / "integ" / "report.json").write_text("{broken")
    assert reader.handler({}, None)["stage"] == "unreadable"
    assert reader.handler({"path": "../etc/passwd"}, None)["stage"] == "refused"


def test_the_standing_cost_is_printed_with_its_sources() -> None:
    from integ_support import estimate
    from integ_support.registry import SUITES

    info = SUITES["training_hyperpod"]
    assert info.opt_in
    text, expected, most = estimate.render([info], "us-east-1")
    # ml.trn1.32xlarge $28.497/h + ml.m5.xlarge $0.23/h (FMB, proxies for HyperPod's rates).
    assert "standing cost while the cluster exists: $28.73/h" in text
    assert "1 x ml.m5.xlarge (Slurm controller)" in text and "hosting rate as proxy" in text
    assert 59 < expected < 60 and 102 < most < 103


def test_a_live_run_refuses_without_an_efs_utils_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(suite.EFS_UTILS_VARIABLE, raising=False)
    with pytest.raises(SystemExit, match="CDK_NEURON_INTEG_EFS_UTILS"):
        suite.main()
