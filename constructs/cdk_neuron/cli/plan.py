"""``cdk-neuron plan``: what each environment will run, computed offline from cdk.json.

Per environment: the serving start-up phase by phase (estimate, budget, floor, ratio; docs/fast-start.md), the training placement (nodes, ranks per node, TP/PP/DP, what crosses EFA,
whether TP stays inside NeuronLink), its estimated HBM per NeuronCore, the checkpoint estimate
(size, save time), the serving sizing (instance, TP, HBM per core, headroom) and the cost of a
result (a training run, a million generated tokens) beside the published GPU configuration.
Everything comes from the planner, the checkpoint advisor and :mod:`cdk_neuron.economics`, the
same functions the constructs validate with.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cdk_neuron import catalog
from cdk_neuron.checkpoint_advisor import estimate_checkpoint
from cdk_neuron.cli import result_costs
from cdk_neuron.cli.command import Command, environment_options, selected
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment, ServingDeployment
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.serving import floors, start_paths, timing


@dataclass(frozen=True)
class TrainingMemoryEstimate:
    """HBM per NeuronCore of the training plan, in GiB (label: estimated)."""

    model_parameters: int
    sequence_length: int
    micro_batch_size: int
    zero1: bool
    activation_checkpointing: str
    recompute: list[str]
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    total_gib: float
    usable_gib: float
    hbm_gib: float
    assumed: list[str]
    sources: list[str]
    label: str = "estimated"


@dataclass(frozen=True)
class TrainingPlacement:
    instance_type: str
    az_id: str | None
    engine: str
    capacity: str
    nodes: int
    max_nodes: int
    ranks_per_node: int
    world_size: int
    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    logical_nc_config: int | None
    tp_within_neuronlink: bool
    efa_dimensions: list[str]
    efa_traffic: str
    notes: list[str]
    memory: TrainingMemoryEstimate | None
    """None when the plan has no model (cdk.json: training.plan.model)."""


@dataclass(frozen=True)
class CheckpointPlan:
    model_parameters: int
    bytes_per_parameter: float
    size_gb: float
    writers: int
    throughput_mibps: int
    limiting_factor: str
    save_minutes: float
    write_cost_usd: float
    file_system: str
    summary: str


@dataclass(frozen=True)
class ServingSizing:
    backend: str
    engine: str
    model_id: str | None
    instance_type: str
    instance_chosen_by: str
    neuron_cores: int
    tensor_parallel: int
    replicas_per_instance: int
    weights_gib: float
    kv_cache_gib: float
    kv_cache_per_core_gib: float
    kv_heads_per_core: float
    hbm_per_core_gib: float
    hbm_limit_per_core_gib: float
    headroom: float
    min_capacity: int
    max_capacity: int
    explanation: str


@dataclass(frozen=True)
class StartupPhaseLine:
    """One start-up phase: estimate (no margin), budget, floor, and estimate / floor and budget / floor
    (None: no floor)."""

    phase: str
    estimate_seconds: float
    budget_seconds: int
    floor_seconds: float | None
    ratio: float | None
    budget_ratio: float | None
    basis: str
    estimate_why: str
    floor_why: str
    controlled: bool
    provisioned_floor_seconds: float | None = None
    """The floor with the volume as the fleet provisions it, where slower than the hardware's (the goal
    is judged against ``floor_seconds``; this explains a gap)."""


@dataclass(frozen=True)
class WarmStartup:
    """An EC2 fleet's warm start (a stopped warm-pool instance started again), phase by phase."""

    phases: list[StartupPhaseLine]
    estimate_seconds: float
    controlled_estimate_seconds: float


@dataclass(frozen=True)
class StartupEvent:
    """A fleet event and the start path it takes (:func:`cdk_neuron.serving.start_paths.event_paths`)."""

    event: str
    path: str
    why: str


@dataclass(frozen=True)
class WarmPoolCost:
    """What the stopped warm pool bills while it waits (:func:`cdk_neuron.serving.start_paths.standing_cost`)."""

    instances: int
    usd_per_month: float
    why: str


@dataclass(frozen=True)
class ServingStartup:
    """The serving fleet's start-up, phase by phase (:func:`cdk_neuron.serving.timing.ec2_startup_model` or
    ``sagemaker_startup_model``): ``phases`` is the cold start (a new launch), which every budget is sized
    for; ``warm`` the start out of the warm pool (EC2 only; None for SageMaker); ``events`` which start
    path each event takes; ``warm_pool_cost`` what the stopped pool bills (None without one)."""

    backend: str
    instance_type: str
    phases: list[StartupPhaseLine]
    estimate_seconds: float
    budget_seconds: int
    load_source: str
    safety: float
    controlled_estimate_seconds: float = 0.0
    warm: WarmStartup | None = None
    events: list[StartupEvent] = field(default_factory=list)
    warm_pool_cost: WarmPoolCost | None = None


