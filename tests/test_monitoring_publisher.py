"""The node publisher: neuron-monitor report -> metrics, PutMetricData batching, and its config.

Pure Python (no aws_cdk). The publisher is the file the nodes get
(``node_programs/files/monitoring/neuron_publisher.py``), loaded here without writing bytecode next to
it; boto3 calls go through botocore's Stubber. Its setup script runs in test_node_programs.py.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import re
from datetime import datetime, timezone
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from handler_support import load_file

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics import NodeMetrics, names
from cdk_neuron.node_programs import FILES_DIR

AGENT = FILES_DIR / "monitoring" / "neuron_publisher.py"


node_agent = load_file(AGENT, "neuron_publisher")  # no __pycache__ in the node-program bundle

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
    assert set(_summary(SERVING_REPORT)) == {m.key for m in names.NEURON_METRICS}
    assert len({m.name for m in names.NEURON_METRICS}) == len(names.NEURON_METRICS)


# ---------------------------------------------------------------------------------------------
# values -> MetricData
# ---------------------------------------------------------------------------------------------

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)


def test_each_value_is_published_per_workload_and_per_instance() -> None:
    dims = node_agent.dimension_sets("prod", "serving", "i-0011223344556677a")
    data = node_agent.metric_data(
        _summary(SERVING_REPORT), table=names.metric_table(), dimensions=dims, timestamp=NOW
    )
    assert len(data) == 2 * len(names.NEURON_METRICS)
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
    config = NodeMetrics(environment="prod").publisher_config(
        workload="serving", instance_type="inf2.48xlarge"
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
# NodeMetrics: the publisher's config, and the files the nodes get
# ---------------------------------------------------------------------------------------------


def test_publisher_config_takes_cores_and_hbm_from_the_catalog() -> None:
    config = NodeMetrics(environment="prod").publisher_config(
        workload="training", instance_type="trn2.48xlarge"
    )
    assert (config["neuron_cores"], config["hbm_bytes"]) == (64, 1536 * GIB)
    assert config["metrics"]["core_utilization"] == ["NeuronCoreUtilization", "Percent"]
    assert (config["namespace"], config["environment"], config["workload"]) == (
        "CdkNeuron",
        "prod",
        "training",
    )
    assert config["neuron_monitor"] == "/opt/aws/neuron/bin/neuron-monitor"
    assert config["neuron_monitor_config"] == "/opt/cdk-neuron/monitoring/neuron-monitor.json"
    assert set(config) == set(node_agent.REQUIRED_CONFIG)


def test_settings_file_is_the_config_as_compact_json() -> None:
    metrics = NodeMetrics(environment="dev", namespace="Team/Neuron")
    (name, content), *rest = metrics.settings_files(workload="serving", instance_type="inf2.xlarge").items()
    assert rest == [] and name == "publisher.json"
    assert json.loads(content) == metrics.publisher_config(workload="serving", instance_type="inf2.xlarge")
    assert "\n" not in content.rstrip("\n") and " " not in content


@pytest.mark.parametrize(
    ("kwargs", "field", "value"),
    [
        ({"environment": "prod env"}, "environment", "'prod env'"),
        ({"environment": ""}, "environment", "''"),
        ({"environment": "x" * 65}, "environment", "'" + "x" * 65 + "'"),
        ({"environment": "dev", "namespace": "AWS/Neuron"}, "namespace", "'AWS/Neuron'"),
        ({"environment": "dev", "namespace": "a b"}, "namespace", "'a b'"),
    ],
)
def test_node_metrics_refuse_bad_names(kwargs: dict[str, str], field: str, value: str) -> None:
    with pytest.raises(NeuronConfigError, match=f"^{field}={re.escape(value)}: "):
        NodeMetrics(**kwargs)


def test_node_metrics_accept_names_at_their_limits() -> None:
    assert NodeMetrics(environment="x" * 64, namespace="N" * 255).namespace == "N" * 255


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("workload", {"workload": "batch"}),
        ("instance_type", {"instance_type": "p5.48xlarge"}),
    ],
)
def test_publisher_config_refuses_bad_input(field: str, kwargs: dict[str, str]) -> None:
    base = {"workload": "serving", "instance_type": "inf2.xlarge", **kwargs}
    with pytest.raises(NeuronConfigError, match=f"^{field}="):
        NodeMetrics(environment="dev").publisher_config(**base)  # type: ignore[arg-type]


def test_agent_runs_on_python_3_9_and_imports_only_stdlib_and_boto3() -> None:
    source = AGENT.read_text()
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
    config = json.loads((AGENT.parent / "neuron-monitor.json").read_text())
    assert config["period"] == f"{names.PERIOD_SECONDS}s" == "60s"
    groups = {m["type"] for m in config["neuron_runtimes"][0]["metrics"]}
    assert groups == {"neuroncore_counters", "memory_used", "execution_stats"}
    assert config["neuron_runtimes"][0]["tag_filter"] == ".*"
    assert config["system_metrics"] == [{"type": "neuron_hw_counters"}]
