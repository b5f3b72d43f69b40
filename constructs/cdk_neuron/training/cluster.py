"""TrainingCluster: a Trainium cluster with EFA on every network card, in a cluster placement group."""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_neuron.catalog import ECS_NEURON_AMI_PARAMETER, EfaLayout, NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.iam_statements import node_metrics_policy
from cdk_neuron.monitoring.node_metrics import NodeMetrics
from cdk_neuron.node_programs import render_boot_script, render_settings
from cdk_neuron.node_programs.bundle import (
    bundle_location,
    grant_bundle_read,
    limit_user_data_size,
    node_bundle,
)
from cdk_neuron.planner import TrainingPlan, plan_training
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import acknowledgments, batch_engine, node_setup, security, validation
from cdk_neuron.training.asg_engine import build_auto_scaling_group
from cdk_neuron.training.capacity import Capacity
from cdk_neuron.training.efa_installer import EfaInstaller
from cdk_neuron.training.efa_mirror_construct import EfaInstallerMirror
from cdk_neuron.training.engine import Engine
from cdk_neuron.training.launch_template import build_launch_template
from cdk_neuron.training.launcher import (
    DEFAULT_TRAINING_COMMAND,
    SCRATCH_DIR,
    job_environment,
    node_environment,
    training_command,
)

OFFERING_WARNING_ID = "@cdk-neuron/training:offeringUnknown"
DEFAULT_ROOT_VOLUME_SIZE = cdk.Size.gibibytes(512)
DEFAULT_JOB_TIMEOUT = cdk.Duration.days(7)
DEFAULT_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
DEFAULT_RETRY_ATTEMPTS = 3
DEFAULT_SHARED_MEMORY_SIZE = cdk.Size.gibibytes(64)
# cloud-init MIME types: a boothook runs early in every boot; a shell script once, at the end
# ("User data formats", cloud-init documentation).
BOOTHOOK_CONTENT_TYPE = 'text/cloud-boothook; charset="utf-8"'
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="utf-8"'


