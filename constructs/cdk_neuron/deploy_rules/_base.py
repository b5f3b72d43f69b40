"""The base class of every deploy rule and the helpers that read a template without guessing.

cfn-lint imports each ``[A-Za-z1-9]*.py`` file of an appended rules directory as a top-level module
and instantiates every class in its namespace that subclasses ``CloudFormationLintRule``. This file
starts with ``_`` so cfn-lint never imports it as a rule file, and rule modules import it as a
*module* (``from cdk_neuron.deploy_rules import _base``), so ``DeployRule`` never appears in their
namespace and is never registered on its own (its empty ``id`` would be skipped anyway).

Resolution is deliberately narrow: a value is "known" only when it is a literal, or a ``Ref`` /
``Fn::GetAtt`` to a resource in the same template, or a ``Fn::Join`` / ``Fn::Sub`` whose parts are
known. Everything else (parameters, ``Fn::ImportValue``, ``Fn::GetStackOutput``, ``Fn::If``, ...)
is ``None``, and a rule that meets ``None`` stays silent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, ClassVar

from cfnlint.rules import CloudFormationLintRule, RuleMatch

Path = tuple[str | int, ...]

READ_ON = "2026-12-01"
_INTRINSICS = ("Ref", "Condition")


@dataclass(frozen=True)
class Finding:
    """One violation: where it is (path below the resource) and what to do about it."""

    path: Path
    message: str


class Template:
    """Read-only view of a template's resources, with same-template resolution."""

    def __init__(self, template: Any) -> None:
        raw = template.get("Resources") if isinstance(template, dict) else None
        self.resources: dict[str, dict[str, Any]] = {
            name: res for name, res in (raw or {}).items() if isinstance(res, dict)
        }

    def of_type(self, *types: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, res in self.resources.items():
            if res.get("Type") in types:
                yield name, res

    def target(self, value: Any, *types: str) -> tuple[str, dict[str, Any]] | None:
        """The resource a ``Ref`` or ``Fn::GetAtt`` points at, if it is in this template (and of ``types``)."""
        name = ref_target(value)
        if name is None:
            return None
        res = self.resources.get(name)
        if res is None or (types and res.get("Type") not in types):
            return None
        return name, res


def props(resource: dict[str, Any]) -> dict[str, Any]:
    value = resource.get("Properties")
    return value if isinstance(value, dict) else {}


def ref_target(value: Any) -> str | None:
    """Logical id behind ``{"Ref": id}`` or ``{"Fn::GetAtt": [id, attr]}`` / ``"id.attr"``."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    if isinstance(value.get("Ref"), str):
        ref = value["Ref"]
        return None if ref.startswith("AWS::") else str(ref)
    getatt = value.get("Fn::GetAtt")
    if isinstance(getatt, list) and getatt and isinstance(getatt[0], str):
        return str(getatt[0])
    if isinstance(getatt, str) and "." in getatt:
        return getatt.split(".", 1)[0]
    return None


def getatt_attribute(value: Any) -> str | None:
    if not isinstance(value, dict) or len(value) != 1:
        return None
    getatt = value.get("Fn::GetAtt")
    if isinstance(getatt, list) and len(getatt) == 2 and isinstance(getatt[1], str):
        return str(getatt[1])
    if isinstance(getatt, str) and "." in getatt:
        return getatt.split(".", 1)[1]
    return None


def is_literal(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and not isinstance(value, dict)


def as_str(value: Any) -> str | None:
    return str(value) if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """An integer literal, also when CloudFormation carries it as a string (``"300"``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value.strip())
    return None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def as_list(value: Any) -> list[Any] | None:
    return list(value) if isinstance(value, list) else None


def as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) and not is_intrinsic(value) else None


def is_intrinsic(value: Any) -> bool:
    if not isinstance(value, dict) or len(value) != 1:
        return False
    (key,) = value
    return isinstance(key, str) and (key.startswith("Fn::") or key in _INTRINSICS)


_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$")


def iso8601_seconds(value: Any) -> int | None:
    """Seconds in a ``PT#H#M#S`` duration (the form CloudFormation's policies accept), else None."""
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value.strip())
    if match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


# Pseudo parameters become placeholders, so an ARN built with Fn::Join/Fn::Sub can still be compared.
_PSEUDO = {
    "AWS::Region": "<region>",
    "AWS::AccountId": "<account>",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "<stack>",
}