@dataclass(frozen=True)
class EnvironmentPlan:
    name: str
    region: str
    az_ids: list[str]
    training: TrainingPlacement | None
    checkpoint: CheckpointPlan | None
    serving: ServingSizing | None
    startup: ServingStartup | None
    result_costs: result_costs.ResultCosts
    omitted: list[str]


@dataclass(frozen=True)
class PlanResult(Result):
    """``cdk-neuron plan``: one plan per environment."""

    command = "plan"
    environments: list[EnvironmentPlan]


def _memory(plan: TrainingPlan) -> TrainingMemoryEstimate | None:
    memory, model = plan.memory, plan.model
    if memory is None or model is None:
        return None
    return TrainingMemoryEstimate(
        model_parameters=int(model.parameters),
        sequence_length=model.sequence_length,
        micro_batch_size=model.micro_batch_size,
        zero1=plan.zero1,
        activation_checkpointing=plan.activation_checkpointing,
        recompute=list(plan.recompute),
        weights_gib=round(memory.weights_gib, 3),
        gradients_gib=round(memory.gradients_gib, 3),
        optimizer_gib=round(memory.optimizer_gib, 3),
        activations_gib=round(memory.activations_gib, 3),
        total_gib=round(memory.total_gib, 3),
        usable_gib=round(memory.usable_gib, 3),
        hbm_gib=memory.hbm_gib,
        assumed=list(memory.assumed),
        sources=list(memory.sources),
    )


def training_section(env: Deployment) -> TrainingPlacement | None:
    training = env.training
    if training is None:
        return None
    plan = training.plan
    return TrainingPlacement(
        instance_type=plan.instance_type,
        az_id=env.training_az_id,
        engine=training.engine,
        capacity=training.capacity.kind,
        nodes=plan.nodes,
        max_nodes=training.max_nodes,
        ranks_per_node=plan.ranks_per_node,
        world_size=plan.world_size,
        tensor_parallel=plan.tensor_parallel,
        pipeline_parallel=plan.pipeline_parallel,
        data_parallel=plan.data_parallel,
        logical_nc_config=plan.logical_nc_config,
        tp_within_neuronlink=plan.tp_within_neuronlink,
        efa_dimensions=list(plan.efa_dimensions),
        efa_traffic=plan.efa_traffic,
        notes=list(plan.notes),
        memory=_memory(plan),
    )


def checkpoint_section(env: Deployment) -> CheckpointPlan | None:
    ckpt = env.training.checkpoint if env.training is not None else None
    if ckpt is None:
        return None
    estimate = estimate_checkpoint(
        ckpt.model_parameters,
        writers=ckpt.writers,
        region=env.region,
        one_zone=env.storage.one_zone,
        master_weights_in_checkpoint=ckpt.master_weights_in_checkpoint,
    )
    return CheckpointPlan(
        model_parameters=estimate.parameters,
        bytes_per_parameter=estimate.bytes_per_parameter,
        size_gb=round(estimate.size_gb, 1),
        writers=estimate.writers,
        throughput_mibps=round(estimate.throughput_mibps),
        limiting_factor=estimate.limiting_factor,
        save_minutes=round(estimate.save_minutes, 1),
        write_cost_usd=round(estimate.write_cost_usd, 2),
        file_system="EFS One Zone" if env.storage.one_zone else "EFS Regional",
        summary=estimate.summary(),
    )


def serving_section(env: Deployment) -> ServingSizing | None:
    serving = env.serving
    if serving is None:
        return None
    plan = serving.plan
    instance = catalog.get_instance(plan.instance_type)
    return ServingSizing(
        backend=serving.backend,
        engine=serving.engine.name,
        model_id=serving.model.model_id,
        instance_type=plan.instance_type,
        instance_chosen_by="configuration" if serving.instance_type else "planner (cheapest fit)",
        neuron_cores=instance.neuron_cores,
        tensor_parallel=plan.tensor_parallel,
        replicas_per_instance=plan.replicas_per_instance,
        weights_gib=plan.weights_gib,
        kv_cache_gib=plan.kv_cache_gib,
        kv_cache_per_core_gib=plan.kv_cache_per_core_gib,
        kv_heads_per_core=plan.kv_heads_per_core,
        hbm_per_core_gib=plan.hbm_per_core_gib,
        hbm_limit_per_core_gib=plan.hbm_limit_per_core_gib,
        headroom=plan.headroom,
        min_capacity=serving.min_capacity,
        max_capacity=serving.max_capacity,
        explanation=plan.explanation,
    )


