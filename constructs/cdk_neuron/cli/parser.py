"""The ``cdk-neuron`` argument parser, built from the command table.

Options every command takes (``--config``, ``--app``, ``--synth``, ``--output``/``--json``) are
accepted before or after the command; their defaults are applied by :mod:`cdk_neuron.cli.main`
(``argparse.SUPPRESS`` keeps a value given before the command from being overwritten by the
subcommand's default). Commands that call AWS also take ``--profile`` and ``--region``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cdk_neuron import __version__
from cdk_neuron.cli.command import Command
from cdk_neuron.cli.output import OUTPUT_MODES

EPILOG = (
    "Exit codes: 0 ok; 1 check/job failed or AWS error; 2 usage, cdk.json or assembly error; "
    "3 no AWS credentials; 130 interrupted; 141 output pipe closed."
)
# shtab's file completion, spelled out so building the parser does not import shtab.
FILE_COMPLETION = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}


def _global_options(parser: argparse.ArgumentParser) -> None:
    """Options accepted before or after the command: their defaults are applied by ``main``."""
    config = parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="cdk.json whose cdk-neuron:deployments loader defines the environments",
    )
    config.complete = FILE_COMPLETION  # type: ignore[attr-defined]
    app = parser.add_argument(
        "--app",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="a cloud assembly cdk synth wrote (e.g. cdk.out): any app using cdk-neuron constructs",
    )
    app.complete = FILE_COMPLETION  # type: ignore[attr-defined]
    parser.add_argument(
        "--synth",
        action="store_true",
        default=argparse.SUPPRESS,
        help="run npx cdk synth here first and read what it writes (needs the CDK CLI). Default source: "
        "./cdk.json's loader if it names one, else ./cdk.out",
    )
    parser.add_argument(
        "--output",
        "-o",
        choices=OUTPUT_MODES,
        default=argparse.SUPPRESS,
        help="table (default): sized to the terminal; json: one document; text: plain lines for logs",
    )
    parser.add_argument(
        "--json",
        dest="output",
        action="store_const",
        const="json",
        default=argparse.SUPPRESS,
        help="same as --output json",
    )


def _aws_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", help="AWS profile (default: the standard boto3 credential chain)")
    parser.add_argument(
        "--region", help="AWS Region to call instead of the environment's (default: its cdk.json region)"
    )


def build(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The parser of every command in ``commands``; ``args.command`` names the one given."""
    parser = argparse.ArgumentParser(
        prog="cdk-neuron",
        description="Plan, cost, preflight and run the cdk-neuron environments of any CDK app: from its cloud "
        "assembly (--app cdk.out, --synth) or the loader its cdk.json names (--config).",
        epilog=EPILOG,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cdk-neuron {__version__}")
    _global_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.description or command.help,
            epilog=command.epilog,
            allow_abbrev=False,
        )
        if command.shared_options:
            _global_options(sub)
        if command.aws:
            _aws_options(sub)
        command.arguments(sub)
    return parser


__all__ = ["EPILOG", "FILE_COMPLETION", "build"]
