"""``cdk-neuron cost``: hourly and monthly cost at idle and at full scale, and a GPU comparison.

Offline, from the catalog's dated price table (``--live-prices`` asks the AWS Price List API
instead). Every figure is an estimate: the assumptions are part of the output, vendor claims are
labelled as claims with their source, and the price table's date is printed with the instruction
to refresh it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from cdk_neuron import catalog
from cdk_neuron.checkpoint_advisor import estimate_checkpoint
from cdk_neuron.cli.output import document, notes, table, usd
from cdk_neuron.cli.pricing import PriceBook
from cdk_neuron.deployment import Deployment
from cdk_neuron.planner import DEFAULT_HEADROOM, ServingPlan

HOURS_PER_MONTH = 730  # AWS's own convention for monthly estimates (8,760 h / 12)

KEPT_CHECKPOINTS = 2
"""Checkpoints kept on EFS at once (the latest and the one before it)."""
COMPILE_CACHE_GB = 50
"""Neuron persistent compile cache in S3: NEFFs of a few models, tens of GB."""


def interface_endpoints(env: Deployment) -> tuple[tuple[str, ...], int]:
    """The interface endpoints the environment's VPC gets, and how many AZs each is placed in.

    The S3 gateway endpoint is free and not counted.
    """
    return env.network.interface_endpoints, env.network.endpoint_azs


GPU_TRAINING_COMPARATORS = ("p4d.24xlarge", "p5.48xlarge")
GPU_SERVING_FAMILIES = ("g5", "g6e")
_GPU_TP = (1, 2, 4, 8)

REFRESH_INSTRUCTION = (
    "Prices change: refresh cdk_neuron.catalog.ON_DEMAND_PRICES / SAGEMAKER_PRICES / SERVICE_PRICES "
    "from the AWS Price List API (or run `cdk-neuron cost --live-prices`) before budgeting."
)


@dataclass(frozen=True)
class Claim:
    claim: str
    source: str
    status: str
    applies_to: str  # "trn1", "trn2", "inf2"


def _stale_p4d_gap() -> str:
    trn1 = catalog.ON_DEMAND_PRICES["trn1.32xlarge"].usd_per_hour
    p4d = catalog.ON_DEMAND_PRICES["p4d.24xlarge"].usd_per_hour
    return (
        f"stale: it uses the pre-June-2025 p4d price; at the table's prices (p4d.24xlarge ${p4d:,.2f}, "
        f"trn1.32xlarge ${trn1:,.2f}) the hourly gap is {(p4d - trn1) / p4d:.1%}"
    )


# Published price-performance claims, each with the public page it was read on (``source``).
# Claims are shown as claims, never used in the arithmetic.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Trn1: up to 50% cost-to-train savings over comparable EC2 instances",
        "AWS, quoted by usage.ai 'AWS Trainium vs GPU Instances' (updated 2026-06-25)",
        "vendor claim, not independently verified; performance varies by workload",
        "trn1",
    ),
    Claim(
        "trn1.32xlarge $21.50 vs p4d.24xlarge $32.77: a 34% price difference",
        "usage.ai 'AWS Trainium vs GPU Instances' (updated 2026-06-25)",
        _stale_p4d_gap(),
        "trn1",
    ),
    Claim(
        "Trn2: 30-40% better price performance than GPU-based EC2 P5e and P5en instances",
        "AWS launch messaging, as reproduced in alexiscarbillet/serverhub docs/CloudCompute/AWS/AIInference/Trn2.md",
        "vendor claim, not verified; P5en on-demand fell 25.4% after the claim was made",
        "trn2",
    ),
    Claim(
        "Inferentia2: 30-45% cheaper for inference than GPU instances",
        "factualminds.com blog",
        "third-party, no method given; uses pre-cut GPU prices",
        "inf2",
    ),
)


@dataclass(frozen=True)
class Line:
    item: str
    quantity: str
    usd_per_hour: float | None
    basis: str
    stored_data: bool = False
    """Storage that bills by what is kept (checkpoints, cache), not by what runs."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "stored_data": self.stored_data,
            "quantity": self.quantity,
            "usd_per_hour": _round(self.usd_per_hour),
            "usd_per_month": _round(
                None if self.usd_per_hour is None else self.usd_per_hour * HOURS_PER_MONTH
            ),
            "basis": self.basis,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _times(count: int, price: catalog.Price | None) -> float | None:
    return None if price is None else count * price.usd_per_hour


def _price_basis(name: str, price: catalog.Price | None) -> str:
    if price is None:
        return f"no price on record for {name}"
    note = f"; {price.note}" if price.note else ""
    return f"${price.usd_per_hour:,.4f}/h {name} ({price.source}, {price.region}{note})"


