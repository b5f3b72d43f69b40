"""The validated inputs both backends build from (internal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdk_neuron.monitoring.node_metrics import NodeMetrics
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.backends import FleetBackend
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec

if TYPE_CHECKING:
    import aws_cdk as cdk
    from aws_cdk import aws_certificatemanager as acm
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_sns as sns


@dataclass(frozen=True)
class FleetSettings:
    """Everything a backend needs, after InferenceFleet validated its props."""

    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection
    placement_subnets: ec2.SubnetSelection
    model: ModelSpec
    engine: ServingEngine
    backend: FleetBackend
    plan: ServingPlan
    min_capacity: int
    max_capacity: int
    min_healthy_percentage: int
    key: kms.IKey
    key_created: bool
    removal_policy: cdk.RemovalPolicy
    certificate: acm.ICertificate | None
    hugging_face_token: secretsmanager.ISecret | None
    artifact_key: kms.IKey | None
    access_log_bucket: s3.IBucket | None
    machine_image: ec2.IMachineImage | None
    notification_topic: sns.ITopic | None
    warm_pool: bool
    spot: bool
    target_requests_per_minute: int | None
    target_concurrency: float
    fleet_id: str
    node_metrics: NodeMetrics | None = None
