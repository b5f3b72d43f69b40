"""On UltraServer servers (trn2u.48xlarge, Trn3): quotas, held Capacity Blocks, offerings."""

from __future__ import annotations

from typing import Any

from cdk_neuron import catalog
from cdk_neuron.cli.preflight.base import Check, CheckContext, Finding, Row

# Words a Service Quotas name carries when it limits Trn3 or UltraServer capacity. No source we could
# read names such a quota (looked 2026-12-01), so the check lists what the account's own EC2 quotas
# call by these words instead of pinning a code.
ULTRASERVER_QUOTA_WORDS = ("trn3", "trainium3", "ultraserver")


CAPACITY_BLOCK_HOURS = 24


def _all_ec2_quotas(quotas: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ServiceCode": "ec2"}
    while True:
        page = quotas.list_service_quotas(**kwargs)
        found.extend(page.get("Quotas", []))
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def ultraserver_quota_findings(quotas: Any, instance: catalog.NeuronInstance, region: str) -> list[Finding]:
    """The account's EC2 quotas whose names mention Trn3 or UltraServers (ListServiceQuotas)."""
    named = [
        q
        for q in _all_ec2_quotas(quotas)
        if any(word in str(q.get("QuotaName", "")).lower() for word in ULTRASERVER_QUOTA_WORDS)
    ]
    if not named:
        return [
            Finding(
                "ultraserver quota",
                instance.name,
                "WARN",
                "no EC2 quota of this account names Trn3 or UltraServers (ListServiceQuotas); only the "
                "On-Demand Trn vCPU quota is checked, and whether UltraServer capacity draws on it is not "
                "published: ask AWS before relying on it",
            )
        ]
    findings = []
    for quota in sorted(named, key=lambda q: str(q.get("QuotaCode"))):
        code, name, value = (
            quota.get("QuotaCode", "?"),
            quota.get("QuotaName", "?"),
            float(quota.get("Value", 0)),
        )
        if value > 0:
            findings.append(Finding("ultraserver quota", f"{name} ({code})", "PASS", f"{value:g}"))
        else:
            findings.append(
                Finding(
                    "ultraserver quota",
                    f"{name} ({code})",
                    "FAIL",
                    "0: request an increase (command below)",
                    f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} "
                    f"--desired-value 1 --region {region}",
                )
            )
    return findings


