"""``cdk-neuron cost``: hourly and monthly cost at idle and at full scale, and a GPU comparison.

Offline, from the catalog's dated price tables (``--live-prices`` asks the AWS Price List API for
every line, in the environment's Region, instead). Every figure is an estimate: the assumptions
are part of the output, vendor claims are labelled as claims with their source, the price table's
date is printed with the instruction to refresh it, and every line that applies a us-east-1 table
price to another Region says so.

The default view is a one-screen summary across environments; ``--details`` adds every line, the
GPU comparison, the assumptions and the claims.
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdk_neuron import catalog
from cdk_neuron.checkpoint_advisor import estimate_checkpoint
from cdk_neuron.cli import artifact_cache, assembly, result_costs
from cdk_neuron.cli.command import Command, environment_options, in_region, selected
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Column, ColumnKind, Report, usd
from cdk_neuron.cli.plan import omitted, serving_data_volume
from cdk_neuron.cli.pricing import PRICING_API_REGION, SERVICE_QUERIES, PriceBook, live_price_book, regional
from cdk_neuron.cli.result import NOT_IN_JSON, Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import (
    CheckpointSizing,
    Deployment,
    HyperPodLocation,
    ServingDeployment,
    TrainingDeployment,
)
from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.planner import DEFAULT_HEADROOM, ServingPlan
from cdk_neuron.serving import start_paths

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
    applies_to: str = field(metadata=NOT_IN_JSON)  # "trn1", "trn2", "inf2"


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
    price_region: str | None = None
    """The Region of the price used (None when nothing is priced)."""
    other_region: bool = False
    """The price is a table price for another Region than the environment's."""

    @property
    def hourly(self) -> float | None:
        """Dollars per hour as printed (4 decimals)."""
        return _round(self.usd_per_hour)

    @property
    def monthly(self) -> float | None:
        """Dollars per month as printed (4 decimals)."""
        return _round(None if self.usd_per_hour is None else self.usd_per_hour * HOURS_PER_MONTH)

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "stored_data": self.stored_data,
            "quantity": self.quantity,
            "usd_per_hour": self.hourly,
            "usd_per_month": self.monthly,
            "basis": self.basis,
            "price_region": self.price_region,
            "other_region": self.other_region,
        }


@dataclass(frozen=True)
class CostSection:
    """Every line of one scale (idle or full), and their totals."""

    lines: list[Line]
    usd_per_hour_excluding_stored_data: float
    usd_per_hour: float
    usd_per_month: float
    complete: bool
    """Every line is priced (else the totals are lower bounds)."""


@dataclass(frozen=True)
class TrainingComparison:
    instance_type: str
    basis: str
    nodes: int
    accelerator_memory_gib: float
    usd_per_hour: float | None
    relative_to_neuron: float | None


@dataclass(frozen=True)
class ServingComparison:
    family: str
    instance_type: str | None
    """None when no instance of the family holds the model."""
    tensor_parallel: int | None
    replicas_per_instance: int | None
    usd_per_replica_hour: float | None
    instances_for_fleet: int | None
    usd_per_hour: float | None
    relative_to_neuron: float | None


@dataclass(frozen=True)
class GpuComparison:
    training: list[TrainingComparison]
    serving: list[ServingComparison]


@dataclass(frozen=True)
class EnvironmentCost:
    name: str
    region: str
    prices_date: str
    idle: CostSection
    full_scale: CostSection
    gpu_comparison: GpuComparison
    result_costs: result_costs.ResultCosts
    """What a training run and a million generated tokens cost (docs/cost-of-a-result.md)."""
    omitted: list[str]
    assumptions: list[str]
    claims: list[Claim]


@dataclass(frozen=True)
class CostSummary:
    """One environment's row of the summary table."""

    name: str
    region: str
    idle_usd_per_hour: float
    idle_usd_per_month: float
    full_scale_usd_per_hour: float
    full_scale_usd_per_month: float
    complete: bool
    prices: str
    """``live`` (Price List API) or ``table``."""
    other_region_lines: list[str]
    omitted: list[str]


@dataclass(frozen=True)
class CostResult(Result):
    """``cdk-neuron cost``: a summary row and every line per environment."""

    command = "cost"
    prices_date: str
    prices_note: str
    refresh: str
    hours_per_month: int
    summary: list[CostSummary]
    environments: list[EnvironmentCost]


