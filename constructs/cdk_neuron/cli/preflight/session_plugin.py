"""For a HyperPod environment: the Session Manager plugin the job commands need is installed here.

``submit``, ``status``, ``logs``, ``cancel``, ``terminate``, ``list`` and a shrinking ``scale`` reach
the Slurm controller through non-interactive Session Manager sessions, which the plugin streams
(:mod:`cdk_neuron.cli.hyperpod`). Deploying needs no plugin, so a missing one is a WARN, not a FAIL.
"""

from __future__ import annotations

import shutil

from cdk_neuron.cli.hyperpod import PLUGIN, PLUGIN_INSTALL
from cdk_neuron.cli.preflight.base import Check, CheckContext, Row

CHECK_NAME = "session plugin"


def check_session_plugin(ctx: CheckContext) -> list[Row]:
    training = ctx.env.training
    if training is None or training.engine != "hyperpod":
        return []
    found = shutil.which(PLUGIN)
    if found is None:
        return [
            ctx.row(
                CHECK_NAME,
                PLUGIN,
                "WARN",
                f"not on PATH: the HyperPod job commands open Session Manager sessions through it; install it "
                f"({PLUGIN_INSTALL})",
            )
        ]
    return [ctx.row(CHECK_NAME, PLUGIN, "PASS", f"{found}")]


CHECK = Check(
    CHECK_NAME,
    check_session_plugin,
    passes_when="for a HyperPod environment: the Session Manager plugin the job commands use is on PATH "
    "(WARN when missing: deploying does not need it)",
    calls=(),
)