def ultraserver_capacity_findings(
    ec2: Any,
    instance: catalog.NeuronInstance,
    *,
    max_nodes: int,
    az_id: str,
    region: str,
    ultraserver_type: str | None = None,
    hours: int = CAPACITY_BLOCK_HOURS,
) -> list[Finding]:
    """UltraServer Capacity Blocks the account holds (DescribeCapacityBlocks) and, given EC2's
    UltraServer type name, the offerings for as many UltraServers as ``max_nodes`` needs
    (DescribeCapacityBlockOfferings). EC2's UltraServer type names are not in the catalog: no source
    we could read publishes them (``catalog.ULTRASERVER_API_TYPES``)."""
    ultra = instance.ultraserver_type
    if ultra is None:
        return []
    count = -(-max_nodes // ultra.servers)
    findings: list[Finding] = []
    blocks = ec2.describe_capacity_blocks().get("CapacityBlocks", [])
    ours = [b for b in blocks if b.get("UltraserverType") and b.get("AvailabilityZoneId") == az_id]
    active = [b for b in ours if b.get("State") == "active"]
    if len(active) >= count:
        findings.append(
            Finding(
                "ultraserver capacity",
                f"{ultra.name} @ {az_id}",
                "PASS",
                f"{len(active)} active UltraServer Capacity Block(s) >= {count} needed for {max_nodes} nodes "
                f"({', '.join(b['CapacityBlockId'] for b in active)})",
            )
        )
    else:
        later = [
            f"{b['CapacityBlockId']} ({b.get('State')}, from {b.get('StartDate', '?')})"
            for b in ours
            if b not in active
        ]
        findings.append(
            Finding(
                "ultraserver capacity",
                f"{ultra.name} @ {az_id}",
                "WARN" if later else "FAIL",
                f"{len(active)} active UltraServer Capacity Block(s) in {az_id}, {count} needed for {max_nodes} "
                f"nodes ({ultra.servers} servers each)"
                + (f"; not yet active: {', '.join(later)}" if later else ""),
            )
        )
    if ultraserver_type is None:
        findings.append(
            Finding(
                "ultraserver offering",
                ultra.name,
                "INFO",
                "EC2's UltraServer type name for this UltraServer is not published in any source cdk-neuron "
                "could read; look the offerings up with the type the console shows",
                f"aws ec2 describe-capacity-block-offerings --ultraserver-type <type> --ultraserver-count {count} "
                f"--capacity-duration-hours {hours} --region {region}",
            )
        )
        return findings
    offerings = ec2.describe_capacity_block_offerings(
        UltraserverType=ultraserver_type, UltraserverCount=count, CapacityDurationHours=hours
    ).get("CapacityBlockOfferings", [])
    # Offerings name AZs, not AZ IDs: map the training AZ ID to this account's AZ name.
    zones = ec2.describe_availability_zones(ZoneIds=[az_id]).get("AvailabilityZones", [])
    zone_name = zones[0].get("ZoneName") if zones else None
    here = [o for o in offerings if zone_name is not None and o.get("AvailabilityZone") == zone_name]
    subject = f"{ultraserver_type} x {count}, {hours} h"
    if not offerings:
        findings.append(
            Finding(
                "ultraserver offering",
                subject,
                "FAIL",
                f"no offering in {region} now; try other dates or durations",
            )
        )
    else:
        cheapest = min(offerings, key=lambda o: float(o.get("UpfrontFee", "inf")))
        fee = f"{cheapest.get('UpfrontFee', '?')} {cheapest.get('CurrencyCode', '')}".strip()
        findings.append(
            Finding(
                "ultraserver offering",
                subject,
                "PASS" if here else "WARN",
                f"{len(offerings)} offering(s); cheapest {fee} upfront in {cheapest.get('AvailabilityZone', '?')} "
                f"from {cheapest.get('StartDate', '?')}"
                + ("" if here else f"; none reported for {az_id}, the training AZ"),
            )
        )
    return findings


def check_ultraserver(ctx: CheckContext) -> list[Row]:
    """UltraServer servers only (trn2u.48xlarge, Trn3): quotas, held blocks, offerings."""
    training = ctx.env.training
    if training is None:
        return []
    instance = catalog.get_instance(training.instance_type)
    if not instance.is_ultraserver:
        return []
    findings = ultraserver_quota_findings(ctx.client("service-quotas"), instance, ctx.env.region)
    if ctx.env.training_az_id is None:
        findings.append(
            Finding(
                "ultraserver capacity",
                instance.name,
                "INFO",
                "the training AZ ID is unknown at synthesis: held UltraServer Capacity Blocks and offerings "
                "are not checked",
            )
        )
        return [ctx.row(f.check, f.subject, f.status, f.detail, f.command) for f in findings]
    findings += ultraserver_capacity_findings(
        ctx.client("ec2"),
        instance,
        max_nodes=training.max_nodes,
        az_id=ctx.env.training_az_id,
        region=ctx.env.region,
        ultraserver_type=catalog.ULTRASERVER_API_TYPES.get(instance.ultraserver or ""),
    )
    return [ctx.row(f.check, f.subject, f.status, f.detail, f.command) for f in findings]


CHECK = Check(
    "ultraserver",
    check_ultraserver,
    passes_when="on UltraServer servers only: the account's EC2 quotas that name Trn3 or UltraServers are above 0, it holds enough active UltraServer Capacity Blocks in the training AZ, and (where EC2's UltraServer type name is known) offerings exist",
    calls=(
        "servicequotas:ListServiceQuotas",
        "ec2:DescribeCapacityBlocks",
        "ec2:DescribeCapacityBlockOfferings",
        "ec2:DescribeAvailabilityZones",
    ),
)
