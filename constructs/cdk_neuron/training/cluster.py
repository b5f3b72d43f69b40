"""What every Trainium training cluster shares, whichever engine runs its nodes.

- :class:`ITrainingCluster` / :class:`IBatchTrainingCluster`: the interfaces, as aws-cdk-lib exposes
  its own (``IFileSystem``, ``IJobQueue``): what monitoring, another stack or another app needs of a
  cluster, built here or imported (``BatchTrainingCluster.from_batch_training_cluster_attributes``).
- :class:`TrainingClusterBase`: the abstract construct both engines extend
  (:class:`~cdk_neuron.training.BatchTrainingCluster`,
  :class:`~cdk_neuron.training.AutoScalingTrainingCluster`): the key, the node security group and
  role, the placement group, the EFA installer, the node programs, the user data and the launch
  template, built the same way for both.
"""

from __future__ import annotations

import abc
import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, TypedDict, TypeGuard, cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, IConstruct

from cdk_neuron import _cdk_values, ami, timeouts, validation
from cdk_neuron._scope import reported_by
from cdk_neuron.catalog import EfaLayout, NeuronInstance
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.iam_statements import node_metrics_policy
from cdk_neuron.metrics import options as metric_options
from cdk_neuron.metrics import series
from cdk_neuron.metrics.names import (
    CORE_UTILIZATION,
    DEVICE_MEMORY_UTILIZATION,
    ECC_UNCORRECTED,
    NEURON_METRICS,
    Workload,
)
from cdk_neuron.metrics.node_metrics import NodeMetrics
from cdk_neuron.node_programs import render_boot_script, render_settings
from cdk_neuron.node_programs.bundle import (
    bundle_location,
    grant_bundle_read,
    limit_user_data_size,
    node_bundle,
)
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.storage.checkpoint_store import ICheckpointStore, is_checkpoint_store
from cdk_neuron.storage.compile_cache import ICompileCache, is_compile_cache
from cdk_neuron.training import acknowledgments, boot_failures, security
from cdk_neuron.training import validation as checks
from cdk_neuron.training.capacity import Capacity
from cdk_neuron.training.efa_installer import EfaInstaller
from cdk_neuron.training.efa_mirror_construct import EfaInstallerMirror
from cdk_neuron.training.launch_template import build_launch_template
from cdk_neuron.training.launcher import SCRATCH_DIR, TOPOLOGY_ACTION, TOPOLOGY_FILE, job_environment

if TYPE_CHECKING:
    from typing_extensions import Unpack

OFFERING_WARNING_ID = "@cdk-neuron/training:offeringUnknown"
DEFAULT_ROOT_VOLUME_SIZE = cdk.Size.gibibytes(512)
# cloud-init MIME types: a boothook runs early in every boot; a shell script once, at the end
# ("User data formats", cloud-init documentation).
BOOTHOOK_CONTENT_TYPE = 'text/cloud-boothook; charset="utf-8"'
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="utf-8"'
WORKLOAD: Workload = "training"
_NEURON_METRICS = {m.name: m for m in NEURON_METRICS}


