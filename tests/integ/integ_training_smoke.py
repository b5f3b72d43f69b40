"""training_smoke: one trn1.2xlarge node runs a Batch job that uses its NeuronCores and the checkpoint store.

Proves, in the account: the Batch compute environment launches a Trainium node from zero and it joins
the queue; the job container sees the Neuron devices (``neuron-ls``); a torch-neuronx all-reduce runs
on both NeuronCores and returns the right sum; the checkpoint store is mounted over NFS at
``CHECKPOINT_DIR`` and 256 MiB written there (fsync'd) read back identical. Asserted: the job ends
SUCCEEDED (the program exits non-zero on any failed check) and its log holds the program's final
``smoke_ok`` report. No EFA: trn1.2xlarge has none, and one node needs none.

Run offline by ``make test`` (snapshot) and live by ``make integ SUITES=training_smoke CONFIRM=yes``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs

from cdk_neuron.training import BatchTrainingCluster
from integ_support import assertions, programs
from integ_support.settings import Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, checkpoint_store, integ_app

SUITE = "training_smoke"
INSTANCE_TYPE = "trn1.2xlarge"
JOB_TIMEOUT = cdk.Duration.minutes(30)
WAIT = cdk.Duration.minutes(50)


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
        job_image=settings.training_image,
        vpc_subnets=network.training,
        availability_zone_id=settings.training_az_id,
        checkpoints=store,
        training_command=programs.training_command(),
        environment=programs.environment("smoke"),
        job_timeout=JOB_TIMEOUT,
        retry_attempts=1,
        log_retention=logs.RetentionDays.ONE_WEEK,
        root_volume_size=cdk.Size.gibibytes(128),
    )
    return assertions.training_job_suite(app, SUITE, stack, cluster, success_event="smoke_ok", timeout=WAIT)


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
