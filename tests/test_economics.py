"""The cost of a result: published, measured and estimated throughputs, and their GPU comparison.

Expected costs are worked by hand from the transcribed sources, never read from the catalog:

- NEURON-TRAIN-PERF (Trn1/Trn1n Training Performance, Neuron 2.24.0): Llama-3.1-8B on 32 x
  trn1.32xlarge, TP 32 DP 32, sequence 8,192: 47.95 sequences/s = 392,806.4 tokens/s; Llama-3.1-70B
  TP 32 DP 4 PP 8: 7.94 sequences/s = 65,044.48 tokens/s.
- NEMO-PERF (Megatron-Bridge 25.11, DGX-H100): LLAMA3_8B 8 GPUs 14,451 tokens/s/GPU; LLAMA3_70B
  64 GPUs 1,602.
- OPTN-BENCH (optimum-neuron's Llama-3.3-70b on Inferentia2 chart, 2025-07-10): inf2.48xlarge TP 24,
  bf16, sequence 4,096, 1,024 input / 256 output tokens: batch 1 29, batch 4 75, batch 8 104 tokens/s.
- NEURON-INF-PERF (Inf2 Inference Performance, Transformers NeuronX, Neuron 2.18.1): Llama-3-70B on
  inf2.48xlarge TP 24, batch 1, 4,096 tokens, bf16 weights: 28.84 tokens/s; Llama-3-8B TP 24 batch 8,
  int8 weights: 859.09 (128 in / 3,968 out) and 759.15 (2,048 / 2,048); Llama-3-70B on trn1.32xlarge
  TP 32 batch 4, bf16 weights: 120.3614.
- NIM-PERF: Llama-3.3-70B on 2 x H100, concurrency 1: 52.85 tokens/s.
- KARP (2026-01-19, us-east-1): trn1.32xlarge $21.50/h, trn1n.32xlarge $24.78/h, inf2.48xlarge
  $12.98127/h, p5.48xlarge $55.04/h.
"""

from __future__ import annotations

import re

import pytest

from cdk_neuron import economics
from cdk_neuron.catalog import PUBLISHED_THROUGHPUT
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import TrainingModel, plan_training, size_model

LLAMA3_8B = TrainingModel(parameters=8_030_261_248, sequence_length=8192)
LLAMA3_70B = TrainingModel(parameters=70_553_706_496, sequence_length=8192)
TRILLION = 1e12


def test_a_published_training_configuration_is_priced_per_run() -> None:
    plan = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    cost = economics.training_run_cost(plan, TRILLION)
    # 1e12 / 392,806.4 / 3,600 = 707.162 h x 32 x $21.50 = $486,527.49.
    assert cost.hours == pytest.approx(707.1620, abs=1e-3)
    assert cost.usd == pytest.approx(486_527.49, abs=0.01)
    assert (cost.label, cost.usd_per_hour, cost.instances) == ("published", 688.0, 32)
    assert cost.throughput is not None and (cost.throughput.source, cost.throughput.date) == (
        "NEURON-TRAIN-PERF", "2026-02-19",
    )  # fmt: skip
    assert cost.line().startswith(
        "training run of 1e+12 tokens on 32 x trn1.32xlarge (TP 32, PP 1, DP 32): $486,527.49 (published; "
        "707.2 h at 392,806.40 tokens/s and $688.0000/h; throughput: Llama-3.1-8B on 32 x "
        "trn1.32xlarge/trn1n.32xlarge, TP 32, micro-batch 1, 8,192 tokens, BF16 autocast, FP32 optimizer: "
        "392,806.40 tokens/s (TP=32 DP=32 PP=1 ZeRO-1, global batch 1,024, AdamW, Neuron 2.24.0, 47.95 "
        "sequences/s; published, NEURON-TRAIN-PERF 2026-02-19); price: 32 x $21.5000/h (KARP 2026-01-19, "
        "us-east-1); NEURON-TRAIN-PERF names trn1.32xlarge/trn1n.32xlarge and does not say which ran"
    )


