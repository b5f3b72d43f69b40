"""``cdk-neuron submit`` and ``cdk-neuron status``: run a multi-node training job on the deployed cluster.

``submit`` reads the job queue and job definition from the training stack's outputs
(``cloudformation:DescribeStacks``), reads the job definition (``batch:DescribeJobDefinitions``) and
submits an AWS Batch multi-node parallel job (``batch:SubmitJob``):

- The command after ``--`` becomes the job's ``training_command`` parameter. Every node of a
  cdk-neuron job definition runs a launcher as its container command; the launcher derives
  ``MASTER_ADDR``, ``NODE_RANK``, ``TORCHRUN_ARGS`` and the Neuron variables, then runs
  ``training_command`` with bash. Overriding the container command instead would bypass it. Quote
  variables meant for the node: ``-- 'torchrun $TORCHRUN_ARGS train.py'``.
- ``--env-var NAME=VALUE`` becomes a container override (environment) on every node range.
- ``--nodes``: Batch accepts a ``numNodes`` override only when the definition has an open-ended node
  range (``n:``). cdk-neuron definitions have a closed range (``0:<plan.nodes-1>``), so another node
  count uses a revision of the definition resized to that count.
- ``--image``: container overrides cannot change the image (``ContainerOverrides`` has no image
  field), so a revision of the definition that differs only in the image is used.

Such a revision is registered once (``batch:RegisterJobDefinition``) and reused while it is active.
The stack still owns its own revisions; the next ``cdk deploy`` registers its own and is unaffected.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from rich.console import Console

from cdk_neuron import planner
from cdk_neuron.cli.output import document, notes, status_cell, table
from cdk_neuron.deployment import Deployment, JobQueueLocation
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.training.launcher import TRAINING_COMMAND_PARAMETER

# The fields of a job definition that RegisterJobDefinition accepts back for a multi-node job.
_REGISTER_FIELDS = (
    "parameters",
    "retryStrategy",
    "propagateTags",
    "timeout",
    "tags",
    "platformCapabilities",
    "schedulingPriority",
)
_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_ENV_VAR = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.DOTALL)


class AwsLookupError(Exception):
    """Something the command needs is missing in the account (a stack output, a job): exit code 1."""


def stack_outputs(cloudformation: Any, stack_name: str) -> dict[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except Exception as error:
        if "does not exist" in str(error):
            raise AwsLookupError(
                f"stack {stack_name} does not exist in this account and Region: deploy the training stack "
                "first, or pass --stack NAME"
            ) from None
        raise
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def _output(outputs: dict[str, str], key: str, stack_name: str) -> str:
    if key not in outputs:
        raise AwsLookupError(
            f"stack {stack_name} has no output {key} (outputs: {', '.join(sorted(outputs)) or 'none'})"
        )
    return outputs[key]


def validate_nodes(env: Deployment, nodes: int) -> None:
    """--nodes must fit the compute environment and keep the configured TP x PP layout valid."""
    training = env.training
    if not 1 <= nodes <= training.max_nodes:
        raise NeuronConfigError(
            "--nodes", nodes, f"use 1..{training.max_nodes} (environments.{env.name}.training.max_nodes)"
        )
    try:
        planner.plan_training(
            training.instance_type,
            nodes,
            training.plan.tensor_parallel,
            training.plan.pipeline_parallel,
            training.plan.logical_nc_config,
            allow_unlisted_tp=training.plan.allow_unlisted_tp,
        )
    except NeuronConfigError as error:
        raise NeuronConfigError("--nodes", nodes, f"breaks the configured plan: {error}") from None


def parse_env_vars(values: Sequence[str]) -> list[dict[str, str]]:
    environment = []
    for value in values:
        match = _ENV_VAR.match(value)
        if match is None or match["name"].startswith("AWS_BATCH"):
            raise NeuronConfigError(
                "--env-var", value, "use NAME=VALUE with a letter/underscore name not starting with AWS_BATCH"
            )
        environment.append({"name": match["name"], "value": match["value"]})
    return environment


# --------------------------------------------------------------------------------------------
# The job definition a submission runs against
# --------------------------------------------------------------------------------------------


def _ranges(node_properties: dict[str, Any]) -> list[dict[str, Any]]:
    return list(node_properties.get("nodeRangeProperties", []))


def _bounds(target_nodes: str) -> tuple[int, int | None]:
    """``"0:3"`` -> (0, 3); ``"2:"`` -> (2, None); ``"4"`` -> (4, 4)."""
    low, sep, high = target_nodes.partition(":")
    start = int(low) if low else 0
    if not sep:
        return start, start
    return start, int(high) if high else None


def _accepts_num_nodes(node_properties: dict[str, Any], nodes: int) -> bool:
    """Batch's conditions for a numNodes override (NodeOverrides.numNodes in the Batch API reference)."""
    if int(node_properties.get("numNodes", 0)) == nodes:
        return True
    open_range = any(
        _bounds(r["targetNodes"])[1] is None and _bounds(r["targetNodes"])[0] < nodes
        for r in _ranges(node_properties)
    )
    return open_range and int(node_properties.get("mainNode", 0)) < nodes