@jsii.implements(ec2.IConnectable)
class TrainingCluster(Construct):
    """A Trn1 / Trn1n / Trn2 training cluster you deploy and then submit distributed jobs to.

    Every node is a whole instance in one AZ, with one EFA interface on each network card (from the
    catalog: 8 on trn1.32xlarge, 16 on trn1n.32xlarge and trn2.48xlarge), in a cluster placement
    group, booted from the ECS-optimized AL2023 Neuron AMI (Neuron driver and tools), with IMDSv2
    only, an encrypted gp3 root volume, no public IP and no SSH (Session Manager instead). That AMI
    has no EFA software, so a cloud-boothook installs a pinned, checksum-verified EFA installer
    (``efa_installer``, mirrored into a cluster bucket by :class:`EfaInstallerMirror`) before the ECS
    agent starts. Local NVMe instance store is striped into ``/scratch`` on each node.

    With ``Engine.batch()`` (default) the cluster is an AWS Batch multi-node parallel setup that
    costs nothing while idle: ``job_queue`` and ``job_definition`` are ready for
    ``aws batch submit-job --job-queue <queue> --job-definition <definition>
    --parameters training_command='torchrun $TORCHRUN_ARGS train.py'``. Each node runs a launcher
    (:mod:`cdk_neuron.training.launcher`) that sets ``MASTER_ADDR``, ``NEURON_RT_ROOT_COMM_ID``,
    ``NODE_RANK``, ``WORLD_SIZE``, the plan's TP/PP/DP degrees and ``TORCHRUN_ARGS`` correctly on the
    main node and on child nodes. With ``Engine.auto_scaling_group()`` it is a node group for Ray,
    Slurm or your own launcher: ``auto_scaling_group``, with the checkpoint store mounted on every node
    and the same environment exported in ``/etc/profile.d``.

    Args:
        vpc: the VPC of the nodes.
        instance_type: a Trainium type from the catalog, e.g. ``"trn1.32xlarge"``.
        max_nodes: the most nodes the cluster runs at once (the compute environment's or group's
            maximum). Must be at least the plan's nodes.
        plan: the distributed layout (a :func:`~cdk_neuron.plan_training` result). Default: TP across
            one node's NeuronCores, data parallel across ``max_nodes`` nodes. The job definition
            runs ``plan.nodes`` nodes and exports its degrees.
        vpc_subnets: where the nodes run; must be private and in ONE AZ (EFA and the placement
            group need it). Default: the VPC's private-with-egress subnets (else its isolated ones),
            refused if they span several AZs: then select the AZ explicitly.
        availability_zone_id: the AZ ID the subnets are in, e.g. ``"use1-az6"``. When given, it is
            checked against the catalog's offerings snapshot and an AZ that does not offer
            ``instance_type`` is refused. Default None (not checked; AZ names differ per account).
        checkpoints: a :class:`~cdk_neuron.storage.CheckpointStore`, mounted read-write at its
            ``mount_path`` (``/checkpoints``) on every node, with TLS and IAM, through its access point;
            ``CHECKPOINT_DIR`` points there. Default None (no shared file system).
        compile_cache: a :class:`~cdk_neuron.storage.CompileCache`; ``NEURON_COMPILE_CACHE_URL``
            points at it and the nodes may read and write it. Default None (each node compiles into
            its own local cache).
        capacity: on-demand, a capacity reservation or a Capacity Block. Default ``Capacity.on_demand()``.
        placement_group: create a cluster placement group. Default None: yes, except with a Capacity
            Block, whose instances AWS places in its UltraCluster itself (a forced placement group
            there makes launches fail for lack of capacity), and with a reservation made in an
            existing placement group (``Capacity.reservation(id, placement_group_name=...)``), whose
            group the nodes launch into instead. True with a Capacity Block, and True or False with
            a reservation's placement group, are refused.
        machine_image: the nodes' AMI. Default the ECS-optimized AL2023 Neuron AMI through its SSM
            parameter (``catalog.ECS_NEURON_AMI_PARAMETER``), resolved at every deployment: a new AMI
            rolls out as a new launch template version. Pin an image for long runs if you want none.
            With Batch it must be an ECS-optimized AL2023 image (Batch is told ``ECS_AL2023``).
        job_image: the training container image (Batch only, required there): an
            ``ecs.ContainerImage`` or an image URI; an ECR URI is granted pull access. Default None.
        engine: ``Engine.batch()`` (default) or ``Engine.auto_scaling_group()``.
        efa_layout: how EFA interfaces are laid out on the cards. Default ``EfaLayout.ALL_EFA`` (the
            layout of the Neuron docs and samples).
        root_volume_size: the gp3 root volume (Docker images live there). Default 512 GiB.
        kms_key: customer-managed key for the root volumes and the job logs. Default: a new key with
            rotation, retained on stack deletion. A key you bring must allow EC2 Auto Scaling's
            service-linked role to use it (see ``security.allow_instance_launches``).
        training_command: the default command of the job definition's ``training_command`` parameter
            (override per job at submission). Default ``"torchrun $TORCHRUN_ARGS train.py"``.
        environment: extra container environment for the jobs (Batch) or the node profile (group);
            overrides the cluster's values. Default none.
        job_timeout: per-attempt limit after which Batch stops a job, so a hung collective cannot run
            up a bill forever. Default 7 days.
        log_retention: retention of the job log group. Default three months.
        retry_attempts: attempts per job (1-10); only infrastructure failures are retried. Default 3.
        shared_memory_size: ``/dev/shm`` of the job container (data loader workers). Default 64 GiB.

    Attributes:
        plan, instance: the validated plan and the catalog entry of ``instance_type``.
        job_queue, job_definition, job_definitions, compute_environment: the Batch resources
            (``job_queue`` and ``job_definition`` raise NeuronConfigError with the group engine).
        job_role: the jobs' role (checkpoints, compile cache); execution_role: image pulls and logs;
            log_group: the jobs' logs (Batch engine; None with the group engine).
        auto_scaling_group: the node group (group engine only; raises with Batch).
        launch_template, user_data, machine_image, placement_group (created, or the reservation's
            existing group; None for Capacity Blocks or when disabled), security_group, connections,
            role (the instance role), kms_key.
        availability_zone: the AZ name of the subnets when known at synthesis, else None.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str,
        max_nodes: int,
        plan: TrainingPlan | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        availability_zone_id: str | None = None,
        checkpoints: CheckpointStore | None = None,
        compile_cache: CompileCache | None = None,
        capacity: Capacity | None = None,
        placement_group: bool | None = None,
        machine_image: ec2.IMachineImage | None = None,
        job_image: ecs.ContainerImage | str | None = None,
        engine: Engine | None = None,
        efa_layout: EfaLayout = EfaLayout.ALL_EFA,
        root_volume_size: cdk.Size = DEFAULT_ROOT_VOLUME_SIZE,
        kms_key: kms.IKey | None = None,
        training_command: str = DEFAULT_TRAINING_COMMAND,
        environment: dict[str, str] | None = None,
        job_timeout: cdk.Duration = DEFAULT_JOB_TIMEOUT,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        shared_memory_size: cdk.Size = DEFAULT_SHARED_MEMORY_SIZE,
        efa_installer: EfaInstaller | None = None,
        vpc_default_security_group_id: str | None = None,
        node_metrics: NodeMetrics | None = None,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        capacity = Capacity.on_demand() if capacity is None else capacity
        engine = Engine.batch() if engine is None else engine

        # -- validation: every prop, before the first resource ------------------------------------
        max_nodes = validation.whole_number("max_nodes", max_nodes)
        instance = validation.training_instance(instance_type, max_nodes)
        self.plan: TrainingPlan = validation.checked_plan(instance, max_nodes, plan)
        if not isinstance(capacity, Capacity):
            raise NeuronConfigError("capacity", capacity, "use Capacity.on_demand(), .reservation(...), ...")
        capacity.check_instance(instance)
        if not isinstance(engine, Engine):
            raise NeuronConfigError("engine", engine, "use Engine.batch() or Engine.auto_scaling_group()")
        use_placement_group = validation.placement_group_wanted(placement_group, capacity)
        validation.efa_layout_leaves_room_for_tasks(instance, efa_layout, engine.is_batch)
        root_gib = validation.root_volume_gib(root_volume_size)
        validation.job_timeout("job_timeout", job_timeout)
        validation.retry_attempts("retry_attempts", retry_attempts)
        if not isinstance(shared_memory_size, cdk.Size):
            raise NeuronConfigError("shared_memory_size", shared_memory_size, "use aws_cdk.Size.gibibytes(n)")
        training_command = _training_command(training_command)
        if checkpoints is not None and not isinstance(checkpoints, CheckpointStore):
            raise NeuronConfigError("checkpoints", checkpoints, "give a cdk_neuron.CheckpointStore")
        if compile_cache is not None and not isinstance(compile_cache, CompileCache):
            raise NeuronConfigError("compile_cache", compile_cache, "give a cdk_neuron.CompileCache")
        offering_warning = validation.availability_zone_id(instance, availability_zone_id, stack)
        subnets = validation.single_az_subnets(vpc, vpc_subnets)
        validation.checkpoints_reachable(checkpoints, subnets)
        # Validates the extra environment's names and values.
        job_environment(
            instance,
            self.plan,
            compile_cache_url=compile_cache.url if compile_cache else None,
            checkpoint_dir=checkpoints.mount_path if checkpoints else None,
            extra=environment,
        )
        if not engine.is_batch and job_image is not None:
            raise NeuronConfigError(
                "job_image",
                job_image,
                "Engine.auto_scaling_group() runs no job containers; leave job_image unset",
            )
        image = batch_engine.job_image(self, job_image) if engine.is_batch else None
        efa_installer = EfaInstaller.pinned() if efa_installer is None else efa_installer
        if not isinstance(efa_installer, EfaInstaller):
            raise NeuronConfigError(
                "efa_installer",
                efa_installer,
                "use EfaInstaller.pinned() or EfaInstaller.of(version, sha256)",
            )
        if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
            raise NeuronConfigError(
                "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
            )
        task_security_group_id = (
            validation.task_security_group_id(vpc, vpc_default_security_group_id)
            if engine.is_batch and instance.supports_efa
            else None
        )

        self.instance: NeuronInstance = instance
        self.max_nodes = max_nodes
        self.capacity = capacity
        self.engine = engine
        self.availability_zone_id = availability_zone_id
        self.availability_zone: str | None = subnets.availability_zone
        self.checkpoints = checkpoints
        self.compile_cache = compile_cache
        self._training_command = training_command
        self._extra_environment = dict(environment or {})
        if offering_warning is not None:
            cdk.Annotations.of(self).add_warning_v2(OFFERING_WARNING_ID, offering_warning)

        # -- shared infrastructure ----------------------------------------------------------------
        self.kms_key: kms.IKey = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron training cluster {self.node.path}: root volumes and job logs",
            enable_key_rotation=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        security.allow_instance_launches(self.kms_key)
        self.security_group = security.node_security_group(self, "SecurityGroup", vpc)
        acknowledgments.efa_self_ingress(self.security_group)
        self._connections = ec2.Connections(security_groups=[self.security_group])
        self.role = security.node_role(self, "NodeRole", ecs_agent=engine.is_batch)
        self.placement_group: ec2.IPlacementGroup | None = None
        if capacity.placement_group_name is not None:  # the reservation's own group
            self.placement_group = ec2.PlacementGroup.from_placement_group_name(
                self, "PlacementGroup", capacity.placement_group_name
            )
        elif use_placement_group:
            self.placement_group = ec2.PlacementGroup(
                self, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER
            )
        self.machine_image = machine_image or ec2.MachineImage.from_ssm_parameter(
            ECS_NEURON_AMI_PARAMETER, os=ec2.OperatingSystemType.LINUX
        )
        self.node_metrics = node_metrics
        # Node programs (cdk_neuron/node_programs/files/training) and, with EFA, the pinned installer.
        self._bundle = node_bundle(self)
        grant_bundle_read(self._bundle, self.role)
        self.efa_installer_mirror: EfaInstallerMirror | None = None
        if instance.supports_efa:
            security.allow_log_encryption(self.kms_key)
            self.efa_installer_mirror = EfaInstallerMirror(
                self, "EfaInstaller", installer=efa_installer, key=self.kms_key
            )
            self.efa_installer_mirror.grant_read(self.role)
        if node_metrics is not None:
            node_metrics_policy(self, "NodeMetricsPolicy", role=self.role, namespace=node_metrics.namespace)
        acknowledgments.grant_policies(self.role)
        self.user_data: ec2.MultipartUserData = self._user_data(node_environment_extra=environment)
        self.launch_template = build_launch_template(
            self,
            "LaunchTemplate",
            instance=instance,
            machine_image=self.machine_image,
            security_group=self.security_group,
            kms_key=self.kms_key,
            root_volume_size=cdk.Size.gibibytes(root_gib),
            efa_layout=efa_layout,
            capacity=capacity,
            user_data=self.user_data,
            # Batch launches with the compute environment's instance profile (its instance_role).
            role=None if engine.is_batch else self.role,
        )
        limit_user_data_size(self.launch_template, self.user_data)
        self._task_security_group_id = task_security_group_id

        self._job_queue: batch.JobQueue | None = None
        self._job_definition: batch.MultiNodeJobDefinition | None = None
        self._job_definitions: list[batch.MultiNodeJobDefinition] = []
        self._submitters: list[iam.IGrantable] = []
        self._job_settings: batch_engine.JobSettings | None = None
        self._auto_scaling_group: autoscaling.AutoScalingGroup | None = None
        self.compute_environment: batch.ManagedEc2EcsComputeEnvironment | None = None
        self.task_security_group: ec2.ISecurityGroup | None = None
        self.job_role: iam.Role | None = None
        self.execution_role: iam.Role | None = None
        self.log_group: logs.LogGroup | None = None

        if engine.is_batch:
            assert image is not None
            self._build_batch(
                vpc, subnets, image, job_timeout, log_retention, retry_attempts, shared_memory_size
            )
        else:
            self._auto_scaling_group = build_auto_scaling_group(
                self,
                vpc=vpc,
                subnets=subnets.selection(),
                launch_template=self.launch_template,
                placement_group=self.placement_group,
                max_nodes=max_nodes,
                engine=engine,
            )
            if self.efa_installer_mirror is not None:
                self._auto_scaling_group.node.add_dependency(self.efa_installer_mirror.ready)
            if checkpoints is not None:
                checkpoints.grant_read_write(self.role, peer=self)
            if compile_cache is not None:
                compile_cache.grant_read_write(self.role)
                acknowledgments.compile_cache_prefix(self.role, compile_cache)

    # -- engines -----------------------------------------------------------------------------------

    def _build_batch(
        self,
        vpc: ec2.IVpc,
        subnets: validation.SingleAzSubnets,
        image: ecs.ContainerImage,
        job_timeout: cdk.Duration,
        log_retention: logs.RetentionDays,
        retry_attempts: int,
        shared_memory_size: cdk.Size,
    ) -> None:
        self.compute_environment = batch_engine.build_compute_environment(
            self,
            vpc=vpc,
            subnets=subnets.selection(),
            instance=self.instance,
            max_nodes=self.max_nodes,
            launch_template=self.launch_template,
            machine_image=self.machine_image,
            role=self.role,
            security_group=self.security_group,
            placement_group=self.placement_group,
            engine=self.engine,
            security_groups_in_launch_template=self.instance.supports_efa,
        )
        if self.efa_installer_mirror is not None:
            # No node may boot before its EFA installer is in the bucket.
            self.compute_environment.node.add_dependency(self.efa_installer_mirror.ready)
        if self._task_security_group_id is not None:
            self.task_security_group = security.open_task_security_group(
                self, "TaskSecurityGroup", self._task_security_group_id
            )
            self._connections.add_security_group(self.task_security_group)
        self._job_queue = batch_engine.build_job_queue(self, self.compute_environment)
        tasks = iam.ServicePrincipal("ecs-tasks.amazonaws.com")
        self.job_role = iam.Role(
            self,
            "JobRole",
            assumed_by=tasks,
            description="cdk-neuron training jobs: checkpoints and compile cache",
        )
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=tasks,
            description="cdk-neuron training jobs: image pull and logs",
        )
        security.allow_log_encryption(self.kms_key)
        self.log_group = logs.LogGroup(
            self,
            "JobLogs",
            retention=log_retention,
            encryption_key=self.kms_key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        volumes: list[batch.EcsVolume] = []
        if self.checkpoints is not None:
            # Identity grant to the job role (the Batch volume mounts with it); NFS from the nodes.
            self.checkpoints.grant_read_write(self.job_role, peer=self)
            volumes.append(self.checkpoints.batch_volume(container_path=self.checkpoints.mount_path))
        if self.compile_cache is not None:
            self.compile_cache.grant_read_write(self.job_role)
            acknowledgments.compile_cache_prefix(self.job_role, self.compile_cache)
        for role in (self.job_role, self.execution_role):
            acknowledgments.grant_policies(role)
        self._job_settings = batch_engine.JobSettings(
            instance=self.instance,
            image=image,
            execution_role=self.execution_role,
            job_role=self.job_role,
            log_group=self.log_group,
            volumes=volumes,
            shared_memory_size=shared_memory_size,
            timeout=job_timeout,
            retry_attempts=retry_attempts,
        )
        self._job_definition = self.add_job_definition(
            "JobDefinition", training_command=self._training_command
        )

    def _user_data(self, *, node_environment_extra: dict[str, str] | None) -> ec2.MultipartUserData:
        """MIME multipart user data (Batch merges its own part into it; it refuses plain scripts).

        With EFA, a cloud-boothook part installs the pinned EFA software early in every boot, before
        the ECS agent can start (``training/efa-install.sh``); a shell part then sets up the node
        (``training/node-setup.sh``). Both carry only settings and the bootstrap: the programs are
        in the node-program bundle. A failure in either powers the node off to be replaced.
        """
        instance, engine = self.instance, self.engine
        settings: dict[str, str | int | None] = {"ENGINE": engine.kind}
        if instance.nvme_gb > 0:
            settings["SCRATCH_DIR"] = SCRATCH_DIR
        mirror = self.efa_installer_mirror
        if mirror is not None:
            settings.update(
                {
                    "REGION": cdk.Stack.of(self).region,
                    "EFA_INSTALLER_VERSION": mirror.installer.version,
                    "EFA_INSTALLER_SHA256": mirror.installer.sha256,
                    "EFA_INSTALLER_BUCKET": mirror.bucket.bucket_name,
                    "EFA_INSTALLER_KEY": mirror.object_key,
                    "EFA_DEVICES": instance.efa_interfaces,
                }
            )
        files: dict[str, str] = {}
        if not engine.is_batch:
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
                instance,
                self.plan,
                compile_cache_url=self.compile_cache.url if self.compile_cache else None,
                checkpoint_dir=self.checkpoints.mount_path if self.checkpoints else None,
            )
            profile.update(node_environment_extra or {})
            files["training-profile.env"] = render_settings(profile)
        files["training.env"] = render_settings(settings)
        if self.node_metrics is not None:
            files.update(self.node_metrics.settings_files(workload="training", instance_type=instance.name))

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

    # -- attributes --------------------------------------------------------------------------------

    @property
    def connections(self) -> ec2.Connections:
        """The nodes' security group, e.g. ``store.connections.allow_default_port_from(cluster)``."""
        return self._connections

    @property
    def job_queue(self) -> batch.JobQueue:
        """The Batch job queue (``Engine.batch()`` only)."""
        if self._job_queue is None:
            raise NeuronConfigError("engine", self.engine.kind, "job_queue exists only with Engine.batch()")
        return self._job_queue

    @property
    def job_definition(self) -> batch.MultiNodeJobDefinition:
        """The default multi-node job definition (``Engine.batch()`` only)."""
        if self._job_definition is None:
            raise NeuronConfigError(
                "engine", self.engine.kind, "job_definition exists only with Engine.batch()"
            )
        return self._job_definition

    @property
    def job_definitions(self) -> list[batch.MultiNodeJobDefinition]:
        """Every job definition of the cluster, the default first."""
        return list(self._job_definitions)

    @property
    def auto_scaling_group(self) -> autoscaling.AutoScalingGroup:
        """The node group (``Engine.auto_scaling_group()`` only)."""
        if self._auto_scaling_group is None:
            raise NeuronConfigError(
                "engine", self.engine.kind, "auto_scaling_group exists only with Engine.auto_scaling_group()"
            )
        return self._auto_scaling_group

    # -- methods -----------------------------------------------------------------------------------

    def add_job_definition(
        self,
        id: str,
        *,
        training_command: str,
        nodes: int | None = None,
        plan: TrainingPlan | None = None,
        image: ecs.ContainerImage | str | None = None,
        environment: dict[str, str] | None = None,
        timeout: cdk.Duration | None = None,
        retry_attempts: int | None = None,
    ) -> batch.MultiNodeJobDefinition:
        """Another multi-node job definition on this cluster, with the same devices, volumes and roles.

        Principals already given ``grant_submit_jobs`` may submit with it too.

        Args:
            id: construct id of the job definition.
            training_command: the default of its ``training_command`` parameter.
            nodes: nodes per job; the cluster plan's TP/PP/LNC are re-planned for it. Default: the
                cluster plan's nodes.
            plan: a whole plan instead of ``nodes`` (same instance type, at most ``max_nodes``).
            image: container image. Default: the cluster's ``job_image``.
            environment: extra environment, merged over the cluster's. Default none.
            timeout: per-attempt timeout. Default: the cluster's ``job_timeout``.
            retry_attempts: attempts (1-10). Default: the cluster's ``retry_attempts``.
        """
        settings = self._job_settings
        if settings is None:
            raise NeuronConfigError(
                "engine", self.engine.kind, "job definitions exist only with Engine.batch()"
            )
        if nodes is not None and plan is not None:
            raise NeuronConfigError("nodes", nodes, "give nodes or plan, not both")
        if nodes is not None:
            nodes = validation.whole_number("nodes", nodes)
            plan = plan_training(
                self.instance.name,
                nodes,
                self.plan.tensor_parallel,
                self.plan.pipeline_parallel,
                self.plan.logical_nc_config,
                allow_unlisted_tp=self.plan.allow_unlisted_tp,
            )
        job_plan = validation.checked_plan(self.instance, self.max_nodes, plan or self.plan)
        if timeout is not None:
            validation.job_timeout("timeout", timeout)
        if retry_attempts is not None:
            validation.retry_attempts("retry_attempts", retry_attempts)
        env = job_environment(
            self.instance,
            job_plan,
            compile_cache_url=self.compile_cache.url if self.compile_cache else None,
            checkpoint_dir=self.checkpoints.mount_path if self.checkpoints else None,
            extra={**self._extra_environment, **(environment or {})},
        )
        command = _training_command(training_command)
        container_image = settings.image if image is None else _image_for(self, id, image)
        definition = batch_engine.build_job_definition(
            self,
            id,
            settings=settings,
            plan=job_plan,
            environment=env,
            training_command=command,
            image=container_image,
            timeout=timeout,
            retry_attempts=retry_attempts,
        )
        if isinstance(container_image, ecs.EcrImage):
            acknowledgments.ecr_authorization_token(settings.execution_role)
        self._job_definitions.append(definition)
        for grantee in self._submitters:
            iam.Grant.add_to_principal(
                grantee=grantee, actions=["batch:SubmitJob"], resource_arns=[definition.job_definition_arn]
            )
        return definition

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` submit jobs to the queue with the cluster's job definitions and follow them.

        ``batch:SubmitJob`` on the queue and on the current revision of each job definition (the only
        active one: an update deregisters the previous revision; submitting by name resolves to it).
        ``batch:DescribeJobs`` and ``batch:ListJobs`` support no resource-level permissions, so they
        are granted on ``*``: cdk-nag reports ``AwsSolutions-IAM5[Resource::*]`` on the grantee's
        policy, for its owner to acknowledge. No ``iam:PassRole`` is needed: the job role is
        registered with the job definition and a submission cannot replace it.
        """
        queue = self.job_queue
        # Each definition's ARN carries its current revision: the only active one, because updates
        # deregister the previous revision. Submitting by name resolves to it; no wildcard needed.
        submit = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["batch:SubmitJob"],
            resource_arns=[queue.job_queue_arn, *(d.job_definition_arn for d in self._job_definitions)],
        )
        # Job definitions added later are granted to the same principals (add_job_definition).
        self._submitters.append(grantee)
        follow = iam.Grant.add_to_principal(
            grantee=grantee, actions=["batch:DescribeJobs", "batch:ListJobs"], resource_arns=["*"]
        )
        return submit.combine(follow)


def _training_command(value: object) -> str:
    return training_command("training_command", value)


def _image_for(scope: Construct, id: str, image: ecs.ContainerImage | str) -> ecs.ContainerImage:
    if isinstance(image, str):
        return batch_engine.job_image(Construct(scope, f"{id}Image"), image)
    return batch_engine.job_image(scope, image)


__all__ = ["OFFERING_WARNING_ID", "TrainingCluster"]
