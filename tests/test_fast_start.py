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


def test_a_volume_that_takes_only_the_image_is_not_provisioned_to_the_instance() -> None:
    # Review (issue 25, S8): with the weights in RAM the volume receives only the image; gp3 bills
    # throughput above 125 MiB/s and IOPS above 3,000 per month, also on stopped warm-pool instances.
    in_ram = floors.data_volume_performance("inf2.48xlarge", in_ram=True)
    assert (in_ram.throughput_mibps, in_ram.iops) == (500, 3000)
    assert "the weights are in RAM" in in_ram.why
    assert floors.data_volume_performance("inf2.48xlarge").throughput_mibps == 2000


def test_the_transfer_estimate_is_the_best_published_client_rate_not_the_floor() -> None:
    # Review (issue 25, S1): estimate and floor were the same number (ratio 1.00 by construction). The
    # estimate now takes the share of a 100 Gbps network the best published S3 download reached
    # (8,003 MB/s on c5n.18xlarge, dvassallo/s3-benchmark), the floor stays the network or the volume.
    assert round(floors.S3_CLIENT_NETWORK_SHARE, 6) == round(8003 / 12500, 6)
    prod = floors.artifact_transfer(
        130.385,
        instance_type="inf2.48xlarge",
        target=floors.node_target(130.385, instance_type="inf2.48xlarge"),
    )
    assert prod.ratio == pytest.approx(1 / floors.S3_CLIENT_NETWORK_SHARE)
    # Onto a volume slower than the client, the volume bounds both.
    slow = floors.TransferTarget("a slow volume", 125, "CRT client")
    onto = floors.artifact_transfer(10.0, instance_type="inf2.48xlarge", target=slow)
    assert onto.ratio == pytest.approx(1.0)


def test_hbm_is_820_gb_per_second_per_chip_not_gib() -> None:
    # Review (issue 25, N1): the source gives GB/s.
    host = catalog.host_io("inf2.xlarge")
    assert host is not None and host.hbm_gib_per_second == pytest.approx(820e9 / 2**30)


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
def test_boot_and_transfer_are_within_twice_their_floor(name: str) -> None:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None
    model = STARTUP_MODELS[serving.backend](
        serving.plan.weights_gib,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
        replicas=serving.plan.replicas_per_instance,
    )
    controlled = [p for p in model.phases if p.controlled and p.name != "image pull"]
    assert controlled, name
    for phase in controlled:
        assert phase.ratio is not None and phase.ratio <= 2.0, (name, phase)
        assert phase.budget_seconds >= phase.estimate_seconds
    load = model.phase("load and warm-up")
    assert not load.controlled and load.basis == "published"
    # Review (issue 25, S6): no host-to-device figure is published, so the load has no floor.
    assert load.floor_seconds is None and load.ratio is None


@pytest.mark.parametrize("name", ["prod", "dev"])
def test_the_image_pull_is_the_published_figure_and_misses_the_two_x_goal(name: str) -> None:
    # Review (issue 25, B1): the pull was modelled at 68-71 s, below AWS's published 4-6 minutes for a
    # 15-20 GB image. It is now that figure (budget: the slowest, 360 s) until the integ kit measures
    # it, and its floor is the hardware's (network, volume, gzip on every core), so the goal of at most
    # 2 x the floor is NOT met for this phase (docs/fast-start.md says so).
    serving = ENVIRONMENTS[name].serving
    assert serving is not None and serving.backend == "ec2"
    model = timing.ec2_startup_model(
        serving.plan.weights_gib, precompiled=True, instance_type=serving.plan.instance_type
    )
    pull = model.phase("image pull")
    assert (pull.estimate_seconds, pull.budget_seconds) == (240.0, 360)
    assert pull.ratio is not None and pull.ratio > 2.0
    assert "AWS's published pull of a 15-20 GB image" in pull.estimate_why


@pytest.mark.parametrize(("name", "before", "halved"), [("prod", 1368, True), ("dev", 349, False)])
def test_boot_pull_and_transfer_drop_by_half_in_prod_only(name: str, before: int, halved: bool) -> None:
    # With the published pull (B1), dev's controlled phases are 326 s against 349 s before: the goal
    # "drops at least by half" is met for prod and NOT for dev.
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
    assert (ours <= before / 2) is halved, (name, ours)