def _service(key: str) -> float:
    return catalog.SERVICE_PRICES[key].usd_per_hour


def _total(lines: Sequence[Line]) -> dict[str, Any]:
    known = [line.usd_per_hour for line in lines if line.usd_per_hour is not None]
    hourly = sum(known)
    running = sum(line.usd_per_hour or 0.0 for line in lines if not line.stored_data)
    return {
        "lines": [line.as_dict() for line in lines],
        "usd_per_hour_excluding_stored_data": round(running, 4),
        "usd_per_hour": round(hourly, 4),
        "usd_per_month": round(hourly * HOURS_PER_MONTH, 2),
        "complete": len(known) == len(lines),
    }


def _serving_price(env: Deployment, plan: ServingPlan, prices: PriceBook) -> tuple[str, catalog.Price | None]:
    sagemaker = env.serving.backend == "sagemaker"
    name = f"ml.{plan.instance_type}" if sagemaker else plan.instance_type
    return name, prices.instance(plan.instance_type, sagemaker=sagemaker)


def _rate(key: str, unit: str) -> str:
    """A service price as the basis column shows it, with its note (``$0.045/h, ...``)."""
    price = catalog.SERVICE_PRICES[key]
    note = f", {price.note}" if price.note else ""
    return f"${price.usd_per_hour:g}/{unit} ({price.source}, {price.region}{note})"


def _monthly(key: str, count: int) -> float:
    return count * _service(key) / HOURS_PER_MONTH


def _nat_lines(env: Deployment) -> list[Line]:
    network = env.network
    nat = network.nat_gateways
    if network.nat_instance_type is None:
        device = Line(
            "NAT gateways",
            str(nat),
            nat * _service("nat_gateway_hour"),
            _rate("nat_gateway_hour", "h each") + "; data processed not included",
        )
    else:
        name = network.nat_instance_type
        price = catalog.NAT_INSTANCE_PRICES.get(name)
        device = Line(
            "NAT instances",
            f"{nat} x {name}",
            _times(nat, price),
            _price_basis(name, price) + "; no per-GB processing charge",
        )
    addresses = Line(
        "public IPv4 addresses",
        f"{nat} (one per NAT)",
        nat * _service("public_ipv4_hour"),
        _rate("public_ipv4_hour", "h each"),
    )
    return [device, addresses]


def infrastructure_lines(env: Deployment) -> list[Line]:
    """What bills whether or not any accelerator runs."""
    services, azs = interface_endpoints(env)
    standing = env.standing
    alarms = standing.alarms
    lines = [
        *_nat_lines(env),
        Line(
            "interface VPC endpoints",
            f"{len(services)} x {azs} AZ" if services else "none",
            len(services) * azs * _service("interface_endpoint_az_hour"),
            _rate("interface_endpoint_az_hour", "h per endpoint per AZ") + "; data processed not included",
        ),
        Line(
            "KMS keys",
            str(len(standing.kms_keys)),
            _monthly("kms_key_month", len(standing.kms_keys)),
            _rate("kms_key_month", "key-month") + f": {', '.join(standing.kms_keys)}",
        ),
        Line(
            "CloudWatch alarms and dashboard",
            f"{alarms} alarms, {standing.dashboards} dashboard" + ("s" if standing.dashboards != 1 else ""),
            _monthly("alarm_month", alarms) + _monthly("dashboard_month", standing.dashboards),
            _rate("alarm_month", "alarm-month")
            + "; "
            + _rate("dashboard_month", "dashboard-month")
            + "; free-tier allowances not deducted",
        ),
    ]
    if standing.load_balancers:
        count = standing.load_balancers
        lines.append(
            Line(
                "application load balancer", str(count), count * _service("alb_hour"), _rate("alb_hour", "h")
            )
        )
    ckpt = env.training.checkpoint
    if ckpt is None:
        lines.append(
            Line(
                "EFS checkpoints",
                "unknown",
                0.0,
                "no training.checkpoint in cdk.json: storage not estimated",
                stored_data=True,
            )
        )
    else:
        size_gb = estimate_checkpoint(ckpt.model_parameters, writers=ckpt.writers, region=env.region).size_gb
        stored = size_gb * KEPT_CHECKPOINTS
        # Our EFS price source (SVC-EFS) gives no One Zone storage price: the Standard rate is an
        # upper bound.
        one_zone = (
            "; One Zone priced at the Standard rate (no One Zone price on record)"
            if env.storage.one_zone
            else ""
        )
        lines.append(
            Line(
                "EFS checkpoints",
                f"{stored:,.0f} GB",
                stored * _service("efs_standard_gb_month") / HOURS_PER_MONTH,
                f"{KEPT_CHECKPOINTS} checkpoints of {size_gb:,.0f} GB at "
                + _rate("efs_standard_gb_month", "GB-month")
                + one_zone,
                stored_data=True,
            )
        )
    lines.append(
        Line(
            "S3 compile cache",
            f"{COMPILE_CACHE_GB} GB",
            COMPILE_CACHE_GB * _service("s3_standard_gb_month") / HOURS_PER_MONTH,
            _rate("s3_standard_gb_month", "GB-month"),
            stored_data=True,
        )
    )
    return lines


