"""The account and Region are CDK-bootstrapped at the version the templates require."""

from __future__ import annotations

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row

# aws-cdk-lib 2.275.0, core/lib/stack-synthesizers/default-synthesizer.ts: MIN_BOOTSTRAP_STACK_VERSION
# = 6 is what every synthesized template's CheckBootstrapVersion rule asserts ("CDK bootstrap stack
# version 6 required") and what the asset manifests require; MIN_LOOKUP_ROLE_BOOTSTRAP_STACK_VERSION
# = 8 is what the lookup role needs (cdk diff, context lookups). tests/test_cli_preflight.py checks
# the first against the synthesized templates.
REQUIRED_BOOTSTRAP_VERSION = 6


LOOKUP_ROLE_BOOTSTRAP_VERSION = 8


TOOLKIT_STACK = "CDKToolkit"


_STACK_OK = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE"}


def _bootstrap_command(ctx: CheckContext, account: str) -> str:
    qualifier = "" if ctx.qualifier == "hnb659fds" else f" --qualifier {ctx.qualifier}"
    return f"cdk bootstrap aws://{account}/{ctx.env.region}{qualifier}"


def check_bootstrap(ctx: CheckContext) -> list[Row]:
    account = ctx.client("sts").get_caller_identity()["Account"]
    name = f"/cdk-bootstrap/{ctx.qualifier}/version"
    fix = _bootstrap_command(ctx, account)
    where = f"{account}/{ctx.env.region}"
    try:
        value = ctx.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except Exception as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return [
            ctx.row(
                "bootstrap",
                name,
                "FAIL",
                f"{where} is not bootstrapped (qualifier {ctx.qualifier}): cdk deploy stops at the "
                f"templates' CheckBootstrapVersion rule; bootstrap it (command below)",
                fix,
            )
        ]
    version = int(value) if str(value).isdigit() else 0
    if version < REQUIRED_BOOTSTRAP_VERSION:
        row = ctx.row(
            "bootstrap",
            name,
            "FAIL",
            f"version {value} in {where}; the templates require {REQUIRED_BOOTSTRAP_VERSION} or later "
            "(aws-cdk-lib's CheckBootstrapVersion rule): bootstrap again with this CDK (command below)",
            fix,
        )
    elif version < LOOKUP_ROLE_BOOTSTRAP_VERSION:
        row = ctx.row(
            "bootstrap",
            name,
            "WARN",
            f"version {version} in {where}: deploys work (>= {REQUIRED_BOOTSTRAP_VERSION}), but cdk diff and "
            f"lookups need the lookup role of version {LOOKUP_ROLE_BOOTSTRAP_VERSION}; bootstrap again",
            fix,
        )
    else:
        row = ctx.row(
            "bootstrap",
            name,
            "PASS",
            f"version {version} in {where} (>= {REQUIRED_BOOTSTRAP_VERSION} required)",
        )
    return [row, _toolkit_row(ctx, fix)]


def _toolkit_row(ctx: CheckContext, fix: str) -> Row:
    try:
        stack = ctx.client("cloudformation").describe_stacks(StackName=TOOLKIT_STACK)["Stacks"][0]
    except Exception as error:
        if "does not exist" not in str(error):
            raise
        return ctx.row(
            "bootstrap",
            TOOLKIT_STACK,
            "WARN",
            f"no {TOOLKIT_STACK} stack although the version parameter exists: bootstrapped with "
            "--toolkit-stack-name? Then the assets bucket and roles live in that stack",
        )
    status = str(stack.get("StackStatus", "?"))
    if status in _STACK_OK:
        return ctx.row("bootstrap", TOOLKIT_STACK, "PASS", status)
    if status.endswith("_IN_PROGRESS"):
        return ctx.row("bootstrap", TOOLKIT_STACK, "WARN", f"{status}: wait for it to finish, then deploy")
    return ctx.row(
        "bootstrap",
        TOOLKIT_STACK,
        "FAIL",
        f"{status}: the bootstrap stack is broken (assets bucket and deploy roles); bootstrap again (command below)",
        fix,
    )


CHECK = Check(
    "bootstrap",
    check_bootstrap,
    passes_when="`/cdk-bootstrap/<qualifier>/version` is 6 or later (what aws-cdk-lib 2.275's templates assert in their `CheckBootstrapVersion` rule; 6 and 7 WARN because `cdk diff` and lookups need the version 8 lookup role) and the `CDKToolkit` stack is in a complete state. The qualifier is the one the cloud assembly's stacks check for (`bootstrapStackVersionSsmParameter`), or `@aws-cdk/core:bootstrapQualifier` from `cdk.json`, else `hnb659fds`",
    calls=("sts:GetCallerIdentity", "ssm:GetParameter", "cloudformation:DescribeStacks"),
)