def test_prod_start_up_is_under_an_hour() -> None:
    serving = ENVIRONMENTS["prod"].serving
    assert serving is not None
    startup = timing.ec2_startup(serving.plan.weights_gib, precompiled=True, instance_type="inf2.48xlarge")
    assert startup.seconds == 3281  # was 4,677 s before issue 25 (3,014 s before review B1 and S1)
    assert startup.seconds < 3600


def test_sagemaker_download_uses_its_gp2_volume_and_no_boot_or_pull() -> None:
    model = timing.sagemaker_startup_model(14.901, precompiled=True, instance_type="inf2.xlarge")
    assert [p.name for p in model.phases] == ["artifact transfer", "load and warm-up"]
    transfer = model.phase("artifact transfer")
    # Review (issue 25, S5): plan printed 1.5 x the copy while the variant gets 60 s more; the budget
    # is now the deployed ModelDataDownloadTimeoutInSeconds.
    deployed = timing.sagemaker_timeouts(14.901, precompiled=True, instance_type="inf2.xlarge")
    assert transfer.budget_seconds == deployed.model_data_download_seconds
    # Review S5: below 40 GB the timeout is what 40 GB needs at the modelled rate (SageMaker documents
    # its unpublished default as enough up to 40 GB), not 60 s + 1.5 x this model's copy.
    forty = 40e9 / 2**30
    assert transfer.budget_seconds == timing.SAGEMAKER_DOWNLOAD_START_SECONDS + math.ceil(
        timeouts.SAFETY * forty / (128 / 1024)
    )
    assert transfer.budget_seconds > timing.SAGEMAKER_DOWNLOAD_START_SECONDS + math.ceil(
        timeouts.SAFETY * transfer.estimate_seconds
    )
    assert "SageMaker documents its (unpublished) default as enough up to 40 GB" in deployed.explanation
    assert "SageMaker's gp2 volume (128 MiB/s)" in transfer.estimate_why
    assert transfer.ratio == pytest.approx(1.0)


