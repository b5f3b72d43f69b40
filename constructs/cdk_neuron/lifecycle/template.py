"""Reading CloudFormation templates: resources, the references between them, and what floats.

Plain Python over template dictionaries (as ``cdk synth`` writes them or CloudFormation's
``GetTemplate`` returns them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

Path = tuple[str | int, ...]
Template = Mapping[str, Any]

_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")
# A public SSM parameter that follows whatever is published next, e.g.
# /aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id or
# /aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64.
_FLOATING = re.compile(r"^/aws/service/.*(recommended|latest)")


def resources(template: Template) -> dict[str, Mapping[str, Any]]:
    raw = template.get("Resources")
    return {k: v for k, v in (raw or {}).items() if isinstance(v, dict)} if isinstance(raw, dict) else {}


def properties(resource: Mapping[str, Any]) -> Mapping[str, Any]:
    value = resource.get("Properties")
    return value if isinstance(value, dict) else {}


def outputs(template: Template) -> dict[str, Any]:
    raw = template.get("Outputs")
    return {k: v.get("Value") for k, v in raw.items() if isinstance(v, dict)} if isinstance(raw, dict) else {}


def references(value: Any) -> Iterator[tuple[str, str | None]]:
    """Every (logical id, attribute or None) a value refers to: ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``."""
    if isinstance(value, list):
        for item in value:
            yield from references(item)
        return
    if not isinstance(value, dict):
        return
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "Ref" and isinstance(inner, str):
            if not inner.startswith("AWS::"):
                yield inner, None
            return
        if key == "Fn::GetAtt":
            parts = inner.split(".", 1) if isinstance(inner, str) else inner
            if isinstance(parts, list) and len(parts) == 2 and isinstance(parts[0], str):
                yield parts[0], parts[1] if isinstance(parts[1], str) else None
            return
        if key == "Fn::Sub":
            body = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(body, str):
                for name in _SUB_VARIABLE.findall(body):
                    logical, _, attribute = name.partition(".")
                    if not logical.startswith("AWS::"):
                        yield logical, attribute or None
            if isinstance(inner, list) and len(inner) == 2:
                yield from references(inner[1])
            return
    for item in value.values():
        yield from references(item)


def stack_outputs(value: Any) -> Iterator[tuple[str, str]]:
    """Every (stack name, output name) a value reads with ``Fn::GetStackOutput`` (literal names only)."""
    if isinstance(value, list):
        for item in value:
            yield from stack_outputs(item)
        return
    if not isinstance(value, dict):
        return
    found = value.get("Fn::GetStackOutput") if len(value) == 1 else None
    if isinstance(found, dict):
        stack, output = found.get("StackName"), found.get("OutputName")
        if isinstance(stack, str) and isinstance(output, str):
            yield stack, output
        return
    for item in value.values():
        yield from stack_outputs(item)


def transform(value: Any, replace: Callable[[Any], Any | None]) -> Any:
    """``value`` with every node for which ``replace`` returns something other than None swapped for it."""
    swapped = replace(value)
    if swapped is not None:
        return swapped
    if isinstance(value, list):
        return [transform(item, replace) for item in value]
    if isinstance(value, dict):
        return {key: transform(item, replace) for key, item in value.items()}
    return value


def diff(before: Any, after: Any, path: Path = ()) -> Iterator[Path]:
    """The paths at which ``after`` differs from ``before`` (lists of unequal length differ as a whole)."""
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted({*before, *after}, key=str):
            yield from diff(before.get(key), after.get(key), (*path, key))
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            yield from diff(old, new, (*path, index))
        return
    yield path


def values_at(value: Any, pointer: tuple[str, ...]) -> list[Any]:
    """The values at a schema pointer (``*`` = every list item), in order; absent parts are None."""
    if not pointer:
        return [value]
    head, rest = pointer[0], pointer[1:]
    if head == "*":
        if not isinstance(value, list):
            return [None]
        return [found for item in value for found in values_at(item, rest)]
    if isinstance(value, dict):
        return values_at(value.get(head), rest)
    return [None]


def floating_parameters(template: Template) -> dict[str, str]:
    """Parameters resolved from an SSM parameter that follows new releases: logical id -> SSM name."""
    raw = template.get("Parameters")
    found: dict[str, str] = {}
    for name, parameter in (raw or {}).items() if isinstance(raw, dict) else ():
        if not isinstance(parameter, dict):
            continue
        kind, default = parameter.get("Type"), parameter.get("Default")
        if (
            isinstance(kind, str)
            and kind.startswith("AWS::SSM::Parameter::Value<")
            and isinstance(default, str)
            and _FLOATING.search(default)
        ):
            found[name] = default
    return found


__all__ = [
    "Path",
    "Template",
    "diff",
    "floating_parameters",
    "outputs",
    "properties",
    "references",
    "resources",
    "stack_outputs",
    "transform",
    "values_at",
]
