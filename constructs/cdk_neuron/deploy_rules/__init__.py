"""cfn-lint rules for constraints AWS services enforce at create/update time that resource schemas don't.

Each module holds one service family's rules (``batch``, ``ec2``, ``autoscaling``, ``elbv2``, ``efs``,
``sagemaker``, ``application_autoscaling``, ``backup``, ``kms``). They need cfn-lint, which is not a
dependency of cdk-neuron: install ``cdk-neuron[lint]``.

Use them from the command line::

    python -m cdk_neuron.deploy_rules cdk.out/**/*.template.json          # cfn-lint plus these rules
    python -m cdk_neuron.deploy_rules --only cdk.out/**/*.template.json   # these rules only
    cfn-lint --append-rules "$(python -m cdk_neuron.deploy_rules --rules-dir)" cdk.out/**/*.template.json

or in-process with :func:`lint_template`. Rule IDs use cfn-lint's range for user rules, E9xxx/W9xxx,
from E9100 up (one hundred per family) so they never collide with ``--custom-rules`` files, which
cfn-lint numbers from 9001 by line.

Importing this package does not import cfn-lint; the functions below do, on first use. The file
names here start with ``_`` where cfn-lint must not load them as rule files.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdk_neuron.deploy_rules._base import DeployRule

RULES_DIR = Path(__file__).resolve().parent
MODULES = (
    "batch",
    "ec2",
    "autoscaling",
    "elbv2",
    "efs",
    "sagemaker",
    "hyperpod",
    "application_autoscaling",
    "backup",
    "kms",
)


def rule_classes() -> list[type[DeployRule]]:
    """Every deploy rule class, in module order then ID order."""
    from cdk_neuron.deploy_rules._base import DeployRule

    found: list[type[DeployRule]] = []
    for module_name in MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        classes = [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, DeployRule) and cls is not DeployRule and cls.__module__ == module.__name__
        ]
        found.extend(sorted(classes, key=lambda cls: cls.id[1:]))
    return found


def lint_template(template: dict[str, Any] | str, region: str = "us-east-1") -> list[Any]:
    """Run only the deploy rules on one template (a dict or its JSON text); returns cfn-lint matches."""
    from cfnlint.api import lint
    from cfnlint.rules import RulesCollection

    rules = RulesCollection()
    for cls in rule_classes():
        rules.register(cls())
    text = template if isinstance(template, str) else json.dumps(template)
    return list(lint(text, rules=rules, regions=[region]))


__all__ = ["MODULES", "RULES_DIR", "lint_template", "rule_classes"]
