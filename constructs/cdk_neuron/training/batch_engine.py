"""BatchTrainingCluster's engine: a managed compute environment, a job queue, multi-node job definitions."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_neuron import timeouts
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import INSTALL_DIR
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.training.launcher import (
    SCRATCH_DIR,
    TOPOLOGY_DIR,
    TRAINING_COMMAND_PARAMETER,
    encode_training_command,
    launcher_command,
)
from cdk_neuron.training.node_setup import CONTAINER_MEMORY_FRACTION, NOFILE_LIMIT
from cdk_neuron.training.node_setup import container_memory_mib as node_memory_mib
from cdk_neuron.validation import ECR_REGISTRY, IMAGE_URI, pinned_image

# Jobs the queue can never place are cancelled instead of waiting in RUNNABLE forever. Insufficient
# capacity is not on the list: waiting for Trainium capacity is often the right thing.
UNPLACEABLE_JOB_TIMEOUT = cdk.Duration.seconds(timeouts.UNPLACEABLE_JOB_TIMEOUT)
# awslogs in non-blocking mode: a CloudWatch Logs slowdown must not stall every rank writing to
# stdout; under sustained pressure the driver drops lines from this buffer instead.
LOG_BUFFER = cdk.Size.mebibytes(25)


def container_memory_mib(instance: NeuronInstance) -> int:
    """The memory a job container on ``instance`` asks for (:mod:`cdk_neuron.training.node_setup`)."""
    return node_memory_mib(instance.memory_gib)


def retry_strategies() -> list[batch.RetryStrategy]:
    """Retry infrastructure failures, never application errors.

    Batch evaluates these in order and stops at the first match, and for a multi-node job it
    evaluates the *main* node: "main node failures cause another attempt to occur. Child node
    failures don't cause more attempts to occur" (AWS Batch User Guide, "Multi-node parallel jobs",
    https://docs.aws.amazon.com/batch/latest/userguide/multi-node-parallel-jobs.html, read 2026-12-01).

    - The main node's host lost ("Host EC2 (instance i-...) terminated."): retry on fresh nodes.
    - Exit code 75 (:data:`cdk_neuron.timeouts.PEER_LOST_EXIT_CODE`): the launcher's peer watch ended
      the attempt because a *child* node was lost or never joined (``training/peer_watch.py``), which
      Batch itself would never retry: retry.
    - Any other non-zero exit code is the training code's own failure (including a collective that
      failed for its own reasons): retrying would burn node-hours on the same bug, so exit.

    Failures that match none (an agent or container-runtime error before the code ran) are retried,
    which is Batch's behaviour when no condition matches.
    """
    return [
        batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_status_reason="Host EC2*")),
        batch.RetryStrategy.of(
            batch.Action.RETRY, batch.Reason.custom(on_exit_code=str(timeouts.PEER_LOST_EXIT_CODE))
        ),
        batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.NON_ZERO_EXIT_CODE),
    ]


def job_image(scope: Construct, value: object) -> ecs.ContainerImage:
    """The job's container image; an ECR URI string becomes an ECR image, so pulls are granted."""
    if isinstance(value, ecs.ContainerImage):
        return value
    if not isinstance(value, str) or not value.strip():
        raise NeuronConfigError(
            "job_image",
            value,
            "a BatchTrainingCluster runs a container: give its image as ecs.ContainerImage or an image URI, "
            "e.g. '<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>' (pin the tag)",
        )
    pinned_image("job_image", value)
    image = IMAGE_URI.fullmatch(value)
    registry = ECR_REGISTRY.fullmatch(image["registry"]) if image else None
    if image is None or registry is None:  # not in ECR: pulled as given
        return ecs.ContainerImage.from_registry(value)
    partition = "aws-cn" if image["registry"].endswith(".cn") else cdk.Aws.PARTITION
    name = image["repository"]
    arn = f"arn:{partition}:ecr:{registry['region']}:{registry['account']}:repository/{name}"
    repository = ecr.Repository.from_repository_attributes(
        scope, "JobImageRepository", repository_arn=arn, repository_name=name
    )
    return ecs.ContainerImage.from_ecr_repository(repository, image["tag"] or image["digest"])


