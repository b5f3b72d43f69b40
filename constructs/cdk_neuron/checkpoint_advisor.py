"""How big a training checkpoint is and how long it takes to save to Amazon EFS.

Plain Python (no ``aws_cdk``): the CLI prints these estimates and ``CheckpointStore`` turns them
into a synth-time warning.

Size
    ``parameters x (weight bytes + optimizer-state bytes + master-weight bytes)``. The defaults follow
    NxD Training's published configurations (mixed precision, ZeRO-1): the model's 16-bit weights
    (2 bytes), Adam's two fp32 moments (8 bytes), and no fp32 master weights, because every
    ``examples/conf`` config of aws-neuron/neuronx-distributed-training @9169aa0 (2025-09-22) sets
    ``exp_manager.checkpoint_callback_params.use_master_weights_in_ckpt: False``, which is also its
    documented default (docs/general/config_overview.rst: "Whether or not to save master weights when
    checkpointing", default False;
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-training/general/config_overview.html).
    That is 10 bytes per parameter: 705.5 GB for Llama 3 70B. ``master_weights_in_checkpoint=True``
    adds the fp32 master copy (4 bytes; neuronx-distributed passes it to the ZeRO-1 optimizer as
    ``save_master_weights``, trainer.py @fbac349): 14 bytes.

    Sources disagree for other set-ups: aws-neuron-sdk ``archive/nxd-training/known_issues.rst``
    @a3247f5 computes 840 GB for Llama-2 70B from fp32 weights plus two fp32 moments (12 bytes, what
    a model kept in fp32 and downcast on the device writes: ``weight_bytes_per_parameter=4``), and
    awslabs/awsome-distributed-training ``3.test_cases/pytorch/neuronx-distributed/llama3/slurm/README.md``
    @6abac09 reports Llama-3 70B checkpoints of "roughly 850 GB" written by neuronx-distributed's own
    example. The estimate counts tensors only (no RNG state, scheduler or metadata, about 1 %), so it
    is the size of the layout given, not a bound on every layout.

Save time against EFS Elastic throughput
    A save is limited by whichever is smaller: the writers' combined per-client throughput, or the
    file system's write throughput. Figures from the Amazon EFS User Guide, retrieved 2026-11-30:

    - https://docs.aws.amazon.com/efs/latest/ug/performance.html ("Performance specifications for
      file systems using General Purpose performance mode"): Regional + Elastic, per-client
      read/write 1,500 MiBps, with footnote 4: only when mounted with the EFS client
      (amazon-efs-utils) 2.0 or later or the EFS CSI driver, "for all other file systems, the
      throughput limit is 500 MiBps". One Zone: 500 MiBps per client, 1 GiBps per-file-system write.
    - https://docs.aws.amazon.com/efs/latest/ug/limits.html ("Regional file systems - Total default
      Elastic throughput per file system"): 5 GiBps write in us-east-1, us-east-2, us-west-2,
      ap-southeast-1, ap-northeast-1, eu-central-1, eu-west-1; 1 GiBps in all other Regions.
      Both are default quotas that AWS Support can raise.

    Sources disagree: earlier stored revisions of limits.html list only five 5-GiBps Regions (without
    Singapore and Frankfurt) and read limits of 20 or 30 GiBps instead of 60; the oldest revision gives
    1 GiBps Elastic throughput in every Region. The newest revision is used here; the write limits of
    the five Regions common to all revisions never changed.

Alternative: FSx for Lustre
    PERSISTENT_2 SSD file systems deliver ``storage TiB x 125/250/500/1000 MB/s per TiB``, in
    1.2 TiB, 2.4 TiB and then 2.4 TiB steps
    (https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-throughput-capacity.html and the
    FSx ``CreateFileSystem`` ``StorageCapacity`` reference, retrieved 2026-11-30).

Cost
    Elastic throughput bills writes at $0.06 per GB in us-east-1 (factualminds.com, "Amazon EFS
    Pricing: The Throughput Mode and Storage Class Decisions That Decide the Bill", 2026-06-13; source
    SVC-EFS in :data:`cdk_neuron.catalog.SOURCES`), so every full save of a 70B checkpoint costs about
    $50.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from cdk_neuron import validation
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.planner import BYTES_PER_DTYPE

GB = 1_000_000_000  # checkpoint sizes are quoted in decimal GB, like the sources above
MB = 1_000_000  # FSx for Lustre throughput is quoted in MB/s
MIB = 1 << 20  # EFS throughput is quoted in MiB/s and GiB/s
GIB = 1 << 30

EFS_PERFORMANCE_URL = "https://docs.aws.amazon.com/efs/latest/ug/performance.html"
EFS_QUOTAS_URL = "https://docs.aws.amazon.com/efs/latest/ug/limits.html"
RETRIEVED = "2026-11-30"

# limits.html, newest revision: Regions whose Regional file systems default to 5 GiBps Elastic writes.
EFS_HIGH_THROUGHPUT_REGIONS: frozenset[str] = frozenset(
    {"us-east-1", "us-east-2", "us-west-2", "ap-southeast-1", "ap-northeast-1", "eu-central-1", "eu-west-1"}
)
EFS_REGIONAL_WRITE_MIBPS_HIGH = 5 * 1024
EFS_REGIONAL_WRITE_MIBPS_OTHER = 1 * 1024
EFS_ONE_ZONE_WRITE_MIBPS = 1 * 1024
EFS_PER_CLIENT_MIBPS_EFS_UTILS_V2 = 1_500
EFS_PER_CLIENT_MIBPS_OTHER = 500

# USD per GB written with Elastic throughput, us-east-1 (factualminds.com, 2026-06-13: the article
# cited as SVC-EFS in cdk_neuron.catalog.SOURCES).
EFS_ELASTIC_WRITE_USD_PER_GB = 0.06

# FSx for Lustre PERSISTENT_2 SSD throughput tiers (MB/s per TiB) and capacity steps (GiB): "Managing
# throughput capacity", https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-throughput-capacity.html
# (retrieved 2026-11-30).
FSX_PERSISTENT_2_MBPS_PER_TIB: tuple[int, ...] = (125, 250, 500, 1000)
FSX_MIN_CAPACITIES_GIB: tuple[int, ...] = (1200, 2400)
FSX_CAPACITY_STEP_GIB = 2400

# The fp32 master copy of each weight, when the checkpoint holds it (master_weights_in_checkpoint).
MASTER_WEIGHT_BYTES = 4.0

# Optimizer state bytes per parameter for names accepted by `optimizer_bytes_per_parameter`.
OPTIMIZER_STATE_BYTES: dict[str, float] = {
    "adam": 8,  # two fp32 moments
    "adamw": 8,
    "adam-bf16": 4,  # two bf16 moments
    "adamw-bf16": 4,
    "sgd-momentum": 4,  # one fp32 momentum buffer
    "sgd": 0,
    "none": 0,  # weights-only checkpoint (e.g. a release export)
}

LimitingFactor = Literal["per-client", "per-file-system"]


def _bytes_per_parameter(field: str, value: float | str, names: dict[str, float]) -> float:
    if isinstance(value, str):
        key = value.strip().lower()
        if key not in names:
            raise NeuronConfigError(field, value, f"use a number of bytes or one of {one_of(names)}")
        return float(names[key])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NeuronConfigError(field, value, f"use a finite number of bytes or one of {one_of(names)}")
    if value < 0:
        raise NeuronConfigError(field, value, "bytes per parameter cannot be negative")
    return float(value)


def _parameter_count(value: object) -> int:
    return validation.parameter_count("parameters", value)


def _budget(value: object) -> float:
    # A save-time budget divides sizes: 0, a bool or a string would be a ZeroDivisionError or a
    # TypeError deep in the arithmetic instead of one line naming the value.
    return validation.number("budget_seconds", value, above=0)


def _flag(field: str, value: object) -> bool:
    # A truthy string such as "false" must not quietly select One Zone limits.
    if not isinstance(value, bool):
        raise NeuronConfigError(field, value, "must be true or false")
    return value


@dataclass(frozen=True)
class EfsWriteLimits:
    """The EFS Elastic write ceilings that apply to one file system and its clients."""

    per_file_system_mibps: float
    per_client_mibps: float
    basis: str

    def __post_init__(self) -> None:
        for field in ("per_file_system_mibps", "per_client_mibps"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise NeuronConfigError(field, value, "must be a positive throughput in MiB/s")


def efs_elastic_write_limits(
    *, region: str | None = None, one_zone: bool = False, efs_client_v2: bool = True
) -> EfsWriteLimits:
    """Default EFS Elastic write limits for a file system.

    :param region: AWS Region, e.g. ``"us-east-1"``. ``None`` (unknown, e.g. an environment-agnostic
        stack) assumes the lower "all other Regions" limit, so a warning errs on the safe side.
    :param one_zone: One Zone file system (1 GiBps write, 500 MiBps per client).
    :param efs_client_v2: clients mount with amazon-efs-utils 2.0+ or the EFS CSI driver, which lifts the
        per-client limit of a Regional Elastic file system from 500 to 1,500 MiBps. Default True:
        ``CheckpointStore`` mounts with amazon-efs-utils.
    """
    if region is not None and (not isinstance(region, str) or not region):
        raise NeuronConfigError("region", region, "give an AWS Region name such as 'us-east-1', or None")
    if _flag("one_zone", one_zone):
        return EfsWriteLimits(
            per_file_system_mibps=EFS_ONE_ZONE_WRITE_MIBPS,
            per_client_mibps=EFS_PER_CLIENT_MIBPS_OTHER,
            basis=f"One Zone Elastic ({EFS_PERFORMANCE_URL}, retrieved {RETRIEVED})",
        )
    high = region in EFS_HIGH_THROUGHPUT_REGIONS
    per_fs = EFS_REGIONAL_WRITE_MIBPS_HIGH if high else EFS_REGIONAL_WRITE_MIBPS_OTHER
    per_client = (
        EFS_PER_CLIENT_MIBPS_EFS_UTILS_V2
        if _flag("efs_client_v2", efs_client_v2)
        else EFS_PER_CLIENT_MIBPS_OTHER
    )
    where = region if region else "an unknown Region (lower default assumed)"
    return EfsWriteLimits(
        per_file_system_mibps=per_fs,
        per_client_mibps=per_client,
        basis=f"Regional Elastic in {where} ({EFS_QUOTAS_URL}, {EFS_PERFORMANCE_URL}, retrieved {RETRIEVED})",
    )


@dataclass(frozen=True)
class FsxLustreSizing:
    """The smallest FSx for Lustre PERSISTENT_2 SSD file system that meets a save-time budget."""

    storage_gib: int
    mbps_per_tib: int
    required_mbps: float

    @property
    def storage_tib(self) -> float:
        # FSx labels 2,400 GiB "2.4 TiB" and computes throughput from that label: "For a 2.4-TiB file
        # system, provisioning 50 MB/s/TiB yields 120 MB/s" (FSx API PerUnitStorageThroughput).
        return self.storage_gib / 1000

    @property
    def throughput_mbps(self) -> float:
        return self.storage_tib * self.mbps_per_tib

    def __str__(self) -> str:
        return (
            f"FSx for Lustre PERSISTENT_2: {self.storage_tib:g} TiB x {self.mbps_per_tib} MB/s per TiB "
            f"= {self.throughput_mbps:,.0f} MB/s (needs {self.required_mbps:,.0f} MB/s)"
        )


def _fsx_capacity_at_least(gib: float) -> int:
    for capacity in FSX_MIN_CAPACITIES_GIB:
        if gib <= capacity:
            return capacity
    return math.ceil(gib / FSX_CAPACITY_STEP_GIB) * FSX_CAPACITY_STEP_GIB


def fsx_lustre_sizing(
    *, checkpoint_bytes: float, budget_seconds: float, kept_checkpoints: int = 2
) -> FsxLustreSizing:
    """Size FSx for Lustre to hold ``kept_checkpoints`` checkpoints and write one within the budget.

    Picks the smallest capacity that satisfies both storage and throughput, then the lowest
    throughput tier that reaches the required MB/s at that capacity.
    """
    validation.number("checkpoint_bytes", checkpoint_bytes, above=0)
    _budget(budget_seconds)
    if isinstance(kept_checkpoints, bool) or not isinstance(kept_checkpoints, int) or kept_checkpoints < 1:
        raise NeuronConfigError("kept_checkpoints", kept_checkpoints, "must be a whole number >= 1")
    required_mbps = checkpoint_bytes / budget_seconds / MB
    storage_gib = checkpoint_bytes * kept_checkpoints / GIB
    # At the top tier, capacity ("TiB" = 1,000 GiB, see FsxLustreSizing) x 1000 MB/s must reach it.
    throughput_gib = required_mbps / max(FSX_PERSISTENT_2_MBPS_PER_TIB) * 1000
    capacity = _fsx_capacity_at_least(max(storage_gib, throughput_gib))
    tier = next(t for t in FSX_PERSISTENT_2_MBPS_PER_TIB if capacity / 1000 * t >= required_mbps)
    return FsxLustreSizing(storage_gib=capacity, mbps_per_tib=tier, required_mbps=required_mbps)


@dataclass(frozen=True)
class CheckpointEstimate:
    """A checkpoint's size and how long one save takes on EFS Elastic throughput."""

    parameters: int
    weight_bytes_per_parameter: float
    optimizer_bytes_per_parameter: float
    writers: int
    limits: EfsWriteLimits
    master_weight_bytes_per_parameter: float = 0.0
    """4.0 when the checkpoint also holds the fp32 master weights (``master_weights_in_checkpoint``)."""

    @property
    def bytes_per_parameter(self) -> float:
        """Every byte one parameter takes in the checkpoint (NxD Training's default: 2 + 8 = 10)."""
        return (
            self.weight_bytes_per_parameter
            + self.optimizer_bytes_per_parameter
            + self.master_weight_bytes_per_parameter
        )

    @property
    def size_bytes(self) -> float:
        return self.parameters * self.bytes_per_parameter

    @property
    def size_gb(self) -> float:
        """Size in decimal GB (70B x 10 bytes = 700 GB)."""
        return self.size_bytes / GB

    @property
    def client_throughput_mibps(self) -> float:
        """What the writers could push together if the file system had no limit."""
        return self.writers * self.limits.per_client_mibps

    @property
    def throughput_mibps(self) -> float:
        return min(self.client_throughput_mibps, self.limits.per_file_system_mibps)

    @property
    def limiting_factor(self) -> LimitingFactor:
        if self.client_throughput_mibps < self.limits.per_file_system_mibps:
            return "per-client"
        return "per-file-system"

    @property
    def save_seconds(self) -> float:
        return self.size_bytes / (self.throughput_mibps * MIB)

    @property
    def save_minutes(self) -> float:
        return self.save_seconds / 60

    @property
    def write_cost_usd(self) -> float:
        """Elastic-throughput charge for writing one checkpoint (us-east-1 price)."""
        return self.size_gb * EFS_ELASTIC_WRITE_USD_PER_GB

    def exceeds(self, budget_seconds: float) -> bool:
        return self.save_seconds > _budget(budget_seconds)

    def writers_needed(self, budget_seconds: float) -> int | None:
        """Parallel writers needed to save within the budget; None if the file system itself is too slow."""
        required_mibps = self.size_bytes / _budget(budget_seconds) / MIB
        if required_mibps > self.limits.per_file_system_mibps:
            return None
        return max(1, math.ceil(required_mibps / self.limits.per_client_mibps))

    def fsx_lustre_suggestion(self, budget_seconds: float, *, kept_checkpoints: int = 2) -> FsxLustreSizing:
        return fsx_lustre_sizing(
            checkpoint_bytes=self.size_bytes, budget_seconds=budget_seconds, kept_checkpoints=kept_checkpoints
        )

    def summary(self) -> str:
        master = (
            f" + {self.master_weight_bytes_per_parameter:g}" if self.master_weight_bytes_per_parameter else ""
        )
        return (
            f"{self.parameters / 1e9:g}B params x ({self.weight_bytes_per_parameter:g} + "
            f"{self.optimizer_bytes_per_parameter:g}{master}) bytes = {self.size_gb:,.0f} GB per checkpoint; "
            f"{self.writers} writer(s) at {self.throughput_mibps:,.0f} MiB/s ({self.limiting_factor} limit) "
            f"save it in {self.save_minutes:.1f} min on EFS; Elastic writes cost about "
            f"${self.write_cost_usd:,.2f} per save"
        )

    def advice(self, budget_seconds: float) -> str:
        """What to change when a save takes longer than ``budget_seconds``."""
        budget_min = _budget(budget_seconds) / 60
        verdict = "exceeds" if self.exceeds(budget_seconds) else "fits"
        lines = [f"{self.summary()}; this {verdict} the {budget_min:g} min budget."]
        if self.exceeds(budget_seconds):
            needed = self.writers_needed(budget_seconds)
            if needed is not None:
                lines.append(
                    f"Save a sharded checkpoint from >= {needed} nodes in parallel "
                    f"({self.limits.per_client_mibps:,.0f} MiB/s per client)."
                )
            else:
                lines.append(
                    f"No number of writers helps: the file system's write limit is "
                    f"{self.limits.per_file_system_mibps:,.0f} MiB/s (request an EFS quota increase)."
                )
            lines.append(f"Or use {self.fsx_lustre_suggestion(budget_seconds)}.")
        lines.append(f"Limits: {self.limits.basis}.")
        return " ".join(lines)


