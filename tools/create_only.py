"""The create-only property table of every CloudFormation resource type, from cfn-lint's bundled schemas.

``cdk_neuron.lifecycle`` decides that a change replaces a resource when it changes one of the type's
``createOnlyProperties`` (CloudFormation resource schema, "Resource type schema" in the CloudFormation
CLI user guide). cfn-lint ships those schemas (``cfnlint/data/schemas``): this tool copies the one
field the lifecycle checks need into ``constructs/cdk_neuron/lifecycle/create_only.json``, so the
library and the ``cdk-neuron impact`` command read it without cfn-lint and without a network call.
A test holds the file to the installed cfn-lint's data.

Usage: python -m tools.create_only [--write]
"""

from __future__ import annotations

import argparse
import json
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "constructs" / "cdk_neuron" / "lifecycle" / "create_only.json"


# Names the schemas do not mark (not the primary identifier) but the service still holds unique: a
# replacement that keeps one fails the same way. Each with its source.
NAME_EXTRAS: dict[str, tuple[str, str]] = {
    # The schema's primaryIdentifier is ClusterArn, but CreateCluster refuses a ClusterName that exists
    # (ResourceInUse: "CreateCluster", Amazon SageMaker API Reference, Errors; botocore 1.44 model).
    "AWS::SageMaker::Cluster": (
        "ClusterName",
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html",
    ),
}


def build() -> dict[str, Any]:
    """``{"source": ..., "types": {type: [json pointer, ...]}}`` from the installed cfn-lint."""
    import cfnlint

    schemas = Path(cfnlint.__file__).resolve().parent / "data" / "schemas"
    hashes: dict[str, str] = {}
    for provider in sorted((schemas / "providers").glob("*.json")):
        for kind, digest in json.loads(provider.read_text()).items():
            hashes.setdefault(kind, digest)
    types: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for kind, digest in sorted(hashes.items()):
        schema = json.loads((schemas / "resources" / f"{digest}.json").read_text())
        paths = sorted(set(schema.get("createOnlyProperties") or []))
        if paths:
            types[kind] = paths
        # The physical name: a primary identifier the template may set (not a read-only, generated id).
        identifier = schema.get("primaryIdentifier") or []
        if len(identifier) == 1 and identifier[0] not in (schema.get("readOnlyProperties") or []):
            names[kind] = identifier[0].removeprefix("/properties/")
    for kind, (name, _source) in NAME_EXTRAS.items():
        names.setdefault(kind, name)
    names = dict(sorted(names.items()))
    version = json.loads((schemas / "version.json").read_text())
    return {
        "source": {
            "what": "createOnlyProperties of the CloudFormation resource schemas bundled with cfn-lint",
            "cfn_lint": metadata.version("cfn-lint"),
            "schema_date": version.get("schema_date"),
        },
        "types": types,
        "names": names,
    }


def _section(name: str, entries: dict[str, Any], last: bool) -> list[str]:
    lines = [f" {json.dumps(name)}: {{"]
    items = list(entries.items())
    for index, (kind, value) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        lines.append(f"  {json.dumps(kind)}: {json.dumps(value, separators=(',', ':'))}{comma}")
    lines.append(" }" if last else " },")
    return lines


def render(table: dict[str, Any]) -> str:
    # One type per line: small diffs when a schema changes, and still compact.
    lines = ["{", f' "source": {json.dumps(table["source"], sort_keys=True)},']
    lines += _section("types", table["types"], last=False)
    lines += _section("names", table["names"], last=True)
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"update {TABLE.relative_to(REPO)}")
    args = parser.parse_args(argv)
    text = render(build())
    if args.write:
        TABLE.write_text(text)
        print(f"wrote {TABLE.relative_to(REPO)}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
