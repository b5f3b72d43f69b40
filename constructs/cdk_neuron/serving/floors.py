"""How fast a serving instance could fill itself: the floor of each start-up phase we control.

Plain Python (no ``aws_cdk``). For each phase a serving instance goes through before its model
server starts - instance boot, image pull, artifact transfer - this module gives the *floor* (the
least time the published hardware figures allow) and the *estimate* (what the node's fast path is
expected to take), each with its derivation. :mod:`cdk_neuron.serving.timing` adds the load phase
(published Neuron load times) and turns the estimates into budgets; ``cdk-neuron plan`` prints
estimate, budget, floor and their ratio per phase.

The fast path the estimates assume (``node_programs/files/serving/boot.sh``, ``model.sh``)
---------------------------------------------------------------------------------------
- **Artifacts** through the AWS CLI's CRT transfer client, its target bandwidth set to the instance's
  network (``preferred_transfer_client = crt``, ``target_bandwidth``; "AWS CLI S3 Configuration",
  https://docs.aws.amazon.com/cli/latest/topic/s3-config.html, read 2026-12-02). The CRT client
  splits objects into parallel ranged GETs over many connections ("Accelerate Amazon S3 throughput
  with the AWS Common Runtime", AWS Storage Blog,
  https://aws.amazon.com/blogs/storage/improving-amazon-s3-throughput-for-the-aws-cli-and-boto3-with-the-aws-common-runtime/,
  2023-11-26), which is what lifts one transfer above EC2's 5 Gbps single-flow limit (EC2-NETBW).
  The CLI comes from the Amazon Linux 2023 repositories (``awscli-2``, with ``python3-awscrt``), in S3,
  so the path is routed through the S3 gateway endpoint in every environment.
- **A RAM-backed model directory** (tmpfs) where the host's memory holds one copy of the weights
  besides what each replica's loader needs (:func:`model_dir_in_ram`): the transfer is then bounded
  by the network only, and the load reads from memory. A stopped instance (the warm pool) loses it,
  so ``ready.sh`` fetches it again at every start.
- **The data volume's gp3 throughput sized to the instance** (:func:`data_volume_performance`): the
  lesser of gp3's maximum (2,000 MiB/s) and the instance's EBS bandwidth, with the IOPS gp3 needs
  for it (0.25 MiB/s per IOPS; both limits as aws-cdk-lib 2.275.0 validates them, and the EC2 API
  Reference, CreateVolume, ``Throughput``: "Valid Range: 125 - 2000 MiB/s").
- **The image**: Docker pulls up to ``DOCKER_MAX_CONCURRENT_DOWNLOADS`` layers at once (its default
  is 3, dockerd ``--max-concurrent-downloads``), each layer over one connection ("Each layer is
  retrieved by one thread", "Optimize containers and AMIs", AWS Batch User Guide,
  https://docs.aws.amazon.com/batch/latest/userguide/bestpractice3.html), and applies them one after
  another, each decompressed (gzip) on one core. Without the image's layer list that cannot be
  modelled from the hardware, so the estimate is AWS's published pull time for an image of this
  size, "Standard Docker image pulls of 15-20 GB can take 4-6 minutes per instance" ("Reducing
  container cold start times using SOCI index on DLAMI and DLC", AWS Machine Learning Blog,
  https://aws.amazon.com/blogs/machine-learning/reducing-container-cold-start-times-using-soci-index-on-dlami-and-dlc/,
  2026-06): 240 s, whose budget (x 1.5) is the slowest, 360 s. The *floor* is the hardware's: the
  compressed layers over the network, the compressed layers and then the unpacked image onto the
  volume at its fastest (:func:`hardware_volume_mibps`, not what the fleet provisions: review 25 S4),
  and decompression on every core (SOCI's parallel pull unpacks layers in parallel; Docker does not).
  The floor with the volume as provisioned is given beside it (``provisioned_floor_seconds``) to
  explain a gap; the goal is judged against the hardware's. On the warm pool the image is pulled
  before the instance is stopped, so a warm start skips the pull.

Published figures (each phase cites its own)
--------------------------------------------
- Boot: "cut EC2 boot time from 40 seconds to 5 seconds" (Jacob Gillespie, "Making EC2 boot time 8x
  faster", depot.dev, https://depot.dev/blog/faster-ec2-boot-time, 2024-05-23): 40 s for a standard
  launch is the floor we take (their 5 s needs a pre-hydrated root volume on a warm instance).
- Image size: the AWS vLLM Neuron DLCs "are huge! 18+GB" (vllm-project/vllm issue #4838, comment of
  2025-11-12) - the size ``docker images`` reports, i.e. unpacked. Compressed layers are taken as
  unpacked / ``IMAGE_COMPRESSION_RATIO`` (an assumption until measured).
- zlib decompresses at 267 MB/s on one core (level 6; inikep/lzbench README @00484c45, its
  benchmark table, measured on a 2013 laptop core: a floor figure, not a server's).
- The transfer client: the best published S3 download to one 100 Gbps instance is 8,003 MB/s
  (c5n.18xlarge, "S3 to EC2 Bandwidth", dvassallo/s3-benchmark README @02f467f7, measured
  2019-04-02), 64 % of its network; the estimate takes that share of the instance's network
  (:data:`S3_CLIENT_NETWORK_SHARE`) until the integ kit measures ``phase artifact-transfer``.
- Network and EBS bandwidths: :data:`cdk_neuron.catalog.HOST_IO`. No host-to-device (load) figure
  is published, so the load phase has no floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cdk_neuron import catalog

GIB = 2**30
MIB = 2**20

BOOT_FLOOR_SECONDS = 40.0
"""A standard EC2 launch until the OS runs user data (depot.dev, 2024-05-23; see the module docstring)."""
WARM_START_FLOOR_SECONDS = 5.0
"""A stopped instance whose root volume an earlier boot hydrated, started again: depot.dev's 5 s (the
same post), which is what a warm-pool instance is. Their 5 s also resizes the instance and streams the
root volume, so it is a floor, not an estimate for an inf2 start."""
NODE_SETUP_SECONDS = 40.0
"""Assumed until measured: the node programs' own set-up before the pull (the AWS CLI from the Amazon
Linux repositories, the bundle, formatting the data volume, restarting Docker)."""

IMAGE_UNPACKED_GIB = 18e9 / GIB
"""The serving image as ``docker images`` reports it (vllm-project/vllm #4838, 2025-11-12): 16.8 GiB."""
IMAGE_COMPRESSION_RATIO = 2.5
"""Assumed: gzip'd layers are 1/2.5 of their unpacked size (Python wheels and shared libraries)."""
ZLIB_DECOMPRESS_BYTES_PER_SECOND = 267e6
"""One core, zlib level 6 (inikep/lzbench README @00484c45)."""
SINGLE_FLOW_GBPS = 5.0
"""EC2's single-flow limit outside a cluster placement group (catalog source EC2-NETBW)."""
DOCKER_MAX_CONCURRENT_DOWNLOADS = 16
"""``max-concurrent-downloads`` boot.sh writes into Docker's daemon.json (Docker's default: 3)."""
PUBLISHED_PULL_SECONDS = 240.0
PUBLISHED_PULL_IMAGE_GB = (15.0, 20.0)
"""AWS: "Standard Docker image pulls of 15-20 GB can take 4-6 minutes per instance" (AWS Machine
Learning Blog, 2026-06; see the module docstring). The estimate for an image of that size, until
measured; its budget (x SAFETY) is the range's slowest, 360 s."""
S3_CLIENT_NETWORK_SHARE = 8003e6 / (100e9 / 8)
"""The share of a 100 Gbps network the best published single-instance S3 download reached: 8,003 MB/s
on c5n.18xlarge (dvassallo/s3-benchmark README @02f467f7, 2019-04-02): 0.64."""

GP3_BASELINE_MIBPS = 125
GP3_MAX_MIBPS = 2000
GP3_BASELINE_IOPS = 3000
GP3_MIBPS_PER_IOPS = 0.25
DEFAULT_DATA_VOLUME_MIBPS = 500
"""Where the catalog publishes no EBS bandwidth for the instance type: the previous fixed setting.
Also the setting where the weights are in RAM: the volume then only takes the image, whose published
pull (16.8 GiB in 240 s, 72 MiB/s) needs far less."""
GP2_SMALL_MIBPS = 128
GP2_LARGE_MIBPS = 250
GP2_LARGE_FROM_GIB = 170
"""SageMaker's ML storage volume is gp2 ("Currently only Amazon EBS gp2 storage volumes are
supported", ProductionVariant ``VolumeSizeInGB``): 128 MiB/s up to 170 GiB, up to 250 MiB/s above
("General Purpose SSD volumes", Amazon EBS User Guide,
https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html, read 2026-12-02)."""
RAM_RESERVE_GIB = 4.0
"""Memory a RAM-backed model directory leaves to the OS, Docker, nginx and the agents."""


def over_floor(seconds: float, floor_seconds: float | None) -> float | None:
    """``seconds`` over the phase's floor (1.0 = at the hardware's limit), None without a floor."""
    if floor_seconds is None or floor_seconds <= 0:
        return None
    return seconds / floor_seconds


COLD = "cold"
"""A start from a new launch: the instance boots from the AMI, pulls the image and fetches the model."""
WARM = "warm"
"""A start out of the warm pool: a stopped instance, prepared before its stop (image pulled, and the
artifacts synced onto the data volume where they go there), is started again (``ready.sh``)."""
START_PATHS = (COLD, WARM)


@dataclass(frozen=True)
class PhaseFloor:
    """One phase: the estimate (unmargined), the floor, and why, or None where nothing is published.

    ``skipped``: the phase does not run on this start path (a warm start's image pull), estimate and
    floor 0."""

    phase: str
    estimate_seconds: float
    floor_seconds: float | None
    estimate_why: str
    floor_why: str
    skipped: bool = False
    provisioned_floor_seconds: float | None = None
    """The floor with the volume as this fleet provisions it, where that differs from the hardware's
    (:func:`hardware_volume_mibps`): it explains a gap, the goal is judged against ``floor_seconds``."""

    @property
    def ratio(self) -> float | None:
        """Estimate over floor (1.0 = at the hardware's limit), None without a floor."""
        return over_floor(self.estimate_seconds, self.floor_seconds)


@dataclass(frozen=True)
class DataVolumePerformance:
    """gp3 throughput (MiB/s) and IOPS for an EC2 serving instance's data volume, and why."""

    throughput_mibps: int
    iops: int
    why: str


def data_volume_performance(
    instance_type: str, *, in_ram: bool = False, warm_pool: bool = False
) -> DataVolumePerformance:
    """The lesser of gp3's maximum and the instance's EBS bandwidth, with the IOPS gp3 needs for it;
    with ``in_ram`` (the weights go to a RAM-backed directory, :func:`model_dir_in_ram`) the volume
    only takes the image, and gets :data:`DEFAULT_DATA_VOLUME_MIBPS`: gp3 bills throughput above
    125 MiB/s and IOPS above 3,000 per provisioned month, also while a warm-pool instance is stopped
    ("Amazon EBS pricing", https://aws.amazon.com/ebs/pricing/)."""
    host = catalog.host_io(instance_type)
    if host is None:
        throughput = DEFAULT_DATA_VOLUME_MIBPS
        why = f"{throughput} MiB/s: the catalog publishes no EBS bandwidth for {instance_type}"
    elif in_ram:
        throughput = min(DEFAULT_DATA_VOLUME_MIBPS, int(host.startup_ebs_mib_per_second))
        why = f"{throughput} MiB/s: the weights are in RAM, the volume takes only the image"
    elif warm_pool:
        # Review S2 (issue 25, second pass): with a warm pool the transfer onto the volume happens while
        # the pool prepares an instance, off the warm path, but the provisioned throughput bills every
        # month on every stopped instance; and the instance's burst EBS bandwidth is only guaranteed "for
        # 30 minutes at least once every 24 hours" ("Amazon EBS-optimized instances", Amazon EC2 User
        # Guide). So a warm-pool fleet's volume is provisioned at the instance's baseline EBS bandwidth.
        baseline = int(host.ebs_baseline_mbps * 1e6 / 8 / MIB)
        throughput = max(GP3_BASELINE_MIBPS, min(GP3_MAX_MIBPS, baseline))
        why = (
            f"{throughput} MiB/s = {instance_type}'s baseline EBS bandwidth ({host.ebs_baseline_mbps:,} Mbps): "
            "a warm pool's stopped volumes bill their provisioned throughput, and the cold transfer runs "
            "while the pool prepares"
        )
    else:
        ebs = int(host.startup_ebs_mib_per_second)
        throughput = max(GP3_BASELINE_MIBPS, min(GP3_MAX_MIBPS, ebs))
        why = (
            f"{throughput} MiB/s = min(gp3 maximum {GP3_MAX_MIBPS}, {instance_type} EBS bandwidth "
            f"{host.ebs_burst_mbps:,} Mbps = {ebs:,} MiB/s)"
        )
    iops = max(GP3_BASELINE_IOPS, math.ceil(throughput / GP3_MIBPS_PER_IOPS))
    return DataVolumePerformance(
        throughput, iops, f"{why}, {iops:,} IOPS (gp3: {GP3_MIBPS_PER_IOPS} MiB/s per IOPS)"
    )


def hardware_volume_mibps(instance_type: str) -> float | None:
    """The fastest a gp3 data volume could take writes on this instance: the lesser of gp3's maximum
    and the instance's EBS bandwidth at start-up (burst). The hardware floors use it, whatever the
    fleet provisions (review 25 S4: a floor from the provisioned rate would let a slower, cheaper
    volume "improve" estimate / floor). None where the catalog publishes no EBS bandwidth."""
    host = catalog.host_io(instance_type)
    return None if host is None else min(float(GP3_MAX_MIBPS), host.startup_ebs_mib_per_second)


def model_dir_in_ram(weights_gib: float, *, instance_type: str, replicas: int = 1) -> bool:
    """Whether the host holds the weights in a tmpfs and still has, for every replica, twice the
    weights for its loader (the small-host rule of :mod:`cdk_neuron.serving.timing`) plus a reserve.

    Only for instance types whose host I/O is published (the fast path is modelled there only).
    """
    if catalog.host_io(instance_type) is None:
        return False
    memory = catalog.get_instance(instance_type).memory_gib
    return memory >= weights_gib * (1 + 2 * replicas) + RAM_RESERVE_GIB


def tmpfs_size_gib(weights_gib: float) -> int:
    """The RAM-backed model directory's size: the weights, 10 % and 1 GiB for the config and tokenizer."""
    return math.ceil(weights_gib * 1.1 + 1)


def boot() -> PhaseFloor:
    estimate = BOOT_FLOOR_SECONDS + NODE_SETUP_SECONDS
    return PhaseFloor(
        "instance boot",
        estimate,
        BOOT_FLOOR_SECONDS,
        f"{BOOT_FLOOR_SECONDS:.0f} s EC2 launch + {NODE_SETUP_SECONDS:.0f} s node set-up (assumed)",
        f"{BOOT_FLOOR_SECONDS:.0f} s: a standard EC2 launch (depot.dev, 2024-05-23)",
    )


def warm_boot() -> PhaseFloor:
    """A warm start: EC2 starts the stopped instance and ``ready.sh`` runs; the node's set-up (the AWS
    CLI, the data volume, Docker) was done before the stop and is not repeated."""
    return PhaseFloor(
        "instance boot",
        BOOT_FLOOR_SECONDS,
        WARM_START_FLOOR_SECONDS,
        f"{BOOT_FLOOR_SECONDS:.0f} s: a standard EC2 launch (depot.dev, 2024-05-23), assumed for starting a "
        "stopped inf2 until warm_boot is measured; no node set-up (done before the stop)",
        f"{WARM_START_FLOOR_SECONDS:.0f} s: a stopped instance with a hydrated root volume (depot.dev, 2024-05-23)",
    )


def skipped(phase: str, why: str) -> PhaseFloor:
    """A phase that does not run on this start path."""
    return PhaseFloor(phase, 0.0, 0.0, f"skipped: {why}", "nothing to do", skipped=True)


def warm_image_pull() -> PhaseFloor:
    """A warm start pulls nothing: Docker's data root is on the data volume, which a stop keeps."""
    return skipped(
        "image pull",
        "pulled before the warm-pool stop; Docker's data root is on the data volume, which a stop keeps",
    )


def image_pull(
    instance_type: str,
    *,
    in_ram: bool = False,
    warm_pool: bool = False,
    image_unpacked_gib: float | None = None,
) -> PhaseFloor:
    """Docker's pull of the serving image onto the data volume (EC2): the published pull time for an
    image of its size as the estimate, the hardware's limits as the floor (module docstring).

    ``image_unpacked_gib``: the image's size as a node measured it (``docker image inspect``, the
    integ kit's ``image_unpacked_bytes``); default :data:`IMAGE_UNPACKED_GIB`, the published 18 GB."""
    host = catalog.host_io(instance_type)
    unpacked = IMAGE_UNPACKED_GIB if image_unpacked_gib is None else image_unpacked_gib
    compressed = unpacked / IMAGE_COMPRESSION_RATIO
    low, high = PUBLISHED_PULL_IMAGE_GB
    estimate_why = (
        f"{PUBLISHED_PULL_SECONDS:.0f} s: AWS's published pull of a {low:g}-{high:g} GB image "
        f"(the image is {unpacked * GIB / 1e9:.0f} GB; AWS ML Blog, SOCI on DLAMI and DLC, 2026-06), until measured"
    )
    if host is None:
        return PhaseFloor(
            "image pull",
            PUBLISHED_PULL_SECONDS,
            None,
            estimate_why,
            f"no published network or EBS bandwidth for {instance_type}",
        )
    network = host.startup_network_gib_per_second
    hardware = (hardware_volume_mibps(instance_type) or GP3_BASELINE_MIBPS) * MIB / GIB
    provisioned = (
        data_volume_performance(instance_type, in_ram=in_ram, warm_pool=warm_pool).throughput_mibps
        * MIB
        / GIB
    )
    cores = catalog.get_instance(instance_type).vcpus
    # Docker writes each layer's blob to a temporary file under its data root before it unpacks it
    # (moby distribution/pull_v2.go, createDownloadFile: os.CreateTemp; daemon.prepareTempDir puts
    # TMPDIR at <data-root>/tmp): the volume takes the compressed layers and the unpacked image.
    written = compressed + unpacked
    download, write = compressed / network, written / hardware
    extract = unpacked * GIB / (ZLIB_DECOMPRESS_BYTES_PER_SECOND * cores)
    floor = max(download, write, extract)
    as_provisioned = max(download, written / provisioned, extract)
    return PhaseFloor(
        "image pull",
        PUBLISHED_PULL_SECONDS,
        floor,
        estimate_why,
        f"max(download {download:.0f} s at {network:.2f} GiB/s, write {written:.1f} GiB (layers, then unpacked) "
        f"{write:.0f} s at {hardware:.2f} GiB/s (gp3 maximum or the instance's EBS bandwidth, the lesser), "
        f"gzip on {cores} cores {extract:.0f} s at {ZLIB_DECOMPRESS_BYTES_PER_SECOND / 1e6:.0f} MB/s each); "
        f"as provisioned ({provisioned * GIB / MIB:.0f} MiB/s): {as_provisioned:.0f} s",
        provisioned_floor_seconds=as_provisioned,
    )


@dataclass(frozen=True)
class TransferTarget:
    """Where the S3 artifacts go and who copies them: the node's CRT sync into RAM or onto its gp3
    data volume (:func:`node_target`), or SageMaker's download onto its gp2 volume
    (:func:`sagemaker_target`). ``mibps`` None: memory, bounded by the network only."""

    destination: str
    mibps: int | None
    client: str
    in_ram: bool = False
    hardware_mibps: float | None = None
    """The fastest the destination could take writes (:func:`hardware_volume_mibps`) where the fleet's
    choice sets ``mibps`` below it; None: ``mibps`` is the hardware's (RAM, SageMaker's gp2)."""


def node_target(
    weights_gib: float, *, instance_type: str, replicas: int = 1, warm_pool: bool = False
) -> TransferTarget:
    """The EC2 node's sync: into RAM where :func:`model_dir_in_ram`, else onto the sized gp3 volume."""
    host = catalog.host_io(instance_type)
    client = f"CRT client at the instance's {host.network_burst_gbps:g} Gbps" if host else "CRT client"
    if model_dir_in_ram(weights_gib, instance_type=instance_type, replicas=replicas):
        return TransferTarget("a RAM-backed model directory", None, client, in_ram=True)
    mibps = data_volume_performance(instance_type, warm_pool=warm_pool).throughput_mibps
    return TransferTarget(
        f"the gp3 data volume ({mibps} MiB/s)",
        mibps,
        client,
        hardware_mibps=hardware_volume_mibps(instance_type),
    )


def sagemaker_target(weights_gib: float, *, volume_gib: float | None = None) -> TransferTarget:
    """SageMaker's model download onto its gp2 ML storage volume (two copies of the weights + 20 GiB
    unless ``volume_gib`` is given, as :func:`cdk_neuron.serving.timing.sagemaker_volume_gb` sizes it)."""
    size = volume_gib if volume_gib is not None else 2 * weights_gib + 20
    mibps = GP2_LARGE_MIBPS if size > GP2_LARGE_FROM_GIB else GP2_SMALL_MIBPS
    return TransferTarget(f"SageMaker's gp2 volume ({mibps} MiB/s)", mibps, "SageMaker's download")


def artifact_transfer(weights_gib: float, *, instance_type: str, target: TransferTarget) -> PhaseFloor:
    """The S3 artifacts onto the instance, at the lesser of the network and the target's write rate."""
    host = catalog.host_io(instance_type)
    disk = target.mibps * MIB / GIB if target.mibps is not None else None
    if host is None:
        rate = disk if disk is not None else GP3_BASELINE_MIBPS * MIB / GIB
        return PhaseFloor(
            "artifact transfer",
            weights_gib / rate,
            None,
            f"{weights_gib:.1f} GiB onto {target.destination}",
            f"no published network bandwidth for {instance_type}",
        )
    network = host.startup_network_gib_per_second
    provisioned_rate = min(network, disk) if disk is not None else network
    # The hardware floor: the volume at the fastest the instance and gp3 allow (review 25 S4).
    fastest = (
        max(disk, target.hardware_mibps * MIB / GIB)
        if disk is not None and target.hardware_mibps is not None
        else disk
    )
    floor_rate = min(network, fastest) if fastest is not None else network
    client = network * S3_CLIENT_NETWORK_SHARE
    rate = min(client, disk) if disk is not None else client
    bound = "the network" if fastest is None or network <= fastest else "the volume at its fastest"
    by = (
        f"{S3_CLIENT_NETWORK_SHARE:.0%} of the network, the best published S3 download to one instance"
        if disk is None or client <= disk
        else "the volume's write rate"
    )
    # Provisioned in whole MiB/s: below the hardware's by more than that rounding.
    slower = provisioned_rate < floor_rate * 0.99
    return PhaseFloor(
        "artifact transfer",
        weights_gib / rate,
        weights_gib / floor_rate,
        f"{weights_gib:.1f} GiB at {rate:.2f} GiB/s onto {target.destination}, {target.client} ({by})",
        f"{weights_gib:.1f} GiB / {floor_rate:.2f} GiB/s ({bound})"
        + (
            f"; as provisioned ({provisioned_rate:.2f} GiB/s): {weights_gib / provisioned_rate:.0f} s"
            if slower
            else ""
        ),
        provisioned_floor_seconds=weights_gib / provisioned_rate if slower else None,
    )


def warm_artifact_transfer(weights_gib: float, *, instance_type: str, target: TransferTarget) -> PhaseFloor:
    """A warm start fetches the artifacts again only into a RAM-backed directory (a stop empties it,
    ``ready.sh``); on the data volume they are still there."""
    if target.in_ram:
        return artifact_transfer(weights_gib, instance_type=instance_type, target=target)
    return skipped(
        "artifact transfer", "synced onto the data volume before the warm-pool stop, which keeps it"
    )


def load_floor(weights_gib: float, *, instance_type: str, in_ram: bool) -> tuple[float | None, str]:
    """No floor: loading weights into HBM is bounded by the host-to-device path, for which no figure is
    published (aws-neuron-sdk ``inferentia2.rst`` gives HBM's 820 GB/s and on-chip DMA's 1 TB/s, both
    inside the device), and the published load times are the runtime's own work (allocation, graph
    loading, warm-up). ``in_ram`` and ``instance_type`` stay for a floor once one is sourced."""
    del in_ram
    return None, f"no published host-to-device bandwidth for {instance_type}: the load is the runtime's"


__all__ = [
    "BOOT_FLOOR_SECONDS",
    "COLD",
    "DOCKER_MAX_CONCURRENT_DOWNLOADS",
    "PUBLISHED_PULL_SECONDS",
    "S3_CLIENT_NETWORK_SHARE",
    "START_PATHS",
    "WARM",
    "WARM_START_FLOOR_SECONDS",
    "DataVolumePerformance",
    "PhaseFloor",
    "TransferTarget",
    "artifact_transfer",
    "boot",
    "data_volume_performance",
    "hardware_volume_mibps",
    "image_pull",
    "load_floor",
    "model_dir_in_ram",
    "node_target",
    "over_floor",
    "sagemaker_target",
    "skipped",
    "tmpfs_size_gib",
    "warm_artifact_transfer",
    "warm_boot",
    "warm_image_pull",
]
