"""Training plans check HBM per NeuronCore: the published NxD Training configurations fit, others are refused.

Expected values are worked by hand from the formula in ``planner.TrainingMemory`` (sources NXD-SMP,
ZERO, ACT-MEM) and the model shapes of config.json (MODEL-SHAPES), never read from the planner:

- per core ``P / (TP x PP)`` parameters; weights 2 bytes, gradients 4 (FP32 accumulation),
  optimizer 12 (FP32 master + Adam m, v), divided by DP with ZeRO-1;
- activations ``L x s x b x h x c / TP`` with ``c = (6 + 4 kv/a) + (2 + 6 f/h) + 4`` (34 for Llama 3
  8B: 6 + 1 + 2 + 21 + 4; 33.5 for 70B), ``12 + 4 kv/a`` with selective recomputation (12.5 for 70B),
  and FP32 logits ``s x b x vocab x 4 / TP``.

Llama 3.1 8B: 8,030,261,248 parameters, 32 layers, hidden 4,096, 32 heads, 8 KV heads, MLP 14,336,
vocabulary 128,256. Llama 3.1 70B: 70,553,706,496, 80 layers, hidden 8,192, 64 heads, 8 KV heads,
MLP 28,672, vocabulary 128,256.
"""

from __future__ import annotations

import re

import pytest

from cdk_neuron import planner
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import TrainingModel, plan_training, replan_training

LLAMA3_8B = TrainingModel(parameters=8_030_261_248, sequence_length=8192)
LLAMA3_70B = TrainingModel(parameters=70_553_706_496, sequence_length=8192)


# Each published configuration: its source, the plan inputs, and the hand-worked estimate (weights,
# gradients, optimizer, activations incl. logits; GiB) of one NeuronCore.
PUBLISHED = [
    pytest.param(
        dict(instance_type="trn1.32xlarge", nodes=4, tensor_parallel=32, model=LLAMA3_8B),
        # 251,0xx,xxx params per core; optimizer 12 B / DP 4; activations 32 x 8,192 x 4,096 x 34 / 32 + logits.
        (0.4674, 0.9348, 0.7011, 1.1848),
        16.0,
        id="NXDT hf_llama3_8B_config.yaml @9a145a8: 4 x trn1.32xlarge, TP 32, ZeRO-1",
    ),
    pytest.param(
        dict(
            instance_type="trn2.48xlarge", nodes=1, tensor_parallel=16, logical_nc_config=2, model=LLAMA3_8B
        ),
        (0.9348, 1.8697, 1.4023, 2.3696),
        24.0,
        id="NXDT hf_llama3_8B_trn2_config.yaml @d9a345e: 1 x trn2.48xlarge LNC 2, TP 16, ZeRO-1",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge",
            nodes=16,
            tensor_parallel=32,
            pipeline_parallel=8,
            activation_checkpointing="selective",
            model=LLAMA3_70B,
        ),
        (0.5133, 1.0267, 1.5400, 2.0754),
        16.0,
        id="NXDT hf_llama3_70B_config.yaml @9a145a8: 16 x trn1.32xlarge, TP 32 PP 8, selective recompute",
    ),
    pytest.param(
        dict(
            instance_type="trn2.48xlarge",
            nodes=8,
            tensor_parallel=32,
            pipeline_parallel=4,
            logical_nc_config=2,
            activation_checkpointing="selective",
            model=LLAMA3_70B,
        ),
        (1.0267, 2.0534, 1.5400, 2.0754),
        24.0,
        id="NXDT hf_llama3_70B_trn2_config.yaml @d9a345e: 8 x trn2.48xlarge LNC 2, TP 32 PP 4, selective",
    ),
    pytest.param(
        dict(instance_type="trn1.32xlarge", nodes=32, tensor_parallel=32, model=LLAMA3_8B),
        (0.4674, 0.9348, 0.0876, 1.1848),
        16.0,
        id="NEURON-TRAIN-PERF Llama-3.1-8B: 32 x trn1.32xlarge, TP 32 DP 32, ZeRO-1",
    ),
    pytest.param(
        dict(
            instance_type="trn1.32xlarge", nodes=32, tensor_parallel=32, pipeline_parallel=8, model=LLAMA3_70B
        ),
        (0.5133, 1.0267, 0.7700, 5.3567),
        16.0,
        id="NEURON-TRAIN-PERF Llama-3.1-70B: 32 x trn1.32xlarge, TP 32 DP 4 PP 8",
    ),
]


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
    assert (memory.hbm_gib, memory.headroom, memory.usable_gib) == (hbm, 0.25, hbm * 0.75)
    # Every published configuration uses at most half its cores' HBM by this estimate (48 % the most).
    assert memory.total_gib / memory.hbm_gib < 0.48
    assert memory.sources == ("NXD-SMP", "ZERO", "ACT-MEM", "MODEL-SHAPES", "NXDT-CONF")
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
        "3.29 GiB per NeuronCore (weights 0.47 + gradients 0.93 + optimizer 0.70 + activations 1.18 GiB; "
        "250,945,664 parameters per core; assumed layers=32, hidden_size=4096, attention_heads=32, kv_heads=8, "
        "intermediate_size=14336, vocab_size=128256) of 12.00 usable (16 GiB less 25%): estimated from "
        "NXD-SMP, ZERO, ACT-MEM, MODEL-SHAPES, NXDT-CONF"
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
    # 8B, trn1 TP 32: per layer 34 (none), 12 + 1 = 13 (selective), 2 plus one layer of 34 (full);
    # 32 x 8,192 x 4,096 / 32 = 33,554,432 x c bytes, plus logits 8,192 x 128,256 x 4 / 32 = 0.1223 GiB.
    by_level = {
        level: plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, activation_checkpointing=level).memory
        for level in planner.ACTIVATION_CHECKPOINTING
    }
    assert {level: round(m.activations_gib, 4) for level, m in by_level.items() if m is not None} == {
        "none": 1.1848,  # 33,554,432 x 34 B = 1.0625 GiB + 0.1223
        "selective": 0.5286,  # x 13 = 0.40625 + 0.12231
        "full": 0.218,  # x 2 = 0.0625, + one layer 1,048,576 x 34 = 0.0332, + 0.1223
    }
    with pytest.raises(
        NeuronConfigError, match=r"^activation_checkpointing='some': must be one of full, none, selective$"
    ):
        plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, activation_checkpointing="some")


