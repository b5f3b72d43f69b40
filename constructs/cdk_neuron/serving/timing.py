"""Start-up time and disk size of a serving instance, derived from the model's size.

Plain Python (no ``aws_cdk``). Every number here is a stated, conservative estimate: the derived
times bound how long an instance may take to become ready before it is given up on, so a
generous bound costs only detection latency, while a tight one kills healthy instances that are
still loading a big model.

Model for one instance (EC2) or one SageMaker container::

    ready = fixed start-up + SAFETY x (fetch weights + read weights into HBM) + graph warm-up

- Weights are read at ``DISK_MIB_PER_SECOND`` = 125 MiB/s: the gp3 baseline throughput, and just below
  inf2.xlarge's EBS baseline of 1,250 Mbps (149 MiB/s, serving.md section 1), the slowest link on
  the smallest Inf2. They are written once (download) and read once (load).
- ``SAFETY`` = 1.5 absorbs S3/Hub variance and first-touch EBS latency.
- Fixed EC2 start-up (``EC2_BOOT_SECONDS`` = 300 s) covers boot, container runtime start and the
  image pull (the vLLM Neuron DLC is about 2.9 GiB compressed; ai-on-eks measured ~30 s to pull it).
- Warm-up (``WARMUP_SECONDS`` = 120 s) covers loading compiled graphs (NEFFs) onto the NeuronCores.

Cross-checks (serving.md sections 3 and 11): Llama-3 8B comes to ~13 min on EC2 (DOE-INF2 reports
"up to 10 minutes"); Llama 70B from the Hub comes to ~59 min of SageMaker start-up health check,
inside the 3,600 s the optimum-neuron 70B tutorial uses ("around 30-40 minutes").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cdk_neuron.errors import NeuronConfigError

DISK_MIB_PER_SECOND = 125.0
SAFETY = 1.5
EC2_BOOT_SECONDS = 300
SAGEMAKER_CONTAINER_START_SECONDS = 180
WARMUP_SECONDS = 120

# SageMaker ProductionVariant limits (SM-PV; cfn-lint schema for AWS::SageMaker::EndpointConfig).
SAGEMAKER_TIMEOUT_MIN_SECONDS = 60
SAGEMAKER_TIMEOUT_MAX_SECONDS = 3600
SAGEMAKER_VOLUME_MAX_GB = 512
# An Auto Scaling lifecycle hook waits at most 7,200 s (heartbeat timeout limit).
LIFECYCLE_HEARTBEAT_MAX_SECONDS = 7200

# Disk for the EC2 data volume: container images (the DLCs unpack to well over their compressed
# size; 40 GiB holds two image versions during a rolling update), three copies' worth of weights
# (the S3 artifact or Hub checkpoint, the compiled/exported model the engine writes, and room to
# re-download during a restart) and 20 GiB of compile cache and logs.
IMAGES_GIB = 40
WEIGHT_COPIES = 3
SCRATCH_GIB = 20

_GIB_TO_GB = 2**30 / 1e9


def _transfer_seconds(gib: float) -> float:
    return gib * 1024 / DISK_MIB_PER_SECOND


@dataclass(frozen=True)
class Ec2Startup:
    """How long an EC2 serving instance may take to become ready, and why."""

    seconds: int
    explanation: str


def ec2_startup(weights_gib: float, *, precompiled: bool) -> Ec2Startup:
    """Time from launch until every replica on an instance answers its health check.

    Used for the lifecycle-hook heartbeat, the CloudFormation signal timeout and the ELB health-check
    grace period. Both sources (S3 artifacts and the Hub) are fetched at the disk rate.
    """
    fetch = _transfer_seconds(weights_gib)
    load = _transfer_seconds(weights_gib)
    seconds = math.ceil(EC2_BOOT_SECONDS + SAFETY * (fetch + load) + WARMUP_SECONDS)
    source = "S3 artifacts" if precompiled else "the Hugging Face Hub"
    explanation = (
        f"{EC2_BOOT_SECONDS} s boot and image pull + {SAFETY} x ({fetch:.0f} s to fetch {weights_gib:.1f} GiB "
        f"from {source} + {load:.0f} s to load it at {DISK_MIB_PER_SECOND:.0f} MiB/s) + {WARMUP_SECONDS} s "
        f"warm-up = {seconds} s"
    )
    if seconds > LIFECYCLE_HEARTBEAT_MAX_SECONDS:
        raise NeuronConfigError(
            "parameters",
            round(weights_gib, 1),
            f"an instance would need ~{seconds} s to load {weights_gib:.1f} GiB of weights, more than the "
            f"{LIFECYCLE_HEARTBEAT_MAX_SECONDS} s an Auto Scaling lifecycle hook can wait; quantize the model",
        )
    return Ec2Startup(seconds=seconds, explanation=explanation)


@dataclass(frozen=True)
class SageMakerTimeouts:
    """``ModelDataDownloadTimeoutInSeconds`` and ``ContainerStartupHealthCheckTimeoutInSeconds``."""

    model_data_download_seconds: int
    container_startup_health_check_seconds: int
    explanation: str


def _check_sagemaker_limit(field: str, seconds: int, why: str) -> int:
    if seconds > SAGEMAKER_TIMEOUT_MAX_SECONDS:
        raise NeuronConfigError(
            field,
            seconds,
            f"SageMaker allows at most {SAGEMAKER_TIMEOUT_MAX_SECONDS} s ({why}); serve precompiled artifacts "
            "from S3 (artifact_uri), quantize the model, or use FleetBackend.ec2() whose start-up is not capped",
        )
    return max(SAGEMAKER_TIMEOUT_MIN_SECONDS, seconds)


def sagemaker_timeouts(
    weights_gib: float,
    *,
    precompiled: bool,
    model_data_download_seconds: int | None = None,
    container_startup_health_check_seconds: int | None = None,
) -> SageMakerTimeouts:
    """Derive both SageMaker timeouts from the weights, clamped to >= 60 s; refuse > 3,600 s.

    With ``precompiled`` (S3 artifacts) SageMaker downloads the model before starting the container,
    so the download has its own timeout; from the Hub, the container downloads during its start-up
    health check. Explicit values are validated against the same limits.
    """
    transfer = _transfer_seconds(weights_gib)
    if model_data_download_seconds is None:
        download = math.ceil(60 + SAFETY * transfer) if precompiled else SAGEMAKER_TIMEOUT_MIN_SECONDS
        download_why = f"derived: 60 s + {SAFETY} x {transfer:.0f} s to download {weights_gib:.1f} GiB"
    else:
        download, download_why = model_data_download_seconds, "given"
    startup_transfer = transfer if precompiled else 2 * transfer
    if container_startup_health_check_seconds is None:
        startup = math.ceil(SAGEMAKER_CONTAINER_START_SECONDS + WARMUP_SECONDS + SAFETY * startup_transfer)
        startup_why = (
            f"derived: {SAGEMAKER_CONTAINER_START_SECONDS + WARMUP_SECONDS} s start and warm-up + {SAFETY} x "
            f"{startup_transfer:.0f} s to {'load' if precompiled else 'download and load'} {weights_gib:.1f} GiB"
        )
    else:
        startup, startup_why = container_startup_health_check_seconds, "given"
    for name, value in (
        ("model_data_download_timeout", download),
        ("container_startup_health_check_timeout", startup),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise NeuronConfigError(name, value, "must be whole seconds >= 1")
    download = _check_sagemaker_limit("model_data_download_timeout", download, download_why)
    startup = _check_sagemaker_limit("container_startup_health_check_timeout", startup, startup_why)
    return SageMakerTimeouts(
        model_data_download_seconds=download,
        container_startup_health_check_seconds=startup,
        explanation=f"download {download} s ({download_why}); start-up {startup} s ({startup_why})",
    )


def ec2_data_volume_gib(weights_gib: float) -> int:
    """Size of the EC2 data volume (images, weights, compiled artifacts, caches), rounded up to 10 GiB."""
    raw = IMAGES_GIB + WEIGHT_COPIES * weights_gib + SCRATCH_GIB
    return int(math.ceil(raw / 10) * 10)


def sagemaker_volume_gb(weights_gib: float, *, given: int | None = None) -> int:
    """``VolumeSizeInGB`` for a SageMaker variant: two copies of the weights plus 20 GiB, in GB (max 512)."""
    size = given if given is not None else math.ceil((2 * weights_gib + SCRATCH_GIB) * _GIB_TO_GB)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise NeuronConfigError("volume_size_gb", size, "must be a whole number of GB >= 1")
    if size > SAGEMAKER_VOLUME_MAX_GB:
        raise NeuronConfigError(
            "volume_size_gb",
            size,
            f"SageMaker ML storage volumes hold at most {SAGEMAKER_VOLUME_MAX_GB} GB; quantize the model "
            "or use FleetBackend.ec2()",
        )
    return size


__all__ = [
    "DISK_MIB_PER_SECOND",
    "SAFETY",
    "Ec2Startup",
    "SageMakerTimeouts",
    "ec2_data_volume_gib",
    "ec2_startup",
    "sagemaker_timeouts",
    "sagemaker_volume_gb",
]
