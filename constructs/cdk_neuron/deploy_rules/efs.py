"""Amazon EFS: file systems, mount targets and access points."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

FILE_SYSTEM = "AWS::EFS::FileSystem"
MOUNT_TARGET = "AWS::EFS::MountTarget"
_DAYS = {
    "AFTER_1_DAY": 1,
    "AFTER_7_DAYS": 7,
    "AFTER_14_DAYS": 14,
    "AFTER_30_DAYS": 30,
    "AFTER_60_DAYS": 60,
    "AFTER_90_DAYS": 90,
    "AFTER_180_DAYS": 180,
    "AFTER_270_DAYS": 270,
    "AFTER_365_DAYS": 365,
}


def _mount_targets(template: _base.Template, file_system: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, res)
        for name, res in template.of_type(MOUNT_TARGET)
        if _base.ref_target(_base.props(res).get("FileSystemId")) == file_system
    ]


class OneMountTargetPerZone(_base.DeployRule):
    id = "E9501"
    shortdesc = "One EFS mount target per Availability Zone"
    description = (
        "A file system can have only one mount target in each Availability Zone. Flags a second mount target of "
        "the same file system in the same subnet, or in a subnet of the same template whose zone is known to match."
    )
    source_url = "https://docs.aws.amazon.com/efs/latest/ug/API_CreateMountTarget.html"
    source_title = "Amazon EFS API Reference: CreateMountTarget"
    resource_types = (MOUNT_TARGET,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        file_system = _base.ref_target(_base.props(resource).get("FileSystemId"))
        if file_system is None:
            return
        subnet = _base.props(resource).get("SubnetId")
        zone = _base.zone_of(template, subnet)
        for other, other_res in _mount_targets(template, file_system):
            if other == name:
                return  # report only the later duplicate, once
            other_subnet = _base.props(other_res).get("SubnetId")
            same_subnet = _base.ref_target(subnet) is not None and other_subnet == subnet
            if same_subnet or (zone is not None and _base.zone_of(template, other_subnet) == zone):
                yield Finding(
                    ("Properties", "SubnetId"),
                    f"{name}: file system {file_system} already has mount target {other} in the same Availability "
                    f"Zone ({zone[1] if zone else 'same subnet'}); EFS allows one mount target per zone. Fix: "
                    "remove one of them.",
                )
                return


class OneZoneMountTargets(_base.DeployRule):
    id = "E9502"
    shortdesc = "A One Zone file system has one mount target, in its own zone"
    description = (
        "An EFS One Zone file system (AvailabilityZoneName set) lives in one Availability Zone, so it can have only "
        "one mount target, and that mount target must be in the file system's zone."
    )
    source_url = "https://docs.aws.amazon.com/efs/latest/ug/API_CreateMountTarget.html"
    source_title = "Amazon EFS API Reference: CreateMountTarget"
    resource_types = (FILE_SYSTEM,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        zone = _base.props(resource).get("AvailabilityZoneName")
        if zone is None:
            return
        targets = _mount_targets(template, name)
        if len(targets) > 1:
            yield Finding(
                ("Properties", "AvailabilityZoneName"),
                f"{name}: One Zone file system has {len(targets)} mount targets ({', '.join(t for t, _ in targets)}); "
                "it can have only one, in its own zone. Fix: keep one mount target.",
            )
        if not isinstance(zone, str):
            return
        for target, target_res in targets:
            subnet_zone = _base.zone_of(template, _base.props(target_res).get("SubnetId"))
            if subnet_zone is not None and subnet_zone[0] == "name" and subnet_zone[1] != zone:
                yield Finding(
                    ("Properties", "AvailabilityZoneName"),
                    f"{name}: One Zone file system is in {zone} but mount target {target} is in a subnet in "
                    f"{subnet_zone[1]}. Fix: mount it from a subnet in {zone}.",
                )


class LifecyclePolicies(_base.DeployRule):
    id = "E9503"
    shortdesc = "EFS lifecycle policies: one transition per entry, Archive only after IA and on Elastic/General Purpose"
    description = (
        "EFS requires each LifecyclePolicies entry to hold a single transition. TransitionToArchive must be later "
        "than TransitionToIA, and the Archive storage class is available only to file systems using the Elastic "
        "throughput mode and the General Purpose performance mode."
    )
    source_url = "https://docs.aws.amazon.com/efs/latest/ug/API_PutLifecycleConfiguration.html"
    source_title = "Amazon EFS API Reference: PutLifecycleConfiguration and LifecyclePolicy"
    resource_types = (FILE_SYSTEM,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        policies = _base.as_list(properties.get("LifecyclePolicies"))
        if policies is None:
            return
        seen: dict[str, tuple[int, Any]] = {}
        for index, policy in enumerate(policies):
            policy = _base.as_dict(policy)
            if policy is None:
                continue
            if len(policy) != 1:
                yield Finding(
                    ("Properties", "LifecyclePolicies", index),
                    f"{name}: LifecyclePolicies[{index}] holds {len(policy)} transitions ({', '.join(sorted(policy))}); "
                    "EFS requires one transition per entry. Fix: split it into one entry per key.",
                )
            for key, value in policy.items():
                seen.setdefault(key, (index, value))
        if "TransitionToArchive" not in seen:
            return
        index, archive = seen["TransitionToArchive"]
        throughput = properties.get("ThroughputMode", "bursting")
        performance = properties.get("PerformanceMode", "generalPurpose")
        if (isinstance(throughput, str) and throughput != "elastic") or (
            isinstance(performance, str) and performance != "generalPurpose"
        ):
            yield Finding(
                ("Properties", "LifecyclePolicies", index, "TransitionToArchive"),
                f"{name}: TransitionToArchive {archive!r} needs ThroughputMode 'elastic' and PerformanceMode "
                f"'generalPurpose' (file system has {throughput!r} / {performance!r}). Fix: use Elastic throughput "
                "or drop the Archive transition.",
            )
        if "TransitionToIA" in seen:
            ia = seen["TransitionToIA"][1]
            # Only literal values compare (a dict/list token is unhashable and unknown).
            known = isinstance(ia, str) and isinstance(archive, str) and ia in _DAYS and archive in _DAYS
            if known and _DAYS[archive] <= _DAYS[ia]:
                yield Finding(
                    ("Properties", "LifecyclePolicies", index, "TransitionToArchive"),
                    f"{name}: TransitionToArchive {archive} is not later than TransitionToIA {ia}; files cannot "
                    "move to Archive before IA. Fix: make the Archive transition later.",
                )


class PerformanceModeCombinations(_base.DeployRule):
    id = "E9504"
    shortdesc = "EFS Max I/O is not available with Elastic throughput or One Zone"
    description = (
        "Max I/O performance mode is not supported on file systems using One Zone storage classes or Elastic "
        "throughput."
    )
    source_url = "https://docs.aws.amazon.com/efs/latest/ug/performance.html"
    source_title = "Amazon EFS User Guide: Amazon EFS performance specifications (performance modes)"
    resource_types = (FILE_SYSTEM,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        if properties.get("PerformanceMode") != "maxIO":
            return
        if properties.get("ThroughputMode") == "elastic":
            yield Finding(
                ("Properties", "PerformanceMode"),
                f"{name}: PerformanceMode 'maxIO' with ThroughputMode 'elastic' is not supported. Fix: use "
                "'generalPurpose'.",
            )
        if properties.get("AvailabilityZoneName") is not None:
            yield Finding(
                ("Properties", "PerformanceMode"),
                f"{name}: PerformanceMode 'maxIO' on a One Zone file system is not supported. Fix: use "
                "'generalPurpose'.",
            )


class AccessPointPathDepth(_base.DeployRule):
    id = "E9505"
    shortdesc = "EFS access point root directory has at most four subdirectories"
    description = (
        "An access point's RootDirectory.Path can have up to four subdirectories (and 100 characters)."
    )
    source_url = (
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
        "aws-properties-efs-accesspoint-rootdirectory.html"
    )
    source_title = "AWS CloudFormation: AWS::EFS::AccessPoint RootDirectory"
    resource_types = ("AWS::EFS::AccessPoint",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        root = _base.as_dict(_base.props(resource).get("RootDirectory")) or {}
        path = root.get("Path")
        if not isinstance(path, str):
            return
        depth = len([part for part in path.split("/") if part])
        if depth > 4 or len(path) > 100:
            yield Finding(
                ("Properties", "RootDirectory", "Path"),
                f"{name}: RootDirectory.Path {path!r} has {depth} subdirectories and {len(path)} characters; EFS "
                "allows up to 4 and 100. Fix: use a shorter path.",
            )
