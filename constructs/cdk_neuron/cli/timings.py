"""``cdk-neuron timings REPORT...``: an integ run's timing reports beside what the models assumed.

Offline. Each report (the :mod:`cdk_neuron.measurements` format a live ``make integ`` run writes) is
listed with its timings and values, then set against the budget or assumption the library derives
for the same model and instance type:

- serving start-up against the budget the fleet derives (``timing.ec2_startup`` /
  ``timing.sagemaker_timeouts``): "within budget" or "OVER budget", with the floor the hardware allows
  (``timing.ec2_startup_model``, docs/fast-start.md) and the measurement's ratio to it; where the report
  holds the node's own phases, each phase likewise;
- checkpoint write throughput against the per-client EFS throughput the checkpoint advisor assumes
  (``checkpoint_advisor.EFS_PER_CLIENT_MIBPS_EFS_UTILS_V2``): "at least as fast" or "SLOWER".
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cdk_neuron import checkpoint_advisor, planner
from cdk_neuron.cli.command import Command
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.measurements import TimingReport, load_report
from cdk_neuron.serving import floors, timing


@dataclass(frozen=True)
class Comparison:
    """One measured value beside what a model assumed or budgeted for it."""

    what: str
    measured: float
    modelled: float
    unit: str
    verdict: str
    floor: float | None = None
    """The least the published hardware figures allow (start-up rows with a floor), else None."""

    @property
    def over_floor(self) -> float | None:
        """Measured / floor (None without a floor)."""
        return None if not self.floor else self.measured / self.floor


def compare(report: TimingReport) -> list[Comparison]:
    """Measured against modelled, for what the report observed (empty when nothing is comparable)."""
    rows: list[Comparison] = []
    model, instance = report.model, report.instance_type
    if model is not None and instance is not None:
        plan = planner.size_model(
            int(model["parameters"]), dtype=str(model.get("dtype", "bf16")), instance_type=instance
        )
        if any(key in report.timings for key in EC2_STARTS):
            rows.extend(_ec2_rows(report, plan))
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


PHASES = {"image_pull_seconds": "image pull", "artifact_transfer_seconds": "artifact transfer"}
"""Report keys the node measures directly on a new launch, and the cold start-up phase each is set against."""
WARM_PHASES = {"warm_artifact_transfer_seconds": "artifact transfer"}
"""The same for a warm start (a stopped warm-pool instance started again), against the warm model's phase."""
EC2_STARTS = {
    "instance_launch_to_in_service_seconds": ("EC2 launch -> InService", floors.COLD),
    "warm_start_to_in_service_seconds": ("EC2 warm start (out of the warm pool) -> InService", floors.WARM),
}
"""Auto Scaling's launch activities a report may hold, and the start path of each."""
WARM_POOL_KEYS = (
    "warm_start_to_in_service_seconds",
    "warm_pool_launch_to_stopped_seconds",
    "boot_to_prepared_seconds",
    "warm_boot_seconds",
)
"""Keys only a fleet with a warm pool reports: its volumes are sized for a stopped pool (floors)."""


def _boot(timings: Mapping[str, float], kernel: str, node: str) -> float | None:
    """A start's boot as the model means it: EC2's share before the kernel (the launch activity's
    StartTime -> the kernel's start, ``kernel``) and the node's own boot (``node``); None without both.
    Never from a launch activity's EndTime: a launch into the warm pool ends only once it is stopped."""
    if kernel not in timings or node not in timings:
        return None
    return timings[kernel] + timings[node]


