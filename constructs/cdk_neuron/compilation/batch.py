"""BatchModelCompilation: compile on a Batch training cluster's own instances, for models Fargate cannot hold.

A Fargate task has at most 120 GiB of memory and 200 GiB of ephemeral storage ("Fargate task definition
parameters" and "Fargate task ephemeral storage", Amazon ECS Developer Guide, read 2026-12-02), and an
export holds about 3 x the weights in memory (:data:`~cdk_neuron.compilation.job.EXPORT_MEMORY_FACTOR`),
so :class:`~cdk_neuron.compilation.ModelCompilation` stops at 40 GiB of weights. A 70B model (130 GiB of
bf16 weights) needs about 390 GiB. A trn1.32xlarge has 512 GiB and 128 vCPUs, and a cluster that trains
the model already has them, its subnets, its checkpoint store and its compile cache. Compiling there
needs no Neuron device: "The one-time compilation step from the standard framework-level model to NEFF
binary may be performed on any EC2 instance or even on-premises" (Neuron Compiler FAQ (neuronx-cc),
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/neuronx-cc/faq.html, read 2026-12-02),
and the export names its target (``optimum-cli export neuron --instance_type inf2``, which sets the
compiler's ``--target``), so a Trainium host compiles for Inferentia2.

What it builds, on a given :class:`~cdk_neuron.training.BatchTrainingCluster`:

- a **compute environment and job queue of its own**, built from the cluster's launch template, AMI,
  subnets, node role and security group, one node at most, min vCPUs 0 (nothing runs, or bills, while
  no compile waits). Its nodes never run a training job, and training nodes never run a compile: a
  simple ECS-on-EC2 job runs in host network mode (below), where the nodes' ``ECS_AWSVPC_BLOCK_IMDS``
  does not apply, so a compile container can reach the instance metadata and the node role, and with the
  ECS agent's identity the credentials ECS delivers to later tasks on that node ("a single affected task
  might be able to leverage the IAM permissions of a non-infected task on the same instance", "Amazon EC2
  container instance security considerations for Amazon ECS", Amazon ECS Developer Guide,
  https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ec2-security-considerations.html, read
  2026-12-02). On nodes of their own, what a compile can reach is its own job's. It also never holds a
  node a multi-node training job waits for, unless the cluster's launch template targets reserved
  capacity, which the compile node then draws on (a synthesis warning says so); it needs one more node of EC2 quota (``cdk-neuron preflight``
  counts it). An infrastructure update of the compute environment lets a running compile finish (its
  ``update_timeout`` is the job's whole budget).
- an **ECS-properties job definition** of three containers (``fetch``, ``export``, ``upload``; "Create job
  definitions using EcsProperties", AWS Batch User Guide,
  https://docs.aws.amazon.com/batch/latest/userguide/multi-container-jobs.html, read 2026-12-02), the
  same programs as the Fargate task, one after another (``dependsOn`` ``COMPLETE`` and the status files),
  the upload essential. A simple ECS-on-EC2 job runs in ``host`` network mode ("Networking modes for AWS
  Batch jobs", AWS Batch User Guide, https://docs.aws.amazon.com/batch/latest/userguide/networking-modes-jobs.html,
  read 2026-12-02): its traffic leaves through the node's interface, in the cluster's subnets and
  security group, so it reaches what training reaches (:func:`cdk_neuron.node_programs.reach.compile_job`).
  The job role still reaches the containers (ecs-init starts the agent with
  ``ECS_ENABLE_TASK_IAM_ROLE_NETWORK_HOST=true``: aws/amazon-ecs-agent ``ecs-init/docker/docker.go``
  @01c434c), but ``ECS_AWSVPC_BLOCK_IMDS`` covers awsvpc tasks only: a host-mode container can reach the
  instance metadata and so the node role (docs/compile.md says what that holds).

How each step gets into its image, since a Batch job definition cannot replace an ENTRYPOINT (neither
``ContainerProperties`` nor ``TaskContainerProperties`` has one: AWS Batch API Reference, read
2026-12-02):

- ``fetch`` and ``upload`` run in ``tools_image`` (default: the Neuron training DLC the cluster's jobs run,
  :data:`TOOLS_IMAGE`), whose ENTRYPOINT ``bash -m start_with_right_hostname.sh`` ``eval``s its arguments,
  and which ships the AWS CLI (``pip install "awscli<2"``, aws-neuron/deep-learning-containers
  pytorch/training/2.9.0/Dockerfile.neuronx). Their command is ``timeout ... bash
  /opt/cdk-neuron/compile/<step>.sh``: words without shell syntax, which ``eval`` leaves whole.
- ``export`` runs in the fleet's serving image, whose ENTRYPOINT starts the server whatever its arguments:
  its bash reads ``BASH_ENV`` first, and ``compile/serving-entry.sh`` (read, not run) replaces it with the
  export program (the file says how, with sources).

Both come from the host's node-program bundle (``/opt/cdk-neuron``, mounted read-only, as the training
launcher is); the work directory is the host's NVMe scratch (``/scratch``, striped by the node's setup),
emptied by the fetch step, so a 70B's source, converted copy and export (about 400 GiB) have room.
"""

