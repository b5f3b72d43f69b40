"""CheckpointStore: an encrypted, backed-up EFS file system for training checkpoints.

- :class:`ICheckpointStore`: what a training cluster, an EC2 user-data script or a Batch job needs
  of a store: the network (``connections``), grants, the Batch volume, the mount commands and the
  EFS metrics. A store built here and one imported with
  :meth:`CheckpointStore.from_checkpoint_store_attributes` both provide it.
- :class:`CheckpointStore`: the construct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_backup as backup
from aws_cdk import aws_batch as batch
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_efs as efs
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, IConstruct

from cdk_neuron import _cdk_values, _manifest, validation
from cdk_neuron._custom_resource import handler_function
from cdk_neuron._nag import acknowledge
from cdk_neuron._scope import reported_by
from cdk_neuron.checkpoint_advisor import CheckpointEstimate, estimate_checkpoint
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics import options as metric_options
from cdk_neuron.metrics import series
from cdk_neuron.storage.file_system_policy import (
    READ_ACTIONS,
    READ_WRITE_ACTIONS,
    checkpoint_file_system_policy,
    client_grant_conditions,
)
from cdk_neuron.storage.placement import resolve_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

CHECKPOINT_PATH = "/checkpoints"
SAVE_TIME_WARNING_ID = "@cdk-neuron/storage:checkpointSaveTime"

# The EFS L2 exposes Infrequent Access transitions as an enum of fixed ages.
_IA_AFTER_DAYS: dict[int, efs.LifecyclePolicy] = {
    1: efs.LifecyclePolicy.AFTER_1_DAY,
    7: efs.LifecyclePolicy.AFTER_7_DAYS,
    14: efs.LifecyclePolicy.AFTER_14_DAYS,
    30: efs.LifecyclePolicy.AFTER_30_DAYS,
    60: efs.LifecyclePolicy.AFTER_60_DAYS,
    90: efs.LifecyclePolicy.AFTER_90_DAYS,
    180: efs.LifecyclePolicy.AFTER_180_DAYS,
    270: efs.LifecyclePolicy.AFTER_270_DAYS,
    365: efs.LifecyclePolicy.AFTER_365_DAYS,
}
DEFAULT_BACKUP_RETENTION = cdk.Duration.days(35)
DEFAULT_SAVE_TIME_BUDGET = cdk.Duration.minutes(10)
# EFS access points take POSIX ids 0..2**32-1; 0 would hand every client root on the file system.
_MAX_POSIX_ID = 0xFFFFFFFF

StorageClass = Literal["Total", "Standard", "IA", "Archive"]
"""Values of the ``StorageClass`` dimension of EFS ``StorageBytes``."""
STORAGE_CLASSES: tuple[StorageClass, ...] = ("Total", "Standard", "IA", "Archive")


def _mount_point(field: str, value: object) -> str:
    return validation.matching(
        field, value, validation.ABSOLUTE_DIRECTORY, "an absolute directory such as '/checkpoints'"
    )


class ICheckpointStore(IConstruct, ec2.IConnectable, Protocol):
    """A checkpoint file system clients mount through one access point, with TLS and IAM.

    Built by :class:`CheckpointStore`, or imported with
    :meth:`CheckpointStore.from_checkpoint_store_attributes`.
    """

    @property
    def file_system(self) -> efs.IFileSystem:
        """The EFS file system."""
        ...

    @property
    def access_point(self) -> efs.IAccessPoint:
        """The access point every client mounts through."""
        ...

    @property
    def file_system_id(self) -> str:
        """The EFS file system id (``fs-...``)."""
        ...

    @property
    def file_system_arn(self) -> str:
        """The EFS file system ARN."""
        ...

    @property
    def access_point_id(self) -> str:
        """The id of the access point every client mounts through (``fsap-...``)."""
        ...

    @property
    def access_point_arn(self) -> str:
        """The access point's ARN (the ``elasticfilesystem:AccessPointArn`` IAM condition value)."""
        ...

    @property
    def mount_path(self) -> str:
        """Where the clients mount it: ``/checkpoints``."""
        ...

    @property
    def availability_zone(self) -> str | None:
        """The AZ name of a One Zone file system; None for a Regional one (or when unknown)."""
        ...

    def grant_read(self, grantee: iam.IGrantable, *, peer: ec2.IConnectable | None = None) -> iam.Grant:
        """Let ``grantee`` mount the access point read-only; NFS from ``peer``."""
        ...

    def grant_read_write(self, grantee: iam.IGrantable, *, peer: ec2.IConnectable | None = None) -> iam.Grant:
        """Let ``grantee`` mount the access point read-write; NFS from ``peer``."""
        ...

    def batch_volume(
        self,
        *,
        name: str = "checkpoints",
        container_path: str = CHECKPOINT_PATH,
        readonly: bool = False,
        use_job_role: bool = True,
    ) -> batch.EcsVolume:
        """An AWS Batch EFS volume for the store."""
        ...

    def mount_commands(
        self, mount_point: str = CHECKPOINT_PATH, *, fstab: bool = True, install_client: bool = False
    ) -> list[str]:
        """Shell lines for EC2 user data that mount the store."""
        ...

    def metric(self, metric_name: str, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """An ``AWS/EFS`` metric of the file system."""
        ...

    def metric_client_connections(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric: ...

    def metric_data_read_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric: ...

    def metric_data_write_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric: ...

    def metric_metered_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric: ...

    def metric_permitted_throughput(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric: ...

    def metric_storage_bytes(
        self, storage_class: StorageClass = "Total", **options: Unpack[metric_options.MetricOptions]
    ) -> cw.Metric: ...

    def metric_throughput_utilization(
        self, **options: Unpack[metric_options.MathOptions]
    ) -> cw.MathExpression: ...


@jsii.implements(ec2.IConnectable)
class _CheckpointStoreBase(Construct):
    """What a built and an imported store share: grants, mounts and metrics over ``file_system``."""

    _file_system: efs.IFileSystem
    _access_point: efs.IAccessPoint
    _mount_path: str
    _availability_zone: str | None

    # -- attributes -------------------------------------------------------------------------------

    @property
    def file_system(self) -> efs.IFileSystem:
        """The EFS file system."""
        return self._file_system

    @property
    def access_point(self) -> efs.IAccessPoint:
        """The access point every client mounts through (rooted at ``/checkpoints``)."""
        return self._access_point

    @property
    def connections(self) -> ec2.Connections:
        """NFS (TCP 2049) into the mount targets; nothing is allowed until a grant or a call here."""
        return self._file_system.connections

    @property
    def file_system_id(self) -> str:
        """The EFS file system id (``fs-...``)."""
        return self._file_system.file_system_id

    @property
    def file_system_arn(self) -> str:
        """The EFS file system ARN."""
        return self._file_system.file_system_arn

    @property
    def access_point_id(self) -> str:
        """The id of the access point every client mounts through (``fsap-...``)."""
        return self._access_point.access_point_id

    @property
    def access_point_arn(self) -> str:
        """The access point's ARN (the ``elasticfilesystem:AccessPointArn`` IAM condition value)."""
        return self._access_point.access_point_arn

    @property
    def mount_path(self) -> str:
        """Where clients mount the store: ``/checkpoints`` (``CHECKPOINT_DIR`` on cluster nodes)."""
        return self._mount_path

    @property
    def availability_zone(self) -> str | None:
        """The AZ name of a One Zone file system; None for a Regional one."""
        return self._availability_zone

    # -- grants -----------------------------------------------------------------------------------

    def grant_read(self, grantee: iam.IGrantable, *, peer: ec2.IConnectable | None = None) -> iam.Grant:
        """Let ``grantee`` mount the access point read-only (ClientMount over TLS).

        NFS is opened from ``peer``, or from ``grantee`` itself when it has ``connections`` (an EC2
        instance, say). A role has none: pass the compute environment or instances that assume it.
        """
        return self._grant(grantee, READ_ACTIONS, peer)

    def grant_read_write(self, grantee: iam.IGrantable, *, peer: ec2.IConnectable | None = None) -> iam.Grant:
        """Let ``grantee`` mount the access point read-write (ClientMount + ClientWrite over TLS).

        NFS is opened from ``peer``, or from ``grantee`` itself when it has ``connections``.
        """
        return self._grant(grantee, READ_WRITE_ACTIONS, peer)

    def _grant(
        self, grantee: iam.IGrantable, actions: tuple[str, ...], peer: ec2.IConnectable | None
    ) -> iam.Grant:
        grant = iam.Grant.add_to_principal_or_resource(
            grantee=grantee,
            actions=list(actions),
            resource_arns=[self._file_system.file_system_arn],
            resource=self._file_system,
            conditions=client_grant_conditions(self._access_point.access_point_arn),
        )
        network_peer = peer if peer is not None else _connectable(grantee)
        if network_peer is not None:
            self.connections.allow_default_port_from(network_peer, "NFS from a granted checkpoint client")
        return grant

    # -- what clients need to mount ---------------------------------------------------------------

    def batch_volume(
        self,
        *,
        name: str = "checkpoints",
        container_path: str = CHECKPOINT_PATH,
        readonly: bool = False,
        use_job_role: bool = True,
    ) -> batch.EcsVolume:
        """An AWS Batch EFS volume for this store: TLS, IAM with the job role, the access point.

        The job definition needs a job role granted with ``grant_read_write`` (or ``grant_read`` and
        ``readonly=True``).

        :param name: the volume's name in the job definition. Default: ``"checkpoints"``.
        :param container_path: where the container sees it. Default: ``/checkpoints``.
        :param readonly: mount read-only. Default: False.
        :param use_job_role: must stay True: the store refuses anonymous NFS clients. Default: True.
        """
        if not use_job_role:
            raise NeuronConfigError(
                "use_job_role",
                use_job_role,
                "the store refuses anonymous NFS clients; mount with the job role (True) and grant it",
            )
        validation.matching(
            "name", name, validation.BATCH_VOLUME_NAME, "letters, digits, '-' and '_' (Batch volume names)"
        )
        return batch.EcsVolume.efs(
            name=name,
            container_path=_mount_point("container_path", container_path),
            file_system=self._file_system,
            access_point_id=self._access_point.access_point_id,
            enable_transit_encryption=True,
            use_job_role=True,
            readonly=readonly,
        )

    def mount_commands(
        self, mount_point: str = CHECKPOINT_PATH, *, fstab: bool = True, install_client: bool = False
    ) -> list[str]:
        """Shell lines for EC2 user data: mount the access point with amazon-efs-utils (TLS + IAM).

        The instance role must be granted. amazon-efs-utils 2.0 or later is what allows 1,500 MiBps
        per client on Elastic throughput.

        :param mount_point: the directory to mount at. Default: ``/checkpoints``.
        :param fstab: add an ``/etc/fstab`` entry (``_netdev``) so the mount survives a reboot.
            Default: True.
        :param install_client: install amazon-efs-utils with dnf (Amazon Linux 2023) if absent.
            Default: False.
        """
        mount_point = _mount_point("mount_point", mount_point)
        options = f"tls,iam,accesspoint={self._access_point.access_point_id}"
        source = f"{self._file_system.file_system_id}:/"
        lines = []
        if install_client:
            lines.append("command -v mount.efs >/dev/null 2>&1 || dnf install -y amazon-efs-utils")
        lines += [f"mkdir -p {mount_point}", f"mount -t efs -o {options} {source} {mount_point}"]
        if fstab:
            entry = f"{source} {mount_point} efs _netdev,{options} 0 0"
            lines.append(f"grep -qs ' {mount_point} efs ' /etc/fstab || echo '{entry}' >> /etc/fstab")
        return lines

    # -- metrics ----------------------------------------------------------------------------------

    def metric(self, metric_name: str, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """An ``AWS/EFS`` metric of the file system (dimension ``FileSystemId``).

        :param metric_name: e.g. ``"PercentIOLimit"`` (EFS user guide, "CloudWatch metrics for
            Amazon EFS").
        :param options: ``aws_cloudwatch.MetricOptions`` overrides. Default: ``Average`` over 5
            minutes, labelled ``"<metric_name> (<statistic>)"``.
        """
        metric = series.efs(
            metric_name,
            self.file_system_id,
            statistic=options.get("statistic", "Average"),
            period=options.get("period", metric_options.DEFAULT_PERIOD),
        )
        return metric_options.with_options(metric, options)

    def metric_client_connections(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``ClientConnections``: mounted clients (one per instance or Batch container). Default: ``Sum``."""
        return self.metric("ClientConnections", **metric_options.merged({"statistic": "Sum"}, options))

    def metric_data_read_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``DataReadIOBytes``: bytes read (checkpoint loads). Default: ``Sum``."""
        return self.metric("DataReadIOBytes", **metric_options.merged({"statistic": "Sum"}, options))

    def metric_data_write_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``DataWriteIOBytes``: bytes written (checkpoint saves). Default: ``Sum``."""
        return self.metric("DataWriteIOBytes", **metric_options.merged({"statistic": "Sum"}, options))

    def metric_metered_io_bytes(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``MeteredIOBytes``: the throughput EFS meters against ``PermittedThroughput``. Default: ``Sum``."""
        return self.metric("MeteredIOBytes", **metric_options.merged({"statistic": "Sum"}, options))

    def metric_permitted_throughput(self, **options: Unpack[metric_options.MetricOptions]) -> cw.Metric:
        """``PermittedThroughput`` (bytes/s): with Elastic throughput, the file system's maximum write
        throughput. Default: ``Average``."""
        return self.metric("PermittedThroughput", **metric_options.merged({"statistic": "Average"}, options))

    def metric_storage_bytes(
        self, storage_class: StorageClass = "Total", **options: Unpack[metric_options.MetricOptions]
    ) -> cw.Metric:
        """``StorageBytes``: the metered size of the file system (EFS reports it every 15 minutes).

        :param storage_class: the ``StorageClass`` dimension: ``"Total"``, ``"Standard"``, ``"IA"``
            or ``"Archive"``. Default: ``"Total"``.
        :param options: overrides. Default: ``Average`` over 5 minutes.
        """
        validation.choice("storage_class", storage_class, STORAGE_CLASSES)
        dimensions = {"FileSystemId": self.file_system_id, "StorageClass": storage_class}
        return self.metric("StorageBytes", **metric_options.merged({"dimensions_map": dimensions}, options))

    def metric_throughput_utilization(
        self, **options: Unpack[metric_options.MathOptions]
    ) -> cw.MathExpression:
        """Metered throughput as a percentage of ``PermittedThroughput`` (the console's "Throughput
        utilization"): near 100 % checkpoint saves and data loading are throughput-bound.

        :param options: ``color``, ``label`` and ``period`` overrides. Default: 5 minutes, labelled
            ``"Throughput used (% of permitted)"``.
        """
        period = options.get("period", metric_options.DEFAULT_PERIOD)
        expression = series.efs_throughput_utilization(
            self.metric_metered_io_bytes(period=period),
            self.metric_permitted_throughput(period=period),
            period=period,
        )
        return metric_options.with_math_options(expression, options)


class CheckpointStore(_CheckpointStoreBase):
    """Amazon EFS for training checkpoints: KMS-encrypted, TLS + IAM only, backed up, retained.

    Elastic throughput, General Purpose mode. Clients reach the data only through one access point
    rooted at ``/checkpoints`` with a fixed POSIX user, only with TLS and IAM authorization, and only
    after ``grant_read`` / ``grant_read_write``; NFS (TCP 2049) is open only from the peers named in
    those grants (or added to ``connections``).

    For AWS Batch: ``store.grant_read_write(job_role, peer=compute_environment)`` and add
    ``store.batch_volume()`` to the container (a :class:`~cdk_neuron.training.BatchTrainingCluster`
    given ``checkpoints=store`` does both). For EC2 user data: grant the instance role and run
    ``store.mount_commands()``. Metrics: ``metric_*()`` (``AWS/EFS``, dimension ``FileSystemId``).

    :param vpc: the VPC of the mount targets.
    :param vpc_subnets: mount-target subnets, at most one per AZ (an EFS rule). With
        ``one_zone=True`` they must be in exactly one AZ, which becomes the file system's AZ: select
        the training cluster's subnet, in a VPC whose AZ names are pinned (mapped from AZ IDs).
        Default: the VPC's default selection (its private subnets with egress, else its isolated
        ones), which must hold one subnet per AZ.
    :param one_zone: EFS One Zone: cheaper storage, one AZ, 1 GiBps write and 500 MiBps per client.
        Default: False (Regional).
    :param availability_zone: the One Zone file system's AZ *name*, when the subnets' names are not
        real names: in a VPC pinned by AZ ID (subnets with ``AvailabilityZoneId``), pass the pinned
        subnet's ``Fn::GetAtt AvailabilityZone`` so CloudFormation supplies the name your account
        maps to that AZ ID. Only with ``one_zone=True``. Default: the selected subnets' AZ name.
    :param removal_policy: for the file system, the key and the backup vault the store creates.
        ``DESTROY`` is for throw-away dev stacks: the vault is then emptied of its recovery points
        before CloudFormation deletes it (it refuses a vault that holds any), so ``cdk destroy``
        leaves nothing. The vault has a fixed name, so ``RETAIN`` keeps it with
        ``RETAIN_ON_UPDATE_OR_DELETE`` (a failed first create can be retried). Default:
        ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``: kept on update and delete, deleted only when
        the create that made it rolls back.
    :param kms_key: customer-managed key for the file system and the backup vault. Default: a new
        key with yearly rotation.
    :param security_group: for the mount targets. Default: a new group with no ingress and no egress
        (NFS servers never open connections).
    :param infrequent_access_after_days: move files to EFS Infrequent Access after this many days
        without access (1, 7, 14, 30, 60, 90, 180, 270 or 365); None keeps everything in Standard.
        Default: 30 (older checkpoints are rarely read again, and resuming from one is a single read).
    :param backup_retention: how long AWS Backup keeps each recovery point (whole days). Default: 35
        days.
    :param backup_schedule: when the backup rule runs. Default: daily at 05:00 UTC.
    :param backup_vault: an existing (e.g. central) vault. Default: a new vault encrypted with
        ``kms_key``.
    :param posix_uid: the user every client acts as through the access point (not root). Default: 1000.
    :param posix_gid: the group every client acts as. Default: 1000.
    :param model_parameters: parameter count of the model that checkpoints here, e.g. ``70e9``. When
        given, ``checkpoint_estimate`` is computed and a warning is added if one save takes longer
        than ``save_time_budget``. Default: None (no estimate).
    :param weight_bytes_per_parameter: bytes per checkpointed model weight or a dtype name. Default:
        2.0 (the 16-bit weights of NxD Training's mixed precision; 4.0 for a model kept in fp32).
    :param optimizer_bytes_per_parameter: optimizer-state bytes per parameter or an optimizer name.
        Default: 8.0 (Adam's two fp32 moments).
    :param master_weights_in_checkpoint: the checkpoint also holds the fp32 master weights (NxD
        Training's ``use_master_weights_in_ckpt``). Default: False, as in every NxD Training
        configuration AWS publishes.
    :param writers: nodes that write checkpoint shards in parallel. The estimate assumes clients
        mount with amazon-efs-utils 2.0+ (Batch's ECS agent and ``mount_commands`` use it), which
        allows 1,500 MiBps per client on Regional Elastic file systems. Default: 1.
    :param save_time_budget: the longest acceptable save. Default: 10 minutes.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        vpc_subnets: ec2.SubnetSelection | None = None,
        one_zone: bool = False,
        availability_zone: str | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        kms_key: kms.IKey | None = None,
        security_group: ec2.ISecurityGroup | None = None,
        infrequent_access_after_days: int | None = 30,
        backup_retention: cdk.Duration = DEFAULT_BACKUP_RETENTION,
        backup_schedule: events.Schedule | None = None,
        backup_vault: backup.IBackupVault | None = None,
        posix_uid: int = 1000,
        posix_gid: int = 1000,
        model_parameters: float | None = None,
        weight_bytes_per_parameter: float | str = 2.0,
        optimizer_bytes_per_parameter: float | str = 8.0,
        master_weights_in_checkpoint: bool = False,
        writers: int = 1,
        save_time_budget: cdk.Duration = DEFAULT_SAVE_TIME_BUDGET,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            stack = cdk.Stack.of(self)

            # Every prop is validated before the first resource exists.
            removal = _cdk_values.removal_policy("removal_policy", removal_policy)
            retention_days = _cdk_values.whole_duration("backup_retention", backup_retention, "days")
            budget_seconds = _cdk_values.positive_duration("save_time_budget", save_time_budget)
            uid = validation.whole_number("posix_uid", posix_uid, maximum=_MAX_POSIX_ID)
            gid = validation.whole_number("posix_gid", posix_gid, maximum=_MAX_POSIX_ID)
            if infrequent_access_after_days is not None:
                validation.choice(
                    "infrequent_access_after_days", infrequent_access_after_days, _IA_AFTER_DAYS
                )
            if backup_schedule is not None and not isinstance(backup_schedule, events.Schedule):
                raise NeuronConfigError(
                    "backup_schedule", backup_schedule, "use aws_events.Schedule.cron(...) or None"
                )
            if availability_zone is not None and not one_zone:
                raise NeuronConfigError(
                    "availability_zone",
                    availability_zone,
                    "only a One Zone file system has an AZ; set one_zone=True",
                )
            if (
                availability_zone is not None
                and not cdk.Token.is_unresolved(availability_zone)
                and (
                    availability_zone.startswith("dummy")
                    or (
                        not cdk.Token.is_unresolved(stack.region)
                        and not availability_zone.startswith(stack.region)
                    )
                )
            ):
                raise NeuronConfigError(
                    "availability_zone",
                    availability_zone,
                    f"give a real AZ name of the stack's Region {stack.region} (e.g. {stack.region}a) or the "
                    "pinned subnet's Fn::GetAtt AvailabilityZone",
                )
            placement = resolve_placement(
                stack,
                vpc,
                vpc_subnets or ec2.SubnetSelection(),
                one_zone=one_zone,
                explicit_zone=availability_zone is not None,
            )
            region = None if cdk.Token.is_unresolved(stack.region) else stack.region
            self.checkpoint_estimate: CheckpointEstimate | None = (
                None
                if model_parameters is None
                else estimate_checkpoint(
                    model_parameters,
                    weight_bytes_per_parameter=weight_bytes_per_parameter,
                    optimizer_bytes_per_parameter=optimizer_bytes_per_parameter,
                    master_weights_in_checkpoint=master_weights_in_checkpoint,
                    writers=writers,
                    region=region,
                    one_zone=one_zone,
                )
            )
            """The save-time estimate for ``model_parameters``; None without them."""
            self.save_time_budget: cdk.Duration = save_time_budget
            """The longest acceptable checkpoint save."""
            self._mount_path = CHECKPOINT_PATH
            self._availability_zone = availability_zone or placement.availability_zone

            self.kms_key: kms.IKey = kms_key or kms.Key(
                self,
                "Key",
                description=f"cdk-neuron checkpoint store {self.node.path}: EFS data and backups",
                enable_key_rotation=True,
                removal_policy=removal,
            )
            """Encrypts the file system and the backup vault the store creates."""
            self.security_group: ec2.ISecurityGroup = security_group or ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="Checkpoint EFS mount targets: NFS only from granted clients",
                allow_all_outbound=False,
            )
            """The mount targets' security group."""
            file_system = efs.FileSystem(
                self,
                "FileSystem",
                vpc=vpc,
                vpc_subnets=placement.subnet_selection(),
                one_zone=one_zone,
                encrypted=True,
                kms_key=self.kms_key,
                throughput_mode=efs.ThroughputMode.ELASTIC,
                performance_mode=efs.PerformanceMode.GENERAL_PURPOSE,
                lifecycle_policy=None
                if infrequent_access_after_days is None
                else _IA_AFTER_DAYS[infrequent_access_after_days],
                security_group=self.security_group,
                removal_policy=removal,
                file_system_policy=checkpoint_file_system_policy(),
                # True only stops the L2 from appending its own Allow-anyone statement (aws/aws-cdk#36224:
                # ClientWrite + ClientRootAccess for AWS:*, no ClientMount). Anonymous clients are still
                # refused: the policy above exists and allows no one (see file_system_policy.py).
                allow_anonymous_access=True,
                enable_automatic_backups=False,
            )
            self._file_system = file_system
            # Escape hatch: the L2 omits BackupPolicy when automatic backups are off, and AWS turns them
            # on for One Zone file systems by default (go-to-k/cdk-real-drift#1601). The plan below is
            # the only backup, with our key and retention, not a second copy in
            # aws/efs/automatic-backup-vault.
            cfn_file_system = cast(efs.CfnFileSystem, file_system.node.default_child)
            cfn_file_system.backup_policy = efs.CfnFileSystem.BackupPolicyProperty(status="DISABLED")
            if availability_zone is not None:
                # Escape hatch: the L2 names the One Zone AZ after the selected subnets, which in an
                # AZ-ID-pinned VPC carry the AZ ID, not a name.
                cfn_file_system.availability_zone_name = availability_zone

            self._access_point = efs.AccessPoint(
                self,
                "AccessPoint",
                file_system=file_system,
                path=CHECKPOINT_PATH,
                create_acl=efs.Acl(owner_uid=str(uid), owner_gid=str(gid), permissions="750"),
                posix_user=efs.PosixUser(uid=str(uid), gid=str(gid)),
            )

            self.backup_vault: backup.IBackupVault = backup_vault or backup.BackupVault(
                self,
                "BackupVault",
                encryption_key=self.kms_key,
                # The L2 names the vault (uniqueResourceName): kept, it must not block a retry.
                removal_policy=_cdk_values.retained(removal),
            )
            """The vault the backup plan writes to."""
            emptier = (
                _vault_emptier(self, self.backup_vault)
                if backup_vault is None and removal == cdk.RemovalPolicy.DESTROY
                else None
            )
            self.backup_plan: backup.BackupPlan = backup.BackupPlan(
                self,
                "BackupPlan",
                # The L2 names the plan after its construct id ("BackupPlan"); plan names must be
                # unique in an account and Region, so two stores would collide.
                backup_plan_name=cdk.Names.unique_resource_name(self, max_length=50, separator="-"),
                backup_vault=self.backup_vault,
                backup_plan_rules=[
                    backup.BackupPlanRule(
                        rule_name="Checkpoints",
                        schedule_expression=backup_schedule or events.Schedule.cron(minute="0", hour="5"),
                        delete_after=cdk.Duration.days(retention_days),
                    )
                ],
            )
            """The daily backup plan of the file system."""
            if emptier is not None:
                # Deleted before the emptier runs, so no backup job starts while it empties the vault.
                self.backup_plan.node.add_dependency(emptier)
            selection = self.backup_plan.add_selection(
                "FileSystem", resources=[backup.BackupResource.from_efs_file_system(file_system)]
            )
            role = selection.node.try_find_child("Role")
            if role is not None:
                acknowledge(
                    role,
                    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AWSBackupServiceRolePolicyForBackup]",
                    "AWS Backup's own service-role policy, maintained by AWS as the service's "
                    "calls change; a hand-written copy would silently break backups.",
                )

            if self.checkpoint_estimate is not None and self.checkpoint_estimate.exceeds(budget_seconds):
                cdk.Annotations.of(self).add_warning_v2(
                    SAVE_TIME_WARNING_ID, self.checkpoint_estimate.advice(budget_seconds)
                )
            _manifest.record_checkpoints(
                self,
                one_zone=one_zone,
                model_parameters=None if model_parameters is None else int(model_parameters),
                writers=writers,
                master_weights_in_checkpoint=master_weights_in_checkpoint,
            )

    @property
    def file_system(self) -> efs.FileSystem:
        """The EFS file system."""
        return cast(efs.FileSystem, self._file_system)

    @property
    def access_point(self) -> efs.AccessPoint:
        """The access point every client mounts through (rooted at ``/checkpoints``)."""
        return cast(efs.AccessPoint, self._access_point)

    @staticmethod
    def from_checkpoint_store_attributes(
        scope: Construct,
        id: str,
        *,
        file_system_id: str,
        access_point_id: str,
        security_group_id: str,
        availability_zone: str | None = None,
        mount_path: str = CHECKPOINT_PATH,
    ) -> ICheckpointStore:
        """A store built elsewhere (another stack or app), for clusters, jobs and instances to mount.

        The minimal attributes are the three ids: the file system, its access point (the store's
        ``access_point_id``) and the mount targets' security group. On the import ``connections``
        (NFS into that group), ``grant_read`` / ``grant_read_write`` (IAM on the file system,
        conditioned on the access point; the store's file system policy already requires TLS and
        IAM), ``batch_volume``, ``mount_commands`` and every ``metric_*()`` work as on the store
        itself. It creates no resource: nothing changes on the file system, and its key, backups
        and estimate stay with the stack that built it.

        :param scope: the scope of the import.
        :param id: its construct id.
        :param file_system_id: e.g. ``fs-0123456789abcdef0`` (the store's ``file_system_id``), or a
            token such as ``Fn.import_value(...)``.
        :param access_point_id: e.g. ``fsap-0123456789abcdef0`` (the store's ``access_point_id``).
        :param security_group_id: the mount targets' group, e.g. ``sg-0123456789abcdef0``.
        :param availability_zone: the AZ name of a One Zone file system, so a training cluster can
            check it runs in the same AZ. Default: None (Regional, or not checked).
        :param mount_path: where clients mount it. Default: ``/checkpoints``.
        """
        return _ImportedCheckpointStore(
            scope,
            id,
            file_system_id=file_system_id,
            access_point_id=access_point_id,
            security_group_id=security_group_id,
            availability_zone=availability_zone,
            mount_path=mount_path,
        )


class _ImportedCheckpointStore(_CheckpointStoreBase):
    """An existing store, known by its ids (see :meth:`CheckpointStore.from_checkpoint_store_attributes`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        file_system_id: str,
        access_point_id: str,
        security_group_id: str,
        availability_zone: str | None,
        mount_path: str,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            _cdk_values.identifier(
                "file_system_id",
                file_system_id,
                validation.EFS_FILE_SYSTEM_ID,
                "an EFS id such as fs-0123456789abcdef0",
            )
            _cdk_values.identifier(
                "access_point_id",
                access_point_id,
                validation.EFS_ACCESS_POINT_ID,
                "an EFS access point id such as fsap-0123456789abcdef0",
            )
            _cdk_values.identifier(
                "security_group_id",
                security_group_id,
                validation.SECURITY_GROUP_ID,
                "a security group id such as sg-0123456789abcdef0",
            )
            if availability_zone is not None and not isinstance(availability_zone, str):
                raise NeuronConfigError("availability_zone", availability_zone, "give an AZ name or None")
            self._mount_path = _mount_point("mount_path", mount_path)
            self._availability_zone = availability_zone
            security_group = ec2.SecurityGroup.from_security_group_id(
                self, "SecurityGroup", security_group_id, allow_all_outbound=False
            )
            self._file_system = efs.FileSystem.from_file_system_attributes(
                self, "FileSystem", file_system_id=file_system_id, security_group=security_group
            )
            self._access_point = efs.AccessPoint.from_access_point_attributes(
                self, "AccessPoint", access_point_id=access_point_id, file_system=self._file_system
            )


def _vault_emptier(scope: Construct, vault: backup.IBackupVault) -> cdk.CustomResource:
    """A custom resource that deletes the vault's recovery points when the stack deletes the vault."""
    handler = handler_function(
        Construct(scope, "VaultEmptier"),
        handler="vault_emptier.handler",
        description="cdk-neuron: empty the checkpoint backup vault before its stack deletes it",
        statements=[
            (
                iam.PolicyStatement(
                    sid="ListRecoveryPoints",
                    actions=["backup:ListRecoveryPointsByBackupVault"],
                    resources=[vault.backup_vault_arn],
                ),
                "",
            ),
            (
                iam.PolicyStatement(
                    sid="DeleteRecoveryPoints",
                    actions=["backup:DeleteRecoveryPoint"],
                    resources=[
                        cdk.Stack.of(scope).format_arn(
                            service="backup",
                            resource="recovery-point",
                            resource_name="*",
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    ],
                ),
                "Recovery points are an IAM resource type of their own, with generated ids and no vault name in "
                "their ARN; the function deletes only those ListRecoveryPointsByBackupVault returns for this vault",
            ),
        ],
        # Deleting recovery points takes minutes; the function waits up to 13 of Lambda's 15.
        timeout=cdk.Duration.minutes(15),
        removal_policy=cdk.RemovalPolicy.DESTROY,
        outside_vpc_reason="It calls only the AWS Backup API and touches nothing in the VPC",
    )
    cfn_vault = vault.node.default_child
    assert isinstance(cfn_vault, cdk.CfnResource)
    return handler.resource(
        scope,
        "VaultEmptied",
        resource_type="Custom::CdkNeuronVaultEmptier",
        properties={"BackupVaultName": vault.backup_vault_name},
        empties=[cfn_vault],
    )


def _connectable(candidate: object) -> ec2.IConnectable | None:
    connections = getattr(candidate, "connections", None)
    return candidate if isinstance(connections, ec2.Connections) else None  # type: ignore[return-value]


def is_checkpoint_store(value: object) -> bool:
    """Whether ``value`` is a :class:`CheckpointStore` or an imported one."""
    return isinstance(value, _CheckpointStoreBase)


if TYPE_CHECKING:  # mypy proves both meet the interface
    _BUILT: type[ICheckpointStore] = CheckpointStore
    _IMPORTED: type[ICheckpointStore] = _ImportedCheckpointStore

__all__ = [
    "CHECKPOINT_PATH",
    "SAVE_TIME_WARNING_ID",
    "STORAGE_CLASSES",
    "CheckpointStore",
    "ICheckpointStore",
    "StorageClass",
    "is_checkpoint_store",
]
