"""Issue 25, fast start: the floor model, its goals for the shipped environments, and plan's table.

The goals (issue 25): every phase we control is estimated at most 2 x its floor; the unmargined
estimate of boot + pull + transfer drops at least by half against the model before (300 s for boot
and pull, the artifacts at 125 MiB/s); the load follows the published figure.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from app_assembly import shipped_environments

from cdk_neuron import catalog, timeouts
from cdk_neuron.cli.main import main
from cdk_neuron.cli.plan import STARTUP_MODELS, startup_section
from cdk_neuron.serving import floors, timing
from stacks.config import deployment, load_environments

ENVIRONMENTS = {
    name: deployment(config) for name, config in load_environments(shipped_environments()).items()
}


def before_issue_25(weights_gib: float, *, precompiled: bool) -> float:
    """The previous model's boot, pull and transfer, unmargined: 300 s, then 125 MiB/s."""
    return 300 + (weights_gib * 1024 / 125 if precompiled else 0)


def test_gp3_is_sized_to_the_instance_and_iops_follow() -> None:
    small = floors.data_volume_performance("inf2.xlarge")
    assert (small.throughput_mibps, small.iops) == (1192, 4768)  # 10,000 Mbps burst; 0.25 MiB/s per IOPS
    large = floors.data_volume_performance("ml.inf2.48xlarge")
    assert (large.throughput_mibps, large.iops) == (2000, 8000)  # gp3's maximum
    unknown = floors.data_volume_performance("trn1.32xlarge")
    assert (unknown.throughput_mibps, unknown.iops) == (500, 3000)
    assert "publishes no EBS bandwidth for trn1.32xlarge" in unknown.why


@pytest.mark.parametrize(
    ("weights", "instance", "replicas", "in_ram"),
    [
        (130.385, "inf2.48xlarge", 1, True),
        (254.66, "inf2.48xlarge", 1, True),  # 3 x 254.66 + 4 = 767.98 <= 768
        (254.67, "inf2.48xlarge", 1, False),
        (100.0, "inf2.48xlarge", 4, False),  # 100 + 8 x 100 + 4 > 768: every replica's loader needs 2 x
        (5.98, "inf2.xlarge", 1, False),  # 16 GiB: dev stays on the data volume
        (1.0, "trn1.32xlarge", 1, False),  # no published host I/O: no fast path modelled
    ],
)
def test_the_model_directory_is_in_ram_only_where_memory_allows(
    weights: float, instance: str, replicas: int, in_ram: bool
) -> None:
    assert floors.model_dir_in_ram(weights, instance_type=instance, replicas=replicas) is in_ram


def test_host_io_cites_catalog_sources() -> None:
    for host in catalog.HOST_IO.values():
        assert host.sources and all(key in catalog.SOURCES for key in host.sources)
        assert host.network_burst_gbps >= host.network_gbps and host.ebs_burst_mbps >= host.ebs_baseline_mbps
    assert catalog.host_io("trn2.48xlarge") is None


def test_a_single_flow_bounds_the_pull_without_published_bandwidth() -> None:
    figure = floors.image_pull("trn1.32xlarge")
    assert figure.floor_seconds is None and figure.ratio is None
    assert "no published network or EBS bandwidth" in figure.floor_why


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_phase_we_control_is_within_twice_its_floor(name: str) -> None:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None
    model = STARTUP_MODELS[serving.backend](
        serving.plan.weights_gib,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
        replicas=serving.plan.replicas_per_instance,
    )
    controlled = [p for p in model.phases if p.controlled]
    assert controlled, name
    for phase in controlled:
        assert phase.ratio is not None and phase.ratio <= 2.0, (name, phase)
        assert phase.budget_seconds >= phase.estimate_seconds
    load = model.phase("load and warm-up")
    assert not load.controlled and load.basis == "published"


