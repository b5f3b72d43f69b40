"""NeuronLink-aware planning: training layouts and serving sizes, validated against the catalog.

Plain Python (no ``aws_cdk``). Every construct validates its configuration through these functions,
and the CLI prints their plans.

Training rank layout follows neuronx-distributed (NXD-PS ``initialize_model_parallel``): ranks are
ordered ``[PP, DP, TP]`` row-major with tensor-parallel ranks contiguous, "so as much TP communication
as possible is intra-node". Tensor parallelism needs the most bandwidth, so it must stay inside one
NeuronLink domain: one instance, or one UltraServer when the capacity guarantees it (the
topology-aware launcher then orders ranks by UltraServer); pipeline and data parallelism may cross
the network (EFA).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from cdk_neuron import validation
from cdk_neuron.catalog import (
    INFERENCE_TP_DEGREES,
    INSTANCES,
    NeuronInstance,
    get_instance,
    get_training_instance,
    inference_tp_degrees,
    known_instances,
    on_demand_price,
    tp_disagreement,
    training_tp_degrees,
    training_tp_unsupported,
)
from cdk_neuron.errors import NeuronConfigError, one_of

# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------

# TP degrees that need neuronx-distributed's alternative replica-group logic ("Logic2", NXD-PS).
_TRN2_LOGIC2_TP: dict[int, frozenset[int]] = {1: frozenset({64}), 2: frozenset({32})}


Fabric = str
"""Where a parallel group's collectives run: :data:`FABRIC_INSTANCE`, :data:`FABRIC_ULTRASERVER` or
:data:`FABRIC_EFA`."""
FABRIC_INSTANCE = "NeuronLink (one instance)"
FABRIC_ULTRASERVER = "NeuronLink/NeuronSwitch (one UltraServer)"
FABRIC_EFA = "EFA"
DIMENSIONS = ("tensor", "expert", "data", "pipeline")


@dataclass(frozen=True)
class TrainingPlan:
    """A validated distributed-training layout. Build it with :func:`plan_training`.

    ``neuronlink_domain_instances`` is how many instances the plan may assume share one NeuronLink
    domain: the UltraServer's servers (4 trn2u.48xlarge or Trn3 Gen1 servers, 36 Trn3 Gen2 servers)
    when the plan was made for UltraServer capacity (``ultraserver_capacity=True``), else 1. The
    topology-aware launcher orders ranks so that each run of that many nodes is one UltraServer, and
    refuses to start when the nodes it got do not allow that.

    ``group_fabrics`` says, per parallel dimension (``tensor``, ``expert``, ``data``, ``pipeline``),
    which fabric its widest group crosses: :data:`FABRIC_INSTANCE`, :data:`FABRIC_ULTRASERVER` or
    :data:`FABRIC_EFA`; dimensions of degree 1 are left out.

    ``memory`` is the per-NeuronCore HBM estimate for ``model`` (weights, gradients, optimizer state
    and activations, :class:`TrainingMemory`); plans that cannot fit are refused.
    """

    instance_type: str
    nodes: int
    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    world_size: int
    ranks_per_node: int
    logical_nc_config: int | None
    neuronlink_domain_instances: int
    tp_within_neuronlink: bool
    efa_dimensions: tuple[str, ...]
    notes: tuple[str, ...] = ()
    allow_unlisted_tp: bool = False
    expert_parallel: int = 1
    ultraserver_capacity: bool = False
    group_fabrics: tuple[tuple[str, Fabric], ...] = ()
    model: TrainingModel | None = None
    """What is trained (:class:`TrainingModel`); None when the plan was made without it."""
    zero1: bool = True
    activation_checkpointing: str = "none"
    recompute: tuple[str, ...] = ()
    """The modules recomputed under ``activation_checkpointing="selective"``; empty otherwise."""
    memory: TrainingMemory | None = None
    """The estimated HBM per NeuronCore (:class:`TrainingMemory`); None without a ``model``."""
    hbm_headroom: float = 0.5  # DEFAULT_TRAINING_HEADROOM, defined below

    @property
    def efa_traffic(self) -> str:
        """A one-line description of what crosses EFA."""
        if not self.efa_dimensions:
            return "nothing crosses EFA: the whole job fits in one NeuronLink domain"
        what = {
            "data": "data-parallel gradient all-reduce",
            "pipeline": "pipeline-parallel activations (point-to-point)",
            "tensor": "tensor-parallel collectives (slow: keep TP inside NeuronLink)",
            "expert": "expert-parallel all-to-all (slow: keep EP inside NeuronLink)",
        }
        return "; ".join(what[d] for d in self.efa_dimensions) + " cross EFA"

    @property
    def neuronlink_domain_cores(self) -> int:
        return self.ranks_per_node * min(self.nodes, self.neuronlink_domain_instances)

    @property
    def fabrics(self) -> dict[str, Fabric]:
        """``group_fabrics`` as a dict: dimension -> fabric."""
        return dict(self.group_fabrics)

    @property
    def domain_group_instances(self) -> int:
        """Instances one TP x EP group spans: the launcher keeps each such run inside one domain."""
        return max(1, -(-self.tensor_parallel * self.expert_parallel // self.ranks_per_node))

    def summary(self) -> str:
        lnc = f", LNC={self.logical_nc_config}" if self.logical_nc_config else ""
        ep = f" (EP {self.expert_parallel})" if self.expert_parallel > 1 else ""
        memory = (
            f"; {self.memory.total_gib:.1f} of {self.memory.usable_gib:.1f} GiB usable per NeuronCore (estimated)"
            if self.memory is not None
            else ""
        )
        return (
            f"{self.nodes} x {self.instance_type}{lnc}: {self.ranks_per_node} ranks/node, world {self.world_size} "
            f"= TP {self.tensor_parallel} x PP {self.pipeline_parallel} x DP {self.data_parallel}{ep}; "
            f"TP {'inside' if self.tp_within_neuronlink else 'CROSSES'} NeuronLink; {self.efa_traffic}{memory}"
        )


def _positive_int(field: str, value: object) -> int:
    return validation.whole_number(field, value)


# --------------------------------------------------------------------------------------------
# Training memory per NeuronCore
# --------------------------------------------------------------------------------------------

ACTIVATION_CHECKPOINTING = ("none", "selective", "full")
# The modules neuronx-distributed-training's Llama may recompute under selective checkpointing
# (``activations_checkpoint_recompute``, NXDT-LLAMA), and the set ``"selective"`` recomputes when
# none is given: hf_llama3_70B_config.yaml's [CoreAttention, LlamaMLP] (NXDT-CONF).
RECOMPUTE_MODULES = ("CoreAttention", "LlamaMLP", "ActivationMultiplyMLP", "LlamaRMSNorm")
DEFAULT_RECOMPUTE = ("CoreAttention", "LlamaMLP")


@dataclass(frozen=True)
class ActivationTerm:
    """One tensor a Llama decoder layer keeps from its forward pass for its backward pass.

    Its size is ``bytes + kv_bytes x kv/a + mlp_bytes x f/h`` bytes per ``s x b x h`` (``a`` query
    heads, ``kv`` key/value heads, ``f`` MLP size, ``h`` hidden size), each divided by TP with
    sequence parallelism (ACT-MEM). ``freed_by``: the recomputed modules that drop it (any one
    suffices); ``kept_by``: recomputed modules that keep their input instead, which this term is.
    """

    tensor: str
    saved_by: str
    bytes: float = 0
    kv_bytes: float = 0
    mlp_bytes: float = 0
    freed_by: tuple[str, ...] = ()
    kept_by: tuple[str, ...] = ()

    def size(self, kv_ratio: float, mlp_ratio: float) -> float:
        return self.bytes + self.kv_bytes * kv_ratio + self.mlp_bytes * mlp_ratio

    def stored(self, recompute: tuple[str, ...]) -> bool:
        if self.kept_by:
            return any(m in recompute for m in self.kept_by)
        return not any(m in recompute for m in self.freed_by)


# What one layer of neuronx-distributed-training's Llama keeps for backward, counted tensor by tensor
# as ACT-MEM counts a GPT layer (its 34 s b h bytes), for the module structure of NXDT-LLAMA: RMSNorm
# computed in FP32, no dropout, no biases, grouped-query attention, SwiGLU MLP with a fused gate/up
# projection, and flash attention (every published configuration, NXDT-CONF), which keeps nothing of
# size s x s, so recomputing CoreAttention frees nothing more. 16-bit activations (mixed precision).
ACTIVATION_TERMS: tuple[ActivationTerm, ...] = (
    ActivationTerm(
        "two RMSNorm inputs cast to FP32 (4 bytes each) and their normalized 16-bit values (2 each)",
        "the square, the scaling and the weight multiply", bytes=12, freed_by=("LlamaRMSNorm",),
    ),
    ActivationTerm(
        "two RMSNorm inputs in 16-bit, kept as the recomputation's input", "checkpoint", bytes=4,
        kept_by=("LlamaRMSNorm",),
    ),
    ActivationTerm("attention input (the first norm's output)", "the fused QKV projection", bytes=2),
    ActivationTerm("Q after RoPE, and K and V", "flash attention", bytes=2, kv_bytes=4),
    ActivationTerm("attention output", "flash attention and the output projection", bytes=2),
    ActivationTerm("MLP input (the second norm's output)", "the fused gate/up projection", bytes=2),
    ActivationTerm(
        "gate and up projections", "SiLU and the multiply", mlp_bytes=4, freed_by=("LlamaMLP",)
    ),
    ActivationTerm(
        "SiLU(gate)", "the multiply", mlp_bytes=2, freed_by=("LlamaMLP", "ActivationMultiplyMLP")
    ),
    ActivationTerm("SiLU(gate) x up", "the down projection", mlp_bytes=2, freed_by=("LlamaMLP",)),
)  # fmt: skip

# Bytes per parameter in mixed precision with AdamW, as neuronx-distributed trains (NXD-SMP): bf16
# weights, FP32 gradient accumulation, and FP32 master weights plus two FP32 Adam moments (ZERO's
# K = 12). ZERO counts 2 + 2 + 12 = 16 bytes with 16-bit gradients; NxD's standard mixed precision
# accumulates gradients in FP32, so 2 + 4 + 12 = 18. ZeRO-1 shards the 12 across data-parallel ranks.
WEIGHT_BYTES = 2
GRADIENT_BYTES = 4
OPTIMIZER_BYTES = 12
# The loss is computed on FP32 logits, vocabulary-parallel over TP (s x b x vocab x 4 / TP).
LOGIT_BYTES = 4
# The share of each NeuronCore's HBM left for what the estimate does not count: compiled graphs
# (NEFFs), runtime and collective buffers, XLA temporaries, the all-gathered sequence-parallel inputs
# and fused projections' outputs. Calibrated from both sides on NXDT-CONF, whose every configuration
# runs micro-batch 1 with the comment "limited by TRN memory":
# - from below, every published configuration must fit: by this estimate they use 15 % (Llama 3.1 8B
#   on 32 trn1, hf_llama3.1_8B_config.yaml, the layout NEURON-TRAIN-PERF measured) to 42.5 % (70B on
#   8 trn2.48xlarge) of their cores' HBM;
# - from above, micro-batch 2 of the three 70B configurations estimates at 59 % (32 trn1), 64 % (16
#   trn1) and 66 % (trn2), and must not fit. The same comment stands on the 8B and 405B
#   configurations, whose micro-batch 2 estimates at 20 to 46 %: some below the published 70B trn2 at
#   micro-batch 1, so no limit on this estimate refuses them all. The estimate is a lower bound.
# Half the HBM sits between the two sides, with room for the estimate's own error. A plan above the
# highest published share (PUBLISHED_TRAINING_HBM_SHARE) and within the limit carries a note.
DEFAULT_TRAINING_HEADROOM = 0.5
PUBLISHED_TRAINING_HBM_SHARE = 0.43
TRAINING_MEMORY_SOURCES = ("NXD-SMP", "ZERO", "ACT-MEM", "NXDT-LLAMA", "MODEL-SHAPES", "NXDT-CONF")


@dataclass(frozen=True)
class TrainingModel:
    """The model a training plan is for, and the sequences it is trained on.

    :param parameters: parameter count, e.g. ``70e9``. Required.
    :param layers: transformer layers. Default: None - the nearest reference model's (MODEL-SHAPES).
    :param hidden_size: hidden size. Default: None - the nearest reference model's.
    :param attention_heads: query heads. Default: None - the nearest reference model's.
    :param kv_heads: key/value heads. Default: None - the nearest reference model's.
    :param intermediate_size: MLP intermediate size. Default: None - the nearest reference model's.
    :param vocab_size: vocabulary size. Default: None - the nearest reference model's.
    :param sequence_length: tokens per training sequence. Default: 4096.
    :param micro_batch_size: sequences per data-parallel replica per step. Default: 1.
    """

    parameters: int | float
    layers: int | None = None
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    sequence_length: int = 4096
    micro_batch_size: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", validation.parameter_count("parameters", self.parameters))
        for field in (
            "layers",
            "hidden_size",
            "attention_heads",
            "kv_heads",
            "intermediate_size",
            "vocab_size",
        ):
            if getattr(self, field) is not None:
                validation.whole_number(field, getattr(self, field))
        validation.whole_number("sequence_length", self.sequence_length)
        validation.whole_number("micro_batch_size", self.micro_batch_size)


@dataclass(frozen=True)
class _TrainingShape:
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    intermediate_size: int
    vocab_size: int
    assumed: tuple[str, ...]


def _training_shape(model: TrainingModel) -> _TrainingShape:
    """``model``'s shape, each missing value from the nearest reference model (named in ``assumed``)."""
    reference = _reference_shape(float(model.parameters))
    values: dict[str, int] = {}
    assumed: list[str] = []
    for field in ("layers", "hidden_size", "attention_heads", "kv_heads", "intermediate_size", "vocab_size"):
        given = getattr(model, field)
        values[field] = given if given is not None else getattr(reference, field)
        if given is None:
            assumed.append(f"{field}={values[field]}")
    return _TrainingShape(**values, assumed=tuple(assumed))


