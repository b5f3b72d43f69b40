"""The one exception type for bad cdk-neuron configuration."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class NeuronConfigError(ValueError):
    """Raised for every invalid cdk-neuron configuration, before anything is synthesized.

    The message always names the field, the value that was given and what would be valid,
    so a user can fix the input without reading a stack trace.
    """

    def __init__(self, field: str, value: Any, fix: str) -> None:
        self.field = field
        self.value = value
        self.fix = fix
        super().__init__(f"{field}={value!r}: {fix}")


def one_of(values: Iterable[object]) -> str:
    """Render a sorted list of valid choices for an error message."""
    return ", ".join(sorted(str(v) for v in values))
