"""The node publisher: neuron-monitor report -> metrics, PutMetricData batching, and its user data.

Pure Python (no aws_cdk). boto3 calls go through botocore's Stubber; the rendered user data is run
by bash in a temporary directory with stand-ins for systemctl, dnf and apt-get.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import io
import json
import shutil
import subprocess
import tarfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring import metrics, node_agent, publisher

GIB = 2**30
INF2_48_HBM = 384 * GIB


def _runtime(
    cores: dict[str, float], device_bytes: int, errors: dict[str, int], latency: tuple[float, float] | None
) -> dict[str, Any]:
    """One neuron_runtime_data entry shaped like the Neuron Monitor User Guide's example."""
    total_latency = (
        {
            "p0": 0.001,
            "p1": 0.002,
            "p25": 0.005,
            "p50": latency[0],
            "p75": 0.02,
            "p99": latency[1],
            "p100": 0.2,
        }
        if latency
        else None
    )
    return {
        "pid": 4242,
        "address": "",
        "neuron_runtime_tag": "replica",
        "error": "",
        "report": {
            "neuroncore_counters": {
                "period": 60.0,
                "neuroncores_in_use": {
                    idx: {"neuroncore_utilization": util, "flops": 1.2e12} for idx, util in cores.items()
                },
                "error": "",
            },
            "execution_stats": {
                "period": 60.0,
                "error_summary": {
                    "generic": 0,
                    "numerical": 0,
                    "transient": 0,
                    "model": 0,
                    "runtime": 0,
                    "hardware": 0,
                    **errors,
                },
                "execution_summary": {"completed": 1200, "completed_with_err": sum(errors.values())},
                "latency_stats": {"total_latency": total_latency, "device_latency": total_latency},
                "error": "",
            },
            "memory_used": {
                "period": 60.0,
                "neuron_runtime_used_bytes": {"host": 6997643264, "neuron_device": device_bytes},
                "loaded_models": [],
                "error": "",
            },
        },
    }


def _devices(count: int, **overrides: dict[str, int]) -> list[dict[str, int]]:
    devices = []
    for index in range(count):
        device = {
            "neuron_device_index": index,
            "mem_ecc_corrected": 0,
            "mem_ecc_uncorrected": 0,
            "sram_ecc_corrected": 0,
            "sram_ecc_uncorrected": 0,
        }
        device.update(overrides.get(f"d{index}", {}))
        devices.append(device)
    return devices


# An inf2.48xlarge (12 devices x 2 cores) serving two TP=12 replicas: one Neuron runtime each.
SERVING_REPORT: dict[str, Any] = {
    "neuron_runtime_data": [
        _runtime({str(i): 50.0 for i in range(12)}, 100 * GIB, {"generic": 1, "runtime": 2}, (0.011, 0.020)),
        _runtime({str(i): 70.0 for i in range(12, 24)}, 120 * GIB, {"hardware": 1}, (0.013, 0.050)),
    ],
    "system_data": {
        "neuron_hw_counters": {
            "period": 60.0,
            "neuron_devices": _devices(12, d3={"mem_ecc_corrected": 2}, d5={"sram_ecc_uncorrected": 1}),
            "error": "",
        }
    },
    "instance_info": {
        "instance_name": "",
        "instance_id": "i-0011223344556677a",
        "instance_type": "inf2.48xlarge",
        "instance_availability_zone": "us-east-1a",
        "instance_region": "us-east-1",
        "error": "",
    },
    "neuron_hardware_info": {
        "neuron_device_type": "inferentia2",
        "neuroncore_version": "v2",
        "neuron_device_count": 12,
        "neuron_device_memory_size": 32 * GIB,
        "neuroncore_per_device_count": 2,
        "error": "",
    },
}

IDLE_REPORT: dict[str, Any] = {
    "neuron_runtime_data": [],
    "system_data": {"neuron_hw_counters": {"period": 60.0, "neuron_devices": _devices(12), "error": ""}},
    "instance_info": SERVING_REPORT["instance_info"],
    "neuron_hardware_info": SERVING_REPORT["neuron_hardware_info"],
}


def _summary(report: dict[str, Any], cores: int = 24, hbm: int = INF2_48_HBM) -> dict[str, float]:
    return node_agent.summarize(report, neuron_cores=cores, hbm_bytes=hbm)


# ---------------------------------------------------------------------------------------------
# report -> values
# ---------------------------------------------------------------------------------------------


