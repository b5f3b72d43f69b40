"""The daily loop on a HyperPod cluster: ``submit``, ``status [--watch]``, ``logs [--follow]``,
``cancel``, ``terminate`` and ``list`` as Slurm commands on the controller.

Each call is one Session Manager session on the controller running ``jobs.sh``
(:mod:`cdk_neuron.cli.hyperpod`, which says why Session Manager and not Run Command):

- ``submit`` writes the sbatch script of :func:`cdk_neuron.training.hyperpod_jobs.sbatch_script` (the
  plan's nodes, one launcher task per node, Slurm's topology order, ``srun --auto-resume=1``) and runs
  ``sbatch --parsable``. The job's output goes to ``<CHECKPOINT_DIR>/.cdk-neuron/jobs/cdk-neuron-<id>.out``
  on the checkpoint store every node mounts, or, on a cluster without one, to ``/tmp`` of the node
  that runs the batch step (the one directory every node has: Slurm fails a job whose output
  directory is missing on that node).
- ``status`` reads ``scontrol show job`` (Slurm keeps a finished job ``MinJobAge`` seconds, 300 by
  default), then ``sacct`` (only where accounting is configured). A job neither knows is reported as
  unknown, not as a failure.
- ``logs`` reads the output file in chunks (``tail --follow`` style with ``--follow``), from the
  controller, or from the batch host when the file is not on shared storage.
- ``cancel`` is ``scancel --state=PENDING`` (a job that started meanwhile is left running);
  ``terminate`` is ``scancel``.
- ``list`` is ``squeue`` (and, with ``--state all``, ``sacct`` for the last 7 days).

Slurm has no reason field on scancel; ``--reason`` is refused here rather than dropped.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timezone

from cdk_neuron.cli import hyperpod, job_reports
from cdk_neuron.cli.aws import AwsLookupError
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.hyperpod import Cluster, Node
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import NOT_IN_JSON, OMIT_IF_NONE, Result
from cdk_neuron.cli.transitions import Transition
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError

ENGINE = "hyperpod"
# Slurm job states (squeue(1), "JOB STATE CODES").
PENDING_STATES = ("PENDING",)
TERMINAL_STATES = (
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
    "REVOKED",
    "SPECIAL_EXIT",
)
SUCCEEDED = "COMPLETED"
STATES = (
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "REQUEUED",
    *TERMINAL_STATES,
)
_NONE = {"", "None", "(null)", "N/A", "Unknown", "n/a"}
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmSubmitted(Result):
    """``cdk-neuron submit`` on HyperPod: the Slurm job, where its output goes, and what follows."""

    command = "submit"
    engine: str
    environment: str
    region: str
    cluster: str
    controller: str
    job_id: str
    job_name: str
    job_user: str
    """The OS user the job runs as (``--as-user``; the session's own user under Session Manager's Run As)."""
    nodes: int
    partition: str
    training_command: str
    environment_overrides: dict[str, str]
    output_path: str
    sbatch_script: str
    watch_command: str
    logs_command: str


@dataclass(frozen=True)
class SlurmJob:
    """A Slurm job as scontrol, sacct or squeue reports it."""

    job_id: str
    job_name: str | None
    state: str | None
    reason: str | None
    nodes: int | None
    node_list: str | None
    submitted_at: str | None
    started_at: str | None
    ended_at: str | None
    exit_code: int | None
    signal: int | None
    output_path: str | None
    batch_host: str | None
    source: str
    """Which Slurm command answered: scontrol, sacct or squeue."""
    restarts: int | None = None
    """How often Slurm requeued the job (scontrol's ``Restarts``): HyperPod's auto-resume after a
    replaced node, or a preemption. None when the answering command does not say."""


@dataclass(frozen=True)
class SlurmJobStatus(Result):
    """``cdk-neuron status`` on HyperPod."""

    command = "status"
    engine: str
    environment: str
    region: str
    cluster: str
    job_id: str
    known: bool
    """False when Slurm no longer remembers the job (no accounting database, and it ended long ago)."""
    job: SlurmJob | None
    failed: bool
    logs_command: str
    transitions: list[Transition] | None = field(default=None, metadata=OMIT_IF_NONE)

    @property
    def state(self) -> str | None:
        return self.job.state if self.job else None


@dataclass(frozen=True)
class SlurmLogs(Result):
    """``cdk-neuron logs`` on HyperPod: the job's output file as read (printed as it came)."""

    command = "logs"
    engine: str
    environment: str
    region: str
    cluster: str
    job_id: str
    state: str | None
    path: str
    read_on: str
    """The node the file was read on (the controller, or the batch host without shared storage)."""
    bytes_read: int
    text: str = field(metadata=NOT_IN_JSON)


@dataclass(frozen=True)
class SlurmStopped(Result):
    """``cdk-neuron cancel`` and ``terminate`` on HyperPod."""

    command = "stop"
    action: str = field(metadata=NOT_IN_JSON)
    engine: str
    environment: str
    region: str
    cluster: str
    job_id: str
    job_name: str | None
    state_before: str | None
    requested: bool
    outcome: str
    status_command: str

    @property
    def command_name(self) -> str:
        return self.action


@dataclass(frozen=True)
class SlurmJobList(Result):
    """``cdk-neuron list`` on HyperPod: squeue's jobs (and sacct's with ``--state all``)."""

    command = "list"
    engine: str
    environment: str
    region: str
    cluster: str
    states: list[str]
    truncated: bool
    jobs: list[SlurmJob]
    notes: list[str]


# --------------------------------------------------------------------------------------------
# Reading Slurm's answers
# --------------------------------------------------------------------------------------------


def _value(text: str | None) -> str | None:
    return None if text is None or text.strip() in _NONE else text.strip()


def _int(text: str | None) -> int | None:
    value = _value(text)
    return int(value) if value is not None and value.isdigit() else None


def _exit(text: str | None) -> tuple[int | None, int | None]:
    """Slurm's ``<exit code>:<signal>``."""
    code, _, signal = (_value(text) or "").partition(":")
    return (int(code) if code.isdigit() else None, int(signal) if signal.isdigit() else None)


def _state(text: str | None) -> str | None:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``RUNNING+`` -> ``RUNNING``."""
    value = _value(text)
    return value.split()[0].rstrip("+") if value else None


def keyvalues(line: str) -> dict[str, str]:
    """``scontrol --oneliner`` output: ``Key=value`` pairs, a value running to the next key."""
    found = list(_KEY.finditer(line))
    pairs = {}
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(line)
        pairs[match[1]] = line[match.end() : end].strip()
    return pairs


def job_from(record: Sequence[str]) -> SlurmJob:
    """A ``job|<source>|<line>`` record of jobs.sh."""
    source, line = record[0], "|".join(record[1:])
    if source == "scontrol":
        kv = keyvalues(line)
        code, signal = _exit(kv.get("ExitCode"))
        return SlurmJob(
            job_id=kv.get("JobId", "?"),
            job_name=_value(kv.get("JobName")),
            state=_state(kv.get("JobState")),
            reason=_value(kv.get("Reason")),
            nodes=_int(kv.get("NumNodes", "").split("-")[0]),
            node_list=_value(kv.get("NodeList")),
            submitted_at=_value(kv.get("SubmitTime")),
            started_at=_value(kv.get("StartTime")),
            ended_at=_value(kv.get("EndTime")),
            exit_code=code,
            signal=signal,
            output_path=_value(kv.get("StdOut")),
            batch_host=_value(kv.get("BatchHost")),
            source=source,
            restarts=_int(kv.get("Restarts")),
        )
    if source in ("sacct", "squeue"):
        # sacct: JobID|State|Reason|NNodes|NodeList|Submit|Start|End|ExitCode|JobName;
        # squeue: %i|%T|%r|%D|%N|%V|%S|%e|%j. The name is last in both: it may hold "|".
        job_id, state, reason, count, node_list, submitted, started, ended, *name = line.split("|")
        code, signal = None, None
        if source == "sacct":
            exit_code, *name = name
            code, signal = _exit(exit_code)
        return SlurmJob(
            job_id=job_id,
            job_name=_value("|".join(name)),
            state=_state(state),
            reason=_value(reason),
            nodes=_int(count),
            node_list=_value(node_list),
            submitted_at=_value(submitted),
            started_at=_value(started),
            ended_at=_value(ended),
            exit_code=code,
            signal=signal,
            output_path=None,
            batch_host=None,
            source=source,
        )
    raise AwsLookupError(f"jobs.sh reported a job from {source!r}, which cdk-neuron does not read")


# --------------------------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------------------------


def job_id(value: str) -> str:
    """A Slurm job id (digits; an array task ``<id>_<n>`` is not submitted by cdk-neuron)."""
    if not re.fullmatch(r"[0-9]{1,10}", value):
        raise NeuronConfigError("JOB_ID", value, "give the Slurm job id submit printed (digits, e.g. 42)")
    return value


DEFAULT_JOB_USER = "ubuntu"
"""Who a job runs as when the session is root: the HyperPod Slurm image's default user, not root."""
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


def job_user(value: str) -> str:
    """An OS user name (useradd's portable form)."""
    if not _USER.fullmatch(value):
        raise NeuronConfigError(
            "--as-user",
            value,
            "give an OS user on the cluster (lower-case letters, digits, '_' and '-'), e.g. ubuntu",
        )
    return value


def exported_command(command: str, env_vars: Mapping[str, str]) -> str:
    """``command`` with ``--env-var`` values exported in front of it (each value shell-quoted)."""
    if not env_vars:
        return command
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env_vars.items())
    return f"export {exports}; {command}"