def test_the_gpu_comparison_is_published_and_says_where_it_differs() -> None:
    plan = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    gpu = economics.gpu_training_comparison(plan, TRILLION)
    assert gpu is not None
    # 14,451 x 8 = 115,608 tokens/s; 1e12 / 115,608 / 3,600 = 2,402.75 h x $55.04 = $132,247.67.
    assert (gpu.instance_type, gpu.instances, gpu.label) == ("p5.48xlarge", 1, "published")
    assert gpu.usd == pytest.approx(132_247.67, abs=0.01)
    assert gpu.note == (
        "not like-for-like: precision FP8 (current scaling) there, BF16 with an FP32 optimizer here; global batch "
        "128 there, 1,024 in the Neuron figure"
    )
    # 70B: 1,602 x 64 = 102,528 tokens/s on 8 p5.48xlarge: 2,709.25 h x $440.32 = $1,192,953.25.
    big = plan_training("trn1.32xlarge", 32, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective")
    gpu70 = economics.gpu_training_comparison(big, TRILLION)
    assert gpu70 is not None and gpu70.usd == pytest.approx(1_192_953.25, abs=0.01)
    assert economics.gpu_training_comparison(plan_training("trn1.32xlarge", 2, 32), TRILLION) is None
    small = plan_training("trn1.32xlarge", 2, 32, model=TrainingModel(parameters=1.2e9))
    assert economics.gpu_training_comparison(small, TRILLION) is None


def test_fewer_nodes_than_published_is_an_estimate_that_says_how_it_was_scaled() -> None:
    plan = plan_training("trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective")
    cost = economics.training_run_cost(plan, TRILLION)
    assert cost.throughput is not None
    # 65,044.48 x 16 / 32 = 32,522.24 tokens/s: 8,541.19 h x 16 x $21.50 = $2,938,160.33.
    assert cost.throughput.tokens_per_second == pytest.approx(32_522.24)
    assert (cost.label, cost.throughput.label) == ("estimated", "estimated")
    assert cost.usd == pytest.approx(2_938_160.33, abs=0.01)
    assert cost.throughput.basis.startswith(
        "scaled linearly from 32 to 16 nodes (strong scaling is rarely linear: measure) from Llama-3.1-70B on 32 x "
        "trn1.32xlarge"
    )


def test_no_published_figure_means_unknown_never_an_extrapolation() -> None:
    # More nodes than published: never scaled up.
    more = plan_training("trn1.32xlarge", 64, 32, model=LLAMA3_8B)
    cost = economics.training_run_cost(more, TRILLION)
    assert (cost.usd, cost.throughput, cost.label) == (None, None, "unknown")
    assert cost.note.startswith(
        "no published figure matches this configuration (published for this model size: Llama-3.1-8B on 32 x "
        "trn1.32xlarge"
    )
    assert cost.line().startswith(
        "training run of 1e+12 tokens on 64 x trn1.32xlarge (TP 32, PP 1, DP 64): unknown ("
    )
    # Another sequence length is another configuration.
    other = plan_training("trn1.32xlarge", 32, 32, model=TrainingModel(parameters=8_030_261_248))
    assert economics.training_run_cost(other, TRILLION).usd is None
    # Without a model nothing can match.
    bare = economics.training_run_cost(plan_training("trn1.32xlarge", 32, 32), TRILLION)
    assert (
        bare.note == "the plan has no model: plan with model=TrainingModel(...) to match a published figure"
    )
    # A model size nothing is published for names no nearest figure.
    tiny = plan_training("trn1.32xlarge", 2, 32, model=TrainingModel(parameters=1.2e9))
    assert (
        economics.training_run_cost(tiny, TRILLION).note == "no published figure matches this configuration"
    )


def test_a_measurement_replaces_the_published_figure_and_is_labelled_measured() -> None:
    plan = plan_training("trn1.32xlarge", 64, 32, model=LLAMA3_8B)
    figure = economics.measured(800_000, "  our run 2026-11-30, 64 nodes  ")
    assert (figure.label, figure.basis, figure.source) == ("measured", "our run 2026-11-30, 64 nodes", None)
    cost = economics.training_run_cost(plan, TRILLION, throughput=figure)
    # 1e12 / 800,000 / 3,600 = 347.22 h x 64 x $21.50 = $477,777.78.
    assert cost.label == "measured" and cost.usd == pytest.approx(477_777.78, abs=0.01)
    for bad, fix in (
        (0, "must be greater than 0"),
        ("fast", "must be a number"),
        (float("inf"), "must be a finite number"),
    ):
        with pytest.raises(NeuronConfigError, match=rf"^tokens_per_second={re.escape(repr(bad))}: {fix}$"):
            economics.measured(bad, "x")
    with pytest.raises(NeuronConfigError, match=r"^description='': say what was measured, where and when$"):
        economics.measured(1.0, "")
    with pytest.raises(NeuronConfigError, match=r"^tokens=0: must be greater than 0$"):
        economics.training_run_cost(plan, 0)


def test_serving_cost_per_million_tokens_is_published_for_the_exact_configuration() -> None:
    plan = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=1, sequence_length=4096)
    cost = economics.serving_token_cost(plan, parameters=70_553_706_496, batch_size=1, sequence_length=4096)
    # OPTN-BENCH batch 1: 1e6 / 29 / 3,600 = 9.5785 h x $12.98127 = $124.34. The Transformers NeuronX row
    # (28.84) matches too, but a current runtime's figure comes first.
    assert cost.usd == pytest.approx(124.34, abs=0.005) and cost.label == "published"
    assert cost.hours == pytest.approx(9.5785, abs=1e-4)
    assert cost.configuration == "inf2.48xlarge (TP 24, 1 replica(s), batch 1)"
    assert cost.throughput is not None and cost.throughput.source == "OPTN-BENCH"
    # Batch 4 (prod's): 75 tokens/s, 1e6 / 75 / 3,600 = 3.7037 h x $12.98127 = $48.08.
    batch4 = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=4, sequence_length=4096)
    four = economics.serving_token_cost(batch4, parameters=70e9, batch_size=4, sequence_length=4096)
    assert (four.usd, four.label) == (pytest.approx(48.08, abs=0.005), "published")
    # Batch 2 was never published for this configuration: unknown, naming what was.
    batch2 = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=2, sequence_length=4096)
    unknown = economics.serving_token_cost(
        batch2, parameters=70_553_706_496, batch_size=2, sequence_length=4096
    )
    assert unknown.usd is None
    assert unknown.note.startswith(
        "no published figure for 70.6B parameters on inf2.48xlarge at TP 24, batch 2, 4,096 tokens, bf16 weights "
        "(published: Llama-3.3-70B on inf2.48xlarge, TP 24, batch 1, 4,096 tokens, 1,024 input / 256 output tokens"
    )


