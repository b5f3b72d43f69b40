"""What the CloudFormation resource schemas say about replacement and physical names.

Read from ``create_only.json``, generated from the schemas cfn-lint bundles (``python -m
tools.create_only --write``; a test holds it to the installed cfn-lint). Plain Python: the
lifecycle checks and ``cdk-neuron impact`` need neither cfn-lint nor a network call.

- ``createOnlyProperties``: "A list of JSON pointers to properties that are only able to be
  specified by the customer when creating a resource. Conversely, any property not in this list can
  be applied to an Update request" (CloudFormation CLI user guide, "Resource type schema",
  https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html, read
  2026-12-01). Changing one replaces the resource.
- The physical name: the resource's primary identifier when the template may set it (a
  ``LogGroupName``, ``BucketName``), not a generated, read-only id (``FileSystemId``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "create_only.json"

Pointer = tuple[str, ...]
"""A create-only property as path segments below ``Properties``; ``*`` stands for any list item."""


@functools.cache
def _table() -> dict[str, Any]:
    return json.loads(TABLE.read_text())  # type: ignore[no-any-return]


def source() -> dict[str, str]:
    """Which cfn-lint, and which schema snapshot, the table comes from."""
    return dict(_table()["source"])


@functools.cache
def create_only(resource_type: str) -> tuple[Pointer, ...]:
    """The create-only properties of ``resource_type`` (empty for an unknown or custom type)."""
    return tuple(
        tuple(pointer.removeprefix("/properties/").split("/"))
        for pointer in _table()["types"].get(resource_type, ())
    )


def name_property(resource_type: str) -> str | None:
    """The property that names the resource physically when a template sets it, if the type has one."""
    found = _table()["names"].get(resource_type)
    return str(found) if found is not None else None


__all__ = ["Pointer", "create_only", "name_property", "source"]