# --------------------------------------------------------------------------------------------
# submit
# --------------------------------------------------------------------------------------------


def submit(
    ctx: Context,
    env: Deployment,
    *,
    cluster_name: str | None,
    nodes: int,
    command: str,
    env_vars: Mapping[str, str],
    job_name: str,
    as_user: str = DEFAULT_JOB_USER,
) -> SlurmSubmitted:
    from cdk_neuron.training import hyperpod_jobs

    cluster = hyperpod.find(ctx, env, cluster_name)
    group = cluster.worker_group()
    partition = cluster.partition()
    if partition is None:
        raise AwsLookupError(
            f"cluster {cluster.name}'s worker groups name no single Slurm partition (SlurmConfig.PartitionNames)"
        )
    running = int(group.get("CurrentCount") or 0)
    if running < nodes:
        raise AwsLookupError(
            f"the job needs {nodes} nodes and worker group {group.get('InstanceGroupName')} of cluster "
            f"{cluster.name} runs {running} (target {group.get('TargetCount', '?')}): scale it first with "
            f"{ctx.command_line(env, 'scale', '--workers', str(nodes))}"
        )
    training_command = exported_command(command, env_vars)
    script = hyperpod_jobs.sbatch_script(
        nodes=nodes, partition=partition, command=training_command, job_name=job_name
    )
    node = hyperpod.controller(ctx, cluster)
    encoded = base64.b64encode(script.encode()).decode("ascii")
    remote = hyperpod.require_ok(
        hyperpod.run(ctx, cluster, node, "submit", encoded, job_user(as_user)), "sbatch"
    )
    submitted = remote.first("submitted")
    if submitted is None or len(submitted) < 3:
        raise AwsLookupError("sbatch printed no job id; the controller printed:\n" + remote.output[-2000:])
    job, output_path, user = submitted[:3]
    return SlurmSubmitted(
        engine=ENGINE,
        environment=env.name,
        region=env.region,
        cluster=cluster.name,
        controller=node.instance_id,
        job_id=job,
        job_name=job_name,
        job_user=user,
        nodes=nodes,
        partition=partition,
        training_command=training_command,
        environment_overrides=dict(env_vars),
        output_path=output_path,
        sbatch_script=script,
        watch_command=ctx.command_line(env, "status", "--watch", job),
        logs_command=ctx.command_line(env, "logs", "--follow", job),
    )


