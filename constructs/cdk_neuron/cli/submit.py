"""``cdk-neuron submit``: run a multi-node training job on the deployed cluster.

``submit`` reads the job queue and job definition from the training stack's outputs
(``cloudformation:DescribeStacks``), reads the job definition (``batch:DescribeJobDefinitions``) and
submits an AWS Batch multi-node parallel job (``batch:SubmitJob``):

- The command after ``--`` becomes the job's ``training_command`` parameter, base64-encoded so it
  survives an image entrypoint that re-parses the container command (the Neuron DLCs' ``eval
  "$@"``; :mod:`cdk_neuron.training.launcher`). Every node of a cdk-neuron job definition runs a
  launcher as its container command; the launcher decodes the command, derives ``MASTER_ADDR``,
  ``NODE_RANK``, ``TORCHRUN_ARGS`` and the Neuron variables, then runs it with bash. Overriding the
  container command instead would bypass it. Quote variables meant for the node:
  ``-- 'torchrun $TORCHRUN_ARGS train.py'``.
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

import argparse
import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from cdk_neuron import planner
from cdk_neuron.cli import hyperpod
from cdk_neuron.cli.aws import AwsLookupError
from cdk_neuron.cli.command import Command, environment_options, in_region, one_environment
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.stack_lookup import stack_outputs as stack_outputs
from cdk_neuron.cli.stack_lookup import stack_resource_arn as stack_resource_arn
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment, HyperPodLocation, JobQueueLocation, TrainingDeployment
from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.training.launcher import TRAINING_COMMAND_PARAMETER, encode_training_command
from cdk_neuron.validation import pinned_image

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


@dataclass(frozen=True)
class Submitted(Result):
    """``cdk-neuron submit``: the job as submitted, and the commands that follow it."""

    command = "submit"
    environment: str
    region: str
    stack: str
    job_id: str
    job_name: str
    job_arn: str | None
    job_queue: str
    job_definition: str
    definition_action: str
    """Which revision of the job definition runs the job, and why (as deployed, reused, registered)."""
    image: str | None
    nodes: int
    training_command: str
    environment_overrides: dict[str, str]
    watch_command: str
    logs_command: str


def _output(outputs: dict[str, str], key: str, stack_name: str) -> str:
    if key not in outputs:
        raise AwsLookupError(
            f"stack {stack_name} has no output {key} (outputs: {', '.join(sorted(outputs)) or 'none'})"
        )
    return outputs[key]


def batch_training(env: Deployment, command: str) -> TrainingDeployment:
    """The environment's AWS Batch training cluster, or a refusal naming why ``command`` cannot run."""
    training = env.training
    if training is None:
        raise NeuronConfigError(
            "--env",
            env.name,
            f"{command} runs training jobs and {env.name} has no training cluster: choose an environment "
            "with a BatchTrainingCluster or HyperPodTrainingCluster (--env NAME or --path CONSTRUCT_PATH)",
        )
    if training.engine != "batch":
        raise NeuronConfigError(
            f"environments.{env.name}.training.engine",
            training.engine,
            f"{command} runs AWS Batch and HyperPod (Slurm) jobs; this cluster is an Auto Scaling group: start "
            "jobs with your own scheduler",
        )
    return training


def job_training(env: Deployment, command: str) -> TrainingDeployment:
    """The environment's AWS Batch or HyperPod training cluster (the engines the job commands drive),
    or a refusal naming why ``command`` cannot run."""
    training = env.training
    if training is not None and training.engine == "hyperpod":
        return training
    return batch_training(env, command)


def validate_nodes(env: Deployment, nodes: int) -> None:
    """--nodes must fit the cluster and keep the configured TP x PP layout valid."""
    training = job_training(env, "submit")
    if not 1 <= nodes <= training.max_nodes:
        raise NeuronConfigError(
            "--nodes", nodes, f"use 1..{training.max_nodes} (environments.{env.name}.training.max_nodes)"
        )
    try:
        planner.replan_training(training.plan, nodes=nodes)
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


def _location(env: Deployment, stack_name: str | None) -> JobQueueLocation:
    """Where the environment's job queue and definition are published (``--stack`` replaces the stack)."""
    jobs = batch_training(env, "the job commands").jobs
    if jobs is None and stack_name is None:
        raise NeuronConfigError(
            "--stack",
            None,
            f"the app says nothing of where {env.name}'s job queue is published: pass --stack NAME "
            "(the stack with JobQueueArn and JobDefinitionArn outputs)",
        )
    if jobs is None:
        return JobQueueLocation(stack_name=str(stack_name))
    return jobs if stack_name is None else replace(jobs, stack_name=stack_name)


