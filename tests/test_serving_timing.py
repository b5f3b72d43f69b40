"""Start-up times and disk sizes derived from the model's size."""

from __future__ import annotations

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.backends import FleetBackend
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.timing import (
    ec2_data_volume_gib,
    ec2_startup,
    sagemaker_timeouts,
    sagemaker_volume_gb,
)

WEIGHTS_8B = ModelSpec(model_id="org/m", parameters=8_000_000_000).plan("inf2.8xlarge").weights_gib
WEIGHTS_70B = ModelSpec(model_id="org/m", parameters=70_000_000_000).plan("inf2.48xlarge").weights_gib


def test_health_grace_grows_with_the_model() -> None:
    small = ec2_startup(WEIGHTS_8B, precompiled=True)
    large = ec2_startup(WEIGHTS_70B, precompiled=True)
    # 300 s boot + 1.5 x (2 x 14.9 GiB at 125 MiB/s) + 120 s warm-up.
    assert small.seconds == 787
    assert large.seconds == 3625
    assert "14.9 GiB" in small.explanation


def test_a_model_that_cannot_load_within_a_lifecycle_hook_is_refused() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"more than the 7200 s an Auto Scaling lifecycle hook can wait"
    ):
        ec2_startup(300.0, precompiled=False)


def test_sagemaker_timeouts_from_s3_artifacts() -> None:
    timeouts = sagemaker_timeouts(WEIGHTS_70B, precompiled=True)
    # download: 60 + 1.5 x 1068 s; start-up: 300 + 1.5 x 1068 s (load only).
    assert timeouts.model_data_download_seconds == 1663
    assert timeouts.container_startup_health_check_seconds == 1903


def test_sagemaker_timeouts_from_the_hub_download_in_the_container() -> None:
    timeouts = sagemaker_timeouts(WEIGHTS_70B, precompiled=False)
    assert timeouts.model_data_download_seconds == 60
    assert timeouts.container_startup_health_check_seconds == 3505


def test_sagemaker_timeouts_are_at_least_60_seconds() -> None:
    timeouts = sagemaker_timeouts(0.5, precompiled=True, model_data_download_seconds=10)
    assert timeouts.model_data_download_seconds == 60
    assert timeouts.container_startup_health_check_seconds >= 60


def test_sagemaker_timeouts_above_the_cap_are_refused_naming_the_field() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"container_startup_health_check_timeout=\d+: SageMaker allows at most 3600"
    ):
        sagemaker_timeouts(150.0, precompiled=False)
    with pytest.raises(
        NeuronConfigError, match=r"model_data_download_timeout=4000: SageMaker allows at most 3600"
    ):
        sagemaker_timeouts(10.0, precompiled=True, model_data_download_seconds=4000)


def test_volume_sizes() -> None:
    assert ec2_data_volume_gib(WEIGHTS_8B) == 110  # 40 + 3 x 14.9 + 20, rounded up to 10
    assert ec2_data_volume_gib(WEIGHTS_70B) == 460
    assert sagemaker_volume_gb(WEIGHTS_70B) == 302
    with pytest.raises(
        NeuronConfigError, match=r"volume_size_gb=600: SageMaker ML storage volumes hold at most 512"
    ):
        sagemaker_volume_gb(WEIGHTS_8B, given=600)


def test_backend_options_are_validated() -> None:
    with pytest.raises(
        NeuronConfigError, match=r"startup_timeout_seconds=9000: a lifecycle hook waits at most 7200"
    ):
        FleetBackend.ec2(startup_timeout_seconds=9000)
    with pytest.raises(NeuronConfigError, match=r"data_volume_gib=0"):
        FleetBackend.ec2(data_volume_gib=0)
    with pytest.raises(NeuronConfigError, match=r"variant_name='all traffic'"):
        FleetBackend.sagemaker(variant_name="all traffic")
    assert FleetBackend.sagemaker().variant_name == "AllTraffic"
    assert FleetBackend.ec2().kind == "ec2"
