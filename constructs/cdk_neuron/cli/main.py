"""``cdk-neuron``: know before ``cdk deploy`` whether it will work and what it costs; run jobs after.

Exit codes:

- 0: success (``preflight``: every check passed; ``status``: the job has not failed)
- 1: a preflight check failed, the job failed, or AWS returned an error / lacks a resource
- 2: usage error or an invalid cdk.json (one line naming the field, the value and the fix)
- 3: no usable AWS credentials (one sentence saying how to provide them)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cdk_neuron import __version__
from cdk_neuron.cli import cost, deployments, plan, preflight, submit
from cdk_neuron.cli.aws import (
    Boto3Clients,
    ClientFactory,
    CredentialsProblem,
    credentials_problem,
    error_summary,
)
from cdk_neuron.cli.output import make_console, print_json
from cdk_neuron.cli.pricing import PRICING_API_REGION, PriceBook, live_price_book
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError, one_of

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_CREDENTIALS = 3


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", default="cdk.json", metavar="PATH", help="cdk.json to read (default: ./cdk.json)"
    )
    common.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    aws = argparse.ArgumentParser(add_help=False)
    aws.add_argument("--profile", help="AWS profile (default: the standard boto3 credential chain)")

    parser = argparse.ArgumentParser(
        prog="cdk-neuron",
        description="Plan, cost, preflight and run cdk-neuron environments defined in cdk.json.",
        epilog="Exit codes: 0 ok; 1 check/job failed or AWS error; 2 usage or cdk.json error; 3 no AWS credentials.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cdk-neuron {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        return commands.add_parser(
            name, help=help, description=help, parents=[common, *parents], allow_abbrev=False
        )

    sub = command("plan", "Training placement, checkpoint estimate and serving sizing (offline).")
    sub.add_argument("--env", metavar="NAME", help="one environment (default: all)")

    sub = command(
        "cost", "Hourly and monthly cost at idle and at full scale, with a GPU comparison (offline).", aws
    )
    sub.add_argument("--env", metavar="NAME", help="one environment (default: all)")
    sub.add_argument(
        "--live-prices",
        action="store_true",
        help="price EC2 instances with the AWS Price List API (needs credentials) instead of the dated table",
    )

    sub = command("preflight", "Read-only checks of the live account; exits 1 on any failure.", aws)
    sub.add_argument("--env", metavar="NAME", help="one environment (default: all)")

    sub = command(
        "submit",
        "Submit a multi-node AWS Batch training job: submit --nodes N -- 'torchrun $TORCHRUN_ARGS train.py'",
        aws,
    )
    sub.epilog = (
        "Everything after -- is the command line bash runs on every node, after the launcher has set "
        "MASTER_ADDR, NODE_RANK, TORCHRUN_ARGS and the NEURON_* degrees; single-quote $VARIABLES meant for the node."
    )
    sub.add_argument("--env", metavar="NAME", help="the environment (required when cdk.json has several)")
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

    sub = command("status", "Show a training job's status, nodes and attempts.", aws)
    sub.add_argument("--env", metavar="NAME", help="the environment (required when cdk.json has several)")
    sub.add_argument("job_id", metavar="JOB_ID")
    return parser


def _one_environment(envs: dict[str, Deployment], name: str | None) -> Deployment:
    if name is None and len(envs) > 1:
        raise NeuronConfigError("--env", None, f"choose the environment: {one_of(envs)}")
    return deployments.select(envs, name)[0]


def _emit(
    args: argparse.Namespace, doc: dict[str, Any], render: Callable[[dict[str, Any], Any], None]
) -> None:
    if args.json:
        print_json(doc)
    else:
        render(doc, make_console())


def _run(args: argparse.Namespace, job_command: Sequence[str], clients: ClientFactory | None) -> int:
    envs = deployments.load(args.config)
    aws = clients or Boto3Clients(getattr(args, "profile", None))
    if args.command == "plan":
        _emit(args, plan.build(deployments.select(envs, args.env)), plan.render)
        return EXIT_OK
    if args.command == "cost":
        selected = deployments.select(envs, args.env)
        books: dict[str, PriceBook] = {}
        if args.live_prices:
            for env in selected:
                books[env.name] = live_price_book(
                    aws("pricing", PRICING_API_REGION), env.region, cost.ec2_types(env)
                )
        _emit(args, cost.build(selected, books), cost.render)
        return EXIT_OK
    if args.command == "preflight":
        rows = preflight.run(deployments.select(envs, args.env), list(envs.values()), aws)
        doc = preflight.build(rows)
        _emit(args, doc, preflight.render)
        return EXIT_OK if doc["ok"] else EXIT_FAILED
    env = _one_environment(envs, args.env)
    if args.command == "submit":
        doc = submit.submit(
            env,
            aws,
            nodes=env.training.plan.nodes if args.nodes is None else args.nodes,
            command=job_command,
            image=args.image,
            env_vars=args.env_var,
            job_name=args.name,
            stack_name=args.stack,
        )
        _emit(args, doc, submit.render_submit)
        return EXIT_OK
    doc = submit.status(env, aws, args.job_id)
    _emit(args, doc, submit.render_status)
    return EXIT_FAILED if doc["status"] == "FAILED" else EXIT_OK


def _error(message: str) -> None:
    print(f"cdk-neuron: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None, *, clients: ClientFactory | None = None) -> int:
    """Run the CLI and return its exit code. ``clients`` replaces boto3 (tests pass moto/Stubber clients)."""
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
    try:
        return _run(args, job_command, clients)
    except NeuronConfigError as error:
        _error(str(error))
        return EXIT_USAGE
    except CredentialsProblem as error:
        print(str(error), file=sys.stderr)
        return EXIT_NO_CREDENTIALS
    except submit.AwsLookupError as error:
        _error(str(error))
        return EXIT_FAILED
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
