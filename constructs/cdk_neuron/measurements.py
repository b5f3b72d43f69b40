"""Timing reports from the integration suites: the format, and reading it.

Plain Python (no ``aws_cdk``, no AWS calls), and a leaf: it imports nothing of cdk-neuron but its
error type. A live run of the suites (``make integ``, docs/integ.md) writes one JSON report per suite;
this module defines that format (:class:`TimingReport`) and reads it (:func:`load_report`). The
serving fleets turn a report into the start-up they budget for
(``cdk_neuron.serving.MeasuredStartup.from_report``), and ``cdk-neuron timings REPORT...`` sets it
beside what the models assumed.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdk_neuron.errors import NeuronConfigError

FORMAT = "cdk-neuron/integ-timings"
VERSION = 1
SUITES = (
    "training_smoke",
    "training_efa",
    "serving_ec2",
    "serving_sagemaker",
    "scale_from_zero",
    "train_compile_serve",
)

TIMINGS: dict[str, str] = {
    "compile_seconds": "ModelCompilation: the export's wall-clock seconds, as the artifact manifest records "
    "them (compile_seconds; the suite's compile step reads it back)",
    "node_launch_to_ready_seconds": "training node: EC2 launch until its ECS agent registered with the "
    "Batch compute environment (DescribeInstances LaunchTime -> DescribeContainerInstances registeredAt)",
    "job_submitted_to_running_seconds": "Batch job: submitted until RUNNING (DescribeJobs createdAt -> startedAt)",
    "job_running_seconds": "Batch job: RUNNING until it stopped (DescribeJobs startedAt -> stoppedAt)",
    "instance_launch_to_in_service_seconds": "EC2 fleet: instance launch until InService, i.e. every replica "
    "healthy (DescribeScalingActivities StartTime -> EndTime of the first 'Launching a new EC2 instance')",
    "warm_pool_launch_to_stopped_seconds": "EC2 fleet with a warm pool: a launch into the warm pool until it "
    "is prepared and stopped, the stop included (DescribeScalingActivities StartTime -> EndTime of the first "
    "'Launching a new EC2 instance into warm pool')",
    "launch_to_kernel_seconds": "EC2 serving node, a new launch (into service, or into the warm pool where "
    "no cold start's line exists): the launch activity's StartTime until the kernel started (the phases "
    "line's boot_epoch), EC2's share of the boot",
    "warm_start_to_kernel_seconds": "EC2 serving node started out of the warm pool: the activity's StartTime "
    "until the kernel started (boot_epoch), EC2's share of the warm boot",
    "warm_start_to_in_service_seconds": "EC2 fleet with a warm pool: a stopped instance out of the warm pool "
    "until InService, a warm start (DescribeScalingActivities StartTime -> EndTime of the first 'Launching a "
    "new EC2 instance from warm pool')",
    "node_boot_seconds": "EC2 serving node, a new launch: kernel start until the image pull starts (the node's "
    "'cdk-neuron: phases' line in the fleet's log group, node_boot)",
    "image_pull_seconds": "EC2 serving node, a new launch (into service or into the warm pool): the serving "
    "image's docker pull (the phases line, image_pull)",
    "artifact_transfer_seconds": "EC2 serving node, a new launch: the S3 artifacts onto the node (the phases "
    "line, artifact_transfer)",
    "boot_to_ready_seconds": "EC2 serving node, a new launch: kernel start until every replica answered its "
    "health check (the phases line, ready)",
    "boot_to_prepared_seconds": "EC2 serving node launched into the warm pool: kernel start until prepared "
    "for its stop, image pulled and artifacts synced (the phases line, prepared)",
    "warm_boot_seconds": "EC2 serving node started out of the warm pool (or rebooted): kernel start until "
    "cdk-neuron-ready runs; no image pull (the warm start's phases line, warm_boot)",
    "warm_artifact_transfer_seconds": "EC2 serving node started out of the warm pool: the artifacts fetched "
    "again into a RAM-backed model directory (the warm start's phases line, artifact_transfer)",
    "warm_boot_to_ready_seconds": "EC2 serving node started out of the warm pool: kernel start until every "
    "replica answered its health check (the warm start's phases line, ready)",
    "endpoint_creating_to_in_service_seconds": "SageMaker: endpoint created until InService (DescribeEndpoint "
    "CreationTime -> LastModifiedTime; a new endpoint is last modified when it goes InService)",
    "scale_from_zero_first_token_seconds": "fleet at zero: first request until the first streamed token (probe)",
}
VALUES: dict[str, str] = {
    "checkpoint_write_mib_per_second": "256 MiB written to the checkpoint store and fsync'd, MiB/s (job log)",
    "allreduce_busbw_gib_per_second": "all-reduce bus bandwidth across the nodes, GiB/s (job log)",
    "first_token_ms": "time to the first streamed token of a chat completion on a warm fleet, ms (probe)",
    "image_unpacked_bytes": "EC2 serving node, a new launch: the pulled serving image's size as `docker image "
    "inspect` reports it, unpacked, bytes (the phases line, image_bytes)",
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


__all__ = ["FORMAT", "OUTCOMES", "SUITES", "TIMINGS", "VALUES", "VERSION", "TimingReport", "load_report"]