def _resized(node_properties: dict[str, Any], nodes: int, arn: str) -> dict[str, Any]:
    ranges = _ranges(node_properties)
    if len(ranges) != 1:
        raise AwsLookupError(
            f"{arn} has {len(ranges)} node ranges and no open-ended one; cdk-neuron resizes only "
            f"single-range definitions: submit with --nodes {node_properties.get('numNodes')}"
        )
    resized = copy.deepcopy(node_properties)
    resized["numNodes"] = nodes
    resized["mainNode"] = 0
    resized["nodeRangeProperties"][0]["targetNodes"] = f"0:{nodes - 1}"
    return resized


def _register_request(definition: dict[str, Any], node_properties: dict[str, Any]) -> dict[str, Any]:
    request = {
        "jobDefinitionName": definition["jobDefinitionName"],
        "type": definition["type"],
        "nodeProperties": node_properties,
    }
    request.update({k: definition[k] for k in _REGISTER_FIELDS if definition.get(k) not in (None, {}, [])})
    return request


def job_definition_for(
    batch: Any, job_definition_arn: str, *, nodes: int, image: str | None
) -> tuple[dict[str, Any], str]:
    """The job definition (as described) that runs ``nodes`` nodes of ``image``, and what was done to get it."""
    found = batch.describe_job_definitions(jobDefinitions=[job_definition_arn])["jobDefinitions"]
    if not found:
        raise AwsLookupError(f"job definition {job_definition_arn} not found")
    definition: dict[str, Any] = found[0]
    if definition.get("type") != "multinode" or "nodeProperties" not in definition:
        raise AwsLookupError(f"{job_definition_arn} is not a multi-node job definition")
    wanted = copy.deepcopy(definition["nodeProperties"])
    changes = []
    if image is not None and any(r.get("container", {}).get("image") != image for r in _ranges(wanted)):
        for node_range in _ranges(wanted):
            if "container" in node_range:
                node_range["container"]["image"] = image
        changes.append(f"image {image} (container overrides cannot change the image)")
    if not _accepts_num_nodes(wanted, nodes):
        wanted = _resized(wanted, nodes, job_definition_arn)
        changes.append(f"{nodes} nodes (its node range is closed, so Batch refuses a numNodes override)")
    name = f"{definition['jobDefinitionName']}:{definition['revision']}"
    if not changes:
        return definition, f"{name} as deployed"
    active = batch.describe_job_definitions(
        jobDefinitionName=definition["jobDefinitionName"], status="ACTIVE"
    )["jobDefinitions"]
    for candidate in sorted(active, key=lambda d: -int(d.get("revision", 0))):
        if candidate.get("nodeProperties") == wanted:
            return candidate, f"reused revision {candidate['revision']} with " + " and ".join(changes)
    registered = batch.register_job_definition(**_register_request(definition, wanted))
    revision = {
        **definition,
        "jobDefinitionArn": registered["jobDefinitionArn"],
        "revision": registered["revision"],
        "nodeProperties": wanted,
    }
    return revision, (
        f"registered revision {registered['revision']} of {name.split(':')[0]} with " + " and ".join(changes)
    )