@dataclass
class JobSettings:
    """What every job definition of a cluster shares (devices, roles, volumes, logs)."""

    instance: NeuronInstance
    image: ecs.ContainerImage
    execution_role: iam.IRole
    job_role: iam.IRole
    log_group: logs.ILogGroup
    volumes: list[batch.EcsVolume]
    shared_memory_size: cdk.Size
    timeout: cdk.Duration
    retry_attempts: int


def build_compute_environment(
    scope: Construct,
    *,
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    instance: NeuronInstance,
    max_nodes: int,
    launch_template: ec2.LaunchTemplate,
    machine_image: ec2.IMachineImage,
    role: iam.IRole,
    security_group: ec2.ISecurityGroup,
    placement_group: ec2.IPlacementGroup | None,
    update_timeout: cdk.Duration,
    terminate_on_update: bool,
    security_groups_in_launch_template: bool,
) -> batch.ManagedEc2EcsComputeEnvironment:
    """A managed EC2 compute environment of ``instance`` nodes that scales from zero.

    With EFA, the launch template's network interfaces carry the security groups, and the
    environment must name none: Batch refuses the pair ("Either compute environment Security Groups
    or Network Interfaces in Launch template are exclusively allowed", aws/aws-cdk#21577, fixed for
    the old L1-style construct by aws/aws-cdk#21579). ``security_group`` is still passed to the L2,
    which would otherwise create a group of its own, and the property is deleted from the template.

    minv CPUs 0: an idle cluster runs (and bills) nothing. max v CPUs = ``max_nodes`` x the
    instance's vCPUs. The launch template is pinned to its current version number: the L2 passes
    only the template id, so Batch would use ``$Default`` as it stood when the environment was
    created and never see a later change (aws/aws-cdk#28137); a number changes with every template
    change and makes CloudFormation update the environment.
    """
    environment = batch.ManagedEc2EcsComputeEnvironment(
        scope,
        "ComputeEnvironment",
        vpc=vpc,
        vpc_subnets=subnets,
        instance_types=[ec2.InstanceType(instance.name)],
        use_optimal_instance_classes=False,
        minv_cpus=0,
        maxv_cpus=max_nodes * instance.vcpus,
        # The AMI is the template's; named here as well so Batch does not substitute its default
        # ECS AMI, which has no Neuron driver.
        images=[batch.EcsMachineImage(image=machine_image, image_type=batch.EcsMachineImageType.ECS_AL2023)],
        launch_template=launch_template,
        instance_role=role,
        security_groups=[security_group],
        placement_group=placement_group,
        allocation_strategy=batch.AllocationStrategy.BEST_FIT_PROGRESSIVE,
        spot=False,
        update_timeout=update_timeout,
        terminate_on_update=terminate_on_update,
    )
    cfn = environment.node.default_child
    assert isinstance(cfn, batch.CfnComputeEnvironment)
    cfn.add_property_override(
        "ComputeResources.LaunchTemplate.Version", launch_template.latest_version_number
    )
    if security_groups_in_launch_template:
        cfn.add_property_deletion_override("ComputeResources.SecurityGroupIds")
    return environment


def build_job_queue(scope: Construct, environment: batch.IComputeEnvironment) -> batch.JobQueue:
    unplaceable = [
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
    ]
    return batch.JobQueue(
        scope,
        "JobQueue",
        compute_environments=[batch.OrderedComputeEnvironment(compute_environment=environment, order=1)],
        priority=1,
        job_state_time_limit_actions=unplaceable,
    )


