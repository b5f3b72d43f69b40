"""``cdk-neuron``: know before ``cdk deploy`` whether it will work and what it costs; run jobs after.

The entry point: it builds the parser from the command table (:mod:`cdk_neuron.cli.commands`), the
:class:`~cdk_neuron.cli.context.Context` from the command line, runs the chosen command and turns
every way a run can end into an :class:`~cdk_neuron.cli.status.ExitStatus`:

- ``NeuronConfigError`` (bad input, cdk.json, assembly) and a missing optional dependency: one line
  on stderr, exit 2;
- no usable AWS credentials: one sentence, exit 3;
- ``AwsLookupError`` and AWS errors: one line, exit 1;
- Ctrl-C: exit 130; the reader of stdout going away (``| head``): nothing more, exit 141.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace

from cdk_neuron.cli.aws import (
    AwsLookupError,
    ClientFactory,
    CredentialsProblem,
    credentials_problem,
    error_summary,
)
from cdk_neuron.cli.commands import BY_NAME, build_parser
from cdk_neuron.cli.context import Context, SourceOptions
from cdk_neuron.cli.extras import MissingExtra
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.errors import NeuronConfigError


def _parser() -> argparse.ArgumentParser:
    return build_parser()


def _split_job_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first ``--`` is the job's command, never cdk-neuron's options."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def _context(base: Context, args: argparse.Namespace) -> Context:
    return base.configured(
        output=args.output,
        profile=getattr(args, "profile", None),
        sources=SourceOptions(config=args.config, app=args.app, synth=args.synth),
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    """The command's status, or the one its failure maps to (module docstring)."""
    try:
        return BY_NAME[args.command].run(args, ctx)
    except (NeuronConfigError, MissingExtra) as error:
        ctx.note(str(error))
        return ExitStatus.USAGE
    except CredentialsProblem as error:
        print(str(error), file=ctx.err)
        return ExitStatus.NO_CREDENTIALS
    except AwsLookupError as error:
        ctx.note(str(error))
        return ExitStatus.FAILED
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        raise
    except Exception as error:
        if "botocore" not in sys.modules:
            raise
        problem = credentials_problem(error)
        if problem is not None:
            print(str(problem), file=ctx.err)
            return ExitStatus.NO_CREDENTIALS
        import botocore.exceptions as bx

        if isinstance(error, (bx.ClientError, bx.BotoCoreError)):
            ctx.note(f"AWS error: {error_summary(error)}")
            return ExitStatus.FAILED
        raise


def _reader_gone(ctx: Context) -> ExitStatus:
    """stdout's reader closed the pipe: print nothing more, and keep Python's exit flush from
    raising again (the Python documentation's recipe, "Note on SIGPIPE", signal module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, ctx.out.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's StringIO): nothing is flushed at exit
    return ExitStatus.BROKEN_PIPE


def main(
    argv: Sequence[str] | None = None,
    *,
    context: Context | None = None,
    clients: ClientFactory | None = None,
) -> int:
    """Run the CLI and return its exit status.

    ``context`` replaces what the command reads from outside its arguments (AWS clients, clock,
    streams; :class:`~cdk_neuron.cli.context.Context`); ``clients`` alone is short for
    ``context=Context(clients=clients)``.
    """
    args_in, job_command = _split_job_command(list(sys.argv[1:] if argv is None else argv))
    parser = _parser()
    args = parser.parse_args(args_in)
    command = BY_NAME[args.command]
    if job_command and not command.takes_job_command:
        parser.error(f"'--' and a command are only valid for submit, not {args.command}")
    args.job_command = job_command
    args.config = getattr(args, "config", None)
    args.app = getattr(args, "app", None)
    args.synth = getattr(args, "synth", False)
    args.output = getattr(args, "output", "table")
    args.region = getattr(args, "region", None)
    base = context or Context()
    if clients is not None:
        base = replace(base, clients=clients)
    ctx = _context(base, args)
    try:
        status = _run(args, ctx)
        ctx.out.flush()
    except BrokenPipeError:
        return _reader_gone(ctx)
    return status


if __name__ == "__main__":
    sys.exit(main())
