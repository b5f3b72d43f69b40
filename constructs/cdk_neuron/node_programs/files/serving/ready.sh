#!/bin/bash
# cdk-neuron-ready (every boot): hold a warm-pool launch once prepared, else start serving and report
# readiness.
#
# While the instance is launched into the warm pool (target lifecycle state Warmed:*), it only
# completes the launch action: Auto Scaling then stops it with the image pulled and the artifacts
# synced. Otherwise it starts every replica (and the local proxy), waits until each answers its
# health path, completes the launch action (only now does the instance enter service) and signals
# CloudFormation. A replica that is not healthy within STARTUP_TIMEOUT_SECONDS fails the launch.
set -Eeuo pipefail
CDK_NEURON_PROGRAM=serving-ready
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
# shellcheck source=lifecycle.sh
. "${HOME_DIR}/serving/lifecycle.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION REPLICAS FIRST_REPLICA_PORT SERVICE_PORT HEALTH_PATH STARTUP_TIMEOUT_SECONDS
trap 'fail "cdk-neuron-ready stopped at line ${LINENO}"' ERR

state=$(imds meta-data/autoscaling/target-lifecycle-state) || fail "cannot read the target lifecycle state"
case "${state}" in
Warmed:*)
    complete_lifecycle CONTINUE || fail "cannot complete the warm-pool launch"
    log "prepared for the warm pool (${state}); Auto Scaling stops the instance now"
    exit 0
    ;;
esac

ports=()
for ((index = 0; index < REPLICAS; index++)); do
    systemctl start --no-block "cdk-neuron-replica@${index}.service" || fail "cannot start replica ${index}"
    if [ "${REPLICAS}" -gt 1 ]; then
        ports+=("$((FIRST_REPLICA_PORT + index))")
    fi
done
if [ "${REPLICAS}" -gt 1 ]; then
    systemctl start --no-block cdk-neuron-proxy.service || fail "cannot start the local proxy"
fi
ports+=("${SERVICE_PORT}")

deadline=$((SECONDS + STARTUP_TIMEOUT_SECONDS))
for port in "${ports[@]}"; do
    until curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:${port}${HEALTH_PATH}"; do
        [ "${SECONDS}" -lt "${deadline}" ] ||
            fail "no healthy answer on port ${port} after ${STARTUP_TIMEOUT_SECONDS} s"
        sleep 10
    done
done
log "every replica is healthy"
systemctl start --no-block cdk-neuron-metrics.service || fail "cannot start the metrics publisher"
complete_lifecycle CONTINUE || fail "cannot complete the launch lifecycle action"
signal_stack SUCCESS || fail "cannot signal CloudFormation"
