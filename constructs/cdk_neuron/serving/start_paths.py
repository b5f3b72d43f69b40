"""Which start path each fleet event takes, and what a stopped warm pool costs while it waits.

Plain Python (no ``aws_cdk``). An EC2 serving instance starts *cold* (a new launch: boot from the
AMI, the node's set-up, the image pull, the artifacts) or *warm* (a stopped warm-pool instance,
prepared before its stop, started again: no set-up, no pull, the artifacts fetched again only into a
RAM-backed directory). :func:`cdk_neuron.serving.timing.ec2_startup_model` models both; this module
says which events take which path, and what keeping stopped instances costs.

Sources (read 2026-12-02)
-------------------------
- WP-DRAW: "Whenever your application needs to scale out, the Auto Scaling group can draw on the warm
  pool to meet its new desired capacity" (``AWS::AutoScaling::WarmPool``, AWS CloudFormation Template
  Reference, https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-autoscaling-warmpool.html).
- WP-SIZE: without ``MaxGroupPreparedCapacity``, "Amazon EC2 Auto Scaling launches and maintains the
  difference between the group's maximum capacity and its desired capacity" (PutWarmPool, Amazon EC2
  Auto Scaling API Reference, https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_PutWarmPool.html);
  with it, "the size of the warm pool is calculated as the difference between the maximum prepared
  capacity and the desired capacity" ("Warm pools for Amazon EC2 Auto Scaling", Core concepts, Warm
  pool size, the user guide below). A fleet's ``warm_pool_size`` N sets it to ``min_capacity + N``: N
  stopped instances while the fleet runs its minimum, fewer as it grows (:func:`pool_size`).
- WP-REFRESH: "To replace the existing instances during a stack update, ... Set the update policy to
  AutoScalingInstanceRefresh" (``AWS::AutoScaling::WarmPool``, above; with AutoScalingRollingUpdate
  "Instances in the warm pool are not replaced"), and "An instance refresh first replaces ``InService``
  instances. Then it replaces instances in the warm pool" ("Warm pools for Amazon EC2 Auto Scaling",
  "Updating instances in a warm pool", Amazon EC2 Auto Scaling User Guide,
  https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-warm-pools.html, as published in
  the archived awsdocs/amazon-ec2-auto-scaling-user-guide ``doc_source/ec2-auto-scaling-warm-pools.md``
  @0b8b3aea; the live page has been restructured since, and the sentence could not be confirmed there
  on 2026-12-02): the in-service
  instances are replaced while the pool still holds instances of the old launch template, so they are
  new launches, and the pool is then refilled by new launches too (InstanceRefreshWarmPoolProgress, same
  API Reference, reports "progress on replacing instances that are in the warm pool").
- WP-REUSE: ``InstanceReusePolicy.ReuseOnScaleIn`` "Specifies whether instances in the Auto Scaling
  group can be returned to the warm pool on scale in" (InstanceReusePolicy, Amazon EC2 Auto Scaling API
  Reference, https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_InstanceReusePolicy.html);
  without it "The default is to terminate instances in the Auto Scaling group when the group scales in"
  (PutWarmPool, ``InstanceReusePolicy``, above). The fleet sets it (``ec2_backend``), so a scale-in leaves a prepared, stopped instance behind
  and the next scale-out is warm without a new launch into the pool.
- HC-REPLACE: "When Amazon EC2 Auto Scaling determines that an ``InService`` instance is unhealthy, it
  replaces it with a new instance to maintain the desired capacity of the group. The new instance
  launches using the current settings of the Auto Scaling group and its associated launch template"
  ("Health checks for instances in an Auto Scaling group", Amazon EC2 Auto Scaling User Guide,
  https://docs.aws.amazon.com/autoscaling/ec2/userguide/healthcheck.html), and for the pool's own
  instances "Amazon EC2 Auto Scaling automatically deletes the unhealthy instance and creates a new one
  to replace it" ("View health check status and the reason for health check failures", same guide,
  https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pools-health-checks-monitor-view-status.html).
- WP-LIMITS: "If your warm pool is depleted when there is a scale-out event, instances will launch
  directly into the Auto Scaling group (a cold start). You could also experience cold starts if an
  Availability Zone is out of capacity" ("Warm pools for Amazon EC2 Auto Scaling", Limitations, Amazon
  EC2 Auto Scaling User Guide, https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-warm-pools.html):
  a stopped instance holds no EC2 capacity, which for inf2 is the likely way the warm path is missed.
- EBS-PRICE: gp3 $0.08 per GB-month, $0.005 per provisioned IOPS-month above 3,000 and $0.040 per
  provisioned MB/s-month above 125, US East (N. Virginia) and US West (Oregon) ("Amazon EBS pricing",
  https://aws.amazon.com/ebs/pricing/). A stopped instance bills its volumes, not its compute.
- AMI-ROOT: the ECS-optimized AMI's root volume is 30 GiB (aws/amazon-ecs-ami ``variables.pkr.hcl``
  @014e02d0, ``block_device_size_gb`` default 30); the launch template keeps the snapshot's size.

Replacement of an unhealthy instance: the health-check page (HC-REPLACE) says a *new instance launches*,
while the warm-pool pages say the pool is drawn on "to meet its new desired capacity" (WP-DRAW), and a
replacement keeps the desired capacity. No page we could read (read 2026-12-02) says that a health-check
replacement draws on the warm pool, or that it does not. It is modelled cold, on HC-REPLACE's wording
(the safe side: every budget is a cold start's anyway). What would settle it: in a group whose warm pool
holds a ``Warmed:Stopped`` instance, ``SetInstanceHealth`` ``Unhealthy`` on the ``InService`` one and
see whether the replacement is the pool's instance (its id, and a ``warm_boot`` phases line) or a new
launch (``node_boot``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import floors, timing

GP3_USD_PER_GB_MONTH = 0.08
GP3_USD_PER_IOPS_MONTH = 0.005
GP3_USD_PER_MIBPS_MONTH = 0.040
"""EBS-PRICE. The price list says MB/s; gp3's throughput is provisioned in MiB/s, priced here per unit."""
ROOT_VOLUME_GIB = 30
"""AMI-ROOT: the ECS-optimized AMI's root volume, priced as gp3 at its baseline."""


