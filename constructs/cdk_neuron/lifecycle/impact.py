"""What a deployment will do: each resource unchanged, updated in place, replaced or deleted.

Given the templates before and after a change (two cloud assemblies, or a new synthesis against the
deployed templates), :func:`impact` classifies every resource of every stack:

1. A resource that appears is *added*; one that disappears is *deleted* (or *removed, kept* when its
   ``DeletionPolicy`` retains it).
2. A resource whose type changes, or whose create-only property changes (:mod:`.schema`), is
   *replaced*. A property that refers to a replaced resource changes too, so replacement spreads
   along references, within a stack and, through ``Fn::GetStackOutput``, across stacks, until
   nothing more changes.
3. Otherwise a changed property is an *update*, and a service rule (:mod:`.rules`) says what the
   service does with it: a replacing update of an Auto Scaling group replaces the group, an
   infrastructure update of a Batch compute environment replaces its instances under running jobs,
   a new endpoint configuration restarts a SageMaker endpoint's instances, and a new instance type
   on a variant that auto scaling manages fails.

Values CloudFormation resolves at deploy time from a floating SSM parameter (an AMI "recommended"
name) are reported, and with ``new_releases=True`` treated as changed: what a deploy does after AWS
publishes a new release.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdk_neuron.lifecycle import rules, schema
from cdk_neuron.lifecycle.template import (
    Path,
    Template,
    diff,
    floating_parameters,
    outputs,
    properties,
    references,
    resources,
    stack_outputs,
    transform,
    values_at,
)

_RETAINED = ("Retain", "RetainExceptOnCreate")


class Change(enum.Enum):
    UNCHANGED = "unchanged"
    ADDED = "added"
    UPDATED = "updated"
    REPLACED = "replaced"
    DELETED = "deleted"
    KEPT = "removed, kept"
    """Removed from the stack, but its DeletionPolicy keeps it in the account."""


@dataclass(frozen=True)
class ResourceImpact:
    logical_id: str
    type: str
    change: Change
    reasons: tuple[str, ...] = ()
    restarts: str | None = None
    """What stops or is replaced while the deployment runs (instances, jobs, an endpoint)."""
    fails: str | None = None
    """Why the service refuses this update (the deployment rolls back)."""
    data_at_risk: str | None = None
    sources: tuple[rules.Source, ...] = ()

    @property
    def stateful(self) -> bool:
        return self.type in rules.STATEFUL


@dataclass(frozen=True)
class StackImpact:
    stack: str
    status: str
    """``created``, ``deleted``, ``changed`` or ``unchanged``."""
    resources: tuple[ResourceImpact, ...]
    floating: tuple[tuple[str, str], ...] = ()
    """(parameter, SSM parameter name) resolved anew at every deployment of the stack."""
    changed_outputs: frozenset[str] = field(default_factory=frozenset)

    def of(self, *changes: Change) -> list[ResourceImpact]:
        return [r for r in self.resources if r.change in changes]

    def find(self, logical_id: str) -> ResourceImpact:
        return next(r for r in self.resources if r.logical_id == logical_id)


def _deletion(resource: Mapping[str, Any] | None, attribute: str) -> str:
    value = (resource or {}).get(attribute)
    return value if isinstance(value, str) else "Delete"


def _loss(kind: str, logical_id: str, retained: bool, what: str) -> str | None:
    holds = rules.STATEFUL.get(kind)
    if holds is None:
        return None
    if retained:
        return (
            f"{logical_id} ({kind}) is {what}: the old one and {holds} stay in the account, outside the stack"
        )
    return f"{logical_id} ({kind}) is {what}: the old one is deleted with {holds}"


class _Stack:
    """One stack's before and after, and the resources found replaced or updated so far."""

    def __init__(
        self, name: str, before: Template | None, after: Template | None, new_releases: bool
    ) -> None:
        self.name = name
        self.before = resources(before or {})
        self.after = resources(after or {})
        self.before_outputs = outputs(before or {})
        self.after_outputs = outputs(after or {})
        self.floating = floating_parameters(after or {})
        self.new_releases = new_releases
        self.replaced: set[str] = set()
        self.updated: set[str] = set()

    def _marker(self, node: Any, changed_outputs: set[tuple[str, str]]) -> Any | None:
        """The node as the deployment will see it, if it will differ from what the template says."""
        if not isinstance(node, dict) or len(node) != 1:
            return None
        ((key, inner),) = node.items()
        if key == "Fn::GetStackOutput":
            if any(ref in changed_outputs for ref in stack_outputs(node)):
                return {"<output changes>": json.dumps(inner, sort_keys=True)}
            return None
        if key not in ("Ref", "Fn::GetAtt", "Fn::Sub"):
            return None
        for logical, attribute in references(node):
            if logical in self.replaced:
                return {"<replaced>": [logical, attribute]}
            kind = str(self.after.get(logical, {}).get("Type"))
            if logical in self.updated and (kind, attribute) in rules.VERSIONED_ATTRIBUTES:
                return {"<new version>": [logical, attribute]}
            if self.new_releases and attribute is None and logical in self.floating:
                return {"<new release>": logical}
        return None

    def effective(self, value: Any, changed_outputs: set[tuple[str, str]]) -> Any:
        return transform(value, lambda node: self._marker(node, changed_outputs))

    def changed_outputs(self, changed_outputs: set[tuple[str, str]]) -> set[str]:
        names = set(self.before_outputs) ^ set(self.after_outputs)
        for name in set(self.before_outputs) & set(self.after_outputs):
            if self.before_outputs[name] != self.effective(self.after_outputs[name], changed_outputs):
                names.add(name)
        return names


