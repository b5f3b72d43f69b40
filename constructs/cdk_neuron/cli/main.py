"""``cdk-neuron``: know before ``cdk deploy`` whether it will work and what it costs; run jobs after.

Exit codes:

- 0: success (``preflight``: every check passed; ``status``: the job has not failed; ``status
  --watch`` and ``logs --follow``: the job succeeded)
- 1: a preflight check failed, the job failed, or AWS returned an error / lacks a resource
- 2: usage error, an invalid cdk.json or cloud assembly (one line naming the field, the value and the fix)
- 3: no usable AWS credentials (one sentence saying how to provide them)
- 130: interrupted (Ctrl-C) while watching or following
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from cdk_neuron import __version__
from cdk_neuron.cli import assembly, cost, deployments, jobs, plan, preflight, source, submit, timings
from cdk_neuron.cli.aws import (
    Boto3Clients,
    ClientFactory,
    CredentialsProblem,
    credentials_problem,
    error_summary,
)
from cdk_neuron.cli.output import OUTPUT_MODES, OutputMode, Report, emit
from cdk_neuron.cli.pricing import PRICING_API_REGION, PriceBook, live_price_book
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.measurements import load_report
from cdk_neuron.validation import REGION

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_CREDENTIALS = 3
EXIT_INTERRUPTED = 130

COMPLETION_SHELLS = ("bash", "zsh", "tcsh")
# shtab's file completion, spelled out so building the parser does not import shtab.
_FILE_COMPLETION = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}


def _global_options(parser: argparse.ArgumentParser) -> None:
    """Options accepted before or after the command: their defaults are applied in :func:`main`."""
    config = parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="cdk.json whose cdk-neuron:deployments loader defines the environments",
    )
    config.complete = _FILE_COMPLETION  # type: ignore[attr-defined]
    app = parser.add_argument(
        "--app",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="a cloud assembly cdk synth wrote (e.g. cdk.out): any app using cdk-neuron constructs",
    )
    app.complete = _FILE_COMPLETION  # type: ignore[attr-defined]
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdk-neuron",
        description="Plan, cost, preflight and run the cdk-neuron environments of any CDK app: from its cloud "
        "assembly (--app cdk.out, --synth) or the loader its cdk.json names (--config).",
        epilog="Exit codes: 0 ok; 1 check/job failed or AWS error; 2 usage, cdk.json or assembly error; "
        "3 no AWS credentials; 130 interrupted.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cdk-neuron {__version__}")
    _global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, *, aws: bool = False) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, allow_abbrev=False)
        _global_options(sub)
        if aws:
            _aws_options(sub)
        return sub

    def env_option(sub: argparse.ArgumentParser, *, one: bool) -> None:
        sub.add_argument(
            "--env",
            metavar="NAME",
            help="the environment (required when there are several)"
            if one
            else "one environment (default: all)",
        )
        sub.add_argument(
            "--path",
            metavar="CONSTRUCT_PATH",
            help="the environment holding this construct (a cloud assembly's construct path, e.g. dev/Training)",
        )

    def job_id(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("job_id", metavar="JOB_ID", help="the AWS Batch job id (submit prints it)")

    def interval(sub: argparse.ArgumentParser) -> None:
        low, high = jobs.POLL_RANGE
        sub.add_argument(
            "--interval",
            type=float,
            default=jobs.POLL_SECONDS,
            metavar="SECONDS",
            help=f"seconds between polls, {low}..{high} (default: {jobs.POLL_SECONDS})",
        )

    sub = command("plan", "Training placement, checkpoint estimate and serving sizing (offline).")
    env_option(sub, one=False)

    sub = command(
        "cost",
        "Monthly cost at idle and at full scale per environment (offline); --details for every line.",
        aws=True,
    )
    env_option(sub, one=False)
    sub.add_argument(
        "--details",
        action="store_true",
        help="after the summary: every line, the GPU comparison, assumptions and claims",
    )
    sub.add_argument(
        "--live-prices",
        action="store_true",
        help="price every line with the AWS Price List API in the environment's Region (needs credentials)",
    )
    sub.add_argument(
        "--diff",
        nargs=2,
        metavar=("OLD_ASSEMBLY", "NEW_ASSEMBLY"),
        help="what changes per environment and line between two cloud assemblies, per hour and month "
        "(offline, table prices): e.g. the main branch's cdk.out and a pull request's",
    )

    sub = command("preflight", "Read-only checks of the live account; exits 1 on any failure.", aws=True)
    env_option(sub, one=False)

    sub = command(
        "submit",
        "Submit a multi-node AWS Batch training job: submit --nodes N -- 'torchrun $TORCHRUN_ARGS train.py'",
        aws=True,
    )
    sub.epilog = (
        "Everything after -- is the command line bash runs on every node, after the launcher has set "
        "MASTER_ADDR, NODE_RANK, TORCHRUN_ARGS and the NEURON_* degrees; single-quote $VARIABLES meant for the node."
    )
    env_option(sub, one=True)
    sub.add_argument(
        "--nodes", type=int, help="number of nodes, 1..training.max_nodes (default: training.plan.nodes)"
    )
    sub.add_argument("--image", help="container image for every node (uses a job definition revision)")
    sub.add_argument(
        "--env-var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment variable for every node (a container override); repeatable",
    )
    sub.add_argument("--name", help="job name (default: <env>-train-<UTC timestamp>)")
    sub.add_argument("--stack", help="the stack that publishes the job queue (default: as the app says)")

    sub = command(
        "status", "A job's status, nodes and attempts; on FAILED, where the failing node logged.", aws=True
    )
    env_option(sub, one=True)
    job_id(sub)
    sub.add_argument(
        "--watch",
        action="store_true",
        help="poll until the job ends, printing each transition; exit 0 on SUCCEEDED, 1 on FAILED",
    )
    interval(sub)

    sub = command("logs", "One node's CloudWatch Logs stream; --follow until the job ends.", aws=True)
    env_option(sub, one=True)
    job_id(sub)
    sub.add_argument(
        "--node", type=int, metavar="N", help="node index of a multi-node job (default: the main node)"
    )
    sub.add_argument(
        "--follow", "-f", action="store_true", help="keep printing new events until the job ends"
    )
    interval(sub)

    for name, help in (
        ("cancel", "Cancel a job that has not started (SUBMITTED, PENDING, RUNNABLE)."),
        ("terminate", "Terminate a job in any state: every node's container is stopped."),
    ):
        sub = command(name, help, aws=True)
        env_option(sub, one=True)
        job_id(sub)
        sub.add_argument("--reason", help="why, recorded as the job's status reason")

    sub = command("list", "Jobs in the environment's job queue, newest first.", aws=True)
    env_option(sub, one=True)
    sub.add_argument(
        "--state",
        choices=("active", "all", *jobs.STATES),
        default="active",
        help="one state, 'active' (default: SUBMITTED through RUNNING) or 'all'",
    )
    sub.add_argument("--limit", type=int, default=50, help="most jobs to show per state (default: 50)")
    sub.add_argument("--stack", help="the stack that publishes the job queue (default: as the app says)")

    sub = command(
        "timings",
        "An integ run's timing reports beside the budgets the models derive (offline): timings REPORT.json...",
    )
    sub.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="a timing report a live make integ run wrote (docs/integ.md)",
    )

    sub = commands.add_parser(
        "completion",
        help="Print a shell completion script: cdk-neuron completion bash > <completions dir>/cdk-neuron",
        description="Print a completion script for bash, zsh or tcsh (generated by shtab).",
    )
    sub.add_argument("shell", choices=COMPLETION_SHELLS)
    return parser


def _selected(envs: dict[str, Deployment], args: argparse.Namespace) -> list[Deployment]:
    """``--path`` (the deployment holding a construct), else ``--env``, else all."""
    if args.path is None:
        return deployments.select(envs, args.env)
    found = assembly.select_path(envs, args.path)
    if args.env is not None and args.env != found.name:
        raise NeuronConfigError(
            "--path", args.path, f"is in {found.name}, not --env {args.env}: give one of them"
        )
    return [found]


def _one_environment(envs: dict[str, Deployment], args: argparse.Namespace) -> Deployment:
    if args.env is None and args.path is None and len(envs) > 1:
        raise NeuronConfigError(
            "--env", None, f"choose the environment: {one_of(envs)} (or --path CONSTRUCT_PATH)"
        )
    return _selected(envs, args)[0]


def _in_region(envs: list[Deployment], region: str | None) -> list[Deployment]:
    if region is None:
        return envs
    if not REGION.match(region):
        raise NeuronConfigError("--region", region, "give an AWS Region name such as us-west-2")
    return [replace(env, region=region) for env in envs]


def _cost_diff(args: argparse.Namespace) -> dict[str, Any]:
    """``cost --diff OLD NEW``: two cloud assemblies, each environment's lines compared."""
    for option, value in (("--live-prices", args.live_prices), ("--app", args.app), ("--synth", args.synth),
                          ("--config", args.config), ("--region", getattr(args, "region", None))):  # fmt: skip
        if value:
            raise NeuronConfigError(
                option, value, "cost --diff compares two cloud assemblies offline: omit it"
            )
    sides: list[list[Deployment]] = []
    for directory in args.diff:
        envs = assembly.load(directory)
        if args.env is not None and args.env not in envs:
            sides.append([])  # added or removed by the change
        else:
            sides.append(_selected(envs, args) if args.path is None or _holds(envs, args.path) else [])
    if args.env is not None and not any(sides):
        raise NeuronConfigError("--env", args.env, "in neither assembly")
    return cost.diff(sides[0], sides[1])


