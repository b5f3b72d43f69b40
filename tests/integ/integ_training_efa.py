"""training_efa (opt-in): two trn1.32xlarge nodes all-reduce over EFA in one Batch multi-node job.

Proves, in the account: both nodes launch into the cluster placement group with EFA on every network
card, the launcher wires the two nodes into one 64-rank torchrun job, and an all-reduce across both
nodes reaches a bus bandwidth floor. Asserted: the job ends SUCCEEDED (the program exits non-zero
under the floor) and its log holds the program's ``allreduce_ok`` report.

The floor, 10 GiB/s at 256 MiB per rank, is a quarter of what the Neuron documentation's 2-instance,
64-rank nccom-test all-reduce example shows at that size (41.17 GB/s busbw, where nccom-test's GB is
a GiB): low enough not to fail on run-to-run variance or on torch-xla's dispatch overhead, high
enough to fail when the collective is not running over EFA at speed. Costs two trn1.32xlarge for
the run: see docs/integ.md, and ``make integ SUITES=training_efa`` for the estimate.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs

from cdk_neuron.training import DEFAULT_SECURITY_GROUP_WARNING_ID, BatchTrainingCluster
from integ_support import assertions, programs
from integ_support.settings import Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, integ_app

SUITE = "training_efa"
INSTANCE_TYPE = "trn1.32xlarge"
NODES = 2
BUSBW_FLOOR_GIB_PER_SECOND = 10.0
MESSAGE_BYTES = 256 * 2**20
JOB_TIMEOUT = cdk.Duration.minutes(40)
WAIT = cdk.Duration.minutes(55)


def build(app: cdk.App, settings: Settings) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    cluster = BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=network.vpc,
        instance_type=INSTANCE_TYPE,
        max_nodes=NODES,
        job_image=settings.training_image,
        vpc_subnets=network.training,
        availability_zone_id=settings.training_az_id,
        training_command=programs.training_command(
            "--bytes", str(MESSAGE_BYTES), "--floor", str(BUSBW_FLOOR_GIB_PER_SECOND)
        ),
        environment=programs.environment("allreduce"),
        job_timeout=JOB_TIMEOUT,
        retry_attempts=1,
        log_retention=logs.RetentionDays.ONE_WEEK,
        root_volume_size=cdk.Size.gibibytes(128),
    )
    # The suite's own VPC, deleted after the run, launches nothing else (docs/lifecycle.md).
    cdk.Annotations.of(cluster).acknowledge_warning(
        DEFAULT_SECURITY_GROUP_WARNING_ID,
        "the suite's own VPC holds only this cluster and is destroyed after the run",
    )
    return assertions.training_job_suite(
        app, SUITE, stack, cluster, success_event="allreduce_ok", timeout=WAIT
    )


def main() -> None:
    app = integ_app()
    build(app, Settings.from_environment())
    app.synth()


if __name__ == "__main__":
    main()
