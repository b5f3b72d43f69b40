"""Application Auto Scaling: scalable targets and scaling policies (SageMaker endpoint variants)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"

# Predefined metric type prefix -> (service namespace, scalable dimension) it can scale.
_PREDEFINED = {
    "SageMakerVariant": ("sagemaker", "sagemaker:variant:DesiredInstanceCount"),
    "SageMakerInferenceComponent": ("sagemaker", "sagemaker:inference-component:DesiredCopyCount"),
    "ECSService": ("ecs", "ecs:service:DesiredCount"),
    "DynamoDBReadCapacity": ("dynamodb", None),
    "DynamoDBWriteCapacity": ("dynamodb", None),
    "RDSReader": ("rds", "rds:cluster:ReadReplicaCount"),
    "LambdaProvisionedConcurrency": ("lambda", "lambda:function:ProvisionedConcurrency"),
    "EC2SpotFleetRequest": ("ec2", "ec2:spot-fleet-request:TargetCapacity"),
}


class ScalableTargetCapacity(_base.DeployRule):
    id = "E9701"
    shortdesc = "Scalable target MinCapacity <= MaxCapacity; SageMaker variants scale in to 1 at least"
    description = (
        "MinCapacity cannot exceed MaxCapacity. The minimum allowed MinCapacity is 0 only for some resources (such "
        "as SageMaker inference components, ECS services and Lambda provisioned concurrency); a SageMaker endpoint "
        "variant (sagemaker:variant:DesiredInstanceCount) needs at least 1."
    )
    source_url = (
        "https://docs.aws.amazon.com/autoscaling/application/APIReference/API_RegisterScalableTarget.html"
    )
    source_title = "Application Auto Scaling API Reference: RegisterScalableTarget (MinCapacity)"
    resource_types = (TARGET,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        low, high = _base.as_int(properties.get("MinCapacity")), _base.as_int(properties.get("MaxCapacity"))
        if low is not None and high is not None and low > high:
            yield Finding(
                ("Properties", "MinCapacity"),
                f"{name}: MinCapacity {low} is greater than MaxCapacity {high}. Fix: MinCapacity <= MaxCapacity.",
            )
        variant = properties.get("ScalableDimension") == "sagemaker:variant:DesiredInstanceCount"
        if variant and low is not None and low < 1:
            yield Finding(
                ("Properties", "MinCapacity"),
                f"{name}: MinCapacity {low} for a SageMaker endpoint variant; the minimum is 1 (scale-to-zero "
                "needs inference components). Fix: set MinCapacity to 1 or more.",
            )


class PredefinedMetricMatchesTarget(_base.DeployRule):
    id = "E9702"
    shortdesc = "Predefined scaling metric must belong to the scalable target's service"
    description = (
        "A target tracking policy's PredefinedMetricType must be one for the scalable target's namespace and "
        "dimension (e.g. SageMakerVariant* for sagemaker:variant:DesiredInstanceCount). Resolves ScalingTargetId "
        "to a scalable target in the same template, or uses the policy's own ServiceNamespace/ScalableDimension."
    )
    source_url = "https://docs.aws.amazon.com/autoscaling/application/APIReference/API_PredefinedMetricSpecification.html"
    source_title = "Application Auto Scaling API Reference: PredefinedMetricSpecification"
    resource_types = (POLICY,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        config = _base.as_dict(properties.get("TargetTrackingScalingPolicyConfiguration")) or {}
        metric = (_base.as_dict(config.get("PredefinedMetricSpecification")) or {}).get(
            "PredefinedMetricType"
        )
        if not isinstance(metric, str):
            return
        expected = next((v for k, v in _PREDEFINED.items() if metric.startswith(k)), None)
        if expected is None:
            return
        source = properties
        target = template.target(properties.get("ScalingTargetId"), TARGET)
        if target is not None:
            source = _base.props(target[1])
        namespace, dimension = source.get("ServiceNamespace"), source.get("ScalableDimension")
        wrong_namespace = isinstance(namespace, str) and namespace != expected[0]
        wrong_dimension = expected[1] is not None and isinstance(dimension, str) and dimension != expected[1]
        if wrong_namespace or wrong_dimension:
            yield Finding(
                ("Properties", "TargetTrackingScalingPolicyConfiguration", "PredefinedMetricSpecification"),
                f"{name}: PredefinedMetricType {metric!r} scales {expected[1] or expected[0]}, but the target is "
                f"{namespace} / {dimension}. Fix: pick a predefined metric of the target's service.",
            )