def _holds(envs: dict[str, Deployment], path: str) -> bool:
    try:
        assembly.select_path(envs, path)
    except NeuronConfigError:
        return False
    return True


def _print_line(line: str) -> None:
    print(line, flush=True)


def _run(
    args: argparse.Namespace,
    job_command: Sequence[str],
    clients: ClientFactory | None,
    sleep: Callable[[float], None],
) -> int:
    mode: OutputMode = args.output

    def show(doc: dict[str, Any], report: Callable[[dict[str, Any]], Report]) -> None:
        emit(doc, None if mode == "json" else report(doc), mode)

    if args.command == "timings":
        show(timings.build([load_report(path) for path in args.reports]), timings.render)
        return EXIT_OK
    if args.command == "cost" and args.diff is not None:
        show(_cost_diff(args), cost.render_diff)
        return EXIT_OK
    found = source.load(config=args.config, app=args.app, synth=args.synth)
    source.OPTIONS.set(found.options)
    envs = found.deployments
    aws = clients or Boto3Clients(getattr(args, "profile", None))
    region = getattr(args, "region", None)

    if args.command == "plan":
        show(plan.build(_selected(envs, args)), plan.render)
        return EXIT_OK
    if args.command == "cost":
        selected = _in_region(_selected(envs, args), region)
        books: dict[str, PriceBook] = {}
        if args.live_prices:
            pricing = aws("pricing", PRICING_API_REGION)
            for env in selected:
                books[env.name] = live_price_book(
                    pricing,
                    env.region,
                    cost.ec2_types(env),
                    sagemaker_types=cost.sagemaker_types(env),
                    services=cost.service_keys(env),
                )
        show(cost.build(selected, books), lambda doc: cost.render(doc, details=args.details))
        return EXIT_OK
    if args.command == "preflight":
        selected = _in_region(_selected(envs, args), region)
        rows = preflight.run(selected, list(envs.values()), aws, qualifier=found.qualifier)
        doc = preflight.build(rows)
        show(doc, preflight.render)
        return EXIT_OK if doc["ok"] else EXIT_FAILED
    env = _in_region([_one_environment(envs, args)], region)[0]
    # Every job command acts on the environment's AWS Batch training cluster: refuse clearly without one.
    training = submit.batch_training(env, args.command)
    if args.command == "submit":
        doc = submit.submit(
            env,
            aws,
            nodes=training.plan.nodes if args.nodes is None else args.nodes,
            command=job_command,
            image=args.image,
            env_vars=args.env_var,
            job_name=args.name,
            stack_name=args.stack,
        )
        show(doc, submit.render_submit)
        return EXIT_OK
    if args.command == "status":
        if args.watch:
            interval = jobs.check_interval(args.interval)
            doc = jobs.watch(
                env,
                aws,
                args.job_id,
                interval=interval,
                sleep=sleep,
                on_transition=(lambda t: None)
                if mode == "json"
                else (lambda t: _print_line(jobs.transition_line(t))),
            )
        else:
            doc = jobs.status(env, aws, args.job_id)
        show(doc, jobs.render_status)
        return EXIT_FAILED if doc["status"] == "FAILED" else EXIT_OK
    if args.command == "logs":
        interval = jobs.check_interval(args.interval)
        doc = jobs.logs(
            env,
            aws,
            args.job_id,
            node=args.node,
            follow=args.follow,
            interval=interval,
            sleep=sleep,
            write=None if mode == "json" else _print_line,
            announce=None if mode == "json" else lambda line: print(f"cdk-neuron: {line}", file=sys.stderr),
        )
        if mode == "json":
            emit(doc, None, mode)
        return EXIT_FAILED if args.follow and doc["status"] == "FAILED" else EXIT_OK
    if args.command in ("cancel", "terminate"):
        show(jobs.stop(env, aws, args.job_id, action=args.command, reason=args.reason), jobs.render_stop)
        return EXIT_OK
    states = (
        jobs.ACTIVE_STATES
        if args.state == "active"
        else jobs.STATES
        if args.state == "all"
        else (args.state,)
    )
    show(jobs.list_jobs(env, aws, states=states, limit=args.limit, stack_name=args.stack), jobs.render_list)
    return EXIT_OK


