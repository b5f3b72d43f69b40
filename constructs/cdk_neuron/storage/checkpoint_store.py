"""CheckpointStore: an encrypted, backed-up EFS file system for training checkpoints."""

from __future__ import annotations

import re
from typing import cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_backup as backup
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_efs as efs
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron.checkpoint_advisor import CheckpointEstimate, estimate_checkpoint
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.storage import _props
from cdk_neuron.storage.file_system_policy import (
    READ_ACTIONS,
    READ_WRITE_ACTIONS,
    checkpoint_file_system_policy,
    client_grant_conditions,
)
from cdk_neuron.storage.placement import resolve_placement

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
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/-]*$")


def _mount_point(field: str, value: str) -> str:
    if not isinstance(value, str) or not _SAFE_PATH.fullmatch(value) or value == "/" or "//" in value:
        raise NeuronConfigError(field, value, "use an absolute directory such as '/checkpoints'")
    return value


@jsii.implements(ec2.IConnectable)
class CheckpointStore(Construct):
    """Amazon EFS for training checkpoints: KMS-encrypted, TLS + IAM only, backed up, retained.

    Elastic throughput, General Purpose mode. Clients reach the data only through one access point
    rooted at ``/checkpoints`` with a fixed POSIX user, only with TLS and IAM authorization, and only
    after ``grant_read`` / ``grant_read_write``; NFS (TCP 2049) is open only from the peers named in
    those grants (or added to ``connections``).

    For AWS Batch: ``store.grant_read_write(job_role, peer=compute_environment)`` and add
    ``store.batch_volume()`` to the container. For EC2 user data: grant the instance role and run
    ``store.mount_commands()``.

    Args:
        vpc: the VPC of the mount targets.
        subnets: mount-target subnets, at most one per AZ (an EFS rule). With ``one_zone=True``
            they must be in exactly one AZ, which becomes the file system's AZ: select the training
            cluster's subnet, in a VPC whose AZ names are pinned (mapped from AZ IDs).
        one_zone: EFS One Zone: cheaper storage, one AZ, 1 GiBps write and 500 MiBps per client.
            Default False (Regional).
        availability_zone: the One Zone file system's AZ *name*, when the subnets' names are not
            real names: in a VPC pinned by AZ ID (subnets with ``AvailabilityZoneId``), pass the
            pinned subnet's ``Fn::GetAtt AvailabilityZone`` so CloudFormation supplies the name your
            account maps to that AZ ID. Default: the selected subnets' AZ name. Only with
            ``one_zone=True``.
        removal_policy: for the file system and the key the store creates. Default RETAIN.
            ``DESTROY`` is for throw-away dev stacks; the backup vault is always retained because
            CloudFormation cannot delete a vault that holds recovery points.
        kms_key: customer-managed key for the file system and the backup vault.
            Default: a new key with yearly rotation.
        security_group: for the mount targets. Default: a new group with no ingress and no egress
            (NFS servers never open connections).
        infrequent_access_after_days: move files to EFS Infrequent Access after this many days
            without access (1, 7, 14, 30, 60, 90, 180, 270 or 365); None keeps everything in Standard.
            Default 30: older checkpoints are rarely read again, and resuming from one is a single read.
        backup_retention: how long AWS Backup keeps each recovery point (whole days). Default 35 days.
        backup_schedule: when the backup rule runs. Default daily at 05:00 UTC.
        backup_vault: an existing (e.g. central) vault. Default: a new vault encrypted with ``kms_key``.
        posix_uid: the user every client acts as through the access point (not root). Default 1000.
        posix_gid: the group every client acts as. Default 1000.
        model_parameters: parameter count of the model that checkpoints here, e.g. ``70e9``. When
            given, ``checkpoint_estimate`` is computed and a warning is added if one save takes longer
            than ``save_time_budget``. Default None (no estimate).
        weight_bytes_per_parameter: bytes per checkpointed weight or a dtype name. Default 4.0 (fp32
            master weights).
        optimizer_bytes_per_parameter: optimizer-state bytes per parameter or an optimizer name.
            Default 8.0 (Adam's two fp32 moments).
        writers: nodes that write checkpoint shards in parallel. Default 1. The estimate assumes
            clients mount with amazon-efs-utils 2.0+ (Batch's ECS agent and ``mount_commands`` use
            it), which allows 1,500 MiBps per client on Regional Elastic file systems.
        save_time_budget: the longest acceptable save. Default 10 minutes.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        subnets: ec2.SubnetSelection,
        one_zone: bool = False,
        availability_zone: str | None = None,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
        kms_key: kms.IKey | None = None,
        security_group: ec2.ISecurityGroup | None = None,
        infrequent_access_after_days: int | None = 30,
        backup_retention: cdk.Duration = DEFAULT_BACKUP_RETENTION,
        backup_schedule: events.Schedule | None = None,
        backup_vault: backup.IBackupVault | None = None,
        posix_uid: int = 1000,
        posix_gid: int = 1000,
        model_parameters: float | None = None,
        weight_bytes_per_parameter: float | str = 4.0,
        optimizer_bytes_per_parameter: float | str = 8.0,
        writers: int = 1,
        save_time_budget: cdk.Duration = DEFAULT_SAVE_TIME_BUDGET,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)

        # Every prop is validated before the first resource exists.
        removal = _props.removal_policy("removal_policy", removal_policy)
        retention_days = _props.whole_days("backup_retention", backup_retention)
        budget_seconds = _props.positive_seconds("save_time_budget", save_time_budget)
        uid = _props.posix_id("posix_uid", posix_uid)
        gid = _props.posix_id("posix_gid", posix_gid)
        if infrequent_access_after_days is not None and infrequent_access_after_days not in _IA_AFTER_DAYS:
            raise NeuronConfigError(
                "infrequent_access_after_days",
                infrequent_access_after_days,
                f"use one of {one_of(_IA_AFTER_DAYS)} (the ages EFS supports) or None",
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
                f"give a real AZ name of the stack's Region {stack.region} (e.g. {stack.region}a) or the pinned "
                "subnet's Fn::GetAtt AvailabilityZone",
            )
        placement = resolve_placement(
            stack, vpc, subnets, one_zone=one_zone, explicit_zone=availability_zone is not None
        )
        region = None if cdk.Token.is_unresolved(stack.region) else stack.region
        self.checkpoint_estimate: CheckpointEstimate | None = (
            None
            if model_parameters is None
            else estimate_checkpoint(
                model_parameters,
                weight_bytes_per_parameter=weight_bytes_per_parameter,
                optimizer_bytes_per_parameter=optimizer_bytes_per_parameter,
                writers=writers,
                region=region,
                one_zone=one_zone,
            )
        )
        self.save_time_budget = save_time_budget
        self.mount_path = CHECKPOINT_PATH
        self.availability_zone = availability_zone or placement.availability_zone

        self.kms_key: kms.IKey = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron checkpoint store {self.node.path}: EFS data and backups",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        self.security_group: ec2.ISecurityGroup = security_group or ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="Checkpoint EFS mount targets: NFS only from granted clients",
            allow_all_outbound=False,
        )
        self.file_system = efs.FileSystem(
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
        # Escape hatch: the L2 omits BackupPolicy when automatic backups are off, and AWS turns them on
        # for One Zone file systems by default (go-to-k/cdk-real-drift#1601). The plan below is the
        # only backup, with our key and retention, not a second copy in aws/efs/automatic-backup-vault.
        cfn_file_system = cast(efs.CfnFileSystem, self.file_system.node.default_child)
        cfn_file_system.backup_policy = efs.CfnFileSystem.BackupPolicyProperty(status="DISABLED")
        if availability_zone is not None:
            # Escape hatch: the L2 names the One Zone AZ after the selected subnets, which in an
            # AZ-ID-pinned VPC carry the AZ ID, not a name.
            cfn_file_system.availability_zone_name = availability_zone

        self.access_point = efs.AccessPoint(
            self,
            "AccessPoint",
            file_system=self.file_system,
            path=CHECKPOINT_PATH,
            create_acl=efs.Acl(owner_uid=uid, owner_gid=gid, permissions="750"),
            posix_user=efs.PosixUser(uid=uid, gid=gid),
        )

        self.backup_vault: backup.IBackupVault = backup_vault or backup.BackupVault(
            self,
            "BackupVault",
            encryption_key=self.kms_key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.backup_plan = backup.BackupPlan(
            self,
            "BackupPlan",
            # The L2 names the plan after its construct id ("BackupPlan"); plan names must be unique
            # in an account and Region, so two stores would collide.
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
        selection = self.backup_plan.add_selection(
            "FileSystem", resources=[backup.BackupResource.from_efs_file_system(self.file_system)]
        )
        role = selection.node.try_find_child("Role")
        if role is not None:
            cdk.Validations.of(role).acknowledge(
                cdk.Acknowledgment(
                    id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AWSBackupServiceRolePolicyForBackup]",
                    reason="AWS Backup's own service-role policy, maintained by AWS as the service's "
                    "calls change; a hand-written copy would silently break backups.",
                )
            )

        if self.checkpoint_estimate is not None and self.checkpoint_estimate.exceeds(budget_seconds):
            cdk.Annotations.of(self).add_warning_v2(
                SAVE_TIME_WARNING_ID, self.checkpoint_estimate.advice(budget_seconds)
            )

    # -- attributes -------------------------------------------------------------------------------

    @property
    def connections(self) -> ec2.Connections:
        """NFS (TCP 2049) into the mount targets; nothing is allowed until a grant or a call here."""
        return self.file_system.connections

    @property
    def file_system_id(self) -> str:
        return self.file_system.file_system_id

    @property
    def file_system_arn(self) -> str:
        return self.file_system.file_system_arn

    @property
    def access_point_id(self) -> str:
        return self.access_point.access_point_id

    @property
    def access_point_arn(self) -> str:
        return self.access_point.access_point_arn

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
            resource_arns=[self.file_system.file_system_arn],
            resource=self.file_system,
            conditions=client_grant_conditions(self.access_point.access_point_arn),
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
        """
        if not use_job_role:
            raise NeuronConfigError(
                "use_job_role",
                use_job_role,
                "the store refuses anonymous NFS clients; mount with the job role (True) and grant it",
            )
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", name):
            raise NeuronConfigError("name", name, "use letters, digits, '-' and '_' (Batch volume names)")
        return batch.EcsVolume.efs(
            name=name,
            container_path=_mount_point("container_path", container_path),
            file_system=self.file_system,
            access_point_id=self.access_point.access_point_id,
            enable_transit_encryption=True,
            use_job_role=True,
            readonly=readonly,
        )

    def mount_commands(
        self, mount_point: str = CHECKPOINT_PATH, *, fstab: bool = True, install_client: bool = False
    ) -> list[str]:
        """Shell lines for EC2 user data: mount the access point with amazon-efs-utils (TLS + IAM).

        The instance role must be granted. ``fstab`` adds an entry (``_netdev``) so the mount survives
        a reboot; ``install_client`` installs amazon-efs-utils with dnf (Amazon Linux 2023) if absent.
        amazon-efs-utils 2.0 or later is what allows 1,500 MiBps per client on Elastic throughput.
        """
        mount_point = _mount_point("mount_point", mount_point)
        options = f"tls,iam,accesspoint={self.access_point.access_point_id}"
        source = f"{self.file_system.file_system_id}:/"
        lines = []
        if install_client:
            lines.append("command -v mount.efs >/dev/null 2>&1 || dnf install -y amazon-efs-utils")
        lines += [f"mkdir -p {mount_point}", f"mount -t efs -o {options} {source} {mount_point}"]
        if fstab:
            entry = f"{source} {mount_point} efs _netdev,{options} 0 0"
            lines.append(f"grep -qs ' {mount_point} efs ' /etc/fstab || echo '{entry}' >> /etc/fstab")
        return lines


def _connectable(candidate: object) -> ec2.IConnectable | None:
    connections = getattr(candidate, "connections", None)
    return candidate if isinstance(connections, ec2.Connections) else None  # type: ignore[return-value]