@pytest.mark.parametrize(("name", "before"), [("prod", 1368), ("dev", 349)])
def test_boot_pull_and_transfer_drop_at_least_by_half(name: str, before: int) -> None:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None and serving.backend == "ec2"
    weights = serving.plan.weights_gib
    assert round(before_issue_25(weights, precompiled=serving.model.precompiled)) == before
    model = timing.ec2_startup_model(
        weights,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
    )
    ours = sum(p.estimate_seconds for p in model.phases if p.controlled)
    assert ours <= before / 2, (name, ours)


def test_prod_start_up_is_now_under_an_hour() -> None:
    serving = ENVIRONMENTS["prod"].serving
    assert serving is not None
    startup = timing.ec2_startup(serving.plan.weights_gib, precompiled=True, instance_type="inf2.48xlarge")
    assert startup.seconds == 3014  # was 4,677 s (issue 25)
    assert startup.seconds < 3600


def test_sagemaker_download_uses_its_gp2_volume_and_no_boot_or_pull() -> None:
    model = timing.sagemaker_startup_model(14.901, precompiled=True, instance_type="inf2.xlarge")
    assert [p.name for p in model.phases] == ["artifact transfer", "load and warm-up"]
    transfer = model.phase("artifact transfer")
    assert "SageMaker's gp2 volume (128 MiB/s)" in transfer.estimate_why
    assert transfer.ratio == pytest.approx(1.0)


def test_measured_phases_replace_estimates_and_keep_their_floor() -> None:
    measured = timing.MeasuredStartup(source="integ run 2026-12-02", boot_seconds=60, image_pull_seconds=90)
    model = timing.ec2_startup_model(
        130.385, precompiled=True, instance_type="inf2.48xlarge", measured=measured
    )
    boot, pull = model.phase("instance boot"), model.phase("image pull")
    assert (boot.basis, boot.estimate_seconds, boot.budget_seconds, boot.ratio) == ("measured", 60.0, 90, 1.5)
    assert (pull.basis, pull.budget_seconds) == ("measured", 135)
    assert "integ run 2026-12-02" in pull.estimate_why
    assert model.phase("artifact transfer").basis == "estimated"
    with pytest.raises(KeyError, match="no phase 'warm-up'; phases: instance boot, image pull"):
        model.phase("warm-up")


def test_plan_prints_estimate_budget_floor_ratio_and_the_load_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--env", "prod", "--json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    startup = doc["environments"][0]["startup"]
    phases = {p["phase"]: p for p in startup["phases"]}
    assert list(phases) == ["instance boot", "image pull", "artifact transfer", "load and warm-up"]
    assert phases["instance boot"] == {
        **phases["instance boot"],
        "estimate_seconds": 80.0,
        "budget_seconds": 120,
        "floor_seconds": 40.0,
        "ratio": 2.0,
        "budget_ratio": 3.0,
    }
    assert startup["budget_seconds"] == 3014
    assert "M4 Llama-3.3-70B" in startup["load_source"]
    assert main(["plan", "--env", "prod"]) == 0
    text = capsys.readouterr().out
    assert "prod: start-up (ec2, inf2.48xlarge), launch to serving" in text
    assert "runtime (not ours)" in text and "2.00x / 3.00x" in text
    assert "load figure: published Neuron load times" in text


def test_plan_has_no_start_up_without_a_fleet() -> None:
    env = ENVIRONMENTS["dev"]
    assert startup_section(env) is not None
    from dataclasses import replace

    assert startup_section(replace(env, serving=None)) is None


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_timeout_derived_from_the_new_start_up_still_nests(name: str) -> None:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None
    plan = serving.plan
    ec2 = timing.ec2_startup(
        plan.weights_gib,
        precompiled=serving.model.precompiled,
        instance_type=plan.instance_type,
        replicas=plan.replicas_per_instance,
    )
    sagemaker = timing.sagemaker_timeouts(
        plan.weights_gib, precompiled=serving.model.precompiled, instance_type=plan.instance_type
    )
    chains = timeouts.chains(
        ec2_startup_seconds=ec2.seconds,
        ec2_boot_seconds=ec2.boot_seconds,
        sagemaker_download_seconds=sagemaker.model_data_download_seconds,
        sagemaker_startup_seconds=sagemaker.container_startup_health_check_seconds,
    )
    assert [v for chain in chains for v in chain.violations()] == []


