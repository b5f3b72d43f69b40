"""Run the integ suites in an AWS account: ``make integ`` (docs/integ.md).

    python tests/integ/run.py estimate [SUITE...]           the cost, nothing deployed
    python tests/integ/run.py run [SUITE...] --confirm yes  deploy, assert, report, destroy
    python tests/integ/run.py destroy [SUITE...]            delete leftover integ stacks

``run`` refuses without ``--confirm yes`` and prints the estimate either way. For each suite it
synthesizes the suite into build/integ/<suite>, verifies the committed snapshot (default Region
only), deploys the test stack, deploys the assertion stack (its custom resources are the assertions;
no rollback, so every assertion reports), reads the assertion results, writes the timing report, and
then destroys both stacks, also when anything before failed or the run is interrupted; a stack the
CLI could not destroy is deleted again through CloudFormation and waited for. Deployments use the
CDK CLI pinned in package.json (node_modules/.bin/cdk) on the synthesized assembly, so what deploys
is what was verified. No suite (default: all but training_efa) shares anything with another.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from integ_support import estimate, snapshots
from integ_support.collect import write_report
from integ_support.registry import SUITES, SuiteInfo, selected
from integ_support.settings import ACCOUNT_VARIABLE, STACK_PREFIX, Settings, stack_name

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "integ"
CDK = ["cdk", "--no-notices", "--ci"]


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _cdk(*args: str) -> int:
    print("+", " ".join([*CDK, *args]), flush=True)
    return subprocess.call([*CDK, *args], cwd=REPO)


def _synthesize(suite: str, settings: Settings) -> Path:
    assembly = BUILD / suite
    env = {**os.environ, "CDK_OUTDIR": str(assembly)}
    subprocess.run([sys.executable, str(snapshots.suite_file(suite))], check=True, env=env, cwd=REPO)
    if settings.is_default:
        diffs = snapshots.differences(
            snapshots.snapshot_dir(snapshots.suite_file(suite)), assembly, account=settings.account
        )
        if diffs:
            raise SystemExit(
                f"{suite}: the committed snapshot differs; run `make test` first:\n" + "\n".join(diffs)
            )
    else:
        print(
            f"{suite}: Region {settings.region}: the snapshots hold for the default Region and are not compared"
        )
    return assembly


def assertion_results(outputs: dict[str, dict[str, str]], stack: str) -> list[tuple[str, dict[str, Any]]]:
    """``(id, result)`` of every ``AssertionResults*`` output of ``stack`` (as integ-runner reads them)."""
    found = []
    for key, value in sorted(outputs.get(stack, {}).items()):
        if key.startswith("AssertionResults"):
            found.append((key, json.loads(value.replace("\n", "\\n"))))
    return found


def _read(path: Path) -> dict[str, dict[str, str]]:
    return json.loads(path.read_text()) if path.exists() else {}


def run_suite(info: SuiteInfo, settings: Settings, reports: Path, session: Any) -> bool:
    suite = info.name
    test_stack, assert_stack = stack_name(suite), stack_name(suite, "Assert")
    assembly = _synthesize(suite, settings)
    app = ["--app", str(assembly)]
    outputs: dict[str, dict[str, str]] = {}
    passed = False
    try:
        test_outputs, assert_outputs = assembly / "test-outputs.json", assembly / "assert-outputs.json"
        deploy = ["deploy", *app, "--require-approval", "never", "--outputs-file"]
        if _cdk(*deploy, str(test_outputs), test_stack) != 0:
            print(f"{suite}: FAILED to deploy {test_stack}")
        else:
            code = _cdk(*deploy, str(assert_outputs), "--no-rollback", assert_stack)
            outputs = {**_read(test_outputs), **_read(assert_outputs)}
            results = assertion_results(outputs, assert_stack)
            failed = [(key, r) for key, r in results if r.get("status") != "success"]
            for key, result in failed:
                print(f"{suite}: assertion {key} failed: {result.get('message', '')[:2000]}")
            passed = code == 0 and bool(results) and not failed
            print(f"{suite}: {'PASSED' if passed else 'FAILED'} ({len(results)} assertion result(s))")
        report = write_report(
            suite, settings.region, outputs, "passed" if passed else "failed", reports, session
        )
        print(f"{suite}: timing report {report}")
    finally:
        destroy([suite], settings, session)
    return passed


def destroy(suites: list[str], settings: Settings, session: Any) -> None:
    """Delete the suites' stacks, assertion stack first; wait until CloudFormation has deleted them."""
    cfn = session.client("cloudformation", region_name=settings.region)
    for suite in suites:
        for name in (stack_name(suite, "Assert"), stack_name(suite)):
            try:
                cfn.describe_stacks(StackName=name)
            except cfn.exceptions.ClientError:
                continue  # never created, or already gone
            print(f"deleting {name}", flush=True)
            cfn.delete_stack(StackName=name)
            cfn.get_waiter("stack_delete_complete").wait(
                StackName=name, WaiterConfig={"Delay": 30, "MaxAttempts": 180}
            )


def _session() -> Any:
    import boto3

    return boto3.session.Session()


def deploying_account(session: Any) -> str:
    """The account the credentials deploy to (``sts:GetCallerIdentity``, which needs no permission).

    It names the suites' artifact buckets (S3 bucket names are global); the runner exports it as
    ``CDK_NEURON_INTEG_ACCOUNT`` before synthesizing.
    """
    return str(session.client("sts").get_caller_identity()["Account"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="run.py", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("command", choices=("estimate", "run", "destroy"))
    parser.add_argument(
        "suites", nargs="*", help=f"default: {' '.join(n for n, s in SUITES.items() if not s.opt_in)}"
    )
    parser.add_argument("--confirm", default="", help="'yes' to deploy (and pay for) the suites")
    parser.add_argument("--reports", default=str(BUILD / "reports"), help="where timing reports go")
    args = parser.parse_args(argv)
    if args.command == "run" and args.confirm == "yes" and not os.environ.get(ACCOUNT_VARIABLE):
        os.environ[ACCOUNT_VARIABLE] = deploying_account(_session())
    settings = Settings.from_environment()
    suites = (
        selected(args.suites) if args.command != "destroy" else [SUITES[n] for n in (args.suites or SUITES)]
    )
    text, _expected, most = estimate.render(suites, settings.region)
    if args.command == "estimate":
        print(text)
        return 0
    if args.command == "destroy":
        destroy([s.name for s in suites], settings, _session())
        return 0
    print(text)
    if args.confirm != "yes":
        print(
            f"\nRefusing to deploy: this run could cost up to ${most:.2f} in your AWS account.\n"
            "Read docs/integ.md, then: make integ CONFIRM=yes"
            + (f" SUITES='{' '.join(args.suites)}'" if args.suites else ""),
            file=sys.stderr,
        )
        return 3
    print(
        f"\nDeploying to {settings.region} ({', '.join(settings.az_ids)}); stacks {STACK_PREFIX}-*",
        flush=True,
    )
    signal.signal(signal.SIGTERM, _interrupted)
    session = _session()
    results = {s.name: run_suite(s, settings, Path(args.reports), session) for s in suites}
    for name, ok in results.items():
        print(f"{name}: {'passed' if ok else 'FAILED'}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