def _idle_training_line(env: Deployment, prices: PriceBook) -> Line:
    training = env.training
    price = prices.ec2(training.instance_type)
    kind = training.capacity.kind
    if kind in ("reservation", "reservation-group"):
        return Line(
            "training capacity reservation",
            f"{training.max_nodes} x {training.instance_type}",
            _times(training.max_nodes, price),
            "a capacity reservation bills every reserved instance, used or not; assumed to reserve max_nodes. "
            + _price_basis(training.instance_type, price),
        )
    if kind == "capacity-block":
        return Line(
            "training Capacity Block",
            "prepaid",
            0.0,
            "the Capacity Block fee is paid up front at purchase (Amazon EC2 Capacity Blocks for ML pricing, "
            "https://aws.amazon.com/ec2/capacityblocks/pricing/, late-2024 copy), not hourly: not included",
        )
    return Line(
        "training nodes",
        f"0 x {training.instance_type}",
        0.0,
        "on-demand training capacity scales to zero between jobs (compute environment minimum 0)",
    )


def idle(env: Deployment, prices: PriceBook) -> list[Line]:
    plan = env.serving.plan
    name, price = _serving_price(env, plan, prices)
    serving = Line(
        "serving instances (minimum)",
        f"{env.serving.min_capacity} x {name}",
        _times(env.serving.min_capacity, price),
        _price_basis(name, price),
    )
    return [_idle_training_line(env, prices), serving, *infrastructure_lines(env)]


def full_scale(env: Deployment, prices: PriceBook) -> list[Line]:
    training = env.training
    train_price = prices.ec2(training.instance_type)
    plan = env.serving.plan
    name, serving_price = _serving_price(env, plan, prices)
    cb = (
        " (Capacity Block: the block fee replaces this on-demand rate)"
        if training.capacity.kind == "capacity-block"
        else ""
    )
    return [
        Line(
            "training nodes (max_nodes)",
            f"{training.max_nodes} x {training.instance_type}",
            _times(training.max_nodes, train_price),
            _price_basis(training.instance_type, train_price) + cb,
        ),
        Line(
            "serving instances (max_capacity)",
            f"{env.serving.max_capacity} x {name}",
            _times(env.serving.max_capacity, serving_price),
            _price_basis(name, serving_price),
        ),
        *infrastructure_lines(env),
    ]


def training_comparison(env: Deployment, prices: PriceBook) -> list[dict[str, Any]]:
    """The max_nodes Trainium cluster against GPU clusters, per cluster-hour, on two bases."""
    trn = catalog.get_instance(env.training.instance_type)
    nodes = env.training.max_nodes
    trn_price = prices.ec2(trn.name)
    trn_hourly = _times(nodes, trn_price)
    hbm = nodes * trn.hbm_gib
    rows = [
        {
            "instance_type": trn.name,
            "basis": "configured cluster",
            "nodes": nodes,
            "accelerator_memory_gib": hbm,
            "usd_per_hour": _round(trn_hourly),
            "relative_to_neuron": 1.0 if trn_hourly else None,
        }
    ]
    for name in GPU_TRAINING_COMPARATORS:
        gpu = catalog.GPU_INSTANCES[name]
        price = prices.ec2(name)
        for basis, count in (
            ("same node count", nodes),
            ("same accelerator memory", math.ceil(hbm / gpu.total_gpu_memory_gib)),
        ):
            hourly = _times(count, price)
            rows.append(
                {
                    "instance_type": name,
                    "basis": basis,
                    "nodes": count,
                    "accelerator_memory_gib": round(count * gpu.total_gpu_memory_gib),
                    "usd_per_hour": _round(hourly),
                    "relative_to_neuron": round(hourly / trn_hourly, 3) if hourly and trn_hourly else None,
                }
            )
    return rows