STARTUP_MODELS: dict[str, Callable[..., timing.StartupModel]] = {
    "ec2": timing.ec2_startup_model,
    "sagemaker": timing.sagemaker_startup_model,
}
"""Each serving backend's start-up model (the backends' phases differ: SageMaker boots and pulls
before its timeouts start)."""


def _phase_lines(model: timing.StartupModel) -> list[StartupPhaseLine]:
    return [
        StartupPhaseLine(
            phase=p.name,
            estimate_seconds=round(p.estimate_seconds, 1),
            budget_seconds=p.budget_seconds,
            floor_seconds=None if p.floor_seconds is None else round(p.floor_seconds, 2),
            ratio=None if p.ratio is None else round(p.ratio, 2),
            budget_ratio=None if p.budget_ratio is None else round(p.budget_ratio, 2),
            basis=p.basis,
            estimate_why=p.estimate_why,
            floor_why=p.floor_why,
            controlled=p.controlled,
            provisioned_floor_seconds=_provisioned(p),
        )
        for p in model.phases
    ]


def _provisioned(phase: timing.StartupPhase) -> float | None:
    """The phase's floor as provisioned, where it differs from the hardware floor (else None)."""
    floor, provisioned = phase.floor_seconds, phase.provisioned_floor_seconds
    if floor is None or provisioned is None or abs(provisioned - floor) < 0.05:
        return None
    return round(provisioned, 2)


def serving_data_volume(serving: ServingDeployment) -> start_paths.DataVolume:
    """The data volume each instance of an EC2 fleet gets (size, throughput, IOPS, its monthly price):
    one computation for ``plan``'s warm-pool cost and ``cost``'s volume lines."""
    plan = serving.plan
    return start_paths.data_volume(
        plan.weights_gib,
        instance_type=plan.instance_type,
        replicas=plan.replicas_per_instance,
        precompiled=serving.model.precompiled,
        warm_pool=serving.warm_pool,
    )


def _warm_pool_cost(env: Deployment) -> WarmPoolCost | None:
    serving = env.serving
    if serving is None or serving.backend != "ec2" or not serving.warm_pool:
        return None
    volume = serving_data_volume(serving)
    cost = start_paths.standing_cost(
        min_capacity=serving.min_capacity,
        max_capacity=serving.max_capacity,
        data_volume_gib=volume.size_gib,
        throughput_mibps=volume.throughput_mibps,
        iops=volume.iops,
        warm_pool_size=serving.warm_pool_size,
    )
    return WarmPoolCost(cost.instances, round(cost.usd_per_month, 2), cost.why)


def startup_section(env: Deployment) -> ServingStartup | None:
    serving = env.serving
    if serving is None:
        return None
    plan = serving.plan
    extra = {"warm_pool": serving.warm_pool} if serving.backend == "ec2" else {}
    model = STARTUP_MODELS[serving.backend](
        plan.weights_gib,
        precompiled=serving.model.precompiled,
        instance_type=plan.instance_type,
        replicas=plan.replicas_per_instance,
        **extra,
    )
    warm: WarmStartup | None = None
    events: list[StartupEvent] = []
    if serving.backend == "ec2" and serving.warm_pool:
        warm_model = timing.ec2_startup_model(
            plan.weights_gib,
            precompiled=serving.model.precompiled,
            instance_type=plan.instance_type,
            replicas=plan.replicas_per_instance,
            path=floors.WARM,
            warm_pool=True,
        )
        warm = WarmStartup(
            phases=_phase_lines(warm_model),
            estimate_seconds=round(warm_model.estimate_seconds, 1),
            controlled_estimate_seconds=round(warm_model.controlled_estimate_seconds, 1),
        )
    if serving.backend == "ec2":
        events = [
            StartupEvent(e.event, e.path, e.why)
            for e in start_paths.event_paths(warm_pool=serving.warm_pool, min_capacity=serving.min_capacity)
        ]
    return ServingStartup(
        backend=serving.backend,
        instance_type=model.instance_type,
        phases=_phase_lines(model),
        estimate_seconds=round(model.estimate_seconds, 1),
        budget_seconds=model.budget_seconds,
        load_source=model.load_source,
        safety=timing.SAFETY,
        controlled_estimate_seconds=round(model.controlled_estimate_seconds, 1),
        warm=warm,
        events=events,
        warm_pool_cost=_warm_pool_cost(env),
    )


