"""Where a training cluster's instances come from: on-demand, a capacity reservation or a Capacity Block.

A reservation made inside an existing cluster placement group carries that group's name
(``Capacity.reservation(id, placement_group_name=...)``): EC2 uses such a reservation only for
instances launched into its group, and the reservation can never leave it, so the name belongs to the
reservation rather than to the cluster (CR-CPG in :data:`cdk_neuron.catalog.SOURCES`).

Plain Python (no ``aws_cdk``): a :class:`Capacity` renders the launch-template properties EC2 reads
when the compute environment or Auto Scaling group launches an instance.

Spot is deliberately not offered: AWS Batch multi-node parallel jobs do not run on Spot (AWS Batch
User Guide, "Compute environment considerations for MNP with AWS Batch",
https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html), and a reclaimed node kills every rank
of a collective job anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from cdk_neuron.catalog import NeuronInstance, capacity_block_types
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.validation import RESERVATION_ID, RESOURCE_GROUP_ARN, matching

CapacityKind = Literal[
    "on-demand",
    "reservation",
    "reservation-group",
    "capacity-block",
    "ultraserver-capacity-block",
    "training-plan",
]

# A SageMaker training plan's ARN (CreateTrainingPlan, Amazon SageMaker API Reference,
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingPlan.html).
TRAINING_PLAN_ARN = re.compile(
    r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:[0-9]{12}:training-plan/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}"
)


@dataclass(frozen=True)
class Capacity:
    """How the cluster's instances are purchased. Build one with the class methods.

    - :meth:`on_demand`: plain On-Demand capacity (the default).
    - :meth:`reservation`: a targeted On-Demand Capacity Reservation, by id. If the reservation is
      full, EC2 refuses the launch instead of falling back to unreserved capacity.
    - :meth:`reservation_group`: a resource group of capacity reservations, by ARN. EC2 launches
      into any reservation in the group with room; once the group runs out, launches may fall back
      to regular On-Demand capacity (the EC2 guide's reason for targeting groups rather than ids).
    - :meth:`capacity_block`: an EC2 Capacity Block for ML, instance or UltraServer kind (an
      UltraServer Capacity Block of trn2u.48xlarge is launched into by its ``cr-`` reservation just
      like an instance block; see ``catalog.PURCHASE_OPTIONS``). AWS places Capacity Block instances in
      its UltraCluster itself, so the cluster creates no placement group; the block must match the
      instance type and the subnet's AZ, and instances are terminated when the block ends (scale to
      zero beforehand; see the EC2 Capacity Blocks guide). The EC2 Auto Scaling guide documents this
      launch-template form for groups (ASG-CB), so ``AutoScalingTrainingCluster`` takes it. AWS Batch
      ignores a launch template's instance market options (BATCH-LT), which is what makes a launch go
      into the block, so ``BatchTrainingCluster`` refuses every Capacity Block
      (:func:`check_batch_capacity`).
    - :meth:`ultraserver_capacity_block`: an UltraServer Capacity Block (every instance of it is a
      server of one UltraServer, CB-HOW), by its ``cr-`` reservation id or by a resource group of
      UltraServer Capacity Blocks (cb-group.html: a launch matches any block of the group with room
      and fails, never falls back, when none has). It is what makes a NeuronLink domain that spans
      instances a guarantee: plans with ``ultraserver_capacity=True`` need it
      (:meth:`guarantees_ultraserver`). No placement group: AWS places the block's instances.
    - :meth:`training_plan`: a SageMaker training plan bought for HyperPod (``TrainingPlanArn`` of
      ``AWS::SageMaker::Cluster``); only :class:`~cdk_neuron.training.HyperPodTrainingCluster` takes
      it. EC2 launch templates cannot target a training plan, and HyperPod has no reservation field.
    """

    kind: CapacityKind = "on-demand"
    reservation_id: str | None = None
    resource_group_arn: str | None = None
    placement_group_name: str | None = None
    training_plan_arn: str | None = None

    def __post_init__(self) -> None:
        if self.kind == "training-plan" or self.training_plan_arn is not None:
            if (
                self.kind != "training-plan"
                or self.reservation_id is not None
                or self.resource_group_arn is not None
                or self.placement_group_name is not None
            ):
                raise NeuronConfigError(
                    "capacity", self, "build capacities with the Capacity class methods, not the constructor"
                )
            if not isinstance(self.training_plan_arn, str) or not TRAINING_PLAN_ARN.fullmatch(
                self.training_plan_arn
            ):
                raise NeuronConfigError(
                    "training_plan_arn",
                    self.training_plan_arn,
                    "use a SageMaker training plan ARN, e.g. "
                    "arn:aws:sagemaker:us-east-1:111111111111:training-plan/trn1-week "
                    "(aws sagemaker list-training-plans)",
                )
            return
        if self.kind == "ultraserver-capacity-block":
            if (self.reservation_id is None) == (self.resource_group_arn is None):
                raise NeuronConfigError(
                    "capacity",
                    self,
                    "give an UltraServer Capacity Block's reservation id or a resource group ARN, not both",
                )
            if self.reservation_id is not None:
                _reservation_id("reservation_id", self.reservation_id)
            else:
                _resource_group_arn(self.resource_group_arn)
            if self.placement_group_name is not None:
                raise NeuronConfigError(
                    "placement_group_name",
                    self.placement_group_name,
                    "AWS places UltraServer Capacity Block instances itself; no placement group",
                )
            return
        if self.kind in ("reservation", "capacity-block"):
            _reservation_id("reservation_id", self.reservation_id)
        elif self.kind == "reservation-group":
            _resource_group_arn(self.resource_group_arn)
        elif self.kind != "on-demand":
            raise NeuronConfigError(
                "capacity",
                self.kind,
                "use Capacity.on_demand(), .reservation(id), .reservation_group(arn), .capacity_block(id) "
                "or .ultraserver_capacity_block(id or resource_group_arn=...)",
            )
        carries_id = self.kind in ("reservation", "capacity-block")
        if (self.reservation_id is not None) != carries_id or (self.resource_group_arn is not None) != (
            self.kind == "reservation-group"
        ):
            raise NeuronConfigError(
                "capacity", self, "build capacities with the Capacity class methods, not the constructor"
            )
        if self.placement_group_name is not None:
            if self.kind not in ("reservation", "reservation-group"):
                raise NeuronConfigError(
                    "placement_group_name",
                    self.placement_group_name,
                    "only an On-Demand Capacity Reservation (Capacity.reservation or .reservation_group) "
                    "lives in a placement group; AWS places Capacity Block instances itself",
                )
            _placement_group_name(self.placement_group_name)

    @classmethod
    def on_demand(cls) -> Capacity:
        return cls()

    @classmethod
    def reservation(cls, reservation_id: str, *, placement_group_name: str | None = None) -> Capacity:
        """A targeted On-Demand Capacity Reservation, e.g. ``"cr-0123456789abcdef0"``.

        ``placement_group_name``: the existing cluster placement group the reservation was created in.
        A reservation made in a cluster placement group is used only by instances launched into that
        group (CR-CPG), so the cluster then launches into it instead of creating its own. Default None
        (the reservation is in no placement group; the cluster creates one).
        """
        return cls(
            kind="reservation", reservation_id=reservation_id, placement_group_name=placement_group_name
        )

    @classmethod
    def reservation_group(
        cls, resource_group_arn: str, *, placement_group_name: str | None = None
    ) -> Capacity:
        """A resource group of On-Demand Capacity Reservations.

        ``placement_group_name``: the existing cluster placement group the group's reservations were
        created in; launches name it so they use those reservations and stay in the group (targeting
        the group alone falls back to instances outside any placement group, CR-CPG). Default None.
        """
        return cls(
            kind="reservation-group",
            resource_group_arn=resource_group_arn,
            placement_group_name=placement_group_name,
        )

    @classmethod
    def capacity_block(cls, reservation_id: str) -> Capacity:
        """An EC2 Capacity Block for ML, by its reservation id (``cr-...``)."""
        return cls(kind="capacity-block", reservation_id=reservation_id)

    @classmethod
    def ultraserver_capacity_block(
        cls, reservation_id: str | None = None, *, resource_group_arn: str | None = None
    ) -> Capacity:
        """An UltraServer Capacity Block by its reservation id (``cr-...``), or a resource group of them.

        ``resource_group_arn``: a group of UltraServer Capacity Blocks (``AWS::EC2::CapacityReservationPool``
        with reservation-type capacity-block; cb-group.html), so a cluster can use several
        UltraServers; give it instead of ``reservation_id``. Default None.
        """
        return cls(
            kind="ultraserver-capacity-block",
            reservation_id=reservation_id,
            resource_group_arn=resource_group_arn,
        )

    @classmethod
    def training_plan(cls, training_plan_arn: str) -> Capacity:
        """A SageMaker training plan bought for a HyperPod cluster, by ARN.

        Training plans are bought out of band (``SearchTrainingPlanOfferings`` then
        ``CreateTrainingPlan`` with target resource ``hyperpod-cluster``; CloudFormation has no
        resource for them) and are valid only for :class:`~cdk_neuron.training.HyperPodTrainingCluster`.
        """
        return cls(kind="training-plan", training_plan_arn=training_plan_arn)

    @property
    def is_training_plan(self) -> bool:
        return self.kind == "training-plan"

    @property
    def is_capacity_block(self) -> bool:
        return self.kind in ("capacity-block", "ultraserver-capacity-block")

    def guarantees_ultraserver(self, instance: NeuronInstance) -> bool:
        """Whether every instance comes from whole UltraServers of ``instance``'s type.

        True for :meth:`ultraserver_capacity_block`, and for :meth:`capacity_block` on a type EC2
        sells as UltraServer Capacity Blocks (trn2u.48xlarge); plans that let TP or EP groups span
        instances (``plan_training(..., ultraserver_capacity=True)``) need it.
        """
        if not instance.is_ultraserver:
            return False
        if self.kind == "ultraserver-capacity-block":
            return True
        return (
            self.kind == "capacity-block" and instance.purchase_options.capacity_block_kind == "ultraserver"
        )

    def describe(self) -> str:
        if self.kind == "on-demand":
            return "on-demand"
        if self.kind == "training-plan":
            return f"training-plan {self.training_plan_arn}"
        where = f" in placement group {self.placement_group_name}" if self.placement_group_name else ""
        return f"{self.kind} {self.reservation_id or self.resource_group_arn}{where}"

    def check_instance(self, instance: NeuronInstance) -> None:
        """Refuse a purchase option the catalog says EC2 does not sell for ``instance``.

        A Capacity Block is accepted for types sold as *instance* Capacity Blocks (trn1.32xlarge,
        trn2.48xlarge) and as *UltraServer* Capacity Blocks (trn2u.48xlarge, whose block is a whole
        Trn2 UltraServer); both launch into the block's ``cr-`` reservation the same way
        (``catalog.PURCHASE_OPTIONS``). Options the catalog marks "unknown" are accepted:
        ``cdk-neuron preflight`` checks the live account.
        """
        options = instance.purchase_options
        if self.kind == "training-plan":
            return  # SageMaker sells it; HyperPodTrainingCluster checks the type against HyperPod's
        if self.kind == "ultraserver-capacity-block":
            if not instance.is_ultraserver or options.ultraserver_capacity_block == "no":
                raise NeuronConfigError(
                    "capacity",
                    self.describe(),
                    f"{instance.name} is not sold as UltraServer Capacity Blocks (CB-HOW, TRN3-ARCH); "
                    "UltraServers are made of trn2u.48xlarge and the Trn3 servers",
                )
            return
        if self.is_capacity_block and options.capacity_block_kind is None:
            if instance.is_ultraserver:
                raise NeuronConfigError(
                    "capacity",
                    self.describe(),
                    f"{instance.name} is sold in UltraServers: use Capacity.ultraserver_capacity_block(...)",
                )
            instance_blocks = capacity_block_types("instance")
            ultraserver_blocks = capacity_block_types("ultraserver")
            raise NeuronConfigError(
                "capacity",
                self.describe(),
                f"EC2 sells no Capacity Blocks for {instance.name} (CB-DOC, CB-HOW); instance Capacity "
                f"Blocks exist for {one_of(instance_blocks)} and UltraServer Capacity Blocks for "
                f"{one_of(ultraserver_blocks)}. Use Capacity.reservation() or Capacity.on_demand()",
            )
        if self.kind in ("reservation", "reservation-group") and options.reservation == "no":
            raise NeuronConfigError(
                "capacity",
                self.describe(),
                f"EC2 sells no On-Demand Capacity Reservations for {instance.name} (ODCR)",
            )

    def purchase_option(self, instance: NeuronInstance) -> str:
        """What is bought, in EC2's words, e.g. "UltraServer Capacity Block" on trn2u.48xlarge."""
        if self.kind == "ultraserver-capacity-block":
            return "UltraServer Capacity Block" + (" group" if self.resource_group_arn else "")
        if self.is_capacity_block:
            kind = instance.purchase_options.capacity_block_kind
            return "UltraServer Capacity Block" if kind == "ultraserver" else "Capacity Block"
        if self.kind == "training-plan":
            return "SageMaker training plan"
        return {
            "on-demand": "On-Demand",
            "reservation": "On-Demand Capacity Reservation",
            "reservation-group": "On-Demand Capacity Reservation group",
        }[self.kind]

    def launch_template_data(self) -> dict[str, Any]:
        """``LaunchTemplateData`` properties for this capacity (empty for on-demand).

        The ``ec2.LaunchTemplate`` L2 has no prop for either property, so the cluster applies these
        as overrides on the L1 (and unit-tests them).
        """
        if self.kind == "on-demand":
            return {}
        if self.kind == "training-plan":
            raise NeuronConfigError(
                "capacity",
                self.describe(),
                "a SageMaker training plan serves only a HyperPod cluster (HyperPodTrainingCluster); "
                "EC2 launch templates cannot target it. For EC2 use Capacity.capacity_block(...)",
            )
        target: dict[str, str | None]
        if self.resource_group_arn is not None:
            target = {"CapacityReservationResourceGroupArn": self.resource_group_arn}
        else:
            target = {"CapacityReservationId": self.reservation_id}
        data: dict[str, Any] = {"CapacityReservationSpecification": {"CapacityReservationTarget": target}}
        if self.is_capacity_block:
            data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        return data


