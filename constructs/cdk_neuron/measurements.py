"""Timing reports from the integration suites, and how the timing models read them.

Plain Python (no ``aws_cdk``, no AWS calls). A live run of the suites (``make integ``, docs/integ.md)
writes one JSON report per suite; this module defines that format (:class:`TimingReport`), reads it
(:func:`load_report`), turns it into the measured start-up the serving fleets accept
(:func:`measured_startup`, or ``MeasuredStartup.from_report``) and sets it beside what the models
assumed (:func:`compare`, ``python -m cdk_neuron.measurements compare REPORT...``).

The format (``"format": "cdk-neuron/integ-timings"``, ``"version": 1``)::

    {
      "format": "cdk-neuron/integ-timings", "version": 1,
      "suite": "serving_ec2",                       one of SUITES
      "region": "us-east-1",
      "run_at": "2026-12-01T15:04:05Z",             when the collector ran (UTC)
      "outcome": "passed",                          "passed" or "failed" (a failed run still reports)
      "instance_type": "inf2.xlarge",               ml. prefix dropped
      "model": {"model_id": "...", "parameters": 494000000, "dtype": "bf16"}   serving suites, else null
      "timings": {"instance_launch_to_in_service_seconds": 612.0, ...},         seconds, see TIMINGS
      "values": {"first_token_ms": 180.0, ...},                                  see VALUES
      "sources": {"instance_launch_to_in_service_seconds": "DescribeScalingActivities ..."},
      "errors": ["..."]                             what could not be measured, and why
    }

Each timing is observed, not estimated: its ``sources`` entry names the API fields it was computed
from. A key is absent when the suite does not observe it or the collector could not (see ``errors``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdk_neuron.errors import NeuronConfigError

FORMAT = "cdk-neuron/integ-timings"
VERSION = 1
SUITES = ("training_smoke", "training_efa", "serving_ec2", "serving_sagemaker", "scale_from_zero")

TIMINGS: dict[str, str] = {
    "node_launch_to_ready_seconds": "training node: EC2 launch until its ECS agent registered with the "
    "Batch compute environment (DescribeInstances LaunchTime -> DescribeContainerInstances registeredAt)",
    "job_submitted_to_running_seconds": "Batch job: submitted until RUNNING (DescribeJobs createdAt -> startedAt)",
    "job_running_seconds": "Batch job: RUNNING until it stopped (DescribeJobs startedAt -> stoppedAt)",
    "instance_launch_to_in_service_seconds": "EC2 fleet: instance launch until InService, i.e. every replica "
    "healthy (DescribeScalingActivities StartTime -> EndTime of the launch)",
    "endpoint_creating_to_in_service_seconds": "SageMaker: endpoint created until InService (DescribeEndpoint "
    "CreationTime -> LastModifiedTime; a new endpoint is last modified when it goes InService)",
    "scale_from_zero_first_token_seconds": "fleet at zero: first request until the first streamed token (probe)",
}
VALUES: dict[str, str] = {
    "checkpoint_write_mib_per_second": "256 MiB written to the checkpoint store and fsync'd, MiB/s (job log)",
    "allreduce_busbw_gib_per_second": "all-reduce bus bandwidth across the nodes, GiB/s (job log)",
    "first_token_ms": "time to the first streamed token of a chat completion on a warm fleet, ms (probe)",
}
OUTCOMES = ("passed", "failed")


def _number(field: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise NeuronConfigError(field, value, "must be a finite number >= 0")
    return float(value)


@dataclass(frozen=True)
class TimingReport:
    """One suite's observed timings (the JSON format in the module docstring)."""

    suite: str
    region: str
    run_at: str
    outcome: str
    instance_type: str | None = None
    model: Mapping[str, Any] | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    values: Mapping[str, float] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    errors: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.suite not in SUITES:
            raise NeuronConfigError("suite", self.suite, f"use one of {', '.join(SUITES)}")
        if self.outcome not in OUTCOMES:
            raise NeuronConfigError("outcome", self.outcome, "use passed or failed")
        for name, known in (("timings", TIMINGS), ("values", VALUES)):
            for key, value in dict(getattr(self, name)).items():
                if key not in known:
                    raise NeuronConfigError(f"{name}.{key}", key, f"unknown; known: {', '.join(known)}")
                _number(f"{name}.{key}", value)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "suite": self.suite,
            "region": self.region,
            "run_at": self.run_at,
            "outcome": self.outcome,
            "instance_type": self.instance_type,
            "model": dict(self.model) if self.model is not None else None,
            "timings": {k: round(float(v), 3) for k, v in sorted(self.timings.items())},
            "values": {k: round(float(v), 3) for k, v in sorted(self.values.items())},
            "sources": dict(sorted(self.sources.items())),
            "errors": list(self.errors),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> TimingReport:
        if data.get("format") != FORMAT:
            raise NeuronConfigError("format", data.get("format"), f'not a timing report (want "{FORMAT}")')
        if data.get("version") != VERSION:
            raise NeuronConfigError(
                "version", data.get("version"), f"this cdk-neuron reads version {VERSION}"
            )
        return TimingReport(
            suite=data["suite"],
            region=data["region"],
            run_at=data["run_at"],
            outcome=data["outcome"],
            instance_type=data.get("instance_type"),
            model=data.get("model"),
            timings=dict(data.get("timings") or {}),
            values=dict(data.get("values") or {}),
            sources=dict(data.get("sources") or {}),
            errors=tuple(data.get("errors") or ()),
        )

    @property
    def label(self) -> str:
        """How a budget derived from this report names its source (suite, Region, date)."""
        return f"integ {self.suite} timing report, {self.region}, {self.run_at}"


