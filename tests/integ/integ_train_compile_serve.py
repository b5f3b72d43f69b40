"""train_compile_serve: one model from a training run to a served answer (opt-in).

Proves, in the account, the workflow cdk-neuron exists for, end to end, in one deploy:

1. **Train.** A ``BatchTrainingCluster`` of one trn1.2xlarge runs a job (``programs/finetune.py``)
   that fine-tunes ``HuggingFaceTB/SmolLM2-360M-Instruct`` for a few steps on both NeuronCores with
   neuronx-distributed and saves it with NxD's checkpoint API to the ``CheckpointStore``
   (``train-compile-serve/step-5``). The training step (a custom resource) waits until the job
   SUCCEEDED.
2. **Compile.** Then the compile step runs the ``ModelCompilation`` task on that checkpoint, mounted
   read-only: NxD's converter turns the sharded training checkpoint into one state dict, optimum-neuron
   exports it for the fleet's shape, the manifest records the checkpoint (path, step, hash). The step
   requires the manifest to name that checkpoint and the fleet's shape.
3. **Serve.** Then an ``Ec2InferenceFleet`` of one inf2.xlarge serves the artifact; asserted: the
   instance is InService, its target healthy, the probe in the VPC gets a streamed chat completion
   naming the model, and the training job logged ``checkpoint_ok``.

Opt-in (``make integ SUITES=train_compile_serve CONFIRM=yes``); its cost is printed before anything
deploys (``integ_support/registry.py``). Run offline by ``make test`` (snapshot).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs
from aws_cdk.integ_tests_alpha import ExpectedResult

from cdk_neuron.compilation import ModelSource
from cdk_neuron.planner import plan_training
from cdk_neuron.serving import ModelSpec
from cdk_neuron.training import BatchTrainingCluster
from integ_support import assertions, programs
from integ_support.compiled import CompileStep, TrainingStep, artifact_store, compiled_model
from integ_support.programs import LOG_MARKER
from integ_support.serving import MAX_TOKENS, PROMPT, ec2_fleet
from integ_support.settings import (
    TRAIN_MODEL_ID,
    TRAIN_MODEL_KV_HEADS,
    TRAIN_MODEL_LAYERS,
    TRAIN_MODEL_PARAMETERS,
    TRAIN_MODEL_SEQUENCE_LENGTH,
    Settings,
    stack_name,
)
from integ_support.stacks import (
    IntegNetwork,
    IntegStack,
    Suite,
    checkpoint_store,
    integ_app,
    integ_test,
    vpc_probe,
)

SUITE = "train_compile_serve"
INSTANCE_TYPE = "trn1.2xlarge"
RUN_NAME = "train-compile-serve"
STEPS = 5
JOB_TIMEOUT = cdk.Duration.minutes(45)
TRAINING_WAIT = cdk.Duration.minutes(55)
"""The training step's wait: the job's timeout, plus the node's launch and the image pull."""


def served_model() -> ModelSpec:
    """The fine-tuned model as the fleet serves it: TP 1 (5 KV heads), batch 1, 2,048 tokens."""
    return ModelSpec(
        model_id=TRAIN_MODEL_ID,
        parameters=TRAIN_MODEL_PARAMETERS,
        sequence_length=TRAIN_MODEL_SEQUENCE_LENGTH,
        batch_size=1,
        tensor_parallel=1,
        layers=TRAIN_MODEL_LAYERS,
        kv_heads=TRAIN_MODEL_KV_HEADS,
    )


def checkpoint_source() -> ModelSource:
    """The checkpoint the job saves, as ``cdk-neuron compile --source checkpoint:...`` names it."""
    return ModelSource.checkpoint(
        f"{RUN_NAME}/step-{STEPS}", step=STEPS, tensor_parallel=1, hw_backend="trn1"
    )