@dataclass(frozen=True)
class EventPath:
    """One fleet event, the start path it takes, and why (with its source)."""

    event: str
    path: str
    why: str


def event_paths(*, warm_pool: bool, min_capacity: int) -> tuple[EventPath, ...]:
    """The start path of a scale-out, a wake from zero, a replacement and an instance refresh."""
    if warm_pool:
        scale_out = EventPath(
            "scale-out",
            floors.WARM,
            "drawn from the warm pool while it holds a stopped instance (WP-DRAW; the pool keeps max - "
            "desired instances, WP-SIZE, and a scale-in returns its instance to the pool, WP-REUSE); cold "
            "once it is empty or still preparing, or when the stopped instance cannot be started for lack "
            "of capacity in its Availability Zone (WP-LIMITS)",
        )
    else:
        scale_out = EventPath("scale-out", floors.COLD, "no warm pool: a new launch")
    wake = (
        EventPath("wake from zero", scale_out.path, f"a scale-out from 0: {scale_out.why}")
        if min_capacity == 0
        else EventPath("wake from zero", "-", f"never at zero (min_capacity {min_capacity})")
    )
    return (
        scale_out,
        wake,
        EventPath(
            "replacement of an unhealthy instance",
            floors.COLD,
            "modelled cold: AWS documents that a new instance launches (HC-REPLACE), and that the pool is "
            "drawn on for a new desired capacity (WP-DRAW), which a replacement keeps; no source says it "
            "draws on the pool"
            if warm_pool
            else "no warm pool: a new launch",
        ),
        EventPath(
            "instance refresh (a deploy that changes the launch template) and the first deploy",
            floors.COLD,
            "new launches: a refresh replaces the in-service instances first, while the pool holds the "
            "old launch template's, then the pool's (WP-REFRESH)"
            if warm_pool
            else "new launches",
        ),
    )


def pool_size(
    size: object, *, warm_pool: bool, min_capacity: int, max_capacity: int, field: str = "warm_pool_size"
) -> int | None:
    """A fleet's ``warm_pool_size``: None (the pool keeps max - desired, WP-SIZE) or a whole number of
    stopped instances, 1 to ``max_capacity - min_capacity``, kept while the fleet runs its minimum."""
    if size is None:
        return None
    if not warm_pool:
        raise NeuronConfigError(
            field, size, "a pool size needs a warm pool: set warm_pool, or leave the size out"
        )
    room = max_capacity - min_capacity
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= room:
        raise NeuronConfigError(
            field,
            size,
            f"must be a whole number between 1 and max_capacity - min_capacity ({room}): the pool holds what "
            "the fleet may still add" + ("; raise max_capacity first" if room < 1 else ""),
        )
    return size