def _gpu_fit(total_gib: float, gpu: catalog.GpuInstance) -> int | None:
    """Smallest TP (GPUs per replica) that holds the model with the planner's headroom."""
    usable = gpu.gpu_memory_gib * (1 - DEFAULT_HEADROOM)
    return next((tp for tp in _GPU_TP if tp <= gpu.gpus and total_gib / tp <= usable), None)


def serving_comparison(env: Deployment, prices: PriceBook) -> list[dict[str, Any]]:
    """The serving fleet at max_capacity against the cheapest-per-replica GPU instance of each family."""
    plan = env.serving.plan
    total_gib = plan.weights_gib + plan.kv_cache_gib
    replicas = env.serving.max_capacity * plan.replicas_per_instance
    # The comparison is EC2 against EC2, also for the SageMaker backend (whose ml.* premium is in the totals).
    neuron_price = prices.ec2(plan.instance_type)
    neuron_hourly = _times(env.serving.max_capacity, neuron_price)
    rows = [
        {
            "family": plan.instance_type.split(".")[0],
            "instance_type": plan.instance_type,
            "tensor_parallel": plan.tensor_parallel,
            "replicas_per_instance": plan.replicas_per_instance,
            "usd_per_replica_hour": _round(
                None if neuron_price is None else neuron_price.usd_per_hour / plan.replicas_per_instance
            ),
            "instances_for_fleet": env.serving.max_capacity,
            "usd_per_hour": _round(neuron_hourly),
            "relative_to_neuron": 1.0 if neuron_hourly else None,
        }
    ]
    for family in GPU_SERVING_FAMILIES:
        options = []
        for gpu in catalog.GPU_INSTANCES.values():
            price = prices.ec2(gpu.name)
            tp = _gpu_fit(total_gib, gpu)
            if gpu.name.split(".")[0] != family or tp is None or price is None:
                continue
            per_instance = gpu.gpus // tp
            options.append((price.usd_per_hour / per_instance, gpu, tp, per_instance, price))
        if not options:
            rows.append(
                {
                    "family": family,
                    "instance_type": None,  # no instance of the family holds the model
                    "tensor_parallel": None,
                    "replicas_per_instance": None,
                    "usd_per_replica_hour": None,
                    "instances_for_fleet": None,
                    "usd_per_hour": None,
                    "relative_to_neuron": None,
                }
            )
            continue
        per_replica, gpu, tp, per_instance, price = min(options, key=lambda o: o[0])
        count = math.ceil(replicas / per_instance)
        hourly = count * price.usd_per_hour
        rows.append(
            {
                "family": family,
                "instance_type": gpu.name,
                "tensor_parallel": tp,
                "replicas_per_instance": per_instance,
                "usd_per_replica_hour": _round(per_replica),
                "instances_for_fleet": count,
                "usd_per_hour": _round(hourly),
                "relative_to_neuron": round(hourly / neuron_hourly, 3) if neuron_hourly else None,
            }
        )
    return rows


def _sagemaker_prices_date() -> str:
    return ", ".join(sorted({catalog.SOURCES[p.source].date for p in catalog.SAGEMAKER_PRICES.values()}))


def assumptions(env: Deployment, prices: PriceBook) -> list[str]:
    plan = env.serving.plan
    services, azs = interface_endpoints(env)
    out = [
        f"Monthly = hourly x {HOURS_PER_MONTH} h. On-demand Linux prices dated {prices.date}"
        + (" (live from the AWS Price List API for EC2 types)" if prices.live else " (catalog table)")
        + f"; SageMaker ml.* prices from a table dated {_sagemaker_prices_date()}.",
        (
            f"Interface endpoints: {', '.join(services)} in {azs} AZ(s)."
            if services
            else "No interface endpoints: the NAT carries every AWS API call; S3 still goes through the free "
            "gateway endpoint."
        ),
        f"EFS holds {KEPT_CHECKPOINTS} checkpoints; S3 holds a {COMPILE_CACHE_GB} GB compile cache. Excluded: data "
        "transfer, NAT/endpoint data processing, load balancer LCUs, EFS throughput charges, EBS root volumes, "
        "CloudWatch Logs and custom metrics, backups.",
        "Training GPU comparison: price per cluster-hour only, assuming equal wall-clock time on either basis "
        "(same node count; enough GPU memory to hold what the Trainium cluster's HBM holds). Throughput is "
        "not modelled: measure your model before deciding.",
        f"Serving GPU comparison: the same model ({plan.weights_gib + plan.kv_cache_gib:.1f} GiB of weights and "
        f"KV cache) with the planner's {DEFAULT_HEADROOM:.0%} memory headroom per device; equal throughput per "
        "replica assumed, not measured. EC2 prices on both sides.",
    ]
    if env.serving.warm_pool:
        out.append("Warm pool instances are stopped: only their EBS volumes bill; not included.")
    regions = {p.region for p in (prices.ec2(env.training.instance_type),) if p is not None}
    if not prices.live and regions and env.region not in regions | catalog.SAME_PRICE_REGIONS:
        out.append(
            f"The table prices are for {', '.join(sorted(regions))}; {env.region} prices differ "
            "(inf2 in eu-west-1 is about 25% higher): use --live-prices."
        )
    return out


