"""The ``cdk-neuron`` command table: every command, in the order ``cdk-neuron --help`` lists them.

A command is a :class:`~cdk_neuron.cli.command.Command` declared by its own module; adding one is
adding its module and a line here (docs/cli.md, "Adding a command").
"""

from __future__ import annotations

import argparse

from cdk_neuron.cli import (
    ami,
    compiling,
    completion,
    cost,
    impact,
    jobs,
    parser,
    plan,
    preflight,
    scale,
    submit,
    timings,
    use_artifact,
)
from cdk_neuron.cli.command import Command


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole table."""
    return parser.build(TABLE)


TABLE: tuple[Command, ...] = (
    plan.COMMAND,
    cost.COMMAND,
    impact.COMMAND,
    preflight.COMMAND,
    ami.COMMAND,
    submit.COMMAND,
    compiling.COMMAND,
    use_artifact.COMMAND,
    *jobs.COMMANDS,
    scale.COMMAND,
    timings.COMMAND,
    completion.command(build_parser),
)

BY_NAME: dict[str, Command] = {command.name: command for command in TABLE}


__all__ = ["BY_NAME", "TABLE", "build_parser"]