def text(value: Any) -> str | None:
    """A string value with pseudo parameters as placeholders; None when any part is unknown."""
    if isinstance(value, str):
        return str(value)
    if not isinstance(value, dict) or len(value) != 1:
        return None
    if "Ref" in value and value["Ref"] in _PSEUDO:
        return _PSEUDO[value["Ref"]]
    join = value.get("Fn::Join")
    if isinstance(join, list) and len(join) == 2 and isinstance(join[0], str) and isinstance(join[1], list):
        parts = [text(part) for part in join[1]]
        return None if any(p is None for p in parts) else join[0].join(p for p in parts if p is not None)
    sub = value.get("Fn::Sub")
    if isinstance(sub, str):
        if any(var not in _PSEUDO for var in re.findall(r"\$\{([^}!]+)\}", sub)):
            return None
        return re.sub(r"\$\{([^}!]+)\}", lambda m: _PSEUDO[m.group(1)], sub)
    return None


def actions_cover(statement_actions: Any, wanted: str) -> bool | None:
    """Whether an IAM ``Action`` value grants ``wanted``; None when the value is not a literal."""
    actions = statement_actions if isinstance(statement_actions, list) else [statement_actions]
    known = [a for a in actions if isinstance(a, str)]
    if len(known) != len(actions):
        return None
    return any(fnmatchcase(wanted.lower(), a.lower()) for a in known)


def statements(policy: Any) -> list[dict[str, Any]] | None:
    doc = as_dict(policy)
    if doc is None:
        return None
    raw = doc.get("Statement")
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        return None
    return raw


class DeployRule(CloudFormationLintRule):
    """A constraint an AWS service enforces at create/update time that the resource schema does not.

    Subclasses set the cfn-lint metadata (``id``, ``shortdesc``, ``description``, ``source_url``), the
    project's documentation metadata (``source_title``, ``read_on``) and ``resource_types``, and
    implement ``check`` for one resource.
    """

    id = ""
    tags = ["cdk-neuron", "deploy"]
    resource_types: ClassVar[tuple[str, ...]] = ()
    source_title: ClassVar[str] = ""
    read_on: ClassVar[str] = READ_ON

    def match(self, cfn: Any) -> list[RuleMatch]:
        template = Template(getattr(cfn, "template", None))
        found: list[RuleMatch] = []
        for name, resource in template.of_type(*self.resource_types):
            for finding in self.check(template, name, resource):
                found.append(RuleMatch(["Resources", name, *finding.path], finding.message))
        return found

    def check(self, template: Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        raise NotImplementedError


LAUNCH_TEMPLATE = "AWS::EC2::LaunchTemplate"


def launch_template(template: Template, spec: Any) -> tuple[str, dict[str, Any]] | None:
    """The LaunchTemplate resource a Batch/Auto Scaling launch template specification points at."""
    spec = as_dict(spec)
    if spec is None:
        return None
    for key in ("LaunchTemplateId", "LaunchTemplateName"):
        if key in spec:
            return template.target(spec[key], LAUNCH_TEMPLATE)
    return None


def launch_template_data(resource: dict[str, Any]) -> dict[str, Any]:
    return as_dict(props(resource).get("LaunchTemplateData")) or {}


def zone_of(template: Template, subnet: Any) -> tuple[str, Any] | None:
    """A comparable identity of a subnet's Availability Zone, when the subnet is in this template.

    Literal names and IDs compare among themselves; ``Fn::Select [i, Fn::GetAZs <region>]`` compares
    by index within the same region (GetAZs lists distinct zones). Mixed kinds are not comparable.
    """
    found = template.target(subnet, "AWS::EC2::Subnet")
    if found is None:
        return None
    properties = props(found[1])
    if isinstance(properties.get("AvailabilityZoneId"), str):
        return "id", properties["AvailabilityZoneId"]
    zone = properties.get("AvailabilityZone")
    if isinstance(zone, str):
        return "name", zone
    select = zone.get("Fn::Select") if isinstance(zone, dict) and len(zone) == 1 else None
    if isinstance(select, list) and len(select) == 2:
        index = as_int(select[0])
        source = select[1]
        if index is not None and isinstance(source, dict) and set(source) == {"Fn::GetAZs"}:
            region = source["Fn::GetAZs"]
            if region == "" or region == {"Ref": "AWS::Region"}:
                return "select", index
    return None