def test_above_40_gb_the_download_timeout_follows_the_model_and_a_measurement_wins() -> None:
    big = timing.sagemaker_timeouts(130.385, precompiled=True, instance_type="inf2.48xlarge")
    estimate = timing.sagemaker_startup_model(130.385, precompiled=True, instance_type="inf2.48xlarge")
    copy = estimate.phase("artifact transfer")
    assert big.model_data_download_seconds == timing.SAGEMAKER_DOWNLOAD_START_SECONDS + math.ceil(
        timeouts.SAFETY * copy.estimate_seconds
    )
    assert "40 GB" not in big.explanation
    measured = timing.MeasuredStartup(source="integ 2026-12-02", artifact_download_seconds=30)
    small = timing.sagemaker_timeouts(5.98, precompiled=True, instance_type="inf2.xlarge", measured=measured)
    assert small.model_data_download_seconds == 60 + 45


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
    assert startup["budget_seconds"] == 3281
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
    # The sync, and the listing that measures the artifacts before they go to RAM (review S3).
    assert [(d.service, d.route) for d in syncs] == [("s3", "s3-gateway")] * 2
    assert any("aws s3 sync" in d.caller for d in syncs) and any("aws s3 ls" in d.caller for d in syncs)


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
    # As the environment ships: a warm pool sizes the data volume (dev's to the baseline EBS rate), so
    # the table shows the volume the fleet gets, not a fleet without its pool (the first pass's table
    # kept dev's burst-sized volume after dev got its pool, and this test let it).
    model = timing.ec2_startup_model(
        weights,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
        warm_pool=serving.warm_pool,
    )
    boot, pull = model.phase("instance boot"), model.phase("image pull")
    transfer, load = model.phase("artifact transfer"), model.phase("load and warm-up")
    assert boot.floor_seconds and pull.floor_seconds and transfer.floor_seconds
    assert boot.ratio and pull.ratio and transfer.ratio
    before_transfer = weights * 1024 / BEFORE_RATE_MIBPS
    before_transfer_budget = math.ceil(timeouts.SAFETY * before_transfer)
    budget = timing.ec2_startup(
        weights,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
        warm_pool=serving.warm_pool,
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
    budgets = {
        name: timing.ec2_startup(
            env.serving.plan.weights_gib, precompiled=True, instance_type=env.serving.plan.instance_type
        ).seconds
        for name, env in ENVIRONMENTS.items()
        if env.serving is not None and env.serving.backend == "ec2"
    }
    assert (
        f"| prod: a dead instance is abandoned after | 4,677 s | {budgets['prod']:,} s | {window} s |" in DOC
    )
    assert f"| dev: a dead instance is abandoned after | 1,189 s | {budgets['dev']:,} s | {window} s |" in DOC
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


# -- Issue 25, second pass: the warm path (the warm pool), which event takes which, its cost ---------


def _warm(name: str) -> timing.StartupModel:
    serving = ENVIRONMENTS[name].serving
    assert serving is not None and serving.backend == "ec2"
    return timing.ec2_startup_model(
        serving.plan.weights_gib,
        precompiled=serving.model.precompiled,
        instance_type=serving.plan.instance_type,
        replicas=serving.plan.replicas_per_instance,
        path=floors.WARM,
    )


def test_a_warm_start_pulls_nothing_and_fetches_again_only_into_ram() -> None:
    prod, dev = _warm("prod"), _warm("dev")
    for model in (prod, dev):
        assert model.path == "warm"
        pull = model.phase("image pull")
        assert (pull.skipped, pull.basis, pull.estimate_seconds, pull.budget_seconds) == (
            True,
            "skipped",
            0.0,
            0,
        )
        assert pull.ratio is None
        boot = model.phase("instance boot")
        # The warm boot's floor is depot.dev's stopped-and-hydrated start; the estimate stays the
        # standard 40 s launch until measured: 8 x its floor, said, not hidden.
        assert (boot.estimate_seconds, boot.floor_seconds) == (40.0, floors.WARM_START_FLOOR_SECONDS)
        assert boot.ratio == pytest.approx(8.0)
    # prod's model directory is a tmpfs, which a stop empties: the transfer runs again, as cold.
    cold_prod = timing.ec2_startup_model(130.385, precompiled=True, instance_type="inf2.48xlarge")
    assert (
        prod.phase("artifact transfer").estimate_seconds
        == cold_prod.phase("artifact transfer").estimate_seconds
    )
    assert not prod.phase("artifact transfer").skipped
    # dev's artifacts are on the data volume, which a stop keeps.
    assert dev.phase("artifact transfer").skipped
    # The load is the runtime's at every start.
    assert (
        prod.phase("load and warm-up").estimate_seconds
        == cold_prod.phase("load and warm-up").estimate_seconds
    )


def test_an_unknown_start_path_is_refused() -> None:
    with pytest.raises(timing.NeuronConfigError, match="path='hot': use one of cold, warm"):
        timing.ec2_startup_model(6.0, precompiled=True, instance_type="inf2.xlarge", path="hot")


@pytest.mark.parametrize(
    ("name", "before", "cold_halved", "warm_halved"),
    [("prod", 337.5, False, True), ("dev", 325.3, False, True)],
)
def test_against_main_the_warm_path_halves_the_phases_we_control_and_the_cold_path_does_not(
    name: str, before: float, cold_halved: bool, warm_halved: bool
) -> None:
    # Before = main 7be9738 (tools.fast_start_table.BEFORE). The cold path is unchanged: the published
    # pull (240 s) has no sourced faster replacement on this AMI (docs/fast-start.md, "The image pull").
    from tools.fast_start_table import BEFORE

    pinned = BEFORE[name]
    assert pinned["instance boot"] + pinned["image pull"] + pinned["artifact transfer"] == pytest.approx(
        before
    )
    serving = ENVIRONMENTS[name].serving
    assert serving is not None
    cold = timing.ec2_startup_model(
        serving.plan.weights_gib, precompiled=True, instance_type=serving.plan.instance_type
    )
    assert (cold.controlled_estimate_seconds <= before / 2) is cold_halved
    assert (_warm(name).controlled_estimate_seconds <= before / 2) is warm_halved


def test_dev_has_a_stopped_warm_pool_so_wake_from_zero_is_warm() -> None:
    from cdk_neuron.serving import start_paths

    dev, prod = ENVIRONMENTS["dev"].serving, ENVIRONMENTS["prod"].serving
    assert dev is not None and prod is not None
    assert (dev.warm_pool, dev.min_capacity, prod.warm_pool, prod.min_capacity) == (True, 0, True, 2)
    paths = {e.event.split(" (")[0]: e for e in start_paths.event_paths(warm_pool=True, min_capacity=0)}
    assert paths["scale-out"].path == "warm" and "WP-DRAW" in paths["scale-out"].why
    assert paths["wake from zero"].path == "warm"
    assert paths["replacement of an unhealthy instance"].path == "cold"
    assert paths["instance refresh"].path == "cold" and "WP-REFRESH" in paths["instance refresh"].why
    never = {e.event: e.path for e in start_paths.event_paths(warm_pool=True, min_capacity=2)}
    assert never["wake from zero"] == "-"
    assert {e.path for e in start_paths.event_paths(warm_pool=False, min_capacity=0)} == {"cold"}


def test_the_warm_pool_standing_cost_is_its_volumes_priced_as_published() -> None:
    from cdk_neuron.serving import start_paths

    # A gp3 volume at its baseline bills storage only; throughput and IOPS above it bill per unit.
    assert start_paths.volume_usd_per_month(30, throughput_mibps=125, iops=3000) == pytest.approx(2.40)
    assert start_paths.volume_usd_per_month(70, throughput_mibps=1192, iops=4768) == pytest.approx(
        70 * 0.08 + 1768 * 0.005 + 1067 * 0.04
    )
    dev = start_paths.standing_cost(
        min_capacity=0, max_capacity=2, data_volume_gib=70, throughput_mibps=1192, iops=4768
    )
    assert dev.instances == 2 and dev.usd_per_month == pytest.approx(2 * (57.12 + 2.40))
    assert "deleted with the group" in dev.why
    none = start_paths.standing_cost(
        min_capacity=2, max_capacity=2, data_volume_gib=70, throughput_mibps=125, iops=3000
    )
    assert none.usd_per_month == 0


def test_plan_prints_the_warm_path_which_event_takes_it_and_what_the_pool_costs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--env", "dev", "--json"]) == 0
    startup = json.loads(capsys.readouterr().out)["environments"][0]["startup"]
    warm = {p["phase"]: p for p in startup["warm"]["phases"]}
    assert warm["image pull"]["basis"] == "skipped" and warm["artifact transfer"]["basis"] == "skipped"
    assert startup["warm"]["controlled_estimate_seconds"] == 40.0
    # Review S2: a warm-pool fleet's volume is provisioned at the instance's baseline EBS bandwidth
    # (149 MiB/s on inf2.xlarge), so dev's rare cold transfer takes 41 s instead of 5 s.
    assert startup["controlled_estimate_seconds"] == 361.1
    assert {e["event"].split(" (")[0]: e["path"] for e in startup["events"]}["wake from zero"] == "warm"
    assert startup["warm_pool_cost"]["usd_per_month"] == 17.92
    # Review 25 S4: the floor is the hardware's; the volume as provisioned (149 MiB/s for the pool) is
    # printed beside it, to explain dev's 8x transfer, never instead of it.
    cold = {p["phase"]: p for p in startup["phases"]}
    assert cold["artifact transfer"]["ratio"] == 8.0
    assert cold["artifact transfer"]["provisioned_floor_seconds"] == pytest.approx(41.1, abs=0.1)
    assert cold["instance boot"]["provisioned_floor_seconds"] is None
    assert main(["plan", "--env", "staging", "--json"]) == 0
    staging = json.loads(capsys.readouterr().out)["environments"][0]["startup"]
    assert (staging["warm"], staging["events"], staging["warm_pool_cost"]) == (None, [], None)
    assert main(["plan", "--env", "dev"]) == 0
    text = capsys.readouterr().out
    assert "dev: warm start (a stopped warm-pool instance started again" in text
    assert "dev: which start each event takes" in text and "warm pool, standing cost: $17.92" in text
    assert "as provisioned" in text  # beside the floor, in the start-up table


def test_the_data_volume_holds_one_copy_of_precompiled_weights_also_where_they_go_to_ram() -> None:
    # Review S8: three copies (460 GiB for prod) where the weights go to RAM; one copy stays, for the
    # artifacts that model.sh puts on the volume when they do not fit the tmpfs.
    assert timing.ec2_data_volume_gib(130.385) == 200
    assert timing.ec2_data_volume_gib(5.98) == 70


def test_the_documented_before_and_after_table_is_the_tool() -> None:
    from tools.fast_start_table import render

    assert render() in DOC


def test_the_pinned_before_column_is_what_7be9738_computes() -> None:
    import subprocess

    from tools.fast_start_table import BEFORE, BEFORE_COMMIT, before_from_git

    known = subprocess.run(
        ["git", "cat-file", "-e", f"{BEFORE_COMMIT}^{{commit}}"], cwd=Path(__file__).parent, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"{BEFORE_COMMIT} is not in this clone (shallow)")
    assert before_from_git() == BEFORE


def test_a_warm_pool_fleet_provisions_its_volume_at_the_baseline_not_the_burst() -> None:
    # Review S2: the burst is guaranteed "for 30 minutes at least once every 24 hours" (Amazon
    # EBS-optimized instances), and a stopped pool instance bills its provisioned throughput every month.
    pooled = floors.data_volume_performance("inf2.xlarge", warm_pool=True)
    assert (pooled.throughput_mibps, pooled.iops) == (149, 3000)  # 1,250 Mbps baseline
    assert "baseline EBS bandwidth (1,250 Mbps)" in pooled.why
    assert floors.data_volume_performance("inf2.xlarge").throughput_mibps == 1192
    # In RAM the volume takes only the image either way.
    assert (
        floors.data_volume_performance("inf2.48xlarge", in_ram=True, warm_pool=True).throughput_mibps == 500
    )
    # The cold transfer onto it is bound by that volume; the warm path does not transfer at all.
    cold = timing.ec2_startup_model(5.98, precompiled=True, instance_type="inf2.xlarge", warm_pool=True)
    assert cold.phase("artifact transfer").estimate_seconds == pytest.approx(5.98 * 1024 / 149)


def test_dev_idles_within_issue_13s_budget_with_its_warm_pool() -> None:
    from cdk_neuron.cli import cost
    from cdk_neuron.cli.pricing import PriceBook

    lines = {line.item: line for line in cost.idle(ENVIRONMENTS["dev"], PriceBook())}
    pool = lines["warm pool (stopped instances)"]
    assert pool.quantity == "2 stopped" and pool.usd_per_hour == pytest.approx(17.92 / 730)
    assert lines["serving data volumes"].usd_per_hour == 0  # min_capacity 0
    full = {line.item: line for line in cost.full_scale(ENVIRONMENTS["dev"], PriceBook())}
    assert full["warm pool (stopped instances)"].quantity == "0 stopped"


def test_a_sized_warm_pool_bills_the_instances_it_keeps() -> None:
    # Issue 25: dev's pool kept max - min (2) stopped instances with no way to keep fewer. With
    # warm_pool_size N the pool holds N at the minimum (MaxGroupPreparedCapacity = min + N) and fewer
    # as the fleet grows, and plan and cost price what it holds.
    from cdk_neuron.cli import cost, plan
    from cdk_neuron.serving import start_paths
    from stacks.config import deployment, load_environments

    one = start_paths.standing_cost(
        min_capacity=0, max_capacity=2, data_volume_gib=70, throughput_mibps=149, iops=3000, warm_pool_size=1
    )
    assert one.instances == 1 and one.usd_per_month == pytest.approx(17.92 / 2)
    assert "warm_pool_size 1" in one.why
    context = json.loads((Path(__file__).resolve().parent.parent / "cdk.json").read_text())["context"]
    context["environments"]["dev"]["serving"]["warm_pool_size"] = 1
    env = deployment(load_environments(context["environments"])["dev"])
    assert env.serving is not None and env.serving.warm_pool_size == 1
    pool_cost = plan._warm_pool_cost(env)
    assert pool_cost is not None and (pool_cost.instances, pool_cost.usd_per_month) == (1, 8.96)
    # At the minimum (0 in service) the pool holds 1; with 1 in service it holds none: cost prices that.
    idle = [
        line for line in cost._serving_volume_lines(env, in_service=0) if line.item.startswith("warm pool")
    ]
    busy = [
        line for line in cost._serving_volume_lines(env, in_service=1) if line.item.startswith("warm pool")
    ]
    assert [line.quantity for line in idle] == ["1 stopped"]
    assert [line.quantity for line in busy] == ["0 stopped"]
