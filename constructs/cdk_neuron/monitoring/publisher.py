"""Render the node publisher into user data: one compressed bundle and a setup script.

Plain Python (no ``aws_cdk``): :func:`node_setup_commands` returns shell lines that the constructs
append to a node's user data (``ec2.UserData.add_commands``). They unpack a base64 tar.gz holding the
publisher (:mod:`cdk_neuron.monitoring.node_agent`), its config, the neuron-monitor config, the
``cdk-neuron-monitor`` systemd unit and :data:`SETUP_SCRIPT`, then run the script, which

1. installs ``python3-boto3`` when ``import boto3`` fails, and ``aws-neuronx-tools`` when
   ``neuron-monitor`` is missing, with dnf (Amazon Linux 2023) or apt-get (Ubuntu), whichever
   exists. The ECS-optimized AL2023 Neuron AMI (aws/amazon-ecs-ami CHANGELOG 20231024, PR #149)
   and the Neuron DLAMIs ship aws-neuronx-tools, so that step normally does nothing;
2. enables and starts the unit without waiting for it, so a slow start never blocks boot.

Why a compressed bundle: EC2 caps user data at 16 KB and the serving fleet's own boot script takes
about 10 KB of it. The publisher ships without its docstrings (otherwise the code the tests run, see
:func:`deployed_agent_source`), and everything is static (the publisher reads its Region and
instance id from IMDS), so it all compresses into one blob of about 4 KB.

All of it runs in one shell function called as ``cdk_neuron_monitoring || echo ...``, so a failure
never aborts the host script, not even one running under ``set -e`` with an ERR trap: a node without
metrics still trains or serves. Failures are printed to the boot log, and the node is missing from the
dashboard's "Nodes reporting" series.
"""

from __future__ import annotations

import ast
import base64
import gzip
import io
import json
import tarfile
import textwrap
from pathlib import Path
from typing import Any

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError, one_of
from cdk_neuron.monitoring import node_agent
from cdk_neuron.monitoring.metrics import PERIOD_SECONDS, WORKLOADS, Workload, metric_table

SERVICE_NAME = "cdk-neuron-monitor"
AGENT_PATH = "/opt/cdk-neuron/neuron_publisher.py"
SETUP_PATH = "/opt/cdk-neuron/setup.sh"
CONFIG_PATH = node_agent.DEFAULT_CONFIG_PATH
MONITOR_CONFIG_PATH = "/etc/cdk-neuron/neuron-monitor.json"
UNIT_PATH = f"/etc/systemd/system/{SERVICE_NAME}.service"
NEURON_MONITOR = "/opt/aws/neuron/bin/neuron-monitor"
PYTHON = "/usr/bin/python3"  # the distro Python that python3-boto3 installs into, not a DLAMI venv

_GIB = 2**30