def build_job_definition(
    scope: Construct,
    id: str,
    *,
    settings: JobSettings,
    plan: TrainingPlan,
    environment: dict[str, str],
    training_command: str,
    image: ecs.ContainerImage | None = None,
    timeout: cdk.Duration | None = None,
    retry_attempts: int | None = None,
) -> batch.MultiNodeJobDefinition:
    """A multi-node job definition: ``plan.nodes`` nodes, each running the launcher in one container.

    Every node gets the whole instance: every ``/dev/neuronN`` and ``/dev/infiniband/uverbsN``
    device from the catalog, all vCPUs, 90 % of memory, ``memlock`` unlimited (EFA pins memory), a
    high ``nofile`` limit, a large ``/dev/shm`` and an init process that reaps the many processes
    torchrun starts and forwards Batch's SIGTERM to them. Devices carry no ``Permissions``, so each
    gets the default, READ, WRITE and MKNOD: what EFA needs ("If permissions is set, it must be set
    to READ | WRITE | MKNOD", AWS Batch User Guide, "Elastic Fabric Adapter", read 2026-12-01), and
    the shape of the Neuron Batch samples known to run (aws-neuron/aws-neuron-samples
    torch-neuronx/training/aws-batch/llama2/templates/job_def.json: ``hostPath`` only). It also
    sidesteps the case question: aws-cdk-lib renders ``read``/``write``/``mknod`` where the Batch
    API documents ``READ | WRITE | MKNOD``.
    """
    instance = settings.instance
    linux = batch.LinuxParameters(
        scope,
        f"{id}LinuxParameters",
        shared_memory_size=settings.shared_memory_size,
        init_process_enabled=True,
    )
    linux.add_devices(
        *(
            batch.Device(host_path=path, container_path=path)
            for path in (*instance.neuron_devices, *instance.efa_devices)
        )
    )
    volumes = list(settings.volumes)
    # The launcher runs from the host's node-program bundle; with EFA it reads the host's topology.
    volumes.append(
        batch.EcsVolume.host(
            name="cdk-neuron-programs", host_path=INSTALL_DIR, container_path=INSTALL_DIR, readonly=True
        )
    )
    if instance.supports_efa:
        volumes.append(
            batch.EcsVolume.host(
                name="cdk-neuron-topology", host_path=TOPOLOGY_DIR, container_path=TOPOLOGY_DIR, readonly=True
            )
        )
    if instance.nvme_gb > 0:
        volumes.append(
            batch.EcsVolume.host(name="scratch", host_path=SCRATCH_DIR, container_path=SCRATCH_DIR)
        )
    container = batch.EcsEc2ContainerDefinition(
        scope,
        f"{id}Container",
        image=image or settings.image,
        cpu=instance.vcpus,
        memory=cdk.Size.mebibytes(container_memory_mib(instance)),
        command=launcher_command(),
        environment=environment,
        execution_role=settings.execution_role,
        job_role=settings.job_role,
        linux_parameters=linux,
        ulimits=[
            batch.Ulimit(name=batch.UlimitName.MEMLOCK, soft_limit=-1, hard_limit=-1),
            batch.Ulimit(name=batch.UlimitName.NOFILE, soft_limit=NOFILE_LIMIT, hard_limit=NOFILE_LIMIT),
        ],
        logging=ecs.LogDriver.aws_logs(
            stream_prefix="training",
            log_group=settings.log_group,
            mode=ecs.AwsLogDriverMode.NON_BLOCKING,
            max_buffer_size=LOG_BUFFER,
        ),
        volumes=volumes,
    )
    return batch.MultiNodeJobDefinition(
        scope,
        id,
        instance_type=ec2.InstanceType(instance.name),
        main_node=0,
        containers=[batch.MultiNodeContainer(start_node=0, end_node=plan.nodes - 1, container=container)],
        # Base64: the command must survive an image entrypoint that re-parses it (launcher.py).
        parameters={TRAINING_COMMAND_PARAMETER: encode_training_command(training_command)},
        timeout=settings.timeout if timeout is None else timeout,
        retry_attempts=settings.retry_attempts if retry_attempts is None else retry_attempts,
        retry_strategies=retry_strategies(),
    )


__all__ = [
    "CONTAINER_MEMORY_FRACTION",
    "JobSettings",
    "build_compute_environment",
    "build_job_definition",
    "build_job_queue",
    "container_memory_mib",
    "job_image",
    "retry_strategies",
]
