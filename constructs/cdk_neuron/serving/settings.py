"""The validated inputs each fleet class builds from (internal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdk_neuron.metrics.node_metrics import NodeMetrics
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.timing import MeasuredStartup

if TYPE_CHECKING:
    import aws_cdk as cdk
    from aws_cdk import aws_certificatemanager as acm
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_logs as logs
    from aws_cdk import aws_s3 as s3
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_sns as sns


@dataclass(frozen=True)
class FleetSettings:
    """What both backends build from, after the fleet validated its props."""

    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection
    placement_subnets: ec2.SubnetSelection
    model: ModelSpec
    engine: ServingEngine
    plan: ServingPlan
    min_capacity: int
    max_capacity: int
    key: kms.IKey
    key_created: bool
    removal_policy: cdk.RemovalPolicy
    artifact_key: kms.IKey | None
    target_concurrency: float
    measured_startup: MeasuredStartup | None


@dataclass(frozen=True)
class Ec2Settings(FleetSettings):
    """An :class:`~cdk_neuron.serving.Ec2InferenceFleet`'s own options, validated."""

    min_healthy_percentage: int
    certificate: acm.ICertificate | None
    hugging_face_token: secretsmanager.ISecret | None
    access_log_bucket: s3.IBucket | None
    machine_image: ec2.IMachineImage | None
    notification_topic: sns.ITopic | None
    warm_pool: bool
    spot: bool
    target_requests_per_minute: int | None
    fleet_id: str
    node_metrics: NodeMetrics | None
    startup_timeout_seconds: int | None
    data_volume_gib: int | None
    log_retention: logs.RetentionDays
    warm_pool_size: int | None = None
    """Stopped instances the warm pool keeps at the fleet's minimum (None: max - desired)."""


@dataclass(frozen=True)
class SageMakerSettings(FleetSettings):
    """A :class:`~cdk_neuron.serving.SageMakerInferenceFleet`'s own options, validated."""

    variant_name: str
    model_data_download_timeout_seconds: int | None
    container_startup_health_check_timeout_seconds: int | None
    volume_size_gb: int | None