def _ec2_rows(report: TimingReport, plan: planner.ServingPlan) -> list[Comparison]:
    """An EC2 fleet's measured starts and phases against the cold and the warm start-up models."""
    found = report.timings
    instance = str(report.instance_type)
    warm_pool = any(key in found for key in WARM_POOL_KEYS)
    precompiled = "artifact_transfer_seconds" in found or "warm_artifact_transfer_seconds" in found
    replicas = plan.replicas_per_instance
    budget = timing.ec2_startup(
        plan.weights_gib,
        precompiled=precompiled,
        instance_type=instance,
        replicas=replicas,
        warm_pool=warm_pool,
    ).seconds
    models = {
        path: timing.ec2_startup_model(
            plan.weights_gib,
            precompiled=precompiled,
            instance_type=instance,
            replicas=replicas,
            path=path,
            warm_pool=warm_pool,
        )
        for path in floors.START_PATHS
    }
    rows: list[Comparison] = []
    for key, (what, path) in EC2_STARTS.items():
        if key in found:
            phase_floors = [p.floor_seconds for p in models[path].phases]
            floor = sum(f for f in phase_floors if f is not None) if None not in phase_floors else None
            rows.append(_against(what, found[key], budget, "s", floor))
    cold, warm = models[floors.COLD], models[floors.WARM]
    # The cold keys come from one line: a cold start's where there is one, else the pool's preparation.
    new_launch = "a new launch" if "boot_to_ready_seconds" in found else "into the warm pool"
    boots = (
        (f"instance boot ({new_launch})", cold, _boot(found, "launch_to_kernel_seconds", "node_boot_seconds")),
        ("warm boot (out of the warm pool)", warm, _boot(found, "warm_start_to_kernel_seconds", "warm_boot_seconds")),
    )  # fmt: skip
    for what, model, measured in boots:
        if measured is not None:
            phase = model.phase("instance boot")
            rows.append(_against(what, measured, phase.budget_seconds, "s", phase.floor_seconds))
    size = report.values.get("image_unpacked_bytes")
    for phases, model, label in ((PHASES, cold, ""), (WARM_PHASES, warm, " (warm start)")):
        for key, name in phases.items():
            if key in found and name in {p.name for p in model.phases}:
                phase = model.phase(name)
                what, floor = name + label, phase.floor_seconds
                if name == "image pull" and size:
                    # The node measured the image it pulled: that image's floor, not the assumed 18 GB's.
                    floor = _measured_pull_floor(
                        plan, instance, size, precompiled=precompiled, warm_pool=warm_pool
                    )
                    what = f"image pull (a {size / 1e9:.1f} GB image, measured)"
                rows.append(_against(what, found[key], phase.budget_seconds, "s", floor))
    return rows


def _measured_pull_floor(
    plan: planner.ServingPlan, instance: str, size_bytes: float, *, precompiled: bool, warm_pool: bool
) -> float | None:
    """The pull's floor for the image size a node measured, on the volume this fleet gives it."""
    replicas = plan.replicas_per_instance
    target = (
        floors.node_target(plan.weights_gib, instance_type=instance, replicas=replicas, warm_pool=warm_pool)
        if precompiled
        else None
    )
    return floors.image_pull(
        instance,
        in_ram=target is not None and target.in_ram,
        warm_pool=warm_pool,
        image_unpacked_gib=size_bytes / floors.GIB,
    ).floor_seconds


def _against(what: str, measured: float, budget: float, unit: str, floor: float | None = None) -> Comparison:
    verdict = "within budget" if measured <= budget else "OVER budget"
    return Comparison(what, measured, float(budget), unit, verdict, floor)


@dataclass(frozen=True)
class ReportTimings:
    """One report: what it measured, set against the models."""

    report: str
    suite: str
    outcome: str
    timings: dict[str, float]
    values: dict[str, float]
    comparisons: list[Comparison]
    errors: list[str]


@dataclass(frozen=True)
class TimingsResult(Result):
    """``cdk-neuron timings``: every report given, in order."""

    command = "timings"
    reports: list[ReportTimings]


def build(reports: Sequence[TimingReport]) -> TimingsResult:
    return TimingsResult(
        reports=[
            ReportTimings(
                report=report.label,
                suite=report.suite,
                outcome=report.outcome,
                timings=dict(sorted(report.timings.items())),
                values=dict(sorted(report.values.items())),
                comparisons=compare(report),
                errors=list(report.errors),
            )
            for report in reports
        ]
    )


def render(result: TimingsResult) -> Report:
    out = Report()
    for entry in result.reports:
        measured = [*entry.timings.items(), *entry.values.items()]
        out.pairs(f"{entry.report} ({entry.outcome})", ((k, f"{v:.1f}") for k, v in measured))
        if entry.comparisons:
            out.table(
                "Measured against the model",
                ("What", "Measured", "Model", "Verdict", "Floor", "Measured / floor"),
                (
                    (
                        c.what,
                        f"{c.measured:.1f} {c.unit}",
                        f"{c.modelled:.1f} {c.unit}",
                        c.verdict,
                        "-" if c.floor is None else f"{c.floor:.1f} {c.unit}",
                        "-" if c.over_floor is None else f"{c.over_floor:.2f}x",
                    )
                    for c in entry.comparisons
                ),
            )
        out.notes("Not measured", entry.errors)
    return out


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="a timing report a live make integ run wrote (docs/integ.md)",
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    ctx.show(build([load_report(path) for path in args.reports]), render)
    return ExitStatus.OK


COMMAND = Command(
    "timings",
    "An integ run's timing reports beside the budgets the models derive (offline): timings REPORT.json...",
    _run,
    arguments=_arguments,
)

__all__ = ["COMMAND", "Comparison", "TimingsResult", "build", "compare", "render"]