def test_the_fast_path_download_is_found_by_the_route_scan_and_goes_through_s3() -> None:
    # The CRT sync runs under `env AWS_CONFIG_FILE=...`: the scan that derives every environment's
    # routes (test_node_reach) must still see it, as an S3 call on the gateway endpoint.
    from cdk_neuron.node_programs import reach

    syncs = [
        d for d in reach.program_calls(*reach.SERVING_PROGRAMS) if d.caller.startswith("serving/model.sh")
    ]
    assert [(d.service, d.route) for d in syncs] == [("s3", "s3-gateway")]
    assert "aws s3 sync" in syncs[0].caller


def test_the_before_and_after_table_in_the_docs_matches_the_model() -> None:
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "fast-start.md").read_text()
    budgets = {}
    for name in ("prod", "dev"):
        serving = ENVIRONMENTS[name].serving
        assert serving is not None
        budgets[name] = timing.ec2_startup(
            serving.plan.weights_gib, precompiled=True, instance_type=serving.plan.instance_type
        ).seconds
    assert f"2,008 s / **{budgets['prod']:,} s**" in doc
    assert f"699 s / **{budgets['dev']:,} s**" in doc
    staging = ENVIRONMENTS["staging"].serving
    assert staging is not None
    sagemaker = timing.sagemaker_timeouts(
        staging.plan.weights_gib, precompiled=True, instance_type=staging.plan.instance_type
    )
    assert f"48 s / {sagemaker.model_data_download_seconds} s" in doc
    assert f"543 s / {sagemaker.container_startup_health_check_seconds} s" in doc


# -- docs/fast-start.md: its before/after table is the model's, recomputed -----------------------

DOC = (Path(__file__).resolve().parent.parent / "docs" / "fast-start.md").read_text()
BEFORE_RATE_MIBPS = 125
"""The model before issue 25: boot and image pull 300 s together (no margin), artifacts at 125 MiB/s."""


def _s(seconds: float) -> str:
    return f"{round(seconds):,} s"


def _ec2_rows(name: str) -> list[str]:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None and serving.backend == "ec2"
    weights = serving.plan.weights_gib
    model = timing.ec2_startup_model(
        weights, precompiled=serving.model.precompiled, instance_type=serving.plan.instance_type
    )
    boot, pull = model.phase("instance boot"), model.phase("image pull")
    transfer, load = model.phase("artifact transfer"), model.phase("load and warm-up")
    assert boot.floor_seconds and pull.floor_seconds and transfer.floor_seconds
    assert boot.ratio and pull.ratio and transfer.ratio
    before_transfer = weights * 1024 / BEFORE_RATE_MIBPS
    before_transfer_budget = math.ceil(timeouts.SAFETY * before_transfer)
    budget = timing.ec2_startup(
        weights, precompiled=serving.model.precompiled, instance_type=serving.plan.instance_type
    ).seconds
    return [
        f"| boot + image pull | 300 s / 300 s | {_s(boot.estimate_seconds + pull.estimate_seconds)} / "
        f"{_s(boot.budget_seconds + pull.budget_seconds)} ({round(boot.estimate_seconds)} + "
        f"{round(pull.estimate_seconds)}) | {_s(boot.floor_seconds)}; {_s(pull.floor_seconds)} | "
        f"{boot.ratio:.2f}; {pull.ratio:.2f} |",
        f"| artifact transfer | {_s(before_transfer)} / {_s(before_transfer_budget)} | "
        f"{_s(transfer.estimate_seconds)} / {_s(transfer.budget_seconds)} (",
        f"| {_s(transfer.floor_seconds)} | {transfer.ratio:.2f} |",
        f"| load and warm-up | {_s(load.estimate_seconds)} / {_s(load.budget_seconds)} | "
        f"{_s(load.estimate_seconds)} / {_s(load.budget_seconds)} (published) | - | runtime |",
        f"| **total** | {_s(300 + before_transfer + load.estimate_seconds)} / "
        f"**{_s(300 + before_transfer_budget + load.budget_seconds)}** | {_s(model.estimate_seconds)} / "
        f"**{_s(budget)}** |",
    ]


