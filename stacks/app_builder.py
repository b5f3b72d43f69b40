"""Compose one cdk.Stage per environment named in cdk.json."""

from __future__ import annotations

import aws_cdk as cdk


def build_app(app: cdk.App) -> list[cdk.Stage]:
    """Add a stage per configured environment to `app` and return them.

    Placeholder until the per-environment stacks land: one empty stack per environment.
    """
    environments = app.node.try_get_context("environments") or {}
    only = app.node.try_get_context("env")
    stages: list[cdk.Stage] = []
    for name, settings in environments.items():
        if only and name != only:
            continue
        stage = cdk.Stage(app, name, env=cdk.Environment(region=settings["region"]))
        cdk.Stack(stage, "Placeholder")
        stages.append(stage)
    return stages
