"""Amazon EC2 launch templates: network interfaces (EFA) and user data."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding
from cdk_neuron.validation import AZ_ID

USER_DATA_LIMIT = 16 * 1024
# A token (Ref, GetAtt, ImportValue, ...) inside user data: resource ids, ARNs and names are rarely longer.
TOKEN_ESTIMATE = 256


def _interfaces(resource: dict[str, Any]) -> list[Any] | None:
    return _base.as_list(_base.launch_template_data(resource).get("NetworkInterfaces"))


class InterfacesWithInstanceSecurityGroups(_base.DeployRule):
    id = "E9201"
    shortdesc = "Launch template NetworkInterfaces exclude top-level security groups"
    description = (
        "When a launch template specifies NetworkInterfaces, the security groups must be part of each interface "
        "(Groups); EC2 refuses launches whose template also sets SecurityGroupIds or SecurityGroups ('Network "
        "interfaces and an instance-level security groups may not be specified on the same request')."
    )
    source_url = (
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
        "aws-properties-ec2-launchtemplate-launchtemplatedata.html"
    )
    source_title = "AWS CloudFormation: AWS::EC2::LaunchTemplate LaunchTemplateData (NetworkInterfaces)"
    resource_types = (_base.LAUNCH_TEMPLATE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        data = _base.launch_template_data(resource)
        if not _interfaces(resource):
            return
        for key in ("SecurityGroupIds", "SecurityGroups"):
            if data.get(key) not in (None, []):
                yield Finding(
                    ("Properties", "LaunchTemplateData", key),
                    f"{name}: LaunchTemplateData sets both NetworkInterfaces and {key}; EC2 refuses instance-level "
                    "security groups with network interfaces. Fix: move the groups into each interface's Groups "
                    f"and remove {key}.",
                )


class EfaInterfaceLayout(_base.DeployRule):
    id = "E9202"
    shortdesc = (
        "EFA interface layout: no EFA-only primary, unique card/device slots, no public IP with several"
    )
    description = (
        "The primary network interface (network card 0, device 0) can't be an EFA-only interface; each "
        "(NetworkCardIndex, DeviceIndex) pair can be used once; and a public IPv4 address can only be associated "
        "when the launch specifies a single network interface."
    )
    source_url = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
    source_title = "Amazon EC2 User Guide: Maximize network bandwidth on Amazon EC2 instances with multiple network cards"
    resource_types = (_base.LAUNCH_TEMPLATE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        interfaces = _interfaces(resource) or []
        slots: dict[tuple[int, int], int] = {}
        for index, interface in enumerate(interfaces):
            interface = _base.as_dict(interface)
            if interface is None:
                continue
            where = ("Properties", "LaunchTemplateData", "NetworkInterfaces", index)
            card = _base.as_int(interface.get("NetworkCardIndex", 0))
            device = _base.as_int(interface.get("DeviceIndex"))
            kind = interface.get("InterfaceType")
            if card == 0 and device == 0 and kind == "efa-only":
                yield Finding(
                    (*where, "InterfaceType"),
                    f"{name}: NetworkInterfaces[{index}] is the primary interface (card 0, device 0) with "
                    "InterfaceType 'efa-only'; an EFA-only interface can't be the primary one. Fix: make it 'efa' "
                    "or 'interface' and put EFA-only interfaces on device index 1 or other cards.",
                )
            if card is not None and device is not None:
                if (card, device) in slots:
                    yield Finding(
                        (*where, "DeviceIndex"),
                        f"{name}: NetworkInterfaces[{index}] uses NetworkCardIndex {card} / DeviceIndex {device}, "
                        f"already used by NetworkInterfaces[{slots[(card, device)]}]. Fix: give each interface a "
                        "distinct (NetworkCardIndex, DeviceIndex).",
                    )
                slots.setdefault((card, device), index)
            if len(interfaces) > 1 and _base.as_bool(interface.get("AssociatePublicIpAddress")) is True:
                yield Finding(
                    (*where, "AssociatePublicIpAddress"),
                    f"{name}: NetworkInterfaces[{index}] sets AssociatePublicIpAddress true but the template has "
                    f"{len(interfaces)} interfaces; a public IP can only be assigned when one interface is "
                    "specified. Fix: remove AssociatePublicIpAddress and attach an Elastic IP if needed.",
                )


def _user_data_size(value: Any) -> tuple[int, int] | None:
    """(literal bytes, number of tokens) of the raw user data, or None when it cannot be sized."""
    if isinstance(value, str):
        try:
            return len(base64.b64decode(value, validate=True)), 0
        except (binascii.Error, ValueError):
            return None
    if isinstance(value, dict) and len(value) == 1 and "Fn::Base64" in value:
        return _raw_size(value["Fn::Base64"])
    return None


def _raw_size(value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        return len(value.encode()), 0
    if isinstance(value, dict) and len(value) == 1:
        join = value.get("Fn::Join")
        if (
            isinstance(join, list)
            and len(join) == 2
            and isinstance(join[0], str)
            and isinstance(join[1], list)
        ):
            size, tokens = len(join[0].encode()) * max(len(join[1]) - 1, 0), 0
            for part in join[1]:
                part_size, part_tokens = _raw_size(part)
                size, tokens = size + part_size, tokens + part_tokens
            return size, tokens
        sub = value.get("Fn::Sub")
        if isinstance(sub, list) and sub:
            sub = sub[0]
        if isinstance(sub, str):
            variables = sub.count("${") - sub.count("${!")
            return len(sub.encode()) - 3 * variables, variables
    return 0, 1


class UserDataSize(_base.DeployRule):
    id = "E9203"
    shortdesc = "Launch template user data is limited to 16 KB before base64"
    description = (
        "User data is limited to 16 KB, in raw form, before it is base64-encoded. Sizes the literal content of "
        "Fn::Base64 (Fn::Join and Fn::Sub included); an error when the literal text alone is over the limit."
    )
    source_url = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html"
    source_title = "Amazon EC2 User Guide: Run commands when you launch an EC2 instance with user data input"
    resource_types = (_base.LAUNCH_TEMPLATE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        size = _user_data_size(_base.launch_template_data(resource).get("UserData"))
        if size is not None and size[0] > USER_DATA_LIMIT:
            tokens = f" plus {size[1]} token(s)" if size[1] else ""
            yield Finding(
                ("Properties", "LaunchTemplateData", "UserData"),
                f"{name}: UserData is at least {size[0]} bytes{tokens} before base64; EC2 accepts at most "
                f"{USER_DATA_LIMIT} bytes. Fix: move scripts to S3 or an SSM document and fetch them at boot.",
            )


class UserDataSizeEstimate(_base.DeployRule):
    id = "W9204"
    shortdesc = "Launch template user data may exceed 16 KB once its tokens resolve"
    description = (
        "Like E9203, but for user data whose literal text fits and whose tokens (Ref, Fn::GetAtt, ...) are "
        f"estimated at {TOKEN_ESTIMATE} bytes each: when the estimate is over 16 KB the launch may be refused."
    )
    source_url = UserDataSize.source_url
    source_title = UserDataSize.source_title
    resource_types = (_base.LAUNCH_TEMPLATE,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        size = _user_data_size(_base.launch_template_data(resource).get("UserData"))
        if size is None or size[0] > USER_DATA_LIMIT or not size[1]:
            return
        estimate = size[0] + size[1] * TOKEN_ESTIMATE
        if estimate > USER_DATA_LIMIT:
            yield Finding(
                ("Properties", "LaunchTemplateData", "UserData"),
                f"{name}: UserData has {size[0]} literal bytes and {size[1]} token(s), an estimated {estimate} "
                f"bytes before base64 (limit {USER_DATA_LIMIT}). Fix: shrink the script or fetch it at boot.",
            )


# Properties that take an AZ *name* (us-east-1a); each resource that also accepts an ID names it.
_AZ_NAME_PROPERTIES: dict[str, tuple[str, str | None]] = {
    "AWS::EC2::Instance": ("AvailabilityZone", None),
    "AWS::EC2::Volume": ("AvailabilityZone", None),
    "AWS::EC2::Subnet": ("AvailabilityZone", "AvailabilityZoneId"),
    "AWS::EFS::FileSystem": ("AvailabilityZoneName", None),
}


class AvailabilityZoneNameNotId(_base.DeployRule):
    id = "E9205"
    shortdesc = "AvailabilityZone properties take AZ names, not AZ IDs"
    description = (
        "An AZ ID (use1-az6) and an AZ name (us-east-1a) are different identifiers: AZ names are mapped to "
        "AZ IDs independently for each account. Properties named AvailabilityZone (EC2 instances, volumes, "
        "subnets) and AvailabilityZoneName (EFS One Zone) accept names; EC2 rejects an ID there at create "
        "time. Subnets accept IDs in AvailabilityZoneId instead."
    )
    source_url = "https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html"
    source_title = "AWS RAM User Guide: Availability Zone IDs for your AWS resources"
    resource_types = tuple(_AZ_NAME_PROPERTIES)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        key, id_key = _AZ_NAME_PROPERTIES[resource["Type"]]
        value = _base.props(resource).get(key)
        if isinstance(value, str) and AZ_ID.match(value):
            fix = (
                f"put the AZ ID in {id_key} and remove {key}"
                if id_key
                else f"give the AZ name (or Fn::GetAtt of the subnet's AvailabilityZone), or remove {key} "
                "and let the subnet place the resource"
            )
            yield Finding(
                ("Properties", key),
                f"{name}: {key} is {value!r}, an AZ ID; it takes an AZ name such as us-east-1a. Fix: {fix}.",
            )
