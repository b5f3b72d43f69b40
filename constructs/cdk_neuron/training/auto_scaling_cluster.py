"""AutoScalingTrainingCluster: a self-managed Trainium node group for Ray, Slurm or your own launcher."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron import _manifest, validation
from cdk_neuron._scope import reported_by
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.node_programs import render_settings
from cdk_neuron.training import acknowledgments, boot_failures, node_setup
from cdk_neuron.training.asg_engine import build_auto_scaling_group
from cdk_neuron.training.cluster import ITrainingCluster, NodeOptions, TrainingClusterBase
from cdk_neuron.training.launcher import node_environment

if TYPE_CHECKING:
    from typing_extensions import Unpack


class AutoScalingTrainingCluster(TrainingClusterBase):
    """A Trainium (Trn1, Trn1n, Trn2, Trn3) node group (EC2 Auto Scaling, 0 to ``max_nodes``) for teams that run Ray,
    Slurm or plain torchrun themselves.

    The nodes are :class:`TrainingClusterBase`'s (whole instances with EFA on every network card, in
    one AZ and a cluster placement group). At boot each node mounts the checkpoint store, disables
    the ECS agent, raises the open-files limit, and exports the same environment a Batch job gets
    (the plan's degrees, EFA settings, ``NEURON_COMPILE_CACHE_URL``, ``CHECKPOINT_DIR``; not the
    launcher's per-job variables) from ``/etc/profile.d/cdk-neuron-training.sh``.

    :param vpc: the VPC of the nodes.
    :param instance_type: a Trainium type from the catalog, e.g. ``"trn1.32xlarge"``, or a catalog
        instance completed with ``NeuronInstance.with_facts(...)`` (the Trn3 servers).
    :param max_nodes: the group's maximum size. Must be at least the plan's nodes.
    :param options: the node props both clusters take (:class:`~cdk_neuron.training.NodeOptions`):
        ``plan``, ``vpc_subnets``, ``availability_zone_id``, ``checkpoints``, ``compile_cache``,
        ``capacity``, ``placement_group``, ``machine_image``, ``efa_layout``, ``root_volume_size``,
        ``kms_key``, ``removal_policy``, ``environment``, ``efa_installer``, ``node_metrics``.
    :param desired_capacity: nodes to run. Default: None: the group starts at 0 (its minimum) and
        ``DesiredCapacity`` stays out of the template, so a size set later by your scheduler or
        operators is not reset by the next deployment. Give a number to pin the size on every
        deployment.
    :param notification_topic: an SNS topic that receives the group's launch, termination and failure
        notifications. Default: None (none are sent; the group's activity history still records them).

    :ivar auto_scaling_group: the node group.
    """

    _ENGINE: ClassVar[str] = "auto-scaling-group"

    auto_scaling_group: autoscaling.AutoScalingGroup

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str | NeuronInstance,
        max_nodes: int,
        desired_capacity: int | None = None,
        notification_topic: sns.ITopic | None = None,
        **options: Unpack[NodeOptions],
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            props = self._check_node_props(
                vpc=vpc,
                instance_type=instance_type,
                max_nodes=max_nodes,
                options=options,
            )
            if desired_capacity is not None:
                validation.whole_number(
                    "desired_capacity", desired_capacity, minimum=0, maximum=props.max_nodes
                )

            self._build_nodes(props)
            self.auto_scaling_group = build_auto_scaling_group(
                self,
                vpc=vpc,
                subnets=props.subnets.selection(),
                launch_template=self.launch_template,
                placement_group=self.placement_group,
                max_nodes=self.max_nodes,
                desired_capacity=desired_capacity,
                notification_topic=notification_topic,
            )
            if self.efa_installer_mirror is not None:
                self.auto_scaling_group.node.add_dependency(self.efa_installer_mirror.ready)
            # Nodes that keep failing their boot set the group's capacity to 0 (boot_failures).
            boot_failures.stop_group(self, self.boot_failure_alarm, self.auto_scaling_group)
            if self.checkpoints is not None:
                self.checkpoints.grant_read_write(self.role, peer=self)
            if self.compile_cache is not None:
                self.compile_cache.grant_read_write(self.role)
                acknowledgments.compile_cache_prefix(self.role, self.compile_cache)
            _manifest.record_training(
                self,
                engine="auto-scaling-group",
                instance_type=self.instance.name,
                max_nodes=self.max_nodes,
                plan=self.plan,
                capacity=self.capacity,
                availability_zone_id=self.availability_zone_id,
            )

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The instance role: processes on the nodes run as it."""
        return self.role

    def _engine_settings(self, settings: dict[str, str | int | None], files: dict[str, str]) -> None:
        """The open-files limit, the checkpoint mount and the training profile of a self-managed node."""
        settings["NOFILE_LIMIT"] = node_setup.NOFILE_LIMIT
        if self.checkpoints is not None:
            settings.update(
                {
                    "CHECKPOINT_FILE_SYSTEM_ID": self.checkpoints.file_system_id,
                    "CHECKPOINT_ACCESS_POINT_ID": self.checkpoints.access_point_id,
                    "CHECKPOINT_DIR": self.checkpoints.mount_path,
                }
            )
        profile = node_environment(
            self.instance,
            self.plan,
            compile_cache_url=self.compile_cache.url if self.compile_cache else None,
            checkpoint_dir=self.checkpoints.mount_path if self.checkpoints else None,
        )
        profile.update(self._extra_environment)
        files["training-profile.env"] = render_settings(profile)


if TYPE_CHECKING:  # mypy proves the class meets the interface
    _BUILT: type[ITrainingCluster] = AutoScalingTrainingCluster

__all__ = ["AutoScalingTrainingCluster"]
