"""Where the checkpoint file system's mount targets go, and which AZ a One Zone file system uses."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from cdk_neuron._subnets import describe_selection, select_subnets
from cdk_neuron.errors import NeuronConfigError

_PIN_AZS = (
    "pin the VPC's availability zones: build the VPC with availability_zones=[...] (the names your "
    "account maps to the cluster's AZ IDs, e.g. use1-az6) in a stack with an explicit env, or seed the "
    "'availability-zones:account=...:region=...' context"
)


# aws-cdk-lib's Stack.availabilityZones answers "dummy1a", "dummy1b", ... while the availability-zones
# context of an env-specific stack is missing, and reports the context missing; the CDK CLI then looks
# it up and runs the app again, and refuses to deploy while it cannot ("Context", AWS CDK v2 Developer
# Guide, https://docs.aws.amazon.com/cdk/v2/guide/context.html, read 2026-12-01).
PLACEHOLDER_AZ_PREFIX = "dummy"


@dataclass(frozen=True)
class MountPlacement:
    """Mount-target subnets and, for One Zone, the file system's AZ name."""

    subnets: tuple[ec2.ISubnet, ...]
    availability_zone: str | None

    def subnet_selection(self) -> ec2.SubnetSelection:
        if self.availability_zone is not None:
            # The EFS L2 places a One Zone file system's mount target by AZ alone; resolve_placement
            # has checked that this selects exactly `subnets`.
            return ec2.SubnetSelection(availability_zones=[self.availability_zone])
        return ec2.SubnetSelection(subnets=list(self.subnets))


def resolve_placement(
    scope: cdk.Stack,
    vpc: ec2.IVpc,
    selection: ec2.SubnetSelection,
    *,
    one_zone: bool,
    explicit_zone: bool = False,
) -> MountPlacement:
    """Resolve `selection` into mount-target subnets, validating what EFS will accept.

    EFS allows one mount target per AZ, so the selection may hold at most one subnet per AZ. A One
    Zone file system lives in exactly one AZ, named in the template: that name must be real (not a
    token or CDK's placeholder "dummy1a"), or CloudFormation creates the file system in the wrong
    AZ or fails. With ``explicit_zone`` the caller supplies the name itself (an AZ-ID-pinned VPC),
    so the subnets' zone label only has to be a single, consistent one.

    CDK's placeholder (``dummy1a``) is not refused: the stack has reported its AZ context missing, and
    the CDK CLI looks it up and runs the app again with the real names, but only if this run completes
    (a refusal here, or an error annotation, which apps with the recommended
    ``@aws-cdk/core:annotationsInValidationReport`` flag turn into a failed synthesis, would stop the
    lookup). A token (an env-agnostic stack) never becomes a name, and is refused.
    """
    selected = select_subnets(vpc, selection)
    subnets = tuple(selected.subnets)
    if not subnets:
        raise NeuronConfigError(
            "vpc_subnets", describe_selection(selection), "the selection matches no subnet in the VPC"
        )
    zones = [s.availability_zone for s in subnets]
    if not any(cdk.Token.is_unresolved(z) for z in zones):
        repeated = sorted(z for z, n in Counter(zones).items() if n > 1)
        if repeated:
            raise NeuronConfigError(
                "vpc_subnets",
                describe_selection(selection),
                f"EFS allows one mount target per AZ but the selection has several subnets in {repeated}; "
                "add one_per_az=True or select one subnet group",
            )
    if not one_zone:
        return MountPlacement(subnets=subnets, availability_zone=None)

    distinct = sorted(set(zones))
    if len(distinct) != 1:
        raise NeuronConfigError(
            "vpc_subnets",
            distinct,
            "one_zone=True needs subnets in exactly one AZ: the training cluster's AZ",
        )
    zone = distinct[0]
    if cdk.Token.is_unresolved(zone):
        raise NeuronConfigError("vpc_subnets.availability_zone", zone, _PIN_AZS)
    awaiting_lookup = zone.startswith(PLACEHOLDER_AZ_PREFIX)  # see PLACEHOLDER_AZ_PREFIX
    region = scope.region
    if (
        not explicit_zone
        and not awaiting_lookup
        and not cdk.Token.is_unresolved(region)
        and not zone.startswith(region)
    ):
        raise NeuronConfigError(
            "vpc_subnets.availability_zone", zone, f"is not an AZ of the stack's Region {region}"
        )
    # The L2 ignores the subnets of the selection for One Zone and picks the VPC's default subnets
    # in that AZ (aws-efs efs-file-system.ts: `subnetSelection = {availabilityZones: [oneZoneAzName]}`).
    chosen_by_l2 = vpc.select_subnets(availability_zones=[zone]).subnets
    if [s.node.path for s in chosen_by_l2] != [s.node.path for s in subnets]:
        raise NeuronConfigError(
            "vpc_subnets",
            [s.node.path for s in subnets],
            f"with one_zone=True the mount target goes to the VPC's default subnet in {zone} "
            f"({[s.node.path for s in chosen_by_l2]}); select that subnet, or use one_zone=False",
        )
    return MountPlacement(subnets=subnets, availability_zone=zone)
