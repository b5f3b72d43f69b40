"""cdk-neuron node publisher: neuron-monitor reports -> CloudWatch custom metrics.

This file ships in the node-program bundle (``/opt/cdk-neuron/monitoring``) and runs under systemd
(``cdk-neuron-monitor.service``); it must keep to the Python standard library plus boto3, and to
Python 3.9 (Amazon Linux 2023's python3). It never imports cdk_neuron. The metric names and units
come from its config file, ``/etc/cdk-neuron/publisher.json``, written into user data at synth time
from ``cdk_neuron.monitoring.metrics``; neuron-monitor's own config is ``neuron-monitor.json`` beside
this file.

Input: ``neuron-monitor`` (aws-neuronx-tools, /opt/aws/neuron/bin) writes one JSON report per period
to stdout. Schema: aws-neuron-sdk ``tools/neuron-sys-tools/neuron-monitor-user-guide.rst`` @1db4d74
(sections "The JSON output format", "neuroncore_counters", "execution_stats", "memory_used",
"neuron_hw_counters", "neuron_hardware_info"). Counts in ``error_summary`` are "for the captured
period"; the ECC counters are per period as well (the SDK's neuron-monitor-prometheus.py adds each
report's values to a Prometheus counter).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

MAX_METRICS_PER_CALL = 1000
"""PutMetricData accepts at most 1,000 metrics per request (CloudWatch API reference)."""

DEFAULT_CONFIG_PATH = "/etc/cdk-neuron/publisher.json"
_IMDS = "http://169.254.169.254/latest"
_LOG = logging.getLogger("cdk-neuron-publisher")

REQUIRED_CONFIG = (
    "namespace",
    "environment",
    "workload",
    "neuron_cores",
    "hbm_bytes",
    "metrics",
    "neuron_monitor",
    "neuron_monitor_config",
)


def _group(report: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A metric group of a report, or {} when absent or when neuron-monitor flagged an error."""
    group = report.get(name) or {}
    return {} if group.get("error") else group


def _core_count(report: Mapping[str, Any], fallback: int) -> int:
    # The node's own hardware report wins: the logical NeuronCore count changes with
    # NEURON_LOGICAL_NC_CONFIG on Trn2, while the catalog figure is for the default setting.
    info = report.get("neuron_hardware_info") or {}
    if not info.get("error"):
        cores = int(info.get("neuron_device_count") or 0) * int(info.get("neuroncore_per_device_count") or 0)
        if cores > 0:
            return cores
    return fallback


def summarize(report: Mapping[str, Any], *, neuron_cores: int, hbm_bytes: int) -> dict[str, float]:
    """Reduce one neuron-monitor report to one value per metric key for the whole instance.

    Utilization averages over every NeuronCore of the instance, so an instance running one small
    model on two of 32 cores shows ~6 %, not the 100 % of the busy cores. Cores and memory are
    summed over all Neuron runtimes (processes); latency percentiles cannot be combined across
    runtimes, so the worst runtime's value is reported. Latency keys are absent when nothing ran.
    """
    runtimes = [r.get("report") or {} for r in report.get("neuron_runtime_data") or [] if not r.get("error")]
    busy = 0.0
    device_bytes = 0.0
    errors = 0.0
    p50: list[float] = []
    p99: list[float] = []
    for runtime in runtimes:
        in_use = _group(runtime, "neuroncore_counters").get("neuroncores_in_use") or {}
        busy += sum(min(100.0, float(core.get("neuroncore_utilization") or 0.0)) for core in in_use.values())
        used = _group(runtime, "memory_used").get("neuron_runtime_used_bytes") or {}
        device_bytes += float(used.get("neuron_device") or 0)
        stats = _group(runtime, "execution_stats")
        errors += sum(float(count or 0) for count in (stats.get("error_summary") or {}).values())
        latency = (stats.get("latency_stats") or {}).get("total_latency")
        if latency:
            p50.append(float(latency["p50"]))
            p99.append(float(latency["p99"]))

    corrected = uncorrected = 0.0
    for device in _group(report.get("system_data") or {}, "neuron_hw_counters").get("neuron_devices") or []:
        corrected += float(device.get("mem_ecc_corrected") or 0) + float(
            device.get("sram_ecc_corrected") or 0
        )
        uncorrected += float(device.get("mem_ecc_uncorrected") or 0) + float(
            device.get("sram_ecc_uncorrected") or 0
        )

    values = {
        "core_utilization": min(100.0, busy / _core_count(report, neuron_cores)),
        "device_memory_used": device_bytes,
        "device_memory_utilization": min(100.0, 100.0 * device_bytes / hbm_bytes),
        "execution_errors": errors,
        "ecc_corrected": corrected,
        "ecc_uncorrected": uncorrected,
    }
    if p50:
        values["execution_latency_p50"] = max(p50)
        values["execution_latency_p99"] = max(p99)
    return values


