"""Alarm thresholds with documented defaults, validated before anything is synthesized.

Plain Python (no ``aws_cdk``). Durations are whole minutes, multiples of :data:`ALARM_PERIOD_MINUTES`
(the period the Neuron and EFS alarms evaluate); CloudWatch caps an alarm's evaluation window at one
day.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from cdk_neuron import validation
from cdk_neuron.errors import NeuronConfigError

ALARM_PERIOD_MINUTES = 5
"""Neuron and EFS alarms evaluate 5-minute periods: smooth enough not to flap on one bad minute."""
SERVING_PERIOD_MINUTES = 1
"""Serving alarms (5xx, latency, unhealthy hosts) evaluate 1-minute periods: users feel minutes."""
_MAX_WINDOW_MINUTES = 24 * 60


@dataclass(frozen=True, kw_only=True)
class MonitoringThresholds:
    """When each alarm fires. Every field has a default; see the field docs.

    Percentages are in (0, 100]; durations are minutes the condition must hold continuously.
    """

    saturated_percent: float = 90.0
    """Serving NeuronCore utilization (fleet average) above this means scale-out is lagging. 90 %."""
    saturated_minutes: int = 15
    """How long saturation must last before paging. 15 minutes."""
    idle_percent: float = 5.0
    """NeuronCore utilization (workload average) below this while instances run burns money. 5 %."""
    training_idle_minutes: int = 60
    """Training nodes idle this long (a hung job, a finished job whose nodes linger). 60 minutes:
    NeuronCores read idle while a job compiles on the CPUs, and a first compile takes about 25
    minutes (a 16-node Llama-3 70B job, README "Compilation takes forever"), longer for larger graphs."""
    serving_idle_minutes: int = 240
    """Serving instances above the fleet's ``min_capacity`` idle this long: scale-in is not happening.
    The instances a fleet keeps at its minimum never page, however quiet the night. 4 hours."""
    device_memory_percent: float = 90.0
    """Device memory (HBM) of the fullest node above this. 90 %."""
    device_memory_minutes: int = 15
    """How long device memory must stay above the threshold. 15 minutes."""
    serving_5xx_percent: float = 1.0
    """Share of requests answered 5xx (by the targets or the load balancer / endpoint). 1 %."""
    serving_p99_latency_seconds: float = 10.0
    """p99 response time (ALB TargetResponseTime or SageMaker ModelLatency). 10 s: generation of long
    answers takes seconds; set your SLO."""
    serving_minutes: int = 5
    """How long a serving condition (5xx, latency, unhealthy hosts) must last. 5 minutes."""
    efs_throughput_percent: float = 90.0
    """Checkpoint file system throughput as a share of what EFS permits. 90 %."""
    efs_throughput_minutes: int = 15
    """How long EFS must run at its throughput ceiling. 15 minutes: longer than a healthy
    checkpoint save (cdk_neuron.storage's default save-time budget is 10 minutes)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_percent"):
                _check_percent(f.name, value)
            elif f.name.endswith("_minutes"):
                step = SERVING_PERIOD_MINUTES if f.name == "serving_minutes" else ALARM_PERIOD_MINUTES
                _check_minutes(f.name, value, step)
            elif f.name == "serving_p99_latency_seconds":
                _check_positive(f.name, value)
        if self.idle_percent >= self.saturated_percent:
            raise NeuronConfigError(
                "idle_percent",
                self.idle_percent,
                f"must be below saturated_percent ({self.saturated_percent})",
            )


def _check_percent(field: str, value: object) -> None:
    validation.percentage(field, value)


def _check_positive(field: str, value: object) -> None:
    validation.number(field, value, above=0)


def _check_minutes(field: str, value: object, step: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NeuronConfigError(field, value, "must be a whole number of minutes")
    if value < step or value % step or value > _MAX_WINDOW_MINUTES:
        raise NeuronConfigError(
            field,
            value,
            f"must be a multiple of {step} minute(s) between {step} and {_MAX_WINDOW_MINUTES} (one day)",
        )


__all__ = ["ALARM_PERIOD_MINUTES", "SERVING_PERIOD_MINUTES", "MonitoringThresholds"]