from __future__ import annotations

import math

import aws_cdk as cdk
import jsii
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from cdk_neuron import _cdk_values, _manifest, timeouts
from cdk_neuron._nag import acknowledge, acknowledge_wildcards
from cdk_neuron._scope import reported_by
from cdk_neuron.compilation.base import ModelCompilationBase
from cdk_neuron.compilation.construct import routes_to_internet
from cdk_neuron.compilation.job import (
    BATCH_STEP_MEMORY_MIB,
    BATCH_STEP_VCPUS,
    CHECKPOINT_MOUNT,
    DEFAULT_ARTIFACT_PREFIX,
    WORK_DIR,
    HostCompile,
)
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import INSTALL_DIR
from cdk_neuron.serving.engines import ContainerImage, ServingEngine
from cdk_neuron.serving.engines.image import DLC_REGISTRY
from cdk_neuron.serving.permissions import image_pull_statements
from cdk_neuron.storage.checkpoint_store import ICheckpointStore
from cdk_neuron.storage.compile_cache import COMPILE_CACHE_ENV, ICompileCache
from cdk_neuron.training import batch_engine, boot_failures
from cdk_neuron.training.acknowledgments import compile_cache_prefix
from cdk_neuron.training.batch_cluster import BatchTrainingCluster
from cdk_neuron.training.batch_engine import UNPLACEABLE_JOB_TIMEOUT
from cdk_neuron.training.launcher import SCRATCH_DIR

SHARES_RESERVED_CAPACITY_WARNING_ID = "@cdk-neuron/compilation:sharesReservedCapacity"
"""The warning where the training cluster's launch template targets reserved capacity."""

