"""Shared test helpers (imported by conftest.py and by test modules).

- Apps are built with the same feature-flag context as cdk.json, so tests see what
  `cdk synth` produces.
- Synthesis is slow in Python (jsii start-up plus the built-in CloudFormation validator),
  so every app is synthesized once per session and shared through fixtures.
- Snapshots go through `normalize_template`, which strips values that change between runs
  and machines (bootstrap version, asset hashes).
- `nag_violations` runs the cdk-nag v3 packs the project gates on and returns what is left
  after acknowledgments, so a test can assert there is nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_ACCOUNT = "111111111111"

_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def cdk_json_context() -> dict[str, Any]:
    """The feature flags recorded in cdk.json (the `environments` block excluded)."""
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return {k: v for k, v in context.items() if k != "environments"}


def make_app(**context: Any) -> Any:
    """A cdk.App with the project's feature flags plus any extra context."""
    import aws_cdk as cdk

    return cdk.App(context={**cdk_json_context(), **context})


def normalize_template(template: dict[str, Any]) -> dict[str, Any]:
    """Remove volatile values so a snapshot is stable across runs and machines."""
    template = json.loads(json.dumps(template))
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    if not template.get("Parameters"):
        template.pop("Parameters", None)
    template.get("Rules", {}).pop("CheckBootstrapVersion", None)
    if not template.get("Rules"):
        template.pop("Rules", None)
    template.get("Resources", {}).pop("CDKMetadata", None)
    for resource in template.get("Resources", {}).values():
        resource.get("Metadata", {}).pop("aws:cdk:path", None)
        if resource.get("Metadata") == {}:
            resource.pop("Metadata")
    text = _ASSET_HASH.sub("ASSET_HASH", json.dumps(template, sort_keys=True))
    return json.loads(text)  # type: ignore[no-any-return]


def template_of(stack: Any) -> dict[str, Any]:
    """The synthesized template of a stack, as a plain dict."""
    from aws_cdk.assertions import Template

    return Template.from_stack(stack).to_json()  # type: ignore[no-any-return]


NAG_PACKS = ("AwsSolutions", "NIST.800.53.R5")


def nag_violations(scope: Any, packs: Iterable[str] = NAG_PACKS) -> list[str]:
    """Run the cdk-nag v3 packs on `scope`; return unacknowledged findings as readable lines."""
    from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

    factories: dict[str, Callable[[], Any]] = {
        "AwsSolutions": AwsSolutionsChecks,
        "NIST.800.53.R5": NIST80053R5Checks,
    }
    found: list[str] = []
    for pack in packs:
        report = factories[pack]().validate_scope(scope)
        for violation in report.violations:
            paths = sorted(r.construct_path for r in violation.violating_resources)
            found.append(f"{violation.rule_name}: {', '.join(paths)}")
    return sorted(found)


def use_fake_aws_credentials(patch: Any, region: str) -> None:
    """Environment for moto: dummy keys and region, and no instance-metadata lookups."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": region,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        patch.setenv(key, value)


_SETTINGS_FILE = re.compile(
    r"^cat > \"\$\{CDK_NEURON_ROOT:-\}/etc/cdk-neuron/(?P<name>[^\"]+)\" <<'CDK_NEURON_EOF'\n(?P<body>.*?)\nCDK_NEURON_EOF$",
    re.S | re.M,
)


def flatten_user_data(node: Any, token: str = "${" + "x" * 28 + "}") -> str:
    """A launch template's ``UserData`` as the text an instance receives.

    Joins are joined, base64 is undone (MIME parts may be base64-encoded), and every other token
    (a Ref, an attribute, an import) becomes ``token``, about as long as what CloudFormation puts there.
    """
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return str(separator).join(flatten_user_data(p, token) for p in parts)
    if isinstance(node, dict) and "Fn::Base64" in node:
        return flatten_user_data(node["Fn::Base64"], token)
    return token


def settings_in(user_data: str) -> dict[str, str]:
    """The settings files a user-data script writes under /etc/cdk-neuron: name -> content."""
    return {m["name"]: m["body"] + "\n" for m in _SETTINGS_FILE.finditer(user_data)}


def parse_settings(content: str) -> dict[str, str]:
    """``NAME='value'`` lines (as :func:`cdk_neuron.node_programs.render_settings` writes them)."""
    import shlex

    values = {}
    for line in content.splitlines():
        name, _, value = line.partition("=")
        (values[name],) = shlex.split(value) or [""]
    return values