def omitted(env: Deployment) -> list[str]:
    """The parts the deployment does not have, each said once (``plan`` and ``cost`` print them)."""
    parts = []
    if env.training is None:
        parts.append("no training cluster: training placement and checkpoint estimate omitted")
    if env.serving is None:
        parts.append("no inference fleet: serving sizing omitted")
    return parts


def build(
    envs: Sequence[Deployment],
    costs: Callable[[Deployment], result_costs.ResultCosts] = result_costs.result_costs,
) -> PlanResult:
    """The plan of every environment; ``costs`` gives each one's costs of a result (default: published
    figures, a trillion training tokens)."""
    return PlanResult(
        environments=[
            EnvironmentPlan(
                name=env.name,
                region=env.region,
                az_ids=list(env.az_ids),
                training=training_section(env),
                checkpoint=checkpoint_section(env),
                serving=serving_section(env),
                startup=startup_section(env),
                result_costs=costs(env),
                omitted=omitted(env),
            )
            for env in envs
        ],
    )


def render(result: PlanResult) -> Report:
    out = Report()
    for env in result.environments:
        t, c, s = env.training, env.checkpoint, env.serving
        where = f"{env.name} ({env.region})"
        for part in env.omitted:
            out.line(f"{where}: {part}")
        if t is not None:
            lnc = f" (LNC={t.logical_nc_config})" if t.logical_nc_config else ""
            az = t.az_id or "an AZ unknown at synthesis"
            out.pairs(
                f"{where}: training placement",
                [
                    ("instance", f"{t.instance_type}{lnc} in {az} ({t.engine}, {t.capacity})"),
                    ("nodes", f"{t.nodes} planned, up to {t.max_nodes}"),
                    ("ranks per node", t.ranks_per_node),
                    ("world size", t.world_size),
                    ("TP x PP x DP", f"{t.tensor_parallel} x {t.pipeline_parallel} x {t.data_parallel}"),
                    ("TP inside NeuronLink", t.tp_within_neuronlink),
                    ("crosses EFA", t.efa_dimensions or "nothing"),
                    ("EFA traffic", t.efa_traffic),
                    ("HBM per NeuronCore", _memory_line(t.memory)),
                ],
            )  # fmt: skip
            if c is not None:
                out.pairs(
                    f"{env.name}: checkpoint estimate",
                    [
                        ("size", f"{c.size_gb:,.1f} GB ({c.model_parameters / 1e9:g}B params x "
                                 f"{c.bytes_per_parameter:g} bytes)"),
                        ("save time", f"{c.save_minutes:.1f} min on {c.file_system}"),
                        ("throughput", f"{c.throughput_mibps:,} MiB/s from {c.writers} writer(s), "
                                       f"{c.limiting_factor} limit"),
                        ("write cost", f"${c.write_cost_usd:,.2f} per save (EFS Elastic writes)"),
                    ],
                )  # fmt: skip
            else:
                out.line(
                    f"{env.name}: no checkpoint estimate (give the checkpoint store model_parameters, "
                    "or set training.checkpoint.model_parameters)"
                )
        if s is not None:
            out.pairs(
                f"{env.name}: serving sizing",
                [
                    ("model", s.model_id),
                    ("instance", f"{s.instance_type} ({s.neuron_cores} NeuronCores), {s.instance_chosen_by}"),
                    ("TP / replicas per instance", f"{s.tensor_parallel} / {s.replicas_per_instance}"),
                    ("HBM per core", f"{s.hbm_per_core_gib:.1f} of {s.hbm_limit_per_core_gib:.0f} GiB "
                                     f"(weights {s.weights_gib:.1f} GiB / TP + KV {s.kv_cache_per_core_gib:.2f} GiB: "
                                     f"{s.kv_heads_per_core} KV head(s) per core)"),
                    ("headroom", f"{s.headroom:.0%} free"),
                    ("capacity", f"{s.min_capacity}-{s.max_capacity} instances ({s.backend}, {s.engine})"),
                ],
            )  # fmt: skip
        if env.startup is not None:
            _render_startup(env.name, env.startup, out)
        result_costs.render(env.name, env.result_costs, out)
        if t is not None:
            out.notes("Notes", t.notes)
        out.blank()
    return out


