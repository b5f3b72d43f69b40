"""``cdk-neuron compile`` on the training cluster: submit a BatchModelCompilation job and follow it.

Where the environment compiles on its training cluster (cdk.json ``compilation.runs_on:
training-cluster``, :class:`cdk_neuron.compilation.BatchModelCompilation`), the command finds the compile
job queue and job definition by their pinned logical ids (``cloudformation:DescribeStackResource``) and
submits one job (``batch:SubmitJob``) with each container's settings as ``ecsPropertiesOverride``
(:meth:`cdk_neuron.compilation.CompileRequest.job_overrides`). ``--wait`` polls ``batch:DescribeJobs`` to
the end and reports like the Fargate path (:mod:`cdk_neuron.cli.compile_wait`): each container's exit
(124: timed out), its log stream, the manifest read back and the ``use-artifact`` command.

A job waits in ``RUNNABLE`` until a node of the training cluster is free (its queue is below training's);
the wait says so, and its deadline counts from when the job starts running, not from submission: a job
waiting behind a training run is not lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cdk_neuron.cli.aws import AwsLookupError
from cdk_neuron.cli.compile_wait import KILLED_EXIT_CODE, CompileOutcome, ContainerEnd, finished
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.stack_lookup import stack_resource_arn
from cdk_neuron.deployment import CompilationDeployment, ServingDeployment
from cdk_neuron.timeouts import TIMED_OUT_EXIT_CODE

POLL_SECONDS = 30
"""Seconds between two DescribeJobs calls."""
MAX_QUEUE_SECONDS = 24 * 3600
"""How long ``--wait`` follows a job that has not started (no node free, no trn1 capacity): then it says so
and leaves the job queued (the compile queue cancels only jobs that can never be placed)."""
_QUEUED = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING")
_JOB_NAME = re.compile(r"[^A-Za-z0-9_-]")
_ENDED = ("SUCCEEDED", "FAILED")


def job_name(environment: str) -> str:
    """``cdk-neuron-compile-<env>``: Batch job names are 1-128 letters, digits, hyphens and underscores."""
    return _JOB_NAME.sub("-", f"cdk-neuron-compile-{environment}")[:128]


def submit_compile_job(
    ctx: Context, *, env_name: str, region: str, compilation: CompilationDeployment, overrides: dict[str, Any]
) -> dict[str, str]:
    """Submit the compile job; its ``jobArn``, ``jobId`` and the queue's ARN."""
    cloudformation = ctx.aws("cloudformation", region)
    stack = compilation.stack_name
    queue = stack_resource_arn(cloudformation, stack, compilation.job_queue_logical_id)
    definition = stack_resource_arn(cloudformation, stack, compilation.job_definition_logical_id)
    # Before the submission: nothing after it may fail and leave a queued job unreported (a second
    # `compile` would queue a second node-sized job).
    logs = export_logs_command(ctx.aws("batch", region), definition, region)
    response = ctx.aws("batch", region).submit_job(
        jobName=job_name(env_name),
        jobQueue=queue,
        jobDefinition=definition,
        ecsPropertiesOverride=overrides,
        propagateTags=True,
    )
    if not response.get("jobId"):
        raise AwsLookupError(f"batch:SubmitJob to {queue} returned no job id")
    return {
        "jobArn": str(response.get("jobArn") or response["jobId"]),
        "jobId": str(response["jobId"]),
        "queue": queue,
        "logs": logs,
    }


def export_logs_command(batch: Any, definition: str, region: str) -> str:
    """``aws logs tail`` of the export container's streams (awslogs: ``<prefix>/<container>/<task id>``;
    the task id is known only once the job runs, so by prefix), from the job definition
    (``batch:DescribeJobDefinitions``); empty when it names no awslogs group or cannot be read (the
    command then prints ``describe-jobs``, whose answer names each container's stream)."""
    try:
        found = batch.describe_job_definitions(jobDefinitions=[definition]).get("jobDefinitions") or [{}]
    except Exception:  # best effort: where the logs are is a convenience, the job is what matters
        return ""
    tasks = (found[0].get("ecsProperties") or {}).get("taskProperties") or [{}]
    for container in tasks[0].get("containers") or []:
        options = (container.get("logConfiguration") or {}).get("options") or {}
        group, prefix = options.get("awslogs-group"), options.get("awslogs-stream-prefix")
        if container.get("name") == "export" and group and prefix:
            return (
                f"aws logs tail {group} --region {region} --log-stream-name-prefix {prefix}/export/ --follow"
            )
    return ""