def publisher_config(
    *, namespace: str, environment: str, workload: Workload, instance_type: str
) -> dict[str, Any]:
    """The publisher's config file. Core count and HBM come from the catalog for ``instance_type``."""
    if workload not in WORKLOADS:
        raise NeuronConfigError("workload", workload, f"use one of {one_of(WORKLOADS)}")
    instance = get_instance(instance_type)
    return {
        "namespace": namespace,
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


SETUP_SCRIPT = f"""\
#!/bin/bash
# cdk-neuron monitoring: install what the publisher needs, then start it (cdk_neuron.monitoring.publisher)
install_packages() {{
  if command -v dnf >/dev/null 2>&1; then dnf install -y "$@"
  elif command -v apt-get >/dev/null 2>&1; then
    apt-get -o DPkg::Lock::Timeout=300 update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q "$@"
  else echo "cdk-neuron monitoring: no dnf or apt-get to install $*" >&2; return 1; fi
}}
{PYTHON} -c 'import boto3' 2>/dev/null || install_packages python3-boto3 ||
  echo 'cdk-neuron monitoring: python3-boto3 install failed' >&2
[ -x {NEURON_MONITOR} ] || install_packages aws-neuronx-tools ||
  echo 'cdk-neuron monitoring: aws-neuronx-tools install failed' >&2
systemctl daemon-reload &&
  systemctl enable {SERVICE_NAME}.service &&
  systemctl start --no-block {SERVICE_NAME}.service
"""


def agent_source() -> str:
    """The publisher as written and tested here (node_agent.py)."""
    return Path(node_agent.__file__).read_text(encoding="utf-8")


class _Shrink(ast.NodeTransformer):
    """Drop docstrings and type annotations: neither changes what the code does."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and all(isinstance(n, ast.stmt) for n in body):
            kept = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        for arg in (
            *node.args.posonlyargs,
            *node.args.args,
            *node.args.kwonlyargs,
            node.args.vararg,
            node.args.kwarg,
        ):
            if arg is not None:
                arg.annotation = None
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def deployed_agent_source() -> str:
    """The publisher as installed on nodes: the same code without docstrings, annotations and comments."""
    tree = ast.fix_missing_locations(_Shrink().visit(ast.parse(agent_source())))
    header = (
        "# cdk-neuron node publisher: cdk_neuron/monitoring/node_agent.py without docstrings, type hints\n"
        "# and comments (EC2 user data is capped at 16 KB). Read the original for the why.\n"
    )
    return header + ast.unparse(tree) + "\n"


def bundle_files(
    *, namespace: str, environment: str, workload: Workload, instance_type: str
) -> dict[str, tuple[str, int]]:
    """The files unpacked on every node: absolute path -> (content, mode)."""
    config = publisher_config(
        namespace=namespace, environment=environment, workload=workload, instance_type=instance_type
    )
    return {
        AGENT_PATH: (deployed_agent_source(), 0o755),
        SETUP_PATH: (SETUP_SCRIPT, 0o755),
        CONFIG_PATH: (json.dumps(config, separators=(",", ":"), sort_keys=True) + "\n", 0o644),
        MONITOR_CONFIG_PATH: (json.dumps(neuron_monitor_config(), separators=(",", ":")) + "\n", 0o644),
        UNIT_PATH: (systemd_unit() + "\n", 0o644),
    }


def bundle(files: dict[str, tuple[str, int]]) -> bytes:
    """``files`` as a reproducible tar.gz (fixed mtimes and owners, so snapshots are stable)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, (content, mode) in files.items():
            data = content.encode("utf-8")
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def node_setup_commands(
    *, namespace: str, environment: str, workload: Workload, instance_type: str
) -> list[str]:
    """Shell lines that install and start the publisher on a Neuron node."""
    files = bundle_files(
        namespace=namespace, environment=environment, workload=workload, instance_type=instance_type
    )
    marker = "CDK_NEURON_EOF"
    return [
        "# cdk-neuron monitoring: neuron-monitor -> CloudWatch. The bundle is cdk_neuron.monitoring.publisher",
        "# .bundle_files(): the publisher, its configs, a systemd unit and the setup script run below.",
        "cdk_neuron_monitoring() {",
        f"base64 -d <<'{marker}' | tar -xzf - -C / && /bin/bash {SETUP_PATH}",
        *textwrap.wrap(base64.b64encode(bundle(files)).decode("ascii"), 76),
        marker,
        "}",
        # Called in an || list: under the `set -Eeuo pipefail` and ERR trap of a host script
        # (the serving boot script has both), a failure here neither exits nor trips the trap.
        "cdk_neuron_monitoring || echo 'cdk-neuron monitoring: setup failed; this node publishes no Neuron metrics' >&2",
    ]


__all__ = [
    "AGENT_PATH",
    "CONFIG_PATH",
    "MONITOR_CONFIG_PATH",
    "SERVICE_NAME",
    "SETUP_PATH",
    "SETUP_SCRIPT",
    "UNIT_PATH",
    "agent_source",
    "bundle",
    "bundle_files",
    "deployed_agent_source",
    "neuron_monitor_config",
    "node_setup_commands",
    "publisher_config",
    "systemd_unit",
]
