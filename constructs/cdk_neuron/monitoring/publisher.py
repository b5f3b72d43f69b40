"""Render the node publisher into user data: files, a systemd unit and the install steps.

Plain Python (no ``aws_cdk``): :func:`node_setup_commands` returns shell lines that the constructs
append to a node's user data (``ec2.UserData.add_commands``). The lines

1. install ``python3-boto3`` when ``import boto3`` fails, and ``aws-neuronx-tools`` when
   ``neuron-monitor`` is missing, with dnf (Amazon Linux 2023) or apt-get (Ubuntu), whichever
   exists. The ECS-optimized AL2023 Neuron AMI (aws/amazon-ecs-ami CHANGELOG 20231024, PR #149)
   and the Neuron DLAMIs ship aws-neuronx-tools, so that step normally does nothing;
2. write the publisher (:mod:`cdk_neuron.monitoring.node_agent`, verbatim), its config, the
   neuron-monitor config and the ``cdk-neuron-monitor`` systemd unit;
3. enable and start the unit without waiting for it, so a slow start never blocks boot.

All of it runs in one shell function called as ``cdk_neuron_monitoring || echo ...``, so a failure
never aborts the host script, not even one running under ``set -e`` with an ERR trap: a node without
metrics still trains or serves. Failures are printed to the boot log, and the node is missing from the
dashboard's "Nodes reporting" series.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.monitoring import node_agent
from cdk_neuron.monitoring.metrics import PERIOD_SECONDS, WORKLOADS, Workload, metric_table

SERVICE_NAME = "cdk-neuron-monitor"
AGENT_PATH = "/opt/cdk-neuron/neuron_publisher.py"
CONFIG_PATH = node_agent.DEFAULT_CONFIG_PATH
MONITOR_CONFIG_PATH = "/etc/cdk-neuron/neuron-monitor.json"
UNIT_PATH = f"/etc/systemd/system/{SERVICE_NAME}.service"
NEURON_MONITOR = "/opt/aws/neuron/bin/neuron-monitor"
PYTHON = "/usr/bin/python3"  # the distro Python that python3-boto3 installs into, not a DLAMI venv

_GIB = 2**30


def publisher_config(
    *, namespace: str, region: str, environment: str, workload: Workload, instance_type: str
) -> dict[str, Any]:
    """The publisher's config file. Core count and HBM come from the catalog for ``instance_type``."""
    if workload not in WORKLOADS:
        raise NeuronConfigError("workload", workload, f"use one of {one_of(WORKLOADS)}")
    instance = get_instance(instance_type)
    return {
        "namespace": namespace,
        "region": region,
        "environment": environment,
        "workload": workload,
        "neuron_cores": instance.neuron_cores,
        "hbm_bytes": instance.hbm_gib * _GIB,
        "metrics": metric_table(),
        "neuron_monitor": NEURON_MONITOR,
        "neuron_monitor_config": MONITOR_CONFIG_PATH,
    }


def neuron_monitor_config() -> dict[str, Any]:
    """Only the metric groups the publisher reads, once per publish period, for every runtime.

    Host vCPU and memory are left to EC2 and the CloudWatch agent.
    """
    return {
        "period": f"{PERIOD_SECONDS}s",
        "neuron_runtimes": [
            {
                "tag_filter": ".*",
                "metrics": [
                    {"type": "neuroncore_counters"},
                    {"type": "memory_used"},
                    {"type": "execution_stats"},
                ],
            }
        ],
        "system_metrics": [{"type": "neuron_hw_counters"}],
    }


def systemd_unit() -> str:
    return "\n".join(
        [
            "[Unit]",
            "Description=cdk-neuron: publish neuron-monitor metrics to CloudWatch",
            "Wants=network-online.target",
            "After=network-online.target",
            "",
            "[Service]",
            f"ExecStart={PYTHON} {AGENT_PATH} {CONFIG_PATH}",
            "Restart=always",
            "RestartSec=30",
            "NoNewPrivileges=yes",
            "PrivateTmp=yes",
            "ProtectHome=yes",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
        ]
    )


def _heredoc(path: str, content: str, *, mode: str = "0644") -> list[str]:
    marker = "CDK_NEURON_EOF"
    if marker in content:  # pragma: no cover - guards a future edit of the agent
        raise ValueError(f"{path}: content contains the heredoc marker {marker}")
    # Quoted marker: the shell expands nothing inside, so the file is written byte for byte.
    return [f"cat > {path} <<'{marker}'", content.rstrip("\n"), marker, f"chmod {mode} {path}"]


def agent_source() -> str:
    """The publisher exactly as it is tested here (node_agent.py)."""
    return Path(node_agent.__file__).read_text(encoding="utf-8")


def node_setup_commands(
    *, namespace: str, region: str, environment: str, workload: Workload, instance_type: str
) -> list[str]:
    """Shell lines that install and start the publisher on a Neuron node."""
    config = publisher_config(
        namespace=namespace,
        region=region,
        environment=environment,
        workload=workload,
        instance_type=instance_type,
    )
    return [
        "# cdk-neuron monitoring: neuron-monitor -> CloudWatch publisher",
        "cdk_neuron_install() {",
        '  if command -v dnf >/dev/null 2>&1; then dnf install -y "$@"',
        "  elif command -v apt-get >/dev/null 2>&1; then",
        "    apt-get -o DPkg::Lock::Timeout=300 update -q &&",
        '      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q "$@"',
        '  else echo "cdk-neuron monitoring: no dnf or apt-get to install $*" >&2; return 1; fi',
        "}",
        "cdk_neuron_monitoring() {",
        f"{PYTHON} -c 'import boto3' 2>/dev/null || cdk_neuron_install python3-boto3 ||"
        " echo 'cdk-neuron monitoring: python3-boto3 install failed' >&2",
        f"[ -x {NEURON_MONITOR} ] || cdk_neuron_install aws-neuronx-tools ||"
        " echo 'cdk-neuron monitoring: aws-neuronx-tools install failed' >&2",
        "mkdir -p /opt/cdk-neuron /etc/cdk-neuron",
        *_heredoc(AGENT_PATH, agent_source(), mode="0755"),
        *_heredoc(CONFIG_PATH, json.dumps(config, indent=1, sort_keys=True)),
        *_heredoc(MONITOR_CONFIG_PATH, json.dumps(neuron_monitor_config(), indent=1)),
        *_heredoc(UNIT_PATH, systemd_unit()),
        "systemctl daemon-reload &&",
        f"  systemctl enable {SERVICE_NAME}.service &&",
        f"  systemctl start --no-block {SERVICE_NAME}.service",
        "}",
        # Called in an || list: under the `set -Eeuo pipefail` and ERR trap of a host script
        # (the serving boot script has both), a failure here neither exits nor trips the trap.
        "cdk_neuron_monitoring ||"
        " echo 'cdk-neuron monitoring: setup failed; this node publishes no Neuron metrics' >&2",
    ]


__all__ = [
    "AGENT_PATH",
    "CONFIG_PATH",
    "MONITOR_CONFIG_PATH",
    "SERVICE_NAME",
    "agent_source",
    "neuron_monitor_config",
    "node_setup_commands",
    "publisher_config",
    "systemd_unit",
]
