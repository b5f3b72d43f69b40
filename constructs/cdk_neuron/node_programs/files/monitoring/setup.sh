#!/bin/bash
# cdk-neuron node metrics: install what the publisher needs and start it (run by the workload's own
# boot program when its construct enables node metrics, i.e. when publisher.json exists).
#
# The publisher (neuron_publisher.py) turns neuron-monitor reports into CloudWatch metrics. It needs
# neuron-monitor (aws-neuronx-tools, on every ECS-optimized AL2023 Neuron AMI) and boto3 for the
# system Python (python3-boto3 from the Amazon Linux repositories, in S3). A node that cannot
# publish fails its boot like any other step: its alarms would otherwise stay silent.
set -euo pipefail
CDK_NEURON_PROGRAM=node-metrics
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
[ -r "${CDK_NEURON_ETC}/publisher.json" ] || die "missing ${CDK_NEURON_ETC}/publisher.json"
[ -x "${ROOT}/opt/aws/neuron/bin/neuron-monitor" ] ||
    die "neuron-monitor (aws-neuronx-tools) is missing: use the ECS-optimized AL2023 Neuron AMI"
if ! "${ROOT}/usr/bin/python3" -c 'import boto3' 2>/dev/null; then
    retry 3 dnf install -y -q python3-boto3 || die "cannot install python3-boto3"
fi
install -d "${ROOT}/etc/systemd/system"
install -m 0644 "${HOME_DIR}/monitoring/cdk-neuron-monitor.service" "${ROOT}/etc/systemd/system/"
systemctl daemon-reload
systemctl enable cdk-neuron-monitor.service
systemctl start --no-block cdk-neuron-monitor.service
log "neuron-monitor publisher started"
