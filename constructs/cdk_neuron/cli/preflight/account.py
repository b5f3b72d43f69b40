"""The credentials are for the account the app deploys to."""

from __future__ import annotations

from cdk_neuron.cli.preflight.base import Check, CheckContext, Row


def check_account(ctx: CheckContext) -> list[Row]:
    identity = ctx.client("sts").get_caller_identity()
    actual = identity["Account"]
    configured = ctx.env.account
    who = f"calling as {identity.get('Arn', '?')}"
    if configured and configured != actual:
        return [
            ctx.row(
                "account",
                configured,
                "FAIL",
                f"{who} in account {actual}, but cdk.json deploys to {configured}",
            )
        ]
    if not configured:
        return [ctx.row("account", actual, "PASS", f"{who}; cdk.json names no account, so deploys go here")]
    return [ctx.row("account", actual, "PASS", who)]


CHECK = Check(
    "account",
    check_account,
    passes_when="the credentials are for the account the app names (its stacks' environment, or `cdk.json`); an app that names none deploys where the credentials are",
    calls=("sts:GetCallerIdentity",),
)