@dataclass(frozen=True)
class TrainingMemory:
    """Estimated HBM per NeuronCore of one training plan, in GiB (label: estimated).

    Per core, for a dense decoder trained in mixed precision with AdamW (NXD-SMP, ZERO), with
    sequence parallelism and flash attention as the published NxD Training configurations use
    (NXDT-CONF); ``P`` parameters, layers ``L``, hidden ``h``, sequence ``s``, micro-batch ``b``:

    - weights ``2 P / (TP x PP)``, gradients ``4 P / (TP x PP)`` (FP32 accumulation);
    - optimizer ``12 P / (TP x PP)``, divided by DP with ZeRO-1;
    - activations ``L x s x b x h x c / TP`` plus FP32 logits ``s x b x vocab x 4 / TP``. With 1F1B
      the first pipeline stage holds ``PP`` micro-batches of ``L / PP`` layers, i.e. ``L`` layers'
      worth, whatever PP (ACT-MEM). ``c`` is the bytes a layer keeps per ``s x b x h``, summed over
      :data:`ACTIVATION_TERMS` (ACT-MEM's tensor-by-tensor count, applied to NXDT-LLAMA's layer):
      12 for the two FP32 RMSNorms, 6 + 4 kv/a for attention with flash attention (input, Q, K and
      V, output), 2 + 8 f/h for the SwiGLU MLP (input, gate and up, SiLU(gate), product): 49 for
      Llama 3 8B, 48.5 for 70B. ``selective`` drops what its ``recompute`` modules free (default
      CoreAttention and LlamaMLP: 20.5 for 70B; LlamaRMSNorm and ActivationMultiplyMLP: 33.5);
      ``full`` keeps each layer's input (2) and recomputes one layer at a time.

    K and V count one whole head per rank when TP exceeds the KV heads (NxD Training replicates them,
    ``kv_replicator``). Pipeline stages are averaged: ``P / (TP x PP)`` spreads the embedding and the
    LM head over every stage, while the first stage really holds the embedding (1.05 B parameters for
    Llama 3 70B: about 9 % above the average at PP 8) and the last the LM head and the logits; the
    estimate does not pick the heaviest stage.

    The limit is the core's HBM at the plan's LNC less ``headroom`` (default half, calibrated on
    NxD Training's configurations from both sides: see ``DEFAULT_TRAINING_HEADROOM``). The estimate
    is a lower bound: what it leaves out is as large as what it counts.
    """

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    hbm_gib: float
    headroom: float
    parameters_per_core: int
    assumed: tuple[str, ...] = ()
    sources: tuple[str, ...] = TRAINING_MEMORY_SOURCES

    @property
    def total_gib(self) -> float:
        return self.weights_gib + self.gradients_gib + self.optimizer_gib + self.activations_gib

    @property
    def usable_gib(self) -> float:
        return self.hbm_gib * (1 - self.headroom)

    @property
    def fits(self) -> bool:
        return self.total_gib <= self.usable_gib

    @property
    def share(self) -> float:
        """The estimate's share of the core's HBM."""
        return self.total_gib / self.hbm_gib

    @property
    def beyond_published(self) -> bool:
        """Above every published configuration's share of HBM (:data:`PUBLISHED_TRAINING_HBM_SHARE`)."""
        return self.share > PUBLISHED_TRAINING_HBM_SHARE

    def breakdown(self) -> str:
        return (
            f"weights {self.weights_gib:.2f} + gradients {self.gradients_gib:.2f} + optimizer "
            f"{self.optimizer_gib:.2f} + activations {self.activations_gib:.2f} GiB"
        )

    def explanation(self) -> str:
        assumed = f"; assumed {', '.join(self.assumed)}" if self.assumed else ""
        return (
            f"{self.total_gib:.2f} GiB per NeuronCore ({self.breakdown()}; {self.parameters_per_core:,} "
            f"parameters per core{assumed}) of {self.usable_gib:.2f} usable ({self.hbm_gib:g} GiB less "
            f"{self.headroom:.0%}): estimated from {', '.join(self.sources)}"
        )


def activation_bytes_per_layer(
    kv_heads: int,
    attention_heads: int,
    intermediate_size: int,
    hidden_size: int,
    recompute: tuple[str, ...] = (),
    tensor_parallel: int = 1,
) -> float:
    """Bytes one layer keeps per ``s x b x h`` when ``recompute``'s modules are recomputed
    (:data:`ACTIVATION_TERMS`; before dividing by TP).

    With TP above the KV heads, NxD Training replicates them so each rank holds one whole KV head
    (``kv_replicator``: 4 in its trn1 Llama 3 configurations, 8 KV heads x 4 = TP 32; NXDT-CONF), so
    K and V count ``max(kv, TP) / a`` rather than ``kv / a``: 4 bytes instead of 1 per ``s x b x h``
    for Llama 3 8B at TP 32."""
    kv = max(kv_heads, min(tensor_parallel, attention_heads))
    kv_ratio, mlp_ratio = kv / attention_heads, intermediate_size / hidden_size
    return sum(t.size(kv_ratio, mlp_ratio) for t in ACTIVATION_TERMS if t.stored(recompute))


