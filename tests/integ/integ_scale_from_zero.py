"""scale_from_zero: a fleet at zero instances, with dev's warm pool, wakes on the first request out of
the pool and answers within its budget.

Proves, in the account: the suite's model is compiled during the deploy (as in serving_ec2) and the
fleet serves that artifact; with ``min_capacity=0`` and a warm pool (``warm_pool=True``, as dev ships)
no instance is in service until a request arrives, and one is launched into the warm pool, prepared
(image pulled, artifacts synced: a new launch, whose phases the timing report records as the cold
path's) and stopped; the load balancer's 503 to the first request trips the construct's
scale-from-zero alarm, which takes that instance out of the pool (a *warm start*: no set-up, no pull);
it becomes healthy and the first streamed token arrives within the documented time. The documented
time is the fleet's start-up budget (``startup_timeout_seconds``, derived from the model size: serving
README "Start-up timeouts") plus :data:`ALARM_ALLOWANCE_SECONDS` for the one-minute 503 metric to be
published and the alarm to act (an allowance of this suite, not an AWS figure).
Asserted: the warm pool holds a stopped instance (``Warmed:Stopped``) before the wake, so the wake is a
warm start; the group starts with no instance; the first request is refused; polling, the probe gets a
200 whose first token came within the budget (``verdict`` ``ok``; ``slow`` fails the suite). The timing
report then holds both paths, each phase beside its own model (``cdk-neuron timings``, docs/integ.md):
the preparation's boot, image pull and transfer, and the warm start's boot, launch -> InService and
first token.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk.integ_tests_alpha import ActualResult, ExpectedResult

from integ_support import assertions
from integ_support.serving import chat_event, compile_hub_model, ec2_fleet, hub_model_store
from integ_support.settings import Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, integ_app, integ_test, vpc_probe

SUITE = "scale_from_zero"
ALARM_ALLOWANCE_SECONDS = 180


def build(app: cdk.App, settings: Settings) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    store, served = hub_model_store(stack, network, SUITE)
    fleet = ec2_fleet(stack, network, min_capacity=0, model=served, warm_pool=True)
    compiled = compile_hub_model(stack, store, fleet)
    probe = vpc_probe(stack, "Probe", network=network)
    budget = fleet.startup_timeout_seconds + ALARM_ALLOWANCE_SECONDS
    group_name = fleet.auto_scaling_group.auto_scaling_group_name
    cdk.CfnOutput(stack, "AutoScalingGroupName", value=group_name)
    cdk.CfnOutput(stack, "ServingUrl", value=fleet.url)
    # The node writes its start-up phases there (serving/lifecycle.sh, publish_phases).
    cdk.CfnOutput(stack, "ReplicaLogGroupName", value=fleet.log_group.log_group_name)
    cdk.CfnOutput(stack, "WakeBudgetSeconds", value=str(budget))
    cdk.CfnOutput(stack, "CompileSeconds", value=compiled.resource.get_att_string("CompileSeconds"))

    suite = integ_test(app, SUITE, stack)
    integ = suite.integ
    # The pool's instance is a new launch, prepared and stopped while the stack deploys (no signal
    # waits for it): wait for it, at most a cold start's budget, so the wake below is a warm start.
    prepared = integ.assertions.aws_api_call(
        "AutoScaling", "describeWarmPool", {"AutoScalingGroupName": group_name}
    )
    prepared.assert_at_path("Instances.0.LifecycleState", ExpectedResult.exact("Warmed:Stopped"))
    pool_wait = min(55 * 60, fleet.startup_timeout_seconds + 300)
    assertions.waited(
        prepared, total=cdk.Duration.seconds(pool_wait - pool_wait % 30), interval=cdk.Duration.seconds(30)
    )
    idle = integ.assertions.aws_api_call(
        "AutoScaling", "describeAutoScalingGroups", {"AutoScalingGroupNames": [group_name]}
    )
    idle.assert_at_path("AutoScalingGroups.0.DesiredCapacity", ExpectedResult.exact(0))
    wake = assertions.probe(
        integ, probe.function_name, chat_event(fleet.url, "wake"), path="status", expected=503
    )
    t0 = wake.get_att_string("Payload.t0_ms")
    poll_event = cdk.Fn.join(
        "",
        [
            json.dumps({**chat_event(fleet.url, "poll"), "budget_seconds": budget}, sort_keys=True)[:-1],
            ', "t0_ms": ',
            t0,
            "}",
        ],
    )
    answered = integ.assertions.invoke_function(function_name=probe.function_name, payload=poll_event)
    answered.assert_at_path("Payload.verdict", ExpectedResult.string_like_regexp("^(ok|slow)$"))
    waited_for = min(55 * 60, budget + 600)
    assertions.waited(
        answered, total=cdk.Duration.seconds(waited_for - waited_for % 30), interval=cdk.Duration.seconds(30)
    )
    # The waiter stops on any answer; this assertion then fails a late one ("slow").
    integ.assertions.expect(
        "WokeWithinBudget",
        ExpectedResult.exact("ok"),
        ActualResult.from_aws_api_call(answered, "Payload.verdict"),
    )
    prepared.next(idle).next(wake).next(answered)
    cdk.CfnOutput(
        suite.assertion_stack, "ElapsedSeconds", value=answered.get_att_string("Payload.elapsed_seconds")
    )
    cdk.CfnOutput(
        suite.assertion_stack, "FirstTokenMs", value=answered.get_att_string("Payload.first_token_ms")
    )
    cdk.CfnOutput(suite.assertion_stack, "WakeT0Ms", value=t0)
    return suite


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
