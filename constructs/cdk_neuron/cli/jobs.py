"""The daily loop after ``submit``: ``status [--watch]``, ``logs``, ``cancel``, ``terminate`` and ``list``.

A multi-node parallel job is a parent job (``<id>``) and one child job per node (``<id>#<index>``),
each with its own status, exit code and CloudWatch Logs stream (AWS Batch User Guide, "Multi-node
parallel jobs"). ``batch:DescribeJobs`` of a child names its stream (``container.logStreamName``)
and the log configuration it runs with (``container.logConfiguration``; a cdk-neuron job definition
sends every node to the cluster's own log group with the ``awslogs`` driver). Jobs without a log
configuration log to ``/aws/batch/job``.

- ``status`` shows the job and every node; on FAILED it names the failing node, its reason and exit
  code, and the exact log group and stream to read. ``--watch`` polls until the job ends, printing
  each transition, and exits 0 on SUCCEEDED and 1 on FAILED.
- ``logs`` prints one node's stream (``batch:DescribeJobs``, ``logs:GetLogEvents``); ``--follow``
  keeps printing new events until the node's job ends.
- ``cancel`` (``batch:CancelJob``) stops a job that has not started; ``terminate``
  (``batch:TerminateJob``) stops one in any state. Both act on the whole job, every node.
- ``list`` lists the environment's job queue (``batch:ListJobs``), found as ``submit`` finds it.

On a HyperPod cluster (``training.engine: "hyperpod"``) the same commands run Slurm on the controller
through Session Manager: :mod:`cdk_neuron.cli.slurm_jobs`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from cdk_neuron.cli import hyperpod, job_reports
from cdk_neuron.cli.aws import AwsLookupError, error_code
from cdk_neuron.cli.command import Command, environment_options
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Column, Report
from cdk_neuron.cli.result import NOT_IN_JSON, OMIT_IF_NONE, Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.cli.submit import find_job_queue, job_environment, stack_option
from cdk_neuron.cli.transitions import Transition as Transition
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError

STATES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED")
ACTIVE_STATES = STATES[:5]
TERMINAL_STATES = ("SUCCEEDED", "FAILED")
NOT_STARTED_STATES = ("SUBMITTED", "PENDING", "RUNNABLE")
DEFAULT_LOG_GROUP = "/aws/batch/job"
"""Where Batch jobs log when their definition has no log configuration (AWS Batch User Guide,
"Using the awslogs log driver")."""

POLL_SECONDS = 15
POLL_RANGE = (5, 300)
"""``--interval`` bounds: often enough to see a start, rarely enough for DescribeJobs' rate limits."""

_DESCRIBE_BATCH = 100  # DescribeJobs takes at most 100 job ids
_LOG_PAGES = 1000  # GetLogEvents pages (10,000 events or 1 MB each) read in one pass

Write = Callable[[str], None]


@dataclass(frozen=True)
class Attempt:
    started_at: str | None
    stopped_at: str | None
    exit_code: int | None
    reason: str | None
    log_stream: str | None


@dataclass(frozen=True)
class NodeStatus:
    node_index: int
    is_main_node: bool | None
    status: str | None
    reason: str | None
    exit_code: int | None
    log_group: str | None
    log_stream: str | None


@dataclass(frozen=True)
class Failure:
    """Which node failed first, why, and exactly where its log is."""

    node_index: int | None
    """None for a single-node job."""
    reason: str | None
    exit_code: int | None
    log_group: str | None
    log_stream: str | None
    logs_command: str


@dataclass(frozen=True)
class JobStatus(Result):
    """``cdk-neuron status``: the job, every node, and on FAILED where the failing node logged."""

    command = "status"
    environment: str
    region: str
    job_id: str
    job_name: str | None
    status: str | None
    status_reason: str | None
    job_queue: str | None
    job_definition: str | None
    num_nodes: int | None
    created_at: str | None
    started_at: str | None
    stopped_at: str | None
    attempts: list[Attempt]
    nodes: list[NodeStatus]
    failure: Failure | None
    transitions: list[Transition] | None = field(default=None, metadata=OMIT_IF_NONE)
    """``status --watch`` only: every transition seen, in order."""


@dataclass(frozen=True)
class LogEvent:
    timestamp: str | None
    message: str


