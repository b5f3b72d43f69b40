"""Compose one EnvironmentStage per environment named in cdk.json (or only ``-c env=NAME``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

import aws_cdk as cdk

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from stacks.config import EnvironmentConfig, load_environments, select_environments
from stacks.stage import EnvironmentStage

CROSS_ACCOUNT_CONTEXT = "cross_account"


def check_accounts(
    selected: Sequence[EnvironmentConfig], environ: Mapping[str, str], *, cross_account: bool = False
) -> None:
    """Refuse to synthesize an environment for an account other than the credentials' one.

    The CDK CLI sets ``CDK_DEFAULT_ACCOUNT`` from the credentials; an environment that names another
    account would otherwise be deployed, or half-deployed, wherever those credentials point. Deploying
    through CDK bootstrap trust from a tooling account is the exception: ``-c cross_account=true``.
    """
    credentials = environ.get("CDK_DEFAULT_ACCOUNT")
    if not credentials or cross_account:
        return
    mismatched = [env for env in selected if env.account and env.account != credentials]
    if mismatched:
        raise NeuronConfigErrors(
            NeuronConfigError(
                f"environments.{env.name}.account",
                env.account,
                f"the credentials are for account {credentials}: select the environment with -c env=NAME and "
                f"use credentials for {env.account}, or pass -c {CROSS_ACCOUNT_CONTEXT}=true to deploy from "
                "another account through CDK bootstrap trust",
            )
            for env in mismatched
        )


def build_app(app: cdk.App) -> list[EnvironmentStage]:
    """Add a stage per selected environment to ``app`` and return them.

    The environments come from the app's ``environments`` context (cdk.json); they are all parsed
    and validated, even when ``-c env=NAME`` selects one, so a broken environment is never hidden.

    Raises:
        NeuronConfigError: bad environments (every error, one line each), an unknown ``env`` name, or
            an environment whose account is not the credentials' one.
    """
    environments = load_environments(app.node.try_get_context("environments") or {})
    selected = select_environments(environments, app.node.try_get_context("env"))
    cross_account = str(app.node.try_get_context(CROSS_ACCOUNT_CONTEXT)).lower() == "true"
    check_accounts(selected, os.environ, cross_account=cross_account)
    return [EnvironmentStage(app, config) for config in selected]


def report(error: NeuronConfigError) -> int:
    """Print a configuration error as one line per problem, as the CLI does, and return exit code 2.

    ``cdk synth`` shows the app's stderr: the user reads the lines, not a Python traceback.
    """
    for line in str(error).splitlines():
        print(f"cdk-neuron: {line}", file=sys.stderr)
    return 2
