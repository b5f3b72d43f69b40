"""``cdk-neuron compile``: compile a model for an environment's fleet with its ModelCompilation task.

The environment's fleet decides the shape and the engine (its ``ModelSpec``, plan and engine, as the
cloud assembly records them), so the artifact is compiled for exactly what will serve it. The command
finds the environment's ModelCompilation (its cluster, task definition and security group by logical
id, ``cloudformation:DescribeStackResource``; its subnets as the template names them) and starts the
task (``ecs:RunTask``) with each container's settings as overrides
(:meth:`cdk_neuron.compilation.CompileRequest.task_overrides`). The task writes the artifact, then its
``cdk-neuron-artifact.json``; point the fleet at it (``serving.model.artifact_uri``) and run
``cdk-neuron preflight``.

Sources: ``checkpoint:<path under the CheckpointStore>``, ``s3://bucket/prefix/`` (a Hugging Face
checkpoint) or ``hub:<org/model>``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from cdk_neuron.cli.aws import AwsLookupError
from cdk_neuron.cli.command import Command, environment_options, in_region, one_environment
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.cli.submit import stack_resource_arn
from cdk_neuron.compilation.job import CompileRequest, ModelSource, artifact_key_prefix
from cdk_neuron.deployment import CompilationDeployment, Deployment
from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME


@dataclass(frozen=True)
class Compiling(Result):
    """``cdk-neuron compile``: the task started, what it writes, and how to follow it."""

    command = "compile"
    environment: str
    region: str
    task_arn: str
    cluster: str
    source: str
    artifact_uri: str
    manifest_uri: str
    shape: str
    image: str
    wait_command: str
    logs_command: str


def parse_source(
    text: str,
    *,
    step: int | None,
    tensor_parallel: int | None,
    pipeline_parallel: int,
    revision: str | None,
    hw_backend: str = "trn1",
    kv_size_multiplier: int = 1,
    config_from: str | None = None,
) -> ModelSource:
    """``--source``: ``checkpoint:PATH``, ``s3://bucket/prefix/`` or ``hub:ORG/MODEL``."""
    kind, _, rest = text.partition(":")
    if kind == "checkpoint":
        return ModelSource.checkpoint(
            rest,
            step=step,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
            hw_backend=hw_backend,
            kv_size_multiplier=kv_size_multiplier,
            config_from=config_from,
        )
    if kind == "s3":
        return ModelSource.s3(text)
    if kind == "hub":
        return ModelSource.hub(rest, revision=revision)
    raise NeuronConfigError(
        "--source",
        text,
        "use checkpoint:<path under the CheckpointStore>, s3://bucket/prefix/ or hub:<org/model>",
    )


def _compilation(env: Deployment) -> CompilationDeployment:
    if env.compilation is None:
        raise NeuronConfigError(
            "--env",
            env.name,
            "has no ModelCompilation: add one to the app (cdk_neuron.compilation.ModelCompilation), deploy it, "
            "and synthesize the assembly this command reads",
        )
    if env.serving is None:
        raise NeuronConfigError(
            "--env", env.name, "has no inference fleet: compile compiles for an environment's fleet"
        )
    return env.compilation


def _subnet(cloudformation: Any, stack: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("Ref"), str):
        return stack_resource_arn(cloudformation, stack, value["Ref"])
    raise AwsLookupError(
        f"the ModelCompilation's subnet {value!r} is neither a literal id nor a resource of stack {stack}: "
        "give the task subnets of the stack it stands in, or literal subnet ids"
    )


def check_request(compilation: CompilationDeployment, request: CompileRequest, region: str) -> None:
    """What the deployed task cannot do, refused before ``ecs:RunTask`` (every problem at once).

    - a ``checkpoint:`` source when the task mounts no CheckpointStore;
    - an artifact URI outside the bucket and prefix the task may write (its grant is ``<prefix>*``);
    - a fleet whose image is not the one the task compiles with: the artifact would be compiled by
      another optimum-neuron and neuronx-cc than the fleet loads it with, which optimum-neuron refuses
      (``NeuronConfig.from_dict``, optimum/neuron/configuration_utils.py @v0.4.5).
    """
    found = ErrorCollector()
    if request.source.kind == "checkpoint" and not compilation.checkpoints:
        found.add(
            NeuronConfigError(
                "--source",
                f"checkpoint:{request.source.uri}",
                "the environment's ModelCompilation mounts no CheckpointStore: give it checkpoint_store= "
                "and deploy, or copy the checkpoint to S3 and compile --source s3://bucket/prefix/",
            )
        )
    bucket, key = artifact_key_prefix(request.artifact)
    if compilation.artifact_prefix is not None and (
        not key.startswith(compilation.artifact_prefix) or key == compilation.artifact_prefix
    ):
        found.add(
            NeuronConfigError(
                "--artifact-uri",
                request.artifact,
                f"the ModelCompilation may write only under {compilation.artifact_prefix} (its artifact_prefix): "
                f"use s3://{compilation.artifact_bucket or bucket}/{compilation.artifact_prefix}<name>/",
            )
        )
    if compilation.artifact_bucket is not None and bucket != compilation.artifact_bucket:
        found.add(
            NeuronConfigError(
                "--artifact-uri",
                request.artifact,
                f"the ModelCompilation writes to bucket {compilation.artifact_bucket}: use "
                f"s3://{compilation.artifact_bucket}/{compilation.artifact_prefix or ''}<name>/",
            )
        )
    fleet_image = request.engine.image.uri(region)
    if compilation.image is not None and compilation.image != fleet_image:
        found.add(
            NeuronConfigError(
                "image",
                compilation.image,
                f"the ModelCompilation compiles with this image and the fleet serves {fleet_image}: an artifact "
                "loads only under the optimum-neuron and neuronx-cc that exported it; give the ModelCompilation "
                "the fleet's engine (engine=) and deploy it",
            )
        )
    found.raise_if_any()


