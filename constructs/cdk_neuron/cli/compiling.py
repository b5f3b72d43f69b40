"""``cdk-neuron compile``: compile a model for an environment's fleet with its ModelCompilation task.

The environment's fleet decides the shape and the engine (its ``ModelSpec``, plan and engine, as the
cloud assembly records them), so the artifact is compiled for exactly what will serve it. The command
finds the environment's ModelCompilation (its cluster, task definition and security group by logical
id, ``cloudformation:DescribeStackResource``; its subnets as the template names them) and starts the
task (``ecs:RunTask``) with each container's settings as overrides
(:meth:`cdk_neuron.compilation.CompileRequest.task_overrides`). The task writes the artifact, then its
``cdk-neuron-artifact.json``; point the fleet at it (``serving.model.artifact_uri``) and run
``cdk-neuron preflight``.

Where the environment compiles on its training cluster (``compilation.runs_on: training-cluster``, a
BatchModelCompilation), the same request is submitted as a Batch job instead (``batch:SubmitJob`` on
the compile queue, :mod:`cdk_neuron.cli.compile_batch`), and ``--wait`` follows it with
``batch:DescribeJobs``.

Sources: ``checkpoint:<path under the CheckpointStore>``, ``s3://bucket/prefix/`` (a Hugging Face
checkpoint) or ``hub:<org/model>``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import Any

from cdk_neuron import timeouts
from cdk_neuron.cli.aws import AwsLookupError, error_code
from cdk_neuron.cli.command import Command, environment_options, in_region, one_environment
from cdk_neuron.cli.compile_batch import submit_compile_job, wait_for_compile_job
from cdk_neuron.cli.compile_wait import CompileOutcome, logs_tail_commands, render_outcome, wait_for_compile
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import OMIT_IF_NONE, Result
from cdk_neuron.cli.stack_lookup import stack_outputs, stack_resource_arn
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.compilation.job import (
    FARGATE_MAX_WEIGHTS_GIB,
    CompileRequest,
    HostCompile,
    ModelSource,
    artifact_key_prefix,
)
from cdk_neuron.deployment import PLACEHOLDER_ACCOUNT, CompilationDeployment, Deployment
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
    runs_on: str = "fargate"
    """``fargate`` (an ECS task: ``task_arn``, ``cluster``) or ``training-cluster`` (a Batch job:
    ``task_arn`` is the job's ARN, ``cluster`` the compile queue's)."""
    job_id: str | None = field(default=None, metadata=OMIT_IF_NONE)
    """The Batch job id (training-cluster)."""
    outcome: CompileOutcome | None = field(default=None, metadata=OMIT_IF_NONE)
    """With ``--wait``: how the task ended (:mod:`cdk_neuron.cli.compile_wait`)."""


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


def source_hw_backend(given: str | None, env: Deployment, tensor_parallel: int | None) -> str:
    """``--source-hw-backend``, or the generation of the environment's training cluster, where the
    checkpoints on its CheckpointStore were saved: ``trn1`` for Trn1/Trn1n, ``trn2`` for Trn2/Trn3 (NxD's
    converter ``--hw_backend``). Without a training cluster it must be given when a checkpoint is converted
    (``--source-tp``); otherwise nothing reads it."""
    if given is not None:
        return given
    if env.training is not None:
        return "trn1" if env.training.instance_type.startswith("trn1") else "trn2"
    if tensor_parallel is not None:
        raise NeuronConfigError(
            "--source-hw-backend",
            None,
            f"{env.name} has no training cluster to take it from: give trn1 (Trn1/Trn1n) or trn2 (Trn2/Trn3), "
            "the generation the checkpoint was saved on",
        )
    return "trn1"


def compile_host(compilation: CompilationDeployment) -> HostCompile | None:
    """What the export gets where the environment compiles: None on Fargate, else the training
    cluster's instance (the catalog's facts)."""
    return HostCompile.where(compilation.runs_on, compilation.instance_type)


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


def _subnets(cloudformation: Any, stack: str, value: object) -> list[str]:
    """The subnet ids one recorded subnet stands for: a literal id, a ``Ref`` to a subnet of the stack,
    or an ``Fn::GetStackOutput`` (a weak cross-stack reference, or a stack output listing ids
    comma-separated) read with ``cloudformation:DescribeStacks``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict) and isinstance(value.get("Ref"), str):
        return [stack_resource_arn(cloudformation, stack, value["Ref"])]
    output = value.get("Fn::GetStackOutput") if isinstance(value, dict) else None
    if (
        isinstance(output, dict)
        and isinstance(output.get("StackName"), str)
        and isinstance(output.get("OutputName"), str)
    ):
        outputs = stack_outputs(cloudformation, output["StackName"])
        if output["OutputName"] not in outputs:
            raise AwsLookupError(
                f"stack {output['StackName']} has no output {output['OutputName']} (the compile task's subnets): "
                "deploy it with this app's version"
            )
        return [s for s in outputs[output["OutputName"]].split(",") if s]
    raise AwsLookupError(
        f"the ModelCompilation's subnet {value!r} is neither a literal id, a resource of stack {stack} nor "
        "another stack's output: give the task subnets of the stack it stands in, or literal subnet ids"
    )


