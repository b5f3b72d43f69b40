"""The cost of a result, not of an hour: a training run, and a million generated tokens.

Plain Python (no ``aws_cdk``): ``cdk-neuron plan`` and ``cdk-neuron cost`` print these, and users'
own tooling can call them.

A cost of a result is a throughput and a price:

- training run: ``tokens / tokens_per_second`` hours of the plan's instances at the hourly price;
- serving: ``usd_per_hour / (tokens_per_second x 3600) x 1,000,000`` per million generated tokens
  on one instance (every replica on it).

The throughput is labelled, and so is every cost built from it:

- **published**: a row of :data:`cdk_neuron.catalog.PUBLISHED_THROUGHPUT` for the exact
  configuration (instance type and count, TP, PP, micro-batch or batch, sequence length, the
  serving weight dtype, and a parameter count within :data:`~cdk_neuron.catalog.SAME_SIZE`), with
  its source and date, measured with a runtime cdk-neuron deploys;
- **measured**: the user's own figure (:func:`measured`), e.g. from an integ timing report;
- **estimated**: a published training figure for more nodes of the same configuration, scaled
  down linearly to the plan's nodes (strong scaling is rarely linear, so the label says so); a
  published serving figure measured with a runtime cdk-neuron does not deploy (Transformers
  NeuronX, end of support since Neuron 2.26), the basis says which; a price for part of an instance
  (two of a p5.48xlarge's eight GPUs); or a price its source calls uncertain.

Nothing else is extrapolated: where no published figure matches, the cost is unknown, the note
names the nearest published configuration, and :func:`measured` takes the user's figure. Beside
each Neuron cost stands the published GPU configuration of the same model size, with what makes
it differ (precision, sequence length, batch, prompt and output tokens), never adjusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cdk_neuron import catalog, validation
from cdk_neuron.catalog import GPU_INSTANCES, PUBLISHED_THROUGHPUT, SAME_SIZE, Throughput, ThroughputLabel
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan, TrainingPlan

MILLION = 1_000_000
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class ThroughputFigure:
    """The tokens per second a cost is computed from, with its label and where it comes from."""

    tokens_per_second: float
    label: ThroughputLabel
    basis: str
    """The configuration it was measured on, as its source gives it (or the user's description)."""
    source: str | None = None
    """A :data:`cdk_neuron.catalog.SOURCES` key for published figures."""
    date: str | None = None
    row: Throughput | None = None
    """The published row the figure comes from (None for a measurement)."""


def measured(tokens_per_second: object, description: object) -> ThroughputFigure:
    """The user's own measurement: tokens per second of the whole configuration, and what was measured
    (``"integ serving_ec2 2026-12-01: 4 x 512 tokens, batch 4"``)."""
    value = validation.number("tokens_per_second", tokens_per_second, above=0)
    if not isinstance(description, str) or not description.strip():
        raise NeuronConfigError("description", description, "say what was measured, where and when")
    return ThroughputFigure(value, "measured", description.strip())


def _published(row: Throughput) -> ThroughputFigure:
    return ThroughputFigure(row.tokens_per_second, row.label, row.describe(), row.source, row.date, row)


def _same_size(parameters: float, row: Throughput) -> bool:
    return abs(row.parameters - parameters) <= SAME_SIZE * row.parameters


@dataclass(frozen=True)
class ResultCost:
    """What one result costs on one configuration, or why that is unknown."""

    result: str
    """``"training run of 1e+12 tokens"`` or ``"1M generated tokens"``."""
    configuration: str
    instance_type: str
    instances: float
    usd_per_hour: float | None
    """The whole configuration's hourly price, or None where no source prices it in the region."""
    price_basis: str
    throughput: ThroughputFigure | None
    hours: float | None
    """Training: the run's duration. Serving: the hours one instance takes for a million tokens."""
    usd: float | None
    note: str = ""
    price_estimated: bool = False

    @property
    def label(self) -> ThroughputLabel | Literal["unknown"]:
        """``published`` only when both the throughput and the price are; ``estimated`` if either is (a price
        for part of an instance, or one its source calls uncertain)."""
        if self.throughput is None or self.usd is None:
            return "unknown"
        if self.price_estimated:
            return "estimated"
        return self.throughput.label

    def line(self) -> str:
        """One line for a report: the cost, its label, and what it rests on."""
        if self.usd is None or self.hours is None or self.throughput is None:
            return f"{self.result} on {self.configuration}: unknown ({self.note})"
        time = f"{self.hours:,.1f} h" if self.hours >= 1 else f"{self.hours * 60:,.1f} min"
        note = f"; {self.note}" if self.note else ""
        return (
            f"{self.result} on {self.configuration}: ${self.usd:,.2f} ({self.label}; {time} at "
            f"{self.throughput.tokens_per_second:,.2f} tokens/s and ${self.usd_per_hour:,.4f}/h; throughput: "
            f"{self.throughput.basis}; price: {self.price_basis}{note})"
        )


def _price(
    instance_type: str, instances: float, region: str, sagemaker: bool
) -> tuple[float | None, str, bool]:
    """(hourly price of ``instances`` of the type, its basis, whether the price is an estimate: a fraction of
    an instance, or a price its source calls uncertain)."""
    if sagemaker:
        name = f"ml.{instance_type}"
        hosting = catalog.SAGEMAKER_PRICES.get(name)
        price = hosting if hosting is not None and hosting.region == region else None
        if price is None:
            reason = catalog.SAGEMAKER_UNPRICED.get(name, f"no source prices {name} hosting in {region}")
            return None, reason, False
    else:
        price = catalog.regional_price(instance_type, region)
    if price is None:
        reason = catalog.UNPRICED.get(instance_type, f"no source prices {instance_type} in {region}")
        return None, reason, False
    note = f"; {price.note}" if price.note else ""
    date = catalog.SOURCES[price.source].date
    part = instances != int(instances)
    share = f"{instances:g} of " if part else (f"{instances:g} x " if instances != 1 else "")
    carried = f"; the {price.region} price, equal in {region} per SKY" if price.region != region else ""
    basis = f"{share}${price.usd_per_hour:,.4f}/h ({price.source} {date}, {price.region}{carried}{note})"
    if part:
        basis += " (estimated: no instance type has that part of its accelerators)"
    # A price its own source calls uncertain (trn2.48xlarge: SKY and Vantage differ 2.4x) cannot make a
    # cost published or measured.
    uncertain = price.note.startswith("uncertain")
    return price.usd_per_hour * instances, basis, part or uncertain


def _cost(
    result: str,
    configuration: str,
    instance_type: str,
    instances: float,
    figure: ThroughputFigure | None,
    hours_of: float,
    region: str,
    note: str,
    sagemaker: bool = False,
) -> ResultCost:
    """``hours_of`` tokens at the figure's rate, priced for ``instances`` of ``instance_type``."""
    usd_per_hour, basis, estimated = _price(instance_type, instances, region, sagemaker)
    hours = None if figure is None else hours_of / figure.tokens_per_second / SECONDS_PER_HOUR
    usd = None if hours is None or usd_per_hour is None else hours * usd_per_hour
    if usd_per_hour is None:
        note = f"{note}; price unknown: {basis}" if note else f"price unknown: {basis}"
    return ResultCost(
        result=result,
        configuration=configuration,
        instance_type=instance_type,
        instances=instances,
        usd_per_hour=usd_per_hour,
        price_basis=basis,
        throughput=figure,
        hours=hours,
        usd=usd,
        note=note,
        price_estimated=estimated,
    )


def _tokens(tokens: object) -> float:
    return validation.number("tokens", tokens, above=0)


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


def _on(row: Throughput, instance_type: str) -> bool:
    return instance_type in row.instance_types


def _training_row(plan: TrainingPlan) -> Throughput | None:
    """The published Neuron row for the plan's exact configuration, at its node count or more."""
    model = plan.model
    if model is None:
        return None
    same = [
        row
        for row in PUBLISHED_THROUGHPUT
        if row.kind == "training"
        and _on(row, plan.instance_type)
        and (row.tensor_parallel, row.pipeline_parallel) == (plan.tensor_parallel, plan.pipeline_parallel)
        and (row.batch_size, row.sequence_length) == (model.micro_batch_size, model.sequence_length)
        and _same_size(model.parameters, row)
    ]
    exact = [row for row in same if row.instances == plan.nodes]
    more = [row for row in same if plan.nodes < row.instances]
    return next(iter(exact + more), None)


def training_throughput(plan: TrainingPlan) -> tuple[ThroughputFigure | None, str]:
    """The published (or scaled, estimated) throughput of ``plan``, or None and why."""
    model = plan.model
    if model is None:
        return None, "the plan has no model: plan with model=TrainingModel(...) to match a published figure"
    row = _training_row(plan)
    if row is not None and row.instances == plan.nodes:
        return _published(row), ""
    if row is not None:
        scaled = row.tokens_per_second * plan.nodes / row.instances
        basis = (
            f"scaled linearly from {row.instances:g} to {plan.nodes} nodes (strong scaling is rarely linear: "
            f"measure) from {row.describe()}"
        )
        return ThroughputFigure(scaled, "estimated", basis, row.source, row.date, row), ""
    nearest = [
        r.describe() for r in PUBLISHED_THROUGHPUT if r.kind == "training" and _same_size(model.parameters, r)
    ]
    why = "no published figure matches this configuration"
    return None, why + (f" (published for this model size: {'; '.join(nearest)})" if nearest else "")


def _which_instance(
    row: Throughput, plan_type: str, instances: float, hours: float | None, region: str
) -> str:
    """What a row that names several instance types leaves open, priced on each (empty for one type)."""
    if not row.also_on:
        return ""
    others = []
    for other in row.instance_types:
        if other == plan_type:
            continue
        price = catalog.regional_price(other, region)
        efa = catalog.get_instance(other).efa_gbps
        cost = (
            f", ${hours * price.usd_per_hour * instances:,.2f} at its ${price.usd_per_hour:,.4f}/h"
            if price is not None and hours is not None
            else ""
        )
        others.append(f"{other} ({efa:,} Gbps EFA{cost})")
    mine = catalog.get_instance(plan_type).efa_gbps
    return (
        f"{row.source} names {'/'.join(row.instance_types)} and does not say which ran: priced as {plan_type} "
        f"({mine:,} Gbps EFA); the figure may have been measured on {', '.join(others)}"
    )


def training_run_cost(
    plan: TrainingPlan,
    tokens: object,
    *,
    throughput: ThroughputFigure | None = None,
    region: str = "us-east-1",
) -> ResultCost:
    """The cost of training ``tokens`` tokens with ``plan`` (``throughput``: a :func:`measured` figure)."""
    count = _tokens(tokens)
    figure, note = (throughput, "") if throughput is not None else training_throughput(plan)
    if figure is not None and figure.row is not None:
        hours = count / figure.tokens_per_second / SECONDS_PER_HOUR
        note = _which_instance(figure.row, plan.instance_type, plan.nodes, hours, region)
    configuration = (
        f"{plan.nodes} x {plan.instance_type} (TP {plan.tensor_parallel}, PP {plan.pipeline_parallel}, "
        f"DP {plan.data_parallel})"
    )
    return _cost(
        f"training run of {count:,.4g} tokens", configuration, plan.instance_type, plan.nodes, figure, count,
        region, note,
    )  # fmt: skip


def _differences(pairs: list[tuple[str, object, object]]) -> str:
    """``not like-for-like: sequence 8,192 there, 4,096 here; ...`` for the fields that differ, else ""."""
    differ = [
        f"{field} {there} there, {here}" + ("" if str(here).endswith(" figure") else " here")
        for field, there, here in pairs
        if there != here and f"{there} in the Neuron figure" != here
    ]
    return f"not like-for-like: {'; '.join(differ)}" if differ else ""


def _tokens_text(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def gpu_training_comparison(
    plan: TrainingPlan, tokens: object, *, region: str = "us-east-1"
) -> ResultCost | None:
    """The same token count on the published GPU configuration of the plan's model size, or None.

    The note lists every field in which the GPU figure's configuration differs from the plan's: the
    sequence length, the micro-batch, the precision, and the global batch (the Neuron figure's, where
    one matched the plan; the plan itself does not fix it).
    """
    count = _tokens(tokens)
    if plan.model is None:
        return None
    model = plan.model
    neuron = _training_row(plan)
    for row in PUBLISHED_THROUGHPUT:
        if (
            row.kind == "training"
            and row.instance_type in GPU_INSTANCES
            and _same_size(model.parameters, row)
        ):
            pairs: list[tuple[str, object, object]] = [
                ("sequence", f"{row.sequence_length:,}", f"{model.sequence_length:,}"),
                ("micro-batch", row.batch_size, model.micro_batch_size),
                ("precision", row.precision, "BF16 with an FP32 optimizer"),
            ]
            if neuron is not None and neuron.global_batch is not None:
                pairs.append(
                    ("global batch", f"{row.global_batch:,}", f"{neuron.global_batch:,} in the Neuron figure")
                )
            else:
                pairs.append(("global batch", f"{row.global_batch:,}", "set by your job"))
            configuration = (
                f"{row.instances:g} x {row.instance_type} ({GPU_INSTANCES[row.instance_type].gpu})"
            )
            return _cost(
                f"training run of {count:,.4g} tokens", configuration, row.instance_type, row.instances,
                _published(row), count, region, _differences(pairs),
            )  # fmt: skip
    return None


# --------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------


def _serving_rows(
    plan: ServingPlan,
    *,
    parameters: float,
    batch_size: int,
    sequence_length: int,
    dtype: str,
    input_tokens: int | None,
) -> list[Throughput]:
    """The Neuron serving rows of exactly this configuration, current runtimes first."""
    weights = catalog.weight_dtype(dtype)
    rows = [
        row
        for row in PUBLISHED_THROUGHPUT
        if row.kind == "serving"
        and _on(row, plan.instance_type)
        and row.tensor_parallel == plan.tensor_parallel
        and (row.batch_size, row.sequence_length) == (batch_size, sequence_length)
        and row.weight_dtype == weights
        and (input_tokens is None or row.input_tokens == input_tokens)
        and _same_size(parameters, row)
        and row.instances == 1
    ]
    return sorted(rows, key=lambda row: row.legacy is not None)


def serving_throughput(
    plan: ServingPlan,
    *,
    parameters: float,
    batch_size: int,
    sequence_length: int,
    dtype: str = "bf16",
    input_tokens: int | None = None,
) -> tuple[ThroughputFigure | None, str]:
    """The published output-token throughput of one instance serving at ``plan``, or None and why.

    A row matches on the instance type, TP, batch, compiled sequence length, model size and the weight
    ``dtype`` (a bf16 deployment is never costed from an int8 figure); with ``input_tokens``, also on the
    prompt length the figure was measured with. A row measured with a runtime cdk-neuron does not deploy
    (:attr:`~cdk_neuron.catalog.Throughput.legacy`) is used only where no current one matches, and is
    labelled estimated.
    """
    rows = _serving_rows(
        plan, parameters=parameters, batch_size=batch_size, sequence_length=sequence_length, dtype=dtype,
        input_tokens=input_tokens,
    )  # fmt: skip
    if rows and rows[0].legacy is None:
        return _published(rows[0]), ""
    if rows:
        row = rows[0]
        basis = f"{row.describe()}; estimated: {row.legacy}"
        return ThroughputFigure(row.tokens_per_second, "estimated", basis, row.source, row.date, row), ""
    nearest = [
        r.describe() for r in PUBLISHED_THROUGHPUT if r.kind == "serving" and _same_size(parameters, r)
        and r.instance_type not in GPU_INSTANCES
    ]  # fmt: skip
    prompt = f", {input_tokens:,} input tokens" if input_tokens is not None else ""
    why = (
        f"no published figure for {parameters / 1e9:.1f}B parameters on {plan.instance_type} at TP "
        f"{plan.tensor_parallel}, batch {batch_size}, {sequence_length:,} tokens, {catalog.weight_dtype(dtype)} "
        f"weights{prompt}"
    )
    return None, why + (f" (published: {'; '.join(nearest)})" if nearest else "")


def serving_token_cost(
    plan: ServingPlan,
    *,
    parameters: float,
    batch_size: int,
    sequence_length: int,
    dtype: str = "bf16",
    input_tokens: int | None = None,
    throughput: ThroughputFigure | None = None,
    region: str = "us-east-1",
    sagemaker: bool = False,
) -> ResultCost:
    """The cost of a million generated tokens on one instance of ``plan`` (``throughput``: :func:`measured`,
    tokens per second of the whole instance); ``sagemaker``: at the ``ml.`` hosting price. ``dtype`` is
    the weight dtype served (``ModelSpec.dtype``); see :func:`serving_throughput` for the match."""
    if throughput is None:
        figure, note = serving_throughput(
            plan, parameters=parameters, batch_size=batch_size, sequence_length=sequence_length, dtype=dtype,
            input_tokens=input_tokens,
        )  # fmt: skip
    else:
        figure, note = throughput, ""
    configuration = f"{plan.instance_type} (TP {plan.tensor_parallel}, {plan.replicas_per_instance} replica(s), batch {batch_size})"
    if sagemaker:
        configuration = f"ml.{configuration}"
    return _cost(
        "1M generated tokens", configuration, plan.instance_type, 1, figure, MILLION, region, note, sagemaker
    )


def gpu_serving_comparison(
    *,
    parameters: float,
    batch_size: int,
    sequence_length: int | None = None,
    dtype: str | None = None,
    neuron: ThroughputFigure | None = None,
    region: str = "us-east-1",
) -> ResultCost | None:
    """A million tokens on the published GPU configuration of the same model size and batch, or None.

    The note lists every field in which the GPU figure's configuration differs: precision and weight
    dtype, the sequence length (given ``sequence_length``), the weights (given ``dtype``), and the
    prompt and output tokens of the Neuron figure it stands beside (given ``neuron``, a published row's
    figure).
    """
    neuron_row = None if neuron is None else neuron.row
    for row in PUBLISHED_THROUGHPUT:
        if (
            row.kind == "serving"
            and row.instance_type in GPU_INSTANCES
            and row.batch_size == batch_size
            and _same_size(parameters, row)
        ):
            configuration = (
                f"{row.instances:g} of a {row.instance_type} ({GPU_INSTANCES[row.instance_type].gpu})"
            )
            pairs: list[tuple[str, object, object]] = []
            if dtype is not None:
                pairs.append(("weights", row.weight_dtype, catalog.weight_dtype(dtype)))
            if sequence_length is not None:
                pairs.append(("sequence", f"{row.sequence_length:,}", f"{sequence_length:,}"))
            if neuron_row is not None:
                pairs.append(
                    (
                        "input/output tokens",
                        f"{_tokens_text(row.input_tokens)}/{_tokens_text(row.output_tokens)}",
                        f"{_tokens_text(neuron_row.input_tokens)}/{_tokens_text(neuron_row.output_tokens)}",
                    )
                )
            note = _differences(pairs)
            if "FP8" in row.precision and dtype is None:
                note = f"not like-for-like: {row.precision} weights there"
            return _cost(
                "1M generated tokens", configuration, row.instance_type, row.instances, _published(row), MILLION,
                region, note,
            )  # fmt: skip
    return None


__all__ = [
    "MILLION",
    "ResultCost",
    "ThroughputFigure",
    "gpu_serving_comparison",
    "gpu_training_comparison",
    "measured",
    "serving_throughput",
    "serving_token_cost",
    "training_run_cost",
    "training_throughput",
]
