"""The timing-report format the integ suites write, and the timing models reading it (offline)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cdk_neuron import measurements
from cdk_neuron.cli import timings
from cdk_neuron.cli.main import main
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import MeasuredStartup, floors
from cdk_neuron.serving.timing import SAFETY, ec2_startup, sagemaker_timeouts, startup_model

SAMPLES = Path(__file__).parent / "fixtures" / "integ"


def test_sample_reports_round_trip() -> None:
    for path in sorted(SAMPLES.glob("*.json")):
        report = measurements.load_report(path)
        assert report.to_json() == json.loads(path.read_text()), path.name


def test_ec2_report_becomes_a_measured_startup_that_the_budget_uses() -> None:
    measured = MeasuredStartup.from_report(SAMPLES / "serving_ec2.json")
    # 652.4 s launch -> InService, less the model's estimated boot and image pull on inf2.xlarge.
    before = math.ceil(floors.boot().estimate_seconds + floors.image_pull("inf2.xlarge").estimate_seconds)
    assert before == 152  # 80 s boot + 71.3 s pull
    assert measured.container_ready_seconds == 653 - before
    assert "serving_ec2" in measured.source and "estimated 152 s" in measured.source
    budget = ec2_startup(0.92, precompiled=False, instance_type="inf2.xlarge", measured=measured)
    model = startup_model(
        0.92, backend="ec2", precompiled=False, instance_type="inf2.xlarge", measured=measured
    )
    boot_and_pull = model.phase("instance boot").budget_seconds + model.phase("image pull").budget_seconds
    assert budget.seconds == boot_and_pull + math.ceil(SAFETY * measured.container_ready_seconds)
    assert measured.source in budget.explanation


def test_sagemaker_report_sets_the_container_timeout() -> None:
    measured = MeasuredStartup.from_report(SAMPLES / "serving_sagemaker.json")
    timeouts = sagemaker_timeouts(0.92, precompiled=False, instance_type="inf2.xlarge", measured=measured)
    assert timeouts.container_startup_health_check_seconds == 1217  # 1.5 x 811 s, rounded up


def test_training_and_failed_reports_are_refused() -> None:
    with pytest.raises(NeuronConfigError, match="only serving reports"):
        MeasuredStartup.from_report(SAMPLES / "training_smoke.json")
    failed = measurements.load_report(SAMPLES / "serving_ec2.json")
    failed = measurements.TimingReport.from_json({**failed.to_json(), "outcome": "failed"})
    with pytest.raises(NeuronConfigError, match="run failed"):
        MeasuredStartup.from_report(failed)


def test_compare_sets_measurements_beside_the_models() -> None:
    rows = timings.compare(measurements.load_report(SAMPLES / "serving_ec2.json"))
    assert [(r.what, r.verdict) for r in rows] == [("EC2 launch -> InService", "within budget")]
    rows = timings.compare(measurements.load_report(SAMPLES / "training_smoke.json"))
    assert [(r.what, r.unit, r.verdict) for r in rows] == [
        ("checkpoint write, one client", "MiB/s", "SLOWER than assumed")
    ]


def test_timings_command_prints_every_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timings", "-o", "text", *map(str, sorted(SAMPLES.glob("*.json")))]) == 0
    out = capsys.readouterr().out
    assert "EC2 launch -> InService\t652.4 s\t" in out and "within budget" in out
    assert "checkpoint_write_mib_per_second: " in out
    assert out.count("(passed)") + out.count("(failed)") == len(list(SAMPLES.glob("*.json")))


def test_timings_command_refuses_a_report_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    assert main(["timings", str(missing)]) == 2
    assert f"report='{missing}': cannot read it" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other"}, "not a timing report"),
        ({"version": 2}, "reads version 1"),
        ({"suite": "nope"}, "use one of"),
        ({"timings": {"made_up_seconds": 1}}, "unknown"),
        ({"timings": {"job_running_seconds": -1}}, ">= 0"),
    ],
)
def test_malformed_reports_are_refused(change: dict[str, object], message: str) -> None:
    data = {**json.loads((SAMPLES / "training_smoke.json").read_text()), **change}
    with pytest.raises(NeuronConfigError, match=message):
        measurements.TimingReport.from_json(data)
