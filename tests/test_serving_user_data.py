"""A serving instance's settings: devices, cores and ports per replica, image, artifacts, secrets.

The programs that read them run under bash in test_node_programs.py; here the rendered user data is
checked, then run end to end in a sandbox down to the docker command each replica starts.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from node_sandbox import Sandbox

from cdk_neuron import timeouts
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import FILES_DIR, BundleLocation
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.user_data import BootConfig, boot_config, render_user_data, settings_files
from cdk_support import parse_settings, settings_in

SPEC_8B = ModelSpec(
    model_id="meta-llama/Llama-3.1-8B-Instruct",
    artifact_uri="s3://my-models/llama-3.1-8b/neuron",
    parameters=8_000_000_000,
    batch_size=4,
)
SPEC_70B = ModelSpec(model_id="meta-llama/Llama-3.1-70B-Instruct", parameters=70_000_000_000, batch_size=4)
SECRET = "arn:aws:secretsmanager:us-east-1:111111111111:secret:hf-token-AbCdEf"
BUNDLE = BundleLocation(region="us-east-1", bucket="cdk-assets", key="bundle.zip")


def _config(
    spec: ModelSpec, instance: str, engine: ServingEngine | None = None, token: str | None = None
) -> BootConfig:
    return boot_config(
        spec,
        spec.plan(instance),
        engine or ServingEngine.optimum_neuron(),
        region="us-east-1",
        stack_name="Serving",
        asg_logical_id="FleetGroupASG",
        lifecycle_hook_name="cdk-neuron-ready",
        service_port=8080,
        startup_timeout_seconds=900,
        fleet_id="fleet123",
        log_group="Serving-FleetReplicaLogs-AbCdEf",
        hf_token_secret_arn=token,
    )


def _fleet(config: BootConfig) -> dict[str, str]:
    return parse_settings(settings_files(config)["fleet.env"])


@pytest.mark.parametrize(
    ("instance", "replicas", "last_devices", "last_cores"),
    [
        ("inf2.8xlarge", 1, "/dev/neuron0", "0-1"),
        ("inf2.24xlarge", 6, "/dev/neuron5", "10-11"),
        ("inf2.48xlarge", 12, "/dev/neuron11", "22-23"),
    ],
)
def test_one_device_per_chip_and_own_cores_for_each_replica(
    instance: str, replicas: int, last_devices: str, last_cores: str
) -> None:
    files = settings_files(_config(SPEC_8B, instance))
    assert sorted(f for f in files if f.startswith("replica-")) == sorted(
        f"replica-{i}.env" for i in range(replicas)
    )
    first = parse_settings(files["replica-0.env"])
    last = parse_settings(files[f"replica-{replicas - 1}.env"])
    assert first == {"REPLICA_DEVICES": "/dev/neuron0", "VISIBLE_CORES": "0-1"}
    assert last == {"REPLICA_DEVICES": last_devices, "VISIBLE_CORES": last_cores}
    assert _fleet(_config(SPEC_8B, instance))["REPLICAS"] == str(replicas)


def test_a_replica_spanning_chips_gets_every_chip() -> None:
    replica = parse_settings(settings_files(_config(SPEC_70B, "inf2.48xlarge"))["replica-0.env"])
    assert replica == {
        "REPLICA_DEVICES": " ".join(f"/dev/neuron{i}" for i in range(12)),
        "VISIBLE_CORES": "0-23",
    }


def test_replicas_are_pinned_to_their_own_cores() -> None:
    spec = ModelSpec(artifact_uri="s3://my-models/m", parameters=8_000_000_000, tensor_parallel=4)
    files = settings_files(_config(spec, "inf2.48xlarge"))
    replicas = [parse_settings(files[f"replica-{i}.env"]) for i in range(6)]
    assert [r["VISIBLE_CORES"] for r in replicas] == ["0-3", "4-7", "8-11", "12-15", "16-19", "20-23"]
    assert replicas[1]["REPLICA_DEVICES"] == "/dev/neuron2 /dev/neuron3"


def test_engine_arguments_and_environment_reach_the_container() -> None:
    files = settings_files(_config(SPEC_8B, "inf2.8xlarge"))
    assert files["container.args"].splitlines() == [
        "--model",
        "/model",
        # vLLM serves the model under its path unless told the name clients use.
        "--served_model_name",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--batch_size",
        "4",
        "--sequence_length",
        "4096",
        "--tensor_parallel_size",
        "2",
    ]
    env = files["container.env"].splitlines()
    assert "HUGGINGFACE_HUB_CACHE=/data/hub" in env
    assert "NEURON_COMPILE_CACHE_URL=/data/neuron-compile-cache" in env
    fleet = _fleet(_config(SPEC_8B, "inf2.8xlarge"))
    assert fleet["IMAGE"].endswith(
        "/huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
    )


def test_the_hub_token_is_read_at_boot_never_written_into_the_template() -> None:
    with_token = settings_files(_config(SPEC_70B, "inf2.48xlarge", token=SECRET))
    assert parse_settings(with_token["fleet.env"])["HF_TOKEN_SECRET_ARN"] == SECRET
    assert not any("HF_TOKEN=" in content for content in with_token.values())
    without = _fleet(_config(SPEC_70B, "inf2.48xlarge"))
    assert without["HF_TOKEN_SECRET_ARN"] == ""


def test_ecr_login_only_for_private_ecr_images() -> None:
    ecr = _fleet(_config(SPEC_8B, "inf2.8xlarge"))
    assert (ecr["ECR_REGISTRY"], ecr["ECR_REGION"]) == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com",
        "us-east-1",
    )
    ghcr = _fleet(_config(SPEC_8B, "inf2.8xlarge", ServingEngine.tgi()))
    assert (ghcr["ECR_REGISTRY"], ghcr["ECR_REGION"]) == ("", "")
    assert ghcr["IMAGE"] == "ghcr.io/huggingface/text-generation-inference:3.2.3-neuron"


def test_readiness_settings() -> None:
    fleet = _fleet(_config(SPEC_8B, "inf2.24xlarge"))
    assert fleet["ARTIFACT_URI"] == "s3://my-models/llama-3.1-8b/neuron/"
    assert (fleet["SERVICE_PORT"], fleet["FIRST_REPLICA_PORT"], fleet["REPLICAS"]) == ("8080", "8081", "6")
    assert (fleet["ASG_LOGICAL_ID"], fleet["STACK_NAME"], fleet["LIFECYCLE_HOOK"]) == (
        "FleetGroupASG",
        "Serving",
        "cdk-neuron-ready",
    )
    # The node programs' timings come from cdk_neuron.timeouts: ready.sh's deadline is the 900 s
    # start-up budget less READY_MARGIN, counted from boot.
    assert fleet["STARTUP_DEADLINE_SECONDS"] == str(900 - timeouts.READY_MARGIN)
    assert fleet["NGINX_KEEPALIVE_TIMEOUT"] == str(timeouts.NGINX_KEEPALIVE_TIMEOUT)
    assert (fleet["DATA_DEVICE"], fleet["DATA_LABEL"]) == ("/dev/sdf", "cdkn-data")
    assert fleet["LOG_GROUP"] == "Serving-FleetReplicaLogs-AbCdEf"
    assert fleet["CONCURRENCY_METRICS"] == "vllm:num_requests_running vllm:num_requests_waiting"
    # The CRT target bandwidth in bytes per second (50 Gbps): the CLI reads "50Gb/s" in powers of 2,
    # which would ask for 53.7 Gbps (review 25, N2).
    assert fleet["S3_TARGET_BANDWIDTH"] == "6250000000"
    # The progress watch's timings (issue 25).
    assert fleet["PROGRESS_INTERVAL_SECONDS"] == str(timeouts.PROGRESS_INTERVAL)
    assert fleet["PROGRESS_STALL_SECONDS"] == str(timeouts.PROGRESS_STALL)


def test_arguments_with_newlines_are_refused() -> None:
    config = _config(SPEC_8B, "inf2.8xlarge")
    with pytest.raises(NeuronConfigError, match=r"^container_args='a\\nb'"):
        settings_files(replace(config, container_args=("a\nb",)))
    # Anything else is passed literally: no shell or systemd ever expands it.
    files = settings_files(replace(config, container_args=("$HOME", "%i", 'say "hi"')))
    assert files["container.args"] == '$HOME\n%i\nsay "hi"\n'


def test_user_data_holds_settings_and_bootstrap_only() -> None:
    script = render_user_data(_config(SPEC_8B, "inf2.48xlarge", token=SECRET), BUNDLE)
    assert script.startswith("#!/bin/bash\n")
    assert set(settings_in(script)) == {"bundle.env", "fleet.env", "container.env", "container.args"} | {
        f"replica-{i}.env" for i in range(12)
    }
    assert script.rstrip().endswith(
        "cdk_neuron_bootstrap serving/boot.sh || cdk_neuron_give_up 'inference instance boot failed'"
    )
    assert "docker run" not in script and "aws autoscaling" not in script


def test_rendered_user_data_boots_an_instance_down_to_each_replicas_container(tmp_path: Path) -> None:
    """The whole path on a stubbed host: user data -> bundle -> boot.sh; then each replica unit."""
    box = Sandbox(tmp_path)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for file in FILES_DIR.rglob("*"):
            if file.is_file() and "__pycache__" not in file.parts:
                bundle.write(file, file.relative_to(FILES_DIR))
    box.stub(
        "aws",
        f'case "$1 $2" in "s3 cp") cp {archive} "${{@: -1}}" ;; "ecr get-login-password") echo PW ;; '
        # The artifacts' size, measured before they go to the RAM-backed model directory.
        '"s3 ls") printf "Total Objects: 2\\n   Total Size: 1048576\\n" ;; *) exit 0 ;; esac',
    )
    box.stub("blkid", "exit 2")
    box.stub("findmnt", "echo /dev/nvme0n1p1")
    box.stub("lsblk", 'case "$*" in "-no PKNAME /dev/nvme0n1p1") echo nvme0n1 ;; *) echo "" ;; esac')
    for disk in ("nvme0n1", "nvme1n1"):
        box.write(f"/sys/block/{disk}/device/model", "Amazon Elastic Block Store\n")
    box.stub("mountpoint", "exit 1")
    box.stub("curl", 'case "$*" in *api/token*) echo TOKEN ;; *meta-data/instance-id*) echo i-0abc ;; esac')
    (box.bin / "nginx").unlink()
    box.write("/etc/fstab", "")
    for index in range(12):  # the Neuron devices (boot.sh checks the instance's chips)
        box.write(f"/dev/neuron{index}", "")
    box.home.rename(tmp_path / "unused")  # a new instance: the bundle is fetched
    script = tmp_path / "user-data.sh"
    spec = ModelSpec(artifact_uri="s3://my-models/m", parameters=8_000_000_000, tensor_parallel=4)
    script.write_text(render_user_data(_config(spec, "inf2.24xlarge"), BUNDLE))
    result = box.run_script(str(script))
    assert result.returncode == 0, result.stderr
    assert box.calls("poweroff") == []
    assert box.calls("dnf") == ["dnf install -y -q nginx"]  # the host proxy
    assert box.calls("mkfs.xfs") == ["mkfs.xfs -q -L cdkn-data /dev/nvme1n1"]
    assert box.calls("systemctl start") == ["systemctl start --no-block cdk-neuron-ready.service"]
    assert box.calls("mount -t tmpfs")  # 8B on inf2.24xlarge: the weights go to RAM
    for index in range(3):
        assert box.run("serving/replica.sh", str(index)).returncode == 0
    runs = box.calls("docker run")
    assert [re.findall(r"--device=(\S+)", run) for run in runs] == [
        ["/dev/neuron0", "/dev/neuron1"],
        ["/dev/neuron2", "/dev/neuron3"],
        ["/dev/neuron4", "/dev/neuron5"],
    ]
    assert [re.search(r"--publish=(\S+)", run)[1] for run in runs] == [  # type: ignore[index]
        "127.0.0.1:8081:8080",
        "127.0.0.1:8082:8080",
        "127.0.0.1:8083:8080",
    ]
    assert all(run.endswith("--tensor_parallel_size 4") for run in runs)
    # Each replica logs to the fleet's group, in its own stream, without ever blocking on it.
    assert [re.findall(r"--log-opt=(\S+)", run) for run in runs] == [
        [
            "awslogs-region=us-east-1",
            "awslogs-group=Serving-FleetReplicaLogs-AbCdEf",
            f"awslogs-stream=i-0abc/replica-{index}",
            "awslogs-create-group=false",
            "mode=non-blocking",
            "max-buffer-size=25m",
        ]
        for index in range(3)
    ]
    assert all("--log-driver=awslogs" in run.split() for run in runs)