def test_a_bf16_deployment_is_never_costed_from_an_int8_figure() -> None:
    # The only Llama 3 8B figures at TP 24, batch 8, 4,096 tokens on inf2.48xlarge stored the weights in int8.
    plan = size_model(
        8_030_261_248, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=8, sequence_length=4096
    )
    shape = {"parameters": 8_030_261_248, "batch_size": 8, "sequence_length": 4096}
    bf16 = economics.serving_token_cost(plan, **shape, dtype="bfloat16")
    assert (bf16.usd, bf16.label) == (None, "unknown")
    assert bf16.note.startswith(
        "no published figure for 8.0B parameters on inf2.48xlarge at TP 24, batch 8, 4,096 tokens, bf16 weights "
        "(published: Llama-3-8B on inf2.48xlarge, TP 24, batch 8, 4,096 tokens, 128 input / 3,968 output tokens, "
        "FP16, matmul BF16, int8 weights: 859.09 tokens/s"
    )
    # An int8 deployment matches, but the figure is Transformers NeuronX's: estimated, and it says why.
    # 1e6 / 859.09 / 3,600 = 0.32334 h x $12.98127 = $4.20.
    int8 = economics.serving_token_cost(plan, **shape, dtype="int8")
    assert (int8.usd, int8.label) == (pytest.approx(4.20, abs=0.005), "estimated")
    assert int8.throughput is not None and int8.throughput.basis.endswith(
        "estimated: measured with Transformers NeuronX, whose support ended with Neuron 2.26 (TNX-EOS); "
        "cdk-neuron's engines serve with NxD Inference or optimum-neuron's NxD-based backend"
    )
    # The prompt length picks between the two int8 figures: 2,048 in / 2,048 out is 759.15 tokens/s.
    long_prompt = economics.serving_token_cost(plan, **shape, dtype="int8", input_tokens=2048)
    assert long_prompt.throughput is not None and long_prompt.throughput.tokens_per_second == 759.15
    none = economics.serving_token_cost(plan, **shape, dtype="int8", input_tokens=512)
    assert none.usd is None and ", int8 weights, 512 input tokens (published: " in none.note


