"""serving_sagemaker: the suite compiles its model, then an ml.inf2.xlarge endpoint serves it and answers.

Proves, in the account: a ModelCompilation task exports the model for the endpoint's shape, with
its manifest (the compile step fails the deploy otherwise, before the endpoint exists); SageMaker
pulls the optimum-neuron DLC, the container loads that artifact within
the timeouts the construct derived, the endpoint reaches InService in the VPC, and an OpenAI-style
chat request through ``InvokeEndpoint`` gets an assistant answer from the served model. Asserted: the
endpoint is InService; the answer's ``model`` is the served model name; its first choice is an
assistant message.

Run offline by ``make test`` (snapshot) and live by ``make integ SUITES=serving_sagemaker CONFIRM=yes``.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk.integ_tests_alpha import ExpectedResult

from cdk_neuron.serving import SageMakerInferenceFleet
from integ_support.serving import INSTANCE_TYPE, MAX_TOKENS, PROMPT, compile_hub_model, hub_model_store
from integ_support.settings import MODEL_ID, Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, integ_app, integ_test

SUITE = "serving_sagemaker"


def build(app: cdk.App, settings: Settings) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    store, served = hub_model_store(stack, network, SUITE)
    fleet = SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=network.vpc,
        model=served,
        instance_type=INSTANCE_TYPE,
        min_capacity=1,
        max_capacity=1,
        vpc_subnets=network.private,
        availability_zone_ids={az_id: az_id for az_id in settings.az_ids},
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    compiled = compile_hub_model(stack, store, fleet)
    cdk.CfnOutput(stack, "EndpointName", value=fleet.endpoint_name)
    cdk.CfnOutput(stack, "CompileSeconds", value=compiled.resource.get_att_string("CompileSeconds"))

    suite = integ_test(app, SUITE, stack)
    integ = suite.integ
    described = integ.assertions.aws_api_call(
        "SageMaker", "describeEndpoint", {"EndpointName": fleet.endpoint_name}
    )
    described.assert_at_path("EndpointStatus", ExpectedResult.exact("InService"))
    request = json.dumps(
        {"model": MODEL_ID, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_TOKENS},
        sort_keys=True,
    )
    invoke = {"EndpointName": fleet.endpoint_name, "ContentType": "application/json", "Body": request}
    named = integ.assertions.aws_api_call("SageMakerRuntime", "invokeEndpoint", invoke)
    named.assert_at_path("Body.model", ExpectedResult.exact(MODEL_ID))
    answered = integ.assertions.aws_api_call("SageMakerRuntime", "invokeEndpoint", invoke)
    answered.assert_at_path("Body.choices.0.message.role", ExpectedResult.exact("assistant"))
    described.next(named).next(answered)
    return suite


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
