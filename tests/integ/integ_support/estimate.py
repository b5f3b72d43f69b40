"""What a run costs, priced with ``cdk_neuron``'s own tables (the prices ``cdk-neuron cost`` uses).

Lines per suite: its accelerators for their hours; its ModelCompilation task (Fargate) for the
compile's hours; the NAT gateway and its public IPv4 address, and
the load balancer where there is one, for the whole run; each KMS key for a whole key-month (an upper
bound: a key is billed per month, prorated, and the integ keys are scheduled for deletion with the
stack). Left out as too small to show at this scale: Lambda, Step Functions, CloudWatch, EFS and
EBS for an hour or two, data transfer. Prices are the catalog's us-east-1 table prices and dated.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdk_neuron import catalog
from cdk_neuron.catalog import PRICES_DATE
from cdk_neuron.cli.pricing import PriceBook
from cdk_neuron.compilation.job import FARGATE_CPU_UNITS, FARGATE_MEMORY_MIB, compile_task_usd_per_hour
from integ_support.registry import SuiteInfo

HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class Line:
    suite: str
    item: str
    expected_usd: float
    most_usd: float
    basis: str


def lines(suite: SuiteInfo, prices: PriceBook | None = None) -> list[Line]:
    book = prices or PriceBook()
    out = []
    for acc in suite.all_accelerators:
        name = f"ml.{acc.instance_type}" if acc.sagemaker else acc.instance_type
        price = book.instance(acc.instance_type, sagemaker=acc.sagemaker)
        if price is None:
            raise SystemExit(f"no price on record for {name}: cannot estimate {suite.name}")
        out.append(
            Line(
                suite.name,
                f"{acc.count} x {name}",
                acc.count * price.usd_per_hour * acc.expected_hours,
                acc.count * price.usd_per_hour * acc.most_hours,
                f"${price.usd_per_hour:g}/h ({price.source}, {price.region}) x {acc.expected_hours:g} h "
                f"(at most {acc.most_hours:g} h)",
            )
        )
    if suite.accelerators.sagemaker and suite.hyperpod_controller is not None:
        # HyperPod's own rates are in no source the catalog could read: the SageMaker hosting rates of
        # the same types stand in for them, and the basis says so.
        out[0] = Line(
            suite.name,
            out[0].item,
            out[0].expected_usd,
            out[0].most_usd,
            out[0].basis + "; SageMaker hosting rate as proxy: no HyperPod rate on record",
        )
        controller = catalog.SAGEMAKER_GENERAL_PRICES.get(suite.hyperpod_controller)
        if controller is None:
            raise SystemExit(
                f"no price on record for {suite.hyperpod_controller}: cannot estimate {suite.name}"
            )
        out.append(
            Line(
                suite.name,
                f"1 x {suite.hyperpod_controller} (Slurm controller)",
                controller.usd_per_hour * suite.run_expected_hours,
                controller.usd_per_hour * suite.run_most_hours,
                f"${controller.usd_per_hour:g}/h ({controller.source}, {controller.region}, hosting rate as "
                f"proxy) x {suite.run_expected_hours:g} h (at most {suite.run_most_hours:g} h): bills while "
                "the cluster exists",
            )
        )
    if suite.compile is not None:
        task = compile_task_usd_per_hour()
        out.append(
            Line(
                suite.name,
                "ModelCompilation task",
                task * suite.compile.expected_hours,
                task * suite.compile.most_hours,
                f"${task:.4f}/h (Fargate {FARGATE_CPU_UNITS // 1024} vCPU, {FARGATE_MEMORY_MIB // 1024} GB; "
                f"SVC-FARGATE) x {suite.compile.expected_hours:g} h (at most {suite.compile.most_hours:g} h)",
            )
        )
    hourly = [("nat_gateway_hour", "NAT gateway"), ("public_ipv4_hour", "public IPv4 address")]
    if suite.load_balancer:
        hourly.append(("alb_hour", "application load balancer"))
    for key, item in hourly:
        service = book.service(key)
        assert service is not None, key
        out.append(
            Line(
                suite.name,
                item,
                service.usd_per_hour * suite.run_expected_hours,
                service.usd_per_hour * suite.run_most_hours,
                f"${service.usd_per_hour:g}/h ({service.source}) x {suite.run_expected_hours:g} h "
                f"(at most {suite.run_most_hours:g} h)",
            )
        )
    kms = book.service("kms_key_month")
    assert kms is not None
    out.append(
        Line(
            suite.name,
            f"{suite.kms_keys} KMS key(s)",
            suite.kms_keys * kms.usd_per_hour,
            suite.kms_keys * kms.usd_per_hour,
            f"${kms.usd_per_hour:g} per key-month ({kms.source}), a whole month each as an upper bound",
        )
    )
    return out


def standing_usd_per_hour(suite: SuiteInfo, prices: PriceBook | None = None) -> float | None:
    """What a HyperPod suite's cluster bills per hour while it exists (worker + controller); None otherwise."""
    if suite.hyperpod_controller is None:
        return None
    book = prices or PriceBook()
    acc = suite.accelerators
    worker = book.instance(acc.instance_type, sagemaker=acc.sagemaker)
    controller = catalog.SAGEMAKER_GENERAL_PRICES.get(suite.hyperpod_controller)
    if worker is None or controller is None:
        return None
    return acc.count * worker.usd_per_hour + controller.usd_per_hour


def render(suites: list[SuiteInfo], region: str) -> tuple[str, float, float]:
    """The estimate as text, with its expected and most totals (USD)."""
    all_lines = [line for suite in suites for line in lines(suite)]
    expected = sum(line.expected_usd for line in all_lines)
    most = sum(line.most_usd for line in all_lines)
    rows = [
        f"Estimated cost of this integ run in {region} (USD; cdk_neuron price tables dated {PRICES_DATE}):"
    ]
    for suite in suites:
        mine = [line for line in all_lines if line.suite == suite.name]
        rows.append(
            f"  {suite.name}: ~${sum(x.expected_usd for x in mine):.2f}, at most ${sum(x.most_usd for x in mine):.2f}"
            + ("   [opt-in]" if suite.opt_in else "")
        )
        standing = standing_usd_per_hour(suite)
        if standing is not None:
            rows.append(
                f"      standing cost while the cluster exists: ${standing:.2f}/h (HyperPod does not scale to "
                "zero; the stack's deletion ends it)"
            )
        for line in mine:
            rows.append(
                f"      {line.item:<30} ${line.expected_usd:>7.2f}  (max ${line.most_usd:.2f})  {line.basis}"
            )
    rows.append(f"  total: ~${expected:.2f}, at most ${most:.2f} if every bounded wait runs out")
    if region != "us-east-1":
        rows.append(f"  (us-east-1 table prices applied to {region}: prices there can differ)")
    return "\n".join(rows), expected, most
