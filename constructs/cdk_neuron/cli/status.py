"""How ``cdk-neuron`` ends: one exit status per kind of outcome, the same for every command."""

from __future__ import annotations

from enum import IntEnum, unique


@unique  # two outcomes must never share a code (httpie's ExitStatus is @unique too)
class ExitStatus(IntEnum):
    """The process exit code of ``cdk-neuron``.

    Scripts may rely on these values: they only ever gain members, each with its own value.
    """

    OK = 0
    """Success. ``preflight``: every check passed; ``status``: the job has not failed; ``status
    --watch`` and ``logs --follow``: the job succeeded."""
    FAILED = 1
    """A preflight check failed, the job failed, or AWS answered with an error or lacks something the
    command needs."""
    USAGE = 2
    """A usage error, an invalid cdk.json or an unreadable cloud assembly (one line naming the field,
    the value and the fix), or a missing optional dependency."""
    NO_CREDENTIALS = 3
    """No usable AWS credentials (one sentence saying how to provide them)."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C) while watching or following: 128 + SIGINT, as a shell reports it."""
    BROKEN_PIPE = 141
    """The reader of the output went away (``cdk-neuron plan -o json | head -1``): 128 + SIGPIPE, what a
    shell reports for any command whose pipe closed. Nothing is printed."""


__all__ = ["ExitStatus"]
