#!/bin/bash
# cdk-neuron-metrics: publish the instance's in-flight plus queued requests (summed over its
# replicas) every METRICS_INTERVAL_SECONDS, the metric the fleet's target tracking scales on.
#
# A failed publication is logged and retried on the next interval (systemd restarts the loop if it
# dies); a missing data point makes target tracking hold, never scale in.
set -uo pipefail
CDK_NEURON_PROGRAM=serving-metrics
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION REPLICAS FIRST_REPLICA_PORT METRICS_PATH CONCURRENCY_METRICS \
    METRIC_NAMESPACE METRIC_NAME FLEET_ID METRICS_INTERVAL_SECONDS

# replica_load <port>: the sum of the concurrency metrics in one replica's Prometheus text.
replica_load() {
    curl -sf --max-time 5 "http://127.0.0.1:$1${METRICS_PATH}" | awk -v names="${CONCURRENCY_METRICS}" '
        BEGIN { n = split(names, wanted, " ") }
        /^#/ { next }
        { for (i = 1; i <= n; i++) { k = length(wanted[i])
            if (substr($1, 1, k) == wanted[i] && (length($1) == k || substr($1, k + 1, 1) == "{")) sum += $NF } }
        END { printf "%.0f", sum + 0 }'
}

while true; do
    total=0
    for ((index = 0; index < REPLICAS; index++)); do
        port=$((FIRST_REPLICA_PORT + index))
        if value=$(replica_load "${port}"); then
            total=$((total + ${value:-0}))
        else
            log "replica ${index} (port ${port}) did not answer ${METRICS_PATH}"
        fi
    done
    aws cloudwatch put-metric-data --region "${REGION}" --namespace "${METRIC_NAMESPACE}" \
        --metric-name "${METRIC_NAME}" --dimensions "Fleet=${FLEET_ID}" --unit Count --value "${total}" ||
        log "put-metric-data failed; the next interval tries again"
    sleep "${METRICS_INTERVAL_SECONDS}"
done