def _error(message: str) -> None:
    print(f"cdk-neuron: {message}", file=sys.stderr)


def completion_script(shell: str) -> str:
    import shtab

    return str(shtab.complete(_parser(), shell=shell))


def main(
    argv: Sequence[str] | None = None,
    *,
    clients: ClientFactory | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run the CLI and return its exit code.

    ``clients`` replaces boto3 (tests pass moto/Stubber clients); ``sleep`` replaces the wait
    between polls of ``status --watch`` and ``logs --follow``.
    """
    args_in = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the job's command, never cdk-neuron's options.
    job_command: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, job_command = args_in[:cut], args_in[cut + 1 :]
    parser = _parser()
    args = parser.parse_args(args_in)
    if job_command and args.command != "submit":
        parser.error(f"'--' and a command are only valid for submit, not {args.command}")
    if args.command == "completion":
        sys.stdout.write(completion_script(args.shell))
        return EXIT_OK
    args.config = getattr(args, "config", None)
    args.app = getattr(args, "app", None)
    args.synth = getattr(args, "synth", False)
    args.output = getattr(args, "output", "table")
    try:
        return _run(args, job_command, clients, sleep)
    except NeuronConfigError as error:
        _error(str(error))
        return EXIT_USAGE
    except CredentialsProblem as error:
        print(str(error), file=sys.stderr)
        return EXIT_NO_CREDENTIALS
    except submit.AwsLookupError as error:
        _error(str(error))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:
        if "botocore" not in sys.modules:
            raise
        problem = credentials_problem(error)
        if problem is not None:
            print(str(problem), file=sys.stderr)
            return EXIT_NO_CREDENTIALS
        import botocore.exceptions as bx

        if isinstance(error, (bx.ClientError, bx.BotoCoreError)):
            _error(f"AWS error: {error_summary(error)}")
            return EXIT_FAILED
        raise


if __name__ == "__main__":
    sys.exit(main())