def test_a_figure_from_transformers_neuronx_is_an_estimate_when_nothing_current_matches() -> None:
    # Llama 3 70B on trn1.32xlarge TP 32 batch 4 is published only by NEURON-INF-PERF (Neuron 2.18.1).
    plan = size_model(
        70_553_706_496, instance_type="trn1.32xlarge", tensor_parallel=32, batch_size=4, sequence_length=4096
    )
    cost = economics.serving_token_cost(plan, parameters=70_553_706_496, batch_size=4, sequence_length=4096)
    # 1e6 / 120.3614 / 3,600 = 2.3079 h x $21.50 = $49.62.
    assert (cost.usd, cost.label) == (pytest.approx(49.62, abs=0.005), "estimated")
    assert cost.throughput is not None and cost.throughput.label == "estimated"
    assert "Transformers NeuronX, Neuron 2.18.1; published, NEURON-INF-PERF" in cost.throughput.basis


def test_the_gpu_serving_comparison_prices_part_of_an_instance_as_an_estimate() -> None:
    gpu = economics.gpu_serving_comparison(parameters=70_553_706_496, batch_size=1)
    assert gpu is not None
    # 1e6 / 52.85 / 3,600 = 5.256 h x 0.25 x $55.04 = $72.32.
    assert gpu.usd == pytest.approx(72.32, abs=0.005)
    assert (gpu.instances, gpu.label, gpu.throughput.label if gpu.throughput else None) == (
        0.25, "estimated", "published",
    )  # fmt: skip
    assert gpu.price_basis.endswith("(estimated: no instance type has that part of its accelerators)")
    assert gpu.note == "not like-for-like: FP8 weights there"
    assert economics.gpu_serving_comparison(parameters=70e9, batch_size=4) is None
    assert economics.gpu_serving_comparison(parameters=8e9, batch_size=1) is None


def test_the_gpu_serving_comparison_names_every_field_that_differs() -> None:
    plan = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=1, sequence_length=4096)
    neuron = economics.serving_token_cost(plan, parameters=70_553_706_496, batch_size=1, sequence_length=4096)
    gpu = economics.gpu_serving_comparison(
        parameters=70_553_706_496, batch_size=1, sequence_length=4096, dtype="bf16", neuron=neuron.throughput
    )
    assert gpu is not None
    assert gpu.note == (
        "not like-for-like: weights fp8 there, bf16 here; sequence 2,500 there, 4,096 here; input/output tokens "
        "500/2,000 there, 1,024/256 here"
    )
    # Only what differs is named; a measurement (no published row) has no prompt to compare.
    same = economics.gpu_serving_comparison(
        parameters=70_553_706_496, batch_size=1, sequence_length=2500, dtype="fp8",
        neuron=economics.measured(30.0, "ours"),
    )  # fmt: skip
    assert same is not None and same.note == ""


def test_the_gpu_training_comparison_names_sequence_batch_and_precision() -> None:
    # The TrainingModel default sequence (4,096) beside NeMo's 8,192-token FP8 row.
    plan = plan_training("trn1.32xlarge", 32, 32, model=TrainingModel(parameters=8_030_261_248))
    gpu = economics.gpu_training_comparison(plan, TRILLION)
    assert gpu is not None
    assert gpu.note == (
        "not like-for-like: sequence 8,192 there, 4,096 here; precision FP8 (current scaling) there, BF16 with an "
        "FP32 optimizer here; global batch 128 there, set by your job here"
    )
    # Where a Neuron figure matched the plan, its global batch is the one compared.
    matched = economics.gpu_training_comparison(
        plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B), TRILLION
    )
    assert matched is not None and matched.note.endswith("global batch 128 there, 1,024 in the Neuron figure")
    big = TrainingModel(parameters=8_030_261_248, sequence_length=8192, micro_batch_size=2)
    two = economics.gpu_training_comparison(plan_training("trn1.32xlarge", 32, 32, model=big), TRILLION)
    assert two is not None and "micro-batch 1 there, 2 here" in two.note