def compile_model(ctx: Context, env: Deployment, request: CompileRequest) -> Compiling:
    compilation = _compilation(env)
    check_request(compilation, request, env.region)
    cloudformation = ctx.aws("cloudformation", env.region)
    stack = compilation.stack_name
    cluster = stack_resource_arn(cloudformation, stack, compilation.cluster_logical_id)
    task_definition = stack_resource_arn(cloudformation, stack, compilation.task_definition_logical_id)
    group = stack_resource_arn(cloudformation, stack, compilation.security_group_logical_id)
    subnets = [_subnet(cloudformation, stack, s) for s in compilation.subnets]
    response = ctx.aws("ecs", env.region).run_task(
        cluster=cluster,
        taskDefinition=task_definition,
        launchType="FARGATE",
        count=1,
        startedBy="cdk-neuron-compile",
        networkConfiguration={
            "awsvpcConfiguration": {
                "subnets": subnets,
                "securityGroups": [group],
                "assignPublicIp": "DISABLED",
            }
        },
        overrides=request.task_overrides(env.region),
    )
    failures = response.get("failures") or []
    tasks = response.get("tasks") or []
    if failures or not tasks:
        reasons = (
            "; ".join(f"{f.get('arn', '')} {f.get('reason', '')}".strip() for f in failures) or "no task"
        )
        raise AwsLookupError(f"ecs:RunTask started no compile task: {reasons}")
    task_arn = str(tasks[0]["taskArn"])
    model = request.model
    return Compiling(
        environment=env.name,
        region=env.region,
        task_arn=task_arn,
        cluster=cluster,
        source=f"{request.source.kind}:{request.source.uri}",
        artifact_uri=request.artifact,
        manifest_uri=f"{request.artifact}{MANIFEST_NAME}",
        shape=(
            f"batch {model.graph_batch_size} x {model.graph_sequence_length}, TP {request.plan.tensor_parallel}, "
            f"{model.dtype.lower()}"
        ),
        image=request.engine.image.uri(env.region),
        wait_command=f"aws ecs wait tasks-stopped --region {env.region} --cluster {cluster} --tasks {task_arn}",
        logs_command=f"aws ecs describe-tasks --region {env.region} --cluster {cluster} --tasks {task_arn}",
    )


def render_compile(result: Compiling) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: compiling",
        [
            ("task", result.task_arn),
            ("source", result.source),
            ("shape", result.shape),
            ("image", result.image),
            ("artifact", result.artifact_uri),
            ("manifest", result.manifest_uri),
        ],
    )
    out.commands("Wait for it with:", [result.wait_command, result.logs_command])
    return out


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    parser.add_argument(
        "--source",
        required=True,
        help="checkpoint:<path under the CheckpointStore>, s3://bucket/prefix/ (a Hugging Face checkpoint) or hub:<org/model>",
    )
    parser.add_argument("--artifact-uri", required=True, help="s3://bucket/prefix/ to write (a new prefix)")
    parser.add_argument("--step", type=int, help="the training step of a checkpoint source")
    parser.add_argument(
        "--source-tp",
        type=int,
        help="the TP a neuronx-distributed training checkpoint was saved with (to convert it)",
    )
    parser.add_argument("--source-pp", type=int, default=1, help="its pipeline-parallel degree (default: 1)")
    parser.add_argument(
        "--source-hw-backend",
        default="trn1",
        help="the Trainium generation a training checkpoint was saved on: trn1 (Trn1/Trn1n) or trn2 (Trn2/Trn3); "
        "NxD's converter orders replicated KV heads by it (default: trn1)",
    )
    parser.add_argument(
        "--source-kv-multiplier",
        type=int,
        default=1,
        help="the KV-head replication of a training checkpoint (NxD kv_size_multiplier, e.g. 4 for Llama 3 8B at "
        "TP 32; default: 1)",
    )
    parser.add_argument(
        "--config-from",
        help="where a checkpoint's missing config.json and tokenizer are: hub:<org/model>[@revision] or "
        "s3://bucket/prefix/ (default: the fleet's model on the Hub)",
    )
    parser.add_argument("--revision", help="the Hub revision of a hub: source")


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    env = in_region([one_environment(ctx.deployments, args)], args.region)[0]
    _compilation(env)
    assert env.serving is not None
    found = ErrorCollector()
    source = found.run(
        lambda: parse_source(
            args.source,
            step=args.step,
            tensor_parallel=args.source_tp,
            pipeline_parallel=args.source_pp,
            revision=args.revision,
            hw_backend=args.source_hw_backend,
            kv_size_multiplier=args.source_kv_multiplier,
            config_from=args.config_from,
        )
    )
    found.raise_if_any()
    assert source is not None
    serving = env.serving
    request = CompileRequest(
        source=source,
        artifact_uri=args.artifact_uri,
        model=serving.model,
        plan=serving.plan,
        engine=serving.engine,
    )
    ctx.show(compile_model(ctx, env, request), render_compile)
    return ExitStatus.OK


COMMAND = Command(
    "compile",
    "Compile a model for the environment's fleet with its ModelCompilation task: compile --source checkpoint:run-7/step-1200 --artifact-uri s3://...",
    _run,
    arguments=_arguments,
    aws=True,
    epilog=(
        "The fleet decides the shape (batch, sequence length, TP, dtype) and the image; the task writes the "
        "artifact and, last, its cdk-neuron-artifact.json. Then set serving.model.artifact_uri and run preflight."
    ),
)