def _readable(path: Path) -> str:
    """A changed property path up to where a reference or a deploy-time value starts."""
    kept: list[str] = []
    for segment in path:
        if isinstance(segment, str) and (segment.startswith(("<", "Fn::")) or segment == "Ref"):
            break
        kept.append(str(segment))
    return "/".join(kept)


def _kept_name(kind: str, before: Mapping[str, Any], after: Any) -> str | None:
    """The name property a replaced resource keeps unchanged in the template, if it sets one."""
    name = schema.name_property(kind)
    if name is None or "/" in name:
        return None
    old, new = before.get(name), after.get(name) if isinstance(after, dict) else None
    return name if old is not None and old == new else None


def _replacing_pointers(kind: str, before: Mapping[str, Any], after: Any) -> list[str]:
    return [
        "/".join(pointer)
        for pointer in schema.create_only(kind)
        if values_at(before, pointer) != values_at(after, pointer)
    ]


def _classify(stack: _Stack, changed_outputs: set[tuple[str, str]]) -> dict[str, ResourceImpact]:
    """One pass over the stack's resources with the replacements known so far."""
    found: dict[str, ResourceImpact] = {}
    for logical in sorted({*stack.before, *stack.after}):
        old, new = stack.before.get(logical), stack.after.get(logical)
        if old is None:
            found[logical] = ResourceImpact(logical, str(new.get("Type")) if new else "", Change.ADDED)
            continue
        kind = str(old.get("Type"))
        if new is None:
            policy = _deletion(old, "DeletionPolicy")
            kept = policy in _RETAINED
            found[logical] = ResourceImpact(
                logical,
                kind,
                Change.KEPT if kept else Change.DELETED,
                reasons=("removed from the template",),
                restarts=rules.removed_stops(kind),
                data_at_risk=_loss(kind, logical, kept, "removed from the stack"),
                sources=(rules.DELETION_POLICY,),
            )
            continue
        if str(new.get("Type")) != kind:
            found[logical] = ResourceImpact(
                logical, kind, Change.REPLACED, reasons=(f"type changes to {new.get('Type')}",)
            )
            continue
        before_props = properties(old)
        after_props = stack.effective(properties(new), changed_outputs)
        changed = frozenset(diff(before_props, after_props))
        attributes = [a for a in ("UpdatePolicy", "CreationPolicy", "DeletionPolicy", "UpdateReplacePolicy")
                      if old.get(a) != new.get(a)]  # fmt: skip
        pointers = _replacing_pointers(kind, before_props, after_props)
        rule = rules.SERVICE_RULES.get(kind)
        effect = rule(old, new, changed) if rule is not None and changed else None
        retained = _deletion(new, "UpdateReplacePolicy") in _RETAINED
        if pointers or (effect is not None and effect.replaces):
            reasons = tuple(f"{p} changes (create-only)" for p in pointers) or tuple(
                dict.fromkeys(f"{_readable(p)} changes" for p in sorted(changed, key=str))
            )
            named = _kept_name(kind, before_props, after_props)
            found[logical] = ResourceImpact(
                logical,
                kind,
                Change.REPLACED,
                reasons=reasons,
                restarts=effect.restarts
                if effect is not None and effect.replaces
                else rules.replaced_restarts(kind),
                fails=None
                if named is None
                else f"it is replaced but keeps its {named}: CloudFormation creates the replacement first, under "
                "the name the old one still holds, and the update fails (change the name with the change)",
                data_at_risk=_loss(kind, logical, retained, "replaced"),
                sources=((effect.source,) if effect is not None else ())
                + ((rules.NAME_TYPE,) if named is not None else ()),
            )
        elif changed or attributes:
            found[logical] = ResourceImpact(
                logical,
                kind,
                Change.UPDATED,
                reasons=tuple(dict.fromkeys(f"{_readable(p)} changes" for p in sorted(changed, key=str)))
                + tuple(f"{a} changes" for a in attributes),
                restarts=effect.restarts if effect is not None else None,
                fails=effect.fails if effect is not None else None,
                sources=(effect.source,) if effect is not None else (),
            )
        else:
            found[logical] = ResourceImpact(logical, kind, Change.UNCHANGED)
    return found


