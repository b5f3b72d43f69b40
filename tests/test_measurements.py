"""The timing-report format the integ suites write, and the timing models reading it (offline)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron import measurements, planner
from cdk_neuron.cli import timings
from cdk_neuron.cli.main import main
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import MeasuredStartup, floors
from cdk_neuron.serving.timing import SAFETY, ec2_startup, ec2_startup_model, sagemaker_timeouts

SAMPLES = Path(__file__).parent / "fixtures" / "integ"


def test_sample_reports_round_trip() -> None:
    for path in sorted(SAMPLES.glob("*.json")):
        report = measurements.load_report(path)
        assert report.to_json() == json.loads(path.read_text()), path.name


def test_ec2_report_becomes_a_measured_startup_that_the_budget_uses() -> None:
    measured = MeasuredStartup.from_report(SAMPLES / "serving_ec2.json")
    # 652.4 s launch -> InService, less the model's estimated boot and image pull on inf2.xlarge.
    before = math.ceil(floors.boot().estimate_seconds + floors.image_pull("inf2.xlarge").estimate_seconds)
    assert before == 320  # 80 s boot + 240 s pull (AWS's published figure for a 15-20 GB image)
    assert measured.container_ready_seconds == 653 - before
    assert "serving_ec2" in measured.source and "estimated 320 s" in measured.source
    budget = ec2_startup(0.92, precompiled=False, instance_type="inf2.xlarge", measured=measured)
    model = ec2_startup_model(0.92, precompiled=False, instance_type="inf2.xlarge", measured=measured)
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
    # No floor for the whole start-up: the load has none (no host-to-device figure is published).
    assert rows[0].floor is None and rows[0].over_floor is None
    rows = timings.compare(measurements.load_report(SAMPLES / "training_smoke.json"))
    assert [(r.what, r.unit, r.verdict) for r in rows] == [
        ("checkpoint write, one client", "MiB/s", "SLOWER than assumed")
    ]


def test_timings_command_prints_every_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timings", "-o", "text", *map(str, sorted(SAMPLES.glob("*.json")))]) == 0
    out = capsys.readouterr().out
    assert "EC2 launch -> InService\t652.4 s\t" in out and "within budget" in out
    assert "within budget\t-\t-" in out  # no floor for launch -> InService: the load has none
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


def test_the_nodes_phases_line_becomes_timing_keys() -> None:
    from integ_support.collect import node_phases

    line = "cdk-neuron: phases node_boot=41 image_pull=70 artifact_transfer=12 ready=702"
    assert node_phases(line) == {
        "node_boot_seconds": 41.0,
        "image_pull_seconds": 70.0,
        "artifact_transfer_seconds": 12.0,
        "boot_to_ready_seconds": 702.0,
    }
    # Unknown names and non-numbers are left out, never guessed.
    assert node_phases("cdk-neuron: phases node_boot=x other=3 ready=9") == {"boot_to_ready_seconds": 9.0}


def test_a_report_with_the_nodes_phases_measures_every_phase() -> None:
    report = measurements.TimingReport(
        suite="serving_ec2",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        timings={
            "instance_launch_to_in_service_seconds": 760.0,
            "node_boot_seconds": 41.0,
            "image_pull_seconds": 70.0,
            "artifact_transfer_seconds": 12.0,
            "boot_to_ready_seconds": 702.0,
        },
    )
    measured = MeasuredStartup.from_report(report)
    # 760 - 702 = 58 s of EC2 provisioning before the kernel, + 41 s to the pull.
    assert (measured.boot_seconds, measured.image_pull_seconds) == (99, 70)
    assert (measured.artifact_download_seconds, measured.container_ready_seconds) == (12, 702 - 41 - 70 - 12)
    assert "the node's phases" in measured.source
    model = ec2_startup_model(0.92, precompiled=True, instance_type="inf2.xlarge", measured=measured)
    assert {p.basis for p in model.phases} == {"measured"}
    assert model.phase("instance boot").ratio == pytest.approx(99 / 40)


def test_a_warm_start_report_measures_the_load_and_never_a_cold_boot_or_pull() -> None:
    # Issue 25: with a warm pool (dev's scale-from-zero) the measured start may be a warm one; ready.sh
    # then writes warm_boot instead of node_boot, and no image_pull. Its keys are the warm start's own.
    from integ_support.collect import node_phases

    timings = node_phases("cdk-neuron: phases warm_boot=38 ready=600")
    assert timings == {"warm_boot_seconds": 38.0, "warm_boot_to_ready_seconds": 600.0}
    report = measurements.TimingReport(
        suite="scale_from_zero",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        timings={"warm_start_to_in_service_seconds": 640.0, **timings},
    )
    measured = MeasuredStartup.from_report(report)
    assert (measured.boot_seconds, measured.image_pull_seconds, measured.artifact_download_seconds) == (
        None,
        None,
        None,
    )
    assert measured.container_ready_seconds == 600 - 38
    assert "a warm start" in measured.source
    # The cold model keeps its estimated boot and pull; only the load is the measurement.
    model = ec2_startup_model(6.0, precompiled=True, instance_type="inf2.xlarge", measured=measured)
    assert model.phase("image pull").basis == "estimated"
    assert model.phase("load and warm-up").estimate_seconds == 562.0


def test_a_warm_pool_preparation_reports_the_cold_phases_and_the_warm_start_its_own() -> None:
    # Issue 25: the warm pool's preparation is a new launch (prepared=, not ready=): its pull and
    # transfer are the cold path's measurements, and they feed back as such; the warm start's transfer
    # (a RAM-backed directory fetched again) keeps its own key.
    from integ_support.collect import node_phases

    prepared = node_phases("cdk-neuron: phases node_boot=44 image_pull=250 artifact_transfer=30 prepared=330")
    assert prepared == {
        "node_boot_seconds": 44.0,
        "image_pull_seconds": 250.0,
        "artifact_transfer_seconds": 30.0,
        "boot_to_prepared_seconds": 330.0,
    }
    warm = node_phases("cdk-neuron: phases warm_boot=30 artifact_transfer=9 ready=640")
    assert warm == {
        "warm_boot_seconds": 30.0,
        "warm_artifact_transfer_seconds": 9.0,
        "warm_boot_to_ready_seconds": 640.0,
    }
    report = measurements.TimingReport(
        suite="scale_from_zero",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        timings={"warm_start_to_in_service_seconds": 700.0, **prepared, **warm},
    )
    measured = MeasuredStartup.from_report(report)
    assert measured.boot_seconds is None  # a warm boot is never fed back as a new launch's
    assert (measured.image_pull_seconds, measured.artifact_download_seconds) == (250, 30)
    assert measured.container_ready_seconds == 640 - 30 - 9
    assert "preparation's image pull and transfer" in measured.source


def test_a_warm_start_without_its_phases_line_is_refused_not_guessed() -> None:
    report = measurements.TimingReport(
        suite="scale_from_zero",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        timings={"warm_start_to_in_service_seconds": 700.0},
    )
    with pytest.raises(NeuronConfigError, match="not the warm start's phases line"):
        MeasuredStartup.from_report(report)
    bare = measurements.TimingReport(
        suite="scale_from_zero", region="us-east-1", run_at="2026-12-02T05:00:00Z", outcome="passed"
    )
    with pytest.raises(NeuronConfigError, match="has no instance_launch_to_in_service_seconds"):
        MeasuredStartup.from_report(bare)


def test_compare_sets_a_warm_pool_fleets_starts_beside_both_paths() -> None:
    # Issue 25: the integ kit's scale_from_zero has dev's warm pool; its report holds the pool's
    # preparation (a cold launch) and the wake out of the pool (a warm start). Each is set beside its
    # own path's model: the claim "every phase we control within 2x its floor" is tested by a run.
    report = measurements.TimingReport(
        suite="scale_from_zero",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        model={"model_id": "m", "parameters": 3_212_749_824, "dtype": "bf16"},
        timings={
            "warm_pool_launch_to_stopped_seconds": 380.0,
            "launch_to_kernel_seconds": 12.0,
            "node_boot_seconds": 44.0,
            "image_pull_seconds": 250.0,
            "artifact_transfer_seconds": 3.0,
            "boot_to_prepared_seconds": 330.0,
            "warm_start_to_in_service_seconds": 700.0,
            "warm_start_to_kernel_seconds": 15.0,
            "warm_boot_seconds": 30.0,
            "warm_boot_to_ready_seconds": 680.0,
        },
    )
    rows = {r.what: r for r in timings.compare(report)}
    assert set(rows) == {
        "EC2 warm start (out of the warm pool) -> InService",
        "instance boot (into the warm pool)",
        "warm boot (out of the warm pool)",
        "image pull",
        "artifact transfer",
    }
    # Boot as the model means it: EC2's share before the kernel (activity start -> boot_epoch) + the
    # node's own; never from the pool launch's EndTime, which includes the stop (review 25 S1).
    into = rows["instance boot (into the warm pool)"]
    assert into.measured == 12 + 44 and into.floor == floors.BOOT_FLOOR_SECONDS
    out = rows["warm boot (out of the warm pool)"]
    assert out.measured == 15 + 30 and out.floor == floors.WARM_START_FLOOR_SECONDS
    assert out.modelled == SAFETY * floors.warm_boot().estimate_seconds
    # A 3B model (dev's) goes to the data volume, which a warm pool sizes to the instance's baseline
    # EBS rate. The hardware floor does not move with that choice (review 25 S4); the floor as
    # provisioned does, and it is the pool's the report is compared with.
    weights = planner.size_model(3_212_749_824, dtype="bf16", instance_type="inf2.xlarge").weights_gib
    pool = ec2_startup_model(weights, precompiled=True, instance_type="inf2.xlarge", warm_pool=True)
    no_pool = ec2_startup_model(weights, precompiled=True, instance_type="inf2.xlarge")
    for phase in ("image pull", "artifact transfer"):
        assert rows[phase].floor == pool.phase(phase).floor_seconds == no_pool.phase(phase).floor_seconds
    assert pool.phase("artifact transfer").provisioned_floor_seconds == pytest.approx(
        weights / (149 * 2**20 / 2**30)
    )
    assert (
        no_pool.phase("artifact transfer").provisioned_floor_seconds is None
    )  # provisioned at the hardware's
    # No floor for a whole start: the load has none.
    assert rows["EC2 warm start (out of the warm pool) -> InService"].floor is None


def test_compare_sets_each_measured_phase_beside_its_budget_and_floor() -> None:
    report = measurements.TimingReport(
        suite="serving_ec2",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        model={"model_id": "m", "parameters": 494_000_000, "dtype": "bf16"},
        timings={"instance_launch_to_in_service_seconds": 900.0, "image_pull_seconds": 400.0},
    )
    rows = {r.what: r for r in timings.compare(report)}
    pull = rows["image pull"]
    # Budget: 1.5 x AWS's published 240 s. Floor (review 25 S4): the hardware's, whatever the fleet
    # provisions: Docker writes the compressed layers and then the unpacked image (7.2 + 18 GB) to a
    # volume at its fastest on inf2.xlarge, min(gp3's 2,000 MiB/s, the 10,000 Mbps EBS burst).
    assert (pull.modelled, pull.verdict) == (360.0, "OVER budget")
    assert pull.floor == pytest.approx((18e9 + 18e9 / 2.5) / (10_000e6 / 8))
    assert "artifact transfer" not in rows  # not measured: no row, never an estimate in its place


def _stubbed_session(activities: list[dict[str, Any]], pages: list[list[dict[str, Any]]]) -> tuple[Any, Any]:
    """A session whose autoscaling and logs clients answer from botocore's Stubber: one page of launch
    activities, and the phases lines over ``pages`` FilterLogEvents pages (all but the last carry a
    nextToken, as the API may return an empty page while more follow)."""
    import boto3
    from botocore.stub import Stubber

    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    logs = boto3.client("logs", region_name="us-east-1")
    asg_stub, logs_stub = Stubber(autoscaling), Stubber(logs)
    asg_stub.add_response(
        "describe_scaling_activities", {"Activities": activities}, {"AutoScalingGroupName": "group"}
    )
    query = {"logGroupName": "fleet-logs", "filterPattern": '"cdk-neuron: phases"'}
    for number, events in enumerate(pages):
        more = number < len(pages) - 1
        logs_stub.add_response(
            "filter_log_events",
            {"events": events, **({"nextToken": f"t{number + 1}"} if more else {})},
            {**query, **({"nextToken": f"t{number}"} if number else {})},
        )

    class Session:
        def client(self, name: str, region_name: str) -> Any:
            return {"autoscaling": autoscaling, "logs": logs}[name]

    asg_stub.activate()
    logs_stub.activate()
    return Session(), (asg_stub, logs_stub)


AT = 1_764_650_000  # an epoch second, 2025-12-02


def _activity(description: str, start: int, seconds: int, status: str = "Successful") -> dict[str, Any]:
    from datetime import datetime, timezone

    return {
        "ActivityId": f"{start}-{description[-4:]}",
        "AutoScalingGroupName": "group",
        "Cause": "-",
        "StartTime": datetime.fromtimestamp(AT + start, tz=timezone.utc),
        "EndTime": datetime.fromtimestamp(AT + start + seconds, tz=timezone.utc),
        "StatusCode": status,
        "Description": description,
    }


def _event(message: str, at: int, stream: str) -> dict[str, Any]:
    return {"message": message, "timestamp": (AT + at) * 1000, "logStreamName": stream}


def test_the_collector_reads_a_warm_pool_fleets_launches_and_phases_apart() -> None:
    """Against botocore's Stubber: Auto Scaling's launch activities (into the warm pool, out of it) and
    the phases lines of a preparation and a warm start, over every FilterLogEvents page (review 25 S2:
    the first page may be empty while more follow), each boot's EC2 share measured against the kernel's
    start (boot_epoch), not the activity's EndTime (review 25 S1: a launch into the pool ends stopped)."""
    from integ_support.collect import Collector

    activities = [
        _activity("Launching a new EC2 instance from warm pool: i-1", 2000, 700),
        _activity("Launching a new EC2 instance into warm pool: i-1", 0, 380),
        _activity("Launching a new EC2 instance into warm pool: i-2", 10, 999, status="Failed"),
    ]
    pages = [
        [],
        [_event(f"cdk-neuron: phases warm_boot=30 ready=680 boot_epoch={AT + 2015}", 2695, "i-1/lifecycle")],
        [
            _event(
                f"cdk-neuron: phases node_boot=44 image_pull=250 artifact_transfer=3 prepared=330 boot_epoch={AT + 20}",
                350,
                "i-1/lifecycle",
            )
        ],
    ]
    session, stubs = _stubbed_session(activities, pages)
    outputs = {"Stack": {"AutoScalingGroupName": "group", "ReplicaLogGroupName": "fleet-logs"}}
    collector = Collector("scale_from_zero", "us-east-1", outputs, session)
    collector.fleet()
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert collector.errors == []
    assert collector.timings == {
        "warm_start_to_in_service_seconds": 700.0,
        "warm_pool_launch_to_stopped_seconds": 380.0,
        "node_boot_seconds": 44.0,
        "image_pull_seconds": 250.0,
        "artifact_transfer_seconds": 3.0,
        "boot_to_prepared_seconds": 330.0,
        "warm_boot_seconds": 30.0,
        "warm_boot_to_ready_seconds": 680.0,
        "launch_to_kernel_seconds": 20.0,
        "warm_start_to_kernel_seconds": 15.0,
    }
    assert "into warm pool" in collector.sources["warm_pool_launch_to_stopped_seconds"]
    assert "i-1's launch" in collector.sources["warm_start_to_kernel_seconds"]
    assert "instance_launch_to_in_service_seconds" not in collector.timings  # no cold start into service


