"""What ``AWS::SageMaker::Cluster`` (SageMaker HyperPod) accepts, with the public sources.

Plain Python (no ``aws_cdk``): the construct, the deploy rules and the app's configuration all read
these facts.

Sources (read 2026-12-02):

- HP-CFN: "AWS::SageMaker::Cluster", AWS CloudFormation Template Reference,
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html
  and "AWS::SageMaker::Cluster ClusterInstanceGroup",
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-sagemaker-cluster-clusterinstancegroup.html
  (``ClusterName`` and ``VpcConfig`` are create-only: a change replaces the cluster;
  ``InstanceCount`` 0 to 6758; ``OnStartDeepHealthChecks`` of ``InstanceStress`` and
  ``InstanceConnectivity``; ``TrainingPlanArn``; ``LifeCycleConfig`` with ``OnCreate`` or
  ``OnInitComplete``).
- HP-LCC: "ClusterLifeCycleConfig", Amazon SageMaker API Reference,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html
  ("Make sure that the S3 bucket path starts with s3://sagemaker-": the managed
  ``AmazonSageMakerClusterInstanceRolePolicy`` reads only buckets with that prefix).
- HP-TYPES: the ``ClusterInstanceType`` enum of the SageMaker API (botocore 1.44 service model,
  ``sagemaker/2017-07-24/service-2.json``): the Trainium entries are ``ml.trn1.32xlarge``,
  ``ml.trn1n.32xlarge``, ``ml.trn2.3xlarge`` and ``ml.trn2.48xlarge``; no ``ml.trn1.2xlarge``,
  no UltraServer (trn2u) and no Trn3 type.
- HP-REGIONS: cfn-lint 1.58 rule E3644 ``ClusterInstanceTypeEnum``
  (``cfnlint/data/schemas/extensions/aws_sagemaker_cluster/instancetype_enum.json``, generated from
  the AWS Price List), https://github.com/aws-cloudformation/cfn-lint: which ``ml.trn*`` type
  HyperPod sells in which region. It follows published prices, so it can lag capacity that only
  training plans sell; a type missing here is refused with that caveat in the message.
- HP-NODE-RECOVERY: "CreateCluster", NodeRecovery, Amazon SageMaker API Reference,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html ("When set to
  Automatic, SageMaker HyperPod will automatically reboot or replace faulty nodes").
- HP-DHC: "Deep health checks" (Slurm), Amazon SageMaker Developer Guide,
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-deep-health-checks.html
  (``InstanceConnectivity`` needs at least two nodes).
- HP-CMK: "Customer managed AWS KMS key encryption for SageMaker HyperPod", Amazon SageMaker AI
  Developer Guide, https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-cmk.html ("Customer
  managed key encryption is only supported for clusters using the continuous node provisioning
  mode"; "KMS key transition isn't currently supported"), against "CreateCluster",
  ``NodeProvisioningMode``, Amazon SageMaker API Reference (continuous provisioning "is only
  supported for EKS orchestrated clusters"). The pages disagree about Slurm; either way a volume key
  without ``NodeProvisioningMode: Continuous`` is outside what AWS documents.
- HP-DHC-API: the API's ``DeepHealthCheckType`` (botocore 1.44) also lists
  ``MultiNodeTrainingValidation``, which the CloudFormation schema's ``OnStartDeepHealthChecks`` does
  not accept; :data:`DEEP_HEALTH_CHECKS` is the schema's list.
- HP-UBUNTU: the HyperPod Slurm image is Ubuntu 22.04 (jammy). AWS's HyperPod samples moved to it in
  May 2025: aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/
  LifecycleScripts/base-config/setup_mariadb_accounting.sh`` ("Required with Ubuntu 22.04 AMI release",
  commit 3305a4d, 2025-05-13, unchanged at 7217859, 2026-02-21), commit 8dc562d ("FSx OZFS was not able
  to mount with Ubuntu 22.04 upgrade", 2025-05-15) and commit 0ec4292 ("updates to slurm LCS following
  ubuntu 22.04 debug", 2025-05-16); the HyperPod Llama 3 Slurm sample installs ``python3.10-venv``
  (Python 3.10 is Ubuntu 22.04's python3; ``3.test_cases/pytorch/neuronx-distributed/llama3/slurm/
  README.md`` @7217859). AWS's HyperPod pages name no release; a node reports its own in
  ``/etc/os-release`` (``VERSION_ID``), which the lifecycle script checks.
- HP-SG: aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/
  sagemaker-hyperpod.yaml`` (2025-04-10): the security group must allow all traffic to and from
  itself, or trn1 clusters fail with "EFA health checks did not run successfully".
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Literal

RESOURCE_TYPE = "AWS::SageMaker::Cluster"

# HP-TYPES: the Trainium types HyperPod accepts, by catalog name.
HYPERPOD_TYPES: tuple[str, ...] = ("trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge", "trn2.48xlarge")

# HP-REGIONS (cfn-lint 1.58 E3644): the Trainium types HyperPod sells per region. Regions not
# listed have no HyperPod Trainium type (or no AWS::SageMaker::Cluster at all).
REGION_TYPES: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "us-east-1": ("trn1.32xlarge", "trn1n.32xlarge"),
        "us-east-2": ("trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge"),
        "us-west-2": ("trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge"),
        "eu-west-1": ("trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge"),
        "sa-east-1": ("trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge"),
        "ap-southeast-4": ("trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge"),
        "ap-northeast-1": ("trn1.32xlarge", "trn1n.32xlarge"),
        "ap-south-1": ("trn1.32xlarge", "trn1n.32xlarge"),
        "ap-southeast-1": ("trn1.32xlarge", "trn1n.32xlarge"),
        "ap-southeast-2": ("trn1.32xlarge", "trn1n.32xlarge"),
        "eu-central-1": ("trn1.32xlarge", "trn1n.32xlarge"),
        "eu-north-1": ("trn1.32xlarge", "trn1n.32xlarge"),
    }
)

# HP-CFN: names, counts and the create-only properties.
CLUSTER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
GROUP_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
MAX_INSTANCE_COUNT = 6758
CREATE_ONLY: tuple[str, ...] = ("ClusterName", "VpcConfig", "Orchestrator/Eks")
# DescribeCluster's ClusterArn pattern (botocore 1.44 ``ClusterArn``): the id, not the name, ends it.
CLUSTER_ARN = re.compile(r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:cluster/[a-z0-9]{12}\Z")
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"  # HP-LCC

DeepHealthCheck = Literal["InstanceStress", "InstanceConnectivity"]
DEEP_HEALTH_CHECKS: tuple[DeepHealthCheck, ...] = ("InstanceStress", "InstanceConnectivity")
CONTINUOUS_PROVISIONING = "Continuous"  # HP-CMK: the only mode in which a volume key is supported


def connectivity_refusal(instance_count: int) -> str | None:
    """Why ``InstanceConnectivity`` cannot run on a group of ``instance_count`` nodes (HP-DHC: it tests
    between nodes, so it needs at least two); None when it can, or when the group runs no node (0)."""
    if instance_count == 1:
        return "InstanceConnectivity tests connectivity between nodes and needs at least 2 in the group"
    return None


# InstanceStress alone by default: the Slurm page documents InstanceConnectivity as an NCCL test for
# GPUs (HP-DHC); its Trainium behaviour on Slurm is undocumented, so it is opt-in.
DEFAULT_DEEP_HEALTH_CHECKS: tuple[DeepHealthCheck, ...] = ("InstanceStress",)

# HP-UBUNTU: the Ubuntu release (os-release VERSION_ID) of the HyperPod Slurm image, which packages
# staged for it (amazon-efs-utils and its dependencies) must be built for.
UBUNTU_RELEASE = "22.04"
UBUNTU_RELEASE_PATTERN = re.compile(r"[0-9]{2}\.[0-9]{2}\Z")

# The controller runs slurmctld only; a general-purpose type HyperPod accepts.
DEFAULT_CONTROLLER_TYPE = "ml.m5.xlarge"
CONTROLLER_TYPE = re.compile(r"ml\.[a-z0-9]+\.[a-z0-9]+\Z")


def ml_type(catalog_name: str) -> str:
    """SageMaker's name of a catalog instance type: ``trn1.32xlarge`` -> ``ml.trn1.32xlarge``."""
    return f"ml.{catalog_name}"


