"""What ``status --watch`` reports as it polls, for every engine (AWS Batch and HyperPod's Slurm)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdk_neuron.cli.result import key


@dataclass(frozen=True)
class Transition:
    """A change of the job's or a node's state that ``status --watch`` saw."""

    at: str
    subject: str
    from_: str | None = field(metadata=key("from"))
    to: str | None


__all__ = ["Transition"]