def render_submit(result: SlurmSubmitted) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: submitted to HyperPod",
        [
            ("job id", result.job_id),
            ("job name", result.job_name),
            ("runs as", result.job_user),
            ("nodes", result.nodes),
            ("partition", result.partition),
            ("cluster", result.cluster),
            (
                "environment overrides",
                ", ".join(f"{k}={v}" for k, v in result.environment_overrides.items()) or "-",
            ),
            ("output", result.output_path),
        ],
    )
    out.commands("Every node runs:", [result.training_command])
    out.commands("Follow it with:", [result.watch_command, result.logs_command])
    return out


# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------


def failed(job: SlurmJob | None) -> bool:
    return job is not None and job.state in TERMINAL_STATES and job.state != SUCCEEDED


def _status_of(ctx: Context, env: Deployment, cluster: Cluster, node: Node, job: str) -> SlurmJobStatus:
    remote = hyperpod.require_ok(hyperpod.run(ctx, cluster, node, "status", job), "scontrol/sacct")
    record = remote.first("job")
    found = job_from(record) if record is not None else None
    return SlurmJobStatus(
        engine=ENGINE,
        environment=env.name,
        region=env.region,
        cluster=cluster.name,
        job_id=job,
        known=found is not None,
        job=found,
        failed=failed(found),
        logs_command=ctx.command_line(env, "logs", job),
    )