@dataclass(frozen=True)
class JobLogs(Result):
    """``cdk-neuron logs``: one node's log events (printed as they arrive; the document holds them all)."""

    command = "logs"
    environment: str
    region: str
    job_id: str
    node_index: int | None
    status: str | None
    log_group: str
    log_stream: str | None
    events: list[LogEvent]


@dataclass(frozen=True)
class Stopped(Result):
    """``cdk-neuron cancel`` and ``terminate``: what was asked of AWS Batch, and what follows."""

    command = "stop"
    action: str = field(metadata=NOT_IN_JSON)
    """``cancel`` or ``terminate``: the document's ``command``."""
    environment: str
    region: str
    job_id: str
    job_name: str | None
    status_before: str | None
    requested: bool
    reason: str
    outcome: str
    status_command: str

    @property
    def command_name(self) -> str:
        return self.action


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    job_name: str | None
    status: str | None
    num_nodes: int | None
    created_at: str | None
    started_at: str | None
    stopped_at: str | None
    status_reason: str | None


@dataclass(frozen=True)
class JobList(Result):
    """``cdk-neuron list``: the environment's job queue, newest first."""

    command = "list"
    environment: str
    region: str
    stack: str
    job_queue: str
    states: list[str]
    truncated: bool
    jobs: list[JobSummary]


def check_interval(seconds: float) -> float:
    low, high = POLL_RANGE
    if not low <= seconds <= high:
        raise NeuronConfigError("--interval", seconds, f"use {low}..{high} seconds")
    return seconds


