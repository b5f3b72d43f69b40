"""Start-up times and disk sizes: the model rebuilt on published Neuron load times (timing.py docstring).

Expected seconds are worked out by hand from the published model, not from the module's constants:
8B = 14.901 GiB, 70B = 130.385 GiB (bf16); container = 1.5 x (480 + 10.5 x GiB), x 2 on a small host;
EC2 (floors.py): boot 1.5 x (40 + 40) = 120 s; image pull of 6.7 GiB compressed / 16.8 GiB unpacked:
inf2.xlarge 1.5 x (6.7055 / 1.7462 GiB/s + 18e9 / 267e6) = 1.5 x 71.26 = 107 s, inf2.48xlarge
1.5 x (6.7055 / 9.313 + 67.416) = 1.5 x 68.14 = 103 s; S3 artifacts at min(network burst, gp3 sized to
the instance's EBS bandwidth) or, in RAM, the network: inf2.xlarge 1.1641 GiB/s (1,192 MiB/s),
inf2.48xlarge 11.6415 GiB/s (100 Gbps). SageMaker's gp2 volume: 128 MiB/s up to 170 GiB, else 250.
"""

from __future__ import annotations

import pytest

from cdk_neuron import timeouts
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.timing import (
    PUBLISHED_LOAD_TIMES,
    MeasuredStartup,
    container_ready,
    ec2_data_volume_gib,
    ec2_startup,
    is_small_host,
    load_estimate_seconds,
    sagemaker_timeouts,
    sagemaker_volume_gb,
)

WEIGHTS_8B = ModelSpec(model_id="org/m", parameters=8_000_000_000).plan("inf2.8xlarge").weights_gib
WEIGHTS_70B = ModelSpec(model_id="org/m", parameters=70_000_000_000).plan("inf2.48xlarge").weights_gib
REPORT = MeasuredStartup(
    source="staging timing report 2026-11-30",
    boot_seconds=150,
    artifact_download_seconds=90,
    container_ready_seconds=700,
)


def test_weights_used_below() -> None:
    assert (WEIGHTS_8B, WEIGHTS_70B) == (14.901, 130.385)