@pytest.mark.parametrize("name", ["prod", "dev"])
def test_the_documented_before_and_after_table_is_the_model(name: str) -> None:
    section = DOC.split("## Before and after, per phase", 1)[1].split("\n## ", 1)[0]
    block = section.split(f"| {name}: EC2", 1)[1].split("\n| staging" if name == "dev" else "\n| dev", 1)[0]
    for cells in _ec2_rows(name):
        assert cells in block, (name, cells)


def test_the_documented_sagemaker_row_is_the_model() -> None:
    serving = ENVIRONMENTS["staging"].serving
    assert serving is not None and serving.backend == "sagemaker"
    weights, instance = serving.plan.weights_gib, serving.plan.instance_type
    model = timing.sagemaker_startup_model(weights, precompiled=True, instance_type=instance)
    download, load = model.phase("artifact transfer"), model.phase("load and warm-up")
    timeouts_now = timing.sagemaker_timeouts(weights, precompiled=True, instance_type=instance)
    before = weights * 1024 / BEFORE_RATE_MIBPS
    before_budget = timing.SAGEMAKER_DOWNLOAD_START_SECONDS + math.ceil(timeouts.SAFETY * before)
    assert download.floor_seconds is not None
    assert (
        f"| {_s(before)} / {_s(before_budget)} | {_s(download.estimate_seconds)} / "
        f"{_s(timeouts_now.model_data_download_seconds)} | {_s(download.floor_seconds)} (SageMaker's gp2 volume"
    ) in DOC
    assert (
        f"| {_s(load.estimate_seconds)} / {_s(load.budget_seconds)} | {_s(load.estimate_seconds)} / "
        f"{_s(timeouts_now.container_startup_health_check_seconds)} | - | runtime |"
    ) in DOC


def test_the_documented_hook_wait_and_start_up_limit_are_the_timeouts() -> None:
    window = timeouts.LIFECYCLE_PROGRESS_WINDOW
    assert f"| prod: a dead instance is abandoned after | 4,677 s | 3,014 s | {window} s |" in DOC
    assert f"| dev: a dead instance is abandoned after | 1,189 s | 1,050 s | {window} s |" in DOC
    assert (
        f"| the longest start-up a fleet may budget | 7,200 s | 7,200 s | {timeouts.STARTUP_MAX:,} s |" in DOC
    )
    assert f"{timeouts.lifecycle_global_seconds():,} s with a {window} s window" in DOC


def test_the_documented_sagemaker_options_match_what_the_fleet_builds() -> None:
    # Used: uncompressed S3Prefix model data and the high-resolution concurrency metric.
    backend = (
        Path(__file__).resolve().parent.parent / "constructs/cdk_neuron/serving/sagemaker_backend.py"
    ).read_text()
    assert 's3_data_type="S3Prefix", compression_type="None"' in backend
    assert "SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION" in backend
    table = DOC.split("| Feature | What it does | Inferentia2 | cdk-neuron |", 1)[1].split("\n\n", 1)[0]
    rows = {line.split("|")[1].strip().split(" (")[0]: line for line in table.splitlines()[1:]}
    assert "**used**" in rows["Uncompressed model data"]
    assert "**used**" in rows["Sub-minute scaling metrics"]
    assert "**not adopted**" in rows["Inference component data caching"]
    assert "**not used**" in rows["Fast Model Loader"]
    assert "**nothing to configure**" in rows["Container image caching"]
    # The fleet builds no inference component: the doc's "not adopted" stays true.
    assert "CfnInferenceComponent" not in backend
