"""ModelCompilation: a Fargate task that exports a model for Inferentia2 and describes it.

One ECS cluster and one Fargate task definition of three containers sharing the task's ephemeral
storage: ``fetch`` (the AWS CLI image: an S3 source onto the volume), ``export`` (the serving image:
convert a training checkpoint, ``optimum-cli export neuron``, write ``cdk-neuron-artifact.json``) and
``upload`` (the AWS CLI image: the export, then its manifest). Each starts when the one before has
stopped (container ``dependsOn`` ``COMPLETE``) and first checks that it succeeded: a step that
succeeds leaves ``<WORK_DIR>/status/<step>.ok`` on the shared volume, and a step that finds its
predecessor's missing exits 1 at once. Only ``upload`` is essential, so the task always stops with
it, its exit code saying whether the artifact was written. (With ``SUCCESS`` a failed step leaves the
next one waiting on a condition that can never be met; a dependent container "stuck in PENDING"
is a reported outcome, aws/containers-roadmap#817, and a status file is the workaround it names.)
Every step runs under GNU ``timeout`` with its budget from :func:`cdk_neuron.timeouts.compile_step_seconds`
(both images are Linux images with coreutils: Ubuntu 22.04 for the serving image, Amazon Linux 2 for
the AWS CLI image, ``aws/aws-cli`` docker/Dockerfile ``FROM amazonlinux:2``), so a hung compile
stops billing. ``cdk-neuron compile`` runs the task (``ecs:RunTask``) with the request's settings as
container environment overrides.

The task definition replaces each image's ENTRYPOINT with ``bash -c <program>``: the serving image's
own entrypoint starts the server (``optimum-cli neuron serve``) whatever its arguments, and ECS, unlike
AWS Batch, lets a task definition set the entrypoint. The programs are the real files under
``node_programs/files/compile``, rehearsed under bash in the tests.

Every image the task pulls is in private ECR in its region by default, so the task starts in subnets
without a NAT (through the ``ecr.api``/``ecr.dkr`` interface endpoints and the S3 gateway): the serving
image is an AWS DLC there, and the AWS CLI image comes through an ECR pull-through cache of ECR Public
(:data:`AWS_CLI_IMAGE`; ECR Public needs no upstream credentials, "Sync an upstream registry with an
Amazon ECR private registry", Amazon ECR User Guide,
https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache.html, read 2026-12-02). The
construct creates the cached repository itself, so CloudFormation owns it (always deleted with the
stack, emptied first: it holds a copy of a public image): the cache uses a repository that already exists, and needs ``ecr:CreateRepository``
only when none does ("IAM permissions required to sync an upstream registry with an Amazon ECR private
registry", https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html). One
limit, AWS's: the *first* pull of a cached image through an ECR interface endpoint needs a route to the
internet ("Amazon ECR interface VPC endpoints (AWS PrivateLink)", considerations,
https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html, read 2026-12-02). Where the
task has none, ``cdk-neuron compile`` checks that the image is cached (``ecr:DescribeImages``) before it
starts the task, and names the one ``docker pull`` from outside the VPC that caches it.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from cdk_neuron import _cdk_values, _manifest, timeouts
from cdk_neuron._nag import acknowledge, acknowledge_wildcards
from cdk_neuron._scope import reported_by
from cdk_neuron._subnets import describe_selection, select_subnets
from cdk_neuron.compilation.base import ModelCompilationBase
from cdk_neuron.compilation.job import (
    CHECKPOINT_MOUNT,
    DEFAULT_ARTIFACT_PREFIX,
    FARGATE_CPU_UNITS,
    FARGATE_EPHEMERAL_GIB,
    FARGATE_MAX_WEIGHTS_GIB,
    FARGATE_MEMORY_MIB,
    WORK_DIR,
)
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import program
from cdk_neuron.serving.engines import ContainerImage, ServingEngine
from cdk_neuron.serving.permissions import image_pull_statements
from cdk_neuron.storage.checkpoint_store import ICheckpointStore
from cdk_neuron.storage.compile_cache import COMPILE_CACHE_ENV, ICompileCache
from cdk_neuron.training.acknowledgments import compile_cache_prefix

AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.22.35"
"""The AWS CLI v2 image the fetch and upload steps run (ENTRYPOINT ``aws``; "Using the official AWS
CLI version 2 Docker image", AWS CLI User Guide), as ECR Public serves it: by default the task pulls it
through the pull-through cache (:data:`ECR_PUBLIC_CACHE_PREFIX`)."""
ECR_PUBLIC = "public.ecr.aws"
AWS_CLI_REPOSITORY = "aws-cli/aws-cli"
AWS_CLI_TAG = "2.22.35"
NO_PULL_THROUGH_CACHE = ("cn-", "us-gov-")
"""Regions where ECR pull-through cache rules cannot be created (China and AWS GovCloud (US): "Using pull
through cache rules", considerations, Amazon ECR User Guide,
https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache.html): give ``aws_cli_image``."""
ECR_PUBLIC_CACHE_PREFIX = "cdk-neuron-ecr-public"
"""The default repository prefix of the ECR Public pull-through cache rule (one per prefix in an
account and region: give each ModelCompilation there its own ``ecr_public_cache_prefix``)."""
_CACHE_PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*\Z")
CONTAINERS = ("fetch", "export", "upload")
"""The task's containers, in the order they run."""
STEP_TOOLS: dict[str, tuple[str, ...]] = {
    "fetch": ("bash", "timeout", "rm", "mkdir", "ls", "touch", "aws"),
    "export": (
        "bash", "timeout", "python3", "mkdir", "rm", "du", "cut", "find", "wc", "date", "touch", "optimum-cli",
    ),
    "upload": ("bash", "timeout", "aws"),
}  # fmt: skip
"""The commands each step's program runs, and so what its image must ship (the tests rehearse each
program with only these on its PATH). ``fetch`` and ``upload`` run in the AWS CLI image, built
``FROM amazonlinux:2`` (aws/aws-cli ``docker/Dockerfile``), whose base has bash and coreutils
(``timeout``, ``rm``, ``mkdir``, ``ls``, ``touch``). ``export`` runs in the serving image, built on Ubuntu 22.04
(the tag's ``ubuntu22.04``; optimum-neuron ``docker/vllm/Dockerfile`` @v0.4.5), whose base has bash,
coreutils and findutils, and which installs python3 and optimum-cli."""


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class ModelCompilation(ModelCompilationBase):
    """Compile models for Inferentia2 on Fargate, in the serving image, into ``artifact_bucket``.

    :param vpc: where the task runs (private subnets; it needs S3, ECR, CloudWatch Logs, and the Hub
        for Hub sources). Required.
    :param artifact_bucket: where artifacts are written (``cdk-neuron compile --artifact-uri``, a new
        prefix under ``artifact_prefix``). Required.
    :param artifact_prefix: the key prefix the task may write under, e.g. ``"compiled/"``: the grant
        covers only it, so a compile cannot overwrite anything else in the bucket (a fleet's data,
        other artifacts are still write-once: the upload refuses a non-empty prefix, and the manifest
        is written with ``If-None-Match``). Default: ``"compiled/"``.
    :param engine: the serving engine whose image compiles. Default: ``ServingEngine.optimum_neuron()``
        (the only engine the task exports for).
    :param compile_cache: the shared Neuron compile cache, set as ``NEURON_COMPILE_CACHE_URL`` and
        granted read/write. Default: None (no cache).
    :param checkpoint_store: mounted read-only at ``/checkpoints`` so a training run's checkpoint can be
        compiled. Default: None (S3 and Hub sources only).
    :param hugging_face_token: secret whose string is a Hugging Face token, for gated Hub sources (and a
        gated base model's config and tokenizer). The execution role reads it, with ``kms:Decrypt`` on
        its key only when the ``ISecret`` knows the key: import a secret encrypted with your own key
        with ``Secret.from_secret_attributes(..., encryption_key=key)``, or the task fails to start
        (``ResourceInitializationError``). Default: None.
    :param vpc_subnets: the task's subnets. Default: the VPC's private subnets with egress, or its
        isolated subnets when it has none (then the VPC needs the ``ecr.api``, ``ecr.dkr`` and ``logs``
        interface endpoints, ``secretsmanager`` with a token, and the S3 gateway endpoint:
        :func:`cdk_neuron.node_programs.reach.compile_task`). With a One Zone ``checkpoint_store`` the
        task runs only in the selected subnets of the store's AZ (its only mount target is there).
    :param aws_cli_image: the image the fetch and upload steps run: any image with the AWS CLI v2,
        bash and coreutils whose ENTRYPOINT the task may replace (:data:`STEP_TOOLS`). Default: None,
        :data:`AWS_CLI_IMAGE` through an ECR pull-through cache this construct creates (its rule and
        its repository, ``<ecr_public_cache_prefix>/aws-cli/aws-cli``), pulled from private ECR in the
        task's region. Give a copy you keep in ECR (pull is granted on its repository), or
        ``ContainerImage("public.ecr.aws", "aws-cli/aws-cli", "2.22.35")`` to pull from ECR Public
        directly (the task's subnets then need a NAT).
    :param ecr_public_cache_prefix: the pull-through cache's repository prefix (2-30 characters; one rule
        per prefix in an account and region). Default: ``"cdk-neuron-ecr-public"``. Only without
        ``aws_cli_image``.
    :param kms_key: key of the log group. Default: a new key with rotation.
    :param removal_policy: for the key and the log group. Default: ``RETAIN_ON_UPDATE_OR_DELETE``. (The
        pull-through cache's repository is always deleted, emptied first: a copy of a public image.)
    :param log_retention: how long the compile logs are kept. Default: one month.

    :ivar cluster: the ECS cluster.
    :ivar task_definition: the Fargate task definition.
    :ivar task_role: the role the three containers run as.
    :ivar security_group: the task's security group (egress only).
    :ivar log_group: the compile logs.
    :ivar aws_cli_image_uri: the image the fetch and upload steps pull.
    :ivar aws_cli_repository: the pull-through cache's repository; None with ``aws_cli_image``.
    :ivar has_internet: whether the task's subnets route to the internet (a NAT): False for isolated
        subnets, where ``cdk-neuron compile`` refuses Hub sources.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        artifact_bucket: s3.IBucket,
        artifact_prefix: str = DEFAULT_ARTIFACT_PREFIX,
        engine: ServingEngine | None = None,
        compile_cache: ICompileCache | None = None,
        checkpoint_store: ICheckpointStore | None = None,
        hugging_face_token: secretsmanager.ISecret | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        aws_cli_image: ContainerImage | None = None,
        ecr_public_cache_prefix: str = ECR_PUBLIC_CACHE_PREFIX,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            stack = cdk.Stack.of(self)
            self._setup(
                engine=self._checked_engine(engine),
                artifact_bucket=artifact_bucket,
                artifact_prefix=artifact_prefix,
                kms_key=kms_key,
                removal_policy=removal_policy,
                log_retention=log_retention,
            )
            engine = self.engine
            self.cluster = ecs.Cluster(
                self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED
            )
            self.security_group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="cdk-neuron model compilation tasks: outbound only (S3, ECR, Logs, the Hub)",
                allow_all_outbound=True,
            )
            self.subnets = vpc_subnets or default_task_subnets(vpc)
            subnet_ids = _task_subnets(vpc, self.subnets, checkpoint_store)
            self.has_internet = routes_to_internet(vpc, self.subnets)
            self.task_role = iam.Role(
                self,
                "TaskRole",
                assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
                description="cdk-neuron model compilation: read sources, write artifacts",
            )
            self.task_definition = ecs.FargateTaskDefinition(
                self,
                "Task",
                cpu=FARGATE_CPU_UNITS,
                memory_limit_mib=FARGATE_MEMORY_MIB,
                ephemeral_storage_gib=FARGATE_EPHEMERAL_GIB,
                task_role=self.task_role,
                runtime_platform=ecs.RuntimePlatform(
                    cpu_architecture=ecs.CpuArchitecture.X86_64,
                    operating_system_family=ecs.OperatingSystemFamily.LINUX,
                ),
            )
            self.task_definition.add_volume(name="work")
            self.aws_cli_repository: ecr.Repository | None = None
            self._aws_cli_pull_granted = (
                True  # the pull-through cache's repository (else _aws_cli_image says)
            )
            cli_image = self._aws_cli_image(stack, aws_cli_image, ecr_public_cache_prefix)
            environment = {}
            if compile_cache is not None:
                compile_cache.grant_read_write(self.task_role)
                environment[COMPILE_CACHE_ENV] = compile_cache.url
            containers = self._containers(stack, engine, cli_image, environment, hugging_face_token)
            if checkpoint_store is not None:
                self._mount_checkpoints(checkpoint_store, containers["export"])
            self._grant_artifact_writes(artifact_bucket)
            self._grant_pull(stack, engine.image, "PullServingImage", "the serving image")
            self._acknowledge(compile_cache)
            _manifest.record_compilation(
                self,
                engine=engine.name,
                image=engine.image.uri(stack.region),
                cluster=self.cluster,
                task_definition=self.task_definition,
                security_group=self.security_group,
                subnets=subnet_ids,
                checkpoints=checkpoint_store is not None,
                artifact_bucket=artifact_bucket.bucket_name,
                artifact_prefix=self.artifact_prefix,
                aws_cli_image=self.aws_cli_image_uri,
                aws_cli_cache_repository=f"{ecr_public_cache_prefix}/{AWS_CLI_REPOSITORY}"
                if self.aws_cli_repository is not None
                else None,
                internet=self.has_internet,
            )

    # -- pieces ------------------------------------------------------------------------------------

    def _aws_cli_image(
        self,
        stack: cdk.Stack,
        image: ContainerImage | None,
        prefix: str,
    ) -> ecs.ContainerImage:
        """The fetch and upload steps' image: through the ECR Public pull-through cache, or ``image``."""
        if image is not None:
            if not isinstance(image, ContainerImage):
                raise NeuronConfigError(
                    "aws_cli_image",
                    image,
                    "pass a cdk_neuron.serving.ContainerImage(registry, repository, tag)",
                )
            self.aws_cli_image_uri = image.uri(stack.region)
            self._aws_cli_pull_granted = image.is_private_ecr
            self._grant_pull(stack, image, "PullAwsCliImage", "the AWS CLI image", sid="EcrPullAwsCliImage")
            return ecs.ContainerImage.from_registry(self.aws_cli_image_uri)
        region = stack.region
        if not cdk.Token.is_unresolved(region) and region.startswith(NO_PULL_THROUGH_CACHE):
            raise NeuronConfigError(
                "aws_cli_image",
                None,
                f'ECR pull-through cache rules cannot be created in {region} ("Using pull through cache rules", '
                "Amazon ECR User Guide): give aws_cli_image, a copy of "
                f"{AWS_CLI_IMAGE} in ECR in {region}",
            )
        if not isinstance(prefix, str) or not 2 <= len(prefix) <= 30 or not _CACHE_PREFIX.match(prefix):
            raise NeuronConfigError(
                "ecr_public_cache_prefix",
                prefix,
                "2-30 characters: lowercase letters, digits and . _ - / between them, e.g. cdk-neuron-ecr-public "
                "(ECR CreatePullThroughCacheRule ecrRepositoryPrefix)",
            )
        rule = ecr.CfnPullThroughCacheRule(
            self, "AwsCliCacheRule", ecr_repository_prefix=prefix, upstream_registry_url=ECR_PUBLIC
        )
        # The cached repository, created here so CloudFormation owns it: the cache imports into it
        # (no ecr:CreateRepository). Always deleted (emptied first), whatever removal_policy says: it
        # holds a copy of a public image, and a retained repository of this fixed name would make the
        # next create fail ("already exists": CloudFormation cannot create a named resource that exists).
        repository = ecr.Repository(
            self,
            "AwsCliCache",
            repository_name=f"{prefix}/{AWS_CLI_REPOSITORY}",
            image_scan_on_push=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
        repository.node.add_dependency(rule)
        # The first pull imports the image from ECR Public (ecr:BatchImportUpstreamImage); later pulls
        # are plain ECR pulls of this one repository.
        cache_pull: list[tuple[iam.PolicyStatement, str]] = [
            (
                iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                "ecr:GetAuthorizationToken has no resource-level permissions",
            ),
            (
                iam.PolicyStatement(
                    sid="EcrPullAwsCliImage",
                    actions=[
                        "ecr:BatchGetImage",
                        "ecr:GetDownloadUrlForLayer",
                        "ecr:BatchCheckLayerAvailability",
                        "ecr:BatchImportUpstreamImage",
                    ],
                    resources=[repository.repository_arn],
                ),
                "the pull-through cache's one repository",
            ),
        ]
        policy = iam.ManagedPolicy(
            self,
            "PullAwsCliImage",
            description=f"cdk-neuron model compilation {self.node.path}: pull (and import) the AWS CLI image",
            roles=[self.task_definition.obtain_execution_role()],
            statements=[s for s, _ in cache_pull],
        )
        acknowledge_wildcards(policy, cache_pull)
        self.aws_cli_repository = repository
        self.aws_cli_image_uri = f"{stack.account}.dkr.ecr.{stack.region}.amazonaws.com/{prefix}/{AWS_CLI_REPOSITORY}:{AWS_CLI_TAG}"
        return ecs.ContainerImage.from_registry(self.aws_cli_image_uri)

    def _containers(
        self,
        stack: cdk.Stack,
        engine: ServingEngine,
        cli_image: ecs.ContainerImage,
        environment: dict[str, str],
        token: secretsmanager.ISecret | None,
    ) -> dict[str, ecs.ContainerDefinition]:
        made: dict[str, ecs.ContainerDefinition] = {}
        previous: ecs.ContainerDefinition | None = None
        budgets = timeouts.compile_step_seconds(FARGATE_MAX_WEIGHTS_GIB)
        for name in CONTAINERS:
            image = (
                ecs.ContainerImage.from_registry(engine.image.uri(stack.region))
                if name == "export"
                else cli_image
            )
            container = self.task_definition.add_container(
                name,
                image=image,
                essential=name == "upload",  # the task ends with the upload (or with a failed step)
                entry_point=step_entry_point(budgets[name]),
                command=[program(f"compile/{name}.sh").read_text()],
                environment={**environment, "WORK_DIR": WORK_DIR}
                if name == "export"
                else {"WORK_DIR": WORK_DIR, "ARTIFACT_PREFIX": self.artifact_prefix}
                if name == "upload"
                else {"WORK_DIR": WORK_DIR},
                secrets={"HF_TOKEN": ecs.Secret.from_secrets_manager(token)}
                if token and name == "export"
                else None,
                logging=ecs.LogDrivers.aws_logs(stream_prefix=name, log_group=self.log_group),
            )
            container.add_mount_points(
                ecs.MountPoint(container_path=WORK_DIR, source_volume="work", read_only=False)
            )
            if previous is not None:
                # COMPLETE, not SUCCESS: the step starts whatever the previous one's exit, and its
                # program stops at once when the previous left no status/<step>.ok.
                container.add_container_dependencies(
                    ecs.ContainerDependency(
                        container=previous, condition=ecs.ContainerDependencyCondition.COMPLETE
                    )
                )
            if name == "export" and engine.image.is_private_ecr:
                cdk.Annotations.of(container).acknowledge_warning(
                    "@aws-cdk/aws-ecs:ecrImageRequiresPolicy",
                    "the execution role is granted pull on exactly this repository (PullServingImage)",
                )
            elif name != "export" and self._aws_cli_pull_granted:
                cdk.Annotations.of(container).acknowledge_warning(
                    "@aws-cdk/aws-ecs:ecrImageRequiresPolicy",
                    "the execution role is granted pull on exactly this repository (the pull-through cache's, "
                    "or PullAwsCliImage)",
                )
            made[name] = container
            previous = container
        return made

    def _mount_checkpoints(self, store: ICheckpointStore, export: ecs.ContainerDefinition) -> None:
        self.task_definition.add_volume(
            name="checkpoints",
            efs_volume_configuration=ecs.EfsVolumeConfiguration(
                file_system_id=store.file_system_id,
                transit_encryption="ENABLED",
                authorization_config=ecs.AuthorizationConfig(
                    access_point_id=store.access_point_id, iam="ENABLED"
                ),
            ),
        )
        export.add_mount_points(
            ecs.MountPoint(container_path=CHECKPOINT_MOUNT, source_volume="checkpoints", read_only=True)
        )
        store.grant_read(self.task_role, peer=self.security_group)

    def _grant_pull(
        self,
        stack: cdk.Stack,
        image: ContainerImage,
        policy_id: str,
        what: str,
        *,
        sid: str = "EcrPullServingImage",
    ) -> None:
        """The task execution role's pull of ``image`` (private ECR only), as a managed policy of its own."""
        if not image.is_private_ecr:
            return
        statements = image_pull_statements(stack, image, sid=sid)
        policy = iam.ManagedPolicy(
            self,
            policy_id,
            description=f"cdk-neuron model compilation {self.node.path}: pull {what}",
            roles=[self.task_definition.obtain_execution_role()],
            statements=[s for s, _ in statements],
        )
        acknowledge_wildcards(policy, statements)

    def _acknowledge(self, cache: ICompileCache | None) -> None:
        if cache is not None:
            compile_cache_prefix(self.task_role, cache)
        acknowledge(
            self.task_role,
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "The inline policy holds only grant-generated statements on this task's own resources (the "
            "compile-cache prefix, the checkpoint access point); the artifact writes are a managed policy.",
        )
        acknowledge(
            self.task_definition.obtain_execution_role(),
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "The inline policy is the one aws-ecs generates for this task's log group (and the Hub token "
            "secret); the image pulls are managed policies.",
        )
        acknowledge(
            self.task_definition,
            "AwsSolutions-ECS2",
            "the environment holds settings only (paths, shape, image names); the Hub token is a Secrets Manager secret",
        )
        # Each command is a bash program: its ${...} are shell expansions, which CloudFormation passes
        # through verbatim in any string outside Fn::Sub.
        acknowledge(
            self.task_definition.node.default_child or self.task_definition,
            "CloudFormation-Validate::E1029",
            "the container commands are bash programs whose ${...} are shell expansions, not Fn::Sub "
            "parameters; CloudFormation passes them through verbatim",
        )

    # -- the interfaces ----------------------------------------------------------------------------

    @property
    def connections(self) -> ec2.Connections:
        """The task's network access (outbound only)."""
        return self.security_group.connections

    @property
    def _role(self) -> iam.IRole:
        return self.task_role


def step_entry_point(seconds: int) -> list[str]:
    """A step's ENTRYPOINT: its program under GNU ``timeout`` (the whole process group is signalled,
    then killed ``COMPILE_KILL_AFTER`` later), exit 124 when it ran out of time."""
    return ["timeout", f"--kill-after={timeouts.COMPILE_KILL_AFTER}", str(seconds), "bash", "-c"]


def default_task_subnets(vpc: ec2.IVpc) -> ec2.SubnetSelection:
    """The VPC's private subnets with egress, else its isolated ones (a VPC without NAT)."""
    kind = ec2.SubnetType.PRIVATE_WITH_EGRESS if vpc.private_subnets else ec2.SubnetType.PRIVATE_ISOLATED
    return ec2.SubnetSelection(subnet_type=kind)


def routes_to_internet(vpc: ec2.IVpc, selection: ec2.SubnetSelection) -> bool:
    """Whether the selected subnets reach the internet: any of them a private subnet with egress (or
    public); False when all are isolated."""
    isolated = {s.node.path for s in vpc.isolated_subnets}
    return any(s.node.path not in isolated for s in select_subnets(vpc, selection).subnets)


def _task_subnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection, store: ICheckpointStore | None) -> list[str]:
    """The subnets ``ecs:RunTask`` is given: the selection, narrowed to a One Zone store's AZ.

    A One Zone file system has one mount target, and an ECS EFS volume mounts it by the file system
    id, which resolves only in that AZ ("Mounting One Zone file systems", Amazon EFS User Guide,
    https://docs.aws.amazon.com/efs/latest/ug/mounting-one-zone.html, read 2026-12-02).
    """
    subnets = select_subnets(vpc, selection).subnets
    zone = store.availability_zone if store is not None else None
    if zone is None:
        # A Regional store (a mount target in every AZ), or an import that names no AZ: give an imported
        # One Zone store its availability_zone, or this cannot narrow to it.
        return [s.subnet_id for s in subnets]
    zones = {s.subnet_id: _zone_of(s) for s in subnets}
    known = {z for z in zones.values() if z is not None}
    if cdk.Token.is_unresolved(zone) or None in zones.values():
        # One Zone, and its AZ or the subnets' unknown at synthesis: one subnet, or subnets of one known AZ,
        # cannot be wrong by more than the selection itself; several others might place the task where the
        # store has no mount target, which ECS then reports only as a failed mount (never a silent fallback).
        if len(subnets) == 1 or (None not in zones.values() and len(known) == 1):
            return [s.subnet_id for s in subnets]
        raise NeuronConfigError(
            "vpc_subnets",
            describe_selection(selection),
            "the checkpoint_store is One Zone and its only mount target's AZ cannot be matched to these "
            f"{len(subnets)} subnets at synthesis (the store's AZ or the subnets' AZs are unknown): select only the "
            "subnet in the store's AZ (vpc_subnets=ec2.SubnetSelection(subnets=[...])), or import the store and "
            "subnets with their availability_zone",
        )
    inside = [s.subnet_id for s in subnets if zones[s.subnet_id] == zone]
    if not inside:
        raise NeuronConfigError(
            "vpc_subnets",
            describe_selection(selection),
            f"the One Zone checkpoint_store is in {zone}, where its only mount target is, and no selected "
            f"subnet is ({', '.join(sorted({str(z) for z in zones.values()}))}): select a subnet in {zone}",
        )
    return inside


def _zone_of(subnet: ec2.ISubnet) -> str | None:
    try:
        zone = subnet.availability_zone
    except RuntimeError:  # imported without an AZ
        return None
    return None if cdk.Token.is_unresolved(zone) else zone


__all__ = [
    "AWS_CLI_IMAGE",
    "AWS_CLI_REPOSITORY",
    "AWS_CLI_TAG",
    "CONTAINERS",
    "ECR_PUBLIC",
    "ECR_PUBLIC_CACHE_PREFIX",
    "STEP_TOOLS",
    "ModelCompilation",
    "default_task_subnets",
    "routes_to_internet",
    "step_entry_point",
]