def test_the_collector_takes_the_cold_phases_and_their_boot_from_one_instance() -> None:
    # Review 25 nit 7: a cold start's line and a preparation's share the cold keys; the cold start's
    # gives them, and the EC2 share comes from that same instance's launch, never mixed with the other.
    from integ_support.collect import Collector

    activities = [
        _activity("Launching a new EC2 instance into warm pool: i-pool", 0, 400),
        _activity("Launching a new EC2 instance: i-cold", 1000, 800),
    ]
    pages = [
        [
            _event(f"cdk-neuron: phases node_boot=50 image_pull=260 prepared=330 boot_epoch={AT + 30}", 360, "i-pool/lifecycle"),
            _event(f"cdk-neuron: phases node_boot=41 image_pull=240 ready=700 boot_epoch={AT + 1018}", 1718, "i-cold/lifecycle"),
        ]
    ]  # fmt: skip
    session, _ = _stubbed_session(activities, pages)
    outputs = {"S": {"AutoScalingGroupName": "group", "ReplicaLogGroupName": "fleet-logs"}}
    collector = Collector("scale_from_zero", "us-east-1", outputs, session)
    collector.fleet()
    assert collector.errors == []
    assert {
        k: collector.timings[k]
        for k in ("node_boot_seconds", "image_pull_seconds", "launch_to_kernel_seconds")
    } == {
        "node_boot_seconds": 41.0,
        "image_pull_seconds": 240.0,
        "launch_to_kernel_seconds": 18.0,
    }
    assert collector.timings["boot_to_ready_seconds"] == 700.0
    assert collector.timings["boot_to_prepared_seconds"] == 330.0  # the preparation adds only its own


