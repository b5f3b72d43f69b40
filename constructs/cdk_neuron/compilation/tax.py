"""The compile tax: how long and how much compiling a new shape costs, and when it pays (plain Python).

Every new serving shape (batch, sequence length, TP, dtype, compiler release) is a new Neuron
compile. ``plan`` and ``cost`` show, per fleet:

- **the time**, from published figures (:data:`COMPILE_TIME_FIGURES`, each with its source), or the
  ``compile_seconds`` a previous compile of the model measured (its manifest);
- **the cost**: the :class:`~cdk_neuron.compilation.ModelCompilation` Fargate task (16 vCPU, 120 GiB,
  200 GiB of ephemeral storage) at the Fargate prices of :data:`cdk_neuron.catalog.FARGATE_PRICES`
  (:func:`~cdk_neuron.compilation.job.compile_task_usd_per_hour`); where the environment compiles on its
  training cluster (:class:`~cdk_neuron.compilation.BatchModelCompilation`, prod's 70B), one node of it
  (trn1.32xlarge) at its On-Demand price for the compile time; else, for weights the task cannot hold,
  an inf2.48xlarge compiling by hand;
- **whether it pays**: the alternative is the fleet's own instances compiling at start-up (no
  ``artifact_uri``: the engine exports from the Hub checkpoint on boot, every boot). That costs the
  compile minutes of the serving instance on *every* start, and delays each one. Precompiling once
  pays from the instance start

      N = compile cost / cost of one start that compiles
        = (minutes / 60 x task $/h) / (minutes / 60 x instance $/h) = task $/h / instance $/h

  on (the minutes cancel, taking the instance to compile as fast as the task; a serving instance with
  fewer vCPUs is slower, so in practice the break-even comes sooner). A run that starts fewer
  instances than ``N`` over the artifact's life is cheaper compiled on the instance, each start then
  waiting the compile minutes before it serves. An instance whose host memory cannot hold an export
  (about 3 x the weights: :data:`~cdk_neuron.compilation.job.EXPORT_MEMORY_FACTOR`) cannot compile at
  all: precompiling is then the only way.

Sources of the compile times (read 2026-12-02):

- ``HF-INF2-LLAMA2``: Hugging Face blog, "Make your llama generation time fly with AWS Inferentia2"
  (https://huggingface.co/blog/inferentia-llama2, 2023-11-07): exporting Llama 2 7B/13B with
  optimum-neuron "may take from a few minutes to more than an hour", depending on the parameters and
  the host.
- ``TNX-48``: aws-neuron/transformers-neuronx issue 48, "Very long compilation times for llama2 with
  batch size 4" (https://github.com/aws-neuron/transformers-neuronx/issues/48, 2023-09-28): Llama 2 7B,
  TP 2 and 24, 2048 positions, batch 1 or 2: "it takes minutes to compile the model with the -O1
  option" (batch 4 took over three hours, a compiler defect fixed in Neuron SDK 2.15).
- ``ON-401``: huggingface/optimum-neuron pull request 401, the Llama 7B fine-tuning guide
  (https://github.com/huggingface/optimum-neuron/pull/401, 2024-01-10): "Compiling without a cache can
  take ~40 minutes".
- ``ADT-LLAMA3``: awslabs/awsome-distributed-training, Llama 3 70B on Trainium README @6abac09: a first
  compile "could add 25 minutes" to a 16-node job: the ~25-minute tax.
- ``SDK-825``: aws-neuron/aws-neuron-sdk issue 825 (https://github.com/aws-neuron/aws-neuron-sdk/issues/825,
  2024-01-26): Llama 2 70B, TP 24, batch 8, 2048 positions, with optimum-neuron 0.0.17, failed "after
  more than 1 hours' compilation".

No source times an export per model size on a CPU-only host; the figures above are from Neuron hosts
(the compile itself runs on the host CPUs either way), and they spread widely. Hence two estimates,
labelled estimated, each shown with its band: under :data:`LARGE_MODEL_PARAMETERS`, 25 minutes (the
tax; published: a few minutes to more than an hour); from there, 60 minutes (published: 25 minutes
to more than an hour).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cdk_neuron import catalog, timeouts
from cdk_neuron.compilation.job import (
    EXPORT_MEMORY_FACTOR,
    FARGATE_CPU_UNITS,
    FARGATE_MAX_WEIGHTS_GIB,
    FARGATE_MEMORY_MIB,
    HostCompile,
    compile_task_usd_per_hour,
    export_target_refusal,
)
from cdk_neuron.planner import ServingPlan


@dataclass(frozen=True)
class CompileTimeFigure:
    """One published compile time: the model size, the minutes (low, high; None: open-ended), what was
    compiled, and the source key (see the module docstring)."""

    parameters: float
    low_minutes: float
    high_minutes: float | None
    what: str
    source: str
    date: str


COMPILE_TIME_FIGURES: tuple[CompileTimeFigure, ...] = (
    CompileTimeFigure(
        7e9, 3, None, "Llama 2 7B/13B export with optimum-neuron: 'a few minutes to more than an hour'",
        "HF-INF2-LLAMA2", "2023-11-07",
    ),
    CompileTimeFigure(
        7e9, 3, 10, "Llama 2 7B, TP 2/24, batch 1-2, 2048 positions, -O1: 'minutes'", "TNX-48", "2023-09-28"
    ),
    CompileTimeFigure(7e9, 40, 40, "Llama 2 7B fine-tuning, no cache: '~40 minutes'", "ON-401", "2024-01-10"),
    CompileTimeFigure(70e9, 25, 25, "Llama 3 70B, 16 nodes, first compile: '25 minutes'", "ADT-LLAMA3", "6abac09"),
    CompileTimeFigure(
        70e9, 60, None, "Llama 2 70B, TP 24, batch 8: failed 'after more than 1 hours' compilation'",
        "SDK-825", "2024-01-26",
    ),
)  # fmt: skip

LARGE_MODEL_PARAMETERS = 20e9
"""From here a compile is estimated at an hour (the 70B figures), below at the ~25-minute tax."""
TAX_MINUTES = 25.0
"""The ~25-minute tax (ADT-LLAMA3), the estimate for a model under :data:`LARGE_MODEL_PARAMETERS`."""
LARGE_MINUTES = 60.0
"""The estimate from :data:`LARGE_MODEL_PARAMETERS` (SDK-825, HF-INF2-LLAMA2: more than an hour)."""
HAND_COMPILE_INSTANCE = "inf2.48xlarge"
"""Where weights too large for the Fargate task are compiled by hand: the cheapest type with the host
memory (768 GiB) the serving README names for it (inf2.48xlarge or trn1.32xlarge)."""


@dataclass(frozen=True)
class CompileTime:
    """How long one compile of a new shape takes: ``minutes``, within ``low`` to ``high`` (None: open)."""

    minutes: float
    low_minutes: float
    high_minutes: float | None
    label: str
    """``measured`` (a manifest's ``compile_seconds``) or ``estimated``."""
    basis: str
    sources: tuple[str, ...]


def compile_time(parameters: float, *, measured_seconds: float | None = None) -> CompileTime:
    """The compile time of a model of ``parameters``: measured when a previous compile of it says so."""
    large = parameters >= LARGE_MODEL_PARAMETERS
    figures = [f for f in COMPILE_TIME_FIGURES if (f.parameters >= LARGE_MODEL_PARAMETERS) == large]
    sources = tuple(f"{f.source} ({f.date}): {f.what}" for f in figures)
    low = min(f.low_minutes for f in figures)
    highs = [f.high_minutes for f in figures]
    high = None if any(h is None for h in highs) else max(h for h in highs if h is not None)
    if measured_seconds is not None:
        return CompileTime(
            minutes=measured_seconds / 60,
            low_minutes=low,
            high_minutes=high,
            label="measured",
            basis="compile_seconds of this model's previous compile (its cdk-neuron-artifact.json)",
            sources=sources,
        )
    band = f"{low:g}-{high:g} min" if high is not None else f"{low:g} min to more than an hour"
    size = f">= {LARGE_MODEL_PARAMETERS / 1e9:g}B" if large else f"< {LARGE_MODEL_PARAMETERS / 1e9:g}B"
    return CompileTime(
        minutes=LARGE_MINUTES if large else TAX_MINUTES,
        low_minutes=low,
        high_minutes=high,
        label="estimated",
        basis=f"published figures for models {size} parameters: {band}",
        sources=sources,
    )


@dataclass(frozen=True)
class CompileTax:
    """What compiling a new shape for one fleet costs, and from how many instance starts it pays."""

    time: CompileTime
    where: str
    on_fargate: bool
    usd_per_hour: float | None
    usd: float | None
    price_basis: str
    instance_type: str
    instance_usd_per_hour: float | None
    instance_can_compile: bool
    export_memory_gib: float
    instance_memory_gib: int
    per_start_usd: float | None
    """One serving start that compiles on the instance: the compile minutes at the instance's price."""
    break_even_starts: float | None
    """``usd / per_start_usd``: precompiling pays from this many starts on (None: a price is unknown)."""
    formula: str
    advice: str
    refused: str | None = None
    """Why the compile task refuses this fleet (then nothing is priced), or None."""


def _instance_price(instance_type: str, region: str, sagemaker: bool) -> catalog.Price | None:
    if sagemaker:
        price = catalog.SAGEMAKER_PRICES.get(f"ml.{instance_type}")
        return price if price is not None and price.region == region else None
    return catalog.regional_price(instance_type, region)


def compile_tax(
    plan: ServingPlan,
    *,
    parameters: float,
    region: str,
    sagemaker: bool = False,
    measured_seconds: float | None = None,
    host: HostCompile | None = None,
) -> CompileTax:
    """The compile tax of a model of ``parameters`` on the fleet ``plan`` sizes, in ``region``
    (``sagemaker``: the fleet's own start-up is priced at the ``ml.`` hosting price; ``host``: the
    environment compiles on its training cluster, BatchModelCompilation, whose job holds one whole
    instance of ``host.instance_type`` for the compile, billed at its On-Demand price)."""
    time = compile_time(parameters, measured_seconds=measured_seconds)
    instance = catalog.get_instance(plan.instance_type)
    refusal = export_target_refusal(plan.instance_type)
    if refusal is not None:
        # cdk-neuron compile refuses it before anything runs: nothing to price, and no break-even.
        return CompileTax(
            time=time,
            where="refused: the compile task cannot compile for this fleet",
            on_fargate=False,
            usd_per_hour=None,
            usd=None,
            price_basis="none: refused before compiling",
            instance_type=plan.instance_type,
            instance_usd_per_hour=None,
            instance_can_compile=False,
            export_memory_gib=plan.weights_gib * EXPORT_MEMORY_FACTOR,
            instance_memory_gib=instance.memory_gib,
            per_start_usd=None,
            break_even_starts=None,
            formula="none: refused",
            advice=refusal,
            refused=refusal,
        )
    hours = time.minutes / 60
    on_fargate = host is None and plan.weights_gib <= FARGATE_MAX_WEIGHTS_GIB
    usd_per_hour: float | None
    if host is not None:
        node = catalog.regional_price(host.instance_type, region)
        usd_per_hour = None if node is None else node.usd_per_hour
        beyond = (
            f"; {plan.weights_gib:.0f} GiB of weights exceed the Fargate task's {FARGATE_MAX_WEIGHTS_GIB:.0f}"
            if plan.weights_gib > FARGATE_MAX_WEIGHTS_GIB
            else ""
        )
        where = (
            f"{host.instance_type} of the training cluster: BatchModelCompilation (its export gets "
            f"{host.export_vcpus} vCPU and {host.export_memory_mib / 1024:.0f} GiB{beyond}); the job holds one "
            "node, which no training job uses meanwhile"
        )
        steps = timeouts.compile_step_seconds(host.max_weights_gib)
        around = (
            2 * timeouts.image_pull_seconds(timeouts.COMPILE_IMAGE_GIB) + steps["fetch"] + steps["upload"]
        ) / 3600
        price_basis = (
            f"no price for {host.instance_type} in this Region"
            if node is None
            else f"${node.usd_per_hour:.4f}/h, the whole node ({node.source} {catalog.SOURCES[node.source].date}, "
            f"{node.region}, On-Demand); the compiler's minutes only: the node also bills its boot and both "
            f"image pulls, the fetch and the upload, these up to {around:.1f} h more at their budgets "
            f"(${around * node.usd_per_hour:.0f})"
        )
    elif on_fargate:
        usd_per_hour = compile_task_usd_per_hour()
        where = (
            f"Fargate ({FARGATE_CPU_UNITS // 1024} vCPU, {FARGATE_MEMORY_MIB // 1024} GiB): ModelCompilation"
        )
        date = catalog.SOURCES["SVC-FARGATE"].date
        price_basis = f"${usd_per_hour:.4f}/h (SVC-FARGATE {date}, us-east-1, Linux/x86)"
    else:
        hand = catalog.regional_price(HAND_COMPILE_INSTANCE, region)
        usd_per_hour = None if hand is None else hand.usd_per_hour
        where = (
            f"{HAND_COMPILE_INSTANCE}, by hand ({plan.weights_gib:.0f} GiB of weights exceed the Fargate task's "
            f"{FARGATE_MAX_WEIGHTS_GIB:.0f})"
        )
        price_basis = (
            "no price for it in this Region"
            if hand is None
            else f"${hand.usd_per_hour:.4f}/h ({hand.source} {catalog.SOURCES[hand.source].date}, {hand.region})"
        )
    usd = None if usd_per_hour is None else hours * usd_per_hour
    export_memory = plan.weights_gib * EXPORT_MEMORY_FACTOR
    can_compile = export_memory <= instance.memory_gib
    price = _instance_price(plan.instance_type, region, sagemaker)
    per_start = None if price is None else hours * price.usd_per_hour
    shown = f"ml.{plan.instance_type}" if sagemaker else plan.instance_type
    if usd_per_hour is None or price is None:
        break_even = None
        formula = "unknown: " + (
            "no price for the compile" if usd_per_hour is None else f"no price for {shown}"
        )
    else:
        break_even = usd_per_hour / price.usd_per_hour
        formula = (
            f"N = compile $/h / instance $/h = {usd_per_hour:.4f} / {price.usd_per_hour:.4f} = {break_even:.2f} "
            f"(the {time.minutes:.0f} min cancel)"
        )
    minutes = f"{time.minutes:.0f} min"
    if not can_compile:
        advice = (
            f"precompile: {shown} cannot compile it at start-up (an export holds about {EXPORT_MEMORY_FACTOR} x "
            f"{plan.weights_gib:.1f} GiB = {export_memory:.0f} GiB of host memory, cdk-neuron's own estimate; it has "
            f"{instance.memory_gib} GiB)"
        )
    elif break_even is None:
        advice = f"precompile to save {minutes} of every start; the break-even is unknown ({formula})"
    elif break_even <= 1:
        advice = (
            f"precompile: it costs no more than one start that compiles on {shown}, and saves {minutes} of "
            "every start"
        )
    else:
        starts = math.ceil(break_even)
        advice = (
            f"precompiling pays from the {_ordinal(starts)} instance start over the artifact's life; a shorter run "
            f"(fewer starts: one instance once, for an evaluation) is cheaper compiled on {shown} "
            f"(no artifact_uri), each start then waiting about {minutes} before it serves"
        )
    return CompileTax(
        time=time,
        where=where,
        on_fargate=on_fargate,
        usd_per_hour=usd_per_hour,
        usd=usd,
        price_basis=price_basis,
        instance_type=shown,
        instance_usd_per_hour=None if price is None else price.usd_per_hour,
        instance_can_compile=can_compile,
        export_memory_gib=export_memory,
        instance_memory_gib=instance.memory_gib,
        per_start_usd=per_start,
        break_even_starts=break_even,
        formula=formula,
        advice=advice,
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


__all__ = [
    "COMPILE_TIME_FIGURES",
    "HAND_COMPILE_INSTANCE",
    "LARGE_MINUTES",
    "LARGE_MODEL_PARAMETERS",
    "TAX_MINUTES",
    "CompileTax",
    "CompileTime",
    "CompileTimeFigure",
    "compile_tax",
    "compile_time",
]
