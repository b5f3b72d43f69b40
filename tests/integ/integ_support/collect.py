"""After a live suite: read what happened from AWS and write its timing report.

Runs while the stacks still exist (before the destroy), with the runner's credentials, reading only
(``Describe*``, ``FilterLogEvents``). Every timing is computed from named API fields (the report's
``sources``); what cannot be read is recorded in ``errors`` and the report is still written. The
format is :mod:`cdk_neuron.measurements`'.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from cdk_neuron.measurements import VALUES, TimingReport
from integ_support.programs import LOG_MARKER, events
from integ_support.registry import SUITES
from integ_support.serving import INSTANCE_TYPE
from integ_support.settings import MODEL_ID, MODEL_PARAMETERS, TRAIN_MODEL_ID, TRAIN_MODEL_PARAMETERS


def _seconds(start: Any, end: Any) -> float:
    """Seconds between two datetimes or two epoch-millisecond numbers."""
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds()
    return (float(end) - float(start)) / 1000


PHASE_KEYS = {
    "node_boot": "node_boot_seconds",
    "image_pull": "image_pull_seconds",
    "artifact_transfer": "artifact_transfer_seconds",
    "ready": "boot_to_ready_seconds",
    "prepared": "boot_to_prepared_seconds",
    "image_bytes": "image_unpacked_bytes",
}
"""A cold start's phases line (a launch into service, or into the warm pool: ``prepared``)."""
WARM_PHASE_KEYS = {
    "warm_boot": "warm_boot_seconds",
    "artifact_transfer": "warm_artifact_transfer_seconds",
    "ready": "warm_boot_to_ready_seconds",
}
"""A warm start's phases line (``warm_boot``: a stopped warm-pool instance started again): its own keys,
so a report that holds both paths (the warm pool's preparation and the start out of it) keeps them
apart."""


def _words(line: str) -> list[tuple[str, str, str]]:
    return [word.partition("=") for word in line.split("phases", 1)[-1].split()]


def boot_epoch(line: str) -> float | None:
    """The kernel's start as epoch seconds, where the line carries it (``boot_epoch=``)."""
    found = [value for name, _, value in _words(line) if name == "boot_epoch" and value.isdigit()]
    return float(found[0]) if found else None


def node_phases(line: str) -> dict[str, float]:
    """``cdk-neuron: phases node_boot=41 image_pull=70 ready=702`` -> the report's timing keys; a line
    with ``warm_boot`` maps to the warm start's keys (:data:`WARM_PHASE_KEYS`)."""
    words = _words(line)
    keys = WARM_PHASE_KEYS if any(name == "warm_boot" for name, _, _ in words) else PHASE_KEYS
    return {keys[name]: float(value) for name, _, value in words if name in keys and value.isdigit()}


def _line_kind(line: str) -> int:
    """:data:`COLD` a cold start into service, :data:`PREPARED` a warm-pool preparation, :data:`WARM` a
    warm start."""
    keys = node_phases(line)
    return WARM if "warm_boot_seconds" in keys else PREPARED if "boot_to_prepared_seconds" in keys else COLD


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value) / 1000


COLD, PREPARED, WARM = 0, 1, 2
LAUNCH_PREFIXES = {
    PREPARED: "Launching a new EC2 instance into warm pool: ",
    WARM: "Launching a new EC2 instance from warm pool: ",
    COLD: "Launching a new EC2 instance: ",
}
"""Auto Scaling's launch activity for each kind of start, by its description (followed by the instance
id), as an AWS sample records them (aws-samples/amazon-ec2-auto-scaling-group-examples
``features/warm-pools/README.md`` @1db02819)."""
LAUNCHES = {
    PREPARED: "warm_pool_launch_to_stopped_seconds",
    WARM: "warm_start_to_in_service_seconds",
    COLD: "instance_launch_to_in_service_seconds",
}
"""The report key of each launch activity's StartTime -> EndTime. A launch into the warm pool ends only
once the instance is stopped ("the instance launch will complete with the instance in a Warmed:Stopped
state", the same README): it includes the stop, so no boot is derived from its EndTime."""
KERNEL_KEYS = {
    COLD: "launch_to_kernel_seconds",
    PREPARED: "launch_to_kernel_seconds",
    WARM: "warm_start_to_kernel_seconds",
}
"""EC2's share before the kernel: the activity's StartTime -> the line's ``boot_epoch``, for the line
that gave the report its boot (the cold keys' line, a cold start's before a preparation's; the warm
start's)."""
PAGES = 20
"""FilterLogEvents and DescribeScalingActivities pages read at most (a page may be empty while more
follow: FilterLogEvents, CloudWatch Logs API Reference)."""


