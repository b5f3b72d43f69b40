"""The oldest aws-cdk-lib this app synthesizes with, and why (pyproject's ``aws-cdk-lib>=`` bound).

Usage:
  python -m tools.cdk_minimum                          print the minimum and the evidence
  python -m tools.cdk_minimum --check DIR VERSION      synthesize the app with the aws-cdk-lib that
                                                       ``pip install --no-deps --target DIR aws-cdk-lib==VERSION``
                                                       put in DIR (every environment, with the
                                                       built-in template validation and cdk-nag);
                                                       exit 0 when it synthesizes

``tests/test_packaging_minimum.py`` holds pyproject.toml and the README to :data:`MINIMUM`. The
check needs the package index, so it is run by hand when the bound moves, never by the tests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MINIMUM = "2.271.0"
EVIDENCE: tuple[tuple[str, str], ...] = (
    (
        "2.263.0",
        "cdk.CfnUpdatePolicy(auto_scaling_instance_refresh=cdk.CfnAutoScalingInstanceRefresh(...)), the "
        "serving group's update policy: 'autoscaling: add support for AutoScalingInstanceRefresh "
        "UpdatePolicy (#38277)', aws/aws-cdk CHANGELOG.v2.md, 2.263.0 (2026-07-31)",
    ),
    (
        "2.269.0",
        "cdk.Validations.of(scope).acknowledge() of cdk-nag ids that carry '::' inside brackets "
        "(AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:...]): 'fix(core): cdk-nag warnings cannot be "
        "suppressed', aws/aws-cdk#38787 (merged 2026-09-07); 2.263.0 raises InvalidValidationId, 2.269.0 "
        "does not (checked here, 2026-12-02)",
    ),
    (
        MINIMUM,
        "the built-in template validation (CloudFormation Validate) rejects Fn::GetAtt "
        "AWS::SageMaker::Endpoint.EndpointName, which SageMakerInferenceFleet outputs and scales on "
        "(rules F6101, E9004): 2.269.0 and 2.270.0 fail synthesis, 2.271.0 passes (checked here, "
        "2026-12-02)",
    ),
)
"""Why each version is needed, oldest first; the last is the minimum."""


def check(directory: Path, version: str) -> int:
    """Synthesize the app with the aws-cdk-lib installed in ``directory``; the exit status."""
    with tempfile.TemporaryDirectory(prefix="cdk-neuron-minimum-") as out:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(directory), str(REPO / "constructs"), str(REPO)]),
            "CDK_OUTDIR": out,
        }
        script = (
            "import importlib.metadata, runpy, sys\n"
            f"assert importlib.metadata.version('aws-cdk-lib') == {version!r}\n"
            "sys.argv = ['app.py']\n"
            "runpy.run_path('app.py', run_name='__main__')\n"
        )
        done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, check=False)
    print(f"aws-cdk-lib {version}: {'synthesizes' if done.returncode == 0 else 'FAILS'}")
    return done.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", nargs=2, metavar=("DIR", "VERSION"), help="synthesize with that install")
    args = parser.parse_args(argv)
    if args.check:
        return check(Path(args.check[0]), args.check[1])
    print(f"aws-cdk-lib >= {MINIMUM}")
    for version, why in EVIDENCE:
        print(f"  {version}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