def load_report(path: str | Path) -> TimingReport:
    """Read and check a timing report file."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NeuronConfigError("report", str(path), f"cannot read it: {error}") from error
    if not isinstance(data, dict):
        raise NeuronConfigError("report", str(path), "must hold a JSON object")
    return TimingReport.from_json(data)


def measured_startup(report: TimingReport | str | Path) -> Any:
    """The :class:`~cdk_neuron.serving.MeasuredStartup` a serving report supports.

    - ``serving_sagemaker``: ``container_ready_seconds`` = endpoint creating -> InService. It also
      holds instance provisioning and the image pull, so the budget derived from it is on the safe side.
    - ``serving_ec2`` and ``scale_from_zero``: the report observes launch -> InService as a whole;
      ``container_ready_seconds`` is that minus the boot the EC2 model assumes
      (``timing.EC2_BOOT_SECONDS``, not measured), so that fed back, the budget is the assumed boot plus
      1.5 x the rest. The source says so.

    Refused (``NeuronConfigError``) for a failed run, a training report, or a report without the timing.
    """
    from cdk_neuron.serving.timing import EC2_BOOT_SECONDS, MeasuredStartup

    loaded = report if isinstance(report, TimingReport) else load_report(report)
    if loaded.outcome != "passed":
        raise NeuronConfigError(
            "report", loaded.label, "the run failed: its timings do not show a working start-up"
        )
    if loaded.suite == "serving_sagemaker":
        key = "endpoint_creating_to_in_service_seconds"
        if key not in loaded.timings:
            raise NeuronConfigError("report", loaded.label, f"has no {key}")
        return MeasuredStartup(
            source=f"{loaded.label}: endpoint creating -> InService",
            container_ready_seconds=_whole(loaded.timings[key]),
        )
    if loaded.suite in ("serving_ec2", "scale_from_zero"):
        key = "instance_launch_to_in_service_seconds"
        if key not in loaded.timings:
            raise NeuronConfigError("report", loaded.label, f"has no {key}")
        total = _whole(loaded.timings[key])
        return MeasuredStartup(
            source=f"{loaded.label}: launch -> InService {total} s less the assumed {EC2_BOOT_SECONDS} s boot",
            container_ready_seconds=max(1, total - EC2_BOOT_SECONDS),
        )
    raise NeuronConfigError("report", loaded.label, "only serving reports hold a start-up")


def _whole(seconds: float) -> int:
    return max(1, math.ceil(seconds))


@dataclass(frozen=True)
class Comparison:
    """One measured value beside what a model assumed or budgeted for it."""

    what: str
    measured: float
    modelled: float
    unit: str
    verdict: str


def compare(report: TimingReport) -> list[Comparison]:
    """Measured against modelled, for what the report observed (empty when nothing is comparable).

    - Serving start-up against the budget the fleet derives for the report's model and instance type
      (``timing.ec2_startup`` / ``timing.sagemaker_timeouts``): "within budget" or "OVER budget".
    - Checkpoint write throughput against the per-client EFS throughput the checkpoint advisor assumes
      (``checkpoint_advisor.EFS_PER_CLIENT_MIBPS_EFS_UTILS_V2``): "at least as fast" or "SLOWER".
    """
    from cdk_neuron import checkpoint_advisor, planner
    from cdk_neuron.serving import timing

    rows: list[Comparison] = []
    model, instance = report.model, report.instance_type
    if model is not None and instance is not None:
        plan = planner.size_model(
            int(model["parameters"]), dtype=str(model.get("dtype", "bf16")), instance_type=instance
        )
        ec2_key = "instance_launch_to_in_service_seconds"
        if ec2_key in report.timings:
            budget = timing.ec2_startup(
                plan.weights_gib,
                precompiled=False,
                instance_type=instance,
                replicas=plan.replicas_per_instance,
            ).seconds
            rows.append(_against("EC2 launch -> InService", report.timings[ec2_key], budget, "s"))
        sm_key = "endpoint_creating_to_in_service_seconds"
        if sm_key in report.timings:
            budget = timing.sagemaker_timeouts(
                plan.weights_gib, precompiled=False, instance_type=instance
            ).container_startup_health_check_seconds
            rows.append(_against("SageMaker creating -> InService", report.timings[sm_key], budget, "s"))
    rate = report.values.get("checkpoint_write_mib_per_second")
    if rate is not None:
        assumed = float(checkpoint_advisor.EFS_PER_CLIENT_MIBPS_EFS_UTILS_V2)
        verdict = "at least as fast" if rate >= assumed else "SLOWER than assumed"
        rows.append(Comparison("checkpoint write, one client", rate, assumed, "MiB/s", verdict))
    return rows


def _against(what: str, measured: float, budget: float, unit: str) -> Comparison:
    verdict = "within budget" if measured <= budget else "OVER budget"
    return Comparison(what, measured, float(budget), unit, verdict)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cdk_neuron.measurements compare REPORT...``: measured against modelled."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] != "compare":
        print(
            "usage: python -m cdk_neuron.measurements compare REPORT.json [REPORT.json ...]", file=sys.stderr
        )
        return 2
    for path in args[1:]:
        report = load_report(path)
        print(f"{report.label} ({report.outcome})")
        for key, seconds in sorted(report.timings.items()):
            print(f"  {key:<44} {seconds:>10.1f}")
        for key, value in sorted(report.values.items()):
            print(f"  {key:<44} {value:>10.1f}")
        for row in compare(report):
            print(
                f"  {row.what}: measured {row.measured:.1f} {row.unit}, model {row.modelled:.1f} {row.unit}: {row.verdict}"
            )
        for error in report.errors:
            print(f"  not measured: {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