def _activation_factor(
    shape: _TrainingShape, checkpointing: str, recompute: tuple[str, ...], tp: int
) -> float:
    """Bytes stored per layer and per s x b x h (see :class:`TrainingMemory`)."""
    if checkpointing == "full":
        return 2
    return activation_bytes_per_layer(
        shape.kv_heads, shape.attention_heads, shape.intermediate_size, shape.hidden_size,
        recompute if checkpointing == "selective" else (), tp,
    )  # fmt: skip


def _recompute(checkpointing: str, recompute: object) -> tuple[str, ...]:
    """The modules recomputed: ``recompute`` checked against ``checkpointing``; the default for selective."""
    if recompute is None:
        return DEFAULT_RECOMPUTE if checkpointing == "selective" else ()
    if isinstance(recompute, str) or not isinstance(recompute, (list, tuple)) or not recompute:
        raise NeuronConfigError(
            "recompute", recompute, f"give a list of module names from {one_of(RECOMPUTE_MODULES)}, "
            "e.g. ['CoreAttention', 'LlamaMLP']",
        )  # fmt: skip
    unknown = [m for m in recompute if m not in RECOMPUTE_MODULES]
    if unknown:
        raise NeuronConfigError(
            "recompute", list(recompute), f"unknown module{'s' if len(unknown) > 1 else ''} {one_of(map(repr, unknown))}: use modules from "
            f"{one_of(RECOMPUTE_MODULES)} (neuronx-distributed-training's Llama)",
        )  # fmt: skip
    if checkpointing != "selective":
        raise NeuronConfigError(
            "recompute", list(recompute), f"modules are recomputed only with activation_checkpointing='selective' "
            f"(it is {checkpointing!r}); set it to 'selective' or drop recompute",
        )  # fmt: skip
    return tuple(dict.fromkeys(recompute))


def _training_memory(
    model: TrainingModel,
    shape: _TrainingShape,
    *,
    tp: int,
    pp: int,
    dp: int,
    zero1: bool,
    checkpointing: str,
    recompute: tuple[str, ...],
    hbm_gib: float,
    headroom: float,
) -> TrainingMemory:
    per_core = model.parameters / (tp * pp)
    tokens = model.sequence_length * model.micro_batch_size
    factor = _activation_factor(shape, checkpointing, recompute, tp)
    activations = shape.layers * tokens * shape.hidden_size * factor / tp
    if checkpointing == "full":  # one layer is recomputed at a time, with all its activations
        activations += tokens * shape.hidden_size * _activation_factor(shape, "none", (), tp) / tp
    logits = tokens * shape.vocab_size * LOGIT_BYTES / tp
    return TrainingMemory(
        weights_gib=WEIGHT_BYTES * per_core / _GIB,
        gradients_gib=GRADIENT_BYTES * per_core / _GIB,
        optimizer_gib=OPTIMIZER_BYTES * per_core / (dp if zero1 else 1) / _GIB,
        activations_gib=(activations + logits) / _GIB,
        hbm_gib=hbm_gib,
        headroom=headroom,
        parameters_per_core=math.ceil(per_core),
        assumed=shape.assumed,
    )


def _crosses_domain(group_span: int, domain_ranks: int) -> bool:
    """Whether contiguous, aligned blocks of ``group_span`` ranks straddle NeuronLink domains."""
    return group_span > domain_ranks or domain_ranks % group_span != 0


def _fabric(span: int, ranks_per_node: int, domain_ranks: int) -> Fabric:
    """The fabric a contiguous, aligned block of ``span`` ranks crosses."""
    if not _crosses_domain(span, ranks_per_node):
        return FABRIC_INSTANCE
    # A domain of one instance was crossed just above: only a wider (UltraServer) domain can hold the span.
    if not _crosses_domain(span, domain_ranks):
        return FABRIC_ULTRASERVER
    return FABRIC_EFA