def max_group_prepared_capacity(size: int | None, *, min_capacity: int) -> int | None:
    """The warm pool's ``MaxGroupPreparedCapacity`` for a ``warm_pool_size`` (None: PutWarmPool's default)."""
    return None if size is None else min_capacity + size


@dataclass(frozen=True)
class StandingCost:
    """What stopped warm-pool instances bill while they wait: their EBS volumes (EBS-PRICE)."""

    instances: int
    usd_per_instance_month: float
    why: str

    @property
    def usd_per_month(self) -> float:
        return self.instances * self.usd_per_instance_month


def volume_usd_per_month(size_gib: int, *, throughput_mibps: int, iops: int) -> float:
    """One gp3 volume for a month: storage, and throughput and IOPS above gp3's baseline."""
    return (
        size_gib * GP3_USD_PER_GB_MONTH
        + max(0, iops - floors.GP3_BASELINE_IOPS) * GP3_USD_PER_IOPS_MONTH
        + max(0, throughput_mibps - floors.GP3_BASELINE_MIBPS) * GP3_USD_PER_MIBPS_MONTH
    )


@dataclass(frozen=True)
class DataVolume:
    """An EC2 serving instance's data volume as the launch template maps it."""

    size_gib: int
    throughput_mibps: int
    iops: int

    @property
    def usd_per_month(self) -> float:
        return volume_usd_per_month(self.size_gib, throughput_mibps=self.throughput_mibps, iops=self.iops)


def data_volume(
    weights_gib: float, *, instance_type: str, replicas: int, precompiled: bool, warm_pool: bool
) -> DataVolume:
    """The data volume an EC2 fleet gives each instance (``ec2_backend`` sizes it the same way)."""
    in_ram = precompiled and floors.model_dir_in_ram(
        weights_gib, instance_type=instance_type, replicas=replicas
    )
    performance = floors.data_volume_performance(instance_type, in_ram=in_ram, warm_pool=warm_pool)
    return DataVolume(
        timing.ec2_data_volume_gib(weights_gib, precompiled=precompiled),
        performance.throughput_mibps,
        performance.iops,
    )


def standing_cost(
    *,
    min_capacity: int,
    max_capacity: int,
    data_volume_gib: int,
    throughput_mibps: int,
    iops: int,
    warm_pool_size: int | None = None,
) -> StandingCost:
    """The warm pool at the fleet's minimum: max - min stopped instances, or ``warm_pool_size`` (WP-SIZE),
    each billing its root volume and its data volume (sized and provisioned as the launch template maps it)."""
    data = volume_usd_per_month(data_volume_gib, throughput_mibps=throughput_mibps, iops=iops)
    root = volume_usd_per_month(
        ROOT_VOLUME_GIB, throughput_mibps=floors.GP3_BASELINE_MIBPS, iops=floors.GP3_BASELINE_IOPS
    )
    instances = max(0, max_capacity - min_capacity) if warm_pool_size is None else warm_pool_size
    sized = (
        f"max {max_capacity} - min {min_capacity}"
        if warm_pool_size is None
        else f"warm_pool_size {warm_pool_size}"
    )
    return StandingCost(
        instances,
        data + root,
        f"{instances} stopped instance(s) at the fleet's minimum ({sized}), each "
        f"a {data_volume_gib} GiB gp3 data volume at {throughput_mibps} MiB/s and {iops:,} IOPS (${data:,.2f}) and "
        f"a {ROOT_VOLUME_GIB} GiB root volume (${root:,.2f}) per month, at US East/West gp3 prices; "
        "deleted with the group, so a destroyed stack bills nothing",
    )


__all__ = [
    "GP3_USD_PER_GB_MONTH",
    "GP3_USD_PER_IOPS_MONTH",
    "GP3_USD_PER_MIBPS_MONTH",
    "ROOT_VOLUME_GIB",
    "DataVolume",
    "EventPath",
    "StandingCost",
    "data_volume",
    "event_paths",
    "max_group_prepared_capacity",
    "pool_size",
    "standing_cost",
    "volume_usd_per_month",
]
