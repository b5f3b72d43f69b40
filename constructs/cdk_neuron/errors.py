"""The one exception type for bad cdk-neuron configuration."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

_T = TypeVar("_T")


class NeuronConfigError(ValueError):
    """Raised for every invalid cdk-neuron configuration, before anything is synthesized.

    The message always names the field, the value that was given and what would be valid, so a
    user can fix the input without reading a stack trace. Raised from a construct, it also names
    the construct's path (``dev/Training/Cluster: max_nodes=0: must be ...``), so an app with
    several clusters or fleets says which one is wrong.

    :param field: the prop or configuration key (a dotted path for nested values).
    :param value: the value given.
    :param fix: what would be valid, worded as an instruction.
    :param construct: the path of the construct that refused it (``construct.node.path``), when
        raised from one. Default: None (a pure function: catalog, planner, validation).
    """

    def __init__(self, field: str, value: Any, fix: str, *, construct: str | None = None) -> None:
        self.field = field
        self.value = value
        self.fix = fix
        self.construct = construct
        where = f"{construct}: " if construct else ""
        super().__init__(f"{where}{field}={value!r}: {fix}")

    def at(self, construct: str) -> NeuronConfigError:
        """The same error, reported by the construct at path ``construct``."""
        return NeuronConfigError(self.field, self.value, self.fix, construct=construct)


class NeuronConfigErrors(NeuronConfigError):
    """Several :class:`NeuronConfigError` found in one pass over a configuration, reported together.

    ``str()`` is one line per error, in the order found; ``errors`` holds them. Its own field, value
    and fix are the first error's, so code that handles one error handles this too.
    """

    def __init__(self, errors: Iterable[NeuronConfigError]) -> None:
        flat: list[NeuronConfigError] = []
        for error in errors:
            flat.extend(error.errors if isinstance(error, NeuronConfigErrors) else [error])
        if not flat:
            raise ValueError("NeuronConfigErrors needs at least one error")
        self.errors: tuple[NeuronConfigError, ...] = tuple(flat)
        first = flat[0]
        super().__init__(first.field, first.value, first.fix, construct=first.construct)
        self.args = ("\n".join(str(e) for e in flat),)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)

    def at(self, construct: str) -> NeuronConfigErrors:
        """Every error, reported by the construct at ``construct`` (those naming none take it)."""
        return NeuronConfigErrors(e if e.construct is not None else e.at(construct) for e in self.errors)


class ErrorCollector:
    """Runs independent checks and keeps every :class:`NeuronConfigError`, so one run reports them all.

    ``run(check)`` returns the check's value, or None when it raised (the error is kept); ``add`` keeps
    an error found without raising; ``raise_if_any`` raises the one error, or all of them as
    :class:`NeuronConfigErrors`.
    """

    def __init__(self) -> None:
        self.errors: list[NeuronConfigError] = []

    def run(self, check: Callable[[], _T]) -> _T | None:
        try:
            return check()
        except NeuronConfigError as error:
            self.errors.append(error)
            return None

    def add(self, error: NeuronConfigError) -> None:
        self.errors.append(error)

    def raise_if_any(self) -> None:
        if self.errors:
            raise NeuronConfigErrors(self.errors) if len(self.errors) > 1 else self.errors[0]


def one_of(values: Iterable[object]) -> str:
    """Render a sorted list of valid choices for an error message."""
    return ", ".join(sorted(str(v) for v in values))
