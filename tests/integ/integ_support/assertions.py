"""Assertions the suites share: a Batch job that must SUCCEED, a probe answer that must be right.

Every assertion reads one leaf of the response (``assert_at_path``): a flattened response is small
(a custom resource returns at most 4 KB) and exact about what is checked. Every waiter has a total
timeout below an hour, the longest a CloudFormation custom resource waits for its provider.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk.integ_tests_alpha import ExpectedResult, IApiCall, IntegTest

from cdk_neuron.training import BatchTrainingCluster
from integ_support.programs import LOG_MARKER
from integ_support.stacks import IntegStack, Suite, integ_test

TERMINAL_JOB_STATUS = "^(SUCCEEDED|FAILED)$"
MAX_WAIT = cdk.Duration.minutes(55)


def _waited(call: IApiCall, total: cdk.Duration, interval: cdk.Duration) -> IApiCall:
    if total.to_seconds() > MAX_WAIT.to_seconds():
        raise ValueError(f"a waiter may wait at most {MAX_WAIT.to_minutes()} minutes")
    return call.wait_for_assertions(total_timeout=total, interval=interval)


def batch_job_succeeds(
    integ: IntegTest,
    *,
    job_name: str,
    job_queue_arn: str,
    job_definition_arn: str,
    log_group_name: str,
    success_event: str,
    timeout: cdk.Duration,
) -> dict[str, IApiCall]:
    """Submit a job, wait until it stops, assert SUCCEEDED and that the program logged ``success_event``.

    Waiting for SUCCEEDED *or* FAILED first means a failed job fails the suite as soon as it stops,
    not when the waiter gives up.
    """
    submit = integ.assertions.aws_api_call(
        "Batch",
        "submitJob",
        {"jobName": job_name, "jobQueue": job_queue_arn, "jobDefinition": job_definition_arn},
        ["jobId"],
    )
    job_id = submit.get_att_string("jobId")
    stopped = integ.assertions.aws_api_call("Batch", "describeJobs", {"jobs": [job_id]})
    stopped.assert_at_path("jobs.0.status", ExpectedResult.string_like_regexp(TERMINAL_JOB_STATUS))
    _waited(stopped, timeout, cdk.Duration.seconds(30))
    succeeded = integ.assertions.aws_api_call("Batch", "describeJobs", {"jobs": [job_id]})
    succeeded.assert_at_path("jobs.0.status", ExpectedResult.exact("SUCCEEDED"))
    logged = integ.assertions.aws_api_call(
        "CloudWatchLogs",
        "filterLogEvents",
        {
            "logGroupName": log_group_name,
            "filterPattern": f'"{LOG_MARKER}" "{success_event}"',
            "limit": 1,
        },
    )
    logged.assert_at_path("events.0.message", ExpectedResult.string_like_regexp(success_event))
    submit.next(stopped).next(succeeded).next(logged)
    return {"submit": submit, "stopped": stopped, "succeeded": succeeded, "logged": logged}


def training_job_suite(
    app: cdk.App,
    suite_name: str,
    stack: IntegStack,
    cluster: BatchTrainingCluster,
    *,
    success_event: str,
    timeout: cdk.Duration,
) -> Suite:
    """The suite of a training stack: one job on ``cluster`` must succeed and log ``success_event``.

    The test stack outputs what the collector reads back (queue, job definition, compute environment,
    log group) and the assertion stack the job id.
    """
    cdk.CfnOutput(stack, "JobQueueArn", value=cluster.job_queue.job_queue_arn)
    cdk.CfnOutput(stack, "JobDefinitionArn", value=cluster.job_definition.job_definition_arn)
    cdk.CfnOutput(stack, "ComputeEnvironmentArn", value=cluster.compute_environment.compute_environment_arn)
    cdk.CfnOutput(stack, "JobLogGroupName", value=cluster.log_group.log_group_name)
    suite = integ_test(app, suite_name, stack)
    calls = batch_job_succeeds(
        suite.integ,
        job_name=f"cdk-neuron-integ-{suite_name.replace('_', '-')}",
        job_queue_arn=cluster.job_queue.job_queue_arn,
        job_definition_arn=cluster.job_definition.job_definition_arn,
        log_group_name=cluster.log_group.log_group_name,
        success_event=success_event,
        timeout=timeout,
    )
    cdk.CfnOutput(suite.assertion_stack, "JobId", value=calls["submit"].get_att_string("jobId"))
    return suite


def probe(
    integ: IntegTest, function_name: str, event: dict[str, Any] | str, *, path: str, expected: Any
) -> IApiCall:
    """Invoke the VPC probe with ``event`` and assert one field of its answer."""
    payload = event if isinstance(event, str) else json.dumps(event, sort_keys=True)
    call = integ.assertions.invoke_function(function_name=function_name, payload=payload)
    call.assert_at_path(f"Payload.{path}", ExpectedResult.exact(expected))
    return call


def waited(call: IApiCall, *, total: cdk.Duration, interval: cdk.Duration) -> IApiCall:
    """``call`` retried until its assertion holds, for at most ``total`` (under an hour)."""
    return _waited(call, total, interval)
