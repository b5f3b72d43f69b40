"""BatchTrainingCluster: a Trainium cluster that runs AWS Batch multi-node parallel jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeGuard

import aws_cdk as cdk
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_neuron import _cdk_values, _manifest, timeouts, validation
from cdk_neuron._scope import reported_by
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics.node_metrics import NodeMetrics
from cdk_neuron.planner import TrainingPlan, replan_training
from cdk_neuron.training import acknowledgments, batch_engine, boot_failures, security
from cdk_neuron.training import validation as checks
from cdk_neuron.training.capacity import check_batch_capacity
from cdk_neuron.training.cluster import (
    IBatchTrainingCluster,
    NodeOptions,
    TrainingClusterBase,
    _TrainingClusterRef,
)
from cdk_neuron.training.launcher import DEFAULT_TRAINING_COMMAND, job_environment, training_command

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_JOB_TIMEOUT = cdk.Duration.seconds(timeouts.JOB_ATTEMPT_TIMEOUT)
DEFAULT_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
DEFAULT_RETRY_ATTEMPTS = 3
DEFAULT_SHARED_MEMORY_SIZE = cdk.Size.gibibytes(64)
# AWS Batch's limit for UpdatePolicy.JobExecutionTimeoutMinutes. Sources disagree: the current API
# reference ("UpdatePolicy", https://docs.aws.amazon.com/batch/latest/APIReference/API_UpdatePolicy.html,
# read 2026-12-01: "Valid Range: Minimum value of 1. Maximum value of 7200") and botocore 1.44.8's
# batch service model (JobExecutionTimeoutMinutes: min 1, max 7200) allow 7200; older and translated
# copies of the same page (e.g. docs.amazonaws.cn, fr_fr) still say 360. We accept what the current
# reference and the SDK accept.
MAX_UPDATE_TIMEOUT_MINUTES = 7200
# Six hours for running jobs to reach a checkpoint and end. An infrastructure update comes with every
# new launch-template version: a new AMI (pinned, cdk_neuron.ami), and also any change to the node
# programs or node settings (their bundle key and values are in the user data), e.g. a cdk-neuron
# upgrade. `cdk-neuron impact` shows the template change before a deploy (cdk_neuron.timeouts:
# infrastructure_update within job_attempt).
DEFAULT_UPDATE_TIMEOUT = cdk.Duration.minutes(timeouts.INFRASTRUCTURE_UPDATE_TIMEOUT // 60)


class BatchTrainingCluster(TrainingClusterBase):
    """A Trainium (Trn1, Trn1n, Trn2, Trn3) cluster that runs AWS Batch multi-node parallel jobs, and costs nothing idle.

    A managed EC2 compute environment that scales from zero, a job queue and a multi-node job
    definition, ready for ``aws batch submit-job --job-queue <queue> --job-definition <definition>
    --parameters training_command='torchrun $TORCHRUN_ARGS train.py'``. Each node runs a launcher
    (:mod:`cdk_neuron.training.launcher`) that sets ``MASTER_ADDR``, ``NEURON_RT_ROOT_COMM_ID``,
    ``NODE_RANK``, ``WORLD_SIZE``, the plan's TP/PP/DP degrees and ``TORCHRUN_ARGS`` correctly on the
    main node and on child nodes. The nodes themselves are :class:`TrainingClusterBase`'s: whole
    instances with EFA on every network card, in one AZ and a cluster placement group.

    :param vpc: the VPC of the nodes.
    :param instance_type: a Trainium type from the catalog, e.g. ``"trn1.32xlarge"``, or a catalog
        instance completed with ``NeuronInstance.with_facts(...)`` where the catalog lacks facts a
        cluster needs (the Trn3 servers: network cards, EFA interfaces, instance store).
    :param max_nodes: the most nodes the cluster runs at once (the compute environment's maximum).
        Must be at least the plan's nodes.
    :param job_image: the training container image: an ``ecs.ContainerImage`` or an image URI pinned
        by tag or digest (never ``latest``); an ECR URI is granted pull access.
    :param options: the node props both clusters take (:class:`~cdk_neuron.training.NodeOptions`):
        ``plan``, ``vpc_subnets``, ``availability_zone_id``, ``checkpoints``, ``compile_cache``,
        ``capacity``, ``placement_group``, ``machine_image``, ``efa_layout``, ``root_volume_size``,
        ``kms_key``, ``removal_policy``, ``environment``, ``efa_installer``, ``node_metrics``.
    :param training_command: the default of the job definition's ``training_command`` parameter
        (override per job at submission). Default: ``"torchrun $TORCHRUN_ARGS train.py"``.
    :param job_timeout: per-attempt limit after which Batch stops a job, so a hung collective cannot
        run up a bill forever (whole seconds, at least 60). Default: 7 days.
    :param log_retention: retention of the job log group. Default: three months.
    :param retry_attempts: attempts per job (1-10); only infrastructure failures are retried.
        Default: 3.
    :param shared_memory_size: ``/dev/shm`` of the job container (data loader workers). Default: 64 GiB.
    :param vpc_default_security_group_id: the VPC's default security group, which Batch gives the
        node containers with EFA (the cluster opens it for them). Default: the VPC's, when ``vpc`` is
        an ``ec2.Vpc``; an imported VPC must name it.
    :param update_timeout: how long running jobs may keep running when a deployment changes the
        compute environment's infrastructure (a new launch template version: a new AMI, and any change to
        the node programs or node settings, such as a cdk-neuron upgrade), in
        whole minutes from 1 to 7,200 (the current Batch API reference; older copies of it say 360).
        Default: 360 minutes, six hours for a long run to reach a checkpoint (it can resume).
    :param terminate_on_update: terminate running jobs at once on such an update instead. Default:
        False.

    :ivar compute_environment: the managed EC2 compute environment.
    :ivar job_queue: the job queue.
    :ivar job_role: the role the jobs run as (checkpoints, compile cache); also ``grant_principal``.
    :ivar execution_role: the role ECS pulls images and writes logs with.
    :ivar log_group: the jobs' logs.
    :ivar boot_failure_rule: the EventBridge rule that disables the compute environment when
        ``boot_failure_alarm`` goes into ALARM (:mod:`cdk_neuron.training.boot_failures`).
    :ivar task_security_group: the security group of the node containers' own network interfaces:
        with EFA the VPC's default group, opened for the containers; without EFA the node group
        (Batch gives the containers the compute environment's groups).
    """

    _ENGINE: ClassVar[str] = "batch"

    compute_environment: batch.ManagedEc2EcsComputeEnvironment
    job_queue: batch.JobQueue
    job_role: iam.Role
    execution_role: iam.Role
    log_group: logs.LogGroup
    task_security_group: ec2.ISecurityGroup

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str | NeuronInstance,
        max_nodes: int,
        job_image: ecs.ContainerImage | str,
        training_command: str = DEFAULT_TRAINING_COMMAND,
        job_timeout: cdk.Duration = DEFAULT_JOB_TIMEOUT,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        shared_memory_size: cdk.Size = DEFAULT_SHARED_MEMORY_SIZE,
        vpc_default_security_group_id: str | None = None,
        update_timeout: cdk.Duration = DEFAULT_UPDATE_TIMEOUT,
        terminate_on_update: bool = False,
        **options: Unpack[NodeOptions],
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            # -- validation: every prop, before the first resource --------------------------------
            props = self._check_node_props(
                vpc=vpc,
                instance_type=instance_type,
                max_nodes=max_nodes,
                options=options,
            )
            check_batch_capacity(props.capacity)
            _job_timeout("job_timeout", job_timeout)
            _retry_attempts("retry_attempts", retry_attempts)
            _cdk_values.size("shared_memory_size", shared_memory_size)
            self._training_command = _training_command(training_command)
            _cdk_values.whole_duration(
                "update_timeout", update_timeout, "minutes", maximum=MAX_UPDATE_TIMEOUT_MINUTES
            )
            if not isinstance(terminate_on_update, bool):
                raise NeuronConfigError("terminate_on_update", terminate_on_update, "use True or False")
            image = batch_engine.job_image(self, job_image)
            task_security_group_id = (
                checks.task_security_group_id(vpc, vpc_default_security_group_id)
                if props.instance.supports_efa
                else None
            )

            # -- the nodes, then Batch ------------------------------------------------------------
            self._build_nodes(props)
            self._job_definitions: list[batch.MultiNodeJobDefinition] = []
            self._submitters: list[iam.IGrantable] = []
            self.compute_environment = batch_engine.build_compute_environment(
                self,
                vpc=vpc,
                subnets=props.subnets.selection(),
                instance=self.instance,
                max_nodes=self.max_nodes,
                launch_template=self.launch_template,
                machine_image=self.machine_image,
                role=self.role,
                security_group=self.security_group,
                placement_group=self.placement_group,
                update_timeout=update_timeout,
                terminate_on_update=terminate_on_update,
                security_groups_in_launch_template=self.instance.supports_efa,
            )
            if self.efa_installer_mirror is not None:
                # No node may boot before its EFA installer is in the bucket.
                self.compute_environment.node.add_dependency(self.efa_installer_mirror.ready)
            # Nodes that keep failing their boot disable the compute environment (boot_failures).
            self.boot_failure_rule = boot_failures.disable_compute_environment(
                self,
                self.boot_failure_alarm,
                self.compute_environment,
                kms_key=self.kms_key,
                removal_policy=self._removal_policy,
            )
            if task_security_group_id is not None:
                self.task_security_group = security.open_task_security_group(
                    self, "TaskSecurityGroup", task_security_group_id
                )
                self._connections.add_security_group(self.task_security_group)
            else:
                # Without EFA the compute environment names the node group, and Batch gives it to the
                # containers' interfaces.
                self.task_security_group = self.security_group
            self.job_queue = batch_engine.build_job_queue(self, self.compute_environment)
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
                removal_policy=self._removal_policy,
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
            _manifest.record_training(
                self,
                engine="batch",
                instance_type=self.instance.name,
                max_nodes=self.max_nodes,
                plan=self.plan,
                capacity=self.capacity,
                availability_zone_id=self.availability_zone_id,
                job_image=job_image if isinstance(job_image, str) else None,
                job_queue=_cfn(self.job_queue),
                job_definition=_cfn(self._job_definition),
            )

    # -- attributes --------------------------------------------------------------------------------

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The job role: the training code in the job containers runs as it."""
        return self.job_role

    @property
    def job_queue_arn(self) -> str:
        """The job queue's ARN."""
        return self.job_queue.job_queue_arn

    @property
    def job_definition(self) -> batch.MultiNodeJobDefinition:
        """The default multi-node job definition (``plan.nodes`` nodes, ``training_command``)."""
        return self._job_definition

    @property
    def job_definitions(self) -> list[batch.MultiNodeJobDefinition]:
        """Every job definition of the cluster, the default first."""
        return list(self._job_definitions)

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

        :param id: construct id of the job definition.
        :param training_command: the default of its ``training_command`` parameter.
        :param nodes: nodes per job; the cluster plan's TP/PP/LNC are re-planned for it. Default: the
            cluster plan's nodes.
        :param plan: a whole plan instead of ``nodes`` (same instance type, at most ``max_nodes``).
            Default: None.
        :param image: container image. Default: the cluster's ``job_image``.
        :param environment: extra environment, merged over the cluster's. Default: none.
        :param timeout: per-attempt timeout. Default: the cluster's ``job_timeout``.
        :param retry_attempts: attempts (1-10). Default: the cluster's ``retry_attempts``.
        """
        with reported_by(self):
            settings = self._job_settings
            if nodes is not None and plan is not None:
                raise NeuronConfigError("nodes", nodes, "give nodes or plan, not both")
            if nodes is not None:
                nodes = validation.whole_number("nodes", nodes)
                plan = replan_training(self.plan, instance_type=self.instance, nodes=nodes)
            job_plan = checks.checked_plan(self.instance, self.max_nodes, plan or self.plan)
            checks.plan_fits_capacity(job_plan, self.instance, self.capacity)
            if timeout is not None:
                _job_timeout("timeout", timeout)
            if retry_attempts is not None:
                _retry_attempts("retry_attempts", retry_attempts)
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
        active one: an update deregisters the previous revision; submitting by name resolves to it),
        including definitions added later. ``batch:DescribeJobs`` and ``batch:ListJobs`` support no
        resource-level permissions, so they are granted on ``*``: cdk-nag reports
        ``AwsSolutions-IAM5[Resource::*]`` on the grantee's policy, for its owner to acknowledge. No
        ``iam:PassRole`` is needed: the job role is registered with the job definition and a
        submission cannot replace it.
        """
        grant = _grant_submit_jobs(
            grantee, self.job_queue.job_queue_arn, [d.job_definition_arn for d in self._job_definitions]
        )
        # Job definitions added later are granted to the same principals (add_job_definition).
        self._submitters.append(grantee)
        return grant

    @staticmethod
    def from_batch_training_cluster_attributes(
        scope: Construct,
        id: str,
        *,
        job_queue_arn: str,
        job_definition_arn: str,
        security_group_id: str,
        task_security_group_id: str | None = None,
        node_metrics: NodeMetrics | None = None,
    ) -> IBatchTrainingCluster:
        """A Batch cluster built elsewhere (another stack or app): submit to it, reach it, watch it.

        What works on the import, and the attributes it needs:

        - ``grant_submit_jobs(grantee)``: ``job_queue_arn`` and ``job_definition_arn``
          (``batch:SubmitJob`` on both; ``DescribeJobs``/``ListJobs`` on ``*``);
        - ``connections``: ``security_group_id`` (the cluster's ``security_group``), plus
          ``task_security_group_id`` for the node containers' group of an EFA cluster;
        - ``metric_*()``: ``node_metrics``, the cluster's ``NodeMetrics``.

        It creates no resource. Rules added through ``connections`` are added to the imported groups
        in this stack.

        :param scope: the scope of the import.
        :param id: its construct id.
        :param job_queue_arn: e.g. the cluster stack's ``JobQueueArn`` output, or a token.
        :param job_definition_arn: the job definition's ARN *with its revision*
            (``...:job-definition/<name>:<revision>``, what CloudFormation's Ref returns), or ``:*``
            for every revision; IAM matches ``SubmitJob`` on ``name:revision``.
        :param security_group_id: the nodes' security group, e.g. ``sg-0123456789abcdef0``.
        :param task_security_group_id: the node containers' group (the VPC's default group with EFA).
            Default: None (``connections`` holds the node group only).
        :param node_metrics: where the nodes publish Neuron metrics, as given to the cluster. Default:
            None (``metric_*()`` then refuse: there is nothing to read).
        """
        return _ImportedBatchTrainingCluster(
            scope,
            id,
            job_queue_arn=job_queue_arn,
            job_definition_arn=job_definition_arn,
            security_group_id=security_group_id,
            task_security_group_id=task_security_group_id,
            node_metrics=node_metrics,
        )


class _ImportedBatchTrainingCluster(_TrainingClusterRef):
    """An existing Batch cluster (see :meth:`BatchTrainingCluster.from_batch_training_cluster_attributes`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        job_queue_arn: str,
        job_definition_arn: str,
        security_group_id: str,
        task_security_group_id: str | None,
        node_metrics: NodeMetrics | None,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self._job_queue_arn = _cdk_values.identifier(
                "job_queue_arn",
                job_queue_arn,
                validation.BATCH_JOB_QUEUE_ARN,
                "a job queue ARN, e.g. arn:aws:batch:us-east-1:111111111111:job-queue/<name>",
            )
            self._job_definition_arn = _cdk_values.identifier(
                "job_definition_arn",
                job_definition_arn,
                validation.BATCH_JOB_DEFINITION_ARN,
                "a job definition ARN with its revision, e.g. "
                "arn:aws:batch:us-east-1:111111111111:job-definition/<name>:<revision> (or :*)",
            )
            group_ids = [("security_group_id", security_group_id)]
            if task_security_group_id is not None:
                group_ids.append(("task_security_group_id", task_security_group_id))
            for field, group_id in group_ids:
                _cdk_values.identifier(
                    field,
                    group_id,
                    validation.SECURITY_GROUP_ID,
                    "a security group id such as sg-0123456789abcdef0",
                )
            if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
                raise NeuronConfigError(
                    "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
                )
            self._node_metrics = node_metrics
            self._connections = ec2.Connections(
                security_groups=[
                    ec2.SecurityGroup.from_security_group_id(
                        self,
                        "SecurityGroup" if field == "security_group_id" else "TaskSecurityGroup",
                        group_id,
                        allow_all_outbound=False,
                    )
                    for field, group_id in group_ids
                ]
            )

    @property
    def job_queue_arn(self) -> str:
        """The job queue's ARN."""
        return self._job_queue_arn

    @property
    def job_definition_arn(self) -> str:
        """The job definition's ARN."""
        return self._job_definition_arn

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """``batch:SubmitJob`` on the queue and the job definition; ``DescribeJobs``/``ListJobs`` on ``*``."""
        return _grant_submit_jobs(grantee, self._job_queue_arn, [self._job_definition_arn])


def is_batch_training_cluster(value: object) -> TypeGuard[IBatchTrainingCluster]:
    """Whether ``value`` is a :class:`BatchTrainingCluster` or an imported one."""
    return isinstance(value, (BatchTrainingCluster, _ImportedBatchTrainingCluster))


def _grant_submit_jobs(grantee: iam.IGrantable, queue_arn: str, definition_arns: list[str]) -> iam.Grant:
    # Each definition's ARN carries its current revision: the only active one, because updates
    # deregister the previous revision. Submitting by name resolves to it; no wildcard needed.
    submit = iam.Grant.add_to_principal(
        grantee=grantee, actions=["batch:SubmitJob"], resource_arns=[queue_arn, *definition_arns]
    )
    follow = iam.Grant.add_to_principal(
        grantee=grantee, actions=["batch:DescribeJobs", "batch:ListJobs"], resource_arns=["*"]
    )
    return submit.combine(follow)


def _job_timeout(field: str, value: object) -> int:
    return _cdk_values.whole_duration(field, value, "seconds", minimum=checks.MIN_JOB_TIMEOUT_SECONDS)


def _retry_attempts(field: str, value: object) -> int:
    return validation.whole_number(field, value, maximum=checks.MAX_RETRY_ATTEMPTS)


def _training_command(value: object) -> str:
    return training_command("training_command", value)


def _image_for(scope: Construct, id: str, image: ecs.ContainerImage | str) -> ecs.ContainerImage:
    if isinstance(image, str):
        return batch_engine.job_image(Construct(scope, f"{id}Image"), image)
    return batch_engine.job_image(scope, image)


def _cfn(construct: Construct) -> cdk.CfnResource:
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnResource)
    return resource


if TYPE_CHECKING:  # mypy proves both meet the interface, as jsii would for a TypeScript class
    _BUILT: type[IBatchTrainingCluster] = BatchTrainingCluster
    _IMPORTED: type[IBatchTrainingCluster] = _ImportedBatchTrainingCluster

__all__ = ["BatchTrainingCluster", "is_batch_training_cluster"]