def default_job_name(env: Deployment, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"{env.name}-train-{stamp}"


def submit(
    env: Deployment,
    clients: Any,
    *,
    nodes: int,
    command: Sequence[str],
    image: str | None = None,
    env_vars: Sequence[str] = (),
    job_name: str | None = None,
    stack_name: str | None = None,
) -> dict[str, Any]:
    if env.training.engine != "batch":
        raise NeuronConfigError(
            f"environments.{env.name}.training.engine",
            env.training.engine,
            "submit runs AWS Batch jobs; this cluster is an Auto Scaling group: start jobs with your own scheduler",
        )
    training_command = " ".join(command).strip()
    if not training_command:
        raise NeuronConfigError(
            "COMMAND", list(command), "give the command after --, e.g. -- 'torchrun $TORCHRUN_ARGS train.py'"
        )
    validate_nodes(env, nodes)
    environment = parse_env_vars(env_vars)
    name = job_name or default_job_name(env)
    if not _JOB_NAME.match(name):
        raise NeuronConfigError(
            "--name", name, "1-128 letters, digits, '-' and '_', starting with a letter or digit"
        )
    if image is not None and (not image or any(c.isspace() for c in image)):
        raise NeuronConfigError("--image", image, "give an image URI such as <registry>/<repository>:<tag>")

    jobs = env.training.jobs
    if jobs is None and stack_name is None:
        raise NeuronConfigError(
            "--stack",
            None,
            f"the app says nothing of where {env.name}'s job queue is published: pass --stack NAME "
            "(the stack with JobQueueArn and JobDefinitionArn outputs)",
        )
    if jobs is None:
        location = JobQueueLocation(stack_name=str(stack_name))
    else:
        location = jobs if stack_name is None else replace(jobs, stack_name=stack_name)
    stack = location.stack_name
    outputs = stack_outputs(clients("cloudformation", env.region), stack)
    queue = _output(outputs, location.job_queue_output, stack)
    batch = clients("batch", env.region)
    definition, definition_action = job_definition_for(
        batch, _output(outputs, location.job_definition_output, stack), nodes=nodes, image=image
    )
    node_overrides: dict[str, Any] = {}
    if int(definition["nodeProperties"].get("numNodes", 0)) != nodes:
        node_overrides["numNodes"] = nodes
    if environment:
        node_overrides["nodePropertyOverrides"] = [
            {"targetNodes": r["targetNodes"], "containerOverrides": {"environment": environment}}
            for r in _ranges(definition["nodeProperties"])
        ]
    request: dict[str, Any] = {
        "jobName": name,
        "jobQueue": queue,
        "jobDefinition": definition["jobDefinitionArn"],
        "parameters": {TRAINING_COMMAND_PARAMETER: training_command},
    }
    if node_overrides:
        request["nodeOverrides"] = node_overrides
    response = batch.submit_job(**request)
    return document(
        "submit",
        environment=env.name,
        region=env.region,
        stack=stack,
        job_id=response["jobId"],
        job_name=response.get("jobName", name),
        job_arn=response.get("jobArn"),
        job_queue=queue,
        job_definition=definition["jobDefinitionArn"],
        definition_action=definition_action,
        image=image,
        nodes=nodes,
        training_command=training_command,
        environment_overrides={e["name"]: e["value"] for e in environment},
    )


def render_submit(doc: dict[str, Any], out: Console) -> None:
    rows = [
        ("job id", doc["job_id"]),
        ("job name", doc["job_name"]),
        ("nodes", doc["nodes"]),
        ("training command", doc["training_command"]),
        (
            "environment overrides",
            ", ".join(f"{k}={v}" for k, v in doc["environment_overrides"].items()) or "-",
        ),
        ("job queue", doc["job_queue"]),
        ("job definition", f"{doc['job_definition']} ({doc['definition_action']})"),
    ]
    out.print(table(f"{doc['environment']}: submitted", ("", ""), rows, show_header=False))
    out.print(f"Follow it with: cdk-neuron status --env {doc['environment']} {doc['job_id']}", soft_wrap=True)


# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------


def _time(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")


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


def status(env: Deployment, clients: Any, job_id: str) -> dict[str, Any]:
    batch = clients("batch", env.region)
    jobs = batch.describe_jobs(jobs=[job_id])["jobs"]
    if not jobs:
        raise AwsLookupError(
            f"no job {job_id} in {env.region} (jobs are listed for about 7 days after they end)"
        )
    job = jobs[0]
    num_nodes = int(job.get("nodeProperties", {}).get("numNodes") or 0)
    children: list[dict[str, Any]] = []
    if num_nodes and "#" not in job_id:
        # Each node of a multi-node job is a child job "<id>#<index>" with its own status and log stream.
        children = batch.describe_jobs(jobs=[f"{job_id}#{i}" for i in range(min(num_nodes, 100))])["jobs"]
    nodes = [
        {
            "node_index": child.get("nodeDetails", {}).get(
                "nodeIndex", int(child["jobId"].rsplit("#", 1)[-1])
            ),
            "is_main_node": child.get("nodeDetails", {}).get("isMainNode"),
            "status": child.get("status"),
            "reason": child.get("statusReason"),
            "exit_code": child.get("container", {}).get("exitCode"),
            "log_stream": child.get("container", {}).get("logStreamName"),
        }
        for child in sorted(children, key=lambda c: c["jobId"])
    ]
    return document(
        "status",
        environment=env.name,
        job_id=job["jobId"],
        job_name=job.get("jobName"),
        status=job.get("status"),
        status_reason=job.get("statusReason"),
        job_queue=job.get("jobQueue"),
        job_definition=job.get("jobDefinition"),
        num_nodes=num_nodes or None,
        created_at=_time(job.get("createdAt")),
        started_at=_time(job.get("startedAt")),
        stopped_at=_time(job.get("stoppedAt")),
        attempts=_attempts(job),
        nodes=nodes,
    )


def render_status(doc: dict[str, Any], out: Console) -> None:
    summary = [
        ("job", f"{doc['job_name']} ({doc['job_id']})"),
        ("status", status_cell(doc["status"] or "?")),
        ("reason", doc["status_reason"]),
        ("nodes", doc["num_nodes"]),
        ("created / started / stopped", f"{doc['created_at']} / {doc['started_at']} / {doc['stopped_at']}"),
        ("job definition", doc["job_definition"]),
    ]
    out.print(table(f"{doc['environment']}: job status", ("", ""), summary, show_header=False))
    if doc["nodes"]:
        out.print(
            table(
                "nodes",
                ("node", "main", "status", "exit code", "reason", "log stream"),
                (
                    (n["node_index"], n["is_main_node"], status_cell(n["status"] or "?"), n["exit_code"],
                     n["reason"], n["log_stream"])
                    for n in doc["nodes"]
                ),
            )
        )  # fmt: skip
    notes(
        out,
        "Attempts",
        (
            f"{a['started_at']} - {a['stopped_at']}: exit {a['exit_code']}, {a['reason'] or 'no reason given'}"
            for a in doc["attempts"]
        ),
    )
