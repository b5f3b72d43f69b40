"""A command of the ``cdk-neuron`` table: its name, its arguments and ``run(args, ctx) -> ExitStatus``.

Each command module declares its :class:`Command` (or several); :mod:`cdk_neuron.cli.commands` lists
them in the order ``--help`` shows them, and :mod:`cdk_neuron.cli.main` builds the parser from that
table and calls the chosen command's ``run``. The options every command shares (``--output``, the
source options) and those of AWS commands (``--profile``, ``--region``) are added by ``main``; a
command adds only its own, with the helpers below for the ones several commands share.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cdk_neuron.cli import assembly, deployments
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.validation import known_region

Arguments = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace, Context], ExitStatus]


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """For a command that takes only the shared options."""


@dataclass(frozen=True)
class Command:
    """One ``cdk-neuron`` command.

    :param name: what the user types, e.g. ``"plan"``.
    :param help: one sentence for ``cdk-neuron --help`` and the command's own ``--help``.
    :param run: ``run(args, ctx) -> ExitStatus``: the parsed arguments and the :class:`Context`.
    :param arguments: adds the command's own arguments to its parser. Default: none.
    :param aws: the command calls AWS, so it takes ``--profile`` and ``--region``. Default: False.
    :param epilog: text after the command's ``--help``. Default: none.
    :param takes_job_command: everything after ``--`` is the command's (``submit``); any other command
        refuses a ``--``. Default: False.
    :param description: the command's own ``--help`` text. Default: ``help``.
    :param shared_options: the command takes the options every command shares (``--config``,
        ``--app``, ``--synth``, ``--output``, ``--json``). Default: True.
    """

    name: str
    help: str
    run: Run
    arguments: Arguments = no_arguments
    aws: bool = False
    epilog: str | None = None
    takes_job_command: bool = False
    description: str | None = None
    shared_options: bool = True


# -- arguments several commands share -----------------------------------------------------------


def environment_options(parser: argparse.ArgumentParser, *, one: bool) -> None:
    """``--env NAME`` and ``--path CONSTRUCT_PATH``; ``one``: the command acts on one environment."""
    parser.add_argument(
        "--env",
        metavar="NAME",
        help="the environment (required when there are several)" if one else "one environment (default: all)",
    )
    parser.add_argument(
        "--path",
        metavar="CONSTRUCT_PATH",
        help="the environment holding this construct (a cloud assembly's construct path, e.g. dev/Training)",
    )


# -- which environments a command acts on --------------------------------------------------------


def selected(envs: Mapping[str, Deployment], args: argparse.Namespace) -> list[Deployment]:
    """``--path`` (the deployment holding a construct), else ``--env``, else all."""
    if args.path is None:
        return deployments.select(envs, args.env)
    found = assembly.select_path(dict(envs), args.path)
    if args.env is not None and args.env != found.name:
        raise NeuronConfigError(
            "--path", args.path, f"is in {found.name}, not --env {args.env}: give one of them"
        )
    return [found]


def one_environment(envs: Mapping[str, Deployment], args: argparse.Namespace) -> Deployment:
    """The one environment a job command acts on: ``--env``/``--path``, or the only one there is."""
    if args.env is None and args.path is None and len(envs) > 1:
        raise NeuronConfigError(
            "--env", None, f"choose the environment: {one_of(envs)} (or --path CONSTRUCT_PATH)"
        )
    return selected(envs, args)[0]


def in_region(envs: Sequence[Deployment], region: str | None) -> list[Deployment]:
    """``envs`` as if they ran in ``--region`` (unchanged without it)."""
    if region is None:
        return list(envs)
    known_region("--region", region)  # a Region that exists, as cdk.json's region must be
    return [replace(env, region=region) for env in envs]


__all__ = [
    "Arguments",
    "Command",
    "Run",
    "environment_options",
    "in_region",
    "no_arguments",
    "one_environment",
    "selected",
]
