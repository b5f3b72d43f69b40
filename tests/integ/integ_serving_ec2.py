"""serving_ec2: the suite compiles its model, then an inf2.xlarge fleet behind the internal ALB serves it.

Proves, in the account: a ModelCompilation task (Fargate, the serving image, no Neuron device)
exports the model for the fleet's shape and uploads it with its manifest, which names the prefix and
shape the fleet serves (the compile step fails the deploy otherwise, before the fleet exists); an
Inf2 instance boots from the Neuron AMI, its replica loads that artifact onto
the NeuronCores, the lifecycle hook puts it in service only once healthy, the ALB routes to it, and a
client inside the VPC gets an answer from the model it asked for. Asserted (in order): the Auto
Scaling group's instance is InService; its ALB target is healthy; a Lambda function in the VPC
(``integ_support/probe``) gets HTTP 200 with a non-empty streamed answer (``verdict`` ``ok``); the
answer names the served model.

Run offline by ``make test`` (snapshot) and live by ``make integ SUITES=serving_ec2 CONFIRM=yes``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk.integ_tests_alpha import ExpectedResult

from integ_support import assertions
from integ_support.serving import chat_event, compile_hub_model, ec2_fleet, hub_model_store
from integ_support.settings import MODEL_ID, Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, integ_app, integ_test, vpc_probe

SUITE = "serving_ec2"


def build(app: cdk.App, settings: Settings) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    store, served = hub_model_store(stack, network, SUITE)
    fleet = ec2_fleet(stack, network, min_capacity=1, model=served)
    compiled = compile_hub_model(stack, store, fleet)
    probe = vpc_probe(stack, "Probe", network=network)
    group_name = fleet.auto_scaling_group.auto_scaling_group_name
    cdk.CfnOutput(stack, "AutoScalingGroupName", value=group_name)
    cdk.CfnOutput(stack, "ServingUrl", value=fleet.url)
    # The node writes its start-up phases there (serving/lifecycle.sh, publish_phases).
    cdk.CfnOutput(stack, "ReplicaLogGroupName", value=fleet.log_group.log_group_name)
    cdk.CfnOutput(stack, "StartupBudgetSeconds", value=str(fleet.startup_timeout_seconds))
    cdk.CfnOutput(stack, "CompileSeconds", value=compiled.resource.get_att_string("CompileSeconds"))
    cdk.CfnOutput(stack, "ArtifactManifestUri", value=compiled.resource.get_att_string("ManifestUri"))

    suite = integ_test(app, SUITE, stack)
    integ = suite.integ
    in_service = integ.assertions.aws_api_call(
        "AutoScaling", "describeAutoScalingGroups", {"AutoScalingGroupNames": [group_name]}
    )
    in_service.assert_at_path(
        "AutoScalingGroups.0.Instances.0.LifecycleState", ExpectedResult.exact("InService")
    )
    assertions.waited(in_service, total=cdk.Duration.minutes(10), interval=cdk.Duration.seconds(30))
    healthy = integ.assertions.aws_api_call(
        "ElasticLoadBalancingV2",
        "describeTargetHealth",
        {"TargetGroupArn": fleet.target_group.target_group_arn},
    )
    healthy.assert_at_path("TargetHealthDescriptions.0.TargetHealth.State", ExpectedResult.exact("healthy"))
    assertions.waited(healthy, total=cdk.Duration.minutes(10), interval=cdk.Duration.seconds(30))
    answered = assertions.probe(
        integ, probe.function_name, chat_event(fleet.url), path="verdict", expected="ok"
    )
    assertions.waited(answered, total=cdk.Duration.minutes(10), interval=cdk.Duration.seconds(30))
    named = assertions.probe(
        integ, probe.function_name, chat_event(fleet.url), path="model", expected=MODEL_ID
    )
    in_service.next(healthy).next(answered).next(named)
    cdk.CfnOutput(suite.assertion_stack, "FirstTokenMs", value=named.get_att_string("Payload.first_token_ms"))
    cdk.CfnOutput(suite.assertion_stack, "TotalMs", value=named.get_att_string("Payload.total_ms"))
    return suite


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
