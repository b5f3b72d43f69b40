"""What the serving suites share: the model they serve, compiled by the suite itself, and the fleet on EC2.

Every serving suite compiles its model with a ModelCompilation during the deploy and serves that
artifact (:mod:`.compiled`): the fleet is created once the artifact and its manifest are in S3.
"""

from __future__ import annotations

import aws_cdk as cdk

from cdk_neuron.compilation import ModelSource
from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec
from cdk_neuron.serving.fleet import InferenceFleetBase
from integ_support.compiled import ArtifactStore, CompileStep, artifact_store, compiled_model
from integ_support.settings import MODEL_ID, MODEL_PARAMETERS, MODEL_SEQUENCE_LENGTH, MODEL_TENSOR_PARALLEL
from integ_support.stacks import IntegNetwork, IntegStack, emptied_bucket

INSTANCE_TYPE = "inf2.xlarge"
PROMPT = "Name one planet of the solar system."
MAX_TOKENS = 16
ARTIFACT_NAME = "qwen2.5-0.5b-instruct"


def model() -> ModelSpec:
    """The suites' model: small and ungated; the suite's compile step exports it at this shape."""
    return ModelSpec(
        model_id=MODEL_ID,
        parameters=MODEL_PARAMETERS,
        sequence_length=MODEL_SEQUENCE_LENGTH,
        batch_size=1,
        tensor_parallel=MODEL_TENSOR_PARALLEL,
    )


def ec2_fleet(
    stack: IntegStack, network: IntegNetwork, *, min_capacity: int, model: ModelSpec, warm_pool: bool = False
) -> Ec2InferenceFleet:
    """One inf2.xlarge at most, behind the internal ALB, in both AZs of the suite's VPC, serving ``model``;
    with ``warm_pool`` (dev's setting) one stopped, prepared instance waits in the pool while none runs."""
    return Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=network.vpc,
        model=model,
        instance_type=INSTANCE_TYPE,
        min_capacity=min_capacity,
        max_capacity=1,
        vpc_subnets=network.private,
        availability_zone_ids={az_id: az_id for az_id in stack.settings.az_ids},
        removal_policy=cdk.RemovalPolicy.DESTROY,
        access_log_bucket=emptied_bucket(stack, "AccessLogs"),
        warm_pool=warm_pool,
    )


def hub_model_store(stack: IntegStack, network: IntegNetwork, suite: str) -> tuple[ArtifactStore, ModelSpec]:
    """The suite's artifact bucket and compilation, and :func:`model` served from the artifact."""
    store = artifact_store(stack, network, suite, name=ARTIFACT_NAME)
    return store, compiled_model(model(), store)


def compile_hub_model(stack: IntegStack, store: ArtifactStore, fleet: InferenceFleetBase) -> CompileStep:
    """Compile :data:`MODEL_ID` from the Hub for ``fleet``; the fleet is created after it."""
    return CompileStep(stack, "Compile", store=store, source=ModelSource.hub(MODEL_ID), fleet=fleet)


def chat_event(url: str, action: str = "chat") -> dict[str, object]:
    return {"action": action, "url": url, "model": MODEL_ID, "prompt": PROMPT, "max_tokens": MAX_TOKENS}
