"""Training plans check HBM per NeuronCore: the published NxD Training configurations fit, others are refused.

Expected values are worked by hand from the formula in ``planner.TrainingMemory`` (sources NXD-SMP,
ZERO, ACT-MEM, NXDT-LLAMA) and the model shapes of config.json (MODEL-SHAPES), never read from the planner:

- per core ``P / (TP x PP)`` parameters; weights 2 bytes, gradients 4 (FP32 accumulation),
  optimizer 12 (FP32 master + Adam m, v), divided by DP with ZeRO-1;
- activations ``L x s x b x h x c / TP`` plus FP32 logits ``s x b x vocab x 4 / TP``, with ``c`` the
  bytes per ``s b h`` a layer keeps, counted tensor by tensor as ACT-MEM counts its 34 for GPT:
  norms 12 (two RMSNorms, each an FP32 copy of its input, 4, and its normalized 16-bit value, 2),
  attention 6 + 4 kv'/a (input 2, Q 2, K and V 4 kv'/a, output 2; flash attention keeps nothing s x s),
  MLP 2 + 8 f/h (input 2, gate and up 4 f/h, SiLU(gate) 2 f/h, product 2 f/h). ``kv'`` is
  ``max(kv, TP)``: with TP above the KV heads NxD Training replicates them so each rank holds one
  (kv_replicator 4 on trn1: 8 x 4 = 32).
  Llama 3 8B at TP 32 (kv'/a 1, f/h 3.5): 12 + 10 + 30 = 52; at TP 16 (kv'/a 1/2): 50. 70B at TP 32
  (kv'/a 1/2): 12 + 8 + 30 = 50. Recomputing LlamaMLP leaves its input (2): 22 for 70B at TP 32, 24
  for 8B; LlamaRMSNorm leaves each norm's 16-bit input (4 instead of 12) and ActivationMultiplyMLP
  drops SiLU(gate) (2 f/h): 4 + 8 + 2 + 21 = 35 for 70B at TP 32; CoreAttention frees nothing with
  flash attention. ``full`` keeps each layer's input (2) plus one whole layer while it is recomputed.
- the limit is half the core's HBM (DEFAULT_TRAINING_HEADROOM 0.5), calibrated from both sides: the
  published configurations fit (15-42.5 % of HBM by this estimate) and the micro-batch-2 variants of
  the three 70B configurations, which NxD Training marks "limited by TRN memory", do not (59-66 %).

Llama 3.1 8B: 8,030,261,248 parameters, 32 layers, hidden 4,096, 32 heads, 8 KV heads, MLP 14,336,
vocabulary 128,256. Llama 3.1 70B: 70,553,706,496, 80 layers, hidden 8,192, 64 heads, 8 KV heads,
MLP 28,672, vocabulary 128,256. Llama 3.1 405B: 405,853,388,800 (126 layers of 3,187,703,808 plus
two 128,256 x 16,384 embeddings and the final norm), hidden 16,384, 128 heads, 8 KV heads, MLP 53,248.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cdk_neuron import planner
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import TrainingModel, plan_training, replan_training

LLAMA3_8B = TrainingModel(parameters=8_030_261_248, sequence_length=8192)
LLAMA3_70B = TrainingModel(parameters=70_553_706_496, sequence_length=8192)
LLAMA31_405B = TrainingModel(parameters=405_853_388_800, sequence_length=8192)


# Each published configuration as published (nodes, degrees, LNC, activation checkpointing and the
# modules it recomputes): its source, the plan inputs, and the hand-worked estimate (weights,
# gradients, optimizer, activations incl. logits 0.1223 GiB at TP 32, 0.2446 at TP 16; GiB) of one
# NeuronCore. The two 32-node Llama 3.1 configurations are the layouts NEURON-TRAIN-PERF measured.
PUBLISHED = [
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=4, tensor_parallel=32, model=LLAMA3_8B,
            activation_checkpointing="selective", recompute=["CoreAttention"],
        ),
        # 250,945,664 params per core; optimizer 12 B / DP 4; activations 32 x 8,192 x 4,096 x 52 / 32.
        (0.4674, 0.9348, 0.7011, 1.7473),
        16.0,
        id="NXDT hf_llama3_8B_config.yaml @9a145a8: 4 x trn1.32xlarge, TP 32, selective [CoreAttention]",
    ),
    pytest.param(
        dict(
            instance_type="trn2.48xlarge", nodes=1, tensor_parallel=16, logical_nc_config=2, model=LLAMA3_8B
        ),
        # activations 32 x 8,192 x 4,096 x 50 / 16 = 3.125 GiB + logits.
        (0.9348, 1.8697, 1.4023, 3.3696),
        24.0,
        id="NXDT hf_llama3_8B_trn2_config.yaml @d9a345e: 1 x trn2.48xlarge LNC 2, TP 16, no recompute",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=16, tensor_parallel=32, pipeline_parallel=8, model=LLAMA3_70B,
            activation_checkpointing="selective", recompute=["CoreAttention", "LlamaMLP"],
        ),
        # activations 80 x 8,192 x 8,192 x 22 / 32 = 3.4375 GiB + logits.
        (0.5133, 1.0267, 1.5400, 3.5598),
        16.0,
        id="NXDT hf_llama3_70B_config.yaml @9a145a8: 16 x trn1.32xlarge, TP 32 PP 8, [CoreAttention, LlamaMLP]",
    ),
    pytest.param(
        dict(
            instance_type="trn2.48xlarge", nodes=8, tensor_parallel=32, pipeline_parallel=4, logical_nc_config=2,
            model=LLAMA3_70B, activation_checkpointing="selective",
            recompute=["LlamaRMSNorm", "ActivationMultiplyMLP"],
        ),
        # activations 80 x 8,192 x 8,192 x 35 / 32 = 5.4688 GiB + logits.
        (1.0267, 2.0534, 1.5400, 5.5911),
        24.0,
        id="NXDT hf_llama3_70B_trn2_config.yaml @d9a345e: 8 x trn2.48xlarge LNC 2, TP 32 PP 4, "
        "[LlamaRMSNorm, ActivationMultiplyMLP]",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=64, tensor_parallel=32, pipeline_parallel=32,
            model=LLAMA31_405B, activation_checkpointing="full",
        ),
        # 396,341,200 params per core, DP 2; activations 126 x 8,192 x 16,384 x 2 / 32 (0.9844 GiB) plus
        # one layer of 47 (12 + 7 + 28: kv'/a = 32/128) x 8,192 x 16,384 / 32 (0.1836) plus logits.
        (0.7382, 1.4765, 2.2147, 1.2903),
        16.0,
        id="NXDT hf_llama3.1_405B_trn1_config.yaml @9a145a8: 64 x trn1.32xlarge, TP 32 PP 32, full",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=32, tensor_parallel=32, model=LLAMA3_8B,
            activation_checkpointing="selective", recompute=["CoreAttention", "LlamaMLP"],
        ),
        # DP 32; activations 32 x 8,192 x 4,096 x 24 / 32 = 0.75 GiB + logits.
        (0.4674, 0.9348, 0.0876, 0.8723),
        16.0,
        id="NXDT hf_llama3.1_8B_config.yaml @d9e0bf6 (NEURON-TRAIN-PERF's layout): 32 x trn1.32xlarge, TP 32",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=32, tensor_parallel=32, pipeline_parallel=8, model=LLAMA3_70B,
            activation_checkpointing="selective", recompute=["CoreAttention", "LlamaMLP"],
        ),
        (0.5133, 1.0267, 0.7700, 3.5598),
        16.0,
        id="NXDT hf_llama3.1_70B_config.yaml @d9e0bf6 (NEURON-TRAIN-PERF's layout): 32 x trn1.32xlarge, TP 32 PP 8",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("inputs", "parts", "hbm"), PUBLISHED)
def test_published_neuron_training_configurations_are_accepted_and_fit(
    inputs: dict[str, object], parts: tuple[float, float, float, float], hbm: float
) -> None:
    plan = plan_training(**inputs)  # type: ignore[arg-type]
    memory = plan.memory
    assert memory is not None and memory.fits
    got = (memory.weights_gib, memory.gradients_gib, memory.optimizer_gib, memory.activations_gib)
    assert got == pytest.approx(parts, abs=1e-4)
    assert memory.total_gib == pytest.approx(sum(parts), abs=4e-4)
    assert (memory.hbm_gib, memory.headroom, memory.usable_gib) == (hbm, 0.5, hbm * 0.5)
    # Every published configuration uses at most 42.5 % of its cores' HBM by this estimate (70B on trn2:
    # 10.2112 / 24): none carries the "above every published configuration" note.
    assert memory.share <= 0.4255 and not memory.beyond_published
    assert not any("published" in note for note in plan.notes)
    assert memory.sources == ("NXD-SMP", "ZERO", "ACT-MEM", "NXDT-LLAMA", "MODEL-SHAPES", "NXDT-CONF")
    assert plan.summary().endswith(
        f"; {memory.total_gib:.1f} of {memory.usable_gib:.1f} GiB usable per NeuronCore (estimated)"
    )


def test_the_estimate_explains_itself_and_names_what_it_assumed() -> None:
    plan = plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B)
    assert plan.memory is not None
    assert plan.memory.parameters_per_core == 250_945_664  # 8,030,261,248 / 32
    assert plan.memory.assumed == (
        "layers=32", "hidden_size=4096", "attention_heads=32", "kv_heads=8", "intermediate_size=14336",
        "vocab_size=128256",
    )  # fmt: skip
    assert plan.memory.explanation() == (
        "3.85 GiB per NeuronCore (weights 0.47 + gradients 0.93 + optimizer 0.70 + activations 1.75 GiB; "
        "250,945,664 parameters per core; assumed layers=32, hidden_size=4096, attention_heads=32, kv_heads=8, "
        "intermediate_size=14336, vocab_size=128256) of 8.00 usable (16 GiB less 50%): estimated from "
        "NXD-SMP, ZERO, ACT-MEM, NXDT-LLAMA, MODEL-SHAPES, NXDT-CONF"
    )
    given = TrainingModel(
        parameters=8_030_261_248, layers=32, hidden_size=4096, attention_heads=32, kv_heads=8,
        intermediate_size=14336, vocab_size=128256, sequence_length=8192,
    )  # fmt: skip
    same = plan_training("trn1.32xlarge", 4, 32, model=given)
    assert same.memory is not None and same.memory.assumed == ()
    assert same.memory.total_gib == pytest.approx(plan.memory.total_gib)


def test_a_plan_without_a_model_has_no_memory_estimate() -> None:
    plan = plan_training("trn1.32xlarge", 2, 32)
    assert (plan.model, plan.memory) == (None, None)
    assert "GiB usable" not in plan.summary()


def test_zero1_divides_only_the_optimizer_state_by_dp() -> None:
    # 8B on 4 trn1 nodes at TP 32 (DP 4): without ZeRO-1 the optimizer holds 12 B x 250.9M = 2.8046 GiB.
    sharded = plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B)
    whole = plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, zero1=False)
    assert sharded.memory is not None and whole.memory is not None
    assert whole.memory.optimizer_gib == pytest.approx(2.8046, abs=1e-4)
    assert whole.memory.optimizer_gib == pytest.approx(4 * sharded.memory.optimizer_gib)
    assert whole.memory.weights_gib == sharded.memory.weights_gib
    assert whole.memory.activations_gib == sharded.memory.activations_gib
    assert (whole.zero1, sharded.zero1) == (False, True)


def test_activation_checkpointing_levels() -> None:
    # 8B, trn1 TP 32: per layer 52 (none), 12 + 10 + 2 = 24 (selective: CoreAttention and LlamaMLP),
    # 2 plus one layer of 52 (full); 32 x 8,192 x 4,096 / 32 = 33,554,432 x c bytes, plus logits
    # 8,192 x 128,256 x 4 / 32 = 0.1223 GiB.
    by_level = {
        level: plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, activation_checkpointing=level).memory
        for level in planner.ACTIVATION_CHECKPOINTING
    }
    assert {level: round(m.activations_gib, 4) for level, m in by_level.items() if m is not None} == {
        "none": 1.7473,  # 33,554,432 x 52 B = 1.625 GiB + 0.1223
        "selective": 0.8723,  # x 24 = 0.75 + 0.12231
        "full": 0.2356,  # x 2 = 0.0625, + one layer 1,048,576 x 52 = 0.05078, + 0.1223
    }
    with pytest.raises(
        NeuronConfigError, match=r"^activation_checkpointing='some': must be one of full, none, selective$"
    ):
        plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, activation_checkpointing="some")


def test_a_plan_that_cannot_fit_is_refused_naming_the_knob_that_frees_the_most() -> None:
    # 70B (70e9, the 70B reference shape) on 4 trn1 nodes at TP 32, PP 1: 26.27 GiB per core of 8 usable
    # (activations 80 x 8,192 x 8,192 x 50 / 32 = 7.81 GiB + 0.12). PP 4 (the largest that divides 128
    # ranks at TP 32; DP 1, so the optimizer is not sharded) leaves 1.02 + 2.04 + 6.11 + 7.93 = 17.10:
    # still too much, so nodes must be added. Selective (22) does not fit either, so the strongest
    # level, full (18.87), is named.
    with pytest.raises(NeuronConfigError) as raised:
        plan_training("trn1.32xlarge", 4, 32, model=TrainingModel(parameters=70e9, sequence_length=8192))
    assert (raised.value.field, raised.value.value) == ("pipeline_parallel", 1)
    assert raised.value.fix == (
        "training 70.0B parameters (sequence 8,192, micro-batch 1) needs 26.27 GiB per NeuronCore (weights 4.07 + "
        "gradients 8.15 + optimizer 6.11 + activations 7.93 GiB), more than the 8.00 GiB usable on trn1.32xlarge "
        "(16 GiB less 50%; estimated from NXD-SMP, ZERO, ACT-MEM, NXDT-LLAMA, MODEL-SHAPES, NXDT-CONF); "
        "pipeline_parallel=4 frees the most: 17.10 GiB per NeuronCore (still too much: combine changes or add "
        "nodes); also sequence_length=256: 18.58 GiB; activation_checkpointing='full': 18.87 GiB"
    )


def test_the_first_setting_that_fits_is_named_and_the_fitting_knobs_come_first() -> None:
    # 8B at micro-batch 2 on 2 trn1 nodes at TP 8 without ZeRO-1: 1.86 + 3.73 + 11.18 + activations
    # 32 x 8,192 x 2 x 4,096 x 49 / 8 = 12.25 GiB + logits 0.98 = 29.99 GiB per core. TP 32 fits:
    # 0.47 + 0.93 + 2.79 + (32 x 8,192 x 2 x 4,096 x 52 / 32 = 3.25 + 0.24) = 7.69 of 8.
    model = TrainingModel(parameters=8e9, sequence_length=8192, micro_batch_size=2)
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=8: training 8\.0B parameters \(sequence 8,192, micro-batch 2\) needs 29\.99 GiB per "
        r"NeuronCore .*; tensor_parallel=32 frees the most: 7\.69 GiB per NeuronCore \(fits\); also "
        r"pipeline_parallel=8: 15\.32 GiB; sequence_length=256: 17\.18 GiB; activation_checkpointing='full': "
        r"18\.63 GiB; zero1=True: 20\.21 GiB; micro_batch_size=1: 23\.38 GiB$",
    ):
        plan_training("trn1.32xlarge", 2, 8, model=model, zero1=False)


def test_the_limit_is_inclusive_and_the_headroom_is_a_fraction() -> None:
    plan = plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B)
    assert plan.memory is not None
    # The headroom that leaves exactly the estimate usable: accepted; a hair more: refused, and selective
    # recompute frees the most (24 instead of 52 bytes per s b h: 2.98 GiB; sequence 4,096 halves the
    # activations, 2.98 too but 0.001 more; PP 2: 3.15).
    exact = 1 - plan.memory.total_gib / 16
    assert plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, hbm_headroom=exact).memory is not None
    with pytest.raises(
        NeuronConfigError,
        match=r"^activation_checkpointing='none': .*; activation_checkpointing='selective' frees the most: 2\.98 GiB "
        r"per NeuronCore \(fits\); also sequence_length=4096: 2\.98 GiB; pipeline_parallel=2: 3\.15 GiB$",
    ):
        plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, hbm_headroom=exact + 1e-6)
    for bad, fix in ((1, "must be below 1"), (-0.1, "must be at least 0"), ("0.2", "must be a number")):
        with pytest.raises(NeuronConfigError, match=rf"^hbm_headroom={re.escape(repr(bad))}: {fix}$"):
            plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, hbm_headroom=bad)  # type: ignore[arg-type]


def test_training_model_inputs_are_checked() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^parameters=0: must be a positive whole number, e\.g\. 70e9$"
    ):
        TrainingModel(parameters=0)
    for field in ("layers", "hidden_size", "attention_heads", "kv_heads", "intermediate_size", "vocab_size"):
        with pytest.raises(NeuronConfigError, match=rf"^{field}=0: must be a whole number >= 1$"):
            TrainingModel(parameters=8e9, **{field: 0})  # type: ignore[arg-type]
    for field in ("sequence_length", "micro_batch_size"):
        with pytest.raises(NeuronConfigError, match=rf"^{field}=True: must be a whole number >= 1$"):
            TrainingModel(parameters=8e9, **{field: True})  # type: ignore[arg-type]
    assert TrainingModel(parameters=8e9).parameters == 8_000_000_000
    assert (TrainingModel(parameters=1).sequence_length, TrainingModel(parameters=1).micro_batch_size) == (
        4096,
        1,
    )
    with pytest.raises(
        NeuronConfigError,
        match=r"^model=8000000000: give a TrainingModel, e\.g\. TrainingModel\(parameters=8e9\)$",
    ):
        plan_training("trn1.32xlarge", 1, 32, model=8_000_000_000)  # type: ignore[arg-type]
    with pytest.raises(NeuronConfigError, match=r"^zero1='yes': use True or False$"):
        plan_training("trn1.32xlarge", 1, 32, zero1="yes")  # type: ignore[arg-type]


# MODEL-SHAPES, transcribed from each config.json: (parameters for the lookup, layers, hidden size,
# attention heads, KV heads, intermediate size, vocabulary).
REFERENCE_SHAPES = [
    (1.24e9, 16, 2048, 32, 8, 8192, 128256),  # Llama-3.2-1B
    (3.21e9, 28, 3072, 24, 8, 8192, 128256),  # Llama-3.2-3B
    (8.03e9, 32, 4096, 32, 8, 14336, 128256),  # Llama-3.1-8B
    (13.0e9, 40, 5120, 40, 40, 13824, 32016),  # NxD's 13B_config_llama2
    (70.6e9, 80, 8192, 64, 8, 28672, 128256),  # Llama-3.1-70B
    (405e9, 126, 16384, 128, 8, 53248, 128256),  # Llama-3.1-405B
]


@pytest.mark.parametrize(("parameters", "layers", "hidden", "heads", "kv", "mlp", "vocab"), REFERENCE_SHAPES)
def test_missing_shape_values_come_from_the_nearest_reference_model(
    parameters: float, layers: int, hidden: int, heads: int, kv: int, mlp: int, vocab: int
) -> None:
    assumed = planner._training_shape(TrainingModel(parameters=parameters)).assumed
    assert assumed == (
        f"layers={layers}", f"hidden_size={hidden}", f"attention_heads={heads}", f"kv_heads={kv}",
        f"intermediate_size={mlp}", f"vocab_size={vocab}",
    )  # fmt: skip


def test_replanning_keeps_the_model_and_memory_settings() -> None:
    plan = plan_training(
        "trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective", hbm_headroom=0.3
    )
    fewer = replan_training(plan, nodes=8)
    assert (fewer.nodes, fewer.data_parallel, fewer.model, fewer.activation_checkpointing) == (
        8, 1, LLAMA3_70B, "selective",
    )  # fmt: skip
    assert fewer.memory is not None and fewer.memory.headroom == 0.3
    # DP 2 -> 1: the optimizer shard doubles.
    assert plan.memory is not None
    assert fewer.memory.optimizer_gib == pytest.approx(2 * plan.memory.optimizer_gib)
    assert replan_training(plan) == plan
    with pytest.raises(TypeError, match=r"^replan_training\(\) got unknown inputs bogus$"):
        replan_training(plan, bogus=1)


def test_expert_parallel_plans_say_the_estimate_is_for_a_dense_model() -> None:
    model = TrainingModel(parameters=8e9)
    plan = plan_training("trn2.48xlarge", 1, 16, expert_parallel=2, model=model)
    assert (
        plan.notes[-1]
        == "HBM per NeuronCore is estimated as for a dense model; experts sharded by EP need less"
    )
    assert not any("dense" in note for note in plan_training("trn2.48xlarge", 1, 16, model=model).notes)


# Bytes per s x b x h of one layer, worked by hand from the tensor list in the module docstring:
# (kv heads, attention heads, MLP size, hidden size, recomputed modules) -> bytes.
LAYER_BYTES = [
    pytest.param(8, 32, 14336, 4096, (), 49.0, id="Llama 3 8B, nothing recomputed: 12 + 7 + 30"),
    pytest.param(8, 32, 14336, 4096, ("CoreAttention",), 49.0, id="8B, CoreAttention: nothing s x s to free"),
    pytest.param(8, 64, 28672, 8192, (), 48.5, id="Llama 3 70B: 12 + 6.5 + 30"),
    pytest.param(8, 64, 28672, 8192, ("CoreAttention", "LlamaMLP"), 20.5, id="70B, LlamaMLP: 12 + 6.5 + 2"),
    pytest.param(8, 64, 28672, 8192, ("LlamaMLP", "ActivationMultiplyMLP"), 20.5, id="70B, MLP twice named"),
    pytest.param(8, 64, 28672, 8192, ("ActivationMultiplyMLP",), 41.5, id="70B, SiLU(gate) only: 48.5 - 7"),
    pytest.param(8, 64, 28672, 8192, ("LlamaRMSNorm",), 40.5, id="70B, RMSNorm only: 48.5 - 12 + 4"),
    pytest.param(
        8, 64, 28672, 8192, ("LlamaRMSNorm", "ActivationMultiplyMLP"), 33.5, id="70B trn2: 4 + 6.5 + 23"
    ),
    pytest.param(40, 40, 13824, 5120, (), 45.6, id="Llama 2 13B, MHA: 12 + 10 + 2 + 8 x 2.7"),
]
# With TP above the KV heads each rank keeps one whole KV head (NxD Training's kv_replicator, review-24
# nit 9): K and V count max(kv, TP) / a. (kv, heads, MLP, hidden, recompute, TP) -> bytes.
LAYER_BYTES_AT_TP = [
    pytest.param(8, 32, 14336, 4096, (), 32, 52.0, id="8B at TP 32: K, V one head per rank, 12 + 10 + 30"),
    pytest.param(8, 32, 14336, 4096, (), 16, 50.0, id="8B at TP 16: two heads of 32, 12 + 8 + 30"),
    pytest.param(8, 32, 14336, 4096, (), 8, 49.0, id="8B at TP 8: no replication, 12 + 7 + 30"),
    pytest.param(8, 64, 28672, 8192, ("LlamaMLP",), 32, 22.0, id="70B at TP 32, LlamaMLP: 12 + 8 + 2"),
    pytest.param(8, 32, 14336, 4096, (), 64, 52.0, id="TP past the query heads: one head per rank at most"),
]


@pytest.mark.parametrize(("kv", "heads", "mlp", "hidden", "recompute", "tp", "expected"), LAYER_BYTES_AT_TP)
def test_kv_heads_replicated_to_the_tp_degree_are_counted(
    kv: int, heads: int, mlp: int, hidden: int, recompute: tuple[str, ...], tp: int, expected: float
) -> None:
    assert planner.activation_bytes_per_layer(kv, heads, mlp, hidden, recompute, tp) == pytest.approx(
        expected
    )


@pytest.mark.parametrize(("kv", "heads", "mlp", "hidden", "recompute", "expected"), LAYER_BYTES)
def test_each_recomputed_module_frees_its_own_tensors(
    kv: int, heads: int, mlp: int, hidden: int, recompute: tuple[str, ...], expected: float
) -> None:
    assert planner.activation_bytes_per_layer(kv, heads, mlp, hidden, recompute) == pytest.approx(expected)


def test_the_activation_table_names_what_keeps_each_tensor_and_what_frees_it() -> None:
    # Every module the table frees is one neuronx-distributed-training can recompute, and every one
    # it can recompute appears (CoreAttention only in the documentation: with flash attention nothing).
    freeing = {m for t in planner.ACTIVATION_TERMS for m in (*t.freed_by, *t.kept_by)}
    assert freeing == set(planner.RECOMPUTE_MODULES) - {"CoreAttention"}
    assert all(t.saved_by and t.tensor for t in planner.ACTIVATION_TERMS)
    assert planner.DEFAULT_RECOMPUTE == ("CoreAttention", "LlamaMLP")


def test_selective_recomputes_the_modules_it_is_given() -> None:
    # At 25 % headroom: what each set of modules frees is tested here, not the limit (the trn2 set on
    # trn1, 8.67 GiB, is over half of 16).
    default = plan_training(
        "trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective", hbm_headroom=0.25
    )
    assert default.recompute == ("CoreAttention", "LlamaMLP")
    norms = replan_training(default, recompute=("LlamaRMSNorm", "ActivationMultiplyMLP"))
    assert norms.recompute == ("LlamaRMSNorm", "ActivationMultiplyMLP")
    assert default.memory is not None and norms.memory is not None
    # 22 -> 35 bytes: 80 x 8,192 x 8,192 x 13 / 32 more = 2.03125 GiB.
    assert norms.memory.activations_gib - default.memory.activations_gib == pytest.approx(2.03125)
    # Repeated names count once; the plan keeps the order given; replanning keeps the modules.
    twice = replan_training(default, recompute=["LlamaMLP", "LlamaMLP"])
    assert twice.recompute == ("LlamaMLP",)
    assert replan_training(norms, nodes=32).recompute == ("LlamaRMSNorm", "ActivationMultiplyMLP")
    for level in ("none", "full"):
        assert plan_training("trn1.32xlarge", 16, 32, 8, activation_checkpointing=level).recompute == ()


@pytest.mark.parametrize(
    ("checkpointing", "recompute", "fix"),
    [
        ("selective", "LlamaMLP", r"^recompute='LlamaMLP': give a list of module names from ActivationMultiplyMLP, "
         r"CoreAttention, LlamaMLP, LlamaRMSNorm, e\.g\. \['CoreAttention', 'LlamaMLP'\]$"),
        ("selective", [], r"^recompute=\[\]: give a list of module names from "),
        ("selective", ["LlamaMLP", "SwiGLU", "Dropout"],
         r"^recompute=\['LlamaMLP', 'SwiGLU', 'Dropout'\]: unknown modules 'Dropout', 'SwiGLU': use modules from "
         r"ActivationMultiplyMLP, CoreAttention, LlamaMLP, LlamaRMSNorm \(neuronx-distributed-training's Llama\)$"),
        ("none", ["LlamaMLP"], r"^recompute=\['LlamaMLP'\]: modules are recomputed only with "
         r"activation_checkpointing='selective' \(it is 'none'\); set it to 'selective' or drop recompute$"),
        ("full", ("LlamaMLP",), r"\(it is 'full'\)"),
    ],
)  # fmt: skip
def test_recompute_is_checked(checkpointing: str, recompute: object, fix: str) -> None:
    with pytest.raises(NeuronConfigError, match=fix):
        plan_training(
            "trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing=checkpointing,
            recompute=recompute,  # type: ignore[arg-type]
        )  # fmt: skip


def test_a_refusal_offers_selective_recompute_with_its_default_modules() -> None:
    # 70B on 16 trn1 nodes at TP 32 PP 8 without recompute: activations 80 x 8,192 x 8,192 x 50 / 32 =
    # 7.8125 + 0.1223 GiB, 11.01 in all; selective (22) leaves 3.5598: 0.5133 + 1.0267 + 1.5400 + 3.5598 = 6.64.
    with pytest.raises(NeuronConfigError) as raised:
        plan_training("trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B)
    assert "; activation_checkpointing='selective' frees the most: 6.64 GiB per NeuronCore (fits)" in (
        raised.value.fix
    )


# Calibrated from above (review-24 finding 4): NxD Training runs every configuration at micro-batch 1,
# "limited by TRN memory". Micro-batch 2 of its 70B configurations must be refused, and so must the
# micro-batch-4 plans the review found accepted.
LIMITED = [
    pytest.param(
        dict(instance_type="trn1.32xlarge", nodes=16, tensor_parallel=32, pipeline_parallel=8,
             activation_checkpointing="selective", recompute=["CoreAttention", "LlamaMLP"]),
        LLAMA3_70B, 2, "10.20 GiB", "8.00 GiB",
        id="70B trn1 (hf_llama3_70B_config.yaml) at micro-batch 2: 0.51 + 1.03 + 1.54 + 2 x 3.5598",
    ),
    pytest.param(
        dict(instance_type="trn1.32xlarge", nodes=32, tensor_parallel=32, pipeline_parallel=8,
             activation_checkpointing="selective", recompute=["CoreAttention", "LlamaMLP"]),
        LLAMA3_70B, 2, "9.43 GiB", "8.00 GiB",
        id="70B on 32 trn1 (hf_llama3.1_70B_config.yaml) at micro-batch 2: 0.51 + 1.03 + 0.77 + 2 x 3.5598",
    ),
    pytest.param(
        dict(instance_type="trn2.48xlarge", nodes=8, tensor_parallel=32, pipeline_parallel=4, logical_nc_config=2,
             activation_checkpointing="selective", recompute=["LlamaRMSNorm", "ActivationMultiplyMLP"]),
        LLAMA3_70B, 2, "15.80 GiB", "12.00 GiB",
        id="70B trn2 (hf_llama3_70B_trn2_config.yaml) at micro-batch 2: 1.03 + 2.05 + 1.54 + 2 x 5.5911",
    ),
    pytest.param(
        dict(instance_type="trn1.32xlarge", nodes=4, tensor_parallel=32, activation_checkpointing="selective",
             recompute=["CoreAttention"]),
        LLAMA3_8B, 4, "9.09 GiB", "8.00 GiB",
        id="8B trn1 (hf_llama3_8B_config.yaml) at micro-batch 4: 0.47 + 0.93 + 0.70 + 4 x 1.7473",
    ),
    pytest.param(
        dict(instance_type="trn2.48xlarge", nodes=1, tensor_parallel=16, logical_nc_config=2),
        LLAMA3_8B, 4, "17.69 GiB", "12.00 GiB",
        id="8B trn2 (hf_llama3_8B_trn2_config.yaml) at micro-batch 4: 0.93 + 1.87 + 1.40 + 4 x 3.3696",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("inputs", "model", "micro_batch", "needs", "usable"), LIMITED)
def test_micro_batches_the_published_configurations_call_limited_by_memory_are_refused(
    inputs: dict[str, object], model: TrainingModel, micro_batch: int, needs: str, usable: str
) -> None:
    bigger = TrainingModel(parameters=model.parameters, sequence_length=8192, micro_batch_size=micro_batch)
    with pytest.raises(
        NeuronConfigError,
        match=rf"\(sequence 8,192, micro-batch {micro_batch}\) needs {re.escape(needs)} per NeuronCore .*more "
        rf"than the {re.escape(usable)} usable on ",
    ):
        plan_training(model=bigger, **inputs)  # type: ignore[arg-type]


def test_a_plan_above_every_published_share_is_accepted_with_a_note_saying_so() -> None:
    # 405B at micro-batch 2 (hf_llama3.1_405B_trn1_config.yaml's layout): 0.7382 + 1.4765 + 2.2147 +
    # 2 x 1.2903 = 7.01 GiB, 43.8 % of 16: within half, above the 42.5 % the published 70B trn2 uses.
    model = TrainingModel(parameters=405_853_388_800, sequence_length=8192, micro_batch_size=2)
    plan = plan_training("trn1.32xlarge", 64, 32, 32, model=model, activation_checkpointing="full")
    assert plan.memory is not None and plan.memory.fits and plan.memory.beyond_published
    assert plan.memory.total_gib == pytest.approx(7.0100, abs=1e-4)
    assert plan.notes[-1] == (
        "HBM per NeuronCore: the estimate (44% of HBM) is above every published NxD Training configuration "
        "(43% at most), which all run micro-batch 1 'limited by TRN memory'; it is a lower bound: measure before "
        "relying on it"
    )
    assert planner.DEFAULT_TRAINING_HEADROOM == 0.5 and planner.PUBLISHED_TRAINING_HBM_SHARE == 0.43


@pytest.mark.parametrize(("inputs", "parts", "hbm"), PUBLISHED)
def test_the_planner_page_shows_each_published_configuration_with_these_figures(
    inputs: dict[str, object], parts: tuple[float, float, float, float], hbm: float
) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "catalog-and-planner.md").read_text()
    figures = " + ".join(f"{p:.2f}" for p in parts) + f" = {sum(parts):.2f} GiB | {hbm:g} GiB |"
    assert figures in page