def test_a_line_without_its_launch_activity_is_reported_missing_not_guessed() -> None:
    from integ_support.collect import Collector

    pages = [
        [_event(f"cdk-neuron: phases warm_boot=30 ready=680 boot_epoch={AT + 15}", 700, "i-9/lifecycle")]
    ]
    session, _ = _stubbed_session(
        [_activity("Launching a new EC2 instance from warm pool: i-1", 0, 700)], pages
    )
    outputs = {"S": {"AutoScalingGroupName": "group", "ReplicaLogGroupName": "fleet-logs"}}
    collector = Collector("scale_from_zero", "us-east-1", outputs, session)
    collector.fleet()
    assert "warm_start_to_kernel_seconds" not in collector.timings
    assert collector.errors == [
        "EC2's share before the kernel: LookupError: no successful 'Launching a new EC2 instance from warm "
        "pool:' activity for i-9"
    ]


def test_the_pull_floor_follows_the_image_size_the_node_measured() -> None:
    # Issue 25: the floor of the pull assumes the published 18 GB image until a node measures the one it
    # pulled (image_bytes on the phases line); the report carries it as a value, the comparison uses it.
    from integ_support.collect import Collector, node_phases

    line = (
        "cdk-neuron: phases node_boot=41 image_pull=200 image_bytes=9000000000 artifact_transfer=3 ready=700"
    )
    assert node_phases(line)["image_unpacked_bytes"] == 9e9

    session, _ = _stubbed_session([], [[_event(line, 1, "i-1/lifecycle")]])
    collector = Collector("serving_ec2", "us-east-1", {"S": {"ReplicaLogGroupName": "fleet-logs"}}, session)
    collector.node_phases()
    assert collector.values == {"image_unpacked_bytes": 9e9}
    assert "image_unpacked_bytes" not in collector.timings
    report = measurements.TimingReport(
        suite="serving_ec2",
        region="us-east-1",
        run_at="2026-12-02T05:00:00Z",
        outcome="passed",
        instance_type="inf2.xlarge",
        model={"model_id": "m", "parameters": 494_000_000, "dtype": "bf16"},
        timings={"instance_launch_to_in_service_seconds": 900.0, **collector.timings},
        values=collector.values,
    )
    rows = {r.what: r for r in timings.compare(report)}
    pull = rows["image pull (a 9.0 GB image, measured)"]
    # 0.49B fits in RAM: the volume takes only the image, at 500 MiB/s, and writing it bounds the floor.
    assumed = floors.image_pull("inf2.xlarge", in_ram=True).floor_seconds
    measured = floors.image_pull(
        "inf2.xlarge", in_ram=True, image_unpacked_gib=9e9 / floors.GIB
    ).floor_seconds
    assert assumed is not None and measured is not None
    assert pull.floor == pytest.approx(measured) == pytest.approx(assumed * 9e9 / 18e9)
    assert pull.over_floor == pytest.approx(200 / measured)