def test_8b_on_inf2_xlarge_gets_what_published_deployments_allow() -> None:
    """Staging's case: 484 s before; Hugging Face's SageMaker snippet allows 1,800 s for Llama-3-8B on
    ml.inf2.xlarge, LMI 1,600 s for Llama-2-7B on inf2.xlarge."""
    timeouts = sagemaker_timeouts(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge")
    # 1.5 x 2 (16 GiB < 2 x 14.9 GiB) x (480 + 156.46) = 1909.4
    assert timeouts.container_startup_health_check_seconds == 1910
    assert timeouts.container_startup_health_check_seconds >= 1800
    # The copy alone would give 60 + 1.5 x 119.21 s (14.9 GiB at gp2's 128 MiB/s) = 239 s, stricter than
    # SageMaker's default, which its docs say holds 40 GB (review S5): 60 + 1.5 x 37.25 GiB / 0.125 GiB/s.
    assert timeouts.model_data_download_seconds == 508
    assert "small host: 16 GiB memory for 14.9 GiB of weights" in timeouts.explanation


def test_a_host_with_room_loads_at_the_measured_rate() -> None:
    # inf2.8xlarge has 128 GiB: 1.5 x 636.46 = 954.7
    assert container_ready(WEIGHTS_8B, instance_type="inf2.8xlarge").seconds == 955
    assert not is_small_host(WEIGHTS_8B, instance_type="inf2.8xlarge")
    # Replicas on one host all hold weights: 5 x 14.9 x 2 = 149 GiB > 128 GiB.
    assert is_small_host(WEIGHTS_8B, instance_type="inf2.8xlarge", replicas=5)


def test_ec2_adds_boot_and_the_s3_sync() -> None:
    small = ec2_startup(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge")
    # The image pull is AWS's published 240 s for a 15-20 GB image (budget 360; review B1). 14.9 GiB at
    # 64 % of the 15 Gbps burst (1.1176 GiB/s, the best published client share; review S1), below the
    # gp3 volume's 1.1641 GiB/s: 1.5 x 13.33 s = 20.
    assert small.seconds == 120 + 360 + 20 + 1910
    assert ec2_startup(WEIGHTS_8B, precompiled=False, instance_type="inf2.xlarge").seconds == 120 + 360 + 1910
    large = ec2_startup(WEIGHTS_70B, precompiled=True, instance_type="inf2.48xlarge")
    # RAM-backed (768 GiB >= 3 x 130.4 + 4): 1.5 x 130.385 / (0.64 x 11.6415) = 26.3; 1.5 x (480 + 1369.04) = 2773.6
    assert large.seconds == 120 + 360 + 27 + 2774
    assert "14.9 GiB" in small.explanation and small.explanation.endswith("= 2410 s")
    assert "RAM-backed model directory" in large.explanation


def test_70b_stays_under_sagemakers_cap_as_published_deployments_need() -> None:
    for precompiled in (True, False):
        timeouts = sagemaker_timeouts(WEIGHTS_70B, precompiled=precompiled, instance_type="inf2.48xlarge")
        assert timeouts.container_startup_health_check_seconds == 2774
    assert (
        sagemaker_timeouts(
            WEIGHTS_70B, precompiled=True, instance_type="inf2.48xlarge"
        ).model_data_download_seconds
        == 60 + 802  # 280.8 GiB gp2 volume at 250 MiB/s: 1.5 x 534.06 s
    )
    assert (
        sagemaker_timeouts(
            WEIGHTS_70B, precompiled=False, instance_type="inf2.48xlarge"
        ).model_data_download_seconds
        == 60
    )


@pytest.mark.parametrize("point", PUBLISHED_LOAD_TIMES, ids=lambda p: p.label)
def test_the_model_covers_every_published_data_point(point: object) -> None:
    from cdk_neuron.serving.timing import LoadTime

    assert isinstance(point, LoadTime)
    if point.kind == "measured":
        # The unmargined line is an upper envelope of what loads were seen to take.
        assert load_estimate_seconds(point.weights_gib) >= point.seconds
    elif point.instance_type == "inf2.xlarge":
        # Small-host budgets that work in practice are reached.
        assert container_ready(point.weights_gib, instance_type=point.instance_type).seconds >= point.seconds
    else:
        # 70B deploys on SageMaker within 3,600 s, so the derived budget must fit under it.
        assert container_ready(point.weights_gib, instance_type=point.instance_type).seconds <= point.seconds


def test_measured_timings_replace_the_estimates() -> None:
    ec2 = ec2_startup(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge", measured=REPORT)
    assert ec2.seconds == 225 + 360 + 135 + 1050  # each measurement x 1.5; the image pull estimated
    assert ec2.explanation.count("staging timing report 2026-11-30") == 3
    sagemaker = sagemaker_timeouts(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge", measured=REPORT)
    assert (sagemaker.model_data_download_seconds, sagemaker.container_startup_health_check_seconds) == (
        195,
        1050,
    )
    # A partial report keeps the estimates for the other phases.
    partial = MeasuredStartup(source="load test", container_ready_seconds=1400)
    assert ec2_startup(
        WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge", measured=partial
    ).seconds == (120 + 360 + 20 + 2100)


def test_explicit_timeouts_win_over_measurements() -> None:
    timeouts = sagemaker_timeouts(
        WEIGHTS_8B,
        precompiled=True,
        instance_type="inf2.xlarge",
        container_startup_health_check_seconds=3000,
        measured=REPORT,
    )
    assert timeouts.container_startup_health_check_seconds == 3000
    assert timeouts.model_data_download_seconds == 195


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"source": "", "boot_seconds": 1}, r"measured_startup\.source='': say where the timings come from"),
        ({"source": "report"}, r"measured_startup=.*give at least one measured phase"),
        (
            {"source": "report", "container_ready_seconds": 0},
            r"container_ready_seconds=0: must be whole seconds",
        ),
        ({"source": "report", "boot_seconds": 12.5}, r"boot_seconds=12\.5: must be whole seconds"),
    ],
)
def test_measurements_are_validated(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(NeuronConfigError, match=match):
        MeasuredStartup(**kwargs)  # type: ignore[arg-type]


def test_a_start_up_beyond_the_old_hook_limit_is_held_by_heartbeats() -> None:
    # 400 GiB on inf2.48xlarge (768 GiB: a small host, no RAM-backed directory): 120 + 360 + 1.5 x 400 /
    # 1.953 GiB/s (308) + 1.5 x 2 x (480 + 4200) (14,040) = 14,828 s. Refused while the hook's heartbeat
    # was the whole start-up (at most 7,200 s); the node now extends the action while it makes progress.
    startup = ec2_startup(400.0, precompiled=True, instance_type="inf2.48xlarge")
    assert startup.seconds == 14828 > timeouts.LIFECYCLE_HEARTBEAT_MAX
    assert startup.boot_seconds == 120


def test_a_model_that_cannot_start_within_what_heartbeats_can_hold_is_refused() -> None:
    # 1,400 GiB: 120 + 360 + 1,076 + 1.5 x 2 x (480 + 14,700) = 47,096 s, past the 43,200 s limit.
    with pytest.raises(
        NeuronConfigError,
        match=r"parameters=1400\.0: an instance would need ~47096 s .* more than the 43200 s an Auto Scaling "
        r"lifecycle hook can be extended; quantize the model, or time a deployment",
    ):
        ec2_startup(1400.0, precompiled=True, instance_type="inf2.48xlarge")


def test_sagemaker_timeouts_above_the_cap_are_refused_naming_the_field() -> None:
    # 1.5 x (480 + 10.5 x 200) = 3870 s
    with pytest.raises(
        NeuronConfigError,
        match=r"container_startup_health_check_timeout_seconds=3870: SageMaker allows at most 3600 s .*MeasuredStartup",
    ):
        sagemaker_timeouts(200.0, precompiled=False, instance_type="inf2.48xlarge")
    with pytest.raises(
        NeuronConfigError, match=r"model_data_download_timeout_seconds=4000: SageMaker allows at most 3600"
    ):
        sagemaker_timeouts(
            10.0, precompiled=True, instance_type="inf2.xlarge", model_data_download_seconds=4000
        )
    with pytest.raises(
        NeuronConfigError, match=r"container_startup_health_check_timeout_seconds=3750: SageMaker allows"
    ):
        sagemaker_timeouts(
            1.0,
            precompiled=True,
            instance_type="inf2.xlarge",
            measured=MeasuredStartup("r", container_ready_seconds=2500),
        )


def test_sagemaker_timeouts_are_at_least_60_seconds() -> None:
    timeouts = sagemaker_timeouts(
        0.5, precompiled=True, instance_type="inf2.xlarge", model_data_download_seconds=10
    )
    assert timeouts.model_data_download_seconds == 60
    assert timeouts.container_startup_health_check_seconds == 728  # 1.5 x (480 + 5.25) = 727.9, host has room


def test_volume_sizes() -> None:
    # Review (issue 25, S8): sized for what the volume holds, not three copies everywhere. Precompiled
    # S3 artifacts: one copy (synced and read in place; into RAM, the volume keeps room for the copy
    # that model.sh puts there when the artifacts do not fit the tmpfs). From the Hub: two.
    assert ec2_data_volume_gib(WEIGHTS_8B) == 80  # 40 + 14.9 + 20, rounded up to 10
    assert ec2_data_volume_gib(WEIGHTS_70B) == 200  # was 460 (three copies)
    assert ec2_data_volume_gib(WEIGHTS_8B, precompiled=False) == 90  # 40 + 2 x 14.9 + 20
    assert ec2_data_volume_gib(WEIGHTS_70B, precompiled=False) == 330
    assert sagemaker_volume_gb(WEIGHTS_70B) == 302
    with pytest.raises(
        NeuronConfigError, match=r"volume_size_gb=600: SageMaker ML storage volumes hold at most 512"
    ):
        sagemaker_volume_gb(WEIGHTS_8B, given=600)


def test_a_given_sagemaker_volume_sets_the_download_rate() -> None:
    # 200 GB = 186.3 GiB > 170 GiB: gp2 at 250 MiB/s; what 40 GB needs there (the floor below 40 GB,
    # review S5): 60 + 1.5 x 37.25 GiB / 0.2441 GiB/s (152.6 s) = 288.9
    given = sagemaker_timeouts(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge", volume_gb=200)
    assert given.model_data_download_seconds == 289
    assert "gp2 volume (250 MiB/s)" in given.explanation
    derived = sagemaker_timeouts(WEIGHTS_8B, precompiled=True, instance_type="inf2.xlarge")
    assert derived.model_data_download_seconds == 508  # 49.8 GiB derived: 128 MiB/s