def dimension_sets(environment: str, workload: str, instance_id: str) -> list[list[dict[str, str]]]:
    """The per-workload series and the per-instance series."""
    shared = [{"Name": "Environment", "Value": environment}, {"Name": "Workload", "Value": workload}]
    return [shared, [*shared, {"Name": "InstanceId", "Value": instance_id}]]


def metric_data(
    values: Mapping[str, float],
    *,
    table: Mapping[str, Sequence[str]],
    dimensions: Sequence[Sequence[Mapping[str, str]]],
    timestamp: datetime,
) -> list[dict[str, Any]]:
    """PutMetricData ``MetricData`` entries: every value once per dimension set."""
    data: list[dict[str, Any]] = []
    for dims in dimensions:
        for key, value in values.items():
            name, unit = table[key]
            data.append(
                {
                    "MetricName": name,
                    "Dimensions": [dict(d) for d in dims],
                    "Timestamp": timestamp,
                    "Value": float(value),
                    "Unit": unit,
                }
            )
    return data


def chunks(items: Sequence[Any], size: int = MAX_METRICS_PER_CALL) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def publish(client: Any, namespace: str, data: Sequence[Mapping[str, Any]]) -> int:
    """Send ``data`` in as few PutMetricData calls as the API allows; returns the number of calls."""
    calls = 0
    for batch in chunks(data):
        client.put_metric_data(Namespace=namespace, MetricData=batch)
        calls += 1
    return calls


def instance_identity(timeout: float = 2.0) -> dict[str, Any]:
    """The IMDSv2 instance identity document (``instanceId``, ``region``, ...).

    Launch templates require IMDSv2 tokens, so the token request comes first.
    """
    token_request = urllib.request.Request(
        f"{_IMDS}/api/token", method="PUT", headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"}
    )
    with urllib.request.urlopen(token_request, timeout=timeout) as response:
        token = response.read().decode()
    document_request = urllib.request.Request(
        f"{_IMDS}/dynamic/instance-identity/document", headers={"X-aws-ec2-metadata-token": token}
    )
    with urllib.request.urlopen(document_request, timeout=timeout) as response:
        document: dict[str, Any] = json.loads(response.read())
    return document


def load_config(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        config: dict[str, Any] = json.load(handle)
    missing = [key for key in REQUIRED_CONFIG if key not in config]
    if missing:
        raise ValueError(f"{path}: missing keys {', '.join(missing)}")
    return config


def run(config: Mapping[str, Any], reports: Iterator[str], client: Any, instance_id: str) -> int:
    """Publish every report line; returns the number of reports published.

    A bad line or a failed call is logged and skipped: one lost minute of metrics must not stop the
    publisher. ``client`` is a boto3 CloudWatch client.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    dimensions = dimension_sets(config["environment"], config["workload"], instance_id)
    published = 0
    for line in reports:
        if not line.strip():
            continue
        try:
            report = json.loads(line)
        except ValueError:
            _LOG.warning("skipping a line that is not a JSON report: %.80s", line)
            continue
        values = summarize(
            report, neuron_cores=int(config["neuron_cores"]), hbm_bytes=int(config["hbm_bytes"])
        )
        data = metric_data(
            values, table=config["metrics"], dimensions=dimensions, timestamp=datetime.now(timezone.utc)
        )
        try:
            publish(client, config["namespace"], data)
        except (BotoCoreError, ClientError) as error:
            _LOG.warning("PutMetricData failed, dropping this report: %s", error)
            continue
        published += 1
    return published


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    args = list(sys.argv[1:] if argv is None else argv)
    config = load_config(args[0] if args else DEFAULT_CONFIG_PATH)
    identity = instance_identity()  # an OSError here exits; systemd retries

    import boto3

    client = boto3.client("cloudwatch", region_name=identity["region"])
    monitor = subprocess.Popen(
        [config["neuron_monitor"], "-c", config["neuron_monitor_config"]], stdout=subprocess.PIPE, text=True
    )
    assert monitor.stdout is not None
    run(config, iter(monitor.stdout), client, identity["instanceId"])
    # neuron-monitor streams until killed: any exit is a failure for systemd to restart.
    code = monitor.wait()
    _LOG.error("neuron-monitor exited with status %s", code)
    return code or 1


if __name__ == "__main__":
    sys.exit(main())
