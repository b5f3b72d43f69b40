"""The EC2 boot script: devices, cores and ports per replica, secrets, readiness, warm pool."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.user_data import BootConfig, boot_config, render_user_data

SPEC_8B = ModelSpec(
    model_id="meta-llama/Llama-3.1-8B-Instruct",
    artifact_uri="s3://my-models/llama-3.1-8b/neuron",
    parameters=8_000_000_000,
    batch_size=4,
)
SPEC_70B = ModelSpec(model_id="meta-llama/Llama-3.1-70B-Instruct", parameters=70_000_000_000, batch_size=4)
SECRET = "arn:aws:secretsmanager:us-east-1:111111111111:secret:hf-token-AbCdEf"
_HEREDOC = re.compile(r"cat > (?P<path>\S+) <<'CDK_NEURON_EOF'\n(?P<body>.*?)CDK_NEURON_EOF\n", re.S)


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
        hf_token_secret_arn=token,
    )


def _files(script: str) -> dict[str, str]:
    return {m["path"]: m["body"] for m in _HEREDOC.finditer(script)}


def _exec_start(files: dict[str, str], replica: int) -> str:
    unit = files[f"/etc/systemd/system/cdk-neuron-replica-{replica}.service"]
    return next(line for line in unit.splitlines() if line.startswith("ExecStart="))


@pytest.mark.parametrize(
    ("instance", "replicas", "last_devices"),
    [
        ("inf2.xlarge", 1, ["/dev/neuron0"]),
        ("inf2.8xlarge", 1, ["/dev/neuron0"]),
        ("inf2.24xlarge", 6, ["/dev/neuron5"]),
        ("inf2.48xlarge", 12, ["/dev/neuron11"]),
    ],
)
def test_one_device_flag_per_chip_of_each_replica(
    instance: str, replicas: int, last_devices: list[str]
) -> None:
    files = _files(render_user_data(_config(SPEC_8B, instance)))
    units = [p for p in files if re.match(r"/etc/systemd/system/cdk-neuron-replica-\d+\.service", p)]
    assert len(units) == replicas
    first = _exec_start(files, 0)
    last = _exec_start(files, replicas - 1)
    assert re.findall(r"--device=(\S+)", first) == ["/dev/neuron0"]
    assert re.findall(r"--device=(\S+)", last) == last_devices
    assert "--privileged" not in first


def test_a_replica_spanning_chips_gets_every_chip() -> None:
    files = _files(render_user_data(_config(SPEC_70B, "inf2.48xlarge")))
    assert re.findall(r"--device=(\S+)", _exec_start(files, 0)) == [f"/dev/neuron{i}" for i in range(12)]
    assert "NEURON_RT_VISIBLE_CORES=0-23" in files["/etc/cdk-neuron/cdk-neuron-replica-0.env"]


def test_replicas_are_pinned_to_their_own_cores() -> None:
    spec = ModelSpec(artifact_uri="s3://my-models/m", parameters=8_000_000_000, tensor_parallel=4)
    files = _files(render_user_data(_config(spec, "inf2.48xlarge")))
    cores = [
        re.search(r"NEURON_RT_VISIBLE_CORES=(\S+)", files[f"/etc/cdk-neuron/cdk-neuron-replica-{i}.env"])[1]  # type: ignore[index]
        for i in range(6)
    ]
    assert cores == ["0-3", "4-7", "8-11", "12-15", "16-19", "20-23"]
    assert re.findall(r"--device=(\S+)", _exec_start(files, 1)) == ["/dev/neuron2", "/dev/neuron3"]


def test_several_replicas_sit_behind_a_local_proxy() -> None:
    config = _config(SPEC_8B, "inf2.24xlarge")
    files = _files(render_user_data(config))
    assert "--publish=127.0.0.1:8081:8080" in _exec_start(files, 0)
    assert "--publish=127.0.0.1:8086:8080" in _exec_start(files, 5)
    nginx = files["/etc/cdk-neuron/nginx.conf"]
    assert re.findall(r"server 127\.0\.0\.1:(\d+)", nginx) == [str(p) for p in range(8081, 8087)]
    assert "listen 8080;" in nginx
    assert "least_conn;" in nginx
    assert "proxy_buffering off;" in nginx
    assert "UNITS='cdk-neuron-replica-0.service" in files["/etc/cdk-neuron/fleet.env"]
    assert "cdk-neuron-proxy.service'" in files["/etc/cdk-neuron/fleet.env"]


def test_a_single_replica_serves_the_port_itself() -> None:
    files = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge")))
    assert "--publish=8080:8080" in _exec_start(files, 0)
    assert "/etc/cdk-neuron/nginx.conf" not in files
    assert "PROXY_IMAGE=''" in files["/etc/cdk-neuron/fleet.env"]


def test_engine_flags_reach_the_container() -> None:
    files = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge")))
    assert _exec_start(files, 0).endswith(
        "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04 "
        "--model /model --served_model_name meta-llama/Llama-3.1-8B-Instruct "
        "--batch_size 4 --sequence_length 4096 --tensor_parallel_size 2"
    )
    assert "--volume=/var/lib/cdk-neuron/model:/model:ro" in _exec_start(files, 0)


def test_the_hub_token_is_read_at_boot_never_written_into_the_template() -> None:
    script = render_user_data(_config(SPEC_70B, "inf2.48xlarge", token=SECRET))
    files = _files(script)
    assert f"HF_TOKEN_SECRET_ARN={SECRET}" in files["/etc/cdk-neuron/fleet.env"]
    assert "HF_TOKEN=" not in files["/etc/cdk-neuron/cdk-neuron-replica-0.env"]
    assert "aws secretsmanager get-secret-value" in files["/usr/local/sbin/cdk-neuron-secrets"]
    unit = files["/etc/systemd/system/cdk-neuron-replica-0.service"]
    assert "ExecStartPre=/usr/local/sbin/cdk-neuron-secrets" in unit
    assert "--env-file=/run/cdk-neuron/hf-token.env" in unit
    without = _files(render_user_data(_config(SPEC_70B, "inf2.48xlarge")))
    assert "/usr/local/sbin/cdk-neuron-secrets" not in without


def test_ecr_login_only_for_private_ecr_images() -> None:
    ecr = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge")))["/etc/cdk-neuron/fleet.env"]
    assert "ECR_REGISTRY=763104351884.dkr.ecr.us-east-1.amazonaws.com" in ecr
    ghcr = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge", ServingEngine.tgi())))[
        "/etc/cdk-neuron/fleet.env"
    ]
    assert "ECR_REGISTRY=''" in ghcr
    assert "IMAGE=ghcr.io/huggingface/text-generation-inference:3.2.3-neuron" in ghcr


def test_artifacts_are_synced_from_s3() -> None:
    env = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge")))["/etc/cdk-neuron/fleet.env"]
    assert "ARTIFACT_URI=s3://my-models/llama-3.1-8b/neuron/" in env
    assert 'aws s3 sync --only-show-errors --region "${REGION}" "${ARTIFACT_URI}"' in render_user_data(
        _config(SPEC_8B, "inf2.xlarge")
    )


def test_readiness_completes_the_lifecycle_and_signals_only_when_healthy() -> None:
    files = _files(render_user_data(_config(SPEC_8B, "inf2.24xlarge")))
    ready = files["/usr/local/sbin/cdk-neuron-ready"]
    warm, serve = ready.split("esac", 1)
    assert "Warmed:*" in warm
    assert "complete_lifecycle CONTINUE" in warm
    assert "systemctl start" not in warm
    assert (
        serve.index("curl -sf")
        < serve.index("complete_lifecycle CONTINUE")
        < serve.index("signal_stack SUCCESS")
    )
    env = files["/etc/cdk-neuron/fleet.env"]
    assert "REPLICA_PORTS='8081 8082 8083 8084 8085 8086'" in env
    assert "SERVICE_PORT=8080" in env
    assert "ASG_LOGICAL_ID=FleetGroupASG" in env
    assert "STARTUP_TIMEOUT_SECONDS=900" in env


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_script_is_valid_bash() -> None:
    script = render_user_data(_config(SPEC_8B, "inf2.48xlarge", token=SECRET))
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    for path, body in _files(script).items():
        if path.startswith("/usr/local/"):
            subprocess.run(["bash", "-n"], input=body, text=True, check=True)


@pytest.mark.skipif(shutil.which("awk") is None, reason="needs awk")
def test_the_concurrency_metric_sums_running_and_waiting_requests() -> None:
    metrics = _files(render_user_data(_config(SPEC_8B, "inf2.xlarge")))["/usr/local/sbin/cdk-neuron-metrics"]
    program = re.search(r"awk -v names=\"\$\{CONCURRENCY_METRICS\}\" '(.*?)'\)", metrics, re.S)[1]  # type: ignore[index]
    sample = (
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        'vllm:num_requests_running{model_name="m"} 3.0\n'
        'vllm:num_requests_waiting{model_name="m"} 2.0\n'
        'vllm:num_requests_running_total{model_name="m"} 99.0\n'
        "vllm:num_requests_swapped 7.0\n"
    )
    out = subprocess.run(
        ["awk", "-v", "names=vllm:num_requests_running vllm:num_requests_waiting", program],
        input=sample,
        text=True,
        capture_output=True,
        check=True,
    )
    assert out.stdout == "5"


def test_arguments_that_would_break_the_unit_are_refused() -> None:
    config = _config(SPEC_8B, "inf2.xlarge")
    from dataclasses import replace

    with pytest.raises(NeuronConfigError, match=r"container_args='\$HOME'"):
        render_user_data(replace(config, container_args=("$HOME",)))