def _containers(job: dict[str, Any], region: str) -> list[ContainerEnd]:
    tasks = (job.get("ecsProperties") or {}).get("taskProperties") or [{}]
    ends = []
    for container in tasks[0].get("containers") or []:
        options = (container.get("logConfiguration") or {}).get("options") or {}
        group, stream = options.get("awslogs-group"), container.get("logStreamName")
        ends.append(
            ContainerEnd(
                name=str(container.get("name")),
                exit_code=container.get("exitCode"),
                reason=container.get("reason"),
                timed_out=container.get("exitCode") == TIMED_OUT_EXIT_CODE,
                killed=container.get("exitCode") == KILLED_EXIT_CODE,
                logs_command=f"aws logs tail {group} --region {region} --log-stream-names {stream}"
                if group and stream
                else None,
            )
        )
    return ends


def wait_for_compile_job(
    ctx: Context,
    *,
    env: str,
    region: str,
    job_id: str,
    artifact_uri: str,
    serving: ServingDeployment,
    deadline_seconds: int,
    poll_seconds: float = POLL_SECONDS,
    max_queue_seconds: float = MAX_QUEUE_SECONDS,
    on_poll: Callable[[str], None] | None = None,
) -> CompileOutcome:
    """Poll the job until it ends; its outcome.

    An attempt that runs ``deadline_seconds`` past its start (Batch's own ``attemptDurationSeconds``, which
    stops it too) is reported ``lost``, with the command that stops it; each retry starts its own budget.
    A job still waiting for a node after ``max_queue_seconds`` is reported ``lost`` and left queued.
    """
    batch = ctx.aws("batch", region)
    started = ctx.clock.now()
    running_since: datetime | None = None
    queued_since: datetime | None = started
    attempts_seen = 0
    while True:
        jobs = batch.describe_jobs(jobs=[job_id]).get("jobs") or []
        now = ctx.clock.now()
        waited = (now - started).total_seconds()
        if not jobs:
            return CompileOutcome(
                status="lost",
                waited_seconds=waited,
                deadline_seconds=deadline_seconds,
                stopped_reason=f"batch:DescribeJobs does not know {job_id} (Batch keeps ended jobs at least 7 days)",
                containers=[],
            )
        job = jobs[0]
        status = str(job.get("status", ""))
        attempts = len(job.get("attempts") or [])
        # Each attempt has its own budget, counted from when it runs ("attemptDurationSeconds ... measured
        # from the job attempt's startedAt", "startedAt ... when the job transitioned from the STARTING
        # state to the RUNNING state": JobTimeout and JobDetail, AWS Batch API Reference): a retry after a
        # lost host starts a new one, and time waiting or pulling between attempts counts for none.
        if status == "RUNNING":
            if running_since is None or attempts != attempts_seen:
                running_since, attempts_seen = now, attempts
        else:
            running_since = None
        queued_since = (queued_since or now) if status in _QUEUED else None
        if on_poll is not None:
            waiting = " (waiting for a compile node)" if status == "RUNNABLE" else ""
            on_poll(f"{status.lower()}{waiting} after {waited / 60:.0f} min")
        if status in _ENDED:
            break
        if queued_since is not None and (now - queued_since).total_seconds() >= max_queue_seconds:
            return CompileOutcome(
                status="lost",
                waited_seconds=waited,
                deadline_seconds=deadline_seconds,
                stopped_reason=(
                    f"still {status} after {max_queue_seconds / 3600:g} h ({job.get('statusReason') or 'no reason given'}); "
                    f"the job stays queued: follow it with aws batch describe-jobs --region {region} --jobs {job_id}, "
                    f"or cancel it with aws batch cancel-job --region {region} --job-id {job_id} --reason 'cdk-neuron compile'"
                ),
                containers=[],
            )
        if running_since is not None and (now - running_since).total_seconds() >= deadline_seconds:
            return CompileOutcome(
                status="lost",
                waited_seconds=waited,
                deadline_seconds=deadline_seconds,
                stopped_reason=(
                    f"still {status} after the job's {deadline_seconds} s budget; it holds its compile node until it "
                    f"stops: aws batch terminate-job --region {region} --job-id {job_id} --reason 'cdk-neuron compile'"
                ),
                containers=_containers(job, region),
            )
        ctx.clock.sleep(poll_seconds)
    containers = _containers(job, region)
    base = CompileOutcome(
        status="succeeded",
        waited_seconds=(ctx.clock.now() - started).total_seconds(),
        deadline_seconds=deadline_seconds,
        stopped_reason=job.get("statusReason"),
        containers=containers,
    )
    return finished(
        ctx,
        base,
        region=region,
        artifact_uri=artifact_uri,
        serving=serving,
        env=env,
        stopped_cleanly=status == "SUCCEEDED",
    )


__all__ = [
    "MAX_QUEUE_SECONDS",
    "POLL_SECONDS",
    "export_logs_command",
    "job_name",
    "submit_compile_job",
    "wait_for_compile_job",
]
