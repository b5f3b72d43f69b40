"""The training-specific checks a cluster runs on its props before it creates anything.

Numbers, durations and identifiers go through :mod:`cdk_neuron.validation` (and
:mod:`cdk_neuron._cdk_values` for aws-cdk-lib values); what is here needs the catalog, the planner
or the VPC: the instance, the plan, the placement group, the EFA layout, the subnets and the AZ.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from cdk_neuron import _cdk_values, validation
from cdk_neuron._subnets import describe_selection, select_subnets
from cdk_neuron.catalog import (
    INSTANCES,
    EfaLayout,
    NeuronInstance,
    az_offering_note,
    efa_network_interfaces,
    get_training_instance,
    known_instances,
    offered_az_ids,
    offering_status,
    region_of_az_id,
)
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.planner import TrainingPlan, plan_training, replan_training
from cdk_neuron.training.capacity import Capacity
from cdk_neuron.validation import SECURITY_GROUP_ID

# The root volume holds the AMI (about 30 GiB) and the Docker images (tens of GB for Neuron images).
MIN_ROOT_VOLUME_GIB = 64
MAX_ROOT_VOLUME_GIB = 16_384  # gp3
# AWS Batch: 1 to 10 attempts, attempt durations of at least 60 seconds.
MAX_RETRY_ATTEMPTS = 10
MIN_JOB_TIMEOUT_SECONDS = 60


def task_security_group_id(vpc: ec2.IVpc, given: object) -> str:
    """The VPC's default security group id, which AWS Batch gives the node containers with EFA."""
    if given is not None:
        return _cdk_values.identifier(
            "vpc_default_security_group_id",
            given,
            SECURITY_GROUP_ID,
            "the VPC's default security group id, e.g. sg-0123456789abcdef0",
        )
    if isinstance(vpc, ec2.Vpc):
        return vpc.vpc_default_security_group
    raise NeuronConfigError(
        "vpc_default_security_group_id",
        None,
        "with EFA, AWS Batch gives each node's container the VPC's default security group, and this VPC "
        "is imported, so its id is unknown: pass vpc_default_security_group_id (aws ec2 "
        "describe-security-groups --filters Name=vpc-id,Values=<vpc-id> Name=group-name,Values=default)",
    )


def training_instance(instance_type: object, max_nodes: int) -> NeuronInstance:
    """A Trainium instance that can run ``max_nodes`` nodes (several need EFA)."""
    if not isinstance(instance_type, (str, NeuronInstance)):
        raise NeuronConfigError(
            "instance_type", instance_type, "give the instance type name, e.g. 'trn1.32xlarge'"
        )
    instance = get_training_instance(instance_type)
    # A launch template needs the network facts and the EC2 name: the catalog never guesses them.
    instance.require_known(
        "name", "network_cards", "max_interfaces_per_card", "efa_interfaces", "nvme_gb", purpose="a cluster"
    )
    if max_nodes > 1 and not instance.supports_efa:
        efa_types = [n for n in known_instances("training") if INSTANCES[n].supports_efa]
        raise NeuronConfigError(
            "max_nodes",
            max_nodes,
            f"{instance.name} has no EFA, so it cannot run multi-node collectives; use max_nodes=1 or "
            f"one of {one_of(efa_types)}",
        )
    return instance


def efa_layout_leaves_room_for_tasks(instance: NeuronInstance, layout: object, batch: bool) -> EfaLayout:
    """Refuse a layout that fills network card 0 when AWS Batch must attach a task interface there.

    Batch runs multi-node containers in ``awsvpc`` mode: each node's container gets its own network
    interface (MNP-CE), attached to network card 0. On trn2 (two interfaces per card), the ENA-primary
    layout puts an ENA and an EFA-only interface on card 0, leaving no slot for it.
    """
    if not isinstance(layout, EfaLayout):
        raise NeuronConfigError("efa_layout", layout, f"use EfaLayout.{one_of(m.name for m in EfaLayout)}")
    if not batch or not instance.supports_efa:
        return layout
    on_card_0 = sum(
        1 for nic in efa_network_interfaces(instance, ["sg"], layout) if nic["NetworkCardIndex"] == 0
    )
    if on_card_0 >= instance.max_interfaces_per_card:
        raise NeuronConfigError(
            "efa_layout",
            layout.name,
            f"uses all {instance.max_interfaces_per_card} interfaces of network card 0 on {instance.name}, and "
            "AWS Batch attaches each node's container interface (awsvpc) there; use EfaLayout.ALL_EFA "
            "or an AutoScalingTrainingCluster",
        )
    return layout


