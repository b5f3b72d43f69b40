"""Typed results: every command returns a dataclass, and ``to_json()`` is its ``--json`` document.

A result's fields, in order, are the document's keys (after ``command`` and ``schema_version``, see
:func:`cdk_neuron.cli.output.document`). Nested dataclasses become objects the same way, lists and
tuples become arrays. A field's metadata can rename its key (``field(metadata=key("from"))``), leave it
out when it is None (``OMIT_IF_NONE``) or keep it out of the document (``NOT_IN_JSON``). A record whose
JSON is not its fields (rounded or derived values) defines its own ``to_json()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from cdk_neuron.cli.output import document

NOT_IN_JSON: Mapping[str, Any] = {"json": False}
"""Field metadata: the field is for the renderer only."""
OMIT_IF_NONE: Mapping[str, Any] = {"omit_if_none": True}
"""Field metadata: the key appears only when the value is not None."""


def key(name: str) -> Mapping[str, Any]:
    """Field metadata: the key is ``name`` (for keys that are not Python names, such as ``from``)."""
    return {"key": name}


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: records through their ``to_json()`` or their fields."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json) and not isinstance(value, type):
        return to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return fields_json(value)
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def fields_json(record: Any) -> dict[str, Any]:
    """A dataclass's fields as a JSON object, in field order, following each field's metadata."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(record):
        meta = field.metadata
        if not meta.get("json", True):
            continue
        value = getattr(record, field.name)
        if value is None and meta.get("omit_if_none"):
            continue
        out[meta.get("key", field.name)] = jsonable(value)
    return out


class Result:
    """The base of every command's result (a dataclass): ``command`` names it in its document."""

    command: ClassVar[str]

    @property
    def command_name(self) -> str:
        """The document's ``command``: the class's, unless a result serves several commands."""
        return self.command

    def to_json(self) -> dict[str, Any]:
        return document(self.command_name, **fields_json(self))


__all__ = ["NOT_IN_JSON", "OMIT_IF_NONE", "Result", "fields_json", "jsonable", "key"]