def check_aws_cli_image_cached(ctx: Context, compilation: CompilationDeployment, region: str) -> None:
    """Without a route to the internet, the ECR Public pull-through cache must already hold the AWS CLI
    image: the first pull of a cached image through an ECR interface endpoint needs a NAT ("Amazon ECR
    interface VPC endpoints (AWS PrivateLink)", considerations, Amazon ECR User Guide,
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html, read 2026-12-02), and the
    task would stop in PENDING with CannotPullContainerError. ``ecr:DescribeImages`` says whether it is
    there; if not, the error names the one pull, from a machine with the internet, that imports it."""
    repository = compilation.aws_cli_cache_repository
    if compilation.internet or repository is None or compilation.aws_cli_image is None:
        return
    tag = compilation.aws_cli_image.rpartition(":")[2]
    try:
        ctx.aws("ecr", region).describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except Exception as error:
        if error_code(error) not in ("ImageNotFoundException", "RepositoryNotFoundException"):
            raise
        image, note = pull_image_reference(ctx, compilation.aws_cli_image, region)
        registry = image.split("/", 1)[0]
        raise NeuronConfigError(
            "aws_cli_image",
            compilation.aws_cli_image,
            "is not in the ECR pull-through cache yet, and the task's subnets have no NAT, which the first pull "
            "through an ECR interface endpoint needs (Amazon ECR User Guide, interface VPC endpoints): cache it once "
            f"from a machine with the internet: aws ecr get-login-password --region {region} | docker login "
            f"--username AWS --password-stdin {registry} && docker pull {image}{note}",
        ) from None


def pull_image_reference(ctx: Context, image: str, region: str) -> tuple[str, str]:
    """``image`` as a ``docker pull`` from the deployment's account can use, and a note to print after it.

    An environment without an account in cdk.json is synthesized with the placeholder account
    (:data:`cdk_neuron.deployment.PLACEHOLDER_ACCOUNT`; the assembly this command reads then names a
    registry nobody owns). The stack itself was deployed into the account of the credentials, and
    ``ecr:DescribeImages`` just read that account's registry, so the registry is that account's:
    ``sts:GetCallerIdentity`` (which needs no permission: "GetCallerIdentity", AWS STS API Reference,
    https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html, read 2026-12-02)
    says which. If even that fails, the account becomes ``<account-id>`` and the note says how to find it.
    """
    registry, _, rest = image.partition("/")
    account, dot, host = registry.partition(".")
    if account != PLACEHOLDER_ACCOUNT or not dot:
        return image, ""
    try:
        resolved = str(ctx.aws("sts", region).get_caller_identity()["Account"])
    except Exception:  # any failure: fall back to a placeholder that says what to fill in
        resolved = ""
    if resolved.isdigit() and len(resolved) == 12:
        return f"{resolved}.{host}/{rest}", ""
    return (
        f"<account-id>.{host}/{rest}",
        " (<account-id>: the account the environment is deployed in, `aws sts get-caller-identity --query "
        "Account --output text` with its credentials; cdk.json names none for this environment)",
    )