def default_plan(instance: NeuronInstance, nodes: int) -> TrainingPlan:
    """Tensor parallelism across one node's NeuronCores (inside NeuronLink), data parallel across nodes."""
    return plan_training(instance, nodes, tensor_parallel=instance.neuron_cores)


def plan_fits_capacity(plan: TrainingPlan, instance: NeuronInstance, capacity: Capacity) -> None:
    """Refuse a plan that needs a NeuronLink domain across instances the capacity cannot guarantee."""
    if plan.ultraserver_capacity and not capacity.guarantees_ultraserver(instance):
        raise NeuronConfigError(
            "capacity",
            capacity.describe(),
            f"the plan ({plan.summary()}) lets TP or EP groups span {plan.domain_group_instances} instances of "
            "one UltraServer, which only UltraServer capacity guarantees: use "
            "Capacity.ultraserver_capacity_block(...), or plan with ultraserver_capacity=False",
        )


def checked_plan(instance: NeuronInstance, max_nodes: int, plan: object) -> TrainingPlan:
    """``plan`` if the planner agrees with it and it fits the cluster, else NeuronConfigError."""
    if plan is None:
        return default_plan(instance, max_nodes)
    if not isinstance(plan, TrainingPlan):
        raise NeuronConfigError("plan", plan, "give a TrainingPlan from cdk_neuron.plan_training(...)")
    if plan.instance_type != instance.name:
        raise NeuronConfigError(
            "plan",
            plan.summary(),
            f"the plan is for {plan.instance_type} but the cluster runs {instance.name}; "
            f"plan with plan_training({instance.name!r}, ...)",
        )
    replanned = replan_training(plan, instance_type=instance)
    if replanned != plan:
        raise NeuronConfigError(
            "plan",
            plan.summary(),
            "is not what plan_training returns for its inputs; build it with plan_training",
        )
    if plan.nodes > max_nodes:
        raise NeuronConfigError(
            "max_nodes",
            max_nodes,
            f"the plan needs {plan.nodes} nodes; use max_nodes >= {plan.nodes} or plan fewer nodes",
        )
    return plan


def placement_group_wanted(requested: object, capacity: Capacity) -> bool:
    """Whether the cluster creates its own cluster placement group.

    None means automatic: yes, except for Capacity Blocks (AWS places their instances itself) and
    for a reservation made in an existing placement group (``capacity.placement_group_name``), whose
    instances must launch into that group: the cluster then uses it and creates none, and both
    True (a second group would miss the reservation) and False (launches outside the group miss it
    too) are refused.
    """
    if requested is not None and not isinstance(requested, bool):
        raise NeuronConfigError("placement_group", requested, "use True, False or None (automatic)")
    if capacity.placement_group_name is not None:
        if requested is not None:
            raise NeuronConfigError(
                "placement_group",
                requested,
                f"the reservation lives in cluster placement group {capacity.placement_group_name}, and EC2 "
                "uses it only for instances launched into that group, which the cluster therefore does; "
                "leave placement_group=None",
            )
        return False
    if capacity.is_capacity_block:
        if requested:
            raise NeuronConfigError(
                "placement_group",
                requested,
                "AWS places Capacity Block instances in its UltraCluster itself; forcing a cluster "
                "placement group on them causes capacity errors. Leave placement_group=None",
            )
        return False
    return True if requested is None else requested


def availability_zone_id(instance: NeuronInstance, az_id: object, stack: cdk.Stack) -> str | None:
    """Validate an AZ ID against the offerings table; returns a warning when it cannot tell."""
    if az_id is None:
        return None
    validation.az_id("availability_zone_id", az_id)
    assert isinstance(az_id, str)
    region = region_of_az_id(az_id)
    if region is not None and not cdk.Token.is_unresolved(stack.region) and stack.region != region:
        raise NeuronConfigError(
            "availability_zone_id", az_id, f"is in {region} but the stack deploys to {stack.region}"
        )
    status = offering_status(instance, az_id)
    if status == "not-offered":
        # The AZ table names only the AZ IDs that offer some type; the stack says where it deploys.
        region = (
            region if region is not None else None if cdk.Token.is_unresolved(stack.region) else stack.region
        )
        offered = offered_az_ids(instance, region) if region else ()
        if offered:
            where = f"; in {region} it is offered in {one_of(offered)}"
        elif region:
            where = f"; it is not offered anywhere in {region}"
        else:
            where = ""
        raise NeuronConfigError(
            "availability_zone_id",
            az_id,
            f"{instance.name} is not offered in {az_id}{where} (MOTO and CFN-LINT offerings)",
        )
    if status == "unknown":
        return f"whether {az_id} offers {instance.name} is unknown: {az_offering_note(instance, az_id)}"
    return None