def status(ctx: Context, env: Deployment, job: str, *, cluster_name: str | None) -> SlurmJobStatus:
    cluster = hyperpod.find(ctx, env, cluster_name)
    return _status_of(ctx, env, cluster, hyperpod.controller(ctx, cluster), job_id(job))


def watch(
    ctx: Context,
    env: Deployment,
    job: str,
    *,
    cluster_name: str | None,
    interval: float,
    on_transition: Callable[[Transition], None],
) -> SlurmJobStatus:
    """Poll until the job ends (or Slurm forgets it); every change of state is a transition."""
    cluster = hyperpod.find(ctx, env, cluster_name)
    node = hyperpod.controller(ctx, cluster)
    job = job_id(job)
    transitions: list[Transition] = []
    seen: str | None = None
    first = True
    while True:
        result = _status_of(ctx, env, cluster, node, job)
        state = result.state if result.known else "UNKNOWN"
        if first or state != seen:
            transition = Transition(
                ctx.clock.now().astimezone(timezone.utc).isoformat(timespec="seconds"),
                "job",
                None if first else seen,
                state,
            )
            transitions.append(transition)
            on_transition(transition)
        first, seen = False, state
        if not result.known or state in TERMINAL_STATES:
            return replace(result, transitions=transitions)
        ctx.clock.sleep(interval)


def render_status(result: SlurmJobStatus) -> Report:
    out = Report()
    job = result.job
    if job is None:
        out.pairs(
            f"{result.environment}: job status",
            [
                ("job", result.job_id),
                ("status", "UNKNOWN"),
                (
                    "why",
                    "Slurm no longer remembers this job: scontrol forgets a job minutes after it ends, "
                    "and this cluster has no accounting database for sacct",
                ),
                ("cluster", result.cluster),
            ],
        )
        return out
    out.pairs(
        f"{result.environment}: job status",
        [
            ("job", f"{job.job_name} ({job.job_id})"),
            ("status", job.state or "?"),
            ("reason", job.reason),
            ("exit code", None if job.exit_code is None else f"{job.exit_code} (signal {job.signal or 0})"),
            ("nodes", job.nodes),
            ("node list", job.node_list),
            ("restarts", job.restarts),
            ("submitted", job.submitted_at),
            ("started", job.started_at),
            ("ended", job.ended_at),
            ("output", job.output_path),
            ("cluster", result.cluster),
        ],
    )
    if result.failed:
        out.commands("Read its output with:", [result.logs_command])
    return out