def _variant_types(config_name: Any, which: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """VariantName -> InstanceType of the endpoint configuration an EndpointConfigName refers to."""
    refs = [logical for logical, _ in references(config_name)]
    config = which.get(refs[0]) if refs else None
    variants = properties(config).get("ProductionVariants") if config else None
    return {
        str(v.get("VariantName")): v.get("InstanceType")
        for v in variants or []
        if isinstance(v, dict) and isinstance(v.get("VariantName"), str)
    }


def _scaled_variants(stack: _Stack, endpoint: str) -> set[str]:
    """Variants of ``endpoint`` that a scalable target in the deployed template manages."""
    found = set()
    for resource in stack.before.values():
        if resource.get("Type") != "AWS::ApplicationAutoScaling::ScalableTarget":
            continue
        resource_id = properties(resource).get("ResourceId")
        if endpoint not in {logical for logical, _ in references(resource_id)}:
            continue
        text = json.dumps(resource_id)
        marker = "/variant/"
        if marker in text:
            found.add(text.split(marker, 1)[1].split('"', 1)[0])
    return found


def _sagemaker_refusals(stack: _Stack, found: dict[str, ResourceImpact]) -> None:
    """SageMaker refuses to change the instance type of, or remove, a variant auto scaling manages."""
    for logical, result in list(found.items()):
        if result.type != "AWS::SageMaker::Endpoint" or result.change is not Change.UPDATED:
            continue
        old_config = properties(stack.before[logical]).get("EndpointConfigName")
        new_config = properties(stack.after[logical]).get("EndpointConfigName")
        before = _variant_types(old_config, stack.before)
        after = _variant_types(new_config, stack.after)
        refused = sorted(
            variant
            for variant in _scaled_variants(stack, logical)
            if variant in before and after.get(variant) != before[variant]
        )
        if refused:
            found[logical] = dataclasses.replace(
                result,
                fails=f"variant {', '.join(refused)} changes instance type or is removed while Application Auto "
                "Scaling manages it: SageMaker refuses the UpdateEndpoint and the stack rolls back",
                sources=(*result.sources, rules.SAGEMAKER_SCALING_UPDATE),
            )


def _new_endpoint_capacity(stack: _Stack, found: dict[str, ResourceImpact]) -> None:
    """A replaced SageMaker endpoint starts at its configuration's ``InitialInstanceCount``: whatever auto
    scaling had grown the old one to is not carried over while clients move to the new one."""
    for logical, result in list(found.items()):
        if result.type != "AWS::SageMaker::Endpoint" or result.change is not Change.REPLACED:
            continue
        refs = [ref for ref, _ in references(properties(stack.after[logical]).get("EndpointConfigName"))]
        config = stack.after.get(refs[0]) if refs else None
        counts = {
            str(v.get("VariantName")): v.get("InitialInstanceCount")
            for v in (properties(config).get("ProductionVariants") if config else None) or []
            if isinstance(v, dict) and v.get("InitialInstanceCount") is not None
        }
        if counts:
            start = ", ".join(f"{name} {count}" for name, count in counts.items())
            found[logical] = dataclasses.replace(
                result,
                restarts=f"{result.restarts}; it starts with {start} instance(s) (InitialInstanceCount), not "
                "what auto scaling had grown the old one to, and scales from there",
            )


def _stack_impact(stack: _Stack, changed_outputs: set[tuple[str, str]]) -> dict[str, ResourceImpact]:
    stack.replaced, stack.updated = set(), set()
    while True:
        found = _classify(stack, changed_outputs)
        replaced = {k for k, v in found.items() if v.change is Change.REPLACED}
        updated = {k for k, v in found.items() if v.change is Change.UPDATED}
        if replaced == stack.replaced and updated == stack.updated:
            _sagemaker_refusals(stack, found)
            _new_endpoint_capacity(stack, found)
            return found
        stack.replaced, stack.updated = replaced, updated


def impact(
    before: Mapping[str, Template], after: Mapping[str, Template], *, new_releases: bool = False
) -> list[StackImpact]:
    """Every stack's impact, by stack name; a stack in only one side is created or deleted.

    :param before: stack name -> the template deployed (or synthesized before the change).
    :param after: stack name -> the template about to be deployed.
    :param new_releases: treat values resolved from floating SSM parameters as changed.
    """
    names = [*before, *(name for name in after if name not in before)]
    stacks = {name: _Stack(name, before.get(name), after.get(name), new_releases) for name in names}
    changed_outputs: set[tuple[str, str]] = set()
    results: dict[str, dict[str, ResourceImpact]] = {}
    for _ in range(len(stacks) + 1):
        results = {name: _stack_impact(stack, changed_outputs) for name, stack in stacks.items()}
        now = {
            (name, output)
            for name, stack in stacks.items()
            for output in stack.changed_outputs(changed_outputs)
        }
        if now == changed_outputs:
            break
        changed_outputs = now
    impacts = []
    for name, stack in stacks.items():
        found = tuple(results[name][k] for k in sorted(results[name]))
        if name not in before:
            status = "created"
        elif name not in after:
            status = "deleted"
        elif any(r.change is not Change.UNCHANGED for r in found):
            status = "changed"
        else:
            status = "unchanged"
        impacts.append(
            StackImpact(
                stack=name,
                status=status,
                resources=found,
                floating=tuple(sorted(stack.floating.items())),
                changed_outputs=frozenset(o for s, o in changed_outputs if s == name),
            )
        )
    return impacts


def stateful_losses(impacts: Iterable[StackImpact]) -> list[tuple[str, ResourceImpact]]:
    """(stack, resource) for every stateful resource a change replaces or deletes."""
    return [
        (s.stack, r)
        for s in impacts
        for r in s.resources
        if r.stateful and r.change in (Change.REPLACED, Change.DELETED, Change.KEPT)
    ]


__all__ = ["Change", "ResourceImpact", "StackImpact", "impact", "stateful_losses"]