def build(app: cdk.App, settings: Settings) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    store = checkpoint_store(stack, network)
    cluster = BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=network.vpc,
        instance_type=INSTANCE_TYPE,
        max_nodes=1,
        # TP 1, DP 2: the program trains the Hub model as it is (no parallel layers), one replica per
        # NeuronCore; the job's NEURON_TP_DEGREE says so.
        plan=plan_training(INSTANCE_TYPE, 1, 1),
        job_image=settings.training_image,
        vpc_subnets=network.training,
        availability_zone_id=settings.training_az_id,
        checkpoints=store,
        training_command=programs.training_command(),
        environment={
            **programs.environment("finetune"),
            "MODEL_ID": TRAIN_MODEL_ID,
            "RUN_NAME": RUN_NAME,
            "TRAIN_STEPS": str(STEPS),
        },
        job_timeout=JOB_TIMEOUT,
        retry_attempts=1,
        log_retention=logs.RetentionDays.ONE_WEEK,
        root_volume_size=cdk.Size.gibibytes(128),
    )
    trained = TrainingStep(
        stack, "Train", cluster=cluster, job_name=f"cdk-neuron-integ-{RUN_NAME}", timeout=TRAINING_WAIT
    )
    artifacts = artifact_store(stack, network, SUITE, name=f"{RUN_NAME}-step-{STEPS}", checkpoint_store=store)
    fleet = ec2_fleet(stack, network, min_capacity=1, model=compiled_model(served_model(), artifacts))
    compiled = CompileStep(stack, "Compile", store=artifacts, source=checkpoint_source(), fleet=fleet)
    # Train, then compile (the checkpoint exists), then serve (the fleet depends on the compile).
    compiled.node.add_dependency(trained.resource)
    probe = vpc_probe(stack, "Probe", network=network)

    group_name = fleet.auto_scaling_group.auto_scaling_group_name
    cdk.CfnOutput(stack, "JobLogGroupName", value=cluster.log_group.log_group_name)
    cdk.CfnOutput(stack, "ComputeEnvironmentArn", value=cluster.compute_environment.compute_environment_arn)
    cdk.CfnOutput(stack, "JobId", value=trained.resource.get_att_string("JobId"))
    cdk.CfnOutput(stack, "TrainingSeconds", value=trained.resource.get_att_string("RunningSeconds"))
    cdk.CfnOutput(stack, "CompileSeconds", value=compiled.resource.get_att_string("CompileSeconds"))
    cdk.CfnOutput(stack, "ArtifactManifestUri", value=compiled.resource.get_att_string("ManifestUri"))
    cdk.CfnOutput(stack, "CheckpointSha256", value=compiled.resource.get_att_string("SourceSha256"))
    cdk.CfnOutput(stack, "AutoScalingGroupName", value=group_name)
    cdk.CfnOutput(stack, "ServingUrl", value=fleet.url)
    cdk.CfnOutput(stack, "ReplicaLogGroupName", value=fleet.log_group.log_group_name)

    suite = integ_test(app, SUITE, stack)
    integ = suite.integ
    logged = integ.assertions.aws_api_call(
        "CloudWatchLogs",
        "filterLogEvents",
        {
            "logGroupName": cluster.log_group.log_group_name,
            "filterPattern": f'"{LOG_MARKER}" "checkpoint_ok"',
            "limit": 1,
        },
    )
    logged.assert_at_path(
        "events.0.message", ExpectedResult.string_like_regexp(f'"source": "{RUN_NAME}/step-{STEPS}"')
    )
    in_service = integ.assertions.aws_api_call(
        "AutoScaling", "describeAutoScalingGroups", {"AutoScalingGroupNames": [group_name]}
    )
    in_service.assert_at_path(
        "AutoScalingGroups.0.Instances.0.LifecycleState", ExpectedResult.exact("InService")
    )
    assertions.waited(in_service, total=cdk.Duration.minutes(10), interval=cdk.Duration.seconds(30))
    event = {
        "action": "chat",
        "url": fleet.url,
        "model": TRAIN_MODEL_ID,
        "prompt": PROMPT,
        "max_tokens": MAX_TOKENS,
    }
    answered = assertions.probe(integ, probe.function_name, event, path="verdict", expected="ok")
    assertions.waited(answered, total=cdk.Duration.minutes(10), interval=cdk.Duration.seconds(30))
    named = assertions.probe(integ, probe.function_name, event, path="model", expected=TRAIN_MODEL_ID)
    logged.next(in_service).next(answered).next(named)
    cdk.CfnOutput(suite.assertion_stack, "Answer", value=named.get_att_string("Payload.text"))
    return suite


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