# --------------------------------------------------------------------------------------------
# logs
# --------------------------------------------------------------------------------------------


def _chunk(
    ctx: Context, cluster: Cluster, node: Node, job: str, offset: int
) -> tuple[hyperpod.Remote, list[str] | None]:
    remote = hyperpod.require_ok(
        hyperpod.run(ctx, cluster, node, "logs", job, str(offset)), "reading the log"
    )
    return remote, remote.first("log")


def logs(
    ctx: Context,
    env: Deployment,
    job: str,
    *,
    cluster_name: str | None,
    follow: bool,
    interval: float,
    write: Callable[[str], None] | None,
    announce: Callable[[str], None] | None = None,
) -> SlurmLogs:
    """The job's output file from the start; with ``follow``, until the job ends."""
    cluster = hyperpod.find(ctx, env, cluster_name)
    node = hyperpod.controller(ctx, cluster)
    job = job_id(job)
    offset, collected, announced, partial = 0, [], False, ""
    path = ""
    state: str | None = None
    while True:
        remote, found = _chunk(ctx, cluster, node, job, offset)
        record = remote.first("job")
        state = job_from(record).state if record is not None else None
        missing = remote.first("log-missing")
        if missing is not None:
            path, host = missing[0], (missing[1] if len(missing) > 1 else "")
            elsewhere = hyperpod.node_for_host(ctx, cluster, host) if host else None
            if elsewhere is not None and elsewhere != node:
                node = elsewhere  # no shared storage: the file is on the batch host
                continue
            if not follow or state in TERMINAL_STATES:
                raise AwsLookupError(
                    f"job {job}'s output {path} is not readable on {node.instance_id}"
                    + (f" nor on its batch host {host}" if host else "")
                    + (f" (job {state})" if state else " (Slurm no longer knows the job)")
                    + ": it is written when the job starts, on the checkpoint store when the nodes mount one"
                )
            ctx.clock.sleep(interval)
            continue
        assert found is not None, "jobs.sh logs prints a log or a log-missing record"
        path, end, size = found[0], int(found[2]), int(found[3])
        if not announced and announce is not None:
            announce(f"job {job}: {path} on {node.instance_id}")
            announced = True
        text = remote.data or ""
        if text:
            collected.append(text)
            # Whole lines only: a line cut by the chunk boundary is printed once its end arrives.
            partial += text
            *lines, partial = partial.split("\n")
            if write is not None:
                for line in lines:
                    write(line)
        offset = end
        more = end < size
        if more:
            continue
        if not follow or state is None or state in TERMINAL_STATES:
            break
        ctx.clock.sleep(interval)
    if partial and write is not None:
        write(partial)  # the file's last line, without a newline
    return SlurmLogs(
        engine=ENGINE,
        environment=env.name,
        region=env.region,
        cluster=cluster.name,
        job_id=job,
        state=state,
        path=path,
        read_on=node.instance_id,
        bytes_read=offset,
        text="".join(collected),
    )


# --------------------------------------------------------------------------------------------
# cancel and terminate
# --------------------------------------------------------------------------------------------