def test_a_figure_published_for_trn1_or_trn1n_matches_both_and_says_which_is_open() -> None:
    trn1n = plan_training("trn1n.32xlarge", 32, 32, model=LLAMA3_8B)
    cost = economics.training_run_cost(trn1n, TRILLION)
    # 707.162 h x 32 x $24.78 = $560,751.22; at trn1.32xlarge's $21.50: $486,527.49.
    assert (cost.label, cost.usd) == ("published", pytest.approx(560_751.22, abs=0.01))
    assert cost.note == (
        "NEURON-TRAIN-PERF names trn1.32xlarge/trn1n.32xlarge and does not say which ran: priced as "
        "trn1n.32xlarge (1,600 Gbps EFA); the figure may have been measured on trn1.32xlarge (800 Gbps EFA, "
        "$486,527.49 at its $21.5000/h)"
    )
    trn1 = economics.training_run_cost(plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B), TRILLION)
    assert trn1.note.endswith("trn1n.32xlarge (1,600 Gbps EFA, $560,751.22 at its $24.7800/h)")
    # Scaled down to fewer trn1n nodes: estimated, and the same question stays open.
    fewer = economics.training_run_cost(
        plan_training("trn1n.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective"),
        TRILLION,
    )
    assert fewer.label == "estimated" and fewer.note.startswith("NEURON-TRAIN-PERF names trn1.32xlarge/trn1n")


def test_a_price_its_source_calls_uncertain_makes_the_cost_an_estimate() -> None:
    # trn2.48xlarge: SKY's $85.964/h, which Vantage puts at $35.76 (the price note says "uncertain").
    plan = plan_training("trn2.48xlarge", 1, 64, model=LLAMA3_8B)
    cost = economics.training_run_cost(
        plan, TRILLION, throughput=economics.measured(1e5, "x"), region="us-east-2"
    )
    assert (cost.label, cost.price_estimated) == ("estimated", True)
    assert "uncertain: Vantage" in cost.price_basis
    sure = economics.training_run_cost(
        plan_training("trn1.32xlarge", 1, 32), TRILLION, throughput=economics.measured(1e5, "x")
    )
    assert (sure.label, sure.price_estimated) == ("measured", False)


def test_a_region_no_source_prices_leaves_the_cost_unknown() -> None:
    plan = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    cost = economics.training_run_cost(plan, TRILLION, region="ap-south-1")
    assert (cost.usd, cost.usd_per_hour, cost.label) == (None, None, "unknown")
    assert cost.hours == pytest.approx(707.1620, abs=1e-3)
    assert cost.note.endswith("; price unknown: no source prices trn1.32xlarge in ap-south-1")
    # us-west-2 has the us-east-1 price (SAME_PRICE_REGIONS, for the SAME_PRICE_TYPES), and the basis says whose.
    west = economics.training_run_cost(plan, TRILLION, region="us-west-2")
    assert west.usd == pytest.approx(486_527.49, abs=0.01)
    assert west.price_basis == (
        "32 x $21.5000/h (KARP 2026-01-19, us-east-1; the us-east-1 price, equal in us-west-2 per SKY)"
    )
    measured_elsewhere = economics.training_run_cost(
        plan_training("trn1.32xlarge", 64, 32, model=LLAMA3_8B),
        TRILLION,
        throughput=economics.measured(1e6, "x"),
        region="ap-south-1",
    )
    assert measured_elsewhere.note == "price unknown: no source prices trn1.32xlarge in ap-south-1"


def test_unpriced_types_say_why() -> None:
    plan = plan_training("trn2u.48xlarge", 1, 64, model=LLAMA3_8B)
    cost = economics.training_run_cost(plan, TRILLION, throughput=economics.measured(1e5, "x"))
    assert cost.note == ("price unknown: sold as Trn2 UltraServer Capacity Blocks; no published hourly price")


def test_a_sagemaker_fleet_is_priced_at_its_hosting_price_or_unknown() -> None:
    plan = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=1, sequence_length=4096)
    cost = economics.serving_token_cost(
        plan, parameters=70_553_706_496, batch_size=1, sequence_length=4096, sagemaker=True
    )
    # FMB: ml.inf2.48xlarge $15.58/h: 9.5785 h x $15.58 = $149.23.
    assert cost.usd == pytest.approx(149.23, abs=0.005)
    assert cost.configuration.startswith("ml.inf2.48xlarge (TP 24")
    elsewhere = economics.serving_token_cost(
        plan,
        parameters=70_553_706_496,
        batch_size=1,
        sequence_length=4096,
        sagemaker=True,
        region="eu-west-1",
    )
    assert elsewhere.note == "price unknown: no source prices ml.inf2.48xlarge hosting in eu-west-1"
    trn2 = size_model(70_553_706_496, instance_type="trn2.48xlarge", batch_size=1, sequence_length=4096)
    unpriced = economics.serving_token_cost(
        trn2, parameters=70_553_706_496, batch_size=1, sequence_length=4096, sagemaker=True,
        throughput=economics.measured(100.0, "x"),
    )  # fmt: skip
    assert unpriced.note == (
        "price unknown: no SageMaker hosting price in FMB @00ef155d or any other source we could read"
    )


