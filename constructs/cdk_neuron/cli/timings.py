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
from collections.abc import Sequence
from dataclasses import dataclass

from cdk_neuron import checkpoint_advisor, planner
from cdk_neuron.cli.command import Command
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.measurements import TimingReport, load_report
from cdk_neuron.serving import timing


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
        ec2_key = "instance_launch_to_in_service_seconds"
        if ec2_key in report.timings:
            precompiled = "artifact_transfer_seconds" in report.timings
            startup = timing.ec2_startup_model(
                plan.weights_gib,
                precompiled=precompiled,
                instance_type=instance,
                replicas=plan.replicas_per_instance,
            )
            budget = timing.ec2_startup(
                plan.weights_gib,
                precompiled=precompiled,
                instance_type=instance,
                replicas=plan.replicas_per_instance,
            ).seconds
            floors = [p.floor_seconds for p in startup.phases]
            floor = sum(f for f in floors if f is not None) if all(f is not None for f in floors) else None
            rows.append(_against("EC2 launch -> InService", report.timings[ec2_key], budget, "s", floor))
            for key, name in PHASES.items():
                if key in report.timings and name in {p.name for p in startup.phases}:
                    phase = startup.phase(name)
                    rows.append(
                        _against(name, report.timings[key], phase.budget_seconds, "s", phase.floor_seconds)
                    )
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
"""Report keys the node measures directly, and the start-up phase each is set against."""


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
