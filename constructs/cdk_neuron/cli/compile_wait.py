"""``cdk-neuron compile --wait``: follow a ModelCompilation task to its end and say what came of it.

``aws ecs wait tasks-stopped`` gives up after 100 polls 6 s apart (10 minutes; botocore
``ecs/2014-11-13/waiters-2.json``, ``TasksStopped``), and an LLM export takes 25 minutes to more than
an hour (:mod:`cdk_neuron.compilation.tax`). This polls ``ecs:DescribeTasks`` until the task stops or
its deadline passes (the task's own timeout budget, :func:`cdk_neuron.timeouts.compile_task_seconds`),
then reports:

- every container's exit code and reason, a step stopped by its timeout (exit 124, GNU ``timeout``)
  named as timed out;
- where each container logged (``aws logs tail`` of its stream, from the task definition's
  ``awslogs`` settings: ``ecs:DescribeTaskDefinition``);
- on success, the artifact's ``cdk-neuron-artifact.json`` read back from S3 (``s3:GetObject``) and
  compared with the fleet, and the ``cdk-neuron use-artifact`` command that serves it.

A task still running at the deadline is reported as ``lost`` with the ``aws ecs stop-task`` command:
it bills until stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cdk_neuron.cli.aws import error_code
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.preflight.artifacts import served_image
from cdk_neuron.cli.result import OMIT_IF_NONE
from cdk_neuron.deployment import ServingDeployment
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.serving.model_spec import parse_s3_uri

Outcome = Literal["succeeded", "failed", "timed out", "lost"]
POLL_SECONDS = 30
"""Seconds between two DescribeTasks calls (a compile runs for tens of minutes)."""
KILLED_EXIT_CODE = 137
"""128 + SIGKILL: what ``timeout`` exits with when it had to kill a step, and what an out-of-memory kill gives."""


@dataclass(frozen=True)
class ContainerEnd:
    """How one container of the task ended."""

    name: str
    exit_code: int | None
    """None: it never ran (an earlier step failed) or ECS gave no code."""
    reason: str | None = field(default=None, metadata=OMIT_IF_NONE)
    timed_out: bool = False
    killed: bool = False
    """Exit 137 (SIGKILL): ``timeout --kill-after`` ending a step that ignored its SIGTERM ("the exit status is
    128+9 rather than 124", GNU coreutils, "timeout invocation"), or the kernel out of memory."""
    logs_command: str | None = field(default=None, metadata=OMIT_IF_NONE)


@dataclass(frozen=True)
class CompileOutcome:
    """The end of one compile task, as ``compile --wait`` reports it."""

    status: Outcome
    waited_seconds: float
    deadline_seconds: int
    stopped_reason: str | None
    containers: list[ContainerEnd]
    manifest: str | None = field(default=None, metadata=OMIT_IF_NONE)
    """The manifest read back: engine, shape, SDK, compile time (succeeded only)."""
    mismatches: list[str] = field(default_factory=list)
    """How the compiled artifact differs from the fleet (a fleet changed during the compile)."""
    next_command: str | None = field(default=None, metadata=OMIT_IF_NONE)


def logs_tail_commands(ecs: Any, task_definition: str, task_arn: str, region: str) -> dict[str, str]:
    """``aws logs tail`` of each container's stream (awslogs: ``<prefix>/<container>/<task id>``), by
    container name, from the task definition's log configuration (``ecs:DescribeTaskDefinition``)."""
    definition = ecs.describe_task_definition(taskDefinition=task_definition)["taskDefinition"]
    task_id = task_arn.rsplit("/", 1)[-1]
    commands = {}
    for container in definition.get("containerDefinitions", []):
        options = (container.get("logConfiguration") or {}).get("options") or {}
        group, prefix = options.get("awslogs-group"), options.get("awslogs-stream-prefix")
        if group and prefix:
            stream = f"{prefix}/{container['name']}/{task_id}"
            commands[container["name"]] = (
                f"aws logs tail {group} --region {region} --log-stream-names {stream}"
            )
    return commands


def read_back(
    ctx: Context, region: str, artifact_uri: str, serving: ServingDeployment
) -> tuple[str | None, list[str]]:
    """The manifest's summary and how it differs from the fleet; (None, [error]) when unreadable."""
    location = parse_s3_uri(artifact_uri)
    key = f"{location.prefix}/{MANIFEST_NAME}" if location.prefix else MANIFEST_NAME
    try:
        body = ctx.aws("s3", region).get_object(Bucket=location.bucket, Key=key)["Body"].read()
    except Exception as error:
        code = error_code(error) or type(error).__name__
        if code in ("AccessDenied", "403"):
            # A missing key without s3:ListBucket is a 403 as well (GetObject, Amazon S3 API Reference).
            return None, [
                f"s3://{location.bucket}/{key} could not be read ({code}): the upload did not finish, or this "
                "principal lacks s3:GetObject on it (or s3:ListBucket, without which S3 says 403 for a missing key)"
            ]
        return None, [f"s3://{location.bucket}/{key} could not be read ({code}): the upload did not finish"]
    try:
        manifest = ArtifactManifest.from_json(body, where=f"s3://{location.bucket}/{key}")
    except NeuronConfigError as error:
        return None, [str(error)]
    model = replace(serving.model, artifact_uri=manifest.artifact_uri)
    found = [
        str(e) for e in manifest.mismatches(model, serving.plan, serving.engine.name, served_image(serving))
    ]
    shape = manifest.shape
    summary = (
        f"{manifest.engine} {manifest.engine_version or ''}".rstrip()
        + f", batch {shape.batch_size} x {shape.sequence_length}, TP {shape.tensor_parallel}, {shape.dtype}, "
        f"SDK {manifest.neuron_sdk or 'unknown'}, {len(manifest.files)} file(s), "
        f"compiled in {manifest.compile_seconds / 60:.1f} min"
    )
    return summary, found


def wait_for_compile(
    ctx: Context,
    *,
    env: str,
    region: str,
    cluster: str,
    task_arn: str,
    artifact_uri: str,
    serving: ServingDeployment,
    deadline_seconds: int,
    timed_out_exit_code: int,
    poll_seconds: float = POLL_SECONDS,
    on_poll: Callable[[str], None] | None = None,
) -> CompileOutcome:
    """Poll the task until it stops or ``deadline_seconds`` pass; then its outcome (see the module)."""
    ecs = ctx.aws("ecs", region)
    started = ctx.clock.now()
    while True:
        response = ecs.describe_tasks(cluster=cluster, tasks=[task_arn])
        tasks = response.get("tasks") or []
        waited = (ctx.clock.now() - started).total_seconds()
        if not tasks:
            reasons = (
                "; ".join(str(f.get("reason", "")) for f in response.get("failures") or []) or "not found"
            )
            return CompileOutcome(
                status="lost",
                waited_seconds=waited,
                deadline_seconds=deadline_seconds,
                stopped_reason=f"ecs:DescribeTasks: {reasons} (ECS keeps a stopped task about an hour)",
                containers=[],
            )
        task = tasks[0]
        status = str(task.get("lastStatus", ""))
        if on_poll is not None:
            on_poll(f"{status.lower()} after {waited / 60:.0f} min")
        if status == "STOPPED":
            break
        if waited >= deadline_seconds:
            return CompileOutcome(
                status="lost",
                waited_seconds=waited,
                deadline_seconds=deadline_seconds,
                stopped_reason=(
                    f"still {status} after the task's {deadline_seconds} s budget; it bills until stopped: "
                    f"aws ecs stop-task --region {region} --cluster {cluster} --task {task_arn}"
                ),
                containers=[],
            )
        ctx.clock.sleep(poll_seconds)
    logs = logs_tail_commands(ecs, str(task["taskDefinitionArn"]), task_arn, region)
    containers = [
        ContainerEnd(
            name=str(c["name"]),
            exit_code=c.get("exitCode"),
            reason=c.get("reason"),
            timed_out=c.get("exitCode") == timed_out_exit_code,
            killed=c.get("exitCode") == KILLED_EXIT_CODE,
            logs_command=logs.get(str(c["name"])),
        )
        for c in task.get("containers", [])
    ]
    waited = (ctx.clock.now() - started).total_seconds()
    base = CompileOutcome(
        status="succeeded",
        waited_seconds=waited,
        deadline_seconds=deadline_seconds,
        stopped_reason=task.get("stoppedReason"),
        containers=containers,
    )
    return finished(ctx, base, region=region, artifact_uri=artifact_uri, serving=serving, env=env)


def finished(
    ctx: Context,
    base: CompileOutcome,
    *,
    region: str,
    artifact_uri: str,
    serving: ServingDeployment,
    env: str,
    stopped_cleanly: bool = True,
) -> CompileOutcome:
    """The outcome of a compile that has stopped, on Fargate or Batch alike: timed out if a step hit its
    budget; failed unless it ``stopped_cleanly`` (Batch: the job SUCCEEDED) with every step exiting 0;
    otherwise the manifest read back and compared with the fleet, and ``use-artifact`` next if it
    matches."""
    containers = base.containers
    if any(c.timed_out for c in containers):
        return replace(base, status="timed out")
    if not stopped_cleanly or not containers or any(c.exit_code != 0 for c in containers):
        return replace(base, status="failed")
    summary, mismatches = read_back(ctx, region, artifact_uri, serving)
    if summary is None:
        return replace(base, status="failed", mismatches=mismatches)
    return replace(
        base,
        manifest=summary,
        mismatches=mismatches,
        next_command=None if mismatches else f"cdk-neuron use-artifact --env {env} {artifact_uri}",
        status="failed" if mismatches else "succeeded",
    )


def render_outcome(outcome: CompileOutcome, out: Report) -> None:
    """The outcome's lines: status, each container, the manifest read back, what to run next."""
    minutes = f"{outcome.waited_seconds / 60:.0f} min (budget {outcome.deadline_seconds / 60:.0f} min)"
    out.pairs(
        f"compile {outcome.status}",
        [
            ("waited", minutes),
            *((("stopped", outcome.stopped_reason),) if outcome.stopped_reason else ()),
            *(
                (
                    c.name,
                    "did not run"
                    if c.exit_code is None
                    else f"exit {c.exit_code}"
                    + (" (timed out)" if c.timed_out else "")
                    + (" (killed: its budget's SIGKILL, or out of memory)" if c.killed else "")
                    + (f": {c.reason}" if c.reason else ""),
                )
                for c in outcome.containers
            ),
            *((("artifact", outcome.manifest),) if outcome.manifest else ()),
        ],
    )
    out.notes("Differs from the fleet", outcome.mismatches)
    failed = [c for c in outcome.containers if c.exit_code not in (0,) and c.logs_command]
    logs = [c.logs_command for c in (failed or outcome.containers) if c.logs_command]
    out.commands("Its logs:" if failed else "Logs:", logs)
    if outcome.next_command:
        out.commands("Serve it:", [outcome.next_command])


__all__ = [
    "POLL_SECONDS",
    "CompileOutcome",
    "ContainerEnd",
    "Outcome",
    "logs_tail_commands",
    "read_back",
    "render_outcome",
    "wait_for_compile",
]