# Tests for the economics survivors a partial mutmut run found (2026-12-02): each pins a whole text or
# value a user reads, where the tests above checked only part of it.


def test_every_figure_carries_its_source_date_and_row_and_no_note_when_it_matched() -> None:
    exact = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    figure, note = economics.training_throughput(exact)
    assert note == "" and figure is not None and figure.row is not None
    assert (figure.label, figure.source, figure.date, figure.row.model) == (
        "published", "NEURON-TRAIN-PERF", "2026-02-19", "Llama-3.1-8B",
    )  # fmt: skip
    fewer = plan_training("trn1.32xlarge", 16, 32, 8, model=LLAMA3_70B, activation_checkpointing="selective")
    scaled, note = economics.training_throughput(fewer)
    assert note == "" and scaled is not None and scaled.row is not None
    assert (scaled.label, scaled.source, scaled.date, scaled.row.model) == (
        "estimated", "NEURON-TRAIN-PERF", "2026-02-19", "Llama-3.1-70B",
    )  # fmt: skip
    # A Transformers NeuronX row: estimated, with its own source, date and row, and no note.
    plan = size_model(8_030_261_248, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=8)
    legacy, note = economics.serving_throughput(
        plan, parameters=8_030_261_248, batch_size=8, sequence_length=4096, dtype="int8"
    )
    assert note == "" and legacy is not None and legacy.row is not None
    assert (legacy.label, legacy.source, legacy.date, legacy.row.tokens_per_second) == (
        "estimated", "NEURON-INF-PERF", "2026-02-26", 859.09,
    )  # fmt: skip
    # serving_throughput's own default dtype is bf16, as size_model's.
    prod = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=4, sequence_length=4096)
    default, _ = economics.serving_throughput(prod, parameters=70e9, batch_size=4, sequence_length=4096)
    assert default is not None and default.source == "OPTN-BENCH"


def test_unknown_notes_list_every_nearest_figure_and_none_when_there_is_none() -> None:
    plan = size_model(8_030_261_248, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=8)
    bf16 = economics.serving_token_cost(plan, parameters=8_030_261_248, batch_size=8, sequence_length=4096)
    assert bf16.note.endswith(
        "int8 weights: 859.09 tokens/s (Transformers NeuronX, Neuron 2.18.1; published, NEURON-INF-PERF "
        "2026-02-26); Llama-3-8B on inf2.48xlarge, TP 24, batch 8, 4,096 tokens, 2,048 input / 2,048 output "
        "tokens, FP16, matmul BF16, int8 weights: 759.15 tokens/s (Transformers NeuronX, Neuron 2.18.1; "
        "published, NEURON-INF-PERF 2026-02-26))"
    )
    small = size_model(3.21e9, instance_type="inf2.xlarge", batch_size=1, sequence_length=4096)
    assert economics.serving_token_cost(
        small, parameters=3.21e9, batch_size=1, sequence_length=4096
    ).note == (
        "no published figure for 3.2B parameters on inf2.xlarge at TP 1, batch 1, 4,096 tokens, bf16 weights"
    )
    more = economics.training_run_cost(plan_training("trn1.32xlarge", 64, 32, model=LLAMA3_8B), TRILLION)
    assert "NEURON-TRAIN-PERF 2026-02-19); Llama-3-8B on p5.48xlarge, TP 1" in more.note


def test_the_note_names_the_other_instance_even_where_no_price_is_known() -> None:
    plan = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    cost = economics.training_run_cost(plan, TRILLION, region="ap-south-1")
    assert cost.note == (
        "NEURON-TRAIN-PERF names trn1.32xlarge/trn1n.32xlarge and does not say which ran: priced as trn1.32xlarge "
        "(800 Gbps EFA); the figure may have been measured on trn1n.32xlarge (1,600 Gbps EFA); price unknown: no "
        "source prices trn1.32xlarge in ap-south-1"
    )
    assert cost.line() == (
        f"training run of 1e+12 tokens on 32 x trn1.32xlarge (TP 32, PP 1, DP 32): unknown ({cost.note})"
    )