def _priced(
    env: Deployment,
    item: str,
    quantity: str,
    usd_per_hour: float | None,
    basis: str,
    prices: Sequence[catalog.Price | None],
    *,
    stored_data: bool = False,
) -> Line:
    """A line priced from ``prices``; one priced for another Region says so first in its basis."""
    known = [p for p in prices if p is not None]
    elsewhere = sorted({p.region for p in known if not regional(p, env.region)})
    if elsewhere:
        basis = f"{' and '.join(elsewhere)} price applied to {env.region}; {basis}"
    return Line(
        item,
        quantity,
        usd_per_hour,
        basis,
        stored_data=stored_data,
        price_region=known[0].region if known else None,
        other_region=bool(elsewhere),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _times(count: int, price: catalog.Price | None) -> float | None:
    return None if price is None else count * price.usd_per_hour


def _price_basis(name: str, price: catalog.Price | None) -> str:
    if price is None:
        reason = catalog.UNPRICED.get(name)
        if reason is not None:
            return f"unknown: {reason} (looked {catalog.UNKNOWN_LOOKED}); UltraServer Capacity Blocks are quoted at purchase"
        return f"no price on record for {name}"
    note = f"; {price.note}" if price.note else ""
    return f"${price.usd_per_hour:,.4f}/h {name} ({price.source}, {price.region}{note})"


def _service_price(prices: PriceBook, key: str) -> catalog.Price:
    price = prices.service(key)
    assert price is not None, key  # every key the lines use has a table price
    return price


def _total(lines: Sequence[Line]) -> CostSection:
    known = [line.usd_per_hour for line in lines if line.usd_per_hour is not None]
    hourly = sum(known)
    running = sum(line.usd_per_hour or 0.0 for line in lines if not line.stored_data)
    return CostSection(
        lines=list(lines),
        usd_per_hour_excluding_stored_data=round(running, 4),
        usd_per_hour=round(hourly, 4),
        usd_per_month=round(hourly * HOURS_PER_MONTH, 2),
        complete=len(known) == len(lines),
    )


def _serving_price(
    serving: ServingDeployment, plan: ServingPlan, prices: PriceBook
) -> tuple[str, catalog.Price | None]:
    sagemaker = serving.backend == "sagemaker"
    name = f"ml.{plan.instance_type}" if sagemaker else plan.instance_type
    return name, prices.instance(plan.instance_type, sagemaker=sagemaker)


def _rate(price: catalog.Price, unit: str) -> str:
    """A service price as the basis column shows it, with its note (``$0.045/h, ...``)."""
    note = f", {price.note}" if price.note else ""
    return f"${price.usd_per_hour:g}/{unit} ({price.source}, {price.region}{note})"


def _nat_lines(env: Deployment, prices: PriceBook) -> list[Line]:
    network = env.network
    nat = network.nat_gateways
    if network.nat_instance_type is None:
        gateway = _service_price(prices, "nat_gateway_hour")
        device = _priced(
            env,
            "NAT gateways",
            str(nat),
            nat * gateway.usd_per_hour,
            _rate(gateway, "h each") + "; data processed not included",
            [gateway] if nat else [],
        )
    else:
        name = network.nat_instance_type
        price = prices.live.get(name) or catalog.NAT_INSTANCE_PRICES.get(name)
        device = _priced(
            env,
            "NAT instances",
            f"{nat} x {name}",
            _times(nat, price),
            _price_basis(name, price) + "; no per-GB processing charge",
            [price] if nat else [],
        )
    address = _service_price(prices, "public_ipv4_hour")
    addresses = _priced(
        env,
        "public IPv4 addresses",
        f"{nat} (one per NAT)",
        nat * address.usd_per_hour,
        _rate(address, "h each"),
        [address] if nat else [],
    )
    return [device, addresses]


def infrastructure_lines(env: Deployment, prices: PriceBook | None = None) -> list[Line]:
    """What bills whether or not any accelerator runs."""
    prices = prices or PriceBook()
    services, azs = interface_endpoints(env)
    standing = env.standing
    alarms = standing.alarms
    endpoint = _service_price(prices, "interface_endpoint_az_hour")
    kms = _service_price(prices, "kms_key_month")
    alarm = _service_price(prices, "alarm_month")
    dashboard = _service_price(prices, "dashboard_month")
    lines = [
        *_nat_lines(env, prices),
        _priced(
            env,
            "interface VPC endpoints",
            f"{len(services)} x {azs} AZ" if services else "none",
            len(services) * azs * endpoint.usd_per_hour,
            _rate(endpoint, "h per endpoint per AZ") + "; data processed not included",
            [endpoint] if services else [],
        ),
        _priced(
            env,
            "KMS keys",
            str(len(standing.kms_keys)),
            len(standing.kms_keys) * kms.usd_per_hour / HOURS_PER_MONTH,
            _rate(kms, "key-month") + f": {', '.join(standing.kms_keys)}",
            [kms] if standing.kms_keys else [],
        ),
        _priced(
            env,
            "CloudWatch alarms and dashboard",
            f"{alarms} alarms, {standing.dashboards} dashboard" + ("s" if standing.dashboards != 1 else ""),
            (alarms * alarm.usd_per_hour + standing.dashboards * dashboard.usd_per_hour) / HOURS_PER_MONTH,
            _rate(alarm, "alarm-month")
            + "; "
            + _rate(dashboard, "dashboard-month")
            + "; free-tier allowances not deducted",
            [alarm, dashboard],
        ),
    ]
    if standing.log_groups or standing.flow_logs:
        lines.append(
            Line(
                "CloudWatch Logs groups and VPC flow logs",
                f"{standing.log_groups} log group{'s' if standing.log_groups != 1 else ''}, "
                f"{standing.flow_logs} flow log{'s' if standing.flow_logs != 1 else ''}",
                0.0,
                "not priced: billed per GB ingested and stored, which the templates do not say",
            )
        )
    if standing.load_balancers:
        count = standing.load_balancers
        alb = _service_price(prices, "alb_hour")
        lines.append(
            _priced(
                env, "application load balancer", str(count), count * alb.usd_per_hour, _rate(alb, "h"), [alb]
            )
        )
    ckpt = _checkpoint(env)
    if ckpt is None:
        if env.training is not None:
            lines.append(
                Line(
                    "EFS checkpoints",
                    "unknown",
                    0.0,
                    "no checkpoint model size (training.checkpoint, or the checkpoint store's "
                    "model_parameters): storage not estimated",
                    stored_data=True,
                )
            )
    else:
        size_gb = estimate_checkpoint(
            ckpt.model_parameters,
            writers=ckpt.writers,
            region=env.region,
            master_weights_in_checkpoint=ckpt.master_weights_in_checkpoint,
        ).size_gb
        stored = size_gb * KEPT_CHECKPOINTS
        efs = _service_price(prices, "efs_standard_gb_month")
        one_zone = ""
        if env.storage.one_zone:
            live_one_zone = prices.live_services.get("efs_one_zone_gb_month")
            if live_one_zone is not None:
                efs, one_zone = live_one_zone, "; One Zone"
            else:
                # The table's EFS source (SVC-EFS) gives no One Zone price: the Standard rate is an upper bound.
                one_zone = "; One Zone priced at the Standard rate (no One Zone price on record)"
        lines.append(
            _priced(
                env,
                "EFS checkpoints",
                f"{stored:,.0f} GB",
                stored * efs.usd_per_hour / HOURS_PER_MONTH,
                f"{KEPT_CHECKPOINTS} checkpoints of {size_gb:,.0f} GB at "
                + _rate(efs, "GB-month")
                + one_zone,
                [efs],
                stored_data=True,
            )
        )
    if env.training is None:
        return lines  # the compile cache is the training cluster's
    s3 = _service_price(prices, "s3_standard_gb_month")
    lines.append(
        _priced(
            env,
            "S3 compile cache",
            f"{COMPILE_CACHE_GB} GB",
            COMPILE_CACHE_GB * s3.usd_per_hour / HOURS_PER_MONTH,
            _rate(s3, "GB-month"),
            [s3],
            stored_data=True,
        )
    )
    return lines


def _checkpoint(env: Deployment) -> CheckpointSizing | None:
    return env.training.checkpoint if env.training is not None else None


HYPERPOD_PRICING = "the SageMaker pricing page, HyperPod tab (https://aws.amazon.com/sagemaker/pricing/)"


def _controller_type(training: TrainingDeployment) -> str:
    return (training.hyperpod or HyperPodLocation()).controller_instance_type


def _hyperpod_standing_line(env: Deployment, prices: PriceBook) -> Line:
    """HyperPod's standing cost: the controller and the running workers, every hour the cluster exists.

    HyperPod bills its own per-instance-hour rates, not EC2's, and no table holds them: the line is
    priced with ``--live-prices`` when the Price List answers for both types, and says so otherwise.
    """
    training = env.training
    assert training is not None
    workers = training.max_nodes if training.worker_count is None else training.worker_count
    controller = _controller_type(training)
    worker_type = f"ml.{training.instance_type}"
    plan = training.capacity.kind == "training-plan"
    paid = (
        "the workers draw on the training plan, whose fee is paid up front at purchase (its offering's "
        "UpfrontFee), so only the controller bills hourly here; "
        if plan
        else ""
    )
    controller_price = prices.hyperpod(controller)
    worker_price = None if plan or workers == 0 else prices.hyperpod(worker_type)
    quantity = f"1 x {controller} (controller) + {workers} x {worker_type}, always on"
    needed = [controller_price] + ([] if plan or workers == 0 else [worker_price])
    if all(p is not None for p in needed):
        assert controller_price is not None
        hourly = controller_price.usd_per_hour + (
            0.0 if worker_price is None else workers * worker_price.usd_per_hour
        )
        basis = f"{paid}HyperPod does not scale to zero: {_price_basis(controller, controller_price)}"
        if worker_price is not None:
            basis += f" + {workers} x {_price_basis(worker_type, worker_price)}"
        return _priced(env, "HyperPod cluster (standing)", quantity, hourly, basis, needed)
    missing = [controller] if controller_price is None else []
    if worker_price is None and not (plan or workers == 0):
        missing.append(worker_type)
    return Line(
        "HyperPod cluster (standing)",
        quantity,
        None,
        "not priced: HyperPod does not scale to zero; it bills every node per instance-hour while the "
        f"cluster exists (cdk-neuron scale --workers 0 between runs; the controller bills still). {paid}"
        "HyperPod's rates are not EC2's and no table holds them: "
        + (
            f"the Price List API gave no HyperPod price for {', '.join(missing)}"
            if prices.is_live
            else "run with --live-prices"
        )
        + f", or see {HYPERPOD_PRICING}",
    )


def _idle_training_line(env: Deployment, prices: PriceBook) -> Line | None:
    training = env.training
    if training is None:
        return None
    price = prices.ec2(training.instance_type)
    kind = training.capacity.kind
    if training.engine == "hyperpod":
        return _hyperpod_standing_line(env, prices)
    if kind in ("reservation", "reservation-group"):
        return _priced(
            env,
            "training capacity reservation",
            f"{training.max_nodes} x {training.instance_type}",
            _times(training.max_nodes, price),
            "a capacity reservation bills every reserved instance, used or not; assumed to reserve max_nodes. "
            + _price_basis(training.instance_type, price),
            [price],
        )
    if kind in ("capacity-block", "ultraserver-capacity-block"):
        return Line(
            "training UltraServer Capacity Block"
            if kind == "ultraserver-capacity-block"
            else "training Capacity Block",
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


def instance_price_line(instance_type: str, count: int, prices: PriceBook | None = None) -> Line:
    """``count`` instances of ``instance_type`` at the dated (or live) On-Demand price, or "unknown"
    where no source publishes one (Trn3 servers, trn2u.48xlarge: ``catalog.UNPRICED``)."""
    book = prices or PriceBook()
    price = book.ec2(instance_type)
    return Line(
        "instances",
        f"{count} x {instance_type}",
        _times(count, price),
        _price_basis(instance_type, price),
        price_region=price.region if price else None,
    )


def idle(env: Deployment, prices: PriceBook) -> list[Line]:
    lines = []
    training = _idle_training_line(env, prices)
    if training is not None:
        lines.append(training)
    serving = env.serving
    if serving is not None:
        name, price = _serving_price(serving, serving.plan, prices)
        lines.append(
            _priced(
                env,
                "serving instances (minimum)",
                f"{serving.min_capacity} x {name}",
                _times(serving.min_capacity, price),
                _price_basis(name, price),
                [price] if serving.min_capacity else [],
            )
        )
    return [
        *lines,
        *_serving_volume_lines(env, in_service=serving.min_capacity if serving else 0),
        *infrastructure_lines(env, prices),
    ]


_EBS_BASIS = (
    "gp3 $0.08/GB-month, $0.005/IOPS-month above 3,000, $0.040/MB/s-month above 125 (Amazon EBS pricing, "
    "https://aws.amazon.com/ebs/pricing/, US East and US West; table price, not --live-prices)"
)


def _serving_volume_lines(env: Deployment, *, in_service: int) -> list[Line]:
    """An EC2 fleet's data volumes (``in_service`` instances) and, with a warm pool, its stopped
    instances' volumes (the pool at that capacity holds max - in_service, or min + warm_pool_size -
    in_service: PutWarmPool), which bill while they wait (``start_paths.standing_cost``)."""
    serving = env.serving
    if serving is None or serving.backend != "ec2":
        return []
    volume = serving_data_volume(serving)
    monthly = volume.usd_per_month
    lines = [
        Line(
            "serving data volumes",
            f"{in_service} x {volume.size_gib} GiB gp3",
            in_service * monthly / HOURS_PER_MONTH,
            f"{volume.throughput_mibps} MiB/s, {volume.iops:,} IOPS: ${monthly:,.2f}/volume-month; {_EBS_BASIS}",
        )
    ]
    if serving.warm_pool:
        sized = start_paths.max_group_prepared_capacity(
            serving.warm_pool_size, min_capacity=serving.min_capacity
        )
        pool = start_paths.standing_cost(
            min_capacity=in_service,
            max_capacity=serving.max_capacity,
            data_volume_gib=volume.size_gib,
            throughput_mibps=volume.throughput_mibps,
            iops=volume.iops,
            warm_pool_size=None if sized is None else max(0, sized - in_service),
        )
        lines.append(
            Line(
                "warm pool (stopped instances)",
                f"{pool.instances} stopped",
                pool.usd_per_month / HOURS_PER_MONTH,
                f"their volumes only: data volume and {start_paths.ROOT_VOLUME_GIB} GiB root, "
                f"${pool.usd_per_instance_month:,.2f}/instance-month; {_EBS_BASIS}",
            )
        )
    return lines


def _hyperpod_full_line(env: Deployment, prices: PriceBook) -> Line:
    """Every HyperPod worker ``scale`` may start (max_nodes), at HyperPod's rate (the controller is in
    the standing line)."""
    training = env.training
    assert training is not None
    name = f"ml.{training.instance_type}"
    quantity = f"{training.max_nodes} x {name}"
    if training.capacity.kind == "training-plan":
        return Line(
            "training nodes (max_nodes)",
            quantity,
            0.0,
            "prepaid: the training plan's fee is paid up front at purchase (its offering's UpfrontFee)",
        )
    price = prices.hyperpod(name)
    if price is None:
        return Line(
            "training nodes (max_nodes)",
            quantity,
            None,
            "not priced: HyperPod's rates are not EC2's and no table holds them; "
            + ("the Price List API gave none for it" if prices.is_live else "run with --live-prices")
            + f", or see {HYPERPOD_PRICING}",
        )
    return _priced(
        env,
        "training nodes (max_nodes)",
        quantity,
        _times(training.max_nodes, price),
        _price_basis(name, price),
        [price],
    )


def full_scale(env: Deployment, prices: PriceBook) -> list[Line]:
    lines = []
    training = env.training
    if training is not None and training.engine == "hyperpod":
        lines.append(_hyperpod_full_line(env, prices))
    elif training is not None:
        train_price = prices.ec2(training.instance_type)
        cb = (
            " (Capacity Block: the block fee replaces this on-demand rate)"
            if training.capacity.is_capacity_block
            else ""
        )
        lines.append(
            _priced(
                env,
                "training nodes (max_nodes)",
                f"{training.max_nodes} x {training.instance_type}",
                _times(training.max_nodes, train_price),
                _price_basis(training.instance_type, train_price) + cb,
                [train_price],
            )
        )
    serving = env.serving
    if serving is not None:
        name, serving_price = _serving_price(serving, serving.plan, prices)
        lines.append(
            _priced(
                env,
                "serving instances (max_capacity)",
                f"{serving.max_capacity} x {name}",
                _times(serving.max_capacity, serving_price),
                _price_basis(name, serving_price),
                [serving_price],
            )
        )
    in_service = serving.max_capacity if serving else 0
    return [*lines, *_serving_volume_lines(env, in_service=in_service), *infrastructure_lines(env, prices)]


def training_comparison(env: Deployment, prices: PriceBook) -> list[TrainingComparison]:
    """The max_nodes Trainium cluster against GPU clusters, per cluster-hour, on two bases."""
    if env.training is None:
        return []
    trn = catalog.get_instance(env.training.instance_type)
    nodes = env.training.max_nodes
    trn_price = prices.ec2(trn.name)
    trn_hourly = _times(nodes, trn_price)
    hbm = nodes * trn.hbm_gib
    rows = [
        TrainingComparison(
            instance_type=trn.name,
            # HyperPod bills its own rate; the comparison stays EC2 against EC2, and says so.
            basis="configured cluster"
            + (" (EC2 rates; HyperPod bills its own)" if env.training.engine == "hyperpod" else ""),
            nodes=nodes,
            accelerator_memory_gib=hbm,
            usd_per_hour=_round(trn_hourly),
            relative_to_neuron=1.0 if trn_hourly else None,
        )
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
                TrainingComparison(
                    instance_type=name,
                    basis=basis,
                    nodes=count,
                    accelerator_memory_gib=round(count * gpu.total_gpu_memory_gib),
                    usd_per_hour=_round(hourly),
                    relative_to_neuron=round(hourly / trn_hourly, 3) if hourly and trn_hourly else None,
                )
            )
    return rows


def _gpu_fit(total_gib: float, gpu: catalog.GpuInstance) -> int | None:
    """Smallest TP (GPUs per replica) that holds the model with the planner's headroom."""
    usable = gpu.gpu_memory_gib * (1 - DEFAULT_HEADROOM)
    return next((tp for tp in _GPU_TP if tp <= gpu.gpus and total_gib / tp <= usable), None)


def serving_comparison(env: Deployment, prices: PriceBook) -> list[ServingComparison]:
    """The serving fleet at max_capacity against the cheapest-per-replica GPU instance of each family."""
    serving = env.serving
    if serving is None:
        return []
    plan = serving.plan
    total_gib = plan.weights_gib + plan.kv_cache_gib
    replicas = serving.max_capacity * plan.replicas_per_instance
    # The comparison is EC2 against EC2, also for the SageMaker backend (whose ml.* premium is in the totals).
    neuron_price = prices.ec2(plan.instance_type)
    neuron_hourly = _times(serving.max_capacity, neuron_price)
    rows = [
        ServingComparison(
            family=plan.instance_type.split(".")[0],
            instance_type=plan.instance_type,
            tensor_parallel=plan.tensor_parallel,
            replicas_per_instance=plan.replicas_per_instance,
            usd_per_replica_hour=_round(
                None if neuron_price is None else neuron_price.usd_per_hour / plan.replicas_per_instance
            ),
            instances_for_fleet=serving.max_capacity,
            usd_per_hour=_round(neuron_hourly),
            relative_to_neuron=1.0 if neuron_hourly else None,
        )
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
            rows.append(ServingComparison(family, None, None, None, None, None, None, None))
            continue
        per_replica, gpu, tp, per_instance, price = min(options, key=lambda o: o[0])
        count = math.ceil(replicas / per_instance)
        hourly = count * price.usd_per_hour
        rows.append(
            ServingComparison(
                family=family,
                instance_type=gpu.name,
                tensor_parallel=tp,
                replicas_per_instance=per_instance,
                usd_per_replica_hour=_round(per_replica),
                instances_for_fleet=count,
                usd_per_hour=_round(hourly),
                relative_to_neuron=round(hourly / neuron_hourly, 3) if neuron_hourly else None,
            )
        )
    return rows


def _sagemaker_prices_date() -> str:
    return ", ".join(sorted({catalog.SOURCES[p.source].date for p in catalog.SAGEMAKER_PRICES.values()}))


def _price_origin(env: Deployment, prices: PriceBook) -> str:
    if prices.is_live:
        return (
            f"Prices from the AWS Price List API for {env.region}, retrieved {prices.date}; a line the API "
            "did not price keeps the table's price and names its source."
        )
    sagemaker = (
        f"; SageMaker ml.* prices from a table dated {_sagemaker_prices_date()}"
        if env.serving is not None and env.serving.backend == "sagemaker"
        else ""
    )
    return f"On-demand Linux prices from the catalog table dated {prices.date}{sagemaker}."


def assumptions(env: Deployment, prices: PriceBook) -> list[str]:
    services, azs = interface_endpoints(env)
    out = [
        f"Monthly = hourly x {HOURS_PER_MONTH} h. {_price_origin(env, prices)}",
        (
            f"Interface endpoints: {', '.join(services)} in {azs} AZ(s)."
            if services
            else "No interface endpoints: the NAT carries every AWS API call; S3 still goes through the free "
            "gateway endpoint."
        ),
        f"EFS holds {KEPT_CHECKPOINTS} checkpoints; S3 holds a {COMPILE_CACHE_GB} GB compile cache. Excluded: data "
        "transfer, NAT/endpoint data processing, load balancer LCUs, EFS throughput charges, EBS root volumes, "
        "CloudWatch Logs and custom metrics, backups.",
    ]
    if env.training is not None:
        out.append(
            "Training GPU comparison: price per cluster-hour only, assuming equal wall-clock time on either "
            "basis (same node count; enough GPU memory to hold what the Trainium cluster's HBM holds). "
            "Throughput is not modelled: measure your model before deciding."
        )
    if env.serving is not None:
        plan = env.serving.plan
        out.append(
            f"Serving GPU comparison: the same model ({plan.weights_gib + plan.kv_cache_gib:.1f} GiB of weights "
            f"and KV cache) with the planner's {DEFAULT_HEADROOM:.0%} memory headroom per device; equal "
            "throughput per replica assumed, not measured. EC2 prices on both sides."
        )
    if env.serving is not None and env.serving.warm_pool:
        out.append(
            "Warm pool instances are stopped: only their EBS volumes bill (included: 'warm pool'); each also "
            "runs for a cold start while the pool prepares it (not included)."
        )
    elsewhere = _other_region_items(env, prices)
    if elsewhere:
        out.append(
            f"{len(elsewhere)} line(s) apply us-east-1 table prices to {env.region}: {', '.join(elsewhere)}. "
            f"{env.region} prices can differ (inf2 in eu-west-1 is about 25% higher): use --live-prices."
        )
    return out


def _other_region_items(env: Deployment, prices: PriceBook) -> list[str]:
    items: list[str] = []
    for line in [*idle(env, prices), *full_scale(env, prices)]:
        if line.other_region and line.item not in items:
            items.append(line.item)
    return items


def ec2_types(env: Deployment) -> set[str]:
    """Every EC2 instance type the estimate prices (for ``--live-prices``)."""
    types = set(catalog.GPU_INSTANCES)
    if env.training is not None:
        types.add(env.training.instance_type)
    if env.serving is not None:
        types.add(env.serving.resolved_instance_type)
    if env.network.nat_instance_type is not None:
        types.add(env.network.nat_instance_type)
    return types


def hyperpod_types(env: Deployment) -> set[str]:
    """The SageMaker HyperPod types the estimate prices (for ``--live-prices``): the workers' and the controller's."""
    training = env.training
    if training is None or training.engine != "hyperpod":
        return set()
    return {f"ml.{training.instance_type}", _controller_type(training)}


def sagemaker_types(env: Deployment) -> set[str]:
    """The SageMaker hosting types the estimate prices (for ``--live-prices``)."""
    serving = env.serving
    return (
        {serving.resolved_instance_type} if serving is not None and serving.backend == "sagemaker" else set()
    )


def service_keys(env: Deployment) -> set[str]:
    """The service prices the estimate uses (for ``--live-prices``)."""
    keys = set(SERVICE_QUERIES)
    if not env.storage.one_zone:
        keys.discard("efs_one_zone_gb_month")
    if not env.standing.load_balancers:
        keys.discard("alb_hour")
    if env.network.nat_instance_type is not None or not env.network.nat_gateways:
        keys.discard("nat_gateway_hour")
    if not env.network.nat_gateways:
        keys.discard("public_ipv4_hour")
    if not env.network.interface_endpoints:
        keys.discard("interface_endpoint_az_hour")
    return keys


def _claims_for(env: Deployment) -> list[Claim]:
    families = set()
    if env.training is not None:
        chip = catalog.get_instance(env.training.instance_type).chip
        families.add("trn2" if chip == "trainium2" else "trn1")
    if env.serving is not None:
        families.add("inf2")
    return [c for c in CLAIMS if c.applies_to in families]


def _summary(
    env: Deployment, section_idle: CostSection, section_full: CostSection, prices: PriceBook
) -> CostSummary:
    return CostSummary(
        name=env.name,
        region=env.region,
        idle_usd_per_hour=section_idle.usd_per_hour,
        idle_usd_per_month=section_idle.usd_per_month,
        full_scale_usd_per_hour=section_full.usd_per_hour,
        full_scale_usd_per_month=section_full.usd_per_month,
        complete=section_idle.complete and section_full.complete,
        prices="live" if prices.is_live else "table",
        other_region_lines=_other_region_items(env, prices),
        omitted=omitted(env),
    )


def build(
    envs: Sequence[Deployment],
    prices_by_env: dict[str, PriceBook] | None = None,
    costs: Callable[[Deployment], result_costs.ResultCosts] = result_costs.result_costs,
) -> CostResult:
    """Every environment's cost; ``costs`` gives its costs of a result (default: published figures, a
    trillion training tokens)."""
    books = prices_by_env or {}
    environments = []
    summary = []
    for env in envs:
        prices = books.get(env.name, PriceBook())
        idle_section = _total(idle(env, prices))
        full_section = _total(full_scale(env, prices))
        summary.append(_summary(env, idle_section, full_section, prices))
        environments.append(
            EnvironmentCost(
                name=env.name,
                region=env.region,
                prices_date=prices.date,
                idle=idle_section,
                full_scale=full_section,
                gpu_comparison=GpuComparison(
                    training=training_comparison(env, prices), serving=serving_comparison(env, prices)
                ),
                result_costs=costs(env),
                omitted=omitted(env),
                assumptions=assumptions(env, prices),
                claims=_claims_for(env),
            )
        )
    return CostResult(
        prices_date=catalog.PRICES_DATE,
        prices_note=catalog.PRICES_NOTE,
        refresh=REFRESH_INSTRUCTION,
        hours_per_month=HOURS_PER_MONTH,
        summary=summary,
        environments=environments,
    )


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


_MONEY: ColumnKind = "id"  # amounts never wrap


def render_summary(result: CostResult, out: Report) -> None:
    rows = result.summary
    out.table(
        f"cost summary (USD, on-demand; month = {result.hours_per_month} h)",
        (
            Column("environment", "id"),
            Column("region", "id"),
            Column("idle / month", _MONEY),
            Column("full / hour", _MONEY),
            Column("full / month", _MONEY),
            Column("prices", "id"),
        ),
        (
            (r.name + ("" if r.complete else " *"), r.region, usd(r.idle_usd_per_month),
             usd(r.full_scale_usd_per_hour), usd(r.full_scale_usd_per_month), r.prices)
            for r in rows
        ),
    )  # fmt: skip
    notes = [
        "idle: minimum serving fleet, training scaled to zero (or reserved), network, keys, alarms and "
        "stored data; full: max_nodes training nodes and the max_capacity serving fleet, plus the same.",
    ]
    if any(not r.complete for r in rows):
        notes.append("* a price is missing: the total is a lower bound (see --details).")
    for r in rows:
        for part in r.omitted:
            notes.append(f"{r.name}: {part.split(':')[0]}: not priced")
        if r.other_region_lines:
            notes.append(
                f"{r.name}: {len(r.other_region_lines)} line(s) are us-east-1 prices applied to "
                f"{r.region} ({', '.join(r.other_region_lines)}); --live-prices prices them there."
            )
    if all(r.prices == "table" for r in rows):
        notes.append(
            f"Price table dated {result.prices_date}; SageMaker ml.* from {_sagemaker_prices_date()}."
        )
    out.notes("Notes", notes)
    _result_cost_table(result, out)


def _result_cost_table(result: CostResult, out: Report) -> None:
    """The cost of a result per environment, each beside the GPU configuration of the same model size."""
    envs = [e for e in result.environments if e.result_costs.training or e.result_costs.serving]
    if not envs:
        return
    tokens = envs[0].result_costs.training_tokens
    out.table(
        f"cost of a result (on-demand; training run = {tokens:,.4g} tokens; label in brackets)",
        (
            Column("environment", "id"),
            Column("training run", _MONEY),
            Column("GPU", _MONEY),
            Column("1M tokens served", _MONEY),
            Column("GPU", _MONEY),
        ),
        (
            (e.name, result_costs.short(c.training), result_costs.short(c.training_gpu),
             result_costs.short(c.serving), result_costs.short(c.serving_gpu))
            for e in envs
            for c in (e.result_costs,)
        ),
    )  # fmt: skip


def _lines_table(out: Report, title: str, section: CostSection) -> None:
    rows = [
        (line.item, line.quantity, usd(line.hourly), usd(line.monthly), line.basis) for line in section.lines
    ]
    partial = "" if section.complete else " (incomplete: a price is missing)"
    running = section.usd_per_hour_excluding_stored_data
    rows.append(
        ("without stored data", "", usd(running), usd(running * HOURS_PER_MONTH), "EFS and S3 excluded")
    )
    rows.append(("total" + partial, "", usd(section.usd_per_hour), usd(section.usd_per_month), ""))
    out.table(
        title,
        (
            Column("item"),
            Column("quantity"),
            Column("$/hour", _MONEY),
            Column("$/month", _MONEY),
            Column("basis"),
        ),
        rows,
    )


def render_details(env: EnvironmentCost, out: Report) -> None:
    name = f"{env.name} ({env.region})"
    _lines_table(out, f"{name}: idle (minimum capacity)", env.idle)
    _lines_table(out, f"{name}: full scale (max nodes, max fleet)", env.full_scale)
    comparison = env.gpu_comparison
    for part in env.omitted:
        out.line(f"{name}: {part.split(':')[0]}: its lines and GPU comparison are omitted")
    if comparison.training:
        out.table(
            f"{name}: training cluster vs GPU clusters (per cluster-hour)",
            (Column("instance", "id"), Column("basis"), Column("nodes", "id"), Column("accelerator memory"),
             Column("$/hour", _MONEY), Column("vs Neuron", "id")),
            (
                (r.instance_type, r.basis, r.nodes, f"{r.accelerator_memory_gib:,} GiB",
                 usd(r.usd_per_hour), _ratio(r.relative_to_neuron))
                for r in comparison.training
            ),
        )  # fmt: skip
    if comparison.serving:
        out.table(
            f"{name}: serving fleet at max capacity vs GPU instances",
            (Column("instance"), Column("TP", "id"), Column("replicas per instance"), Column("$ per replica-hour", _MONEY),
             Column("instances", "id"), Column("$/hour", _MONEY), Column("vs Neuron", "id")),
            (
                (r.instance_type or f"{r.family}: none fits", r.tensor_parallel,
                 r.replicas_per_instance, usd(r.usd_per_replica_hour), r.instances_for_fleet,
                 usd(r.usd_per_hour), _ratio(r.relative_to_neuron))
                for r in comparison.serving
            ),
        )  # fmt: skip
    result_costs.render(name, env.result_costs, out)
    out.notes("Assumptions", env.assumptions)
    out.notes(
        "Claims (not used in the arithmetic above)",
        (f'CLAIM "{c.claim}" - source: {c.source} - {c.status}' for c in env.claims),
    )
    out.blank()


def render(result: CostResult, *, details: bool = False) -> Report:
    out = Report()
    render_summary(result, out)
    if details:
        out.blank()
        for env in result.environments:
            render_details(env, out)
        out.line(f"Price table dated {result.prices_date}. {result.refresh}")
    else:
        names = [e.name for e in result.environments]
        out.commands(
            "Every line, the GPU comparison, assumptions and claims:",
            [
                f"cdk-neuron cost --details --env {names[0]}"
                if len(names) == 1
                else "cdk-neuron cost --details"
            ],
        )
    return out


# --------------------------------------------------------------------------------------------
# cost --diff OLD NEW: what a change adds per hour, in the manner of infracost
# --------------------------------------------------------------------------------------------

_SCALES = (("idle", "idle"), ("full_scale", "full scale"))


@dataclass(frozen=True)
class LineChange:
    """A line that changed between the two assemblies (by item)."""

    item: str
    old_quantity: str | None
    new_quantity: str | None
    old_usd_per_hour: float | None
    new_usd_per_hour: float | None
    change_usd_per_hour: float | None
    change_usd_per_month: float | None


@dataclass(frozen=True)
class Change:
    change_usd_per_hour: float
    change_usd_per_month: float

    @staticmethod
    def of(hourly: float) -> Change:
        return Change(round(hourly, 4), round(hourly * HOURS_PER_MONTH, 2))


@dataclass(frozen=True)
class ScaleChange:
    """One scale's (idle or full) changed lines and their total change."""

    lines: list[LineChange]
    change_usd_per_hour: float
    change_usd_per_month: float


@dataclass(frozen=True)
class EnvironmentChange:
    name: str
    region: str
    status: str
    """``changed`` or ``unchanged``; ``added`` or ``removed`` for the environment ``--env`` names when
    only one assembly has it; ``only-in-old`` or ``only-in-new`` for another environment only one
    assembly has (an assembly synthesized with fewer environments, e.g. ``-c env=dev``): not compared,
    and not in the total."""
    idle: ScaleChange
    full_scale: ScaleChange


@dataclass(frozen=True)
class ChangeTotal:
    idle: Change
    full_scale: Change


@dataclass(frozen=True)
class CostDiffResult(Result):
    """``cdk-neuron cost --diff OLD NEW``: per environment and line, what the change costs."""

    command = "cost-diff"
    prices_date: str
    hours_per_month: int
    environments: list[EnvironmentChange]
    total: ChangeTotal
    complete: bool
    summary: str


def signed(value: float | None) -> str:
    """A change in dollars with its sign: +$1.20, -$0.40, $0.00."""
    if value is None:
        return "n/a"
    return ("+" if value > 0 else "-" if value < 0 else "") + usd(abs(value))


def _line_changes(old: Sequence[Line], new: Sequence[Line]) -> tuple[list[LineChange], float, bool]:
    """Changed lines (by item), the hourly change, and whether every changed line was priced."""
    before = {line.item: line for line in old}
    after = {line.item: line for line in new}
    rows: list[LineChange] = []
    total, complete = 0.0, True
    for item in [*after, *(i for i in before if i not in after)]:
        was, now = before.get(item), after.get(item)
        old_hourly = None if was is None else was.usd_per_hour
        new_hourly = None if now is None else now.usd_per_hour
        if (was is None or old_hourly is not None) and (now is None or new_hourly is not None):
            change: float | None = (new_hourly or 0.0) - (old_hourly or 0.0)
        else:
            change, complete = None, False
        old_quantity = None if was is None else was.quantity
        new_quantity = None if now is None else now.quantity
        # Unchanged, or a line that comes or goes at no cost ("interface VPC endpoints: none").
        if change == 0 and (old_quantity == new_quantity or was is None or now is None):
            continue
        total += change or 0.0
        rows.append(
            LineChange(
                item=item,
                old_quantity=old_quantity,
                new_quantity=new_quantity,
                old_usd_per_hour=_round(old_hourly) if was is not None else None,
                new_usd_per_hour=_round(new_hourly) if now is not None else None,
                change_usd_per_hour=_round(change),
                change_usd_per_month=None if change is None else round(change * HOURS_PER_MONTH, 2),
            )
        )
    return rows, total, complete


def diff(old: Sequence[Deployment], new: Sequence[Deployment], *, named: str | None = None) -> CostDiffResult:
    """Per environment and line, the hourly and monthly change from ``old`` to ``new`` (table prices).

    An environment only one side has is compared (added or removed) only when it is the one ``named``
    (``--env``); any other is listed as in one assembly only, and left out of the total: an assembly
    synthesized with fewer environments does not remove the others.
    """
    prices = PriceBook()
    before = {env.name: env for env in old}
    after = {env.name: env for env in new}
    names = [*after, *(name for name in before if name not in after)]
    environments = []
    totals = {key: 0.0 for key, _ in _SCALES}
    complete = True
    for name in names:
        was, now = before.get(name), after.get(name)
        either = now if now is not None else before[name]
        if (was is None or now is None) and name != named:
            nothing = ScaleChange([], 0.0, 0.0)
            status = "only-in-new" if was is None else "only-in-old"
            environments.append(EnvironmentChange(name, either.region, status, nothing, nothing))
            continue
        scales: dict[str, ScaleChange] = {}
        for key, _ in _SCALES:
            lines = idle if key == "idle" else full_scale
            rows, change, priced = _line_changes(
                [] if was is None else lines(was, prices), [] if now is None else lines(now, prices)
            )
            complete = complete and priced
            totals[key] += change
            scales[key] = ScaleChange(rows, round(change, 4), round(change * HOURS_PER_MONTH, 2))
        if was is None:
            status = "added"
        elif now is None:
            status = "removed"
        elif not scales["idle"].lines and not scales["full_scale"].lines:
            status = "unchanged"
        else:
            status = "changed"
        environments.append(
            EnvironmentChange(name, either.region, status, scales["idle"], scales["full_scale"])
        )
    return CostDiffResult(
        prices_date=catalog.PRICES_DATE,
        hours_per_month=HOURS_PER_MONTH,
        environments=environments,
        total=ChangeTotal(idle=Change.of(totals["idle"]), full_scale=Change.of(totals["full_scale"])),
        complete=complete,
        summary=diff_summary(totals),
    )


def diff_summary(totals: dict[str, float]) -> str:
    parts = [
        f"{label} {signed(totals[key])}/hour ({signed(totals[key] * HOURS_PER_MONTH)}/month)"
        for key, label in _SCALES
    ]
    return "Cost change: " + "; ".join(parts)


def render_diff(result: CostDiffResult) -> Report:
    out = Report()
    for env in result.environments:
        status = "" if env.status == "changed" else f" ({env.status})"
        for key, label in _SCALES:
            lines = (env.idle if key == "idle" else env.full_scale).lines
            if not lines:
                continue
            out.table(
                f"{env.name}{status}: {label}",
                (Column("item"), Column("was"), Column("now"), Column("$/hour", _MONEY), Column("$/month", _MONEY)),
                (
                    (line.item, line.old_quantity or "-", line.new_quantity or "-",
                     signed(line.change_usd_per_hour), signed(line.change_usd_per_month))
                    for line in lines
                ),
            )  # fmt: skip
    unchanged = [env.name for env in result.environments if env.status == "unchanged"]
    if unchanged:
        out.line(f"Unchanged: {', '.join(unchanged)}")
    alone = [
        f"{env.name} ({env.status.removeprefix('only-in-')})"
        for env in result.environments
        if env.status.startswith("only-in-")
    ]
    if alone:
        out.line(
            f"In one assembly only, not compared and not in the total: {', '.join(alone)}; synthesize both "
            "with the same environments, or name one with --env to price it as added or removed"
        )
    notes = [
        f"On-demand table prices dated {result.prices_date}; month = {result.hours_per_month} h; idle: minimum "
        "fleet, training scaled to zero; full scale: max nodes and max fleet."
    ]
    if not result.complete:
        notes.append("A changed line has no price: its change is left out of the total.")
    out.notes("Notes", notes)
    out.line(result.summary, style="bold")
    return out


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=False)
    parser.add_argument(
        "--details",
        action="store_true",
        help="after the summary: every line, the GPU comparison, assumptions and claims",
    )
    parser.add_argument(
        "--live-prices",
        action="store_true",
        help="price every line with the AWS Price List API in the environment's Region (needs credentials)",
    )
    parser.add_argument(
        "--check-artifacts",
        action="store_true",
        help="look in S3 whether each fleet's shape is compiled already (its artifact, or one beside it) and "
        "use the model's measured compile time (s3:GetObject, s3:ListBucket; needs credentials)",
    )
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("OLD_ASSEMBLY", "NEW_ASSEMBLY"),
        help="what changes per environment and line between two cloud assemblies, per hour and month "
        "(offline, table prices): e.g. the main branch's cdk.out and a pull request's",
    )
    result_costs.arguments(parser)


def _diff(args: argparse.Namespace) -> CostDiffResult:
    """``cost --diff OLD NEW``: two cloud assemblies, each environment's lines compared."""
    for option, value in (("--live-prices", args.live_prices), ("--check-artifacts", args.check_artifacts),
                          ("--app", args.app), ("--synth", args.synth),
                          ("--config", args.config), ("--region", args.region)):  # fmt: skip
        if value:
            raise NeuronConfigError(
                option, value, "cost --diff compares two cloud assemblies offline: omit it"
            )
    # Both folders are read before either is refused, so one run names every bad one.
    found = ErrorCollector()
    loaded = [
        found.run(functools.partial(assembly.load, directory, field="--diff")) for directory in args.diff
    ]
    found.raise_if_any()
    sides: list[list[Deployment]] = []
    for envs in loaded:
        assert envs is not None
        if args.env is not None and args.env not in envs:
            sides.append([])  # added or removed by the change
        else:
            sides.append(selected(envs, args) if args.path is None or _holds(envs, args.path) else [])
    if args.env is not None and not any(sides):
        raise NeuronConfigError("--env", args.env, "in neither assembly")
    if args.path is not None and not any(sides):
        raise NeuronConfigError("--path", args.path, "in neither assembly")
    # --env or --path names the one environment to compare, also when only one assembly has it.
    named = args.env if args.path is None else (sides[0] or sides[1])[0].name
    return diff(sides[0], sides[1], named=named)


def _holds(envs: dict[str, Deployment], path: str) -> bool:
    try:
        assembly.select_path(envs, path)
    except NeuronConfigError:
        return False
    return True


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    if args.diff is not None:
        ctx.show(_diff(args), render_diff)
        return ExitStatus.OK
    envs = in_region(selected(ctx.deployments, args), args.region)
    books: dict[str, PriceBook] = {}
    if args.live_prices:
        pricing = ctx.aws("pricing", PRICING_API_REGION)
        for env in envs:
            books[env.name] = live_price_book(
                pricing,
                env.region,
                ec2_types(env),
                sagemaker_types=sagemaker_types(env),
                services=service_keys(env),
                hyperpod_types=hyperpod_types(env),
            )

    def costs(env: Deployment) -> result_costs.ResultCosts:
        found = result_costs.from_arguments(env, args)
        if not args.check_artifacts or env.serving is None:
            return found
        status = artifact_cache.look_up(ctx.aws("s3", env.region), env.serving, env=env.name)
        return result_costs.with_cache(
            env, found, cache=status.text, compiled=status.compiled, measured_seconds=status.measured_seconds
        )

    ctx.show(build(envs, books, costs), lambda result: render(result, details=args.details))
    return ExitStatus.OK


COMMAND = Command(
    "cost",
    "Monthly cost at idle and at full scale per environment (offline); --details for every line.",
    _run,
    arguments=_arguments,
    aws=True,
)