def test_a_plan_that_cannot_fit_is_refused_naming_the_knob_that_frees_the_most() -> None:
    # 70B (70e9, the 70B reference shape) on 4 trn1 nodes at TP 32, PP 1: 23.69 GiB per core of 12 usable.
    # PP 4 (the largest that divides 128 ranks at TP 32) leaves 14.52: still too much, so nodes must be added.
    with pytest.raises(NeuronConfigError) as raised:
        plan_training("trn1.32xlarge", 4, 32, model=TrainingModel(parameters=70e9, sequence_length=8192))
    assert (raised.value.field, raised.value.value) == ("pipeline_parallel", 1)
    assert raised.value.fix == (
        "training 70.0B parameters (sequence 8,192, micro-batch 1) needs 23.69 GiB per NeuronCore (weights 4.07 + "
        "gradients 8.15 + optimizer 6.11 + activations 5.36 GiB), more than the 12.00 GiB usable on trn1.32xlarge "
        "(16 GiB less 25%; estimated from NXD-SMP, ZERO, ACT-MEM, MODEL-SHAPES, NXDT-CONF); pipeline_parallel=4 "
        "frees the most: 14.52 GiB per NeuronCore (still too much: combine changes or add nodes); also "
        "sequence_length=256: 18.50 GiB; activation_checkpointing='full': 18.84 GiB"
    )


def test_the_first_setting_that_fits_is_named_and_the_fitting_knobs_come_first() -> None:
    # 8B at micro-batch 4 on 2 trn1 nodes at TP 8 without ZeRO-1: 35.72 GiB per core; TP 32 fits.
    model = TrainingModel(parameters=8e9, sequence_length=8192, micro_batch_size=4)
    with pytest.raises(
        NeuronConfigError,
        match=r"^tensor_parallel=8: training 8\.0B parameters \(sequence 8,192, micro-batch 4\) needs 35\.72 GiB per "
        r"NeuronCore .*; tensor_parallel=32 frees the most: 8\.93 GiB per NeuronCore \(fits\); also "
        r"sequence_length=256: 17\.36 GiB; activation_checkpointing='full': 20\.25 GiB; pipeline_parallel=8: "
        r"21\.05 GiB; micro_batch_size=1: 21\.50 GiB; zero1=True: 25\.94 GiB$",
    ):
        plan_training("trn1.32xlarge", 2, 8, model=model, zero1=False)


def test_the_limit_is_inclusive_and_the_headroom_is_a_fraction() -> None:
    plan = plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B)
    assert plan.memory is not None
    # The headroom that leaves exactly the estimate usable: accepted; a hair more: refused.
    exact = 1 - plan.memory.total_gib / 16
    assert plan_training("trn1.32xlarge", 4, 32, model=LLAMA3_8B, hbm_headroom=exact).memory is not None
    with pytest.raises(
        NeuronConfigError,
        match=r"^pipeline_parallel=1: .*; pipeline_parallel=2 frees the most: 2\.59 GiB per NeuronCore \(fits\)",
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
