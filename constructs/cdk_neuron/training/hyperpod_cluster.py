"""HyperPodTrainingCluster: a persistent, self-healing SageMaker HyperPod Slurm cluster of Trainium nodes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from cdk_neuron import _cdk_values, _manifest, validation
from cdk_neuron._custom_resource import handler_function
from cdk_neuron._nag import acknowledge
from cdk_neuron._scope import reported_by
from cdk_neuron.catalog import NeuronInstance
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.node_programs import FILES_DIR, render_settings
from cdk_neuron.node_programs.bundle import bundle_object_arn, node_bundle
from cdk_neuron.planner import TrainingPlan
from cdk_neuron.storage.checkpoint_store import ICheckpointStore
from cdk_neuron.storage.compile_cache import ICompileCache
from cdk_neuron.training import (
    acknowledgments,
    hyperpod_containers,
    hyperpod_facts,
    hyperpod_jobs,
    security,
)
from cdk_neuron.training import validation as checks
from cdk_neuron.training.capacity import Capacity
from cdk_neuron.training.cluster import (
    IHyperPodTrainingCluster,
    _TrainingClusterRef,
    checked_placement,
    checked_storage,
)
from cdk_neuron.validation import ECR_REGISTRY, IMAGE_URI

if TYPE_CHECKING:
    from cdk_neuron.training.hyperpod_facts import DeepHealthCheck

CLUSTER_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
# The Session Manager document the job commands open their non-interactive sessions with.
SESSION_DOCUMENT = "AWS-StartNonInteractiveCommand"
ENTRY_SCRIPT = "on-init-complete.sh"
# The controller group's entry point: marks the node as the controller, then runs ENTRY_SCRIPT.
CONTROLLER_ENTRY_SCRIPT = "controller.sh"
CONTROLLER_PROGRAM_FILE = "controller-program.sh"
CONTROLLER_SETTINGS_FILE = "controller-program.env"
EFS_UTILS_FILE = "amazon-efs-utils.deb"
# A directory asset (CDK zips it): amazon-efs-utils and the dependency .debs the image lacks.
EFS_UTILS_ARCHIVE = "amazon-efs-utils-debs.zip"
CONTROLLER_GROUP = "controller"
WORKER_GROUP = "trn"
DEFAULT_PARTITION = "train"
REGION_WARNING_ID = "@cdk-neuron/training:hyperpodRegionUnlisted"
JOB_PENDS_WARNING_ID = "@cdk-neuron/training:hyperpodJobPends"
# The nodes' security group description, pinned here: it is create-only, and a new group changes the
# cluster's create-only VpcConfig, which replaces the cluster (and fails while its name is kept). The
# EC2 engines' wording may change; this may not. Same text as the EC2 engines' today.
SECURITY_GROUP_DESCRIPTION = "cdk-neuron training nodes: EFA within the group, HTTPS out"
# Writing a few small objects takes seconds; a minute leaves room for a package copy.
WRITE_TIMEOUT = cdk.Duration.minutes(2)
# The node-program bundle (the stack's asset the EC2 engines' nodes download), copied beside the
# scripts: the lifecycle script unpacks it into /opt/cdk-neuron, for the job step and the launcher.
PROGRAMS_FILE = "node-programs.zip"
# The lifecycle files, from the node-program bundle (shipped as package data).
_LIFECYCLE_FILES = {
    ENTRY_SCRIPT: FILES_DIR / "hyperpod" / ENTRY_SCRIPT,
    CONTROLLER_ENTRY_SCRIPT: FILES_DIR / "hyperpod" / CONTROLLER_ENTRY_SCRIPT,
    "lib/common.sh": FILES_DIR / "lib" / "common.sh",
}
# The ENI actions HyperPod takes with the execution role to attach nodes to the VPC (awsome-distributed-
# training 1.architectures/5.sagemaker-hyperpod/sagemaker-hyperpod.yaml, 2025-04-10).
_ENI_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DetachNetworkInterface",
    "ec2:CreateTags",
]


@jsii.implements(iam.IGrantable)
class HyperPodTrainingCluster(_TrainingClusterRef):
    """A SageMaker HyperPod cluster (``AWS::SageMaker::Cluster``) with Slurm: a controller and a
    Trainium worker group, for teams that want a persistent cluster where AWS replaces failed nodes.

    - **Slurm through the API** (``Orchestrator.Slurm``, ``SlurmConfigStrategy: Managed``): the
      controller group has ``SlurmConfig.NodeType: Controller``, the workers ``Compute`` in one
      partition (``partition``). No ``provisioning_parameters.json``.
    - **Resilience:** ``NodeRecovery: Automatic`` (HyperPod reboots or replaces a node its health
      agent, basic or deep checks flag) and deep health checks on every node it starts
      (``deep_health_checks``). Jobs resume with ``srun --auto-resume=1``
      (:meth:`sbatch_script`), from the checkpoints they write to the store.
    - **Capacity:** On-Demand or a SageMaker training plan (``Capacity.training_plan(arn)``, the
      worker group's ``TrainingPlanArn``). ``AWS::SageMaker::Cluster`` has no capacity-reservation
      field, so EC2 reservations and Capacity Blocks are refused.
    - **Network:** one subnet's AZ (EFA), a security group allowing all traffic to and from itself
      (HyperPod's EFA health checks need it) and HTTPS out; no public IPs (the nodes' interfaces are
      in your private subnets), no SSH: shells go through SSM Session Manager.
    - **Lifecycle script** (Extended mode, ``OnInitComplete``): ``hyperpod/on-init-complete.sh`` from
      the node programs, written with its settings into a ``sagemaker-`` bucket (the prefix HyperPod's
      managed policy reads) under a content-hashed prefix, so a replaced node runs what the cluster was
      built with. Without ``job_image`` it reaches nothing outside the VPC; with one it installs Enroot
      and Pyxis (a NAT).
    - **Encryption:** a customer-managed, rotating key for the lifecycle bucket (and the script
      writer's logs). The nodes' root volumes use HyperPod's default, an AWS owned key: HyperPod takes
      a customer managed key only on clusters in continuous provisioning mode ("Customer managed AWS
      KMS key encryption for SageMaker HyperPod", https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-cmk.html,
      read 2026-12-02), which the API documents for EKS-orchestrated clusters only ("CreateCluster",
      ``NodeProvisioningMode``, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html);
      the two pages disagree about Slurm, and either way a Slurm cluster with a root-volume key is
      outside what AWS documents (deploy rule E9609). Nothing durable lives on a root volume:
      ``UpdateClusterSoftware`` replaces it, and checkpoints go to the store. HyperPod's own CloudWatch
      log group (``/aws/sagemaker/Clusters/<name>/<id>``) is created by the service and uses its
      encryption.

    HyperPod owns the instances: the EFA launch template, placement group, AMI, IMDS settings and
    ``/scratch`` of the other engines do not apply. It does not scale to zero: the controller bills
    while the cluster exists, the workers while ``worker_count`` is above 0.

    :param vpc: the VPC of the nodes.
    :param instance_type: the workers' Trainium type (catalog name), one HyperPod accepts:
        trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge.
    :param max_nodes: the most workers a job may use; the plan's bound. 1 to 6758.
    :param worker_count: workers to run now (the group's ``InstanceCount``, updatable in place).
        Default: ``max_nodes``. 0 keeps only the controller billing (``cdk-neuron`` scales it).
    :param plan: the distributed layout. Default: TP across one node's NeuronCores, DP across nodes.
    :param vpc_subnets: private subnets in one AZ. Default: as for the other engines.
    :param availability_zone_id: checked against the catalog's offerings. Default: None.
    :param checkpoints: a checkpoint store, mounted with TLS and IAM on every node; needs
        ``efs_utils_package``. Default: None.
    :param efs_utils_package: amazon-efs-utils for the HyperPod image's Ubuntu release as an S3 asset:
        its ``.deb`` (built with efs-utils' ``./build-deb.sh``), or a directory holding it and the
        ``.deb`` files of the dependencies the image lacks (``apt-get download stunnel4 nfs-common`` on
        the same release). The HyperPod Slurm image is Ubuntu, whose archive has no efs-utils; the
        lifecycle script installs it with ``apt-get install --no-download``, so a dependency neither the
        image nor the directory has fails the node by name. Default: None.
    :param efs_utils_release: the Ubuntu release (``/etc/os-release`` ``VERSION_ID``) the packages of
        ``efs_utils_package`` were built on. The lifecycle script compares it with the node's and fails
        the node by name on a mismatch (packages of another release install broken or not at all).
        Default: ``"22.04"``, the HyperPod Slurm image's (:data:`cdk_neuron.training.hyperpod_facts.UBUNTU_RELEASE`,
        with its sources).
    :param compile_cache: the S3 compile cache (``NEURON_COMPILE_CACHE_URL``). Default: None.
    :param capacity: ``Capacity.on_demand()`` (default) or ``Capacity.training_plan(arn)``.
    :param cluster_name: HyperPod's name (create-only: a change replaces the cluster). Default: from
        the construct path, at most 63 characters. A change of ``vpc_subnets`` or of the security group
        replaces the cluster too (``VpcConfig`` is create-only), and CreateCluster refuses a name that
        still exists, so such a change must come with a new ``cluster_name`` (``cdk-neuron impact``
        reports the update as failing otherwise).
    :param controller_instance_type: the controller's SageMaker type. Default: ``ml.m5.xlarge``.
    :param partition: the workers' Slurm partition. Default: ``train``.
    :param deep_health_checks: run on every worker HyperPod starts. Default: ``("InstanceStress",)``;
        ``InstanceConnectivity`` needs ``max_nodes`` of at least 2.
    :param kms_key: the key of the lifecycle bucket. Default: a new rotating key.
    :param removal_policy: for the key. Default: ``RETAIN_ON_UPDATE_OR_DELETE``. The cluster itself is
        deleted with the stack (it holds no data: root volumes are replaced on every software update).
    :param environment: extra variables for the training code. Default: none.
    :param controller_program: path of a bash program the controller runs once, in the background,
        after its lifecycle script (a transient systemd unit, ``cdk-neuron-controller-program``, with
        the training profile loaded and its output in ``/var/log/cdk-neuron-controller-program.log``):
        e.g. a smoke job submitted when Slurm answers. It ships in the lifecycle prefix, so it runs again
        on a replaced controller; it must be idempotent, and everything it reaches must be routed.
        Default: None.
    :param controller_settings: ``KEY=value`` settings for ``controller_program`` (upper-case names,
        single-line values), in the file ``$CDK_NEURON_CONTROLLER_SETTINGS``. Default: none.
    :param job_image: the image every job step runs in, as ``job_image`` on BatchTrainingCluster: the
        Neuron training DLC (``763104351884.dkr.ecr.<region>.amazonaws.com/pytorch-training-neuronx:<tag>``)
        or your image built on it, pinned by tag (Enroot takes no digest). The lifecycle script installs
        Enroot and Pyxis from the Ubuntu archive and github.com, so the nodes need a NAT; the execution
        role may pull the image's ECR repository; :meth:`sbatch_script` runs the step with
        ``srun --container-image`` and without the image's ENTRYPOINT
        (:mod:`cdk_neuron.training.hyperpod_containers`). Default: None: jobs run on the hosts, whose
        HyperPod image has the Neuron runtime and tools but no ML framework (bring your own, e.g. a venv
        on shared storage).

    :ivar cluster: the ``AWS::SageMaker::Cluster`` L1.
    :ivar role: the execution role of every node (HyperPod's managed policy, the VPC interfaces, the
        lifecycle scripts, and the grants of the checkpoint store and compile cache).
    :ivar security_group: the nodes' security group (all traffic within it, HTTPS out).
    :ivar kms_key: the key of the lifecycle bucket.
    :ivar lifecycle_bucket: the ``sagemaker-`` bucket holding the lifecycle scripts.
    :ivar lifecycle_uri: the scripts' content-hashed prefix (``SourceS3Uri``).
    :ivar instance: the workers' catalog instance.
    :ivar plan: the distributed layout the scripts and ``sbatch_script`` use.
    :ivar max_nodes: the most workers a job may use.
    :ivar worker_count: the workers running now.
    :ivar capacity: On-Demand or the training plan.
    :ivar partition: the workers' Slurm partition.
    :ivar checkpoints: the checkpoint store mounted on every node, else None.
    :ivar compile_cache: the compile cache the nodes use, else None.
    :ivar job_image: the image the job steps run in, else None (on the hosts).
    :ivar availability_zone: the AZ name of the subnets when known at synthesis, else None.
    :ivar availability_zone_id: the AZ ID given, else None.
    """

    _NO_METRICS_FIX = (
        "HyperPodTrainingCluster has no node publisher yet (the publisher needs boto3 in the system Python, "
        "which no public source shows on the HyperPod Slurm image, and a dev network cannot install it); "
        "read HyperPod's health events in the log group /aws/sagemaker/Clusters/<name>/<id>"
    )

    cluster: sagemaker.CfnCluster
    role: iam.Role
    security_group: ec2.SecurityGroup
    kms_key: kms.IKey
    lifecycle_bucket: s3.Bucket
    lifecycle_uri: str
    instance: NeuronInstance
    plan: TrainingPlan
    max_nodes: int
    worker_count: int
    capacity: Capacity
    partition: str
    checkpoints: ICheckpointStore | None
    compile_cache: ICompileCache | None
    job_image: str | None
    availability_zone: str | None
    availability_zone_id: str | None

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str | NeuronInstance,
        max_nodes: int,
        worker_count: int | None = None,
        plan: TrainingPlan | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        availability_zone_id: str | None = None,
        checkpoints: ICheckpointStore | None = None,
        efs_utils_package: s3_assets.Asset | None = None,
        efs_utils_release: str = hyperpod_facts.UBUNTU_RELEASE,
        compile_cache: ICompileCache | None = None,
        capacity: Capacity | None = None,
        cluster_name: str | None = None,
        controller_instance_type: str = hyperpod_facts.DEFAULT_CONTROLLER_TYPE,
        partition: str = DEFAULT_PARTITION,
        deep_health_checks: Sequence[DeepHealthCheck] = hyperpod_facts.DEFAULT_DEEP_HEALTH_CHECKS,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        environment: dict[str, str] | None = None,
        controller_program: str | None = None,
        controller_settings: Mapping[str, str] | None = None,
        job_image: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            stack = cdk.Stack.of(self)
            nodes = validation.whole_number(
                "max_nodes", max_nodes, minimum=1, maximum=hyperpod_facts.MAX_INSTANCE_COUNT
            )
            instance = checks.training_instance(instance_type, nodes)
            workers = nodes if worker_count is None else worker_count
            workers = validation.whole_number("worker_count", workers, minimum=0, maximum=nodes)
            checked_plan = checks.checked_plan(instance, nodes, plan)
            capacity = Capacity.on_demand() if capacity is None else capacity
            _hyperpod_capacity(capacity)
            region_warning = _hyperpod_type(instance, stack.region, capacity)
            checks.plan_fits_capacity(checked_plan, instance, capacity)
            name = _cluster_name(self, cluster_name)
            controller = validation.matching(
                "controller_instance_type",
                controller_instance_type,
                hyperpod_facts.CONTROLLER_TYPE,
                fix="give a SageMaker instance type, e.g. 'ml.m5.xlarge'",
            )
            validation.matching(
                "partition",
                partition,
                hyperpod_facts.GROUP_NAME,
                fix="letters, digits and single hyphens, at most 63 characters, e.g. 'train'",
            )
            health_checks = _deep_health_checks(deep_health_checks, nodes, workers)
            checkpoints, compile_cache = checked_storage(checkpoints, compile_cache)
            if checkpoints is not None and efs_utils_package is None:
                raise NeuronConfigError(
                    "efs_utils_package",
                    None,
                    "the checkpoint store needs amazon-efs-utils (TLS and IAM mounts), which the HyperPod "
                    "Slurm image (Ubuntu) lacks: build the .deb with efs-utils' ./build-deb.sh "
                    "(https://github.com/aws/efs-utils) and pass "
                    "efs_utils_package=aws_s3_assets.Asset(self, 'EfsUtils', path='amazon-efs-utils.deb')",
                )
            if efs_utils_package is not None and not isinstance(efs_utils_package, s3_assets.Asset):
                raise NeuronConfigError(
                    "efs_utils_package", efs_utils_package, "give an aws_s3_assets.Asset of the .deb file"
                )
            self._efs_utils_release = validation.matching(
                "efs_utils_release",
                efs_utils_release,
                hyperpod_facts.UBUNTU_RELEASE_PATTERN,
                fix=f"give the Ubuntu release the packages were built on, as /etc/os-release's VERSION_ID "
                f"(the HyperPod Slurm image's is {hyperpod_facts.UBUNTU_RELEASE})",
            )
            offering_warning, subnets = checked_placement(
                instance,
                checked_plan,
                availability_zone_id=availability_zone_id,
                stack=stack,
                vpc=vpc,
                vpc_subnets=vpc_subnets,
                checkpoints=checkpoints,
                compile_cache=compile_cache,
                environment=environment,
            )
            policy = _cdk_values.removal_policy("removal_policy", removal_policy)
            self._efs_utils_package = efs_utils_package
            if job_image is not None:
                hyperpod_containers.pyxis_image("job_image", job_image)
            self.job_image = job_image

            self.instance = instance
            self.plan = checked_plan
            self.max_nodes = nodes
            self.worker_count = workers
            self.capacity = capacity
            self.partition = partition
            self.checkpoints = checkpoints
            self.compile_cache = compile_cache
            self.availability_zone = subnets.availability_zone
            self.availability_zone_id = availability_zone_id
            self._node_metrics = None
            if offering_warning is not None:
                from cdk_neuron.training.cluster import OFFERING_WARNING_ID

                cdk.Annotations.of(self).add_warning_v2(OFFERING_WARNING_ID, offering_warning)
            if region_warning is not None:
                cdk.Annotations.of(self).add_warning_v2(REGION_WARNING_ID, region_warning)

            self.kms_key = kms_key or kms.Key(
                self,
                "Key",
                description=f"cdk-neuron HyperPod cluster {self.node.path}: lifecycle scripts",
                enable_key_rotation=True,
                removal_policy=policy,
            )
            self.security_group = security.node_security_group(
                self, "SecurityGroup", vpc, description=SECURITY_GROUP_DESCRIPTION
            )
            acknowledgments.efa_self_ingress(self.security_group)
            self._connections = ec2.Connections(security_groups=[self.security_group])
            self.role = self._execution_role(
                pulls_from_ecr=job_image is not None
                and hyperpod_containers.registry_credentials(job_image) is not None
            )
            # Reading the lifecycle scripts (SSE-KMS objects).
            self.kms_key.grant(self.role, "kms:Decrypt")
            self.lifecycle_bucket = self._lifecycle_bucket()
            # HyperPod copies the lifecycle prefix to each node with the execution role.
            iam.Grant.add_to_principal(
                grantee=self.role,
                actions=["s3:ListBucket"],
                resource_arns=[self.lifecycle_bucket.bucket_arn],
            )
            iam.Grant.add_to_principal(
                grantee=self.role,
                actions=["s3:GetObject"],
                resource_arns=[self.lifecycle_bucket.arn_for_objects("lifecycle/*")],
            )
            bucket_id = stack.resolve(
                stack.get_logical_id(cast("cdk.CfnResource", self.lifecycle_bucket.node.default_child))
            )
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/lifecycle/*]",
                "HyperPod reads the lifecycle scripts under a content-hashed prefix that changes with them; "
                "only lifecycle/ of the cluster's own bucket",
            )
            if checkpoints is not None:
                checkpoints.grant_read_write(self.role, peer=self)
            if compile_cache is not None:
                compile_cache.grant_read_write(self.role)
                acknowledgments.compile_cache_prefix(self.role, compile_cache)
            if job_image is not None:
                _grant_image_pull(self.role, job_image)
            acknowledgments.grant_policies(self.role)
            files = self._lifecycle_files(name, environment or {})
            files.update(_controller_files(controller_program, controller_settings))
            programs = node_bundle(self)
            prefix = "lifecycle/" + _content_hash(stack, files, [efs_utils_package, programs]) + "/"
            self.lifecycle_uri = f"s3://{self.lifecycle_bucket.bucket_name}/{prefix}"
            scripts = self._write_lifecycle(prefix, files, efs_utils_package, programs)

            lifecycle = {"sourceS3Uri": self.lifecycle_uri, "onInitComplete": ENTRY_SCRIPT}
            controller_lifecycle = {
                "sourceS3Uri": self.lifecycle_uri,
                "onInitComplete": CONTROLLER_ENTRY_SCRIPT,
            }
            worker_group: dict[str, object] = {
                "instanceGroupName": WORKER_GROUP,
                "instanceType": hyperpod_facts.ml_type(instance.name),
                "instanceCount": workers,
                "executionRole": self.role.role_arn,
                "threadsPerCore": 1,
                "lifeCycleConfig": lifecycle,
                "onStartDeepHealthChecks": list(health_checks),
                "slurmConfig": {"nodeType": "Compute", "partitionNames": [partition]},
            }
            if capacity.training_plan_arn is not None:
                worker_group["trainingPlanArn"] = capacity.training_plan_arn
            self.cluster = sagemaker.CfnCluster(
                self,
                "Resource",
                cluster_name=name,
                node_recovery="Automatic",
                orchestrator={"slurm": {"slurmConfigStrategy": "Managed"}},
                vpc_config={
                    "securityGroupIds": [self.security_group.security_group_id],
                    "subnets": [subnet.subnet_id for subnet in subnets.subnets],
                },
                instance_groups=[
                    {
                        "instanceGroupName": CONTROLLER_GROUP,
                        "instanceType": controller,
                        "instanceCount": 1,
                        "executionRole": self.role.role_arn,
                        "threadsPerCore": 1,
                        "lifeCycleConfig": controller_lifecycle,
                        "slurmConfig": {"nodeType": "Controller"},
                    },
                    worker_group,
                ],
            )
            # CloudFormation would otherwise create the cluster as soon as the role exists, before its
            # policy, the key grants, the security group's rules and the scripts are in place.
            self.cluster.node.add_dependency(self.role, self.security_group, scripts)
            if isinstance(self.kms_key, kms.Key):
                self.cluster.node.add_dependency(self.kms_key)
            # What the cdk-neuron CLI reads from a cloud assembly (plan, cost, preflight, the job loop).
            _manifest.record_training(
                self,
                engine="hyperpod",
                instance_type=self.instance.name,
                max_nodes=self.max_nodes,
                plan=self.plan,
                capacity=self.capacity,
                availability_zone_id=self.availability_zone_id,
                cluster=self.cluster,
                worker_count=self.worker_count,
                controller_instance_type=controller,
                job_image=job_image,
            )

    # -- attributes -----------------------------------------------------------------------------

    @property
    def cluster_arn(self) -> str:
        """The cluster's ARN."""
        return self.cluster.attr_cluster_arn

    @property
    def cluster_name(self) -> str:
        """HyperPod's name of the cluster (create-only)."""
        return cast("str", self.cluster.cluster_name)

    @property
    def cluster_id(self) -> str:
        """The id at the end of the ARN: SSM targets are ``sagemaker-cluster:<id>_<group>-<instance>``."""
        return cdk.Fn.select(1, cdk.Fn.split("cluster/", self.cluster_arn))

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The execution role: the nodes, and the jobs on them, run as it."""
        return self.role

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` run the job commands (``cdk-neuron submit``, ``status``, ``logs``, ``cancel``,
        ``list``): find the controller and open non-interactive Session Manager sessions on the nodes.

        ``sagemaker:DescribeCluster`` and ``sagemaker:ListClusterNodes`` on this cluster;
        ``ssm:StartSession`` on the cluster's nodes and the ``AWS-StartNonInteractiveCommand`` document
        (a ``sagemaker-cluster:`` target has no ARN a policy can name, so the node side is ``*``:
        cdk-nag reports ``AwsSolutions-IAM5[Resource::*]`` on the grantee's policy for its owner to
        acknowledge); ``ssm:TerminateSession`` on the grantee's own sessions ("Accessing your
        SageMaker HyperPod cluster nodes", Amazon SageMaker AI Developer Guide,
        https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html,
        read 2026-12-02). docs/cli.md lists the same statements for identities outside the app.
        """
        return _grant_submit_jobs(self, grantee, self.cluster_arn)

    def grant_scale(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` change how many workers run (``cdk-neuron scale``): ``sagemaker:UpdateCluster``,
        ``sagemaker:DescribeCluster`` and ``sagemaker:ListClusterNodes`` (scale refuses while deep
        health checks run on the group) on this cluster. Scaling down also reads the queue, which
        :meth:`grant_submit_jobs` allows."""
        return _grant_scale(grantee, self.cluster_arn)

    @staticmethod
    def from_hyperpod_training_cluster_attributes(
        scope: Construct,
        id: str,
        *,
        cluster_arn: str,
        cluster_name: str,
        security_group_id: str,
    ) -> IHyperPodTrainingCluster:
        """A HyperPod cluster built elsewhere (another stack or app): grant its job commands, reach it.

        - ``grant_submit_jobs(grantee)`` and ``grant_scale(grantee)``: ``cluster_arn``;
        - ``connections``: ``security_group_id`` (the cluster's ``security_group``);
        - ``metric_*()`` refuse, as on the built cluster: HyperPod nodes publish no Neuron metrics.

        It creates no resource.

        :param cluster_arn: e.g. the cluster stack's ``HyperPodClusterArn`` output, or a token
            (``arn:aws:sagemaker:<region>:<account>:cluster/<id>``).
        :param cluster_name: HyperPod's name of the cluster (``HyperPodClusterName``).
        :param security_group_id: the nodes' security group, e.g. ``sg-0123456789abcdef0``.
        """
        return _ImportedHyperPodTrainingCluster(
            scope, id, cluster_arn=cluster_arn, cluster_name=cluster_name, security_group_id=security_group_id
        )

    def sbatch_script(self, command: str, *, job_name: str = "train") -> str:
        """An sbatch script that runs ``command`` on the plan's nodes of this cluster's partition, one
        task per node through the shared launcher, in Slurm's topology order, with HyperPod's
        auto-resume (:func:`cdk_neuron.training.hyperpod_jobs.sbatch_script`): ``command`` must resume
        from its latest checkpoint, e.g. ``torchrun $TORCHRUN_ARGS train.py --resume latest``.
        """
        with reported_by(self):
            script = hyperpod_jobs.sbatch_script(
                nodes=self.plan.nodes, partition=self.partition, command=command, job_name=job_name
            )
        if self.worker_count < self.plan.nodes:
            cdk.Annotations.of(self).add_warning_v2(
                JOB_PENDS_WARNING_ID,
                f"the job asks for the plan's {self.plan.nodes} node(s) but worker_count is {self.worker_count}: "
                "it waits in the queue until the workers run (cdk-neuron scale, or worker_count)",
            )
        return script

    # -- construction -----------------------------------------------------------------------------

    def _execution_role(self, *, pulls_from_ecr: bool) -> iam.Role:
        role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="cdk-neuron HyperPod cluster nodes",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(CLUSTER_POLICY)],
        )
        role.add_to_policy(iam.PolicyStatement(actions=_ENI_ACTIONS, resources=["*"]))
        acknowledge(
            role,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{CLUSTER_POLICY}]",
            "The policy HyperPod documents for cluster nodes (its agents, logs and health reporting); "
            "AWS updates it with the service, so a hand-written copy would break newer agents.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "HyperPod creates, describes and deletes the nodes' network interfaces in this VPC with the "
            "execution role; interface ids are unknown before the nodes exist (the HyperPod "
            "prerequisites' VPC statement uses '*')."
            + (
                " ecr:GetAuthorizationToken (Enroot's login for the job image) supports no resource-level "
                "permissions; the image pull itself is granted on its one repository."
                if pulls_from_ecr
                else ""
            ),
        )
        return role

    def _lifecycle_bucket(self) -> s3.Bucket:
        stack = cdk.Stack.of(self)
        suffix = hashlib.sha256(self.node.path.encode()).hexdigest()[:8]
        # HyperPod's managed policy reads only buckets named sagemaker-* (ClusterLifeCycleConfig).
        name = f"{hyperpod_facts.LIFECYCLE_BUCKET_PREFIX}cdkn-{stack.account}-{stack.region}-{suffix}"
        bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            bucket_name=name,
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.kms_key,
            bucket_key_enabled=True,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        derived = "The bucket holds only the lifecycle scripts this construct writes at every deployment from the package's files"
        for rule in ("AwsSolutions-S1", "NIST.800.53.R5-S3BucketLoggingEnabled"):
            acknowledge(bucket, rule, f"{derived}; HyperPod reads them when it starts a node")
        for rule in ("NIST.800.53.R5-S3BucketVersioningEnabled", "NIST.800.53.R5-S3BucketReplicationEnabled"):
            acknowledge(bucket, rule, f"{derived}; each version has its own content-hashed prefix already")
        return bucket

    def _lifecycle_files(self, name: str, environment: dict[str, str]) -> dict[str, str]:
        store, cache = self.checkpoints, self.compile_cache
        settings: dict[str, str | int | None] = {"CLUSTER_NAME": name, "NODE_PROGRAMS": PROGRAMS_FILE}
        if store is not None:
            settings.update(
                {
                    "CHECKPOINT_FILE_SYSTEM_ID": store.file_system_id,
                    "CHECKPOINT_ACCESS_POINT_ID": store.access_point_id,
                    "CHECKPOINT_DIR": store.mount_path,
                    "EFS_UTILS_PACKAGE": _efs_utils_name(self._efs_utils_package),
                    "EFS_UTILS_UBUNTU": self._efs_utils_release,
                }
            )
        profile = hyperpod_jobs.hyperpod_environment(
            self.instance,
            self.plan,
            compile_cache_url=cache.url if cache else None,
            checkpoint_dir=store.mount_path if store else None,
        )
        profile.update(environment)
        if self.job_image is not None:
            settings.update(hyperpod_containers.lifecycle_settings(self.job_image))
            profile.update(
                hyperpod_containers.container_profile(
                    self.job_image, list(profile), checkpoint_dir=store.mount_path if store else None
                )
            )
        files = {path: source.read_text() for path, source in _LIFECYCLE_FILES.items()}
        files["hyperpod.env"] = render_settings(settings)
        files["training-profile.env"] = render_settings(profile)
        return files

    def _write_lifecycle(
        self, prefix: str, files: dict[str, str], package: s3_assets.Asset | None, programs: s3_assets.Asset
    ) -> cdk.CustomResource:
        writer = Construct(self, "LifecycleScripts")
        objects = self.lifecycle_bucket.arn_for_objects("lifecycle/*")
        statements: list[tuple[iam.PolicyStatement, str]] = [
            (
                iam.PolicyStatement(
                    sid="WriteLifecycleScripts",
                    actions=["s3:PutObject", "s3:DeleteObject"],
                    resources=[objects],
                ),
                "The scripts under lifecycle/ only, in content-hashed prefixes: the current one, and the "
                "previous one, which CloudFormation deletes after an update",
            ),
            (
                iam.PolicyStatement(
                    sid="EncryptLifecycleScripts",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[self.kms_key.key_arn],
                ),
                "",
            ),
        ]
        copies: dict[str, str] = {PROGRAMS_FILE: programs.s3_object_url}
        statements.append(
            (
                iam.PolicyStatement(
                    sid="ReadNodePrograms",
                    actions=["s3:GetObject"],
                    resources=[bundle_object_arn(programs)],
                ),
                "",
            )
        )
        if package is not None:
            copies[_efs_utils_name(package)] = package.s3_object_url
            statements.append(
                (
                    iam.PolicyStatement(
                        sid="ReadEfsUtilsPackage",
                        actions=["s3:GetObject"],
                        resources=[
                            f"arn:{cdk.Stack.of(self).partition}:s3:::{package.s3_bucket_name}/{package.s3_object_key}"
                        ],
                    ),
                    "",
                )
            )
        handler = handler_function(
            writer,
            handler="lifecycle_scripts.handler",
            description="cdk-neuron: write a HyperPod cluster's lifecycle scripts into its bucket",
            statements=statements,
            timeout=WRITE_TIMEOUT,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            outside_vpc_reason="The function only writes objects to S3 through its public endpoint and touches "
            "nothing in the VPC",
            kms_key=self.kms_key,
        )
        security.allow_log_encryption(self.kms_key)
        bucket = self.lifecycle_bucket.node.default_child
        assert isinstance(bucket, cdk.CfnResource)
        return handler.resource(
            writer,
            "Write",
            resource_type="Custom::CdkNeuronLifecycleScripts",
            properties={
                "Bucket": self.lifecycle_bucket.bucket_name,
                "Prefix": prefix,
                "Files": files,
                "Copies": copies,
            },
            empties=[bucket],
        )


def _hyperpod_type(instance: NeuronInstance, region: str, capacity: Capacity) -> str | None:
    """Refuses a type HyperPod does not run; a region whose price list lacks the type is refused, or a
    warning (returned) on a training plan, whose capacity the price-list table can lag."""
    if instance.name not in hyperpod_facts.HYPERPOD_TYPES:
        raise NeuronConfigError(
            "instance_type",
            instance.name,
            f"SageMaker HyperPod runs {one_of(hyperpod_facts.HYPERPOD_TYPES)} (the API's ClusterInstanceType); "
            "use one of them, or BatchTrainingCluster / AutoScalingTrainingCluster for this type",
        )
    if cdk.Token.is_unresolved(region) or instance.name in hyperpod_facts.types_in(region):
        return None  # an unresolved region: the deploy rule checks the synthesized template's region
    where = hyperpod_facts.regions_for(instance.name)
    sold = one_of(hyperpod_facts.types_in(region)) if hyperpod_facts.types_in(region) else "no Trainium type"
    if capacity.kind == "training-plan":
        return (
            f"HyperPod's price list has no {instance.name} in {region} (cfn-lint E3644 lists {sold} there); "
            "the training plan may still hold it, since the table follows published prices. CreateCluster "
            "fails if the plan does not cover this type in this region."
        )
    raise NeuronConfigError(
        "instance_type",
        f"{instance.name} in {region}",
        f"HyperPod sells {sold} in {region} (cfn-lint E3644, from the AWS price list); {instance.name} is sold in "
        f"{', '.join(where) or 'no region'}. Deploy there, or use a training plan (Capacity.training_plan) that "
        "holds it",
    )


def _efs_utils_name(package: s3_assets.Asset | None) -> str:
    """The package's name in the lifecycle prefix: a .deb, or the zip of a directory of .debs."""
    return EFS_UTILS_ARCHIVE if package is not None and package.is_zip_archive else EFS_UTILS_FILE


def _controller_files(program: object, settings: object) -> dict[str, str]:
    """The controller program and its settings as lifecycle files; {} without a program."""
    if program is None:
        if settings:
            raise NeuronConfigError(
                "controller_settings", dict(settings) if isinstance(settings, Mapping) else settings,
                "settings need a controller_program to read them",
            )  # fmt: skip
        return {}
    path = Path(program) if isinstance(program, str) else None
    if path is None or not path.is_file():
        raise NeuronConfigError("controller_program", program, "give the path of a bash program file")
    text = path.read_text(encoding="utf-8")
    if not text.startswith("#!"):
        raise NeuronConfigError("controller_program", program, "start the program with a #!/bin/bash line")
    if settings is not None and not isinstance(settings, Mapping):
        raise NeuronConfigError("controller_settings", settings, "give a mapping of NAME to value")
    values: dict[str, str | int | None] = dict(settings or {})
    return {
        CONTROLLER_PROGRAM_FILE: text,
        CONTROLLER_SETTINGS_FILE: render_settings(values),
    }


def _hyperpod_capacity(capacity: object) -> None:
    if not isinstance(capacity, Capacity):
        raise NeuronConfigError(
            "capacity", capacity, "use Capacity.on_demand() or Capacity.training_plan(arn)"
        )
    if capacity.kind not in ("on-demand", "training-plan"):
        raise NeuronConfigError(
            "capacity",
            capacity.describe(),
            "AWS::SageMaker::Cluster has no capacity-reservation field, so HyperPod cannot use EC2 "
            "reservations or Capacity Blocks: buy a SageMaker training plan for HyperPod "
            "(aws sagemaker search-training-plan-offerings --target-resources hyperpod-cluster) and "
            "pass Capacity.training_plan(arn), or use Capacity.on_demand()",
        )


def _cluster_name(scope: Construct, given: object) -> str:
    if given is not None:
        return validation.matching(
            "cluster_name",
            given,
            hyperpod_facts.CLUSTER_NAME,
            fix="letters, digits and single hyphens, starting and ending with a letter or digit, "
            "at most 63 characters (create-only: changing it replaces the cluster)",
        )
    name = cdk.Names.unique_resource_name(scope, max_length=63, separator="-")
    cleaned = "-".join(part for part in "".join(c if c.isalnum() else "-" for c in name).split("-") if part)
    return cleaned[:63].rstrip("-")


def _deep_health_checks(given: object, nodes: int, workers: int) -> tuple[DeepHealthCheck, ...]:
    if isinstance(given, str) or not isinstance(given, (list, tuple)) or not given:
        raise NeuronConfigError(
            "deep_health_checks",
            given,
            f"give a non-empty list of {one_of(hyperpod_facts.DEEP_HEALTH_CHECKS)}",
        )
    for check in given:
        if check not in hyperpod_facts.DEEP_HEALTH_CHECKS:
            raise NeuronConfigError(
                "deep_health_checks", check, f"use {one_of(hyperpod_facts.DEEP_HEALTH_CHECKS)}"
            )
    if len(set(given)) != len(given):
        raise NeuronConfigError("deep_health_checks", list(given), "name each check once")
    if "InstanceConnectivity" in given:
        if nodes < 2:
            raise NeuronConfigError(
                "deep_health_checks",
                "InstanceConnectivity",
                f"tests connectivity between nodes and needs at least 2 (max_nodes={nodes}); use ['InstanceStress']",
            )
        refusal = hyperpod_facts.connectivity_refusal(workers)
        if refusal is not None:
            raise NeuronConfigError(
                "deep_health_checks",
                "InstanceConnectivity",
                f"{refusal}, but worker_count={workers} (the group's InstanceCount): run 0 or at least 2 workers, "
                "or use ['InstanceStress']",
            )
    return tuple(cast("list[DeepHealthCheck]", list(given)))


def _content_hash(stack: cdk.Stack, files: dict[str, str], assets: Sequence[s3_assets.Asset | None]) -> str:
    hashes = [asset.asset_hash if asset is not None else None for asset in assets]
    resolved = stack.resolve({"files": files, "assets": hashes})
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()[:16]


class _ImportedHyperPodTrainingCluster(_TrainingClusterRef):
    """An existing HyperPod cluster (see :meth:`HyperPodTrainingCluster.from_hyperpod_training_cluster_attributes`)."""

    _NO_METRICS_FIX = HyperPodTrainingCluster._NO_METRICS_FIX

    def __init__(
        self, scope: Construct, id: str, *, cluster_arn: str, cluster_name: str, security_group_id: str
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self._cluster_arn = _cdk_values.identifier(
                "cluster_arn",
                cluster_arn,
                hyperpod_facts.CLUSTER_ARN,
                "a HyperPod cluster ARN, e.g. arn:aws:sagemaker:us-east-1:111111111111:cluster/abcdef123456",
            )
            self._cluster_name = _cdk_values.identifier(
                "cluster_name",
                cluster_name,
                hyperpod_facts.CLUSTER_NAME,
                "HyperPod's name of the cluster: letters, digits and single hyphens, at most 63 characters",
            )
            _cdk_values.identifier(
                "security_group_id",
                security_group_id,
                validation.SECURITY_GROUP_ID,
                "a security group id such as sg-0123456789abcdef0",
            )
            self._node_metrics = None
            self._connections = ec2.Connections(
                security_groups=[
                    ec2.SecurityGroup.from_security_group_id(
                        self, "SecurityGroup", security_group_id, allow_all_outbound=False
                    )
                ]
            )

    @property
    def cluster_arn(self) -> str:
        """The cluster's ARN."""
        return self._cluster_arn

    @property
    def cluster_name(self) -> str:
        """HyperPod's name of the cluster."""
        return self._cluster_name

    def grant_submit_jobs(self, grantee: iam.IGrantable) -> iam.Grant:
        """As :meth:`HyperPodTrainingCluster.grant_submit_jobs`."""
        return _grant_submit_jobs(self, grantee, self._cluster_arn)

    def grant_scale(self, grantee: iam.IGrantable) -> iam.Grant:
        """As :meth:`HyperPodTrainingCluster.grant_scale`."""
        return _grant_scale(grantee, self._cluster_arn)


def _grant_submit_jobs(scope: Construct, grantee: iam.IGrantable, cluster_arn: str) -> iam.Grant:
    stack = cdk.Stack.of(scope)
    document = stack.format_arn(
        service="ssm", account="", resource="document", resource_name=SESSION_DOCUMENT
    )
    grant = iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
        resource_arns=[cluster_arn],
    )
    grant = grant.combine(
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["ssm:StartSession"], resource_arns=[document, "*"]
        )
    )
    return grant.combine(
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["ssm:TerminateSession"],
            resource_arns=[
                stack.format_arn(service="ssm", resource="session", resource_name="${aws:userid}-*")
            ],
        )
    )


def _grant_image_pull(role: iam.Role, uri: str) -> None:
    """Enroot pulls the job image with the execution role: ECR login, and the one repository."""
    credentials = hyperpod_containers.registry_credentials(uri)
    match = IMAGE_URI.match(uri)
    if credentials is None or match is None:
        return  # not private ECR: pulled anonymously, through the NAT
    registry = ECR_REGISTRY.fullmatch(credentials[0])
    assert registry is not None
    partition = "aws-cn" if credentials[0].endswith(".cn") else cdk.Aws.PARTITION
    repository = (
        f"arn:{partition}:ecr:{registry['region']}:{registry['account']}:repository/{match['repository']}"
    )
    role.add_to_policy(iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]))
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"],
            resources=[repository],
        )
    )


def _grant_scale(grantee: iam.IGrantable, cluster_arn: str) -> iam.Grant:
    return iam.Grant.add_to_principal(
        grantee=grantee,
        # ListClusterNodes: scale refuses while deep health checks run on the group's nodes.
        actions=["sagemaker:UpdateCluster", "sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
        resource_arns=[cluster_arn],
    )


if TYPE_CHECKING:  # mypy proves the classes meet the interface
    _BUILT: type[IHyperPodTrainingCluster] = HyperPodTrainingCluster
    _IMPORTED: type[IHyperPodTrainingCluster] = _ImportedHyperPodTrainingCluster

__all__ = ["HyperPodTrainingCluster"]
