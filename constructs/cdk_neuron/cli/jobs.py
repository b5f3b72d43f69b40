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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from cdk_neuron.cli import source
from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.output import Column, Report, document
from cdk_neuron.cli.submit import AwsLookupError, find_job_queue
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

Sleep = Callable[[float], None]
Write = Callable[[str], None]


def check_interval(seconds: float) -> float:
    low, high = POLL_RANGE
    if not low <= seconds <= high:
        raise NeuronConfigError("--interval", seconds, f"use {low}..{high} seconds")
    return seconds


def _time(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def cli(env: Deployment, *args: str) -> str:
    """A cdk-neuron command line for this environment, from the same source (what the user types next)."""
    return source.command(env, *args)


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


def _attempts(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "started_at": _time(a.get("startedAt")),
            "stopped_at": _time(a.get("stoppedAt")),
            "exit_code": a.get("container", {}).get("exitCode"),
            "reason": a.get("statusReason") or a.get("container", {}).get("reason"),
            "log_stream": a.get("container", {}).get("logStreamName"),
        }
        for a in job.get("attempts", [])
    ]


def _node(child: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
    return {
        "node_index": node_index(child),
        "is_main_node": child.get("nodeDetails", {}).get("isMainNode"),
        "status": child.get("status"),
        "reason": child.get("statusReason") or (child.get("container") or {}).get("reason"),
        "exit_code": (child.get("container") or {}).get("exitCode"),
        "log_group": log_group(child, parent),
        "log_stream": log_stream(child),
    }


def _failure(env: Deployment, job: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Which node failed first, why, and exactly where its log is."""
    if job.get("status") != "FAILED":
        return None
    failed = [n for n in nodes if n["status"] == "FAILED"]
    # The node that exited non-zero caused the failure; the others were stopped with the job.
    culprit = next((n for n in failed if n["exit_code"] not in (None, 0)), failed[0] if failed else None)
    if culprit is not None:
        node = culprit["node_index"]
        return {
            "node_index": node,
            "reason": culprit["reason"] or job.get("statusReason"),
            "exit_code": culprit["exit_code"],
            "log_group": culprit["log_group"],
            "log_stream": culprit["log_stream"],
            "logs_command": cli(env, "logs", job["jobId"], "--node", str(node)),
        }
    container = job.get("container") or {}
    return {
        "node_index": None,
        "reason": job.get("statusReason") or container.get("reason"),
        "exit_code": container.get("exitCode"),
        "log_group": log_group(job),
        "log_stream": log_stream(job),
        "logs_command": cli(env, "logs", job["jobId"]),
    }


def status(env: Deployment, clients: Any, job_id: str) -> dict[str, Any]:
    batch = clients("batch", env.region)
    job = describe(batch, env, job_id)
    nodes = [_node(child, job) for child in node_jobs(batch, job)]
    return document(
        "status",
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
        failure=_failure(env, job, nodes),
    )


def watch(
    env: Deployment,
    clients: Any,
    job_id: str,
    *,
    interval: float,
    sleep: Sleep,
    on_transition: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Poll ``status`` until the job ends; every change of the job's or a node's state is a transition."""
    seen: dict[str, str | None] = {}
    transitions: list[dict[str, Any]] = []
    while True:
        doc = status(env, clients, job_id)
        states: dict[str, str | None] = {"job": doc["status"]}
        states.update({f"node {n['node_index']}": n["status"] for n in doc["nodes"]})
        at = _now()
        for subject, state in states.items():
            if subject not in seen or seen[subject] != state:
                transition = {"at": at, "subject": subject, "from": seen.get(subject), "to": state}
                transitions.append(transition)
                on_transition(transition)
        seen = states
        if doc["status"] in TERMINAL_STATES:
            return {**doc, "transitions": transitions}
        sleep(interval)


def transition_line(transition: dict[str, Any]) -> str:
    before = transition["from"]
    change = f"{before} -> {transition['to']}" if before else str(transition["to"])
    return f"{transition['at']}  {transition['subject']}: {change}"


def render_status(doc: dict[str, Any]) -> Report:
    out = Report()
    out.pairs(
        f"{doc['environment']}: job status",
        [
            ("job", f"{doc['job_name']} ({doc['job_id']})"),
            ("status", doc["status"] or "?"),
            ("reason", doc["status_reason"]),
            ("nodes", doc["num_nodes"]),
            ("job queue", doc["job_queue"]),
            ("created", doc["created_at"]),
            ("started", doc["started_at"]),
            ("stopped", doc["stopped_at"]),
            ("job definition", doc["job_definition"]),
        ],
    )
    if doc["nodes"]:
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
                (n["node_index"], n["is_main_node"], n["status"] or "?", n["exit_code"], n["reason"], n["log_stream"])
                for n in doc["nodes"]
            ),
        )  # fmt: skip
    out.notes(
        "Attempts",
        (
            f"{a['started_at']} - {a['stopped_at']}: exit {a['exit_code']}, {a['reason'] or 'no reason given'}"
            for a in doc["attempts"]
        ),
    )
    failure = doc.get("failure")
    if failure:
        where = "the job" if failure["node_index"] is None else f"node {failure['node_index']}"
        out.pairs(
            f"FAILED on {where}",
            [
                ("reason", failure["reason"] or "no reason given"),
                ("exit code", failure["exit_code"]),
                ("log group", failure["log_group"] or "not CloudWatch Logs (see the job definition)"),
                ("log stream", failure["log_stream"] or "none: the container never started"),
            ],
            value="id",
        )
        if failure["log_stream"] and failure["log_group"]:
            out.commands("Read it with:", [failure["logs_command"]])
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
    env: Deployment,
    clients: Any,
    job_id: str,
    *,
    node: int | None,
    follow: bool,
    interval: float,
    sleep: Sleep,
    write: Write | None,
    announce: Write | None = None,
) -> dict[str, Any]:
    """One node's log events; with ``follow``, until the node's job ends. ``write`` gets each message."""
    batch = clients("batch", env.region)
    parent, job, index = _locate(batch, env, job_id, node)
    group = log_group(job, parent if job is not parent else None)
    if group is None:
        raise AwsLookupError(
            f"job {parent['jobId']} does not log to CloudWatch Logs (its log driver is not awslogs): read its "
            "logs where the job definition's logConfiguration sends them"
        )
    what = f"node {index} of job {parent['jobId']}" if index is not None else f"job {parent['jobId']}"
    client = clients("logs", env.region)
    token: str | None = None
    collected: list[dict[str, Any]] = []
    stream = log_stream(job)
    announced = False
    while True:
        state = job.get("status")
        ended = state in TERMINAL_STATES
        if stream is None and not follow:
            raise AwsLookupError(
                f"{what} has no log stream yet ({state}): a stream appears when its container starts; "
                f"wait for it with: {cli(env, 'logs', parent['jobId'], *(['--node', str(index)] if index is not None else []), '--follow')}"
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
                collected.append(
                    {"timestamp": _time(event.get("timestamp")), "message": event.get("message", "")}
                )
                if write is not None:
                    write(str(event.get("message", "")).rstrip("\n"))
        if not follow or ended:
            break
        sleep(interval)
        job = describe(batch, env, job["jobId"])
        stream = stream or log_stream(job)
    return document(
        "logs",
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


def stop(env: Deployment, clients: Any, job_id: str, *, action: str, reason: str | None) -> dict[str, Any]:
    """``cancel`` (not started yet) or ``terminate`` (any state) the whole job."""
    if "#" in job_id:
        raise NeuronConfigError(
            "JOB_ID", job_id, f"{action} acts on the whole job, every node: give {job_id.partition('#')[0]}"
        )
    batch = clients("batch", env.region)
    job = describe(batch, env, job_id)
    before = job.get("status")
    reason = reason or f"{'Cancelled' if action == 'cancel' else 'Terminated'} with cdk-neuron {action}"
    requested = False
    if before in TERMINAL_STATES:
        outcome = f"nothing to do: the job already ended ({before})"
    elif action == "cancel" and before not in NOT_STARTED_STATES:
        raise AwsLookupError(
            f"job {job_id} is {before}: cancel stops only jobs that have not started "
            f"({', '.join(NOT_STARTED_STATES)}); stop it with: {cli(env, 'terminate', job_id)}"
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
    return document(
        action,
        environment=env.name,
        region=env.region,
        job_id=job_id,
        job_name=job.get("jobName"),
        status_before=before,
        requested=requested,
        reason=reason,
        outcome=outcome,
        status_command=cli(env, "status", job_id),
    )


def render_stop(doc: dict[str, Any]) -> Report:
    out = Report()
    out.pairs(
        f"{doc['environment']}: {doc['command']} {doc['job_id']}",
        [
            ("job", f"{doc['job_name']} ({doc['job_id']})"),
            ("status before", doc["status_before"]),
            ("reason", doc["reason"]),
            ("outcome", doc["outcome"]),
        ],
    )
    out.commands("Check it with:", [doc["status_command"]])
    return out


# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def list_jobs(
    env: Deployment, clients: Any, *, states: Sequence[str], limit: int, stack_name: str | None = None
) -> dict[str, Any]:
    if limit < 1:
        raise NeuronConfigError("--limit", limit, "give a whole number >= 1")
    stack, queue = find_job_queue(env, clients, stack_name)
    batch = clients("batch", env.region)
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
        {
            "job_id": s["jobId"],
            "job_name": s.get("jobName"),
            "status": s.get("status"),
            "num_nodes": (s.get("nodeProperties") or {}).get("numNodes"),
            "created_at": _time(s.get("createdAt")),
            "started_at": _time(s.get("startedAt")),
            "stopped_at": _time(s.get("stoppedAt")),
            "status_reason": s.get("statusReason"),
        }
        for s in summaries[:limit]
    ]
    return document(
        "list",
        environment=env.name,
        region=env.region,
        stack=stack,
        job_queue=queue,
        states=list(states),
        truncated=len(summaries) > limit,
        jobs=jobs,
    )


def render_list(doc: dict[str, Any]) -> Report:
    out = Report()
    title = f"{doc['environment']}: {', '.join(doc['states'])} jobs"
    if not doc["jobs"]:
        out.line(f"{title}: none in {doc['job_queue']}")
        return out
    out.table(
        title,
        (
            Column("job id", "id"),
            Column("name"),
            Column("status", "status"),
            Column("nodes", "id"),
            Column("created", "id"),
        ),
        ((j["job_id"], j["job_name"], j["status"], j["num_nodes"], j["created_at"]) for j in doc["jobs"]),
    )
    out.pairs("", [("job queue", doc["job_queue"])])
    if doc["truncated"]:
        out.line(f"Showing the newest {len(doc['jobs'])}; raise --limit for more.")
    return out


__all__ = [
    "ACTIVE_STATES",
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
