"""How the CLI gets an app's :class:`~cdk_neuron.deployment.Deployment` objects from its cdk.json.

The library knows no app's configuration. An app names, in its cdk.json context, a function that
turns that context into Deployments::

    "context": {
      "cdk-neuron:deployments": "stacks.config:deployments",
      ...
    }

``module:function`` is imported with the cdk.json's folder first on ``sys.path`` and called, in that
folder as the working directory, with the context mapping (as ``cdk synth`` runs the app from there,
so relative paths in the context, e.g. ``serving.model.artifact_manifest``, mean the same to both); it returns ``{name: Deployment}`` in
the order the app defines them. The function must be cheap and must not import ``aws_cdk``:
``plan`` and ``cost`` run offline in well under a second.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError, one_of

LOADER_KEY = "cdk-neuron:deployments"


def _context(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NeuronConfigError("cdk.json", str(path), f"cannot read it as JSON ({error})") from None
    context = document.get("context") if isinstance(document, dict) else None
    if not isinstance(context, dict):
        raise NeuronConfigError("cdk.json", str(path), "has no context object")
    return context


def _loader(spec: object, path: Path) -> Callable[[Mapping[str, Any]], Mapping[str, Deployment]]:
    fix = (
        'set it to "module:function", a function of your app that takes the cdk.json context and returns '
        "{name: cdk_neuron.deployment.Deployment}"
    )
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise NeuronConfigError(f"context.{LOADER_KEY}", spec, fix)
    module_name, function_name = spec.split(":")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise NeuronConfigError(
            f"context.{LOADER_KEY}", spec, f"cannot import {module_name} from {folder} ({error})"
        ) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise NeuronConfigError(
            f"context.{LOADER_KEY}", spec, f"{module_name} has no function {function_name}"
        )
    return function  # type: ignore[no-any-return]


def load(path: str | Path = "cdk.json") -> dict[str, Deployment]:
    """The app's Deployments, in its order, through the loader its cdk.json names."""
    path = Path(path)
    context = _context(path)
    if LOADER_KEY not in context:
        raise NeuronConfigError(
            f"context.{LOADER_KEY}",
            None,
            f'{path} names no loader: add "{LOADER_KEY}": "module:function" to its context '
            "(README, 'The cdk-neuron CLI in your app')",
        )
    loader = _loader(context[LOADER_KEY], path)
    here = os.getcwd()
    os.chdir(path.resolve().parent)
    try:
        deployments = dict(loader(context))
    finally:
        os.chdir(here)
    if not deployments:
        raise NeuronConfigError(f"context.{LOADER_KEY}", context[LOADER_KEY], "returned no deployment")
    for name, deployment in deployments.items():
        if not isinstance(deployment, Deployment):
            raise NeuronConfigError(
                f"context.{LOADER_KEY}",
                context[LOADER_KEY],
                f"returned {type(deployment).__name__} for {name}",
            )
    return deployments


BOOTSTRAP_QUALIFIER_KEY = "@aws-cdk/core:bootstrapQualifier"
DEFAULT_BOOTSTRAP_QUALIFIER = "hnb659fds"
"""aws-cdk-lib's ``DefaultStackSynthesizer.DEFAULT_QUALIFIER``, used unless the context names another."""


def bootstrap_qualifier(path: str | Path = "cdk.json") -> str:
    """The CDK bootstrap qualifier the app synthesizes with (its cdk.json context, else the default)."""
    value = _context(Path(path)).get(BOOTSTRAP_QUALIFIER_KEY)
    return value if isinstance(value, str) and value else DEFAULT_BOOTSTRAP_QUALIFIER


def select(deployments: Mapping[str, Deployment], only: str | None) -> list[Deployment]:
    """All deployments, or just ``only`` (``--env NAME``)."""
    if not only:
        return list(deployments.values())
    if only not in deployments:
        raise NeuronConfigError("--env", only, f"unknown environment; defined: {one_of(deployments)}")
    return [deployments[only]]


__all__ = ["DEFAULT_BOOTSTRAP_QUALIFIER", "LOADER_KEY", "bootstrap_qualifier", "load", "select"]