@dataclass(frozen=True)
class SingleAzSubnets:
    """The cluster's subnets, all in one AZ (``availability_zone`` is None when the name is a token)."""

    subnets: tuple[ec2.ISubnet, ...]
    availability_zone: str | None

    def selection(self) -> ec2.SubnetSelection:
        return ec2.SubnetSelection(subnets=list(self.subnets))


def single_az_subnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection | None) -> SingleAzSubnets:
    """Resolve the subnet selection and refuse anything that is not private and in one AZ.

    EFA collectives and a cluster placement group need one AZ (AWS Batch User Guide, "Compute
    environment considerations for MNP with AWS Batch",
    https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html: a cluster placement group in a
    single Availability Zone; aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#25: Trainium
    clusters need a single subnet for collectives over EFA).
    Nodes get no public IP, so public subnets would leave them without a route to AWS APIs.
    """
    if selection is None:
        if vpc.private_subnets:
            selection = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        elif vpc.isolated_subnets:
            selection = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        else:
            raise NeuronConfigError(
                "vpc", vpc.node.path, "the VPC has no private subnets; training nodes get no public IP"
            )
    try:
        selected = select_subnets(vpc, selection)
    except RuntimeError as error:  # jsii surfaces the L2's selection errors as RuntimeError
        raise NeuronConfigError(
            "vpc_subnets", describe_selection(selection), f"cannot be selected: {error}"
        ) from None
    subnets = tuple(selected.subnets)
    if not subnets:
        raise NeuronConfigError("vpc_subnets", describe_selection(selection), "selects no subnet")
    if selected.has_public:
        raise NeuronConfigError(
            "vpc_subnets",
            describe_selection(selection),
            "selects public subnets; nodes get no public IP, so use private subnets (NAT or VPC endpoints)",
        )
    zones = [_zone_of(subnet) for subnet in subnets]
    known = sorted({z for z in zones if z is not None})
    if len(known) > 1:
        raise NeuronConfigError(
            "vpc_subnets",
            describe_selection(selection),
            f"spans {len(known)} AZs ({', '.join(known)}); EFA and the cluster placement group need one AZ: "
            f"add availability_zones=[<the AZ that offers the instance>] to the selection",
        )
    if None in zones and len(subnets) > 1:
        raise NeuronConfigError(
            "vpc_subnets",
            describe_selection(selection),
            f"selects {len(subnets)} subnets whose AZs are unknown at synthesis, so one AZ cannot be proven; "
            "select a single subnet, or pin the VPC's availability zones",
        )
    return SingleAzSubnets(subnets=subnets, availability_zone=known[0] if known else None)


def checkpoints_reachable(store: object, subnets: SingleAzSubnets) -> None:
    """A One Zone checkpoint store must be in the cluster's AZ: its only mount target is there."""
    store_zone = getattr(store, "availability_zone", None)
    if store_zone is None or subnets.availability_zone is None or cdk.Token.is_unresolved(store_zone):
        return
    if store_zone != subnets.availability_zone:
        raise NeuronConfigError(
            "checkpoints",
            f"One Zone store in {store_zone}",
            f"the cluster runs in {subnets.availability_zone}; create the store with the cluster's subnet",
        )


def _zone_of(subnet: ec2.ISubnet) -> str | None:
    try:
        zone = subnet.availability_zone
    except RuntimeError:  # imported without an AZ
        return None
    return None if cdk.Token.is_unresolved(zone) else zone


__all__ = [
    "MAX_RETRY_ATTEMPTS",
    "MAX_ROOT_VOLUME_GIB",
    "MIN_JOB_TIMEOUT_SECONDS",
    "MIN_ROOT_VOLUME_GIB",
    "SingleAzSubnets",
    "availability_zone_id",
    "checked_plan",
    "checkpoints_reachable",
    "default_plan",
    "efa_layout_leaves_room_for_tasks",
    "placement_group_wanted",
    "single_az_subnets",
    "task_security_group_id",
    "training_instance",
]
