"""Compile, then serve: the artifact a serving suite's fleet serves, compiled during the deploy.

(And train first, in train_compile_serve: :class:`TrainingStep`, the same kind of step around a
Batch job.)

Each serving suite builds, in its test stack:

- an artifact bucket (``Settings.artifact_bucket``: the fleet's ``artifact_uri`` names it literally),
  emptied and deleted with the stack;
- a :class:`~cdk_neuron.compilation.ModelCompilation` in the suite's VPC;
- a compile step (:class:`CompileStep`): a custom resource that runs the compilation's task with
  exactly the overrides ``cdk-neuron compile`` would send
  (:meth:`~cdk_neuron.compilation.CompileRequest.task_overrides`, built from the fleet's own model,
  plan and engine), waits until it stopped, and fails the deploy unless every step exited 0 and the
  manifest it uploaded last describes the prefix and the shape the fleet serves
  (``steps/compile_task.py``);
- the fleet, depending on the compile step: CloudFormation creates it only once the artifact and its
  manifest exist.

Why a custom resource and not ``cdk-neuron compile`` between two deploys: the command reads an app's
environments from ``cdk.json`` and its cloud assembly, which the integ stacks are not part of, and a
second deploy would split each suite in two. The custom resource sends the same request and waits the
way a user does (``aws ecs wait tasks-stopped``), inside one deploy that the runner already destroys
whatever happens. ``cdk-neuron compile`` itself is exercised offline (tests/test_cli_compile.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdk_neuron.compilation import CompileRequest, ModelCompilation, ModelSource
from cdk_neuron.serving import ModelSpec
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME
from cdk_neuron.serving.fleet import InferenceFleetBase
from cdk_neuron.storage import ICheckpointStore
from cdk_neuron.training import BatchTrainingCluster
from integ_support.stacks import IntegNetwork, IntegStack, emptied_bucket

HANDLER_DIR = Path(__file__).resolve().parent / "steps"
COMPILE_TIMEOUT = cdk.Duration.minutes(50)
"""The longest the step waits for the task: under the hour CloudFormation waits for a custom
resource (``ServiceTimeout``, AWS::CloudFormation::CustomResource). Shorter, on purpose, than the
task's own budget (``cdk_neuron.timeouts.compile_task_seconds``, sized for the largest source a
Fargate task takes): the suites' small models must export within it; when the wait runs out the
deploy fails and deleting the stack stops the task (``steps/compile_task.py``, ``stop``)."""
POLL_INTERVAL = cdk.Duration.seconds(30)
ARTIFACT_PREFIX = "compiled"


@dataclass(frozen=True)
class ArtifactStore:
    """A suite's artifact bucket, the ModelCompilation that writes it, and the prefix to write."""

    bucket: s3.Bucket
    compilation: ModelCompilation
    artifact_uri: str
    subnet_ids: list[str]
    """The task's subnets (``ecs:RunTask`` names them, as ``cdk-neuron compile`` does)."""


def artifact_store(
    stack: IntegStack,
    network: IntegNetwork,
    suite: str,
    *,
    name: str,
    checkpoint_store: ICheckpointStore | None = None,
) -> ArtifactStore:
    """The bucket and the ModelCompilation; ``name`` is the artifact's prefix under ``compiled/``."""
    bucket = emptied_bucket(stack, "Artifacts", bucket_name=stack.settings.artifact_bucket(suite))
    compilation = ModelCompilation(
        stack,
        "Compilation",
        vpc=network.vpc,
        vpc_subnets=network.private,
        artifact_bucket=bucket,
        checkpoint_store=checkpoint_store,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        log_retention=logs.RetentionDays.ONE_WEEK,
        # A pull-through cache rule's prefix is unique in an account and Region: one per suite, so the
        # suites deploy side by side.
        ecr_public_cache_prefix=f"cdk-neuron-integ-{suite}"[:30].rstrip("-_."),
    )
    return ArtifactStore(
        bucket,
        compilation,
        f"s3://{stack.settings.artifact_bucket(suite)}/{ARTIFACT_PREFIX}/{name}/",
        network.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnet_ids,
    )


def compiled_model(model: ModelSpec, store: ArtifactStore) -> ModelSpec:
    """``model`` served from the store's artifact (``model_id`` still names it to clients)."""
    return replace(model, artifact_uri=store.artifact_uri)


def step_functions(scope: Construct, module: str, purpose: str) -> dict[str, lambda_.Function]:
    """The ``on_event`` and ``is_complete`` functions of a step, from ``steps/<module>.py``."""
    code = lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"])
    functions = {}
    for handler in ("on_event", "is_complete"):
        functions[handler] = lambda_.Function(
            scope,
            "OnEvent" if handler == "on_event" else "IsComplete",
            runtime=lambda_.Runtime.PYTHON_3_12,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"{module}.{handler}",
            code=code,
            timeout=cdk.Duration.minutes(1),
            log_group=logs.LogGroup(
                scope,
                f"{handler}Logs",
                retention=logs.RetentionDays.ONE_WEEK,
                removal_policy=cdk.RemovalPolicy.DESTROY,
            ),
            description=f"cdk-neuron integ: {purpose}",
        )
    return functions