class ITrainingCluster(IConstruct, ec2.IConnectable, Protocol):
    """A training cluster: its nodes' network and the Neuron metrics they publish.

    Both engines' clusters provide it, and so does an imported Batch cluster.
    """

    @property
    def node_metrics(self) -> NodeMetrics | None:
        """Where the nodes publish Neuron metrics; None when they publish none."""
        ...

    def metric(self, metric_name: str, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """A Neuron metric of the cluster's nodes (the per-workload series)."""
        ...

    def metric_neuron_core_utilization(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``NeuronCoreUtilization``, averaged over the nodes."""
        ...

    def metric_neuron_device_memory_utilization(
        self, **options: Unpack[metric_options.MetricOptions]
    ) -> cw.Metric:
        """``NeuronDeviceMemoryUtilization`` of the fullest node."""
        ...

    def metric_ecc_uncorrected(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``EccUncorrected``: uncorrected ECC events on the nodes' Neuron devices."""
        ...


class IBatchTrainingCluster(ITrainingCluster, Protocol):
    """An AWS Batch training cluster: a job queue that principals may be allowed to submit to."""

    @property
    def job_queue_arn(self) -> str:
        """The job queue's ARN."""
        ...

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` submit jobs to the queue with the cluster's job definitions and follow them."""
        ...


class IHyperPodTrainingCluster(ITrainingCluster, Protocol):
    """A SageMaker HyperPod Slurm cluster: its identity, and the grants of the job commands."""

    @property
    def cluster_arn(self) -> str:
        """The cluster's ARN."""
        ...

    @property
    def cluster_name(self) -> str:
        """HyperPod's name of the cluster."""
        ...

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` find the controller and run the job commands through Session Manager."""
        ...

    def grant_scale(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` change how many workers run."""
        ...


@jsii.implements(ec2.IConnectable)
class _TrainingClusterRef(Construct):
    """What a built and an imported cluster share: ``connections`` and the node metrics."""

    _connections: ec2.Connections
    _node_metrics: NodeMetrics | None
    # What the error of a metric without node metrics tells the user to do (an engine without a
    # publisher says why instead).
    _NO_METRICS_FIX: ClassVar[str] = "give the cluster node_metrics=NodeMetrics(environment=...)"

    @property
    def connections(self) -> ec2.Connections:
        """The nodes' security groups, e.g. ``store.connections.allow_default_port_from(cluster)``."""
        return self._connections

    @property
    def node_metrics(self) -> NodeMetrics | None:
        """Where the nodes publish Neuron metrics (environment and namespace); None when they publish none."""
        return self._node_metrics

    # -- metrics ----------------------------------------------------------------------------------

    def metric(self, metric_name: str, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """A Neuron metric the nodes publish: the per-workload series (dimensions ``Environment`` =
        ``node_metrics.environment``, ``Workload`` = ``training``) in ``node_metrics.namespace``.

        Raises :class:`~cdk_neuron.errors.NeuronConfigError` when the cluster has no
        ``node_metrics``: its nodes publish nothing to read.

        :param metric_name: one of :data:`cdk_neuron.monitoring.NEURON_METRICS`' names, e.g.
            ``"ExecutionErrors"``.
        :param options: ``aws_cloudwatch.MetricOptions`` overrides. Default: the statistic that fits
            the metric across nodes (:class:`~cdk_neuron.monitoring.NeuronMetric`), 5 minutes,
            labelled ``"training <metric_name> (<statistic>)"``.
        """
        with reported_by(self):
            neuron_metric = _NEURON_METRICS.get(metric_name)
            if neuron_metric is None:
                raise NeuronConfigError(
                    "metric_name", metric_name, f"the nodes publish {one_of(_NEURON_METRICS)}"
                )
            published = self._node_metrics
            if published is None:
                raise NeuronConfigError(
                    "node_metrics",
                    None,
                    f"the nodes publish no Neuron metrics, so {metric_name} has no data: {self._NO_METRICS_FIX}",
                )
        metric = series.neuron(
            published.namespace,
            neuron_metric,
            published.environment,
            WORKLOAD,
            period=options.get("period", metric_options.DEFAULT_PERIOD),
            statistic=options.get("statistic"),
        )
        return metric_options.with_options(metric, options)

    def metric_neuron_core_utilization(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``NeuronCoreUtilization`` (Percent): every core of every node, idle ones counting as 0.
        Default: ``Average`` (the cluster's mean); ``Minimum`` finds the idlest node."""
        return self.metric(CORE_UTILIZATION.name, **options)

    def metric_neuron_device_memory_utilization(
        self, **options: Unpack[metric_options.MetricOptions]
    ) -> cw.Metric:
        """``NeuronDeviceMemoryUtilization`` (Percent): Neuron device memory (HBM) in use.
        Default: ``Maximum`` (the fullest node)."""
        return self.metric(DEVICE_MEMORY_UTILIZATION.name, **options)

    def metric_ecc_uncorrected(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``EccUncorrected`` (Count): uncorrected ECC events in Neuron device HBM and SRAM; one means
        a failing device. Default: ``Sum``."""
        return self.metric(ECC_UNCORRECTED.name, **options)


def is_training_cluster(value: object) -> TypeGuard[ITrainingCluster]:
    """Whether ``value`` is a training cluster of either engine, or an imported one."""
    return isinstance(value, _TrainingClusterRef)


class NodeOptions(TypedDict, total=False):
    """The props of the nodes, which both training clusters take (``**options``); each is optional.

    ``BatchTrainingCluster(self, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=4,
    job_image=image, checkpoints=store)``: ``checkpoints`` is one of these. A type checker reads them
    from the constructors' ``**options: Unpack[NodeOptions]``; an unknown name is a ``TypeError``.
    """

    plan: TrainingPlan | None
    """The distributed layout (a :func:`~cdk_neuron.plan_training` result): a Batch cluster's job
    definition runs ``plan.nodes`` nodes and exports its degrees, an Auto Scaling cluster's node profile
    exports them. Default: TP across one node's NeuronCores, data parallel across ``max_nodes`` nodes."""
    vpc_subnets: ec2.SubnetSelection | None
    """Where the nodes run; must be private and in ONE AZ (EFA and the placement group need it).
    Default: the VPC's private-with-egress subnets (else its isolated ones), refused if they span
    several AZs: then select the AZ explicitly."""
    availability_zone_id: str | None
    """The AZ ID the subnets are in, e.g. ``"use1-az6"``, checked against the catalog's offerings
    snapshot (an AZ that does not offer ``instance_type`` is refused, an unknown one warns). Default:
    None (not checked; AZ names differ per account)."""
    checkpoints: ICheckpointStore | None
    """A :class:`~cdk_neuron.storage.ICheckpointStore` (built or imported), mounted read-write at its
    ``mount_path`` (``/checkpoints``) with TLS and IAM through its access point: in every job container
    of a Batch cluster (``CHECKPOINT_DIR`` points there), on every node of an Auto Scaling cluster.
    Default: None (no shared file system)."""
    compile_cache: ICompileCache | None
    """A :class:`~cdk_neuron.storage.ICompileCache`; ``NEURON_COMPILE_CACHE_URL`` points at it and the
    training code's role may read and write it. Default: None (each node compiles into its own local
    cache)."""
    capacity: Capacity | None
    """On-demand, a capacity reservation or a Capacity Block. Default: ``Capacity.on_demand()``."""
    placement_group: bool | None
    """Create a cluster placement group. Default: None, meaning yes, except with a Capacity Block (AWS
    places its instances itself) and with a reservation made in an existing placement group
    (``Capacity.reservation(id, placement_group_name=...)``), which the nodes launch into instead.
    True with a Capacity Block, and True or False with a reservation's placement group, are refused."""
    machine_image: ec2.IMachineImage | None
    """The nodes' AMI; it must be an ECS-optimized AL2023 image (Batch is told ``ECS_AL2023``).
    Default: the ECS-optimized AL2023 Neuron AMI of the pinned release :data:`cdk_neuron.ami.RELEASE`,
    through that release's own SSM parameter: a new AMI (for a Batch cluster an infrastructure update,
    which gives running jobs ``update_timeout`` to finish) happens only when you pass
    ``cdk_neuron.ami.machine_image(<release>)``."""
    efa_layout: EfaLayout
    """How EFA interfaces are laid out on the cards; a Batch cluster refuses a layout that fills
    network card 0 (Batch attaches each container's interface there). Default: ``EfaLayout.ALL_EFA``
    (the layout of the Neuron docs and samples)."""
    root_volume_size: cdk.Size
    """The gp3 root volume (Docker images live there), 64 to 16,384 GiB. Default: 512 GiB."""
    kms_key: kms.IKey | None
    """Customer-managed key for the root volumes (and a Batch cluster's job logs). A key you bring
    must allow EC2 Auto Scaling's service-linked role to use it (see
    ``security.allow_instance_launches``). Default: a new key with rotation, kept per
    ``removal_policy``."""
    removal_policy: cdk.RemovalPolicy
    """For the key (and a Batch cluster's job log group) the cluster creates (``DESTROY`` for throw-away
    dev stacks). Default: ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``: kept on update and delete,
    deleted only when the create that made them rolls back."""
    environment: dict[str, str] | None
    """Extra variables for the training code, overriding the cluster's values: a Batch job's
    container environment, an Auto Scaling node's profile. Default: none."""
    efa_installer: EfaInstaller | None
    """The EFA software the nodes install at boot. Default: ``EfaInstaller.pinned()``."""
    node_metrics: NodeMetrics | None
    """Run the Neuron metrics publisher on every node, publishing into its namespace only (read them
    with ``metric_*()``). Default: None (no node metrics)."""


@dataclass(frozen=True)
class _NodeProps:
    """The shared props, validated (see :meth:`TrainingClusterBase._check_node_props`)."""

    vpc: ec2.IVpc
    instance: NeuronInstance
    max_nodes: int
    plan: TrainingPlan
    subnets: checks.SingleAzSubnets
    availability_zone_id: str | None
    offering_warning: str | None
    checkpoints: ICheckpointStore | None
    compile_cache: ICompileCache | None
    capacity: Capacity
    use_placement_group: bool
    machine_image: ec2.IMachineImage | None
    efa_layout: EfaLayout
    root_volume_gib: int
    kms_key: kms.IKey | None
    removal_policy: cdk.RemovalPolicy
    environment: dict[str, str]
    efa_installer: EfaInstaller
    node_metrics: NodeMetrics | None


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class TrainingClusterBase(_TrainingClusterRef, metaclass=jsii.JSIIAbstractClass):
    """A Trainium cluster of whole instances with EFA, in one AZ: what both engines share.

    Every node is a whole instance with one EFA interface on each network card (from the catalog:
    8 on trn1.32xlarge, 16 on trn1n.32xlarge and trn2.48xlarge), in a cluster placement group,
    booted from the ECS-optimized AL2023 Neuron AMI (Neuron driver and tools), with IMDSv2 only, an
    encrypted gp3 root volume, no public IP and no SSH (Session Manager instead). That AMI has no EFA
    software, so a cloud-boothook installs a pinned, checksum-verified EFA installer (mirrored into a
    cluster bucket by :class:`~cdk_neuron.training.efa_mirror_construct.EfaInstallerMirror`) before
    the ECS agent starts. Local NVMe instance store is striped into ``/scratch`` on each node.

    Abstract: build a :class:`~cdk_neuron.training.BatchTrainingCluster` or an
    :class:`~cdk_neuron.training.AutoScalingTrainingCluster`. The attributes below exist on both,
    never None because of the engine.

    :ivar plan: the validated :class:`~cdk_neuron.planner.TrainingPlan`.
    :ivar instance: the catalog's :class:`~cdk_neuron.catalog.NeuronInstance` for ``instance_type``.
    :ivar max_nodes: the most nodes at once.
    :ivar capacity: how the instances are bought.
    :ivar launch_template: the nodes' launch template.
    :ivar user_data: its MIME multipart user data (add commands with :meth:`add_user_data`).
    :ivar machine_image: the nodes' AMI.
    :ivar placement_group: the cluster placement group created, or a reservation's existing one;
        None with a Capacity Block (AWS places those instances) or ``placement_group=False``.
    :ivar security_group: the nodes' security group (EFA within it, HTTPS out).
    :ivar role: the instance role (SSM, node programs, EFA installer, node metrics).
    :ivar kms_key: the key of the root volumes (and, with Batch, the job logs).
    :ivar availability_zone: the AZ name of the subnets when known at synthesis, else None.
    :ivar vpc: the nodes' VPC.
    :ivar vpc_subnets: the nodes' subnets (one AZ), as a selection.
    :ivar availability_zone_id: the AZ ID given, else None.
    :ivar checkpoints: the checkpoint store mounted on every node, else None.
    :ivar compile_cache: the compile cache the nodes use, else None.
    :ivar efa_installer_mirror: the bucket copy of the EFA installer; None on an instance without EFA.
    :ivar cluster_id: the ``Cluster`` dimension of the nodes' ``BootFailures`` metric.
    :ivar boot_failure_alarm: in ALARM once the nodes failed their boot ``BOOT_FAILURE_LIMIT`` times within
        ``BOOT_FAILURE_WINDOW`` (:mod:`cdk_neuron.timeouts`); it stops the launches
        (:mod:`cdk_neuron.training.boot_failures`).
    """

    _ENGINE: ClassVar[str]
    """``ENGINE`` in the nodes' settings: ``batch`` or ``auto-scaling-group``."""

    plan: TrainingPlan
    instance: NeuronInstance
    max_nodes: int
    capacity: Capacity
    launch_template: ec2.LaunchTemplate
    user_data: ec2.MultipartUserData
    machine_image: ec2.IMachineImage
    placement_group: ec2.IPlacementGroup | None
    security_group: ec2.SecurityGroup
    role: iam.Role
    kms_key: kms.IKey
    availability_zone: str | None
    vpc: ec2.IVpc
    vpc_subnets: ec2.SubnetSelection
    availability_zone_id: str | None
    checkpoints: ICheckpointStore | None
    compile_cache: ICompileCache | None
    efa_installer_mirror: EfaInstallerMirror | None
    cluster_id: str
    boot_failure_alarm: cw.Alarm
    _extra_user_data: ec2.UserData | None

    @property
    @abc.abstractmethod
    def grant_principal(self) -> iam.IPrincipal:
        """The principal the training code runs as, for grants: ``bucket.grant_read(cluster)``.

        The Batch job role on a :class:`~cdk_neuron.training.BatchTrainingCluster` (jobs run as it;
        the instance role is the ECS agent's), the instance role on an
        :class:`~cdk_neuron.training.AutoScalingTrainingCluster` (your processes on the nodes run
        as it).
        """

    def metric_boot_failures(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``BootFailures`` (Count): nodes that failed their boot and powered off to be replaced (each one a
        launch and a termination). Default: ``Sum`` over 5 minutes. :attr:`boot_failure_alarm` stops the
        launches at :data:`cdk_neuron.timeouts.BOOT_FAILURE_LIMIT` within the window."""
        found = boot_failures.metric(self.cluster_id, options.get("period", metric_options.DEFAULT_PERIOD))
        return metric_options.with_options(found, options)

    def add_user_data(self, *commands: str) -> None:
        """Run ``commands`` on every node, once, at its first boot, after the node setup (EFA,
        ``/scratch``, the checkpoint mount, the metrics publisher).

        The commands go into a shell part of their own, added to the multipart user data on the
        first call (AWS Batch merges its own part in as well). Synthesis refuses user data over
        EC2's 16 KB: keep long programs in a file or an S3 asset and only call them from here.
        """
        for command in commands:
            if not isinstance(command, str):
                with reported_by(self):
                    raise NeuronConfigError("commands", command, "give shell commands as strings")
        extra = self._extra_user_data
        if extra is None:
            extra = self._extra_user_data = ec2.UserData.for_linux()
            self.user_data.add_user_data_part(extra, SHELL_CONTENT_TYPE, True)
        extra.add_commands(*commands)

    # -- construction, in the order the subclasses call it -----------------------------------------

    def _check_node_props(
        self, *, vpc: ec2.IVpc, instance_type: object, max_nodes: object, options: NodeOptions
    ) -> _NodeProps:
        """Validate the shared props; creates nothing (call it before the first resource)."""
        unknown = sorted(set(options) - NodeOptions.__optional_keys__)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(NodeOptions.__optional_keys__), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}{hint}"
            )
        plan = options.get("plan")
        vpc_subnets = options.get("vpc_subnets")
        availability_zone_id = options.get("availability_zone_id")
        checkpoints: object = options.get("checkpoints")
        compile_cache: object = options.get("compile_cache")
        placement_group = options.get("placement_group")
        machine_image = options.get("machine_image")
        efa_layout = options.get("efa_layout", EfaLayout.ALL_EFA)
        root_volume_size = options.get("root_volume_size", DEFAULT_ROOT_VOLUME_SIZE)
        kms_key = options.get("kms_key")
        environment = options.get("environment")
        efa_installer: object = options.get("efa_installer")
        node_metrics: object = options.get("node_metrics")
        removal_policy: object = options.get("removal_policy", _cdk_values.DEFAULT_REMOVAL_POLICY)
        stack = cdk.Stack.of(self)
        capacity: object = options.get("capacity")
        capacity = Capacity.on_demand() if capacity is None else capacity
        nodes = validation.whole_number("max_nodes", max_nodes)
        instance = checks.training_instance(instance_type, nodes)
        checked_plan = checks.checked_plan(instance, nodes, plan)
        if not isinstance(capacity, Capacity):
            raise NeuronConfigError("capacity", capacity, "use Capacity.on_demand(), .reservation(...), ...")
        if capacity.is_training_plan:
            raise NeuronConfigError(
                "capacity",
                capacity.describe(),
                f"a SageMaker training plan serves only HyperPod, and {type(self).__name__} launches EC2 "
                "instances: use HyperPodTrainingCluster, or buy EC2 capacity "
                "(Capacity.capacity_block(...) or .reservation(...))",
            )
        capacity.check_instance(instance)
        checks.plan_fits_capacity(checked_plan, instance, capacity)
        use_placement_group = checks.placement_group_wanted(placement_group, capacity)
        layout = checks.efa_layout_leaves_room_for_tasks(instance, efa_layout, self._ENGINE == "batch")
        root_gib = _cdk_values.whole_gibibytes(
            "root_volume_size",
            root_volume_size,
            minimum=checks.MIN_ROOT_VOLUME_GIB,
            maximum=checks.MAX_ROOT_VOLUME_GIB,
        )
        store, cache = checked_storage(checkpoints, compile_cache)
        offering_warning, subnets = checked_placement(
            instance,
            checked_plan,
            availability_zone_id=availability_zone_id,
            stack=stack,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            checkpoints=store,
            compile_cache=cache,
            environment=environment,
        )
        installer = EfaInstaller.pinned() if efa_installer is None else efa_installer
        if not isinstance(installer, EfaInstaller):
            raise NeuronConfigError(
                "efa_installer",
                efa_installer,
                "use EfaInstaller.pinned(), EfaInstaller.signed(version) or EfaInstaller.of(version, sha256)",
            )
        if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
            raise NeuronConfigError(
                "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
            )
        return _NodeProps(
            vpc=vpc,
            instance=instance,
            max_nodes=nodes,
            plan=checked_plan,
            subnets=subnets,
            availability_zone_id=availability_zone_id,
            offering_warning=offering_warning,
            checkpoints=store,
            compile_cache=cache,
            capacity=capacity,
            use_placement_group=use_placement_group,
            machine_image=machine_image,
            efa_layout=layout,
            root_volume_gib=root_gib,
            kms_key=kms_key,
            removal_policy=_cdk_values.removal_policy("removal_policy", removal_policy),
            environment=dict(environment or {}),
            efa_installer=installer,
            node_metrics=node_metrics,
        )

    def _build_nodes(self, props: _NodeProps) -> None:
        """The shared resources, in an order that keeps every logical id and template as it was."""
        instance = props.instance
        ecs_agent = self._ENGINE == "batch"
        self.instance = instance
        self.max_nodes = props.max_nodes
        self.plan = props.plan
        self.capacity = props.capacity
        self.availability_zone_id = props.availability_zone_id
        self.availability_zone = props.subnets.availability_zone
        self.vpc = props.vpc
        self.vpc_subnets = props.subnets.selection()
        self.checkpoints = props.checkpoints
        self.compile_cache = props.compile_cache
        self._extra_environment = props.environment
        self._removal_policy = props.removal_policy
        self._extra_user_data = None
        if props.offering_warning is not None:
            cdk.Annotations.of(self).add_warning_v2(OFFERING_WARNING_ID, props.offering_warning)

        self.kms_key = props.kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron training cluster {self.node.path}: root volumes and job logs",
            enable_key_rotation=True,
            removal_policy=props.removal_policy,
        )
        security.allow_instance_launches(self.kms_key)
        self.security_group = security.node_security_group(self, "SecurityGroup", props.vpc)
        acknowledgments.efa_self_ingress(self.security_group)
        self._connections = ec2.Connections(security_groups=[self.security_group])
        self.role = security.node_role(self, "NodeRole", ecs_agent=ecs_agent)
        self.placement_group = None
        if props.capacity.placement_group_name is not None:  # the reservation's own group
            self.placement_group = ec2.PlacementGroup.from_placement_group_name(
                self, "PlacementGroup", props.capacity.placement_group_name
            )
        elif props.use_placement_group:
            self.placement_group = ec2.PlacementGroup(
                self, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER
            )
        self.machine_image = props.machine_image or ami.machine_image()
        self._node_metrics = props.node_metrics
        # Node programs (cdk_neuron/node_programs/files/training) and, with EFA, the pinned installer.
        self._bundle = node_bundle(self)
        grant_bundle_read(self._bundle, self.role)
        self.efa_installer_mirror = None
        if instance.supports_efa:
            security.allow_log_encryption(self.kms_key)
            self.efa_installer_mirror = EfaInstallerMirror(
                self, "EfaInstaller", installer=props.efa_installer, kms_key=self.kms_key
            )
            self.efa_installer_mirror.grant_read(self.role)
            # Each node records its own topology at boot for the launcher's rank order.
            iam.Grant.add_to_principal(grantee=self.role, actions=[TOPOLOGY_ACTION], resource_arns=["*"])
            acknowledgments.instance_topology(self.role)
        # Every failed boot is counted, and a cluster that keeps failing stops launching (boot_failures).
        self.cluster_id = self.node.addr
        boot_failures.record_policy(self, self.role)
        self.boot_failure_alarm = boot_failures.limit_alarm(self, self.cluster_id)
        if props.node_metrics is not None:
            node_metrics_policy(
                self, "NodeMetricsPolicy", role=self.role, namespace=props.node_metrics.namespace
            )
        acknowledgments.grant_policies(self.role)
        self.user_data = self._build_user_data()
        self.launch_template = build_launch_template(
            self,
            "LaunchTemplate",
            instance=instance,
            machine_image=self.machine_image,
            security_group=self.security_group,
            kms_key=self.kms_key,
            root_volume_size=cdk.Size.gibibytes(props.root_volume_gib),
            efa_layout=props.efa_layout,
            capacity=props.capacity,
            user_data=self.user_data,
            # Batch launches with the compute environment's instance profile (its instance_role).
            role=None if ecs_agent else self.role,
        )
        limit_user_data_size(self.launch_template, self.user_data)

    def _engine_settings(self, settings: dict[str, str | int | None], files: dict[str, str]) -> None:
        """Add the engine's own node settings (after the shared ones) and settings files."""

    def _build_user_data(self) -> ec2.MultipartUserData:
        """MIME multipart user data (Batch merges its own part into it; it refuses plain scripts).

        With EFA, a cloud-boothook part installs the pinned EFA software early in every boot, before
        the ECS agent can start (``training/efa-install.sh``); a shell part then sets up the node
        (``training/node-setup.sh``). Both carry only settings and the bootstrap: the programs are
        in the node-program bundle. A failure in either powers the node off to be replaced.
        """
        instance = self.instance
        settings: dict[str, str | int | None] = {
            "ENGINE": self._ENGINE,
            # node-setup.sh checks them before any job can land (one /dev/neuronN per chip).
            "NEURON_DEVICES": instance.chips,
            "NEURON_DEVICE_WAIT": timeouts.NEURON_DEVICE_WAIT,
        }
        if instance.nvme_gb > 0:
            settings["SCRATCH_DIR"] = SCRATCH_DIR
        mirror = self.efa_installer_mirror
        if mirror is not None:
            settings.update(
                {
                    "REGION": cdk.Stack.of(self).region,
                    "EFA_INSTALLER_VERSION": mirror.installer.version,
                    "EFA_INSTALLER_SHA256": mirror.sha256,
                    "EFA_INSTALLER_BUCKET": mirror.bucket.bucket_name,
                    "EFA_INSTALLER_KEY": mirror.object_key,
                    "EFA_DEVICES": instance.efa_interfaces,
                    "TOPOLOGY_FILE": TOPOLOGY_FILE,
                    "TOPOLOGY_ATTEMPTS": timeouts.TOPOLOGY_ATTEMPTS,
                    "TOPOLOGY_STEP": timeouts.TOPOLOGY_STEP,
                    "ULTRASERVER": 1 if instance.is_ultraserver else 0,
                }
            )
        files: dict[str, str] = {}
        self._engine_settings(settings, files)
        files["training.env"] = render_settings(settings)
        files[boot_failures.SETTINGS_FILE] = render_settings(boot_failures.settings(self.cluster_id))
        if self._node_metrics is not None:
            files.update(self._node_metrics.settings_files(workload=WORKLOAD, instance_type=instance.name))

        location = bundle_location(self._bundle)
        user_data = ec2.MultipartUserData()
        if mirror is not None:
            user_data.add_part(
                ec2.MultipartBody.from_raw_body(
                    content_type=BOOTHOOK_CONTENT_TYPE,
                    body=render_boot_script(
                        bundle=location,
                        settings=files,
                        program_path="training/efa-install.sh",
                        purpose="training node EFA installation",
                    ),
                )
            )
        user_data.add_part(
            ec2.MultipartBody.from_raw_body(
                content_type=SHELL_CONTENT_TYPE,
                body=render_boot_script(
                    bundle=location,
                    settings=files,
                    program_path="training/node-setup.sh",
                    purpose="training node setup",
                ),
            )
        )
        return user_data


def checked_storage(
    checkpoints: object, compile_cache: object
) -> tuple[ICheckpointStore | None, ICompileCache | None]:
    """The ``checkpoints`` and ``compile_cache`` props of every training engine, type-checked."""
    if checkpoints is not None and not is_checkpoint_store(checkpoints):
        raise NeuronConfigError(
            "checkpoints", checkpoints, "give a cdk_neuron.CheckpointStore (or an imported one)"
        )
    if compile_cache is not None and not is_compile_cache(compile_cache):
        raise NeuronConfigError(
            "compile_cache", compile_cache, "give a cdk_neuron.CompileCache (or an imported one)"
        )
    return cast("ICheckpointStore | None", checkpoints), cast("ICompileCache | None", compile_cache)


def checked_placement(
    instance: NeuronInstance,
    plan: TrainingPlan,
    *,
    availability_zone_id: object,
    stack: cdk.Stack,
    vpc: ec2.IVpc,
    vpc_subnets: ec2.SubnetSelection | None,
    checkpoints: ICheckpointStore | None,
    compile_cache: ICompileCache | None,
    environment: dict[str, str] | None,
) -> tuple[str | None, checks.SingleAzSubnets]:
    """Every engine's placement checks: the AZ ID's offering (a warning, or None), one AZ's subnets, a
    checkpoint store reachable from them, and the extra job environment's names and values."""
    offering_warning = checks.availability_zone_id(instance, availability_zone_id, stack)
    subnets = checks.single_az_subnets(vpc, vpc_subnets)
    checks.checkpoints_reachable(checkpoints, subnets)
    job_environment(
        instance,
        plan,
        compile_cache_url=compile_cache.url if compile_cache else None,
        checkpoint_dir=checkpoints.mount_path if checkpoints else None,
        extra=environment,
    )
    return offering_warning, subnets


__all__ = [
    "OFFERING_WARNING_ID",
    "IBatchTrainingCluster",
    "ITrainingCluster",
    "NodeOptions",
    "TrainingClusterBase",
    "is_training_cluster",
]
