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
OTHER_ACCOUNT_WARNING_ID = "@cdk-neuron/app:otherAccount"


def account_mismatches(
    selected: Sequence[EnvironmentConfig], environ: Mapping[str, str], *, cross_account: bool = False
) -> dict[str, NeuronConfigError]:
    """The environments that name an account other than the credentials' one, with the error each
    deploy of them gets.

    The CDK CLI sets ``CDK_DEFAULT_ACCOUNT`` from the credentials; an environment that names another
    account would otherwise be deployed, or half-deployed, wherever those credentials point. Deploying
    through CDK bootstrap trust from a tooling account is the exception: ``-c cross_account=true``.
    """
    credentials = environ.get("CDK_DEFAULT_ACCOUNT")
    if not credentials or cross_account:
        return {}
    return {
        env.name: NeuronConfigError(
            f"environments.{env.name}.account",
            env.account,
            f"the credentials are for account {credentials}: deploy {env.name} with credentials for "
            f"{env.account}, or from another account through CDK bootstrap trust with "
            f"-c {CROSS_ACCOUNT_CONTEXT}=true",
        )
        for env in selected
        if env.account and env.account != credentials
    }


def build_app(app: cdk.App) -> list[EnvironmentStage]:
    """Add a stage per selected environment to ``app`` and return them.

    The environments come from the app's ``environments`` context (cdk.json); they are all parsed
    and validated, even when ``-c env=NAME`` selects one, so a broken environment is never hidden.

    An environment whose account is not the credentials' one is refused when it is the one selected
    (``-c env=NAME``, as ``make deploy`` passes). Otherwise the app cannot know which stacks the CDK
    CLI will deploy (``cdk deploy 'dev/**'`` synthesizes every environment), so each stack of such an
    environment gets a warning and the app synthesizes: the CLI deploys a stack into its own account
    only with credentials for that account or through CDK bootstrap trust, and refuses otherwise. An
    error annotation would stop the deploy of dev as well: with the recommended
    ``@aws-cdk/core:annotationsInValidationReport`` flag any error fails the whole synthesis.

    Raises:
        NeuronConfigError: bad environments (every error, one line each), an unknown ``env`` name, or
            the selected environment's account not being the credentials' one.
    """
    environments = load_environments(app.node.try_get_context("environments") or {})
    chosen = app.node.try_get_context("env")
    selected = select_environments(environments, chosen)
    cross_account = str(app.node.try_get_context(CROSS_ACCOUNT_CONTEXT)).lower() == "true"
    mismatched = account_mismatches(selected, os.environ, cross_account=cross_account)
    if chosen and mismatched:
        raise NeuronConfigErrors(mismatched.values())
    stages = [EnvironmentStage(app, config) for config in selected]
    for stage in stages:
        error = mismatched.get(stage.stage_name)
        if error is None:
            continue
        for stack in stage.node.children:
            if isinstance(stack, cdk.Stack):
                cdk.Annotations.of(stack).add_warning_v2(OTHER_ACCOUNT_WARNING_ID, str(error))
    return stages


def report(error: NeuronConfigError) -> int:
    """Print a configuration error as one line per problem, as the CLI does, and return exit code 2.

    ``cdk synth`` shows the app's stderr: the user reads the lines, not a Python traceback.
    """
    for line in str(error).splitlines():
        print(f"cdk-neuron: {line}", file=sys.stderr)
    return 2