def test_busy_serving_report_maps_to_instance_values() -> None:
    values = _summary(SERVING_REPORT)
    assert values == {
        "core_utilization": pytest.approx(60.0),  # (12 x 50 + 12 x 70) / 24 cores
        "device_memory_used": 220 * GIB,
        "device_memory_utilization": pytest.approx(100 * 220 / 384),
        "execution_errors": 4,  # generic 1 + runtime 2 + hardware 1
        "execution_latency_p50": 0.013,  # the worse runtime
        "execution_latency_p99": 0.050,
        "ecc_corrected": 2,
        "ecc_uncorrected": 1,
    }


def test_idle_node_reports_zero_utilization_and_no_latency() -> None:
    # An instance with no Neuron process is exactly the money-burning case: it must publish 0 %,
    # not nothing, or the idle alarm could never see it.
    values = _summary(IDLE_REPORT)
    assert values["core_utilization"] == 0
    assert values["device_memory_used"] == 0
    assert values["execution_errors"] == 0
    assert "execution_latency_p50" not in values and "execution_latency_p99" not in values


def test_utilization_averages_over_every_core_not_only_busy_ones() -> None:
    report = copy.deepcopy(IDLE_REPORT)
    report["neuron_runtime_data"] = [_runtime({"0": 100.0, "1": 100.0}, GIB, {}, None)]
    assert _summary(report)["core_utilization"] == pytest.approx(200 / 24)


def test_core_count_follows_the_node_report_over_the_catalog() -> None:
    # trn2.48xlarge at LNC=1 exposes 128 cores although the catalog's default (LNC=2) is 64.
    report = copy.deepcopy(IDLE_REPORT)
    report["neuron_hardware_info"] = {
        "neuron_device_count": 16,
        "neuroncore_per_device_count": 8,
        "error": "",
    }
    report["neuron_runtime_data"] = [_runtime({str(i): 100.0 for i in range(64)}, GIB, {}, None)]
    assert _summary(report, cores=64, hbm=1536 * GIB)["core_utilization"] == pytest.approx(50.0)
    report["neuron_hardware_info"]["error"] = "driver not loaded"
    assert _summary(report, cores=64, hbm=1536 * GIB)["core_utilization"] == pytest.approx(100.0)


def test_groups_and_runtimes_flagged_with_errors_are_ignored() -> None:
    report = copy.deepcopy(SERVING_REPORT)
    report["neuron_runtime_data"][0]["report"]["memory_used"]["error"] = "timeout"
    report["neuron_runtime_data"][1]["error"] = "runtime unreachable"
    values = _summary(report)
    assert values["device_memory_used"] == 0
    assert values["core_utilization"] == pytest.approx(25.0)  # only runtime 0's 12 cores at 50 %
    assert values["execution_errors"] == 3


def test_values_are_clamped_to_100_percent() -> None:
    report = copy.deepcopy(IDLE_REPORT)
    report["neuron_runtime_data"] = [_runtime({str(i): 130.0 for i in range(24)}, 500 * GIB, {}, None)]
    values = _summary(report)
    assert values["core_utilization"] == 100
    assert values["device_memory_utilization"] == 100


def test_every_value_key_is_a_metric_in_the_vocabulary() -> None:
    assert set(_summary(SERVING_REPORT)) == {m.key for m in metrics.NEURON_METRICS}
    assert len({m.name for m in metrics.NEURON_METRICS}) == len(metrics.NEURON_METRICS)


# ---------------------------------------------------------------------------------------------
# values -> MetricData
# ---------------------------------------------------------------------------------------------

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)


def test_each_value_is_published_per_workload_and_per_instance() -> None:
    dims = node_agent.dimension_sets("prod", "serving", "i-0011223344556677a")
    data = node_agent.metric_data(
        _summary(SERVING_REPORT), table=metrics.metric_table(), dimensions=dims, timestamp=NOW
    )
    assert len(data) == 2 * len(metrics.NEURON_METRICS)
    utilization = [d for d in data if d["MetricName"] == "NeuronCoreUtilization"]
    assert [d["Dimensions"] for d in utilization] == [
        [{"Name": "Environment", "Value": "prod"}, {"Name": "Workload", "Value": "serving"}],
        [
            {"Name": "Environment", "Value": "prod"},
            {"Name": "Workload", "Value": "serving"},
            {"Name": "InstanceId", "Value": "i-0011223344556677a"},
        ],
    ]
    assert all(d["Unit"] == "Percent" and d["Value"] == pytest.approx(60.0) for d in utilization)
    ecc = next(d for d in data if d["MetricName"] == "EccUncorrected")
    assert (ecc["Unit"], ecc["Value"], ecc["Timestamp"]) == ("Count", 1.0, NOW)