def stop(ctx: Context, env: Deployment, job: str, *, action: str, cluster_name: str | None) -> SlurmStopped:
    cluster = hyperpod.find(ctx, env, cluster_name)
    node = hyperpod.controller(ctx, cluster)
    job = job_id(job)
    before = _status_of(ctx, env, cluster, node, job)
    state = before.state
    requested = False
    if not before.known:
        raise AwsLookupError(f"Slurm does not know job {job} on cluster {cluster.name}: nothing to {action}")
    if state in TERMINAL_STATES:
        outcome = f"nothing to do: the job already ended ({state})"
    elif action == "cancel" and state not in PENDING_STATES:
        raise AwsLookupError(
            f"job {job} is {state}: cancel stops only jobs that have not started (PENDING); stop it with: "
            f"{ctx.command_line(env, 'terminate', job)}"
        )
    else:
        hyperpod.require_ok(hyperpod.run(ctx, cluster, node, action, job), f"scancel {job}")
        requested = True
        outcome = (
            "requested: the job is CANCELLED unless it started meanwhile (then it runs on: use terminate)"
            if action == "cancel"
            else "requested: Slurm signals every step on every node; the job ends CANCELLED"
        )
    return SlurmStopped(
        action=action,
        engine=ENGINE,
        environment=env.name,
        region=env.region,
        cluster=cluster.name,
        job_id=job,
        job_name=before.job.job_name if before.job else None,
        state_before=state,
        requested=requested,
        outcome=outcome,
        status_command=ctx.command_line(env, "status", job),
    )


def render_stop(result: SlurmStopped) -> Report:
    return job_reports.stop_report(
        environment=result.environment,
        action=result.action,
        job_id=result.job_id,
        pairs=[
            ("job", f"{result.job_name} ({result.job_id})"),
            ("status before", result.state_before),
            ("outcome", result.outcome),
            ("cluster", result.cluster),
        ],
        status_command=result.status_command,
    )


# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def list_jobs(
    ctx: Context, env: Deployment, *, state: str, limit: int, cluster_name: str | None
) -> SlurmJobList:
    if limit < 1:
        raise NeuronConfigError("--limit", limit, "give a whole number >= 1")
    if state not in ("active", "all", *STATES):
        raise NeuronConfigError(
            "--state", state, f"a HyperPod cluster runs Slurm: use active, all or one of {', '.join(STATES)}"
        )
    cluster = hyperpod.find(ctx, env, cluster_name)
    node = hyperpod.controller(ctx, cluster)
    remote = hyperpod.require_ok(hyperpod.run(ctx, cluster, node, "list", state), "squeue")
    jobs = [job_from(record) for record in remote.all("job")]
    if state not in ("active", "all"):
        jobs = [j for j in jobs if j.state == state]
    # Newest first: Slurm's ids grow with submission.
    unique = {j.job_id: j for j in sorted(jobs, key=lambda j: j.source != "squeue")}
    ordered = sorted(unique.values(), key=lambda j: -int(j.job_id) if j.job_id.isdigit() else 0)
    return SlurmJobList(
        engine=ENGINE,
        environment=env.name,
        region=env.region,
        cluster=cluster.name,
        states=[state],
        truncated=len(ordered) > limit,
        jobs=ordered[:limit],
        notes=[" ".join(n) for n in remote.all("note")],
    )


def render_list(result: SlurmJobList) -> Report:
    return job_reports.list_report(
        environment=result.environment,
        states=result.states,
        rows=((j.job_id, j.job_name, j.state, j.nodes, j.submitted_at) for j in result.jobs),
        shown=len(result.jobs),
        time_column="submitted",
        place=("cluster", result.cluster),
        empty_place=f"on {result.cluster}",
        truncated=result.truncated,
        notes=result.notes,
    )


__all__ = [
    "ENGINE",
    "STATES",
    "TERMINAL_STATES",
    "SlurmJob",
    "SlurmJobList",
    "SlurmJobStatus",
    "SlurmLogs",
    "SlurmStopped",
    "SlurmSubmitted",
    "exported_command",
    "job_from",
    "keyvalues",
    "list_jobs",
    "logs",
    "render_list",
    "render_status",
    "render_stop",
    "render_submit",
    "status",
    "stop",
    "submit",
    "watch",
]
