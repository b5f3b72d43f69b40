"""What the CLI tests share: a clock that never waits."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone


class RecordingClock:
    """A :class:`~cdk_neuron.cli.context.Clock` that records every wait and moves on by it: no test
    waits, and every timestamp the CLI prints is known."""

    START = datetime(2026, 12, 1, 15, 0, 0, tzinfo=timezone.utc)

    def __init__(self) -> None:
        self.calls: list[float] = []

    def now(self) -> datetime:
        return self.START + timedelta(seconds=sum(self.calls))

    def sleep(self, seconds: float) -> None:
        self.calls.append(seconds)