def _client(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return boto3.client("cloudwatch", region_name="us-east-1")


def test_publish_splits_at_the_1000_metric_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(monkeypatch)
    data = [
        {"MetricName": "EccCorrected", "Value": float(i), "Unit": "Count", "Timestamp": NOW}
        for i in range(2001)
    ]
    with Stubber(client) as stub:
        for chunk in (data[:1000], data[1000:2000], data[2000:]):
            stub.add_response("put_metric_data", {}, {"Namespace": "CdkNeuron", "MetricData": chunk})
        assert node_agent.publish(client, "CdkNeuron", data) == 3
        stub.assert_no_pending_responses()


def test_run_publishes_each_report_and_survives_bad_lines_and_api_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = _client(monkeypatch)
    config = publisher.publisher_config(
        namespace="CdkNeuron", environment="prod", workload="serving", instance_type="inf2.48xlarge"
    )
    lines = iter(["not json\n", "\n", json.dumps(SERVING_REPORT), json.dumps(IDLE_REPORT)])
    with Stubber(client) as stub:
        stub.add_client_error("put_metric_data", "Throttling", http_status_code=400)
        stub.add_response("put_metric_data", {}, {"Namespace": "CdkNeuron", "MetricData": ANY})
        assert node_agent.run(config, lines, client, "i-0011223344556677a") == 1
        stub.assert_no_pending_responses()


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def test_identity_comes_from_imdsv2_with_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[Any] = []

    def urlopen(request: Any, timeout: float) -> _Response:
        requests.append(request)
        if request.full_url.endswith("/api/token"):
            return _Response(b"TOKEN")
        return _Response(json.dumps({"instanceId": "i-0abc", "region": "us-east-2"}).encode())

    monkeypatch.setattr(node_agent.urllib.request, "urlopen", urlopen)
    assert node_agent.instance_identity() == {"instanceId": "i-0abc", "region": "us-east-2"}
    token, document = requests
    assert (token.get_method(), token.full_url) == ("PUT", "http://169.254.169.254/latest/api/token")
    assert document.full_url == "http://169.254.169.254/latest/dynamic/instance-identity/document"
    assert document.get_header("X-aws-ec2-metadata-token") == "TOKEN"


# ---------------------------------------------------------------------------------------------
# Rendering into user data
# ---------------------------------------------------------------------------------------------


def test_publisher_config_takes_cores_and_hbm_from_the_catalog() -> None:
    config = publisher.publisher_config(
        namespace="CdkNeuron",
        environment="prod",
        workload="training",
        instance_type="trn2.48xlarge",
    )
    assert (config["neuron_cores"], config["hbm_bytes"]) == (64, 1536 * GIB)
    assert config["metrics"]["core_utilization"] == ["NeuronCoreUtilization", "Percent"]
    assert set(config) == set(node_agent.REQUIRED_CONFIG)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("workload", {"workload": "batch"}),
        ("instance_type", {"instance_type": "p5.48xlarge"}),
    ],
)
def test_publisher_config_refuses_bad_input(field: str, kwargs: dict[str, str]) -> None:
    base = {"namespace": "CdkNeuron", "environment": "dev", "workload": "serving"}
    base["instance_type"] = "inf2.xlarge"
    with pytest.raises(NeuronConfigError, match=f"^{field}="):
        publisher.publisher_config(**{**base, **kwargs})  # type: ignore[arg-type]


def test_agent_runs_on_python_3_9_and_imports_only_stdlib_and_boto3() -> None:
    source = publisher.agent_source()
    tree = ast.parse(source, feature_version=(3, 9))
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imported <= {
        "__future__",
        "json",
        "logging",
        "subprocess",
        "sys",
        "urllib",
        "collections",
        "datetime",
        "typing",
        "boto3",
        "botocore",
    }


def test_neuron_monitor_config_matches_the_publish_period_and_groups() -> None:
    config = publisher.neuron_monitor_config()
    assert config["period"] == "60s"
    groups = {m["type"] for m in config["neuron_runtimes"][0]["metrics"]}
    assert groups == {"neuroncore_counters", "memory_used", "execution_stats"}
    assert config["system_metrics"] == [{"type": "neuron_hw_counters"}]


STRICT_HOST_PREAMBLE = "set -Eeuo pipefail\ntrap 'echo TRAPPED >&2; exit 99' ERR\n"
"""What the serving boot script runs under: the publisher setup must survive it."""


def _fake_bin(directory: Path, name: str, log: Path) -> None:
    script = directory / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
    script.chmod(0o755)