def _time(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# Describing jobs and where their nodes log
# --------------------------------------------------------------------------------------------


def describe(batch: Any, env: Deployment, job_id: str) -> dict[str, Any]:
    jobs = batch.describe_jobs(jobs=[job_id])["jobs"]
    if not jobs:
        raise AwsLookupError(
            f"no job {job_id} in {env.region} (jobs are listed for about 7 days after they end)"
        )
    return dict(jobs[0])


def num_nodes(job: dict[str, Any]) -> int:
    return int((job.get("nodeProperties") or {}).get("numNodes") or 0)


def node_jobs(batch: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The child job of every node of a multi-node job, by node index (empty for other jobs)."""
    count = num_nodes(job)
    if not count or "#" in job["jobId"]:
        return []
    ids = [f"{job['jobId']}#{i}" for i in range(count)]
    children: list[dict[str, Any]] = []
    for start in range(0, len(ids), _DESCRIBE_BATCH):
        children += batch.describe_jobs(jobs=ids[start : start + _DESCRIBE_BATCH])["jobs"]
    return sorted(children, key=node_index)


def node_index(child: dict[str, Any]) -> int:
    return int(child.get("nodeDetails", {}).get("nodeIndex", child["jobId"].rsplit("#", 1)[-1]))


def _covers(target_nodes: str, index: int) -> bool:
    low, sep, high = target_nodes.partition(":")
    start = int(low) if low else 0
    if not sep:
        return index == start
    return start <= index and (not high or index <= int(high))


def _log_configuration(job: dict[str, Any], parent: dict[str, Any] | None) -> dict[str, Any] | None:
    configuration = (job.get("container") or {}).get("logConfiguration")
    if configuration or parent is None:
        return configuration
    index = node_index(job)
    for node_range in (parent.get("nodeProperties") or {}).get("nodeRangeProperties", []):
        if _covers(str(node_range.get("targetNodes", "")), index):
            found = (node_range.get("container") or {}).get("logConfiguration")
            if found:
                return dict(found)
    return None


def log_group(job: dict[str, Any], parent: dict[str, Any] | None = None) -> str | None:
    """The CloudWatch Logs group a job (or node) writes to; None when its driver is not ``awslogs``."""
    configuration = _log_configuration(job, parent)
    if not configuration:
        return DEFAULT_LOG_GROUP
    if configuration.get("logDriver") != "awslogs":
        return None
    return str((configuration.get("options") or {}).get("awslogs-group") or DEFAULT_LOG_GROUP)


def log_stream(job: dict[str, Any]) -> str | None:
    """The job's (or node's) stream: its container's, else its latest attempt's."""
    stream = (job.get("container") or {}).get("logStreamName")
    if stream:
        return str(stream)
    for attempt in reversed(job.get("attempts") or []):
        stream = (attempt.get("container") or {}).get("logStreamName")
        if stream:
            return str(stream)
    return None


# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------


def _attempts(job: dict[str, Any]) -> list[Attempt]:
    return [
        Attempt(
            started_at=_time(a.get("startedAt")),
            stopped_at=_time(a.get("stoppedAt")),
            exit_code=a.get("container", {}).get("exitCode"),
            reason=a.get("statusReason") or a.get("container", {}).get("reason"),
            log_stream=a.get("container", {}).get("logStreamName"),
        )
        for a in job.get("attempts", [])
    ]


def _node(child: dict[str, Any], parent: dict[str, Any]) -> NodeStatus:
    return NodeStatus(
        node_index=node_index(child),
        is_main_node=child.get("nodeDetails", {}).get("isMainNode"),
        status=child.get("status"),
        reason=child.get("statusReason") or (child.get("container") or {}).get("reason"),
        exit_code=(child.get("container") or {}).get("exitCode"),
        log_group=log_group(child, parent),
        log_stream=log_stream(child),
    )


def _failure(ctx: Context, env: Deployment, job: dict[str, Any], nodes: list[NodeStatus]) -> Failure | None:
    """Which node failed first, why, and exactly where its log is."""
    if job.get("status") != "FAILED":
        return None
    failed = [n for n in nodes if n.status == "FAILED"]
    # The node that exited non-zero caused the failure; the others were stopped with the job.
    culprit = next((n for n in failed if n.exit_code not in (None, 0)), failed[0] if failed else None)
    if culprit is not None:
        node = culprit.node_index
        return Failure(
            node_index=node,
            reason=culprit.reason or job.get("statusReason"),
            exit_code=culprit.exit_code,
            log_group=culprit.log_group,
            log_stream=culprit.log_stream,
            logs_command=ctx.command_line(env, "logs", job["jobId"], "--node", str(node)),
        )
    container = job.get("container") or {}
    return Failure(
        node_index=None,
        reason=job.get("statusReason") or container.get("reason"),
        exit_code=container.get("exitCode"),
        log_group=log_group(job),
        log_stream=log_stream(job),
        logs_command=ctx.command_line(env, "logs", job["jobId"]),
    )


def status(ctx: Context, env: Deployment, job_id: str) -> JobStatus:
    batch = ctx.aws("batch", env.region)
    job = describe(batch, env, job_id)
    nodes = [_node(child, job) for child in node_jobs(batch, job)]
    return JobStatus(
        environment=env.name,
        region=env.region,
        job_id=job["jobId"],
        job_name=job.get("jobName"),
        status=job.get("status"),
        status_reason=job.get("statusReason"),
        job_queue=job.get("jobQueue"),
        job_definition=job.get("jobDefinition"),
        num_nodes=num_nodes(job) or None,
        created_at=_time(job.get("createdAt")),
        started_at=_time(job.get("startedAt")),
        stopped_at=_time(job.get("stoppedAt")),
        attempts=_attempts(job),
        nodes=nodes,
        failure=_failure(ctx, env, job, nodes),
    )


def watch(
    ctx: Context,
    env: Deployment,
    job_id: str,
    *,
    interval: float,
    on_transition: Callable[[Transition], None],
) -> JobStatus:
    """Poll ``status`` until the job ends; every change of the job's or a node's state is a transition."""
    seen: dict[str, str | None] = {}
    transitions: list[Transition] = []
    while True:
        result = status(ctx, env, job_id)
        states: dict[str, str | None] = {"job": result.status}
        states.update({f"node {n.node_index}": n.status for n in result.nodes})
        at = ctx.clock.now().astimezone(timezone.utc).isoformat(timespec="seconds")
        for subject, state in states.items():
            if subject not in seen or seen[subject] != state:
                transition = Transition(at, subject, seen.get(subject), state)
                transitions.append(transition)
                on_transition(transition)
        seen = states
        if result.status in TERMINAL_STATES:
            return replace(result, transitions=transitions)
        ctx.clock.sleep(interval)


def transition_line(transition: Transition) -> str:
    before = transition.from_
    change = f"{before} -> {transition.to}" if before else str(transition.to)
    return f"{transition.at}  {transition.subject}: {change}"


def render_status(result: JobStatus) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: job status",
        [
            ("job", f"{result.job_name} ({result.job_id})"),
            ("status", result.status or "?"),
            ("reason", result.status_reason),
            ("nodes", result.num_nodes),
            ("job queue", result.job_queue),
            ("created", result.created_at),
            ("started", result.started_at),
            ("stopped", result.stopped_at),
            ("job definition", result.job_definition),
        ],
    )
    if result.nodes:
        out.table(
            "nodes",
            (
                Column("node", "id"),
                Column("main", "id"),
                Column("status", "status"),
                Column("exit", "id"),
                Column("reason"),
                Column("log stream", "id"),
            ),
            (
                (n.node_index, n.is_main_node, n.status or "?", n.exit_code, n.reason, n.log_stream)
                for n in result.nodes
            ),
        )  # fmt: skip
    out.notes(
        "Attempts",
        (
            f"{a.started_at} - {a.stopped_at}: exit {a.exit_code}, {a.reason or 'no reason given'}"
            for a in result.attempts
        ),
    )
    failure = result.failure
    if failure:
        where = "the job" if failure.node_index is None else f"node {failure.node_index}"
        out.pairs(
            f"FAILED on {where}",
            [
                ("reason", failure.reason or "no reason given"),
                ("exit code", failure.exit_code),
                ("log group", failure.log_group or "not CloudWatch Logs (see the job definition)"),
                ("log stream", failure.log_stream or "none: the container never started"),
            ],
            value="id",
        )
        if failure.log_stream and failure.log_group:
            out.commands("Read it with:", [failure.logs_command])
    return out


# --------------------------------------------------------------------------------------------
# logs
# --------------------------------------------------------------------------------------------


def _split_node(job_id: str, node: int | None) -> tuple[str, int | None]:
    parent, sep, index = job_id.partition("#")
    if not sep:
        return job_id, node
    if not index.isdigit() or (node is not None and node != int(index)):
        raise NeuronConfigError("--node", node, f"JOB_ID {job_id} already names node {index}; give one")
    return parent, int(index)


def _locate(
    batch: Any, env: Deployment, job_id: str, node: int | None
) -> tuple[dict[str, Any], dict[str, Any], int | None]:
    """(parent job, the node's job, node index) for ``job_id`` and ``--node``."""
    parent_id, node = _split_node(job_id, node)
    parent = describe(batch, env, parent_id)
    count = num_nodes(parent)
    if not count:
        if node is not None:
            raise NeuronConfigError("--node", node, f"job {parent_id} is not a multi-node job: omit --node")
        return parent, parent, None
    if node is None:
        node = int((parent.get("nodeProperties") or {}).get("mainNode") or 0)
    if not 0 <= node < count:
        raise NeuronConfigError("--node", node, f"job {parent_id} has nodes 0..{count - 1}")
    return parent, describe(batch, env, f"{parent_id}#{node}"), node


def _events(logs: Any, group: str, stream: str, token: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """Every event after ``token``, and the token to continue from."""
    events: list[dict[str, Any]] = []
    for _ in range(_LOG_PAGES):
        kwargs: dict[str, Any] = {"logGroupName": group, "logStreamName": stream, "startFromHead": True}
        if token:
            kwargs["nextToken"] = token
        page = logs.get_log_events(**kwargs)
        events += page.get("events", [])
        following = page.get("nextForwardToken")
        if not following or following == token:
            return events, following or token
        token = following
    return events, token


def logs(
    ctx: Context,
    env: Deployment,
    job_id: str,
    *,
    node: int | None,
    follow: bool,
    interval: float,
    write: Write | None,
    announce: Write | None = None,
) -> JobLogs:
    """One node's log events; with ``follow``, until the node's job ends. ``write`` gets each message."""
    batch = ctx.aws("batch", env.region)
    parent, job, index = _locate(batch, env, job_id, node)
    group = log_group(job, parent if job is not parent else None)
    if group is None:
        raise AwsLookupError(
            f"job {parent['jobId']} does not log to CloudWatch Logs (its log driver is not awslogs): read its "
            "logs where the job definition's logConfiguration sends them"
        )
    what = f"node {index} of job {parent['jobId']}" if index is not None else f"job {parent['jobId']}"
    client = ctx.aws("logs", env.region)
    token: str | None = None
    collected: list[LogEvent] = []
    stream = log_stream(job)
    announced = False
    while True:
        state = job.get("status")
        ended = state in TERMINAL_STATES
        if stream is None and not follow:
            raise AwsLookupError(
                f"{what} has no log stream yet ({state}): a stream appears when its container starts; "
                f"wait for it with: {ctx.command_line(env, 'logs', parent['jobId'], *(['--node', str(index)] if index is not None else []), '--follow')}"
            )
        if stream is not None:
            if not announced and announce is not None:
                announce(f"{what}: log group {group}, log stream {stream}")
                announced = True
            try:
                events, token = _events(client, group, stream, token)
            except Exception as error:
                if error_code(error) != "ResourceNotFoundException":
                    raise
                if not follow or ended:
                    raise AwsLookupError(
                        f"log stream {stream} in log group {group} not found in {env.region}: it was never "
                        "written or its retention has expired"
                    ) from None
                events = []
            for event in events:
                collected.append(LogEvent(_time(event.get("timestamp")), event.get("message", "")))
                if write is not None:
                    write(str(event.get("message", "")).rstrip("\n"))
        if not follow or ended:
            break
        ctx.clock.sleep(interval)
        job = describe(batch, env, job["jobId"])
        stream = stream or log_stream(job)
    return JobLogs(
        environment=env.name,
        region=env.region,
        job_id=parent["jobId"],
        node_index=index,
        status=job.get("status"),
        log_group=group,
        log_stream=stream,
        events=collected,
    )


# --------------------------------------------------------------------------------------------
# cancel and terminate
# --------------------------------------------------------------------------------------------


def stop(ctx: Context, env: Deployment, job_id: str, *, action: str, reason: str | None) -> Stopped:
    """``cancel`` (not started yet) or ``terminate`` (any state) the whole job."""
    if "#" in job_id:
        raise NeuronConfigError(
            "JOB_ID", job_id, f"{action} acts on the whole job, every node: give {job_id.partition('#')[0]}"
        )
    batch = ctx.aws("batch", env.region)
    job = describe(batch, env, job_id)
    before = job.get("status")
    reason = reason or f"{'Cancelled' if action == 'cancel' else 'Terminated'} with cdk-neuron {action}"
    requested = False
    if before in TERMINAL_STATES:
        outcome = f"nothing to do: the job already ended ({before})"
    elif action == "cancel" and before not in NOT_STARTED_STATES:
        raise AwsLookupError(
            f"job {job_id} is {before}: cancel stops only jobs that have not started "
            f"({', '.join(NOT_STARTED_STATES)}); stop it with: {ctx.command_line(env, 'terminate', job_id)}"
        )
    else:
        if action == "cancel":
            batch.cancel_job(jobId=job_id, reason=reason)
        else:
            batch.terminate_job(jobId=job_id, reason=reason)
        requested = True
        outcome = "requested: the job moves to FAILED with this reason" + (
            "" if before in NOT_STARTED_STATES else " once its containers stop"
        )
    return Stopped(
        action=action,
        environment=env.name,
        region=env.region,
        job_id=job_id,
        job_name=job.get("jobName"),
        status_before=before,
        requested=requested,
        reason=reason,
        outcome=outcome,
        status_command=ctx.command_line(env, "status", job_id),
    )


def render_stop(result: Stopped) -> Report:
    return job_reports.stop_report(
        environment=result.environment,
        action=result.action,
        job_id=result.job_id,
        pairs=[
            ("job", f"{result.job_name} ({result.job_id})"),
            ("status before", result.status_before),
            ("reason", result.reason),
            ("outcome", result.outcome),
        ],
        status_command=result.status_command,
    )


# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def list_jobs(
    ctx: Context, env: Deployment, *, states: Sequence[str], limit: int, stack_name: str | None = None
) -> JobList:
    if limit < 1:
        raise NeuronConfigError("--limit", limit, "give a whole number >= 1")
    stack, queue = find_job_queue(ctx, env, stack_name)
    batch = ctx.aws("batch", env.region)
    summaries: list[dict[str, Any]] = []
    for state in states:
        kwargs: dict[str, Any] = {"jobQueue": queue, "jobStatus": state, "maxResults": min(limit, 100)}
        found: list[dict[str, Any]] = []
        while len(found) < limit:
            page = batch.list_jobs(**kwargs)
            found += page.get("jobSummaryList", [])
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        summaries += found
    summaries.sort(key=lambda s: -int(s.get("createdAt") or 0))
    jobs = [
        JobSummary(
            job_id=s["jobId"],
            job_name=s.get("jobName"),
            status=s.get("status"),
            num_nodes=(s.get("nodeProperties") or {}).get("numNodes"),
            created_at=_time(s.get("createdAt")),
            started_at=_time(s.get("startedAt")),
            stopped_at=_time(s.get("stoppedAt")),
            status_reason=s.get("statusReason"),
        )
        for s in summaries[:limit]
    ]
    return JobList(
        environment=env.name,
        region=env.region,
        stack=stack,
        job_queue=queue,
        states=list(states),
        truncated=len(summaries) > limit,
        jobs=jobs,
    )


def render_list(result: JobList) -> Report:
    return job_reports.list_report(
        environment=result.environment,
        states=result.states,
        rows=((j.job_id, j.job_name, j.status, j.num_nodes, j.created_at) for j in result.jobs),
        shown=len(result.jobs),
        time_column="created",
        place=("job queue", result.job_queue),
        empty_place=f"in {result.job_queue}",
        truncated=result.truncated,
    )


# --------------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------------


def _job_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "job_id", metavar="JOB_ID", help="the job id submit printed (AWS Batch, or Slurm's on HyperPod)"
    )


def _interval(parser: argparse.ArgumentParser) -> None:
    low, high = POLL_RANGE
    parser.add_argument(
        "--interval",
        type=float,
        default=POLL_SECONDS,
        metavar="SECONDS",
        help=f"seconds between polls, {low}..{high} (default: {POLL_SECONDS})",
    )


def _status_arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    _job_id(parser)
    hyperpod.cluster_option(parser)
    parser.add_argument(
        "--watch",
        action="store_true",
        help="poll until the job ends, printing each transition; exit 0 on SUCCEEDED, 1 on FAILED",
    )
    _interval(parser)


def _by_engine(
    command: str,
    batch: Callable[[argparse.Namespace, Context, Deployment], ExitStatus],
    slurm: Callable[[argparse.Namespace, Context, Deployment], ExitStatus],
) -> Callable[[argparse.Namespace, Context], ExitStatus]:
    """A job command: the environment's training engine decides who answers (Slurm on HyperPod)."""

    def run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
        env, training = job_environment(ctx, args, command)
        return (slurm if training.engine == "hyperpod" else batch)(args, ctx, env)

    return run


def _batch_status(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    if args.watch:
        interval = check_interval(args.interval)
        result = watch(
            ctx, env, args.job_id, interval=interval,
            on_transition=job_reports.printers(ctx, transition_line).on_transition,
        )  # fmt: skip
    else:
        result = status(ctx, env, args.job_id)
    ctx.show(result, render_status)
    return ExitStatus.FAILED if result.status == "FAILED" else ExitStatus.OK


def _logs_arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    _job_id(parser)
    hyperpod.cluster_option(parser)
    parser.add_argument(
        "--node", type=int, metavar="N", help="node index of a multi-node job (default: the main node)"
    )
    parser.add_argument(
        "--follow", "-f", action="store_true", help="keep printing new events until the job ends"
    )
    _interval(parser)


def _batch_logs(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    interval = check_interval(args.interval)
    shown = job_reports.printers(ctx, transition_line)
    result = logs(
        ctx, env, args.job_id, node=args.node, follow=args.follow, interval=interval,
        write=shown.write, announce=shown.announce,
    )  # fmt: skip
    ctx.show(result, None)  # the events were printed as they came
    return ExitStatus.FAILED if args.follow and result.status == "FAILED" else ExitStatus.OK


def _stop_arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    _job_id(parser)
    hyperpod.cluster_option(parser)
    parser.add_argument("--reason", help="why, recorded as the job's status reason")


def _batch_stopper(action: str) -> Callable[[argparse.Namespace, Context, Deployment], ExitStatus]:
    def run(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
        ctx.show(stop(ctx, env, args.job_id, action=action, reason=args.reason), render_stop)
        return ExitStatus.OK

    return run


def _slurm_stopper(action: str) -> Callable[[argparse.Namespace, Context, Deployment], ExitStatus]:
    def run(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
        return _slurm_stop(args, ctx, env, action)

    return run


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    from cdk_neuron.cli.slurm_jobs import STATES as SLURM_STATES

    parser.add_argument(
        "--state",
        choices=("active", "all", *dict.fromkeys((*STATES, *SLURM_STATES))),
        default="active",
        help="one state (AWS Batch's, or Slurm's on HyperPod), 'active' (default: not yet ended) or 'all'",
    )
    parser.add_argument("--limit", type=int, default=50, help="most jobs to show per state (default: 50)")
    stack_option(parser)


def _batch_list(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    if args.state not in ("active", "all", *STATES):
        raise NeuronConfigError("--state", args.state, f"AWS Batch job states are {', '.join(STATES)}")
    states = {"active": ACTIVE_STATES, "all": STATES}.get(args.state, (args.state,))
    ctx.show(list_jobs(ctx, env, states=states, limit=args.limit, stack_name=args.stack), render_list)
    return ExitStatus.OK


# -- HyperPod (Slurm) ---------------------------------------------------------------------------


def _slurm_status(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    from cdk_neuron.cli import slurm_jobs

    if args.watch:
        interval = check_interval(args.interval)
        result = slurm_jobs.watch(
            ctx, env, args.job_id, cluster_name=args.cluster, interval=interval,
            on_transition=job_reports.printers(ctx, transition_line).on_transition,
        )  # fmt: skip
    else:
        result = slurm_jobs.status(ctx, env, args.job_id, cluster_name=args.cluster)
    ctx.show(result, slurm_jobs.render_status)
    return ExitStatus.FAILED if result.failed else ExitStatus.OK


def _slurm_logs(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    from cdk_neuron.cli import slurm_jobs

    if args.node is not None:
        raise NeuronConfigError(
            "--node",
            args.node,
            "on HyperPod every node's output goes to the job's one Slurm output file: omit --node",
        )
    interval = check_interval(args.interval)
    shown = job_reports.printers(ctx, transition_line)
    result = slurm_jobs.logs(
        ctx, env, args.job_id, cluster_name=args.cluster, follow=args.follow, interval=interval,
        write=shown.write, announce=shown.announce,
    )  # fmt: skip
    ctx.show(result, None)  # the text was printed as it came
    failed = result.state in slurm_jobs.TERMINAL_STATES and result.state != "COMPLETED"
    return ExitStatus.FAILED if args.follow and failed else ExitStatus.OK


def _slurm_list(args: argparse.Namespace, ctx: Context, env: Deployment) -> ExitStatus:
    from cdk_neuron.cli import slurm_jobs

    result = slurm_jobs.list_jobs(ctx, env, state=args.state, limit=args.limit, cluster_name=args.cluster)
    ctx.show(result, slurm_jobs.render_list)
    return ExitStatus.OK


def _slurm_stop(args: argparse.Namespace, ctx: Context, env: Deployment, action: str) -> ExitStatus:
    from cdk_neuron.cli import slurm_jobs

    if args.reason is not None:
        raise NeuronConfigError("--reason", args.reason, "Slurm's scancel records no reason: omit --reason")
    result = slurm_jobs.stop(ctx, env, args.job_id, action=action, cluster_name=args.cluster)
    ctx.show(result, slurm_jobs.render_stop)
    return ExitStatus.OK


COMMANDS = (
    Command(
        "status",
        "A job's status, nodes and attempts; on FAILED, where the failing node logged (Slurm's view on HyperPod).",
        _by_engine("status", _batch_status, _slurm_status),
        arguments=_status_arguments,
        aws=True,
    ),
    Command(
        "logs",
        "One node's CloudWatch Logs stream (the Slurm output file on HyperPod); --follow until the job ends.",
        _by_engine("logs", _batch_logs, _slurm_logs),
        arguments=_logs_arguments,
        aws=True,
    ),
    Command(
        "cancel",
        "Cancel a job that has not started (SUBMITTED, PENDING, RUNNABLE; PENDING on HyperPod).",
        _by_engine("cancel", _batch_stopper("cancel"), _slurm_stopper("cancel")),
        arguments=_stop_arguments,
        aws=True,
    ),
    Command(
        "terminate",
        "Terminate a job in any state: every node's container (Slurm step on HyperPod) is stopped.",
        _by_engine("terminate", _batch_stopper("terminate"), _slurm_stopper("terminate")),
        arguments=_stop_arguments,
        aws=True,
    ),
    Command(
        "list",
        "Jobs in the environment's job queue (Slurm's queue on HyperPod), newest first.",
        _by_engine("list", _batch_list, _slurm_list),
        arguments=_list_arguments,
        aws=True,
    ),
)


__all__ = [
    "ACTIVE_STATES",
    "COMMANDS",
    "DEFAULT_LOG_GROUP",
    "STATES",
    "TERMINAL_STATES",
    "list_jobs",
    "logs",
    "render_list",
    "render_status",
    "render_stop",
    "status",
    "stop",
    "watch",
]
