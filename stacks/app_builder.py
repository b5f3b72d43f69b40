"""Compose one EnvironmentStage per environment named in cdk.json (or only ``-c env=NAME``)."""

from __future__ import annotations

import aws_cdk as cdk

from stacks.config import load_environments, select_environments
from stacks.stage import EnvironmentStage


def build_app(app: cdk.App) -> list[EnvironmentStage]:
    """Add a stage per selected environment to ``app`` and return them.

    The environments come from the app's ``environments`` context (cdk.json); they are all parsed
    and validated, even when ``-c env=NAME`` selects one, so a broken environment is never hidden.

    Raises:
        NeuronConfigError: a bad environment, or an unknown ``env`` name.
    """
    environments = load_environments(app.node.try_get_context("environments") or {})
    only = app.node.try_get_context("env")
    return [EnvironmentStage(app, config) for config in select_environments(environments, only)]