def _hermetic_path(tmp_path: Path) -> Path:
    """A PATH directory with only the tools the script needs: the real dnf, apt-get and systemctl of
    the test machine must never run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cat", "mkdir", "base64", "tar", "gzip"):
        real = shutil.which(tool)
        assert real is not None
        (bin_dir / tool).symlink_to(real)
    return bin_dir


KWARGS: dict[str, Any] = {
    "namespace": "CdkNeuron",
    "environment": "prod",
    "workload": "serving",
    "instance_type": "inf2.48xlarge",
}


def _run(script: str, tmp_path: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    return subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def _rerooted(root: Path) -> str:
    """The user data under the strict preamble, unpacking into ``root`` instead of /."""
    script = STRICT_HOST_PREAMBLE + "\n".join(publisher.node_setup_commands(**KWARGS))
    script = script.replace(" -C / ", f" -C {root} ")
    return script.replace(f"/bin/bash {publisher.SETUP_PATH}", f"/bin/bash {root}{publisher.SETUP_PATH}")


@pytest.mark.parametrize("package_manager", ["dnf", "apt-get"])
def test_rendered_user_data_unpacks_the_bundle_and_starts_the_service(
    tmp_path: Path, package_manager: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    bin_dir = _hermetic_path(tmp_path)
    log = tmp_path / "calls.log"
    for tool in ("systemctl", package_manager):
        _fake_bin(bin_dir, tool, log)
    result = _run(_rerooted(root), tmp_path, bin_dir)
    assert result.returncode == 0, result.stderr

    for path, (content, mode) in publisher.bundle_files(**KWARGS).items():
        written = root / path.lstrip("/")
        assert written.read_text() == content
        assert written.stat().st_mode & 0o777 == mode
    config = node_agent.load_config(str(root / "etc/cdk-neuron/publisher.json"))
    assert config == publisher.publisher_config(**KWARGS)
    calls = log.read_text().splitlines()
    assert any(c.startswith(package_manager) and "aws-neuronx-tools" in c for c in calls)
    assert calls[-3:] == [
        "systemctl daemon-reload",
        "systemctl enable cdk-neuron-monitor.service",
        "systemctl start --no-block cdk-neuron-monitor.service",
    ]


@pytest.mark.parametrize("failure", ["unpack", "setup"])
def test_failures_never_abort_a_strict_host_script(tmp_path: Path, failure: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    bin_dir = _hermetic_path(tmp_path)  # no dnf, no apt-get: nothing can be installed
    (bin_dir / "systemctl").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "systemctl").chmod(0o755)
    script = _rerooted(root)
    if failure == "unpack":
        script = script.replace(f" -C {root} ", " -C /proc/nope ")
    result = _run(script + "\necho reached", tmp_path, bin_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "reached"
    assert "TRAPPED" not in result.stderr
    assert "setup failed; this node publishes no Neuron metrics" in result.stderr


def test_the_deployed_publisher_is_the_tested_code_without_docstrings(tmp_path: Path) -> None:
    deployed = publisher.deployed_agent_source()
    ast.parse(deployed, feature_version=(3, 9))
    assert '"""' not in deployed
    path = tmp_path / "neuron_publisher.py"
    path.write_text(deployed)
    spec = importlib.util.spec_from_file_location("deployed_publisher", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for report in (SERVING_REPORT, IDLE_REPORT):
        assert module.summarize(report, neuron_cores=24, hbm_bytes=INF2_48_HBM) == _summary(report)
    assert module.REQUIRED_CONFIG == node_agent.REQUIRED_CONFIG
    assert module.MAX_METRICS_PER_CALL == 1000


def test_bundle_is_reproducible() -> None:
    files = publisher.bundle_files(**KWARGS)
    assert publisher.bundle(files) == publisher.bundle(publisher.bundle_files(**KWARGS))
    with tarfile.open(fileobj=io.BytesIO(publisher.bundle(files)), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {p.lstrip("/") for p in files}
    assert all(m.mtime == 0 and m.uid == 0 and m.isfile() for m in members.values())


def test_monitoring_fits_in_5_kib_of_user_data() -> None:
    # EC2 caps user data at 16,384 bytes and the serving fleet's own boot script takes about 10 KB.
    # (The construct tests check the composed user data of real clusters and fleets.)
    size = len("\n".join(publisher.node_setup_commands(**KWARGS)).encode())
    assert size <= 5 * 1024, size


def test_unit_runs_the_agent_with_the_distro_python_and_restarts() -> None:
    unit = publisher.systemd_unit()
    assert (
        "ExecStart=/usr/bin/python3 /opt/cdk-neuron/neuron_publisher.py /etc/cdk-neuron/publisher.json"
        in unit
    )
    assert "Restart=always" in unit
    assert "WantedBy=multi-user.target" in unit
