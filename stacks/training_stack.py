"""TrainingStack: the Trainium cluster, its checkpoint file system, its compile cache and the compile task."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from cdk_neuron import ami
from cdk_neuron.compilation import BatchModelCompilation, ModelCompilation
from cdk_neuron.monitoring import NodeMetrics
from cdk_neuron.serving.engines import ContainerImage
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import (
    DEFAULT_SECURITY_GROUP_WARNING_ID,
    AutoScalingTrainingCluster,
    BatchTrainingCluster,
    HyperPodTrainingCluster,
    TrainingClusterBase,
)
from stacks.config import (
    COMPILATION_LOGICAL_IDS,
    COMPILE_SUBNETS_OUTPUT,
    EnvironmentConfig,
    compile_token_secret,
)
from stacks.network_stack import LOG_RETENTION, NetworkStack
from stacks.pinned import PinnedAzStack, removal_policy_of
from stacks.scan_skips import skip_checkov
from stacks.serving_stack import import_secret

# docs/lifecycle.md, "The VPC default security group".
DEFAULT_SECURITY_GROUP_REASON = (
    "AWS Batch gives EFA multi-node containers the VPC's default group (the compute environment may name none "
    "when its launch template carries the EFA interfaces); the rules are TCP within the group, HTTPS out and NFS "
    "to the checkpoint file system, never all protocols and never ingress from outside the group. Nothing in "
    "these stacks launches without its own group (tests/test_lifecycle_gate.py); Security Hub EC2.2 for this "
    "VPC is suppressed with this reason."
)


class TrainingStack(PinnedAzStack):
    """The training cluster in the training AZ (``az_ids[0]``), with storage it mounts.

    The checkpoint store is One Zone in the training subnet, or Regional with a mount target in
    every AZ; either way the cluster mounts it in its own AZ. Outputs: the job queue and job
    definition ARNs (Batch engine), the checkpoint file system id and the compile cache URL.

    With ``compilation`` configured, the ModelCompilation task that ``cdk-neuron compile`` runs: in the
    checkpoint store's subnets (the training subnet for One Zone, its only mount target), mounting the
    store, sharing the compile cache (and its key, for the compile logs), compiling in the fleet's image
    into the fleet's artifact bucket. Its cluster, task definition and security group keep pinned logical
    ids, and ``CompileSubnetIds`` lists its subnets, so the CLI finds it from cdk.json alone.
    """

    def __init__(
        self, scope: Construct, id: str, *, config: EnvironmentConfig, network: NetworkStack, **kwargs: Any
    ) -> None:
        super().__init__(scope, id, config=config, **kwargs)
        training, storage = config.training, config.storage
        removal = removal_policy_of(config)
        checkpoint = training.checkpoint

        self.compile_cache = CompileCache(self, "CompileCache", removal_policy=removal)
        self.checkpoints = CheckpointStore(
            self,
            "Checkpoints",
            vpc=network.vpc,
            vpc_subnets=network.training_subnets if storage.one_zone else network.workload_subnets,
            one_zone=storage.one_zone,
            removal_policy=removal,
            infrequent_access_after_days=storage.infrequent_access_after_days,
            backup_retention=cdk.Duration.days(storage.backup_retention_days),
            model_parameters=checkpoint.model_parameters if checkpoint else None,
            writers=checkpoint.writers if checkpoint else 1,
            master_weights_in_checkpoint=checkpoint.master_weights_in_checkpoint if checkpoint else False,
            # EFS One Zone needs an AZ *name*; the VPC knows only AZ IDs, so CloudFormation supplies
            # the name of the pinned training subnet.
            availability_zone=network.training_subnet_availability_zone if storage.one_zone else None,
        )
        # The engine picks the class; every other prop is shared.
        nodes: dict[str, Any] = {
            "vpc": network.vpc,
            "instance_type": training.instance_type,
            "max_nodes": training.max_nodes,
            "plan": training.training_plan(),
            "vpc_subnets": network.training_subnets,
            "availability_zone_id": config.training_az_id,
            "checkpoints": self.checkpoints,
            "compile_cache": self.compile_cache,
            "capacity": training.capacity,
            # The nodes publish Neuron metrics for the environment's MonitoringStack.
            "node_metrics": NodeMetrics(environment=config.name),
            "removal_policy": removal,
            "machine_image": ami.machine_image(config.ami_release),
        }
        self.cluster: TrainingClusterBase | HyperPodTrainingCluster
        if training.engine == "hyperpod":
            # The configuration requires both with hyperpod.
            assert training.efs_utils_package is not None and training.job_image is not None
            assert training.efs_utils_release is not None
            self.cluster = HyperPodTrainingCluster(
                self,
                "Cluster",
                vpc=network.vpc,
                instance_type=training.instance_type,
                max_nodes=training.max_nodes,
                worker_count=training.worker_count,
                plan=training.training_plan(),
                vpc_subnets=network.training_subnets,
                availability_zone_id=config.training_az_id,
                checkpoints=self.checkpoints,
                efs_utils_package=s3_assets.Asset(self, "EfsUtils", path=training.efs_utils_package),
                efs_utils_release=training.efs_utils_release,
                compile_cache=self.compile_cache,
                capacity=training.capacity,
                removal_policy=removal,
                job_image=training.job_image,
            )
        elif training.engine == "batch":
            assert training.job_image is not None  # the configuration requires it with the batch engine
            self.cluster = BatchTrainingCluster(self, "Cluster", job_image=training.job_image, **nodes)
            if self.cluster.task_security_group is not self.cluster.security_group:
                cdk.Validations.of(self.cluster).acknowledge(
                    cdk.Acknowledgment(
                        id=f"Annotation::{DEFAULT_SECURITY_GROUP_WARNING_ID}",
                        reason=DEFAULT_SECURITY_GROUP_REASON,
                    )
                )
        else:
            self.cluster = AutoScalingTrainingCluster(self, "Cluster", **nodes)

        self.compilation = self._compilation(config, network)
        self._accept_scan_findings()

        if isinstance(self.cluster, BatchTrainingCluster):
            cdk.CfnOutput(self, "JobQueueArn", value=self.cluster.job_queue.job_queue_arn)
            cdk.CfnOutput(self, "JobDefinitionArn", value=self.cluster.job_definition.job_definition_arn)
        elif isinstance(self.cluster, AutoScalingTrainingCluster):
            cdk.CfnOutput(
                self, "AutoScalingGroupName", value=self.cluster.auto_scaling_group.auto_scaling_group_name
            )
        elif isinstance(self.cluster, HyperPodTrainingCluster):
            cdk.CfnOutput(self, "HyperPodClusterArn", value=self.cluster.cluster_arn)
            cdk.CfnOutput(self, "HyperPodClusterName", value=self.cluster.cluster_name)
        cdk.CfnOutput(self, "CheckpointFileSystemId", value=self.checkpoints.file_system_id)
        cdk.CfnOutput(self, "CompileCacheUrl", value=self.compile_cache.url)

    def _compilation(
        self, config: EnvironmentConfig, network: NetworkStack
    ) -> ModelCompilation | BatchModelCompilation | None:
        settings = config.compilation
        if settings is None:
            return None
        token = compile_token_secret(config)
        if settings.runs_on == "training-cluster":
            # The configuration allows it with the batch engine only (stacks.config.compile_runs_on).
            assert isinstance(self.cluster, BatchTrainingCluster) and config.training.job_image is not None
            registry, _, rest = config.training.job_image.partition("/")
            repository, _, tag = rest.rpartition(":")
            on_cluster = BatchModelCompilation(
                self,
                "Compilation",
                training_cluster=self.cluster,
                artifact_bucket=s3.Bucket.from_bucket_name(self, "ArtifactBucket", settings.artifact_bucket),
                artifact_prefix=settings.artifact_prefix,
                engine=config.serving.engine,
                compile_cache=self.compile_cache,
                checkpoint_store=self.checkpoints,
                hugging_face_token=import_secret(self, "HuggingFaceToken", token)
                if token is not None
                else None,
                # Fetch and upload run in the training job image: nodes that trained have it cached.
                tools_image=ContainerImage(registry, repository, tag),
                kms_key=self.compile_cache.kms_key,
                removal_policy=removal_policy_of(config),
                log_retention=LOG_RETENTION[settings.log_retention_days],
            )
            for name, resource in (
                ("job_queue", on_cluster.job_queue.node.default_child),
                ("job_definition", on_cluster.job_definition),
            ):
                assert isinstance(resource, cdk.CfnResource)
                resource.override_logical_id(COMPILATION_LOGICAL_IDS[name])
            return on_cluster
        image = None
        if settings.aws_cli_image is not None:
            registry, _, rest = settings.aws_cli_image.partition("/")
            repository, _, tag = rest.rpartition(":")
            image = ContainerImage(registry, repository, tag)
        compilation = ModelCompilation(
            self,
            "Compilation",
            vpc=network.vpc,
            artifact_bucket=s3.Bucket.from_bucket_name(self, "ArtifactBucket", settings.artifact_bucket),
            artifact_prefix=settings.artifact_prefix,
            engine=config.serving.engine,
            compile_cache=self.compile_cache,
            checkpoint_store=self.checkpoints,
            hugging_face_token=import_secret(self, "HuggingFaceToken", token) if token is not None else None,
            # The store's subnets: a One Zone store's only mount target is in the training subnet.
            vpc_subnets=network.training_subnets if config.storage.one_zone else network.workload_subnets,
            aws_cli_image=image,
            ecr_public_cache_prefix=settings.ecr_public_cache_prefix,
            # The compile cache's key also encrypts the compile logs: no key of its own to pay for.
            kms_key=self.compile_cache.kms_key,
            removal_policy=removal_policy_of(config),
            log_retention=LOG_RETENTION[settings.log_retention_days],
        )
        for name, resource in (
            ("cluster", compilation.cluster),
            ("task_definition", compilation.task_definition),
            ("security_group", compilation.security_group),
        ):
            child = resource.node.default_child
            assert isinstance(child, cdk.CfnResource)
            child.override_logical_id(COMPILATION_LOGICAL_IDS[name])
        subnets = network.vpc.select_subnets(
            subnet_type=(
                network.training_subnets if config.storage.one_zone else network.workload_subnets
            ).subnet_type,
            availability_zones=[config.training_az_id] if config.storage.one_zone else None,
        ).subnet_ids
        cdk.CfnOutput(self, COMPILE_SUBNETS_OUTPUT, value=cdk.Fn.join(",", subnets))
        return compilation

    def _accept_scan_findings(self) -> None:
        bucket = self.compile_cache.bucket
        skip_checkov(
            bucket,
            "CKV_AWS_18",
            "Holds only regenerable Neuron compiler output, readable and writable by the cluster's roles alone.",
        )
        skip_checkov(
            bucket,
            "CKV_AWS_21",
            "Cache entries are regenerable and expire after 30 days; versioning would keep every overwritten "
            "graph and defeat the expiry.",
        )
        if isinstance(self.cluster, HyperPodTrainingCluster):
            return  # its key policy names no '*' principal
        skip_checkov(
            self.cluster.kms_key,
            "CKV_AWS_33",
            "Principal '*' is confined by aws:PrincipalArn to this account's Auto Scaling and Batch "
            "service-linked roles and by kms:CallerAccount; naming the roles as principals would fail key "
            "creation in accounts where those roles do not exist yet.",
        )
