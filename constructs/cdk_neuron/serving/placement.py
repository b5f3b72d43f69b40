"""Which availability zones a fleet may use: the configured ones that offer its instance type.

Plain Python (no ``aws_cdk``). AZ *names* (``us-east-1a``) map to different physical zones in every
account; AZ *IDs* (``use1-az4``) do not, and offerings are published per AZ ID (catalog, MOTO). The
fleet therefore takes an explicit name -> ID mapping for the VPC's zones and keeps the zones whose
ID offers the instance type. A zone the AZ snapshot omits (while it lists the type in other zones of
the Region) is left out when enough listed zones remain, and kept with a warning when they do not:
the snapshot is the only AZ-level source, so its silence is never a refusal (``cdk-neuron
preflight`` asks the live account). Too few zones are refused only when both offerings sources rule
out the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cdk_neuron.catalog import (
    OFFERINGS,
    OFFERINGS_NOTE,
    az_offering_note,
    get_instance,
    offering_status,
    region_of_az_id,
)
from cdk_neuron.errors import NeuronConfigError, one_of


@dataclass(frozen=True)
class Placement:
    """The AZ names to deploy into, and what could not be verified.

    :param availability_zones: the AZ names to deploy into: those that offer the instance type, and
        those no source rules out (each with a warning). Required.
    :param dropped: the selected AZ names left out: both offerings sources rule out their Region, or
        the AZ snapshot lists the type only in other zones and enough listed ones remain. Default: none.
    :param warnings: what the offerings snapshot could not vouch for. Default: none.
    """

    availability_zones: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _is_token(value: str) -> bool:
    return "${Token[" in value or value.startswith("dummy")


def _region_known(region: str) -> bool:
    return any(region in regions for regions in OFFERINGS.values())


def select_availability_zones(
    instance_type: str,
    *,
    subnet_azs: Sequence[str],
    region: str | None,
    availability_zone_ids: Mapping[str, str] | None = None,
    min_availability_zones: int = 1,
) -> Placement:
    """Keep the subnets' AZs that offer ``instance_type``; refuse if fewer than ``min_availability_zones``.

    :param subnet_azs: AZ names of the selected subnets.
    :param region: the stack's region, or None when it is not known at synthesis.
    :param availability_zone_ids: AZ name -> AZ ID for the account, e.g. ``{"us-east-1a": "use1-az4"}``.
        Without it only the region is checked.
    """
    instance = get_instance(instance_type)
    if (
        isinstance(min_availability_zones, bool)
        or not isinstance(min_availability_zones, int)
        or min_availability_zones < 1
    ):
        raise NeuronConfigError(
            "min_availability_zones", min_availability_zones, "must be a whole number >= 1"
        )
    azs = tuple(dict.fromkeys(subnet_azs))
    concrete_region = region if region is not None and not _is_token(region) else None
    table = OFFERINGS.get(instance.name, {})
    warnings: list[str] = []

    if availability_zone_ids is None:
        if concrete_region is not None and table and concrete_region not in table:
            if _region_known(concrete_region):
                raise NeuronConfigError(
                    "instance_type",
                    instance.name,
                    f"no availability zone in {concrete_region} offers {instance.name}; regions that do: "
                    f"{one_of(table)}. {OFFERINGS_NOTE}",
                )
            warnings.append(
                f"{instance.name} offerings in {concrete_region} are unknown to the catalog; "
                "`cdk-neuron preflight` checks the live account"
            )
        kept = azs
        dropped: tuple[str, ...] = ()
    else:
        kept_list: list[str] = []
        dropped_list: list[str] = []
        unlisted: list[tuple[str, str]] = []
        for az in azs:
            if _is_token(az):
                kept_list.append(az)
                continue
            az_id = availability_zone_ids.get(az)
            if az_id is None:
                raise NeuronConfigError(
                    "availability_zone_ids",
                    dict(availability_zone_ids),
                    f"has no AZ ID for {az}, a zone of the selected subnets; map every zone, e.g. "
                    f'{{"{az}": "<az id from `aws ec2 describe-availability-zones`>"}}',
                )
            az_region = region_of_az_id(az_id)
            if concrete_region is not None and az_region is not None and az_region != concrete_region:
                raise NeuronConfigError(
                    "availability_zone_ids",
                    dict(availability_zone_ids),
                    f"{az_id} is an AZ ID of {az_region}, but the stack is in {concrete_region}",
                )
            status = offering_status(instance.name, az_id)
            if status == "not-offered":
                dropped_list.append(az)
                continue
            if status == "unknown" and table.get(az_region or concrete_region or ""):
                # The AZ snapshot lists the type elsewhere in the Region, not here: one source's
                # silence, so the zone is avoided while enough listed ones remain, never refused.
                unlisted.append((az, az_id))
                continue
            if status == "unknown":
                warnings.append(
                    f"whether {az} ({az_id}) offers {instance.name} is unknown: "
                    f"{az_offering_note(instance.name, az_id)}"
                )
            kept_list.append(az)
        use_unlisted = len(kept_list) < min_availability_zones
        for az, az_id in unlisted:
            (kept_list if use_unlisted else dropped_list).append(az)
            action = (
                "kept (too few listed zones remain)"
                if use_unlisted
                else "left out while listed zones suffice"
            )
            warnings.append(f"{az} ({az_id}) {action}: {az_offering_note(instance.name, az_id)}")
        kept = tuple(az for az in azs if az in kept_list)
        dropped = tuple(az for az in azs if az in dropped_list)
        if not kept:
            offered = table.get(concrete_region or "", ())
            raise NeuronConfigError(
                "availability_zone_ids",
                dict(availability_zone_ids),
                f"none of the configured zones offers {instance.name}"
                + (f"; AZ IDs that do in {concrete_region}: {one_of(offered)}" if offered else "")
                + f". {OFFERINGS_NOTE}",
            )
    if len(kept) < min_availability_zones:
        raise NeuronConfigError(
            "min_availability_zones",
            min_availability_zones,
            f"only {len(kept)} configured zone(s) offer {instance.name} ({', '.join(kept) or 'none'}"
            + (f"; dropped {', '.join(dropped)}" if dropped else "")
            + "); add subnets in zones that offer it, or lower min_availability_zones",
        )
    return Placement(availability_zones=kept, dropped=dropped, warnings=tuple(warnings))


__all__ = ["Placement", "select_availability_zones"]
