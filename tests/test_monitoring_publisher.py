"""The node publisher: neuron-monitor report -> metrics, PutMetricData batching, and its user data.

Pure Python (no aws_cdk). boto3 calls go through botocore's Stubber; the rendered user data is run
by bash in a temporary directory with stand-ins for systemctl, dnf and apt-get.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import subprocess
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


def test_unknown_instance_publishes_only_the_workload_series() -> None:
    assert node_agent.dimension_sets("dev", "training", None) == [
        [{"Name": "Environment", "Value": "dev"}, {"Name": "Workload", "Value": "training"}]
    ]


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
        namespace="CdkNeuron",
        region="us-east-1",
        environment="prod",
        workload="serving",
        instance_type="inf2.48xlarge",
    )
    monkeypatch.setattr(
        node_agent, "imds_instance_id", lambda: pytest.fail("IMDS used although the report had an id")
    )
    lines = iter(["not json\n", "\n", json.dumps(SERVING_REPORT), json.dumps(IDLE_REPORT)])
    with Stubber(client) as stub:
        stub.add_client_error("put_metric_data", "Throttling", http_status_code=400)
        stub.add_response("put_metric_data", {}, {"Namespace": "CdkNeuron", "MetricData": ANY})
        assert node_agent.run(config, lines, client) == 1
        stub.assert_no_pending_responses()


def test_instance_id_falls_back_to_imds(monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(monkeypatch)
    config = publisher.publisher_config(
        namespace="CdkNeuron",
        region="us-east-1",
        environment="dev",
        workload="training",
        instance_type="trn1.32xlarge",
    )
    monkeypatch.setattr(node_agent, "imds_instance_id", lambda: "i-0fromimds")
    report = {**IDLE_REPORT, "instance_info": {"instance_id": "", "error": "no IMDSv1"}}
    captured: list[dict[str, Any]] = []
    monkeypatch.setattr(node_agent, "publish", lambda _c, _ns, data: captured.extend(data) or 1)
    assert node_agent.run(config, iter([json.dumps(report)]), client) == 1
    assert {"Name": "InstanceId", "Value": "i-0fromimds"} in captured[-1]["Dimensions"]


# ---------------------------------------------------------------------------------------------
# Rendering into user data
# ---------------------------------------------------------------------------------------------


def test_publisher_config_takes_cores_and_hbm_from_the_catalog() -> None:
    config = publisher.publisher_config(
        namespace="CdkNeuron",
        region="us-east-2",
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
    base = {"namespace": "CdkNeuron", "region": "us-east-1", "environment": "dev", "workload": "serving"}
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
    """A PATH directory with only the coreutils the script needs: the real dnf, apt-get and systemctl
    of the test machine must never run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cat", "mkdir", "chmod"):
        real = shutil.which(tool)
        assert real is not None
        (bin_dir / tool).symlink_to(real)
    return bin_dir


@pytest.mark.parametrize("package_manager", ["dnf", "apt-get"])
def test_rendered_user_data_writes_the_files_and_starts_the_service(
    tmp_path: Path, package_manager: str
) -> None:
    lines = publisher.node_setup_commands(
        namespace="CdkNeuron",
        region="us-east-1",
        environment="prod",
        workload="serving",
        instance_type="inf2.48xlarge",
    )
    root = tmp_path / "root"
    script = STRICT_HOST_PREAMBLE + "\n".join(lines)
    for prefix in ("/opt/cdk-neuron", "/etc/cdk-neuron", "/etc/systemd/system", "/opt/aws/neuron/bin"):
        script = script.replace(prefix, f"{root}{prefix}")
    (root / "etc/systemd/system").mkdir(parents=True)
    bin_dir = _hermetic_path(tmp_path)
    log = tmp_path / "calls.log"
    for tool in ("systemctl", package_manager):
        _fake_bin(bin_dir, tool, log)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    result = subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

    def written(path: str) -> str:  # as it would be on the node, without the test's root prefix
        return (root / path).read_text().replace(str(root), "")

    assert written("opt/cdk-neuron/neuron_publisher.py") == publisher.agent_source()
    assert os.access(root / "opt/cdk-neuron/neuron_publisher.py", os.X_OK)
    config = node_agent.load_config(str(root / "etc/cdk-neuron/publisher.json"))
    assert config["environment"] == "prod" and config["workload"] == "serving"
    assert json.loads(written("etc/cdk-neuron/neuron-monitor.json")) == publisher.neuron_monitor_config()
    assert written("etc/systemd/system/cdk-neuron-monitor.service").strip() == publisher.systemd_unit()
    calls = log.read_text().splitlines()
    assert any(c.startswith(package_manager) and "aws-neuronx-tools" in c for c in calls)
    assert calls[-3:] == [
        "systemctl daemon-reload",
        "systemctl enable cdk-neuron-monitor.service",
        "systemctl start --no-block cdk-neuron-monitor.service",
    ]


def test_failures_never_abort_a_strict_host_script(tmp_path: Path) -> None:
    lines = publisher.node_setup_commands(
        namespace="CdkNeuron",
        region="us-east-1",
        environment="dev",
        workload="training",
        instance_type="trn1.2xlarge",
    )
    # Nothing can be installed, no directory can be written and systemctl fails.
    script = (
        STRICT_HOST_PREAMBLE + "\n".join(lines).replace("/opt/cdk-neuron", "/proc/nope") + "\necho reached"
    )
    bin_dir = _hermetic_path(tmp_path)  # no dnf, no apt-get
    (bin_dir / "systemctl").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "systemctl").chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    result = subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "reached"
    assert "TRAPPED" not in result.stderr
    assert "setup failed; this node publishes no Neuron metrics" in result.stderr


def test_unit_runs_the_agent_with_the_distro_python_and_restarts() -> None:
    unit = publisher.systemd_unit()
    assert (
        "ExecStart=/usr/bin/python3 /opt/cdk-neuron/neuron_publisher.py /etc/cdk-neuron/publisher.json"
        in unit
    )
    assert "Restart=always" in unit
    assert "WantedBy=multi-user.target" in unit
