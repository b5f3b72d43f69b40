"""What the deployment does not have: its checks are skipped, not passed."""

from __future__ import annotations

from cdk_neuron.cli.preflight.base import Check, CheckContext, Row


def check_scope(ctx: CheckContext) -> list[Row]:
    """One INFO row per part the deployment does not have: its checks are skipped, not passed."""
    rows = []
    if ctx.env.training is None:
        rows.append(ctx.row("scope", "training", "INFO", "no training cluster: its checks are skipped"))
    if ctx.env.serving is None:
        rows.append(ctx.row("scope", "serving", "INFO", "no inference fleet: its checks are skipped"))
    return rows


CHECK = Check(
    "scope",
    check_scope,
    passes_when="never a failure: one INFO row per part (training, serving) the environment lacks",
    calls=(),
)