def types_in(region: str) -> tuple[str, ...]:
    """The Trainium types HyperPod sells in ``region`` (HP-REGIONS); empty when none."""
    return REGION_TYPES.get(region, ())


def regions_for(catalog_name: str) -> tuple[str, ...]:
    """The regions where HyperPod sells ``catalog_name`` (HP-REGIONS)."""
    return tuple(region for region, types in REGION_TYPES.items() if catalog_name in types)


__all__ = [
    "CLUSTER_ARN",
    "CLUSTER_NAME",
    "CONTINUOUS_PROVISIONING",
    "CONTROLLER_TYPE",
    "CREATE_ONLY",
    "DEEP_HEALTH_CHECKS",
    "DEFAULT_CONTROLLER_TYPE",
    "DEFAULT_DEEP_HEALTH_CHECKS",
    "GROUP_NAME",
    "HYPERPOD_TYPES",
    "LIFECYCLE_BUCKET_PREFIX",
    "MAX_INSTANCE_COUNT",
    "REGION_TYPES",
    "RESOURCE_TYPE",
    "UBUNTU_RELEASE",
    "UBUNTU_RELEASE_PATTERN",
    "DeepHealthCheck",
    "connectivity_refusal",
    "ml_type",
    "regions_for",
    "types_in",
]