def _render_startup(name: str, startup: ServingStartup, out: Report) -> None:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f} s" if value >= 10 else f"{value:.1f} s"

    def ratio(line: StartupPhaseLine) -> str:
        if not line.controlled:
            return "runtime (not ours)"
        if line.basis == "skipped":
            return "skipped"
        if line.ratio is None or line.budget_ratio is None:
            return "no floor published"
        return f"{line.ratio:.2f}x / {line.budget_ratio:.2f}x"

    def floor(line: StartupPhaseLine) -> str:
        # The hardware's floor; the volume as provisioned beside it where that is slower.
        if line.provisioned_floor_seconds is None:
            return seconds(line.floor_seconds)
        return f"{seconds(line.floor_seconds)} ({seconds(line.provisioned_floor_seconds)} as provisioned)"

    cold = " (cold: a new launch; every budget is sized for it)" if startup.warm is not None else ""
    out.table(
        f"{name}: start-up ({startup.backend}, {startup.instance_type}), launch to serving{cold}",
        ("Phase", "Estimate", "Budget", "Floor", "Estimate / floor, budget / floor"),
        [
            *(
                (p.phase, f"{seconds(p.estimate_seconds)} ({p.basis})", seconds(p.budget_seconds),
                 floor(p), ratio(p))
                for p in startup.phases
            ),
            ("total", seconds(startup.estimate_seconds), seconds(startup.budget_seconds), "", ""),
        ],
    )  # fmt: skip
    warm = startup.warm
    if warm is not None:
        out.table(
            f"{name}: warm start (a stopped warm-pool instance started again; budgets as cold)",
            ("Phase", "Estimate", "Floor", "Estimate / floor"),
            [
                *(
                    (p.phase, f"{seconds(p.estimate_seconds)} ({p.basis})", seconds(p.floor_seconds),
                     ratio(p).split(" / ")[0])
                    for p in warm.phases
                ),
                ("total", seconds(warm.estimate_seconds), "", ""),
            ],
        )  # fmt: skip
    if startup.events:
        out.table(
            f"{name}: which start each event takes",
            ("Event", "Path", "Why"),
            [(e.event, e.path, e.why) for e in startup.events],
        )
    notes = [
        *(f"{p.phase}: estimate {p.estimate_why}; floor {p.floor_why}" for p in startup.phases),
        *(
            f"warm {p.phase}: estimate {p.estimate_why}; floor {p.floor_why}"
            for p in (warm.phases if warm is not None else [])
        ),
        f"budget = {startup.safety} x estimate (the load's budget: timing.container_ready)",
        f"load figure: {startup.load_source}",
    ]
    if startup.warm_pool_cost is not None:
        cost = startup.warm_pool_cost
        notes.append(f"warm pool, standing cost: ${cost.usd_per_month:,.2f} per month ({cost.why})")
    out.notes("How each start-up figure is derived", notes)


def _memory_line(memory: TrainingMemoryEstimate | None) -> str:
    if memory is None:
        return "not checked: the plan has no model (cdk.json: training.plan.model)"
    assumed = f"; assumed {', '.join(memory.assumed)}" if memory.assumed else ""
    recompute = f" (recompute {', '.join(memory.recompute)})" if memory.recompute else ""
    return (
        f"{memory.total_gib:.2f} of {memory.usable_gib:.2f} GiB usable ({memory.hbm_gib:g} GiB HBM; estimated): "
        f"weights {memory.weights_gib:.2f} + gradients {memory.gradients_gib:.2f} + optimizer "
        f"{memory.optimizer_gib:.2f} + activations {memory.activations_gib:.2f}, for "
        f"{memory.model_parameters / 1e9:.1f}B parameters at sequence {memory.sequence_length:,} x micro-batch "
        f"{memory.micro_batch_size}, ZeRO-1 {'on' if memory.zero1 else 'off'}, activation checkpointing "
        f"{memory.activation_checkpointing}{recompute}{assumed}"
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    ctx.show(
        build(selected(ctx.deployments, args), lambda env: result_costs.from_arguments(env, args)), render
    )
    return ExitStatus.OK


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=False)
    result_costs.arguments(parser)


COMMAND = Command(
    "plan",
    "Training placement, HBM per core, checkpoint estimate, serving sizing and the cost of a result (offline).",
    _run,
    arguments=_arguments,
)

__all__ = [
    "COMMAND",
    "PlanResult",
    "ServingStartup",
    "StartupEvent",
    "WarmPoolCost",
    "WarmStartup",
    "build",
    "omitted",
    "render",
    "startup_section",
]