class Collector:
    def __init__(self, suite: str, region: str, outputs: dict[str, dict[str, str]], session: Any) -> None:
        self.suite, self.region, self.outputs, self.session = suite, region, outputs, session
        self.timings: dict[str, float] = {}
        self.values: dict[str, float] = {}
        self.sources: dict[str, str] = {}
        self.errors: list[str] = []

    def output(self, key: str) -> str | None:
        for stack in self.outputs.values():
            if key in stack:
                return stack[key]
        return None

    def client(self, name: str) -> Any:
        return self.session.client(name, region_name=self.region)

    def record(self, key: str, value: float, source: str, *, timing: bool = True) -> None:
        (self.timings if timing else self.values)[key] = round(value, 3)
        self.sources[key] = source

    def attempt(self, what: str, step: Any) -> None:
        try:
            step()
        except Exception as error:  # a measurement never fails the run; it is reported missing
            self.errors.append(f"{what}: {type(error).__name__}: {str(error)[:300]}")

    # -- training ------------------------------------------------------------------------------------

    def batch(self) -> None:
        job_id = self.output("JobId")
        if job_id is None:
            self.errors.append("no JobId output: the job was not submitted")
            return
        job = self.client("batch").describe_jobs(jobs=[job_id])["jobs"][0]
        if "startedAt" in job:
            self.record(
                "job_submitted_to_running_seconds",
                _seconds(job["createdAt"], job["startedAt"]),
                "DescribeJobs createdAt -> startedAt",
            )
        if "startedAt" in job and "stoppedAt" in job:
            self.record(
                "job_running_seconds",
                _seconds(job["startedAt"], job["stoppedAt"]),
                "DescribeJobs startedAt -> stoppedAt",
            )
        self.attempt("node launch to ready", lambda: self.node_ready(job))
        self.attempt("job log", self.job_log)

    def node_ready(self, job: dict[str, Any]) -> None:
        arn = (job.get("attempts") or [{}])[-1].get("container", {}).get("containerInstanceArn")
        environment = self.client("batch").describe_compute_environments(
            computeEnvironments=[self.output("ComputeEnvironmentArn")]
        )["computeEnvironments"][0]
        if not arn:
            raise LookupError("the job's attempt names no container instance")
        instance = self.client("ecs").describe_container_instances(
            cluster=environment["ecsClusterArn"], containerInstances=[arn]
        )["containerInstances"][0]
        launched = self.client("ec2").describe_instances(InstanceIds=[instance["ec2InstanceId"]])
        launch_time = launched["Reservations"][0]["Instances"][0]["LaunchTime"]
        self.record(
            "node_launch_to_ready_seconds",
            _seconds(launch_time, instance["registeredAt"]),
            "DescribeInstances LaunchTime -> DescribeContainerInstances registeredAt",
        )

    def job_log(self) -> None:
        group = self.output("JobLogGroupName")
        found = self.client("logs").filter_log_events(
            logGroupName=group, filterPattern=f'"{LOG_MARKER}"', limit=100
        )
        for event in events(e["message"] for e in found.get("events", [])):
            if event["event"] == "checkpoint" and "write_mib_per_second" in event:
                self.record(
                    "checkpoint_write_mib_per_second",
                    float(event["write_mib_per_second"]),
                    "job log: checkpoint write_mib_per_second",
                    timing=False,
                )
            if event["event"] == "allreduce" and "busbw_gib_per_second" in event:
                self.record(
                    "allreduce_busbw_gib_per_second",
                    float(event["busbw_gib_per_second"]),
                    "job log: allreduce busbw_gib_per_second",
                    timing=False,
                )

    # -- serving -------------------------------------------------------------------------------------

    def fleet(self) -> None:
        group = self.output("AutoScalingGroupName")
        pages = (
            self.client("autoscaling")
            .get_paginator("describe_scaling_activities")
            .paginate(AutoScalingGroupName=group, PaginationConfig={"MaxItems": PAGES * 100})
        )
        self.activities = [
            a for page in pages for a in page["Activities"] if a.get("StatusCode") == "Successful"
        ]
        found = False
        for kind, key in LAUNCHES.items():
            launches = [a for a in self.activities if a["Description"].startswith(LAUNCH_PREFIXES[kind])]
            if launches:
                found = True
                first = min(launches, key=lambda a: a["StartTime"])
                self.record(
                    key,
                    _seconds(first["StartTime"], first["EndTime"]),
                    f"DescribeScalingActivities StartTime -> EndTime of the first successful "
                    f"'{LAUNCH_PREFIXES[kind].strip()}'",
                )
        if not found:
            raise LookupError("no successful launch activity")
        self.attempt("node phases", self.node_phases)

    def node_phases(self) -> None:
        """The start-up phases the fleet's instances wrote to its log group (ready.sh): of each kind the
        first line (a cold start's, a warm-pool preparation's, a warm start's), read over every page. A
        cold start and a preparation share the cold phases' keys: a cold start's line, where there is
        one, gives them, so they always come from one instance's line, and so does its boot's EC2 share
        (its activity, by the instance id of the line's log stream, ``<instance-id>/lifecycle``)."""
        group = self.output("ReplicaLogGroupName")
        if group is None:
            raise LookupError("no ReplicaLogGroupName output")
        pages = (
            self.client("logs")
            .get_paginator("filter_log_events")
            .paginate(
                logGroupName=group,
                filterPattern='"cdk-neuron: phases"',
                PaginationConfig={"MaxItems": PAGES * 50},
            )
        )
        first: dict[int, dict[str, Any]] = {}
        for event in sorted(
            (e for page in pages for e in page.get("events", [])), key=lambda e: e.get("timestamp", 0)
        ):
            first.setdefault(_line_kind(event["message"]), event)
        if not first:
            raise LookupError("no 'cdk-neuron: phases' line in the fleet's log group")
        for kind in sorted(first):
            for key, value in node_phases(first[kind]["message"]).items():
                timing = key not in VALUES
                if key not in (self.timings if timing else self.values):
                    self.record(
                        key, value, f"fleet log group: the first phases line with {key}", timing=timing
                    )
        # The cold keys' line (a cold start's before a preparation's) and the warm start's line.
        for kind in [k for k in (COLD, PREPARED) if k in first][:1] + [k for k in (WARM,) if k in first]:
            self.attempt("EC2's share before the kernel", partial(self._kernel_share, kind, first[kind]))

    def _kernel_share(self, kind: int, event: dict[str, Any]) -> None:
        epoch = boot_epoch(event["message"])
        instance = str(event.get("logStreamName", "")).split("/", 1)[0]
        if epoch is None or not instance:
            raise LookupError("the phases line carries no boot_epoch or comes from no instance's stream")
        activities = [
            a for a in getattr(self, "activities", []) if a["Description"] == LAUNCH_PREFIXES[kind] + instance
        ]
        if not activities:
            raise LookupError(f"no successful '{LAUNCH_PREFIXES[kind].strip()}' activity for {instance}")
        key = KERNEL_KEYS[kind]
        self.record(
            key,
            max(0.0, epoch - _epoch(activities[0]["StartTime"])),
            f"DescribeScalingActivities StartTime of {instance}'s launch -> its phases line's boot_epoch",
        )

    def compile_step(self) -> None:
        seconds = self.output("CompileSeconds")
        if seconds in (None, "", "None"):
            raise LookupError("no CompileSeconds output: the compile step did not complete")
        self.record(
            "compile_seconds", float(seconds), "the artifact manifest's compile_seconds (compile step)"
        )

    def endpoint(self) -> None:
        described = self.client("sagemaker").describe_endpoint(EndpointName=self.output("EndpointName"))
        self.record(
            "endpoint_creating_to_in_service_seconds",
            _seconds(described["CreationTime"], described["LastModifiedTime"]),
            "DescribeEndpoint CreationTime -> LastModifiedTime",
        )

    def probe_outputs(self) -> None:
        first_token = self.output("FirstTokenMs")
        if first_token not in (None, "", "null"):
            if self.suite == "scale_from_zero":
                elapsed = self.output("ElapsedSeconds")
                self.record(
                    "scale_from_zero_first_token_seconds",
                    float(elapsed or 0),
                    "probe: wake request sent -> first token (assertion output ElapsedSeconds)",
                )
            else:
                self.record("first_token_ms", float(first_token), "probe: first streamed token", timing=False)

    # ------------------------------------------------------------------------------------------------

    def report(self, outcome: str) -> TimingReport:
        info = SUITES[self.suite]
        if self.suite.startswith("training") or self.suite == "train_compile_serve":
            self.attempt("batch job", self.batch)
        if info.compile is not None:
            self.attempt("compile", self.compile_step)
        if not self.suite.startswith("training"):
            if self.suite == "serving_sagemaker":
                self.attempt("endpoint", self.endpoint)
            else:
                self.attempt("fleet", self.fleet)
            self.attempt("probe", self.probe_outputs)
        serving = not self.suite.startswith("training")
        return TimingReport(
            suite=self.suite,
            region=self.region,
            run_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            outcome=outcome,
            instance_type=INSTANCE_TYPE if serving else info.accelerators.instance_type,
            model=served_model(self.suite) if serving else None,
            timings=self.timings,
            values=self.values,
            sources=self.sources,
            errors=self.errors,
        )


def served_model(suite: str) -> dict[str, object]:
    """The model a serving suite's fleet serves (train_compile_serve: the one it fine-tuned)."""
    if suite == "train_compile_serve":
        return {"model_id": TRAIN_MODEL_ID, "parameters": TRAIN_MODEL_PARAMETERS, "dtype": "bf16"}
    return {"model_id": MODEL_ID, "parameters": MODEL_PARAMETERS, "dtype": "bf16"}


def write_report(
    suite: str, region: str, outputs: dict[str, dict[str, str]], outcome: str, directory: Path, session: Any
) -> Path:
    report = Collector(suite, region, outputs, session).report(outcome)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{suite}.json"
    path.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return path