def estimate_checkpoint(
    parameters: float,
    *,
    weight_bytes_per_parameter: float | str = 2.0,
    optimizer_bytes_per_parameter: float | str = 8.0,
    master_weights_in_checkpoint: bool = False,
    writers: int = 1,
    region: str | None = None,
    one_zone: bool = False,
    efs_client_v2: bool = True,
) -> CheckpointEstimate:
    """Estimate a checkpoint's size and EFS save time.

    :param parameters: model parameter count, e.g. ``70e9``.
    :param weight_bytes_per_parameter: bytes per saved model weight, or a dtype name (``"fp32"``,
        ``"bf16"``, ...). Default 2.0: the 16-bit weights of NxD Training's mixed precision (4.0 for a
        model kept in fp32).
    :param optimizer_bytes_per_parameter: optimizer-state bytes per parameter, or an optimizer name
        (``"adamw"``, ``"adamw-bf16"``, ``"sgd-momentum"``, ``"sgd"``, ``"none"``). Default 8.0:
        Adam's two fp32 moments.
    :param master_weights_in_checkpoint: the checkpoint also holds the fp32 master weights (NxD
        Training's ``exp_manager.checkpoint_callback_params.use_master_weights_in_ckpt``). Default
        False, as in NxD Training's default and every one of its published configurations.
    :param writers: nodes writing shards of the checkpoint at the same time. Default 1.
    :param region: Region of the file system; selects the per-file-system write limit.
        Default None (unknown): the lower limit.
    :param one_zone: One Zone file system. Default False.
    :param efs_client_v2: clients use amazon-efs-utils 2.0+ or the EFS CSI driver. Default True.

    :raises NeuronConfigError: non-positive parameters, negative sizes, an unknown dtype or optimizer,
        writers < 1, an empty or non-string region, or a flag that is not a bool.
    """
    if not isinstance(master_weights_in_checkpoint, bool):
        raise NeuronConfigError(
            "master_weights_in_checkpoint", master_weights_in_checkpoint, "must be true or false"
        )
    params = _parameter_count(parameters)
    weight = _bytes_per_parameter("weight_bytes_per_parameter", weight_bytes_per_parameter, BYTES_PER_DTYPE)
    optimizer = _bytes_per_parameter(
        "optimizer_bytes_per_parameter", optimizer_bytes_per_parameter, OPTIMIZER_STATE_BYTES
    )
    if weight == 0:
        raise NeuronConfigError("weight_bytes_per_parameter", weight_bytes_per_parameter, "must be > 0")
    if isinstance(writers, bool) or not isinstance(writers, int) or writers < 1:
        raise NeuronConfigError("writers", writers, "must be a whole number >= 1 (nodes writing shards)")
    return CheckpointEstimate(
        parameters=params,
        weight_bytes_per_parameter=weight,
        optimizer_bytes_per_parameter=optimizer,
        writers=writers,
        limits=efs_elastic_write_limits(region=region, one_zone=one_zone, efs_client_v2=efs_client_v2),
        master_weight_bytes_per_parameter=MASTER_WEIGHT_BYTES if master_weights_in_checkpoint else 0.0,
    )


__all__ = [
    "EFS_HIGH_THROUGHPUT_REGIONS",
    "MASTER_WEIGHT_BYTES",
    "OPTIMIZER_STATE_BYTES",
    "CheckpointEstimate",
    "EfsWriteLimits",
    "FsxLustreSizing",
    "LimitingFactor",
    "efs_elastic_write_limits",
    "estimate_checkpoint",
    "fsx_lustre_sizing",
]