TOOLS_IMAGE = ContainerImage(
    DLC_REGISTRY, "pytorch-training-neuronx", "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
)
"""The fetch and upload steps' default image: the Neuron training DLC (the image cdk.json's training
``job_image`` names), with the AWS CLI v1 and an ``eval`` ENTRYPOINT (cdk_neuron.contracts.images,
``training-dlc``)."""
SERVING_ENTRY = f"{INSTALL_DIR}/compile/serving-entry.sh"
"""The file the export container's ``BASH_ENV`` names (node_programs/files/compile/serving-entry.sh)."""
EXPORT_COMMAND = ("--cdk-neuron-compile-needs-bash-env",)
"""The export container's command: never read while ``BASH_ENV`` works; if the image's entrypoint stops
reading it, ``optimum-cli neuron serve`` refuses this unknown flag and the step fails at once."""
HOST_WORK_DIR = f"{SCRATCH_DIR}/cdk-neuron-compile"
"""Where the work directory is on the host (the node's NVMe scratch)."""
DEFAULT_RETRY_ATTEMPTS = 2
CONTAINERS = ("fetch", "export", "upload")


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class BatchModelCompilation(ModelCompilationBase):
    """Compile models for Inferentia2 on a Batch training cluster's instances, in the serving image.

    For models whose export does not fit a Fargate task (:class:`~cdk_neuron.compilation.ModelCompilation`,
    40 GiB of weights): see :mod:`cdk_neuron.compilation.batch` for what it builds and why.

    :param training_cluster: the :class:`~cdk_neuron.training.BatchTrainingCluster` whose compute
        environment runs the jobs (its instance type decides the export's memory and vCPUs). Required.
    :param artifact_bucket: where artifacts are written. Required.
    :param artifact_prefix: the key prefix the job may write under. Default: ``"compiled/"``.
    :param engine: the serving engine whose image compiles. Default: ``ServingEngine.optimum_neuron()``.
    :param compile_cache: the shared Neuron compile cache. Default: the cluster's.
    :param checkpoint_store: mounted read-only at ``/checkpoints`` (TLS, IAM with the job role). Default:
        the cluster's.
    :param hugging_face_token: secret holding a Hugging Face token, for gated Hub sources. Default: None.
    :param tools_image: the fetch and upload steps' image: one with bash, coreutils and the AWS CLI whose
        ENTRYPOINT runs its arguments as a command. Default: :data:`TOOLS_IMAGE`.
    :param retry_attempts: attempts per job (1-10); only a lost host is retried (a partly uploaded
        artifact is never overwritten: compile again to a new prefix). Default: 2.
    :param kms_key: key of the log group. Default: a new key with rotation.
    :param removal_policy: for the key and the log group. Default: ``RETAIN_ON_UPDATE_OR_DELETE``.
    :param log_retention: how long the compile logs are kept. Default: one month.

    :ivar compute_environment: the compile nodes (the cluster's launch template; at most one node, min 0).
    :ivar boot_failure_rule: disables :attr:`compute_environment` when the training cluster's
        ``boot_failure_alarm`` goes into ALARM (its nodes' failed boots count as the cluster's).
    :ivar job_queue: the compile queue.
    :ivar job_definition: the compile job definition (``AWS::Batch::JobDefinition``, EcsProperties).
    :ivar job_role: the role the three containers run as.
    :ivar execution_role: the role ECS pulls images, reads the token and writes logs with.
    :ivar host: what the export gets on the cluster's instance (:class:`~cdk_neuron.compilation.job.HostCompile`).
    :ivar has_internet: whether the cluster's subnets reach the internet (Hub sources need it).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        training_cluster: BatchTrainingCluster,
        artifact_bucket: s3.IBucket,
        artifact_prefix: str = DEFAULT_ARTIFACT_PREFIX,
        engine: ServingEngine | None = None,
        compile_cache: ICompileCache | None = None,
        checkpoint_store: ICheckpointStore | None = None,
        hugging_face_token: secretsmanager.ISecret | None = None,
        tools_image: ContainerImage | None = None,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            if not isinstance(training_cluster, BatchTrainingCluster):
                raise NeuronConfigError(
                    "training_cluster",
                    training_cluster,
                    "pass the BatchTrainingCluster whose compute environment runs the compile jobs",
                )
            tools = tools_image if tools_image is not None else TOOLS_IMAGE
            if not isinstance(tools, ContainerImage):
                raise NeuronConfigError(
                    "tools_image",
                    tools,
                    "pass a cdk_neuron.serving.ContainerImage(registry, repository, tag)",
                )
            if (
                isinstance(retry_attempts, bool)
                or not isinstance(retry_attempts, int)
                or not 1 <= retry_attempts <= 10
            ):
                raise NeuronConfigError("retry_attempts", retry_attempts, "a whole number from 1 to 10")
            stack = cdk.Stack.of(self)
            self._setup(
                engine=self._checked_engine(engine),
                artifact_bucket=artifact_bucket,
                artifact_prefix=artifact_prefix,
                kms_key=kms_key,
                removal_policy=removal_policy,
                log_retention=log_retention,
            )
            self.training_cluster = training_cluster
            self.host = HostCompile.on(training_cluster.instance)
            self.tools_image = tools
            compile_cache = compile_cache if compile_cache is not None else training_cluster.compile_cache
            checkpoint_store = (
                checkpoint_store if checkpoint_store is not None else training_cluster.checkpoints
            )
            self.has_internet = routes_to_internet(training_cluster.vpc, training_cluster.vpc_subnets)
            self.job_role = iam.Role(
                self,
                "JobRole",
                assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
                description="cdk-neuron model compilation jobs: read sources, write artifacts",
            )
            self.execution_role = iam.Role(
                self,
                "ExecutionRole",
                assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
                description="cdk-neuron model compilation jobs: image pulls, the Hub token, logs",
            )
            self.log_group.grant_write(self.execution_role)
            environment: dict[str, str] = {}
            if compile_cache is not None:
                compile_cache.grant_read_write(self.job_role)
                environment[COMPILE_CACHE_ENV] = compile_cache.url
            volumes = self._volumes(checkpoint_store)
            if hugging_face_token is not None:
                hugging_face_token.grant_read(self.execution_role)
            budgets = timeouts.compile_step_seconds(self.host.max_weights_gib)
            job_seconds = timeouts.compile_job_seconds(self.host.max_weights_gib)
            self.compute_environment = batch_engine.build_compute_environment(
                self,
                vpc=training_cluster.vpc,
                subnets=training_cluster.vpc_subnets,
                instance=training_cluster.instance,
                max_nodes=1,
                launch_template=training_cluster.launch_template,
                machine_image=training_cluster.machine_image,
                role=training_cluster.role,
                security_group=training_cluster.security_group,
                placement_group=self._placement_group(training_cluster),
                # A new launch template version (AMI, node programs) lets a running compile finish.
                update_timeout=cdk.Duration.minutes(math.ceil(job_seconds / 60)),
                terminate_on_update=False,
                security_groups_in_launch_template=training_cluster.instance.supports_efa,
            )
            if training_cluster.efa_installer_mirror is not None:
                # As the cluster's own nodes: none boots before its EFA installer is in the bucket.
                self.compute_environment.node.add_dependency(training_cluster.efa_installer_mirror.ready)
            # Its nodes boot from the cluster's launch template (the same bundle, driver and EFA
            # installer), so a failed boot is recorded as the cluster's, and the cluster's alarm stops
            # this compute environment too: without it a boot failure that always recurs would launch
            # trn1.32xlarge nodes for a waiting compile without end (verify-27 D1).
            if training_cluster.capacity.kind != "on-demand":
                # The launch template targets the cluster's reserved capacity, so the compile node
                # draws on it too (verify-27 D2): say so where it is built, not only in the docs.
                cdk.Annotations.of(self).add_warning_v2(
                    SHARES_RESERVED_CAPACITY_WARNING_ID,
                    f"the compile node launches from the training cluster's launch template, which targets its "
                    f"{training_cluster.capacity.kind} capacity: while a compile runs (up to "
                    f"{math.ceil(job_seconds / 3600)} h) it holds one of those nodes, so a training job sized "
                    "to the whole reservation waits for it. Compile outside the reservation's use, size the "
                    "reservation one node larger, or compile on Fargate where the model fits",
                )
            self.boot_failure_rule = boot_failures.disable_compute_environment(
                self,
                training_cluster.boot_failure_alarm,
                self.compute_environment,
                kms_key=self.kms_key,
                removal_policy=removal_policy,
            )
            self.job_queue = batch.JobQueue(
                self,
                "JobQueue",
                compute_environments=[
                    batch.OrderedComputeEnvironment(compute_environment=self.compute_environment, order=1)
                ],
                job_state_time_limit_actions=[
                    batch.JobStateTimeLimitAction(
                        max_time=UNPLACEABLE_JOB_TIMEOUT,
                        reason=reason,
                        action=batch.JobStateTimeLimitActionsAction.CANCEL,
                        state=batch.JobStateTimeLimitActionsState.RUNNABLE,
                    )
                    for reason in (
                        batch.JobStateTimeLimitActionsReason.COMPUTE_ENVIRONMENT_MAX_RESOURCE,
                        batch.JobStateTimeLimitActionsReason.JOB_RESOURCE_REQUIREMENT,
                    )
                ],
            )
            self.job_definition = batch.CfnJobDefinition(
                self,
                "JobDefinition",
                type="container",
                platform_capabilities=["EC2"],
                propagate_tags=True,
                timeout=batch.CfnJobDefinition.TimeoutProperty(attempt_duration_seconds=job_seconds),
                retry_strategy=batch.CfnJobDefinition.RetryStrategyProperty(
                    attempts=retry_attempts,
                    evaluate_on_exit=[
                        # Only a lost host is retried; a step that failed fails the job (retrying would
                        # compile the same graphs again, and the upload refuses a partly written prefix).
                        batch.CfnJobDefinition.EvaluateOnExitProperty(
                            action="RETRY", on_status_reason="Host EC2*"
                        ),
                        batch.CfnJobDefinition.EvaluateOnExitProperty(action="EXIT", on_reason="*"),
                    ],
                ),
                ecs_properties=batch.CfnJobDefinition.EcsPropertiesProperty(
                    task_properties=[
                        batch.CfnJobDefinition.EcsTaskPropertiesProperty(
                            containers=self._containers(
                                stack, tools, environment, budgets, hugging_face_token, checkpoint_store
                            ),
                            execution_role_arn=self.execution_role.role_arn,
                            task_role_arn=self.job_role.role_arn,
                            volumes=volumes,
                        )
                    ]
                ),
            )
            if checkpoint_store is not None:
                # IAM on the mount (the job role), NFS from the nodes (host network: the node's group).
                checkpoint_store.grant_read(self.job_role, peer=training_cluster)
            self._grant_artifact_writes(artifact_bucket)
            self._grant_pull(
                stack, self.engine.image, "PullServingImage", "the serving image", "EcrPullServingImage"
            )
            if tools.uri(stack.region) != self.engine.image.uri(stack.region):
                self._grant_pull(
                    stack, tools, "PullToolsImage", "the fetch and upload image", "EcrPullToolsImage"
                )
            self._acknowledge(compile_cache)
            _manifest.record_batch_compilation(
                self,
                engine=self.engine.name,
                image=self.engine.image.uri(stack.region),
                job_queue=self.job_queue.node.default_child,
                job_definition=self.job_definition,
                checkpoints=checkpoint_store is not None,
                artifact_bucket=artifact_bucket.bucket_name,
                artifact_prefix=self.artifact_prefix,
                tools_image=tools.uri(stack.region),
                instance_type=self.host.instance_type,
                internet=self.has_internet,
            )

    # -- pieces ------------------------------------------------------------------------------------

    def _placement_group(self, cluster: BatchTrainingCluster) -> ec2.IPlacementGroup | None:
        """Where the compile node launches: with EFA interfaces in the launch template, a cluster placement
        group ("All instances that use an EFA must be in the same cluster placement group", AWS Batch User
        Guide, "Elastic Fabric Adapter", https://docs.aws.amazon.com/batch/latest/userguide/efa.html; deploy
        rule W9104): the reservation's own group where the cluster's capacity names one (its capacity is
        there), else one of its own, so a compile never takes a slot in the training nodes' group. With
        reserved capacity in the launch template, the compile node does draw on that reservation (the
        construct warns, ``SHARES_RESERVED_CAPACITY_WARNING_ID``)."""
        if not cluster.instance.supports_efa:
            return None
        if cluster.capacity.placement_group_name is not None:
            return cluster.placement_group
        return ec2.PlacementGroup(self, "PlacementGroup", strategy=ec2.PlacementGroupStrategy.CLUSTER)

    def _volumes(self, store: ICheckpointStore | None) -> list[batch.CfnJobDefinition.VolumesProperty]:
        volumes = [
            # The work directory on the host's NVMe scratch (the fetch step empties it first).
            batch.CfnJobDefinition.VolumesProperty(
                name="work", host=batch.CfnJobDefinition.VolumesHostProperty(source_path=HOST_WORK_DIR)
            ),
            # The node-program bundle, as the training launcher mounts it.
            batch.CfnJobDefinition.VolumesProperty(
                name="cdk-neuron-programs",
                host=batch.CfnJobDefinition.VolumesHostProperty(source_path=INSTALL_DIR),
            ),
        ]
        if store is not None:
            volumes.append(
                batch.CfnJobDefinition.VolumesProperty(
                    name="checkpoints",
                    efs_volume_configuration=batch.CfnJobDefinition.EfsVolumeConfigurationProperty(
                        file_system_id=store.file_system_id,
                        transit_encryption="ENABLED",
                        authorization_config=batch.CfnJobDefinition.AuthorizationConfigProperty(
                            access_point_id=store.access_point_id, iam="ENABLED"
                        ),
                    ),
                )
            )
        return volumes

    def _containers(
        self,
        stack: cdk.Stack,
        tools: ContainerImage,
        environment: dict[str, str],
        budgets: dict[str, int],
        token: secretsmanager.ISecret | None,
        store: ICheckpointStore | None,
    ) -> list[batch.CfnJobDefinition.TaskContainerPropertiesProperty]:
        mount = batch.CfnJobDefinition.MountPointProperty
        work = mount(container_path=WORK_DIR, source_volume="work", read_only=False)
        programs = mount(container_path=INSTALL_DIR, source_volume="cdk-neuron-programs", read_only=True)
        made = []
        previous: str | None = None
        for name in CONTAINERS:
            step = name != "export"
            values = {"WORK_DIR": WORK_DIR}
            if name == "upload":
                values["ARTIFACT_PREFIX"] = self.artifact_prefix
            if name == "export":
                values.update(environment)
                values.update(
                    {
                        "BASH_ENV": SERVING_ENTRY,
                        "CDK_NEURON_STEP_SECONDS": str(budgets["export"]),
                        "CDK_NEURON_KILL_AFTER": str(timeouts.COMPILE_KILL_AFTER),
                    }
                )
            mounts = [work, programs]
            if name == "export" and store is not None:
                mounts.append(
                    mount(container_path=CHECKPOINT_MOUNT, source_volume="checkpoints", read_only=True)
                )
            vcpus, memory = (
                (BATCH_STEP_VCPUS, BATCH_STEP_MEMORY_MIB)
                if step
                else (self.host.export_vcpus, self.host.export_memory_mib)
            )
            made.append(
                batch.CfnJobDefinition.TaskContainerPropertiesProperty(
                    name=name,
                    image=tools.uri(stack.region) if step else self.engine.image.uri(stack.region),
                    essential=name == "upload",  # the job ends with the upload (or with a failed step)
                    command=list(step_command(name, budgets[name])) if step else list(EXPORT_COMMAND),
                    environment=[
                        batch.CfnJobDefinition.EnvironmentProperty(name=k, value=v) for k, v in values.items()
                    ],
                    secrets=[
                        batch.CfnJobDefinition.SecretProperty(name="HF_TOKEN", value_from=token.secret_arn)
                    ]
                    if token is not None and name == "export"
                    else None,
                    mount_points=mounts,
                    depends_on=[
                        batch.CfnJobDefinition.TaskContainerDependencyProperty(
                            container_name=previous, condition="COMPLETE"
                        )
                    ]
                    if previous is not None
                    else None,
                    resource_requirements=[
                        batch.CfnJobDefinition.ResourceRequirementProperty(type="VCPU", value=str(vcpus)),
                        batch.CfnJobDefinition.ResourceRequirementProperty(type="MEMORY", value=str(memory)),
                    ],
                    log_configuration=batch.CfnJobDefinition.LogConfigurationProperty(
                        log_driver="awslogs",
                        options={
                            "awslogs-group": self.log_group.log_group_name,
                            "awslogs-region": stack.region,
                            "awslogs-stream-prefix": name,
                        },
                    ),
                )
            )
            previous = name
        return made

    def _grant_pull(
        self, stack: cdk.Stack, image: ContainerImage, policy_id: str, what: str, sid: str
    ) -> None:
        """The execution role's pull of ``image`` (private ECR only), as a managed policy of its own."""
        if not image.is_private_ecr:
            return
        statements = image_pull_statements(stack, image, sid=sid)
        policy = iam.ManagedPolicy(
            self,
            policy_id,
            description=f"cdk-neuron model compilation {self.node.path}: pull {what}",
            roles=[self.execution_role],
            statements=[s for s, _ in statements],
        )
        acknowledge_wildcards(policy, statements)

    def _acknowledge(self, cache: ICompileCache | None) -> None:
        if cache is not None:
            compile_cache_prefix(self.job_role, cache)
        acknowledge(
            self.job_role,
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "The inline policy holds only grant-generated statements: the cluster's compile cache (its prefix "
            "and its key) and the checkpoint store's access point (mount, read-only); the artifact writes are a "
            "managed policy.",
        )
        acknowledge(
            self.execution_role,
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "The inline policy holds only grant-generated statements on this compilation's log group (and the Hub "
            "token secret); the image pulls are managed policies.",
        )

    # -- the interfaces ----------------------------------------------------------------------------

    @property
    def _role(self) -> iam.IRole:
        return self.job_role

    @property
    def connections(self) -> ec2.Connections:
        """The jobs run in host network mode on the cluster's nodes: the cluster's connections."""
        return self.training_cluster.connections

    @property
    def job_queue_arn(self) -> str:
        return self.job_queue.job_queue_arn

    @property
    def job_definition_arn(self) -> str:
        """The job definition's ARN with its revision (CloudFormation's Ref)."""
        return self.job_definition.ref

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` submit compile jobs and follow them, what ``cdk-neuron compile`` calls:
        ``batch:SubmitJob`` on the queue and the job definition; ``batch:DescribeJobs``, ``batch:ListJobs``
        and ``batch:DescribeJobDefinitions`` on ``*`` (they support no resource-level permissions). The
        command also reads the stack (``cloudformation:DescribeStackResource``) and, with ``--wait``, the
        manifest (``s3:GetObject``): grant those where the principal is defined."""
        submit = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["batch:SubmitJob"],
            resource_arns=[self.job_queue_arn, self.job_definition_arn],
        )
        follow = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["batch:DescribeJobs", "batch:ListJobs", "batch:DescribeJobDefinitions"],
            resource_arns=["*"],
        )
        return submit.combine(follow)


def step_command(name: str, seconds: int) -> tuple[str, ...]:
    """The fetch or upload container's command: its program from the host's bundle under GNU ``timeout``.
    Words without shell syntax, so an ENTRYPOINT that ``eval``s its arguments runs exactly these."""
    return (
        "timeout",
        f"--kill-after={timeouts.COMPILE_KILL_AFTER}",
        str(seconds),
        "bash",
        f"{INSTALL_DIR}/compile/{name}.sh",
    )


__all__ = [
    "EXPORT_COMMAND",
    "HOST_WORK_DIR",
    "SERVING_ENTRY",
    "TOOLS_IMAGE",
    "BatchModelCompilation",
    "step_command",
]
