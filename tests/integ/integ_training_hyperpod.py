"""training_hyperpod: a SageMaker HyperPod Slurm cluster, one controller and one trn1.32xlarge worker.

Proves, in the account: CloudFormation creates the cluster (API-driven Slurm, deep health checks,
automatic node recovery) with the library's lifecycle script, which installs the node programs, Enroot
and Pyxis, and mounts the checkpoint store with TLS and IAM on both nodes; then, on the controller (the
cluster's ``controller_program``, ``integ_support/programs/hyperpod_check.sh``): ``sinfo`` shows the
worker idle in the partition; the cluster's own ``sbatch_script`` (one task per node through the Slurm
step and the shared launcher, in the Neuron training DLC through Pyxis) runs a few training steps on
every NeuronCore of the worker (``integ_support/programs/train_steps.py``: a small MLP, data parallel,
gradients all-reduced each step, the loss must fall) and saves the model into the store, which reads
back with the SHA-256 the job printed. Asserted: the cluster is InService with its worker Running, and
the report the check writes into the store says every check passed (read by a Lambda that mounts the
same store from inside the VPC).

HyperPod does not scale to zero: the controller and the worker bill from creation until the stack is
deleted (the estimate prices both for the whole run). Opt-in: ``make integ SUITES=training_hyperpod
CONFIRM=yes``, with ``CDK_NEURON_INTEG_EFS_UTILS`` naming an amazon-efs-utils ``.deb`` built for the
HyperPod image's Ubuntu release (docs/integ.md); offline, ``make test`` synthesizes it against a
placeholder package and compares the snapshot.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk.integ_tests_alpha import ExpectedResult

from cdk_neuron.storage import CheckpointStore
from cdk_neuron.training import HyperPodTrainingCluster, hyperpod_jobs
from integ_support import assertions, programs
from integ_support.settings import Settings, stack_name
from integ_support.stacks import IntegNetwork, IntegStack, Suite, checkpoint_store, integ_app, integ_test

SUITE = "training_hyperpod"
INSTANCE_TYPE = "trn1.32xlarge"
JOB_NAME = "integ"
PARTITION = "train"
# sinfo may wait for the worker's deep health checks (their duration is not documented) and for the
# check's job; the assertion waits at most the integ maximum for the report.
SINFO_WAIT = cdk.Duration.minutes(90)
REPORT_WAIT = cdk.Duration.minutes(55)
EFS_UTILS_VARIABLE = "CDK_NEURON_INTEG_EFS_UTILS"
HERE = Path(__file__).resolve().parent
CHECK_PROGRAM = HERE / "integ_support" / "programs" / "hyperpod_check.sh"
READER_DIR = HERE / "integ_support" / "store_reader"
# Offline synthesis only: not a package (a live run refuses it, see main()).
PLACEHOLDER_PACKAGE = HERE / "integ_support" / "efs_utils_placeholder.deb"
# The job each node runs, in the job image (the Neuron training DLC: torch-neuronx, torch-xla): the
# program travels in the command, exported base64 (integ_support/programs), and torchrun runs it on every
# NeuronCore; rank 0 prints train_ok and checkpoint_ok lines the check reads.
JOB_COMMAND = (
    f"export {programs.PROGRAM_VARIABLE}={programs.environment('train_steps')[programs.PROGRAM_VARIABLE]}; "
    + programs.training_command()
)


def build(app: cdk.App, settings: Settings, efs_utils: Path = PLACEHOLDER_PACKAGE) -> Suite:
    stack = IntegStack(app, stack_name(SUITE), settings=settings)
    network = IntegNetwork(stack, "Network", settings=settings)
    store = checkpoint_store(stack, network)
    package = s3_assets.Asset(stack, "EfsUtils", path=str(efs_utils))
    job = hyperpod_jobs.sbatch_script(nodes=1, partition=PARTITION, command=JOB_COMMAND, job_name=JOB_NAME)
    cluster = HyperPodTrainingCluster(
        stack,
        "Cluster",
        job_image=settings.training_image,
        vpc=network.vpc,
        instance_type=INSTANCE_TYPE,
        max_nodes=1,
        worker_count=1,
        vpc_subnets=network.training,
        availability_zone_id=settings.training_az_id,
        checkpoints=store,
        efs_utils_package=package,
        partition=PARTITION,
        controller_program=str(CHECK_PROGRAM),
        controller_settings={
            "PARTITION": PARTITION,
            "REPORT_DIR": f"{store.mount_path}/integ",
            "JOB_NAME": JOB_NAME,
            "JOB_SCRIPT_B64": base64.b64encode(job.encode()).decode(),
            "WAIT_SECONDS": str(int(SINFO_WAIT.to_seconds())),
            "POLL_SECONDS": "30",
        },
    )
    # The job is the cluster's own script (rendered before the cluster, which takes it as a setting).
    if cluster.sbatch_script(JOB_COMMAND, job_name=JOB_NAME) != job:
        raise AssertionError("the check's job script is not the cluster's sbatch_script")
    reader = _store_reader(stack, network, store)
    cdk.CfnOutput(stack, "ClusterName", value=cluster.cluster_name)
    cdk.CfnOutput(stack, "ClusterArn", value=cluster.cluster_arn)
    cdk.CfnOutput(stack, "ReaderFunctionName", value=reader.function_name)

    suite = integ_test(app, SUITE, stack)
    described = suite.integ.assertions.aws_api_call(
        "SageMaker", "describeCluster", {"ClusterName": cluster.cluster_name}
    )
    described.assert_at_path("ClusterStatus", ExpectedResult.exact("InService"))
    nodes = suite.integ.assertions.aws_api_call(
        "SageMaker",
        "listClusterNodes",
        {"ClusterName": cluster.cluster_name, "InstanceGroupNameContains": "trn"},
    )
    nodes.assert_at_path("ClusterNodeSummaries.0.InstanceStatus.Status", ExpectedResult.exact("Running"))
    report = assertions.probe(
        suite.integ, reader.function_name, {"path": "integ/report.json"}, path="ok", expected=True
    )
    assertions.waited(report, total=REPORT_WAIT, interval=cdk.Duration.minutes(1))
    described.next(nodes).next(report)
    return suite


def _store_reader(stack: IntegStack, network: IntegNetwork, store: CheckpointStore) -> lambda_.Function:
    """A Lambda in the private subnets that mounts the store's access point (TLS and IAM) read-only."""
    group = ec2.SecurityGroup(
        stack, "ReaderSecurityGroup", vpc=network.vpc, description="integ store reader: NFS to the store",
        allow_all_outbound=False,
    )  # fmt: skip
    log_group = logs.LogGroup(
        stack, "ReaderLogs", retention=logs.RetentionDays.ONE_WEEK, removal_policy=cdk.RemovalPolicy.DESTROY
    )
    reader = lambda_.Function(
        stack,
        "Reader",
        runtime=lambda_.Runtime.PYTHON_3_12,
        architecture=lambda_.Architecture.ARM_64,
        handler="handler.handler",
        code=lambda_.Code.from_asset(str(READER_DIR), exclude=["__pycache__", "*.pyc"]),
        timeout=cdk.Duration.seconds(30),
        memory_size=256,
        vpc=network.vpc,
        vpc_subnets=network.private,
        security_groups=[group],
        log_group=log_group,
        filesystem=lambda_.FileSystem.from_efs_access_point(store.access_point, "/mnt/store"),
        description="cdk-neuron integ: the HyperPod check's report in the checkpoint store",
    )
    store.grant_read(reader, peer=reader)
    return reader


def main() -> None:
    package = os.environ.get(EFS_UTILS_VARIABLE, "").strip()
    if not package or not Path(package).is_file():
        raise SystemExit(
            f"{SUITE}: set {EFS_UTILS_VARIABLE} to an amazon-efs-utils .deb for the HyperPod image's Ubuntu "
            "release (efs-utils' ./build-deb.sh; docs/integ.md): the nodes mount the checkpoint store with it"
        )
    app = integ_app()
    build(app, Settings.from_environment(), Path(package))
    app.synth()


if __name__ == "__main__":
    main()