# EC2 placement group names: up to 255 ASCII characters (CreatePlacementGroup GroupName).
_MAX_PLACEMENT_GROUP_NAME = 255


def _placement_group_name(value: object) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > _MAX_PLACEMENT_GROUP_NAME
        or not value.isascii()
    ):
        raise NeuronConfigError(
            "placement_group_name",
            value,
            "give the name of the existing cluster placement group the reservation was created in "
            "(1-255 ASCII characters), e.g. 'trn-odcr-cpg'",
        )
    return value


def _resource_group_arn(value: object) -> str:
    if not isinstance(value, str) or not RESOURCE_GROUP_ARN.fullmatch(value):
        raise NeuronConfigError(
            "resource_group_arn",
            value,
            "use a resource group ARN, e.g. arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs",
        )
    return value


def _reservation_id(field: str, value: object) -> str:
    return matching(
        field,
        value,
        RESERVATION_ID,
        fix="use a capacity reservation id: 'cr-' and 17 hex digits, e.g. cr-0123456789abcdef0",
    )


__all__ = ["TRAINING_PLAN_ARN", "Capacity", "CapacityKind"]


BATCH_CAPACITY_BLOCK_FIX = (
    "AWS Batch ignores a launch template's instance market options (its 'Use Amazon EC2 launch templates "
    "with AWS Batch' page, BATCH-LT), and EC2 launches into a Capacity Block only with market type "
    "capacity-block, so a Batch compute environment cannot use the block; no AWS Batch page documents "
    "Capacity Blocks. Use AutoScalingTrainingCluster (engine auto-scaling-group), whose Auto Scaling group "
    "launches into the block as the EC2 Auto Scaling guide documents (ASG-CB), or keep AWS Batch with "
    "Capacity.on_demand() or an On-Demand Capacity Reservation (Capacity.reservation(...))"
)
"""Why :class:`BatchTrainingCluster` refuses a Capacity Block, and what works instead."""


def check_batch_capacity(capacity: Capacity) -> None:
    """Refuse a Capacity Block on an AWS Batch cluster (:data:`BATCH_CAPACITY_BLOCK_FIX` says why).

    Capacity reservations stay allowed: Batch's list of ignored launch-template fields does not name
    ``CapacityReservationSpecification`` (BATCH-LT).
    """
    if capacity.is_capacity_block:
        raise NeuronConfigError("capacity", capacity.describe(), BATCH_CAPACITY_BLOCK_FIX)