def _construct(compilation: CompilationDeployment) -> str:
    """The construct the environment compiles with, for the messages that tell what to change."""
    return (
        "BatchModelCompilation (compilation.runs_on training-cluster)"
        if compilation.runs_on == "training-cluster"
        else "ModelCompilation"
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
                f"the environment's {_construct(compilation)} mounts no CheckpointStore: give it checkpoint_store= "
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
                f"the {_construct(compilation)} may write only under {compilation.artifact_prefix} (its artifact_prefix): "
                f"use s3://{compilation.artifact_bucket or bucket}/{compilation.artifact_prefix}<name>/",
            )
        )
    if compilation.artifact_bucket is not None and bucket != compilation.artifact_bucket:
        found.add(
            NeuronConfigError(
                "--artifact-uri",
                request.artifact,
                f"the {_construct(compilation)} writes to bucket {compilation.artifact_bucket}: use "
                f"s3://{compilation.artifact_bucket}/{compilation.artifact_prefix or ''}<name>/",
            )
        )
    fleet_image = request.engine.image.uri(region)
    if compilation.image is not None and compilation.image != fleet_image:
        found.add(
            NeuronConfigError(
                "image",
                compilation.image,
                f"the {_construct(compilation)} compiles with this image and the fleet serves {fleet_image}: an "
                "artifact loads only under the optimum-neuron and neuronx-cc that exported it; give the "
                f"{_construct(compilation)} the fleet's engine (engine=) and deploy it",
            )
        )
    found.raise_if_any()


def _shape(request: CompileRequest) -> str:
    model = request.model
    return (
        f"batch {model.graph_batch_size} x {model.graph_sequence_length}, TP {request.plan.tensor_parallel}, "
        f"{model.dtype.lower()}"
    )


def submit_on_training_cluster(ctx: Context, env: Deployment, request: CompileRequest) -> Compiling:
    """The compile as a BatchModelCompilation job on the training cluster (:mod:`cdk_neuron.cli.compile_batch`)."""
    compilation = _compilation(env)
    check_request(compilation, request, env.region)
    job = submit_compile_job(
        ctx,
        env_name=env.name,
        region=env.region,
        compilation=compilation,
        overrides=request.job_overrides(env.region),
    )
    return Compiling(
        environment=env.name,
        region=env.region,
        task_arn=job["jobArn"],
        cluster=job["queue"],
        source=f"{request.source.kind}:{request.source.uri}",
        artifact_uri=request.artifact,
        manifest_uri=f"{request.artifact}{MANIFEST_NAME}",
        shape=_shape(request),
        image=request.engine.image.uri(env.region),
        wait_command=f"aws batch describe-jobs --region {env.region} --jobs {job['jobId']}",
        logs_command=job["logs"]
        or f"aws batch describe-jobs --region {env.region} --jobs {job['jobId']}  # each container's logStreamName",
        runs_on="training-cluster",
        job_id=job["jobId"],
    )