def job_arns(
    ctx: Context, env: Deployment, stack_name: str | None = None, *, definition: bool = True
) -> tuple[str, str, str | None]:
    """(stack name, job queue ARN, job definition ARN or None when not asked for) of the environment.

    By logical id (``cloudformation:DescribeStackResource``) when the cloud assembly named them, else
    from the stack's outputs (``cloudformation:DescribeStacks``).
    """
    location = _location(env, stack_name)
    stack = location.stack_name
    cloudformation = ctx.aws("cloudformation", env.region)
    if location.job_queue_logical_id is not None and (
        location.job_definition_logical_id is not None or not definition
    ):
        queue = stack_resource_arn(cloudformation, stack, location.job_queue_logical_id)
        found = (
            stack_resource_arn(cloudformation, stack, location.job_definition_logical_id)
            if definition and location.job_definition_logical_id is not None
            else None
        )
        return stack, queue, found
    outputs = stack_outputs(cloudformation, stack)
    queue = _output(outputs, location.job_queue_output, stack)
    return stack, queue, _output(outputs, location.job_definition_output, stack) if definition else None


def find_job_queue(ctx: Context, env: Deployment, stack_name: str | None = None) -> tuple[str, str]:
    """(stack name, job queue ARN) of the environment, as ``submit`` finds them."""
    stack, queue, _ = job_arns(ctx, env, stack_name, definition=False)
    return stack, queue


def default_job_name(env: Deployment, now: datetime) -> str:
    return f"{env.name}-train-{now.strftime('%Y%m%dT%H%M%SZ')}"


def submit(
    ctx: Context,
    env: Deployment,
    *,
    nodes: int,
    command: Sequence[str],
    image: str | None = None,
    env_vars: Sequence[str] = (),
    job_name: str | None = None,
    stack_name: str | None = None,
) -> Submitted:
    batch_training(env, "submit")
    training_command = _training_command(command)
    validate_nodes(env, nodes)
    environment = parse_env_vars(env_vars)
    name = _job_name(job_name or default_job_name(env, ctx.clock.now()))
    if image is not None:
        # The same rule as the cluster's job_image and cdk.json (cdk_neuron.validation.pinned_image).
        pinned_image("--image", image)

    stack, queue, definition_arn = job_arns(ctx, env, stack_name)
    assert definition_arn is not None
    batch = ctx.aws("batch", env.region)
    definition, definition_action = job_definition_for(batch, definition_arn, nodes=nodes, image=image)
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
        "parameters": {TRAINING_COMMAND_PARAMETER: encode_training_command(training_command)},
    }
    if node_overrides:
        request["nodeOverrides"] = node_overrides
    response = batch.submit_job(**request)
    return Submitted(
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
        watch_command=ctx.command_line(env, "status", "--watch", response["jobId"]),
        logs_command=ctx.command_line(env, "logs", "--follow", response["jobId"]),
    )


def _training_command(command: Sequence[str]) -> str:
    training_command = " ".join(command).strip()
    if not training_command:
        raise NeuronConfigError(
            "COMMAND", list(command), "give the command after --, e.g. -- 'torchrun $TORCHRUN_ARGS train.py'"
        )
    return training_command


def _job_name(name: str) -> str:
    if not _JOB_NAME.match(name):
        raise NeuronConfigError(
            "--name", name, "1-128 letters, digits, '-' and '_', starting with a letter or digit"
        )
    return name


def _argument_errors(args: argparse.Namespace) -> ErrorCollector:
    """The checks that need only the arguments (the command, --env-var, --name, --image), run
    before the environment is chosen, so one run reports them beside an environment mistake."""
    found = ErrorCollector()
    found.run(lambda: _training_command(args.job_command))
    found.run(lambda: parse_env_vars(args.env_var))
    if args.name is not None:
        found.run(lambda: _job_name(args.name))
    if args.image is not None:
        found.run(lambda: pinned_image("--image", args.image))
    return found


def render_submit(result: Submitted) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: submitted",
        [
            ("job id", result.job_id),
            ("job name", result.job_name),
            ("nodes", result.nodes),
            (
                "environment overrides",
                ", ".join(f"{k}={v}" for k, v in result.environment_overrides.items()) or "-",
            ),
            ("job queue", result.job_queue),
            ("job definition", result.job_definition),
            ("definition", result.definition_action),
        ],
    )
    out.commands("Every node runs:", [result.training_command])
    out.commands("Follow it with:", [result.watch_command, result.logs_command])
    return out


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def job_environment(
    ctx: Context, args: argparse.Namespace, command: str
) -> tuple[Deployment, TrainingDeployment]:
    """The one environment a job command acts on (``--env``/``--path``, ``--region``), and its AWS
    Batch or HyperPod training cluster: a refusal naming why ``command`` cannot run without one.

    ``--stack`` replaces the stack the app names (the job queue's for Batch, the cluster name's for
    HyperPod); ``--cluster`` is HyperPod's only."""
    env = in_region([one_environment(ctx.deployments, args)], args.region)[0]
    training = job_training(env, command)
    if training.engine == "hyperpod":
        stack = getattr(args, "stack", None)
        if stack is not None:
            location = replace(training.hyperpod or HyperPodLocation(), stack_name=stack)
            training = replace(training, hyperpod=location)
            env = replace(env, training=training)
    elif getattr(args, "cluster", None) is not None:
        raise NeuronConfigError(
            "--cluster", args.cluster, f"{env.name} trains on AWS Batch, not HyperPod: omit --cluster"
        )
    return env, training


