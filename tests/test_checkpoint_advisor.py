"""The checkpoint advisor against hand-worked figures.

Units: checkpoint sizes in decimal GB (1e9 B); EFS throughput in MiB/s (2**20 B/s);
FSx throughput in MB/s (1e6 B/s) per "TiB" of 1,000 GiB, as FSx labels capacities.

The save-time arithmetic is worked on the 12-byte layout of a model kept in fp32 (``fp32``: 4-byte
weights plus Adam's two fp32 moments), the 840 GB for a 70B model that aws-neuron-sdk's
known_issues.rst computes; the default layout (NxD Training's, 10 bytes) is tested on its own.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cdk_neuron.checkpoint_advisor import (
    EFS_HIGH_THROUGHPUT_REGIONS,
    OPTIMIZER_STATE_BYTES,
    CheckpointEstimate,
    EfsWriteLimits,
    efs_elastic_write_limits,
    estimate_checkpoint,
    fsx_lustre_sizing,
)
from cdk_neuron.errors import NeuronConfigError

MIB = 2**20
SEVENTY_B = 70e9


def fp32(parameters: float, **options: object) -> CheckpointEstimate:
    """The estimate for a model kept in fp32: 4 + 8 = 12 bytes per parameter."""
    return estimate_checkpoint(parameters, weight_bytes_per_parameter="fp32", **options)  # type: ignore[arg-type]


def test_the_default_is_nxd_trainings_checkpoint_without_master_weights() -> None:
    # NxD Training's configs set use_master_weights_in_ckpt: False: 2-byte weights + 8 bytes of Adam
    # moments = 10 bytes; Llama 3 70B (70,553,706,496 parameters) is 705.5 GB.
    est = estimate_checkpoint(70_553_706_496)
    assert (est.weight_bytes_per_parameter, est.optimizer_bytes_per_parameter) == (2.0, 8.0)
    assert (est.bytes_per_parameter, est.master_weight_bytes_per_parameter) == (10.0, 0.0)
    assert est.size_gb == pytest.approx(705.537, abs=1e-3)
    # With the fp32 master copy in the checkpoint: 14 bytes, 987.8 GB.
    master = estimate_checkpoint(70_553_706_496, master_weights_in_checkpoint=True)
    assert (master.bytes_per_parameter, master.size_gb) == (14.0, pytest.approx(987.752, abs=1e-3))
    assert master.summary().startswith("70.5537B params x (2 + 8 + 4) bytes = 988 GB per checkpoint;")
    with pytest.raises(
        NeuronConfigError, match=r"^master_weights_in_checkpoint='yes': must be true or false$"
    ):
        estimate_checkpoint(1e9, master_weights_in_checkpoint="yes")  # type: ignore[arg-type]


def test_70b_kept_in_fp32_with_adam_is_840_gb() -> None:
    # known_issues.rst: 280 GB weights + 560 GB optimizer = 840 GB for Llama-2 70B.
    est = fp32(SEVENTY_B)
    assert est.size_bytes == 70e9 * 12
    assert est.size_gb == pytest.approx(840.0)
    # awsome-distributed-training reports ~850 GB on disk for Llama-3 70B written by neuronx-distributed's
    # own example: the tensors are within 2 % of it (RNG state, scheduler and metadata are not counted).
    assert 850 * 0.98 < est.size_gb < 850


def test_one_writer_in_us_east_1_is_held_by_the_per_client_limit() -> None:
    est = fp32(SEVENTY_B, region="us-east-1")
    # 840e9 B / (1,500 x 2**20 B/s) = 534.06 s = 8.9 min
    assert est.limits.per_client_mibps == 1500
    assert est.limits.per_file_system_mibps == 5 * 1024
    assert est.limiting_factor == "per-client"
    assert est.throughput_mibps == 1500
    assert est.save_seconds == pytest.approx(840e9 / (1500 * MIB))
    assert est.save_seconds == pytest.approx(534.06, abs=0.01)
    assert not est.exceeds(600)


def test_many_writers_hit_the_per_file_system_write_limit() -> None:
    est = fp32(SEVENTY_B, region="us-east-1", writers=32)
    # 32 x 1,500 MiB/s would be 48,000; the file system caps writes at 5 GiB/s = 5,120 MiB/s.
    assert est.client_throughput_mibps == 48_000
    assert est.limiting_factor == "per-file-system"
    assert est.save_seconds == pytest.approx(840e9 / (5120 * MIB))
    assert est.save_seconds == pytest.approx(156.46, abs=0.01)


def test_writers_needed_for_a_five_minute_budget() -> None:
    est = fp32(SEVENTY_B, region="us-east-1")
    # 840e9 B / 300 s = 2,670.3 MiB/s -> ceil(2,670.3 / 1,500) = 2 writers
    assert est.exceeds(300)
    assert est.writers_needed(300) == 2
    assert est.writers_needed(600) == 1
    # 840e9 / 150 s = 5,340.6 MiB/s > 5,120: no number of writers is enough
    assert est.writers_needed(150) is None


def test_other_regions_default_to_one_gibps_per_file_system() -> None:
    est = fp32(SEVENTY_B, region="ap-south-1")
    # 840e9 / (1,024 x 2**20) = 782.31 s: over 10 minutes even though one client could do 1,500
    assert est.limits.per_file_system_mibps == 1024
    assert est.limiting_factor == "per-file-system"
    assert est.save_seconds == pytest.approx(782.31, abs=0.01)
    assert est.exceeds(600)
    assert est.writers_needed(600) is None


def test_unknown_region_assumes_the_lower_limit() -> None:
    assert fp32(SEVENTY_B).limits.per_file_system_mibps == 1024
    assert "unknown Region" in fp32(SEVENTY_B).limits.basis


def test_the_seven_5_gibps_regions_of_the_newest_quota_page() -> None:
    assert {
        "us-east-1",
        "us-east-2",
        "us-west-2",
        "ap-southeast-1",
        "ap-northeast-1",
        "eu-central-1",
        "eu-west-1",
    } == EFS_HIGH_THROUGHPUT_REGIONS


def test_one_zone_limits() -> None:
    est = fp32(SEVENTY_B, region="us-east-1", one_zone=True, writers=4)
    # One Zone: 500 MiB/s per client, 1 GiB/s per file system -> 4 writers are capped at 1,024
    assert est.limits.per_client_mibps == 500
    assert est.limits.per_file_system_mibps == 1024
    assert est.limiting_factor == "per-file-system"
    assert est.save_seconds == pytest.approx(782.31, abs=0.01)


def test_old_efs_client_is_held_to_500_mibps() -> None:
    est = fp32(SEVENTY_B, region="us-east-1", efs_client_v2=False)
    # 840e9 / (500 x 2**20) = 1,602.17 s = 26.7 min
    assert est.save_seconds == pytest.approx(1602.17, abs=0.01)
    assert est.save_minutes == pytest.approx(26.70, abs=0.01)


def test_dtype_and_optimizer_names() -> None:
    est = estimate_checkpoint(
        SEVENTY_B, weight_bytes_per_parameter="bf16", optimizer_bytes_per_parameter="adamw-bf16"
    )
    assert est.size_gb == pytest.approx(70 * 6)  # 2 + 4 bytes
    assert estimate_checkpoint(
        8e9, weight_bytes_per_parameter="BF16", optimizer_bytes_per_parameter="none"
    ).size_gb == (pytest.approx(16.0))
    assert fp32(1e9, optimizer_bytes_per_parameter="sgd-momentum").size_gb == pytest.approx(8.0)


def test_write_cost_per_save() -> None:
    # 840 GB x $0.06 per GB written with Elastic throughput
    assert fp32(SEVENTY_B).write_cost_usd == pytest.approx(50.40)


@pytest.mark.parametrize(
    ("checkpoint_bytes", "budget", "kept", "capacity_gib", "tier"),
    [
        # 840 GB in 600 s = 1,400 MB/s; 2 kept = 1,565 GiB -> 2,400 GiB ("2.4 TiB");
        # 2.4 x 500 = 1,200 < 1,400 <= 2.4 x 1,000
        (840e9, 600, 2, 2400, 1000),
        # 6 kept = 4,694 GiB -> 4,800 GiB; 4.8 x 250 = 1,200 < 1,400 <= 4.8 x 500
        (840e9, 600, 6, 4800, 500),
        # 100 GB in 600 s = 166.7 MB/s; 93 GiB -> 1,200 GiB; 1.2 x 125 = 150 < 166.7 <= 1.2 x 250
        (100e9, 600, 1, 1200, 250),
        # 840 GB in 60 s = 14,000 MB/s -> needs 14 "TiB" at 1,000 -> 14,400 GiB (6 x 2,400)
        (840e9, 60, 1, 14400, 1000),
    ],
)
def test_fsx_lustre_sizing(
    checkpoint_bytes: float, budget: float, kept: int, capacity_gib: int, tier: int
) -> None:
    sizing = fsx_lustre_sizing(
        checkpoint_bytes=checkpoint_bytes, budget_seconds=budget, kept_checkpoints=kept
    )
    assert (sizing.storage_gib, sizing.mbps_per_tib) == (capacity_gib, tier)
    assert sizing.throughput_mbps >= sizing.required_mbps
    assert sizing.required_mbps == pytest.approx(checkpoint_bytes / budget / 1e6)


def test_fsx_text_shows_tib_times_mbps_per_tib() -> None:
    text = str(fsx_lustre_sizing(checkpoint_bytes=840e9, budget_seconds=600))
    assert text == "FSx for Lustre PERSISTENT_2: 2.4 TiB x 1000 MB/s per TiB = 2,400 MB/s (needs 1,400 MB/s)"


def test_advice_names_the_alternatives() -> None:
    helps = fp32(SEVENTY_B, region="us-east-1").advice(300)
    assert "exceeds the 5 min budget" in helps
    assert ">= 2 nodes in parallel" in helps
    assert "FSx for Lustre PERSISTENT_2" in helps
    assert "docs.aws.amazon.com/efs/latest/ug/limits.html" in helps
    capped = fp32(SEVENTY_B, region="ap-south-1").advice(600)
    assert "No number of writers helps" in capped
    fits = fp32(SEVENTY_B, region="us-east-1").advice(600)
    assert "fits the 10 min budget" in fits
    assert "FSx" not in fits


# Each refusal: the arguments, the field named, and the fix, matched as the whole message. The
# error must carry the value given (in the message and as ``.value``), not a default or None.
REFUSALS: list[tuple[dict[str, object], str, object, str]] = [
    ({"parameters": -7e9}, "parameters", -7e9, "must be a positive whole number, e.g. 70e9"),
    ({"parameters": 0}, "parameters", 0, "must be a positive whole number, e.g. 70e9"),
    ({"parameters": 1.5}, "parameters", 1.5, "must be a positive whole number, e.g. 70e9"),
    ({"parameters": True}, "parameters", True, "give the model's parameter count, e.g. 70e9"),
    ({"parameters": "70B"}, "parameters", "70B", "give the model's parameter count, e.g. 70e9"),
    ({"weight_bytes_per_parameter": -2}, "weight_bytes_per_parameter", -2,
     "bytes per parameter cannot be negative"),
    ({"weight_bytes_per_parameter": 0}, "weight_bytes_per_parameter", 0, "must be > 0"),
    ({"weight_bytes_per_parameter": "fp64"}, "weight_bytes_per_parameter", "fp64",
     "use a number of bytes or one of bf16, bfloat16, float16, float32, fp16, fp32, fp8, int8"),
    ({"weight_bytes_per_parameter": float("inf")}, "weight_bytes_per_parameter", float("inf"),
     "use a finite number of bytes or one of bf16, bfloat16, float16, float32, fp16, fp32, fp8, int8"),
    # Wrong types: one line naming the value, never a TypeError from the arithmetic.
    ({"weight_bytes_per_parameter": True}, "weight_bytes_per_parameter", True,
     "use a finite number of bytes or one of bf16, bfloat16, float16, float32, fp16, fp32, fp8, int8"),
    ({"weight_bytes_per_parameter": [4]}, "weight_bytes_per_parameter", [4],
     "use a finite number of bytes or one of bf16, bfloat16, float16, float32, fp16, fp32, fp8, int8"),
    ({"optimizer_bytes_per_parameter": -8}, "optimizer_bytes_per_parameter", -8,
     "bytes per parameter cannot be negative"),
    ({"optimizer_bytes_per_parameter": -0.5}, "optimizer_bytes_per_parameter", -0.5,
     "bytes per parameter cannot be negative"),
    ({"optimizer_bytes_per_parameter": "lion"}, "optimizer_bytes_per_parameter", "lion",
     "use a number of bytes or one of adam, adam-bf16, adamw, adamw-bf16, none, sgd, sgd-momentum"),
    ({"optimizer_bytes_per_parameter": None}, "optimizer_bytes_per_parameter", None,
     "use a finite number of bytes or one of adam, adam-bf16, adamw, adamw-bf16, none, sgd, sgd-momentum"),
    ({"writers": 0}, "writers", 0, r"must be a whole number >= 1 \(nodes writing shards\)"),
    ({"writers": 2.5}, "writers", 2.5, r"must be a whole number >= 1 \(nodes writing shards\)"),
    ({"writers": True}, "writers", True, r"must be a whole number >= 1 \(nodes writing shards\)"),
    ({"region": ""}, "region", "", "give an AWS Region name such as 'us-east-1', or None"),
    ({"region": 1}, "region", 1, "give an AWS Region name such as 'us-east-1', or None"),
    ({"one_zone": "false"}, "one_zone", "false", "must be true or false"),
    ({"efs_client_v2": 1}, "efs_client_v2", 1, "must be true or false"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "field", "value", "fix"), REFUSALS)
def test_bad_input_raises_neuron_config_error(
    kwargs: dict[str, object], field: str, value: object, fix: str
) -> None:
    arguments = {"parameters": 7e9} | kwargs
    with pytest.raises(NeuronConfigError, match=rf"^{field}={re.escape(repr(value))}: {fix}$") as raised:
        estimate_checkpoint(**arguments)  # type: ignore[arg-type]
    assert (raised.value.field, raised.value.value) == (field, value)


def test_nan_parameters_are_refused_with_the_nan_given() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"^parameters=nan: give the model's parameter count"
    ) as raised:
        estimate_checkpoint(float("nan"))
    assert math.isnan(raised.value.value)


@pytest.mark.parametrize(
    ("kwargs", "field", "value", "fix"),
    [
        ({"checkpoint_bytes": -1, "budget_seconds": 600}, "checkpoint_bytes", -1, "must be greater than 0"),
        ({"checkpoint_bytes": 0, "budget_seconds": 600}, "checkpoint_bytes", 0, "must be greater than 0"),
        ({"checkpoint_bytes": "840e9", "budget_seconds": 600}, "checkpoint_bytes", "840e9", "must be a number"),
        ({"checkpoint_bytes": math.inf, "budget_seconds": 600}, "checkpoint_bytes", math.inf,
         "must be a finite number"),
        ({"checkpoint_bytes": 1e9, "budget_seconds": 0}, "budget_seconds", 0, "must be greater than 0"),
        ({"checkpoint_bytes": 1e9, "budget_seconds": True}, "budget_seconds", True, "must be a number"),
        ({"checkpoint_bytes": 1e9, "budget_seconds": 600, "kept_checkpoints": 0}, "kept_checkpoints", 0,
         "must be a whole number >= 1"),
        ({"checkpoint_bytes": 1e9, "budget_seconds": 600, "kept_checkpoints": 1.0}, "kept_checkpoints", 1.0,
         "must be a whole number >= 1"),
        ({"checkpoint_bytes": 1e9, "budget_seconds": 600, "kept_checkpoints": True}, "kept_checkpoints", True,
         "must be a whole number >= 1"),
    ],
)  # fmt: skip
def test_fsx_sizing_rejects_bad_input(kwargs: dict[str, object], field: str, value: object, fix: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^{field}={re.escape(repr(value))}: {fix}$") as raised:
        fsx_lustre_sizing(**kwargs)  # type: ignore[arg-type]
    assert (raised.value.field, raised.value.value) == (field, value)


@pytest.mark.parametrize("budget", [0, -60, "600", None])
def test_a_budget_that_is_not_a_positive_number_is_refused_by_every_method(budget: object) -> None:
    est = fp32(SEVENTY_B)
    for method in (est.exceeds, est.writers_needed, est.advice, est.fsx_lustre_suggestion):
        with pytest.raises(NeuronConfigError, match=rf"^budget_seconds={re.escape(repr(budget))}: must be"):
            method(budget)  # type: ignore[arg-type]


@given(
    params=st.floats(min_value=1e6, max_value=2e12).map(math.floor),
    writers=st.integers(min_value=1, max_value=256),
    one_zone=st.booleans(),
)
# Fixed cases run on every run: 70B on one Regional writer (held per client), the writer count where
# us-east-1's 5 GiBps becomes the limit (4 x 1,500 > 5,120), and One Zone.
@example(params=70_000_000_000, writers=1, one_zone=False)
@example(params=70_000_000_000, writers=3, one_zone=False)
@example(params=1_000_000, writers=1, one_zone=True)
def test_more_writers_never_slow_a_save_and_time_times_rate_is_size(
    params: int, writers: int, one_zone: bool
) -> None:
    fewer = estimate_checkpoint(params, writers=writers, region="us-east-1", one_zone=one_zone)
    more = estimate_checkpoint(params, writers=writers + 1, region="us-east-1", one_zone=one_zone)
    assert more.save_seconds <= fewer.save_seconds
    assert fewer.throughput_mibps <= fewer.limits.per_file_system_mibps
    assert fewer.save_seconds * fewer.throughput_mibps * MIB == pytest.approx(fewer.size_bytes)


def test_module_does_not_import_aws_cdk() -> None:
    code = "import sys, cdk_neuron.checkpoint_advisor; sys.exit('aws_cdk' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --------------------------------------------------------------------------------------------
# The EFS limits, read directly
# --------------------------------------------------------------------------------------------

QUOTAS = "https://docs.aws.amazon.com/efs/latest/ug/limits.html"
PERFORMANCE = "https://docs.aws.amazon.com/efs/latest/ug/performance.html"


def test_default_limits_are_regional_with_the_efs_utils_v2_client_and_the_lower_region_limit() -> None:
    # performance.html: Regional + Elastic, 1,500 MiBps per client with amazon-efs-utils 2.0+;
    # limits.html: 1 GiBps of writes in "all other Regions" (an unknown Region errs on that side).
    limits = efs_elastic_write_limits()
    assert (limits.per_file_system_mibps, limits.per_client_mibps) == (1024, 1500)
    assert limits.basis == (
        f"Regional Elastic in an unknown Region (lower default assumed) ({QUOTAS}, {PERFORMANCE}, "
        "retrieved 2026-11-30)"
    )


def test_regional_limits_name_the_region_they_apply_to() -> None:
    limits = efs_elastic_write_limits(region="eu-west-1", efs_client_v2=False)
    # eu-west-1 is one of limits.html's 5 GiBps Regions; without efs-utils 2.0, 500 MiBps per client.
    assert (limits.per_file_system_mibps, limits.per_client_mibps) == (5 * 1024, 500)
    assert limits.basis == f"Regional Elastic in eu-west-1 ({QUOTAS}, {PERFORMANCE}, retrieved 2026-11-30)"


def test_one_zone_limits_ignore_the_region_and_the_client() -> None:
    # performance.html: One Zone, 500 MiBps per client and 1 GiBps per file system, in any Region.
    for region in (None, "us-east-1", "ap-south-1"):
        for client_v2 in (True, False):
            limits = efs_elastic_write_limits(region=region, one_zone=True, efs_client_v2=client_v2)
            assert (limits.per_file_system_mibps, limits.per_client_mibps) == (1024, 500)
            assert limits.basis == f"One Zone Elastic ({PERFORMANCE}, retrieved 2026-11-30)"


@pytest.mark.parametrize("field", ["per_file_system_mibps", "per_client_mibps"])
@pytest.mark.parametrize("value", [0, -1, 0.0, True, "1500", None, math.nan])
def test_efs_write_limits_refuse_what_is_not_a_positive_throughput(field: str, value: object) -> None:
    given: dict[str, object] = {"per_file_system_mibps": 1024, "per_client_mibps": 1500, field: value}
    with pytest.raises(
        NeuronConfigError,
        match=rf"^{field}={re.escape(repr(value))}: must be a positive throughput in MiB/s$",
    ) as raised:
        EfsWriteLimits(basis="test", **given)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert raised.value.value is value


def test_efs_write_limits_accept_any_positive_throughput() -> None:
    # Just above zero, and below one: a quota is a positive rate, not a whole number of MiB/s.
    limits = EfsWriteLimits(per_file_system_mibps=0.5, per_client_mibps=1, basis="a test")
    assert (limits.per_file_system_mibps, limits.per_client_mibps, limits.basis) == (0.5, 1, "a test")


# --------------------------------------------------------------------------------------------
# Optimizer and dtype names: the bytes each stands for, transcribed
# --------------------------------------------------------------------------------------------

# Adam keeps two moment estimates per parameter (m and v, Kingma & Ba, "Adam: A Method for
# Stochastic Optimization", https://arxiv.org/abs/1412.6980, Algorithm 1); fp32 is 4 bytes and bf16 2
# (IEEE 754 binary32; "bfloat16", https://cloud.google.com/tpu/docs/bfloat16). SGD with momentum keeps
# one momentum buffer per parameter, plain SGD none (torch.optim.SGD,
# https://pytorch.org/docs/stable/generated/torch.optim.SGD.html). "none" is a weights-only export.
OPTIMIZER_BYTES = {
    "adam": 8,
    "adamw": 8,
    "adam-bf16": 4,
    "adamw-bf16": 4,
    "sgd-momentum": 4,
    "sgd": 0,
    "none": 0,
}
# Bytes per weight: binary32 4, binary16 and bfloat16 2, fp8 and int8 1.
DTYPE_BYTES = {
    "fp32": 4,
    "float32": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "fp8": 1,
    "int8": 1,
}


@pytest.mark.parametrize(("name", "size"), OPTIMIZER_BYTES.items())
def test_every_optimizer_name_stands_for_its_state_bytes(name: str, size: int) -> None:
    est = estimate_checkpoint(1e9, optimizer_bytes_per_parameter=name)
    assert est.optimizer_bytes_per_parameter == size
    assert est.size_bytes == 1e9 * (2 + size)


def test_the_optimizer_names_are_exactly_these() -> None:
    assert dict(OPTIMIZER_STATE_BYTES) == OPTIMIZER_BYTES


@pytest.mark.parametrize(("name", "size"), DTYPE_BYTES.items())
def test_every_dtype_name_stands_for_its_weight_bytes(name: str, size: int) -> None:
    assert estimate_checkpoint(1e9, weight_bytes_per_parameter=name).weight_bytes_per_parameter == size
    # Names are read case-blind and without surrounding spaces, as cdk.json writers type them.
    assert (
        estimate_checkpoint(1e9, weight_bytes_per_parameter=f" {name.upper()} ").weight_bytes_per_parameter
        == size
    )


def test_byte_counts_may_be_fractional_and_the_optimizer_state_may_be_empty() -> None:
    est = estimate_checkpoint(1e9, weight_bytes_per_parameter=0.5, optimizer_bytes_per_parameter=0)
    assert (est.weight_bytes_per_parameter, est.optimizer_bytes_per_parameter) == (0.5, 0)
    assert est.size_gb == 0.5


# --------------------------------------------------------------------------------------------
# Limits of the arithmetic: exactly at each boundary
# --------------------------------------------------------------------------------------------

# 7,864,320,000 parameters x 12 bytes = 94,371,840,000 B = 60 s at 1,500 MiB/s (1,500 x 2**20 B/s).
SIXTY_SECONDS_AT_ONE_CLIENT = 7_864_320_000


def test_a_save_that_takes_exactly_the_budget_fits() -> None:
    est = fp32(SIXTY_SECONDS_AT_ONE_CLIENT, region="us-east-1")
    assert est.save_seconds == 60.0
    assert not est.exceeds(60)
    assert est.exceeds(59.5)
    assert est.writers_needed(60) == 1
    assert est.writers_needed(59.5) == 2


def test_writers_are_needed_up_to_exactly_the_file_system_limit() -> None:
    # 1,342,177,280 x 12 B = 16,106,127,360 B; in 3 s that is 5,120 MiB/s: exactly us-east-1's
    # per-file-system limit, so ceil(5,120 / 1,500) = 4 writers reach it; in 2.9 s nothing does.
    est = fp32(1_342_177_280, region="us-east-1")
    assert est.writers_needed(3) == 4
    assert est.writers_needed(2.9) is None


def test_fsx_capacity_exactly_at_the_smallest_step_is_that_step() -> None:
    # 2 kept x 600 GiB = 1,200 GiB exactly: the 1.2 "TiB" size, not the next. 644.2 GB in an hour is
    # 178.9 MB/s: 1.2 x 125 = 150 is short, 1.2 x 250 = 300 reaches it.
    sizing = fsx_lustre_sizing(checkpoint_bytes=600 * 2**30, budget_seconds=3600)
    assert (sizing.storage_gib, sizing.mbps_per_tib) == (1200, 250)


def test_fsx_tier_exactly_at_the_required_throughput_is_enough() -> None:
    # 150 GB in 1,000 s = 150 MB/s = 1.2 "TiB" x 125 MB/s per TiB exactly.
    sizing = fsx_lustre_sizing(checkpoint_bytes=150e9, budget_seconds=1000, kept_checkpoints=1)
    assert (sizing.storage_gib, sizing.mbps_per_tib, sizing.required_mbps) == (1200, 125, 150.0)


def test_fsx_capacity_exactly_at_the_throughput_it_needs() -> None:
    # 480 GB in 100 s = 4,800 MB/s: 4.8 "TiB" (4,800 GiB, two 2,400 GiB steps) x 1,000 MB/s exactly.
    sizing = fsx_lustre_sizing(checkpoint_bytes=480e9, budget_seconds=100, kept_checkpoints=1)
    assert (sizing.storage_gib, sizing.mbps_per_tib) == (4800, 1000)


def test_fsx_keeps_two_checkpoints_unless_told_otherwise() -> None:
    # 1,000 GiB per checkpoint: two fit 2,400 GiB, three need 4,800 GiB.
    one_thousand_gib = 1000 * 2**30
    assert fsx_lustre_sizing(checkpoint_bytes=one_thousand_gib, budget_seconds=3600).storage_gib == 2400
    assert (
        fsx_lustre_sizing(
            checkpoint_bytes=one_thousand_gib, budget_seconds=3600, kept_checkpoints=3
        ).storage_gib
        == 4800
    )
    # 268,435,456,000 fp32 weights without optimizer state = 1,000 GiB.
    est = fp32(268_435_456_000, optimizer_bytes_per_parameter="none")
    assert est.fsx_lustre_suggestion(3600).storage_gib == 2400
    assert est.fsx_lustre_suggestion(3600, kept_checkpoints=3).storage_gib == 4800


# --------------------------------------------------------------------------------------------
# What a user reads: the whole text, so that a line that should not be there is noticed
# --------------------------------------------------------------------------------------------

LIMITS_US_EAST_1 = f"Limits: Regional Elastic in us-east-1 ({QUOTAS}, {PERFORMANCE}, retrieved 2026-11-30)."
SUMMARY_70B_US_EAST_1 = (
    "70B params x (4 + 8) bytes = 840 GB per checkpoint; 1 writer(s) at 1,500 MiB/s (per-client limit) "
    "save it in 8.9 min on EFS; Elastic writes cost about $50.40 per save"
)


def test_summary_text() -> None:
    assert fp32(SEVENTY_B, region="us-east-1").summary() == SUMMARY_70B_US_EAST_1
    # Parameters in billions to six significant digits.
    assert fp32(1_000_015_000).summary().startswith("1.00002B params x (4 + 8) bytes")


def test_advice_when_the_save_fits_says_only_so() -> None:
    assert fp32(SEVENTY_B, region="us-east-1").advice(600) == (
        f"{SUMMARY_70B_US_EAST_1}; this fits the 10 min budget. {LIMITS_US_EAST_1}"
    )


def test_advice_when_more_writers_help() -> None:
    # 840 GB in 300 s = 2,800 MB/s: FSx needs 2,800 GiB of "TiB" x 1,000 -> 4,800 GiB.
    assert fp32(SEVENTY_B, region="us-east-1").advice(300) == (
        f"{SUMMARY_70B_US_EAST_1}; this exceeds the 5 min budget. "
        "Save a sharded checkpoint from >= 2 nodes in parallel (1,500 MiB/s per client). "
        "Or use FSx for Lustre PERSISTENT_2: 4.8 TiB x 1000 MB/s per TiB = 4,800 MB/s (needs 2,800 MB/s). "
        f"{LIMITS_US_EAST_1}"
    )


def test_advice_when_no_number_of_writers_helps() -> None:
    # ap-south-1: 1 GiBps per file system; 840e9 / (1,024 x 2**20) = 782.3 s = 13.0 min.
    assert fp32(SEVENTY_B, region="ap-south-1").advice(600) == (
        "70B params x (4 + 8) bytes = 840 GB per checkpoint; 1 writer(s) at 1,024 MiB/s (per-file-system "
        "limit) save it in 13.0 min on EFS; Elastic writes cost about $50.40 per save; this exceeds the 10 min "
        "budget. No number of writers helps: the file system's write limit is 1,024 MiB/s (request an EFS "
        "quota increase). Or use FSx for Lustre PERSISTENT_2: 2.4 TiB x 1000 MB/s per TiB = 2,400 MB/s "
        f"(needs 1,400 MB/s). Limits: Regional Elastic in ap-south-1 ({QUOTAS}, {PERFORMANCE}, retrieved "
        "2026-11-30)."
    )