def plan_training(
    instance_type: str | NeuronInstance,
    nodes: int,
    tensor_parallel: int,
    pipeline_parallel: int = 1,
    logical_nc_config: int | None = None,
    *,
    expert_parallel: int = 1,
    ultraserver_capacity: bool = False,
    allow_unlisted_tp: bool = False,
    model: TrainingModel | None = None,
    zero1: bool = True,
    activation_checkpointing: str = "none",
    recompute: Sequence[str] | None = None,
    hbm_headroom: float = DEFAULT_TRAINING_HEADROOM,
) -> TrainingPlan:
    """Plan a distributed training job and refuse layouts that cannot work.

    Ranks are ordered ``[PP, DP, TP]`` row-major (NXD-PS), with expert parallelism (EP) carved out
    of data parallelism: the EP ranks of a TP position are ``expert_parallel`` neighbouring
    DP replicas, so one TP x EP group is ``tensor_parallel x expert_parallel`` contiguous ranks.
    Tensor-parallel and expert-parallel groups must fit one NeuronLink domain; pipeline and data
    parallelism may cross EFA.

    Refuses (with :class:`NeuronConfigError` naming the field): inference instances; ``nodes`` < 1;
    multi-node on an instance without EFA (trn1.2xlarge); a Trn3 plan without ``logical_nc_config``
    (its default LNC is unpublished); TP or TP x EP larger than one NeuronLink domain, or whose
    groups would straddle domains; a domain that spans instances (4 trn2u.48xlarge, 4 or 36 Trn3
    servers) without ``ultraserver_capacity=True``; ``ultraserver_capacity`` on a type that is no
    UltraServer server; a node count that is not a whole number of TP x EP groups; a world size not
    divisible by TP x PP, or a DP degree not divisible by EP; a ``logical_nc_config`` where LNC does
    not apply; trn2 TP degrees neuronx-distributed cannot form (TP 8 at LNC=2, TP 16 at LNC=1); and,
    unless ``allow_unlisted_tp``, any TP degree the catalog does not list for the instance
    (``catalog.TRAINING_TP_DEGREES``).

    ``ultraserver_capacity``: the nodes come from whole UltraServers (an UltraServer Capacity Block,
    ``Capacity.ultraserver_capacity_block``), so TP and EP groups may span the servers of one
    UltraServer; the topology-aware launcher puts each group inside one UltraServer or refuses to
    start. Default False: every instance is its own domain.

    ``allow_unlisted_tp``: an explicit opt-in to an unlisted degree that no source says is broken,
    e.g. TP 16 on trn1 or TP 12, whose groups straddle instances and run their collectives over EFA
    (the plan then says so in ``efa_dimensions`` and ``notes``). It never lets a group straddle an
    UltraServer. Default False.

    ``efa_dimensions`` lists each parallel dimension with at least one group whose ranks sit in
    different NeuronLink domains; ``group_fabrics`` names the fabric of every dimension.

    ``model`` (a :class:`TrainingModel`): what is trained. With it the plan estimates the HBM each
    NeuronCore needs (:class:`TrainingMemory`: weights, gradients, optimizer state and activations)
    and refuses a plan whose estimate exceeds the core's HBM less ``hbm_headroom`` (default 0.5,
    calibrated from both sides on NxD Training's published configurations; the plan's notes say when
    the estimate is above every published one),
    naming the change that frees the most memory: a larger TP or PP, ZeRO-1, activation
    checkpointing, a shorter sequence or a smaller micro-batch. Without it memory is not checked and
    the plan's notes say so. ``zero1`` (default True): the optimizer state is sharded across the
    data-parallel ranks, as neuronx-distributed's ZeRO-1 optimizer does. ``activation_checkpointing``:
    ``"none"`` (default: flash attention only), ``"selective"`` (the ``recompute`` modules are
    recomputed) or ``"full"``. ``recompute``: with ``"selective"``, the modules recomputed, as
    neuronx-distributed-training's ``activations_checkpoint_recompute`` names them
    (:data:`RECOMPUTE_MODULES`). Default: None - ``CoreAttention`` and ``LlamaMLP``, as its Llama 3
    70B configuration; refused with another level.
    """
    instance = get_training_instance(instance_type)
    nodes = _positive_int("nodes", nodes)
    tp = _positive_int("tensor_parallel", tensor_parallel)
    pp = _positive_int("pipeline_parallel", pipeline_parallel)
    ep = _positive_int("expert_parallel", expert_parallel)
    for flag, setting in (
        ("allow_unlisted_tp", allow_unlisted_tp),
        ("ultraserver_capacity", ultraserver_capacity),
        ("zero1", zero1),
    ):
        if not isinstance(setting, bool):
            raise NeuronConfigError(flag, setting, "use True or False")
    validation.choice("activation_checkpointing", activation_checkpointing, ACTIVATION_CHECKPOINTING)
    modules = _recompute(activation_checkpointing, recompute)
    if model is not None and not isinstance(model, TrainingModel):
        raise NeuronConfigError("model", model, "give a TrainingModel, e.g. TrainingModel(parameters=8e9)")
    validation.number("hbm_headroom", hbm_headroom, at_least=0, below=1)
    if logical_nc_config is not None and not instance.supports_logical_nc_config:
        raise NeuronConfigError(
            "logical_nc_config",
            logical_nc_config,
            f"LNC applies only to Trn2 and Trn3 instances; leave it unset for {instance.name}",
        )
    if logical_nc_config is None and not instance.is_known("default_logical_nc_config"):
        raise NeuronConfigError(
            "logical_nc_config",
            None,
            f"the default logical NeuronCore config of {instance.name} is not published (LNC: 1 or 2 apply "
            "to Trn3, the default is stated for Trn2 only); pass logical_nc_config=1 or 2",
        )
    if ultraserver_capacity and not instance.is_ultraserver:
        servers = [n for n, i in INSTANCES.items() if i.is_ultraserver]
        raise NeuronConfigError(
            "ultraserver_capacity",
            True,
            f"{instance.name} is not a server of an UltraServer; UltraServers are made of {one_of(servers)}",
        )
    lnc = instance.default_logical_nc_config if logical_nc_config is None else logical_nc_config
    ranks_per_node = instance.neuron_cores_at(lnc)
    at_lnc = f" at LNC={lnc}" if lnc else ""
    domain_instances = instance.neuronlink_domain_instances if ultraserver_capacity else 1
    domain_ranks = ranks_per_node * domain_instances

    if nodes > 1 and not instance.supports_efa:
        efa_types = [n for n, i in INSTANCES.items() if i.is_training and i.supports_efa]
        raise NeuronConfigError(
            "nodes",
            nodes,
            f"{instance.name} has no EFA, so it cannot run multi-node jobs; use nodes=1 or one of {one_of(efa_types)}",
        )

    listed = training_tp_degrees(instance, lnc)
    if tp > ranks_per_node:
        _check_spanning_group(
            "tensor_parallel",
            tp,
            f"TP {tp}",
            tp,
            instance,
            ranks_per_node,
            domain_ranks,
            ultraserver_capacity,
            at_lnc,
            listed,
        )
    # Where the inference sources say otherwise about this degree (catalog.TP_DISAGREEMENTS), the
    # refusal and the plan say so.
    disagreement = tp_disagreement(instance, lnc, tp)
    disagree = f"; sources disagree: {disagreement}" if disagreement else ""
    broken = training_tp_unsupported(instance, lnc)
    if tp in broken:
        other = 3 - lnc if lnc else None
        elsewhere = (
            f" or LNC={other}" if other is not None and tp in training_tp_degrees(instance, other) else ""
        )
        raise NeuronConfigError(
            "tensor_parallel",
            tp,
            f"neuronx-distributed does not support TP {tp}{at_lnc} on {instance.name} "
            f"(replica groups cannot be formed, NXD-PS); use one of {', '.join(map(str, listed))}{elsewhere}"
            f"{disagree}",
        )
    if tp > ranks_per_node and _crosses_domain(tp, domain_ranks):
        raise NeuronConfigError(
            "tensor_parallel",
            tp,
            f"TP {tp} groups would straddle {instance.name} UltraServers ({domain_ranks} ranks each{at_lnc}); "
            f"TP groups must fit one NeuronLink domain: use a TP that divides {domain_ranks}",
        )
    if tp not in listed and not allow_unlisted_tp:
        straddles = ranks_per_node % tp != 0 and tp < ranks_per_node
        why = (
            f"its groups would straddle {instance.name} instances and run their collectives over EFA"
            if straddles
            else "no training source documents it"
        )
        raise NeuronConfigError(
            "tensor_parallel",
            tp,
            f"TP {tp} is not a documented TP degree on {instance.name}{at_lnc} ({why}); use one of "
            f"{', '.join(map(str, listed))} (catalog.TRAINING_TP_DEGREES), or pass allow_unlisted_tp=True "
            f"to take responsibility for it{disagree}",
        )

    world = nodes * ranks_per_node
    if world % (tp * pp):
        # Blame TP only when TP alone already fails; otherwise PP is the degree to change.
        field, value = ("tensor_parallel", tp) if world % tp else ("pipeline_parallel", pp)
        raise NeuronConfigError(
            field,
            value,
            f"world size {world} ({nodes} node(s) x {ranks_per_node} ranks) is not divisible by "
            f"TP x PP = {tp} x {pp}; choose TP and PP whose product divides {world}",
        )
    dp = world // (tp * pp)
    if dp % ep:
        raise NeuronConfigError(
            "expert_parallel",
            ep,
            f"expert parallelism is carved out of data parallelism: DP {dp} is not divisible by EP {ep}",
        )
    group = tp * ep
    if ep > 1 and _crosses_domain(group, domain_ranks):
        if group > ranks_per_node:
            _check_spanning_group(
                "expert_parallel",
                ep,
                f"TP x EP = {group}",
                group,
                instance,
                ranks_per_node,
                domain_ranks,
                ultraserver_capacity,
                at_lnc,
                None,
            )
        raise NeuronConfigError(
            "expert_parallel",
            ep,
            f"TP x EP = {tp} x {ep} = {group} ranks per expert-parallel group would straddle NeuronLink domains "
            f"of {domain_ranks} ranks on {instance.name}{at_lnc}; expert-parallel groups must fit one domain: "
            f"choose EP so that TP x EP divides {domain_ranks}",
        )
    span = -(-group // ranks_per_node)
    if nodes % span:  # a group within one instance (span 1) always divides the nodes
        raise NeuronConfigError(
            "nodes",
            nodes,
            f"each TP x EP group spans {span} {instance.name} instances of one UltraServer, so the nodes must "
            f"be a whole number of groups: use a multiple of {span}",
        )

    notes: list[str] = []
    tp_inside = not _crosses_domain(tp, domain_ranks)
    if not tp_inside:
        notes.append(
            f"TP {tp} does not divide the {domain_ranks} cores of one NeuronLink domain: some TP groups straddle "
            "instances and their collectives cross EFA (allowed by allow_unlisted_tp)"
        )
    elif tp not in listed:
        notes.append(f"TP {tp} is not a documented degree on {instance.name}{at_lnc} (allow_unlisted_tp)")
    if instance.is_ultraserver and nodes > 1 and not ultraserver_capacity:
        notes.append(
            f"{instance.name} nodes are planned as separate NeuronLink domains: without UltraServer capacity "
            "(ultraserver_capacity=True) nothing guarantees they share an UltraServer, so traffic between nodes "
            "is counted as EFA traffic"
        )
    if ultraserver_capacity and nodes > 1:
        ultra = instance.ultraserver_type
        assert ultra is not None
        notes.append(
            f"{ultra.name}: every {domain_instances} nodes in the launcher's topology order share one "
            f"{ultra.interconnect} domain; the launcher refuses nodes that do not allow the plan"
        )
    if (
        lnc is not None
        and lnc in _TRN2_LOGIC2_TP
        and instance.chip == "trainium2"
        and tp in _TRN2_LOGIC2_TP[lnc]
    ):
        notes.append(
            f"TP {tp} at LNC={lnc} uses neuronx-distributed's alternative replica-group logic (Logic2)"
        )
    if instance.chip == "trainium" and tp == 4:
        notes.append("trn1 TP=4 uses locally connected, non-contiguous ranks; needs LOCAL_WORLD_SIZE")
    if disagreement:
        notes.append(f"TP {tp}: sources disagree: {disagreement}")

    fabrics: list[tuple[str, Fabric]] = []
    if tp > 1:
        fabrics.append(("tensor", _fabric(tp, ranks_per_node, domain_ranks)))
    if ep > 1:
        fabrics.append(("expert", _fabric(group, ranks_per_node, domain_ranks)))
    if dp > 1:
        fabrics.append(("data", _fabric(dp * tp, ranks_per_node, domain_ranks)))
    if pp > 1:
        fabrics.append(("pipeline", _fabric(world, ranks_per_node, domain_ranks)))
    efa = [d for d in ("pipeline", "data") if dict(fabrics).get(d) == FABRIC_EFA]
    if not tp_inside:
        efa.append("tensor")
    memory = None
    if model is not None:
        knobs = _MemoryKnobs(
            instance, model, _training_shape(model), tp=tp, pp=pp, world=world, domain_ranks=domain_ranks,
            lnc=lnc, zero1=zero1, checkpointing=activation_checkpointing, recompute=modules,
            headroom=hbm_headroom,
        )  # fmt: skip
        memory = knobs.estimate()
        if not memory.fits:
            knobs.refuse(memory)
        if memory.beyond_published:
            notes.append(
                f"HBM per NeuronCore: the estimate ({memory.share:.0%} of HBM) is above every published NxD "
                f"Training configuration ({PUBLISHED_TRAINING_HBM_SHARE:.0%} at most), which all run micro-batch 1 "
                "'limited by TRN memory'; it is a lower bound: measure before relying on it"
            )
        if ep > 1:
            notes.append(
                "HBM per NeuronCore is estimated as for a dense model; experts sharded by EP need less"
            )
    # No "expert" here: an EP group that leaves its NeuronLink domain was refused above.
    return TrainingPlan(
        instance_type=instance.name,
        nodes=nodes,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        world_size=world,
        ranks_per_node=ranks_per_node,
        logical_nc_config=lnc,
        neuronlink_domain_instances=domain_instances,
        tp_within_neuronlink=tp_inside,
        efa_dimensions=tuple(efa),
        notes=tuple(notes),
        allow_unlisted_tp=allow_unlisted_tp,
        expert_parallel=ep,
        ultraserver_capacity=ultraserver_capacity,
        group_fabrics=tuple(fabrics),
        model=model,
        zero1=zero1,
        activation_checkpointing=activation_checkpointing,
        recompute=modules,
        memory=memory,
        hbm_headroom=hbm_headroom,
    )


def replan_training(plan: TrainingPlan, **changes: object) -> TrainingPlan:
    """``plan`` planned again with the same inputs (model and memory settings included) except ``changes``,
    e.g. ``replan_training(plan, nodes=4)``."""
    inputs: dict[str, object] = {
        "instance_type": plan.instance_type,
        "nodes": plan.nodes,
        "tensor_parallel": plan.tensor_parallel,
        "pipeline_parallel": plan.pipeline_parallel,
        "logical_nc_config": plan.logical_nc_config,
        "expert_parallel": plan.expert_parallel,
        "ultraserver_capacity": plan.ultraserver_capacity,
        "allow_unlisted_tp": plan.allow_unlisted_tp,
        "model": plan.model,
        "zero1": plan.zero1,
        "activation_checkpointing": plan.activation_checkpointing,
        "recompute": plan.recompute if plan.activation_checkpointing == "selective" else None,
        "hbm_headroom": plan.hbm_headroom,
    }
    unknown = sorted(set(changes) - set(inputs))
    if unknown:
        raise TypeError(f"replan_training() got unknown inputs {', '.join(unknown)}")
    return plan_training(**{**inputs, **changes})  # type: ignore[arg-type]


@dataclass(frozen=True)
class _MemoryKnobs:
    """One plan's memory estimate, and the estimates after each single change that could free memory."""

    instance: NeuronInstance
    model: TrainingModel
    shape: _TrainingShape
    tp: int
    pp: int
    world: int
    domain_ranks: int
    lnc: int | None
    zero1: bool
    checkpointing: str
    recompute: tuple[str, ...]
    headroom: float

    def estimate(self, **changes: Any) -> TrainingMemory:
        settings: dict[str, Any] = {
            "tp": self.tp, "pp": self.pp, "zero1": self.zero1, "checkpointing": self.checkpointing,
            "model": self.model,
        }  # fmt: skip
        settings.update(changes)
        tp, pp = settings["tp"], settings["pp"]
        checkpointing = settings["checkpointing"]
        recompute = self.recompute if checkpointing == self.checkpointing else _recompute(checkpointing, None)
        return _training_memory(
            settings["model"], self.shape, tp=tp, pp=pp, dp=self.world // (tp * pp), zero1=settings["zero1"],
            checkpointing=checkpointing, recompute=recompute, hbm_gib=self.instance.hbm_gib_per_core_at(self.lnc),
            headroom=self.headroom,
        )  # fmt: skip

    def _candidates(self) -> dict[str, list[tuple[object, TrainingMemory]]]:
        """Per knob, each stronger setting that is a valid plan, weakest first, with its estimate."""
        broken = set(training_tp_unsupported(self.instance, self.lnc))
        tps = [
            t for t in training_tp_degrees(self.instance, self.lnc)
            if self.tp < t <= self.domain_ranks and self.world % (t * self.pp) == 0 and t not in broken
        ]  # fmt: skip
        pps: list[int] = []
        pp = self.pp * 2
        while self.world % (self.tp * pp) == 0 and pp <= self.shape.layers:
            pps.append(pp)
            pp *= 2
        levels = ACTIVATION_CHECKPOINTING[ACTIVATION_CHECKPOINTING.index(self.checkpointing) + 1 :]
        sequences = [
            self.model.sequence_length >> k for k in range(1, 6) if self.model.sequence_length >> k >= 128
        ]
        batches = [
            self.model.micro_batch_size >> k for k in range(1, 8) if self.model.micro_batch_size >> k >= 1
        ]
        return {
            "tensor_parallel": [(t, self.estimate(tp=t)) for t in tps],
            "pipeline_parallel": [(p, self.estimate(pp=p)) for p in pps],
            "zero1": [(True, self.estimate(zero1=True))]
            if not self.zero1 and self.world > self.tp * self.pp
            else [],
            "activation_checkpointing": [(c, self.estimate(checkpointing=c)) for c in levels],
            "sequence_length": [
                (n, self.estimate(model=replace(self.model, sequence_length=n))) for n in sequences
            ],
            "micro_batch_size": [
                (n, self.estimate(model=replace(self.model, micro_batch_size=n))) for n in batches
            ],
        }

    def alternatives(self) -> list[tuple[str, object, TrainingMemory]]:
        """(field, value, estimate) per knob: its weakest setting that fits, else its strongest; those
        that fit first, then by the memory left."""
        found = []
        for field, settings in self._candidates().items():
            if settings:
                value, memory = next(((v, m) for v, m in settings if m.fits), settings[-1])
                found.append((field, value, memory))
        return sorted(found, key=lambda change: (not change[2].fits, change[2].total_gib))

    def refuse(self, memory: TrainingMemory) -> NoReturn:
        at_lnc = f" at LNC={self.lnc}" if self.lnc else ""
        what = (
            f"training {self.model.parameters / 1e9:.1f}B parameters (sequence {self.model.sequence_length:,}, "
            f"micro-batch {self.model.micro_batch_size}) needs {memory.total_gib:.2f} GiB per NeuronCore "
            f"({memory.breakdown()}), more than the {memory.usable_gib:.2f} GiB usable on {self.instance.name}"
            f"{at_lnc} ({memory.hbm_gib:g} GiB less {memory.headroom:.0%}; estimated from "
            f"{', '.join(memory.sources)})"
        )
        options = self.alternatives()
        if not options:
            raise NeuronConfigError(
                "model",
                self.model.parameters,
                f"{what}; no single change frees enough: add nodes and raise PP",
            )
        field, value, best = options[0]
        current = {
            "tensor_parallel": self.tp, "pipeline_parallel": self.pp, "zero1": self.zero1,
            "activation_checkpointing": self.checkpointing, "sequence_length": self.model.sequence_length,
            "micro_batch_size": self.model.micro_batch_size,
        }[field]  # fmt: skip
        verdict = "fits" if best.fits else "still too much: combine changes or add nodes"
        others = "; ".join(f"{f}={v!r}: {m.total_gib:.2f} GiB" for f, v, m in options[1:])
        raise NeuronConfigError(
            field,
            current,
            f"{what}; {field}={value!r} frees the most: {best.total_gib:.2f} GiB per NeuronCore ({verdict})"
            + (f"; also {others}" if others else ""),
        )


def _check_spanning_group(
    field: str,
    value: int,
    what: str,
    width: int,
    instance: NeuronInstance,
    ranks_per_node: int,
    domain_ranks: int,
    ultraserver_capacity: bool,
    at_lnc: str,
    listed: tuple[int, ...] | None,
) -> None:
    """Refuse a TP (or TP x EP) group wider than one instance unless an UltraServer guarantees its domain."""
    spans = math.ceil(width / ranks_per_node)
    hint = f"use one of {', '.join(map(str, listed))} and scale with PP/DP" if listed else "lower EP or TP"
    if not instance.is_ultraserver:
        raise NeuronConfigError(
            field,
            value,
            f"{'' if field == 'tensor_parallel' else what + ' '}exceeds the {ranks_per_node} NeuronCores of one "
            f"NeuronLink domain (one {instance.name})"
            f"{at_lnc}; {hint}",
        )
    ultra = instance.ultraserver_type
    assert ultra is not None
    if not ultraserver_capacity:
        raise NeuronConfigError(
            field,
            value,
            f"{what} spans {spans} {instance.name} instances. {ultra.servers} of them form a {ultra.name} over "
            f"{ultra.interconnect}, but only UltraServer capacity guarantees a job's nodes share one: buy an "
            "UltraServer Capacity Block (Capacity.ultraserver_capacity_block) and plan with "
            f"ultraserver_capacity=True, or keep it within one instance ({ranks_per_node} ranks{at_lnc}); {hint}",
        )
    if width > domain_ranks:
        raise NeuronConfigError(
            field,
            value,
            f"{what} exceeds the {domain_ranks} NeuronCores of one {ultra.name}{at_lnc} "
            f"({ultra.servers} x {instance.name}); groups must fit one NeuronLink domain",
        )


# --------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------

BYTES_PER_DTYPE: dict[str, float] = {
    "fp32": 4,
    "float32": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "fp8": 1,
    "int8": 1,
}

# The share of each NeuronCore's 16 GiB kept free for what the sizing formula does not count:
# compiled graphs (NEFFs), runtime and collective buffers, activations. 35 % keeps known-good
# deployments (Llama-3 8B at batch 8 x 4,096 on inf2.xlarge, ~59 % used) and rejects
# Llama 70B on inf2.24xlarge (~69 % used), which public deployments avoid.
DEFAULT_HEADROOM = 0.35
# Loading a model reads its weights into host memory before they reach the NeuronCores (HOST-MEM:
# NxD Inference shards the checkpoint on the host); the instance's RAM must hold them with room for
# the OS, the runtime and the serving process. AWS's rule is only "the model must not exceed the
# instance's available RAM". The reserve is calibrated on the deployments published as working on
# inf2.xlarge's 16 GiB: Meta-Llama-3-8B bf16 (14.96 GiB, HF-SM-LLAMA3), Llama-2-7B fp16 (12.55 GiB,
# LMI-TNX) and CodeLlama-7B fp16 (12.6 GiB, OPTN-NB, whose model card says it "pretty much maxes out
# the RAM"). The largest leaves 1.04 GiB, so weights may use 15/16 of host RAM: 15 GiB on
# inf2.xlarge, 120 GiB on inf2.8xlarge. Near that edge loading is slow (serving/timing.py doubles the
# load time on small hosts); past it, size_model's host_memory_override takes a reason.
DEFAULT_HOST_MEMORY_HEADROOM = 0.0625
# Weights above this share of the instance's RAM leave a margin that holds only with streaming,
# shard-on-load loading (the published inf2.xlarge deployments: Llama-3 8B bf16 leaves 1.04 GiB of 16);
# the plan's explanation says so.
THIN_HOST_MEMORY = 0.9
# The head dimension of most mainstream LLMs (Llama 2/3 from 3B up, Mistral, Qwen), not of all:
# Llama 3.2 1B uses 64 (MODEL-SHAPES). Where the caller gives no head_dim, the nearest reference
# shape's is used, so a 1B-class model is sized with 64.
DEFAULT_HEAD_DIM = 128
# TP degrees come from the Neuron runtime's inference documentation, per instance family
# (catalog.INFERENCE_TP_DEGREES, NXDI-TP). When choosing, size_model only uses degrees that divide
# the instance's cores (no idle cores); an explicit listed degree only has to fit in the instance:
# LMI-TNX runs Llama-2 7B/13B at TP 8 on inf2.24xlarge (12 cores) and TGI-DOC Llama-3 8B on 8 cores.
_SERVING_TP = tuple(
    sorted({tp for lists in INFERENCE_TP_DEGREES.values() for tps in lists.values() for tp in tps})
)
# Who lists which degrees (catalog.INFERENCE_TP_DEGREES): NXDI-TP lists none for Trn3 and not Inf2's
# TP 12, which TP-APPNOTE and OPTN-NB give.
_SERVING_TP_UNION_SOURCES = (
    "NXDI-TP per instance family; TP 12 on Inf2 from TP-APPNOTE; Trn3 from TRN3-TUTORIAL"
)


def _serving_tp_sources(instance: NeuronInstance, degrees: Sequence[int]) -> str:
    """The sources of the inference TP degrees ``degrees`` listed for ``instance``."""
    if instance.chip == "trainium3":
        return "TRN3-TUTORIAL"
    if instance.chip == "inferentia2" and 12 in degrees:
        return "NXDI-TP; TP 12 from TP-APPNOTE and OPTN-NB"
    return "NXDI-TP"


# 8-bit weight formats on Neuron are weight-only quantization (transformers-neuronx / NxD Inference
# dequantize to the 16-bit compute type; LMI-TNX's `load_in_8bit`): the KV cache stays 16-bit unless
# KV-cache quantization is asked for explicitly, so by default it is counted at 2 bytes.
_DEFAULT_KV_CACHE_DTYPE = "bf16"


@dataclass(frozen=True)
class _Shape:
    parameters_b: float
    layers: int
    kv_heads: int
    attention_heads: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    head_dim: int = DEFAULT_HEAD_DIM


# Reference transformer shapes for the KV cache and the training estimate when the caller gives none
# (MODEL-SHAPES, config.json: Llama 3.2 1B/3B, Llama 3.1 8B, Llama 2 13B, Llama 3.1 70B, Llama 3.1 405B):
# layers, KV heads, attention heads, hidden size, intermediate (MLP) size, vocabulary. Llama 3.2 1B
# has 64-dimensional heads (2,048 hidden / 32 heads); the others 128.
_REFERENCE_SHAPES = (
    _Shape(1.2, 16, 8, 32, 2048, 8192, 128256, head_dim=64),
    _Shape(3.2, 28, 8, 24, 3072, 8192, 128256),
    _Shape(8.0, 32, 8, 32, 4096, 14336, 128256),
    _Shape(13.0, 40, 40, 40, 5120, 13824, 32016),
    _Shape(70.6, 80, 8, 64, 8192, 28672, 128256),
    _Shape(405.0, 126, 8, 128, 16384, 53248, 128256),
)


def kv_heads_per_core(kv_heads: int, attention_heads: int, tensor_parallel: int) -> int:
    """KV heads each NeuronCore holds at ``tensor_parallel``, as NxD Inference shards attention.

    NxD Inference (used by optimum-neuron and TGI's Neuron backend) pads the query heads to a
    multiple of TP and, by default (``GQA.REPLICATE_TO_TP_DEGREE``), replicates the KV heads so each
    rank holds one when TP exceeds them: 8 KV heads at TP 32 become 32, one per core. When TP is
    not a multiple of the KV heads it converts to MHA (``GQA.CONVERT_TO_MHA``): the KV heads become
    the padded query heads (NXDI-GQA). KV heads are never split below one per core, so the per-core
    KV cache is ``ceil(kv_heads / TP)`` heads at least, and never less than one head.
    """
    padded_attention = math.ceil(attention_heads / tensor_parallel) * tensor_parallel
    if attention_heads == kv_heads:  # MHA: the KV heads are padded like the query heads
        heads = padded_attention
    elif kv_heads < tensor_parallel or kv_heads % tensor_parallel:
        heads = tensor_parallel if tensor_parallel % kv_heads == 0 else padded_attention
    else:
        heads = kv_heads
    return heads // tensor_parallel


@dataclass(frozen=True)
class ServingPlan:
    """A validated serving size. Build it with :func:`size_model`."""

    instance_type: str
    tensor_parallel: int
    replicas_per_instance: int
    devices_per_replica: int
    weights_gib: float
    kv_cache_gib: float
    """The model's KV cache (every layer, KV head, position and sequence), before replication."""
    hbm_per_core_gib: float
    hbm_limit_per_core_gib: float
    headroom: float
    explanation: str
    kv_cache_per_core_gib: float = 0.0
    """The KV cache one NeuronCore holds: its share of the KV heads, at least one head (replicated)."""
    kv_heads_per_core: int = 0
    host_memory_limit_gib: float = 0.0
    """Host RAM the weights may use while loading: the instance's memory less the host headroom."""
    host_memory_override: str | None = None
    """The reason the host-memory check was skipped (``size_model(host_memory_override=...)``), else None."""

    @property
    def neuron_cores_used(self) -> int:
        return self.tensor_parallel * self.replicas_per_instance

    def visible_cores(self, replica: int) -> str:
        """``NEURON_RT_VISIBLE_CORES`` for one replica, e.g. ``"2-3"``."""
        if not 0 <= replica < self.replicas_per_instance:
            raise NeuronConfigError(
                "replica", replica, f"valid replicas are 0..{self.replicas_per_instance - 1}"
            )
        first = replica * self.tensor_parallel
        last = first + self.tensor_parallel - 1
        return str(first) if first == last else f"{first}-{last}"

    def devices(self, replica: int) -> tuple[str, ...]:
        """The ``/dev/neuronN`` devices that hold one replica's cores."""
        self.visible_cores(replica)  # validates the replica index
        instance = get_instance(self.instance_type)
        cores_per_chip = instance.neuron_cores // instance.chips
        first = replica * self.tensor_parallel
        chips = range(first // cores_per_chip, (first + self.tensor_parallel - 1) // cores_per_chip + 1)
        return tuple(f"/dev/neuron{c}" for c in chips)


def _reference_shape(parameters: float) -> _Shape:
    # Compare logarithms rather than the ratio: parameters / 1e9 underflows to 0 for tiny inputs.
    log_params = math.log(parameters)
    return min(_REFERENCE_SHAPES, key=lambda s: abs(math.log(s.parameters_b * 1e9) - log_params))


def _dtype_bytes(field: str, dtype: object) -> float:
    if not isinstance(dtype, str) or dtype.lower() not in BYTES_PER_DTYPE:
        raise NeuronConfigError(field, dtype, f"use one of {one_of(BYTES_PER_DTYPE)}")
    return BYTES_PER_DTYPE[dtype.lower()]


def kv_cache_bytes(
    *,
    layers: int,
    kv_heads: int,
    head_dim: int,
    sequence_length: int,
    batch_size: int,
    bytes_per_value: float,
) -> float:
    """Keys and values for every layer, KV head and position: 2 x L x H_kv x d x S x B x bytes."""
    return 2 * layers * kv_heads * head_dim * sequence_length * batch_size * bytes_per_value


def _serving_tp_options(instance: NeuronInstance) -> list[int]:
    """TP degrees size_model chooses from: they divide the cores, so replicas use every core."""
    return [tp for tp in _serving_tp_allowed(instance) if instance.neuron_cores % tp == 0]


def _serving_tp_allowed(instance: NeuronInstance) -> list[int]:
    """TP degrees a caller may ask for on ``instance`` (leftover cores stay idle): the runtime's list."""
    return list(inference_tp_degrees(instance))


def size_model(
    parameters: int | float,
    dtype: str = "bf16",
    sequence_length: int = 4096,
    batch_size: int = 1,
    kv_heads: int | None = None,
    layers: int | None = None,
    hidden_size: int | None = None,
    instance_type: str | None = None,
    tensor_parallel: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
    kv_cache_dtype: str | None = None,
    host_memory_headroom: float = DEFAULT_HOST_MEMORY_HEADROOM,
    host_memory_override: str | None = None,
) -> ServingPlan:
    """Size a model for Inferentia2 serving under the 16 GiB-per-NeuronCore limit.

    Memory per core = weights / TP + the KV heads the core holds (for ``batch_size x sequence_length``); it must leave
    ``headroom`` (default 0.35) of the core's HBM (16 GiB on Inf2 and Trn1) free: TGI-DOC's rule, with
    room for compiled graphs, runtime buffers and activations.

    Host memory: loading reads the weights into the instance's RAM (HOST-MEM), once per replica (the
    EC2 fleet starts one serving process per replica), so replicas x weights may use at most
    ``1 - host_memory_headroom`` of it (default 15/16, calibrated on the 7-8B deployments published
    on inf2.xlarge: Llama-3 8B bf16's 14.96 GiB loads on its 16 GiB); an instance whose RAM one
    replica does not fit is refused and never chosen, and a TP that packs more replicas than the RAM
    loads is not chosen either. ``host_memory_override``: a reason (e.g. a measured peak RSS) to
    skip the host-memory check; the plan records it and its explanation repeats it.

    Without ``instance_type`` it picks the cheapest Inf2 that fits HBM and host RAM, and on it the smallest TP that
    divides the instance's cores and fits, so several replicas share an instance when TP < NeuronCores
    (70B bf16 -> inf2.48xlarge TP 24; 8B bf16 -> inf2.xlarge TP 2; 3B bf16 -> inf2.xlarge TP 1). With ``instance_type`` it
    validates instead and refuses what does not fit, naming the instance that would. An explicit
    ``tensor_parallel`` (default: chosen) may leave cores idle, e.g. TP 8 on inf2.24xlarge.

    The KV cache is 2 x layers x KV heads x head dim x positions x batch x bytes, with the nearest
    reference model's head dimension (64 for a Llama 3.2 1B-sized model, else 128); ``hidden_size`` alone
    means multi-head attention (one KV head per attention head); missing shape values come from the
    nearest reference model, as the explanation says. Per NeuronCore it is not KV / TP: each core
    holds whole KV heads, at least one, replicated when TP exceeds the KV heads (NxD Inference's
    GQA sharding, :func:`kv_heads_per_core`): Llama-3 70B's 8 KV heads at TP 24 cost each core one
    head, three times its even share. ``kv_cache_dtype`` defaults to ``dtype`` for
    16/32-bit weights and to bf16 for 8-bit weights (Neuron's int8/fp8 are weight-only by default).
    """
    params, kv_dtype, sequence_length, batch_size = _check_serving_inputs(
        parameters, dtype, kv_cache_dtype, sequence_length, batch_size, kv_heads, layers, hidden_size,
        headroom, host_memory_headroom, tensor_parallel,
    )  # fmt: skip
    host_memory_override = host_memory_override_reason(host_memory_override)
    shape = _model_shape(params, kv_heads=kv_heads, layers=layers, hidden_size=hidden_size)
    sizing = _Sizing(
        weights=params * BYTES_PER_DTYPE[dtype.lower()] / _GIB,  # dtype checked above
        kv_per_head=kv_cache_bytes(
            layers=shape.layers,
            kv_heads=1,
            head_dim=shape.head_dim,
            sequence_length=sequence_length,
            batch_size=batch_size,
            bytes_per_value=BYTES_PER_DTYPE[kv_dtype],
        )
        / _GIB,
        shape=shape,
        headroom=headroom,
        host_memory_headroom=host_memory_headroom,
        host_memory_override=host_memory_override,
    )
    # What would fit with TP left free: the suggestion in every refusal.
    free_fit = sizing.cheapest(None)
    suggestion = (
        f"{free_fit[0].name} with TP {free_fit[1]} would fit"
        if free_fit is not None
        else "no Inf2 instance fits: quantize (fp8/int8), shorten the sequence, lower the batch "
        "or shard across instances"
    )
    if instance_type is not None:
        instance = get_instance(instance_type)
        tp = _tp_on_instance(sizing, instance, tensor_parallel, dtype=dtype, suggestion=suggestion)
    else:
        chosen = sizing.cheapest(tensor_parallel)
        if chosen is None:
            _refuse_everywhere(
                sizing,
                tensor_parallel,
                free_fit=free_fit,
                suggestion=suggestion,
                parameters=parameters,
                dtype=dtype,
                batch_size=batch_size,
                sequence_length=sequence_length,
            )
        instance, tp = chosen
    return _serving_plan(
        sizing, instance, tp, params=params, dtype=dtype, kv_dtype=kv_dtype, batch_size=batch_size,
        sequence_length=sequence_length,
    )  # fmt: skip


_GIB = 2**30


def host_memory_override_reason(reason: object) -> str | None:
    """``host_memory_override``: None, or the reason the host-memory check does not apply."""
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise NeuronConfigError(
            "host_memory_override",
            reason,
            "give the reason the host-memory check does not apply, e.g. 'measured: 14.2 GiB peak RSS while "
            "loading on inf2.xlarge, 2026-11-30'",
        )
    return reason.strip()


def _fraction(field: str, value: object, example: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise NeuronConfigError(field, value, f"must be a fraction in [0, 1), e.g. {example}")
    return float(value)


def _check_serving_inputs(
    parameters: object,
    dtype: str,
    kv_cache_dtype: str | None,
    sequence_length: object,
    batch_size: object,
    kv_heads: object,
    layers: object,
    hidden_size: object,
    headroom: object,
    host_memory_headroom: object,
    tensor_parallel: object,
) -> tuple[float, str, int, int]:
    """Every input of :func:`size_model` checked; returns (parameters, KV-cache dtype, sequence, batch)."""
    params = float(validation.parameter_count("parameters", parameters))
    bytes_per = _dtype_bytes("dtype", dtype)
    if kv_cache_dtype is None:
        kv_dtype = dtype.lower() if bytes_per >= 2 else _DEFAULT_KV_CACHE_DTYPE
    else:
        _dtype_bytes("kv_cache_dtype", kv_cache_dtype)
        kv_dtype = kv_cache_dtype.lower()
    sequence = _positive_int("sequence_length", sequence_length)
    batch = _positive_int("batch_size", batch_size)
    for field, value in (("kv_heads", kv_heads), ("layers", layers), ("hidden_size", hidden_size)):
        if value is not None:
            _positive_int(field, value)
    _fraction("headroom", headroom, "0.35")
    _fraction("host_memory_headroom", host_memory_headroom, "0.25")
    if tensor_parallel is not None:
        _positive_int("tensor_parallel", tensor_parallel)
        if tensor_parallel not in _SERVING_TP:
            raise NeuronConfigError(
                "tensor_parallel",
                tensor_parallel,
                f"the Neuron runtime supports TP degrees {', '.join(map(str, _SERVING_TP))} for inference "
                f"({_SERVING_TP_UNION_SOURCES})",
            )
    return params, kv_dtype, sequence, batch


@dataclass(frozen=True)
class _ModelShape:
    """The attention shape the KV cache is sized with, and which parts came from a reference model."""

    layers: int
    kv_heads: int
    head_dim: int
    attention_heads: int
    attention_assumed: bool
    assumed: tuple[str, ...]


def _model_shape(
    params: float, *, kv_heads: int | None, layers: int | None, hidden_size: int | None
) -> _ModelShape:
    reference = _reference_shape(params)
    assumed: list[str] = []
    n_layers = layers or reference.layers
    if layers is None:
        assumed.append(f"layers={n_layers}")
    # The nearest reference model's head dimension (64 for Llama 3.2 1B, 128 for the others).
    head_dim = reference.head_dim
    if head_dim != DEFAULT_HEAD_DIM:
        assumed.append(f"head_dim={head_dim}")
    if kv_heads is not None:
        n_kv_heads = kv_heads
    elif hidden_size is not None:
        n_kv_heads = max(1, hidden_size // head_dim)  # MHA: one KV head per attention head
    else:
        n_kv_heads = reference.kv_heads
        assumed.append(f"kv_heads={n_kv_heads}")
    # Query heads only matter when NxD Inference converts GQA to MHA (TP not a multiple of the KV heads).
    if hidden_size is not None:
        n_attention_heads, attention_assumed = max(n_kv_heads, hidden_size // head_dim), False
    elif kv_heads is None:
        n_attention_heads, attention_assumed = reference.attention_heads, False  # with the reference KV heads
    else:
        n_attention_heads, attention_assumed = max(kv_heads, reference.attention_heads), True
    return _ModelShape(n_layers, n_kv_heads, head_dim, n_attention_heads, attention_assumed, tuple(assumed))


@dataclass(frozen=True)
class _Sizing:
    """One model's memory needs, per NeuronCore and per host, against each inference instance."""

    weights: float
    kv_per_head: float
    shape: _ModelShape
    headroom: float
    host_memory_headroom: float
    host_memory_override: str | None = None

    @property
    def kv(self) -> float:
        return self.kv_per_head * self.shape.kv_heads

    def heads_per_core(self, tp: int) -> int:
        return kv_heads_per_core(self.shape.kv_heads, self.shape.attention_heads, tp)

    def per_core(self, tp: int) -> float:
        """HBM one NeuronCore needs: its weight shard and its KV heads (at least one, NXDI-GQA)."""
        return self.weights / tp + self.kv_per_head * self.heads_per_core(tp)

    def usable(self, instance: NeuronInstance) -> float:
        return instance.hbm_gib_per_core * (1 - self.headroom)

    def host_usable(self, instance: NeuronInstance) -> float:
        return instance.memory_gib * (1 - self.host_memory_headroom)

    def host_need(self, instance: NeuronInstance, tp: int) -> float:
        """Host RAM for loading: every replica on the instance is a process reading its own copy."""
        return instance.neuron_cores // tp * self.weights

    def host_fits(self, instance: NeuronInstance) -> bool:
        """Whether one replica's weights fit the instance's usable host RAM (or the check is overridden)."""
        return self.host_memory_override is not None or self.weights <= self.host_usable(instance)

    def host_loads(self, instance: NeuronInstance, tp: int) -> bool:
        """Whether every replica at ``tp`` loads within the usable host RAM (or the check is overridden)."""
        return self.host_memory_override is not None or self.host_need(instance, tp) <= self.host_usable(
            instance
        )

    def fit(self, instance: NeuronInstance, fixed_tp: int | None) -> int | None:
        """The smallest TP that fits on ``instance`` (only ``fixed_tp`` when given), host RAM included."""
        if fixed_tp is None:
            options = _serving_tp_options(instance)
        else:
            options = [fixed_tp] if fixed_tp in _serving_tp_allowed(instance) else []
        return next(
            (
                tp
                for tp in options
                if self.per_core(tp) <= self.usable(instance) and self.host_loads(instance, tp)
            ),
            None,
        )

    @staticmethod
    def candidates() -> list[NeuronInstance]:
        return sorted(
            (INSTANCES[n] for n in known_instances("inference")),
            key=lambda i: on_demand_price(i.name).usd_per_hour,
        )

    def cheapest(self, fixed_tp: int | None) -> tuple[NeuronInstance, int] | None:
        for candidate in self.candidates():
            candidate_tp = self.fit(candidate, fixed_tp)
            if candidate_tp is not None:
                return candidate, candidate_tp
        return None


def _tp_on_instance(
    sizing: _Sizing, instance: NeuronInstance, tensor_parallel: int | None, *, dtype: str, suggestion: str
) -> int:
    """The TP on a given instance, or the refusal that names what does not fit and what would."""
    if tensor_parallel is not None and tensor_parallel not in _serving_tp_allowed(instance):
        disagreement = tp_disagreement(instance, None, tensor_parallel)
        raise NeuronConfigError(
            "tensor_parallel",
            tensor_parallel,
            f"{instance.name} has {instance.neuron_cores} NeuronCores; the Neuron runtime supports TP "
            f"{', '.join(map(str, _serving_tp_allowed(instance)))} for inference there "
            f"({_serving_tp_sources(instance, _serving_tp_allowed(instance))})"
            + (f"; sources disagree: {disagreement}" if disagreement else ""),
        )
    weights, usable = sizing.weights, sizing.usable(instance)
    if not sizing.host_fits(instance):
        raise NeuronConfigError(
            "instance_type",
            instance.name,
            f"{weights:.1f} GiB of weights at {dtype} exceed the {sizing.host_usable(instance):.1f} GiB of host "
            f"memory usable on {instance.name} ({instance.memory_gib} GiB less "
            f"{sizing.host_memory_headroom:.2%}): loading reads the weights into host memory (HOST-MEM); "
            f"{suggestion}, or give host_memory_override a reason",
        )
    chosen_tp = sizing.fit(instance, tensor_parallel)
    if chosen_tp is not None:
        return chosen_tp
    here = sizing.fit(instance, None)
    if tensor_parallel is not None and here is not None:
        if sizing.per_core(tensor_parallel) <= usable:
            raise NeuronConfigError(
                "tensor_parallel",
                tensor_parallel,
                f"{instance.neuron_cores // tensor_parallel} replicas of {weights:.1f} GiB load "
                f"{sizing.host_need(instance, tensor_parallel):.1f} GiB into host memory, more than the "
                f"{sizing.host_usable(instance):.1f} GiB usable on {instance.name} (HOST-MEM); TP {here} fits there",
            )
        raise NeuronConfigError(
            "tensor_parallel",
            tensor_parallel,
            f"{sizing.per_core(tensor_parallel):.1f} GiB per NeuronCore exceeds the "
            f"{usable:.1f} GiB usable on {instance.name}; TP {here} fits there",
        )
    best = min(sizing.per_core(t) for t in _serving_tp_allowed(instance))
    raise NeuronConfigError(
        "instance_type",
        instance.name,
        f"model needs {weights + sizing.kv:.1f} GiB (weights {weights:.1f} + KV cache {sizing.kv:.1f}); at least "
        f"{best:.1f} GiB per NeuronCore on {instance.name} exceeds the {usable:.1f} GiB usable "
        f"({instance.hbm_gib_per_core:.0f} GiB less {sizing.headroom:.0%} headroom); {suggestion}",
    )


def _refuse_everywhere(
    sizing: _Sizing,
    tensor_parallel: int | None,
    *,
    free_fit: tuple[NeuronInstance, int] | None,
    suggestion: str,
    parameters: object,
    dtype: str,
    batch_size: int,
    sequence_length: int,
) -> NoReturn:
    """No inference instance fits: name the input that broke it (the weights, or the KV cache on top)."""
    if tensor_parallel is not None and free_fit is not None:
        raise NeuronConfigError(
            "tensor_parallel",
            tensor_parallel,
            f"{sizing.per_core(tensor_parallel):.1f} GiB per NeuronCore does not fit any Inf2 instance "
            f"with {sizing.headroom:.0%} headroom; {suggestion}",
        )
    weights_fit = any(
        sizing.host_fits(i) and sizing.weights / max(_serving_tp_options(i)) <= sizing.usable(i)
        for i in sizing.candidates()
    )
    culprit: tuple[str, object] = ("parameters", parameters)
    if weights_fit:
        culprit = ("batch_size", batch_size) if batch_size > 1 else ("sequence_length", sequence_length)
    weights, kv = sizing.weights, sizing.kv
    raise NeuronConfigError(
        *culprit,
        f"needs {weights + kv:.1f} GiB at {dtype} (weights {weights:.1f} + KV cache {kv:.1f} for batch "
        f"{batch_size} x {sequence_length}), more than any Inf2 instance holds with {sizing.headroom:.0%} "
        "headroom; quantize (fp8/int8), shorten the sequence, lower the batch or shard across instances",
    )


def _serving_plan(
    sizing: _Sizing,
    instance: NeuronInstance,
    tp: int,
    *,
    params: float,
    dtype: str,
    kv_dtype: str,
    batch_size: int,
    sequence_length: int,
) -> ServingPlan:
    shape, weights, kv = sizing.shape, sizing.weights, sizing.kv
    core_gib = sizing.per_core(tp)
    core_heads = sizing.heads_per_core(tp)
    kv_core = sizing.kv_per_head * core_heads
    replicated = core_heads * tp > shape.kv_heads
    assumed = list(shape.assumed)
    if shape.attention_assumed and core_heads * tp > max(shape.kv_heads, tp):
        assumed.append(f"attention_heads={shape.attention_heads}")
    replicas = instance.neuron_cores // tp
    cores_per_chip = instance.neuron_cores // instance.chips
    limit = instance.hbm_gib_per_core
    kv_note = f" at {kv_dtype}" if kv_dtype != dtype.lower() else ""
    heads_note = f"{core_heads} of {shape.kv_heads} KV head(s) per core{', replicated' if replicated else ''}"
    explanation = (
        f"{params / 1e9:.1f}B params at {dtype} = {weights:.1f} GiB weights + {kv:.1f} GiB KV cache{kv_note} "
        f"(batch {batch_size} x {sequence_length}{'; assumed ' + ', '.join(assumed) if assumed else ''}); "
        f"per NeuronCore at TP {tp}: {weights / tp:.1f} GiB weights + {kv_core:.2f} GiB KV ({heads_note}) "
        f"= {core_gib:.1f} GiB of {limit:.0f} ({1 - core_gib / limit:.0%} free) on {instance.name}, "
        f"{replicas} replica(s) per instance; host RAM for loading: {sizing.host_need(instance, tp):.1f} of "
        f"{sizing.host_usable(instance):.0f} GiB usable"
    )
    if sizing.host_memory_override is not None:
        explanation += f" (host-memory check overridden: {sizing.host_memory_override})"
    elif sizing.host_need(instance, tp) > THIN_HOST_MEMORY * instance.memory_gib:
        explanation += (
            f" (within {1 - THIN_HOST_MEMORY:.0%} of the instance's {instance.memory_gib:g} GiB of RAM: it holds "
            "while loading streams safetensors and shards them on load, as NxD Inference and optimum-neuron do; "
            "a .bin checkpoint, or loading without shard-on-load, can run out of host memory)"
        )
    disagreement = tp_disagreement(instance, None, tp)
    if disagreement is not None:
        explanation += f"; TP {tp}: sources disagree: {disagreement}"
    return ServingPlan(
        instance_type=instance.name,
        tensor_parallel=tp,
        replicas_per_instance=replicas,
        devices_per_replica=math.ceil(tp / cores_per_chip),
        weights_gib=round(weights, 3),
        kv_cache_gib=round(kv, 3),
        hbm_per_core_gib=round(core_gib, 3),
        hbm_limit_per_core_gib=limit,
        headroom=round(1 - core_gib / limit, 4),
        explanation=explanation,
        kv_cache_per_core_gib=round(kv_core, 4),
        kv_heads_per_core=core_heads,
        host_memory_limit_gib=round(sizing.host_usable(instance), 3),
        host_memory_override=sizing.host_memory_override,
    )


__all__ = [
    "ACTIVATION_CHECKPOINTING",
    "ACTIVATION_TERMS",
    "BYTES_PER_DTYPE",
    "DEFAULT_HEADROOM",
    "DEFAULT_HOST_MEMORY_HEADROOM",
    "DEFAULT_RECOMPUTE",
    "DEFAULT_TRAINING_HEADROOM",
    "DIMENSIONS",
    "FABRIC_EFA",
    "FABRIC_INSTANCE",
    "FABRIC_ULTRASERVER",
    "PUBLISHED_TRAINING_HBM_SHARE",
    "RECOMPUTE_MODULES",
    "ActivationTerm",
    "ServingPlan",
    "TrainingMemory",
    "TrainingModel",
    "TrainingPlan",
    "activation_bytes_per_layer",
    "host_memory_override_reason",
    "kv_cache_bytes",
    "kv_heads_per_core",
    "plan_training",
    "replan_training",
    "size_model",
]