def stack_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack",
        help="the stack that publishes the job queue (Batch) or the cluster name (HyperPod) (default: as the app says)",
    )
    hyperpod.cluster_option(parser)


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    parser.add_argument(
        "--nodes", type=int, help="number of nodes, 1..training.max_nodes (default: training.plan.nodes)"
    )
    parser.add_argument("--image", help="container image for every node (uses a job definition revision)")
    parser.add_argument(
        "--env-var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment variable for every node (a container override); repeatable",
    )
    parser.add_argument("--name", help="job name (default: <env>-train-<UTC timestamp>)")
    parser.add_argument(
        "--as-user",
        metavar="USER",
        help="HyperPod: the OS user the job runs as when the session is root (default: ubuntu; 'root' to keep root)",
    )
    stack_option(parser)


def _hyperpod_errors(
    args: argparse.Namespace, found: ErrorCollector, env: Deployment, training: TrainingDeployment
) -> None:
    """What HyperPod refuses of submit's arguments, beside the other mistakes."""
    from cdk_neuron.training import hyperpod_jobs

    found.run(lambda: validate_nodes(env, training.plan.nodes if args.nodes is None else args.nodes))
    if args.image is not None:
        found.add(
            NeuronConfigError(
                "--image",
                args.image,
                "HyperPod jobs run on the nodes' own Neuron software, not in a container image (the hyperpod "
                "engine refuses job_image): omit --image",
            )
        )
    if args.as_user is not None:
        from cdk_neuron.cli.slurm_jobs import job_user

        found.run(lambda: job_user(args.as_user))
    if args.name is not None and not hyperpod_jobs.JOB_NAME.match(args.name):
        found.add(
            NeuronConfigError(
                "--name", args.name, "a Slurm job name here: letters, digits and single hyphens, at most 63"
            )
        )


def _run_hyperpod(
    args: argparse.Namespace, ctx: Context, env: Deployment, training: TrainingDeployment
) -> ExitStatus:
    from cdk_neuron.cli import slurm_jobs

    nodes = training.plan.nodes if args.nodes is None else args.nodes
    result = slurm_jobs.submit(
        ctx,
        env,
        cluster_name=args.cluster,
        nodes=nodes,
        command=_training_command(args.job_command),
        env_vars={e["name"]: e["value"] for e in parse_env_vars(args.env_var)},
        job_name=args.name or default_job_name(env, ctx.clock.now()),
        as_user=args.as_user or slurm_jobs.DEFAULT_JOB_USER,
    )
    ctx.show(result, slurm_jobs.render_submit)
    return ExitStatus.OK


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    found = _argument_errors(args)
    chosen = found.run(lambda: job_environment(ctx, args, "submit"))
    if chosen is not None and chosen[1].engine == "hyperpod":
        _hyperpod_errors(args, found, *chosen)
    elif chosen is not None and args.as_user is not None:
        found.add(
            NeuronConfigError(
                "--as-user",
                args.as_user,
                "only HyperPod jobs take it: an AWS Batch job runs as its job definition's container user",
            )
        )
    found.raise_if_any()
    assert chosen is not None
    env, training = chosen
    if training.engine == "hyperpod":
        return _run_hyperpod(args, ctx, env, training)
    result = submit(
        ctx,
        env,
        nodes=training.plan.nodes if args.nodes is None else args.nodes,
        command=args.job_command,
        image=args.image,
        env_vars=args.env_var,
        job_name=args.name,
        stack_name=args.stack,
    )
    ctx.show(result, render_submit)
    return ExitStatus.OK


COMMAND = Command(
    "submit",
    "Submit a multi-node training job (AWS Batch, or Slurm on HyperPod): submit --nodes N -- 'torchrun $TORCHRUN_ARGS train.py'",
    _run,
    arguments=_arguments,
    aws=True,
    epilog=(
        "Everything after -- is the command line bash runs on every node, after the launcher has set "
        "MASTER_ADDR, NODE_RANK, TORCHRUN_ARGS and the NEURON_* degrees; single-quote $VARIABLES meant for the node."
    ),
    takes_job_command=True,
)