def ec2_types(env: Deployment) -> set[str]:
    """Every EC2 instance type the estimate prices (for ``--live-prices``)."""
    return {env.training.instance_type, env.serving.resolved_instance_type, *catalog.GPU_INSTANCES}


def _claims_for(env: Deployment) -> list[dict[str, str]]:
    chip = catalog.get_instance(env.training.instance_type).chip
    families = {"trn2" if chip == "trainium2" else "trn1", "inf2"}
    return [
        {"claim": c.claim, "source": c.source, "status": c.status} for c in CLAIMS if c.applies_to in families
    ]


def build(envs: Sequence[Deployment], prices_by_env: dict[str, PriceBook] | None = None) -> dict[str, Any]:
    books = prices_by_env or {}
    environments = []
    for env in envs:
        prices = books.get(env.name, PriceBook())
        environments.append(
            {
                "name": env.name,
                "region": env.region,
                "prices_date": prices.date,
                "idle": _total(idle(env, prices)),
                "full_scale": _total(full_scale(env, prices)),
                "gpu_comparison": {
                    "training": training_comparison(env, prices),
                    "serving": serving_comparison(env, prices),
                },
                "assumptions": assumptions(env, prices),
                "claims": _claims_for(env),
            }
        )
    return document(
        "cost",
        prices_date=catalog.PRICES_DATE,
        prices_note=catalog.PRICES_NOTE,
        refresh=REFRESH_INSTRUCTION,
        hours_per_month=HOURS_PER_MONTH,
        environments=environments,
    )


def _lines_table(title: str, section: dict[str, Any]) -> Any:
    rows = [
        (line["item"], line["quantity"], usd(line["usd_per_hour"]), usd(line["usd_per_month"]), line["basis"])
        for line in section["lines"]
    ]
    partial = "" if section["complete"] else " (incomplete: a price is missing)"
    running = section["usd_per_hour_excluding_stored_data"]
    rows.append(
        ("without stored data", "", usd(running), usd(running * HOURS_PER_MONTH), "EFS and S3 excluded")
    )
    rows.append(("total" + partial, "", usd(section["usd_per_hour"]), usd(section["usd_per_month"]), ""))
    return table(title, ("item", "quantity", "$/hour", "$/month", "basis"), rows)


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def render(doc: dict[str, Any], out: Console) -> None:
    for env in doc["environments"]:
        name = f"{env['name']} ({env['region']})"
        out.print(_lines_table(f"{name}: idle (minimum capacity)", env["idle"]))
        out.print(_lines_table(f"{name}: full scale (max nodes, max fleet)", env["full_scale"]))
        comparison = env["gpu_comparison"]
        out.print(
            table(
                f"{name}: training cluster vs GPU clusters (per cluster-hour)",
                ("instance", "basis", "nodes", "accelerator memory", "$/hour", "vs Neuron"),
                (
                    (r["instance_type"], r["basis"], r["nodes"], f"{r['accelerator_memory_gib']:,} GiB",
                     usd(r["usd_per_hour"]), _ratio(r["relative_to_neuron"]))
                    for r in comparison["training"]
                ),
            )
        )  # fmt: skip
        out.print(
            table(
                f"{name}: serving fleet at max capacity vs GPU instances",
                ("instance", "TP", "replicas/instance", "$/replica-hour", "instances", "$/hour", "vs Neuron"),
                (
                    (r["instance_type"] or f"{r['family']}: none fits", r["tensor_parallel"],
                     r["replicas_per_instance"], usd(r["usd_per_replica_hour"]), r["instances_for_fleet"],
                     usd(r["usd_per_hour"]), _ratio(r["relative_to_neuron"]))
                    for r in comparison["serving"]
                ),
            )
        )  # fmt: skip
        notes(out, "Assumptions", env["assumptions"])
        notes(
            out,
            "Claims (not used in the arithmetic above)",
            (f'CLAIM "{c["claim"]}" - source: {c["source"]} - {c["status"]}' for c in env["claims"]),
        )
        out.print()
    out.print(f"Price table dated {doc['prices_date']}. {doc['refresh']}")
