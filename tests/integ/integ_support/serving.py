"""What the serving suites share: the model they serve and the fleet on EC2."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec
from cdk_neuron.serving.fleet import HUB_MODEL_WARNING_ID
from integ_support.settings import MODEL_ID, MODEL_PARAMETERS, MODEL_SEQUENCE_LENGTH, MODEL_TENSOR_PARALLEL
from integ_support.stacks import IntegNetwork, IntegStack, emptied_bucket

INSTANCE_TYPE = "inf2.xlarge"
PROMPT = "Name one planet of the solar system."
MAX_TOKENS = 16


def model() -> ModelSpec:
    """The suites' model: small and ungated, served at the shape of a cached Neuron configuration."""
    return ModelSpec(
        model_id=MODEL_ID,
        parameters=MODEL_PARAMETERS,
        sequence_length=MODEL_SEQUENCE_LENGTH,
        batch_size=1,
        tensor_parallel=MODEL_TENSOR_PARALLEL,
    )


def ec2_fleet(stack: IntegStack, network: IntegNetwork, *, min_capacity: int) -> Ec2InferenceFleet:
    """One inf2.xlarge at most, behind the internal ALB, in both AZs of the suite's VPC."""
    fleet = Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=network.vpc,
        model=model(),
        instance_type=INSTANCE_TYPE,
        min_capacity=min_capacity,
        max_capacity=1,
        vpc_subnets=network.private,
        availability_zone_ids={az_id: az_id for az_id in stack.settings.az_ids},
        removal_policy=cdk.RemovalPolicy.DESTROY,
        access_log_bucket=emptied_bucket(stack, "AccessLogs"),
    )
    acknowledge_hub_model(fleet)
    return fleet


HUB_MODEL_REASON = (
    "The integ suites serve a small Hub model on purpose: they prove a fresh instance or endpoint loads it; "
    "nothing scales out."
)


def acknowledge_hub_model(fleet: Construct) -> None:
    """The suites serve from the Hub deliberately (see :data:`HUB_MODEL_REASON`)."""
    cdk.Annotations.of(fleet).acknowledge_warning(HUB_MODEL_WARNING_ID, HUB_MODEL_REASON)


def chat_event(url: str, action: str = "chat") -> dict[str, object]:
    return {"action": action, "url": url, "model": MODEL_ID, "prompt": PROMPT, "max_tokens": MAX_TOKENS}