def step_provider(
    scope: Construct, functions: dict[str, lambda_.Function], timeout: cdk.Duration
) -> cr.Provider:
    """The provider framework around a step's functions: polled every 30 s for at most ``timeout``."""
    return cr.Provider(
        scope,
        "Provider",
        on_event_handler=functions["on_event"],
        is_complete_handler=functions["is_complete"],
        query_interval=POLL_INTERVAL,
        total_timeout=timeout,
    )


class TrainingStep(Construct):
    """Run one job on a Batch training cluster during the deploy and wait until it SUCCEEDED.

    Whatever depends on it (the compile step of train_compile_serve) starts only after the job wrote
    its checkpoint. The job's own timeout is the cluster's; the step waits at most ``timeout``.

    :ivar resource: the custom resource (``get_att_string("JobId")``, ``"RunningSeconds"``).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: BatchTrainingCluster,
        job_name: str,
        timeout: cdk.Duration,
    ) -> None:
        super().__init__(scope, id)
        if timeout.to_seconds() >= 3600:
            raise ValueError("a deploy-time step must end within the hour CloudFormation waits for it")
        functions = step_functions(self, "training_job", "run the suite's training job before what it feeds")
        functions["on_event"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["batch:SubmitJob"],
                resources=[cluster.job_queue.job_queue_arn, cluster.job_definition.job_definition_arn],
            )
        )
        # DescribeJobs takes no resource ("*" in the Service Authorization Reference); TerminateJob
        # acts on job ARNs, which exist only once submitted.
        for name in ("on_event", "is_complete"):
            functions[name].add_to_role_policy(
                iam.PolicyStatement(actions=["batch:DescribeJobs"], resources=["*"])
            )
        functions["on_event"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["batch:TerminateJob"],
                resources=[f"arn:{cdk.Aws.PARTITION}:batch:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:job/*"],
            )
        )
        provider = step_provider(self, functions, timeout)
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type="Custom::CdkNeuronIntegTrainingJob",
            properties={
                "JobName": job_name,
                "JobQueue": cluster.job_queue.job_queue_arn,
                "JobDefinition": cluster.job_definition.job_definition_arn,
            },
        )


class CompileStep(Construct):
    """Compile ``source`` for ``fleet`` during the deploy; the fleet is created after it.

    :ivar resource: the custom resource (``get_att_string("CompileSeconds")``, ``"ManifestUri"``,
        ``"Files"``, ``"Compiler"``).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        store: ArtifactStore,
        source: ModelSource,
        fleet: InferenceFleetBase,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        compilation = store.compilation
        request = CompileRequest(
            source=source,
            artifact_uri=store.artifact_uri,
            model=fleet.model,
            plan=fleet.plan,
            engine=fleet.engine,
        )
        functions = step_functions(self, "compile_task", "compile the suite's model before its fleet")
        task_definition = compilation.task_definition
        functions["on_event"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:RunTask"],
                resources=[task_definition.task_definition_arn],
                conditions={"ArnEquals": {"ecs:cluster": compilation.cluster.cluster_arn}},
            )
        )
        functions["on_event"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:StopTask"],
                resources=["*"],
                conditions={"ArnEquals": {"ecs:cluster": compilation.cluster.cluster_arn}},
            )
        )
        roles = [compilation.task_role, task_definition.obtain_execution_role()]
        for role in roles:
            role.grant_pass_role(functions["on_event"].grant_principal)
        functions["is_complete"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:DescribeTasks"],
                resources=["*"],
                conditions={"ArnEquals": {"ecs:cluster": compilation.cluster.cluster_arn}},
            )
        )
        manifest_key = f"{request.artifact.split('/', 3)[3]}{MANIFEST_NAME}"
        store.bucket.grant_read(functions["is_complete"], manifest_key)
        provider = step_provider(self, functions, COMPILE_TIMEOUT)
        subnets = store.subnet_ids
        self.request = request
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type="Custom::CdkNeuronIntegCompile",
            properties={
                "Cluster": compilation.cluster.cluster_arn,
                "TaskDefinition": task_definition.task_definition_arn,
                "Subnets": subnets,
                "SecurityGroups": [compilation.security_group.security_group_id],
                "Overrides": json.dumps(request.task_overrides(stack.region), sort_keys=True),
                "ArtifactUri": request.artifact,
                "Source": json.dumps(
                    {"kind": source.kind, "uri": source.uri, "step": source.step}, sort_keys=True
                ),
                "Shape": json.dumps(
                    {
                        "batch_size": fleet.model.graph_batch_size,
                        "sequence_length": fleet.model.graph_sequence_length,
                        "tensor_parallel": fleet.plan.tensor_parallel,
                        "dtype": fleet.model.dtype.lower(),
                    },
                    sort_keys=True,
                ),
            },
        )
        # The fleet, all of it, is created once the artifact is compiled and described.
        fleet.node.add_dependency(self.resource)