def test_a_line_gives_hours_from_one_hour_minutes_below_and_no_empty_note() -> None:
    # 900,000 tokens at 250 tokens/s = 3,600 s: exactly 1.0 h.
    hour = economics.training_run_cost(
        plan_training("trn1.32xlarge", 1, 32), 900_000, throughput=economics.measured(250, "x")
    )
    assert hour.line() == (
        "training run of 9e+05 tokens on 1 x trn1.32xlarge (TP 32, PP 1, DP 1): $21.50 (measured; 1.0 h at 250.00 "
        "tokens/s and $21.5000/h; throughput: x; price: $21.5000/h (KARP 2026-01-19, us-east-1))"
    )
    # 1,600,000 tokens at 250 tokens/s: 1.78 h, still hours.
    longer = economics.training_run_cost(
        plan_training("trn1.32xlarge", 1, 32), 1_600_000, throughput=economics.measured(250, "x")
    )
    assert " (measured; 1.8 h at 250.00 tokens/s" in longer.line()
    # Under an hour: minutes. 1e6 / 859.09 / 3,600 = 0.3233 h = 19.4 min.
    plan = size_model(8_030_261_248, instance_type="inf2.48xlarge", tensor_parallel=24, batch_size=8)
    int8 = economics.serving_token_cost(
        plan, parameters=8_030_261_248, batch_size=8, sequence_length=4096, dtype="int8"
    )
    assert ": $4.20 (estimated; 19.4 min at 859.09 tokens/s and $12.9813/h; " in int8.line()


def test_the_gpu_comparisons_name_their_result_and_configuration() -> None:
    plan = plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B)
    training = economics.gpu_training_comparison(plan, TRILLION)
    assert training is not None
    assert (training.result, training.configuration) == (
        "training run of 1e+12 tokens",
        "1 x p5.48xlarge (H100)",
    )
    serving = economics.gpu_serving_comparison(parameters=70_553_706_496, batch_size=1)
    assert serving is not None
    assert (serving.result, serving.configuration) == ("1M generated tokens", "0.25 of a p5.48xlarge (H100)")
    assert economics._tokens_text(None) == "?" and economics._tokens_text(2048) == "2,048"


def test_price_bases_read_whole() -> None:
    # One instance: no count; two: "2 x"; part of one: "0.25 of", marked estimated.
    prod = size_model(70_553_706_496, instance_type="inf2.48xlarge", batch_size=4, sequence_length=4096)
    serving = economics.serving_token_cost(prod, parameters=70e9, batch_size=4, sequence_length=4096)
    assert (serving.result, serving.price_basis, serving.price_estimated) == (
        "1M generated tokens", "$12.9813/h (KARP 2026-01-19, us-east-1)", False,
    )  # fmt: skip
    two = economics.training_run_cost(
        plan_training("trn1.32xlarge", 2, 32), TRILLION, throughput=economics.measured(1e5, "x")
    )
    assert two.price_basis == "2 x $21.5000/h (KARP 2026-01-19, us-east-1)"
    gpu = economics.gpu_serving_comparison(parameters=70_553_706_496, batch_size=1)
    assert gpu is not None and gpu.price_basis == (
        "0.25 of $55.0400/h (KARP 2026-01-19, us-east-1; after the 2025-06 price cut (was 98.32)) (estimated: no "
        "instance type has that part of its accelerators)"
    )
    # No price: nothing to call an estimate.
    unpriced = economics.training_run_cost(
        plan_training("trn1.32xlarge", 32, 32, model=LLAMA3_8B), TRILLION, region="ap-south-1"
    )
    assert (unpriced.usd_per_hour, unpriced.price_estimated) == (None, False)
    hosting = economics.serving_token_cost(
        prod, parameters=70e9, batch_size=4, sequence_length=4096, sagemaker=True, region="eu-west-1"
    )
    assert (hosting.usd_per_hour, hosting.price_estimated) == (None, False)


def test_a_row_measured_on_one_instance_type_leaves_nothing_open() -> None:
    gpu = next(r for r in PUBLISHED_THROUGHPUT if r.kind == "training" and r.instance_type == "p5.48xlarge")
    assert gpu.also_on == () and economics._which_instance(gpu, "p5.48xlarge", 1, 10.0, "us-east-1") == ""