def compile_model(ctx: Context, env: Deployment, request: CompileRequest) -> Compiling:
    compilation = _compilation(env)
    if compilation.runs_on == "training-cluster":
        return submit_on_training_cluster(ctx, env, request)
    check_request(compilation, request, env.region)
    check_aws_cli_image_cached(ctx, compilation, env.region)
    cloudformation = ctx.aws("cloudformation", env.region)
    stack = compilation.stack_name
    cluster = stack_resource_arn(cloudformation, stack, compilation.cluster_logical_id)
    task_definition = stack_resource_arn(cloudformation, stack, compilation.task_definition_logical_id)
    group = stack_resource_arn(cloudformation, stack, compilation.security_group_logical_id)
    subnets = [subnet for value in compilation.subnets for subnet in _subnets(cloudformation, stack, value)]
    response = ctx.aws("ecs", env.region).run_task(
        cluster=cluster,
        taskDefinition=task_definition,
        launchType="FARGATE",
        count=1,
        startedBy="cdk-neuron-compile",
        # The task definition's environment/project tags on the task, for cost allocation ("If no value is
        # specified, the tags aren't propagated": RunTask, Amazon ECS API Reference).
        propagateTags="TASK_DEFINITION",
        enableECSManagedTags=True,
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
    # Where the export logs: the task definition's awslogs group and stream prefix (ecs:DescribeTaskDefinition).
    logs = logs_tail_commands(ctx.aws("ecs", env.region), task_definition, task_arn, env.region)
    return Compiling(
        environment=env.name,
        region=env.region,
        task_arn=task_arn,
        cluster=cluster,
        source=f"{request.source.kind}:{request.source.uri}",
        artifact_uri=request.artifact,
        manifest_uri=f"{request.artifact}{MANIFEST_NAME}",
        shape=_shape(request),
        image=request.engine.image.uri(env.region),
        wait_command=f"aws ecs wait tasks-stopped --region {env.region} --cluster {cluster} --tasks {task_arn}",
        logs_command=f"{logs['export']} --follow"
        if "export" in logs
        else f"aws ecs describe-tasks --region {env.region} --cluster {cluster} --tasks {task_arn}",
    )


def render_compile(result: Compiling) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: compiling"
        + (" on the training cluster" if result.runs_on == "training-cluster" else ""),
        [
            ("job" if result.runs_on == "training-cluster" else "task", result.task_arn),
            ("source", result.source),
            ("shape", result.shape),
            ("image", result.image),
            ("artifact", result.artifact_uri),
            ("manifest", result.manifest_uri),
        ],
    )
    if result.outcome is not None:
        render_outcome(result.outcome, out)
    elif result.runs_on == "training-cluster":
        out.commands(
            "Follow it with (it waits in RUNNABLE until a training node is free):",
            [result.logs_command, result.wait_command],
        )
    else:
        out.commands(
            "Follow it with:", [result.logs_command, result.wait_command + "  # gives up after 10 min"]
        )
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
        help="the Trainium generation a training checkpoint was saved on: trn1 (Trn1/Trn1n) or trn2 (Trn2/Trn3); "
        "NxD's converter orders replicated KV heads by it (default: the environment's training cluster's)",
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
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the task to its end (up to the task's own budget), report every step's exit and read the "
        "manifest back; exit 1 unless the artifact was written and fits the fleet",
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    env = in_region([one_environment(ctx.deployments, args)], args.region)[0]
    compilation = _compilation(env)
    assert env.serving is not None
    found = ErrorCollector()
    # Every mistake at once: the options, the request, and what the deployed task cannot do.
    backend = found.run(lambda: source_hw_backend(args.source_hw_backend, env, args.source_tp))
    source = found.run(
        lambda: parse_source(
            args.source,
            step=args.step,
            tensor_parallel=args.source_tp,
            pipeline_parallel=args.source_pp,
            revision=args.revision,
            hw_backend=backend or "trn1",
            kv_size_multiplier=args.source_kv_multiplier,
            config_from=args.config_from,
        )
    )
    serving = env.serving
    request = (
        found.run(
            lambda: CompileRequest(
                source=source,
                artifact_uri=args.artifact_uri,
                model=serving.model,
                plan=serving.plan,
                engine=serving.engine,
                hub_route=compilation.internet,
                host=compile_host(compilation),
            )
        )
        if source is not None
        else None
    )
    if request is not None:
        found.run(lambda: check_request(compilation, request, env.region))
    found.raise_if_any()
    assert request is not None
    result = compile_model(ctx, env, request)
    if result.job_id is not None:
        # Said at once: whatever happens next (a denied DescribeJobs, an interrupted --wait), the job is
        # queued and holds a node once it runs; compiling again would queue a second one.
        print(
            f"cdk-neuron compile: submitted {result.task_arn} (job id {result.job_id})",
            file=ctx.err,
            flush=True,
        )
    if args.wait and result.job_id is not None:
        host = compile_host(compilation)
        assert host is not None
        outcome = wait_for_compile_job(
            ctx,
            env=env.name,
            region=env.region,
            job_id=result.job_id,
            artifact_uri=result.artifact_uri,
            serving=serving,
            # The job definition's attempt budget, sized for the largest export its host takes.
            deadline_seconds=timeouts.compile_job_seconds(host.max_weights_gib),
            on_poll=lambda state: print(f"cdk-neuron compile: {state}", file=ctx.err, flush=True),
        )
        result = replace(result, outcome=outcome)
    elif args.wait:
        outcome = wait_for_compile(
            ctx,
            env=env.name,
            region=env.region,
            cluster=result.cluster,
            task_arn=result.task_arn,
            artifact_uri=result.artifact_uri,
            serving=serving,
            # The task definition's step timeouts are sized for the largest source a task takes.
            deadline_seconds=timeouts.compile_task_seconds(FARGATE_MAX_WEIGHTS_GIB),
            timed_out_exit_code=timeouts.TIMED_OUT_EXIT_CODE,
            on_poll=lambda state: print(f"cdk-neuron compile: {state}", file=ctx.err, flush=True),
        )
        result = replace(result, outcome=outcome)
    ctx.show(result, render_compile)
    return (
        ExitStatus.OK if result.outcome is None or result.outcome.status == "succeeded" else ExitStatus.FAILED
    )


COMMAND = Command(
    "compile",
    "Compile a model for the environment's fleet with its ModelCompilation task (or its training cluster's compile job): compile --source checkpoint:run-7/step-1200 --artifact-uri s3://...",
    _run,
    arguments=_arguments,
    aws=True,
    epilog=(
        "The fleet decides the shape (batch, sequence length, TP, dtype) and the image; the task writes the "
        "artifact and, last, its cdk-neuron-artifact.json. Then set serving.model.artifact_uri and run preflight."
    ),
)
