"""MonitoringThresholds: documented defaults, and every bad value refused naming its field."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from typing import Any

import pytest

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring import MonitoringThresholds


def test_defaults_are_the_documented_ones() -> None:
    t = MonitoringThresholds()
    assert (t.saturated_percent, t.saturated_minutes) == (90.0, 15)
    assert (t.idle_percent, t.training_idle_minutes, t.serving_idle_minutes) == (5.0, 60, 240)
    assert (t.device_memory_percent, t.device_memory_minutes) == (90.0, 15)
    assert (t.serving_5xx_percent, t.serving_p99_latency_seconds, t.serving_minutes) == (1.0, 10.0, 5)
    assert (t.efs_throughput_percent, t.efs_throughput_minutes) == (90.0, 15)


def test_every_field_is_documented_with_its_default() -> None:
    import inspect

    source = inspect.getsource(MonitoringThresholds)
    for f in fields(MonitoringThresholds):
        after = source.split(f"    {f.name}:", 1)[1]
        doc = after.split('"""', 2)[1]
        assert doc.strip(), f.name


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("saturated_percent", 0, "percentage in"),
        ("idle_percent", 101, "percentage in"),
        ("device_memory_percent", float("nan"), "must be a number"),
        ("serving_5xx_percent", "1", "must be a number"),
        ("efs_throughput_percent", True, "must be a number"),
        ("saturated_minutes", 7, "multiple of 5"),
        ("training_idle_minutes", 0, "multiple of 5"),
        ("serving_idle_minutes", 24 * 60 + 5, "one day"),
        ("device_memory_minutes", 15.0, "whole number"),
        ("serving_minutes", 0, "multiple of 1"),
        ("serving_p99_latency_seconds", 0, "greater than 0"),
        ("serving_p99_latency_seconds", float("inf"), "finite number"),
    ],
)
def test_bad_values_name_the_field(field: str, value: Any, message: str) -> None:
    with pytest.raises(NeuronConfigError, match=f"^{field}=.*{message}"):
        MonitoringThresholds(**{field: value})


def test_idle_must_be_below_saturated() -> None:
    with pytest.raises(NeuronConfigError, match=r"^idle_percent=50\.0: must be below saturated_percent \(40"):
        MonitoringThresholds(idle_percent=50.0, saturated_percent=40.0)


def test_serving_minutes_may_be_any_whole_minute() -> None:
    assert MonitoringThresholds(serving_minutes=3).serving_minutes == 3


def test_pure_monitoring_modules_do_not_import_aws_cdk() -> None:
    probe = (
        "import json, sys\n"
        "import cdk_neuron.metrics, cdk_neuron.monitoring\n"
        "from cdk_neuron.metrics import names, node_metrics\n"
        "from cdk_neuron.monitoring import MonitoringThresholds, NodeMetrics, NEURON_METRICS\n"
        "node_metrics.NodeMetrics(environment='e').settings_files(workload='serving',"
        " instance_type='inf2.xlarge')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
