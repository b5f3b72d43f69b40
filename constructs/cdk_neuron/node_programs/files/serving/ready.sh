#!/bin/bash
# cdk-neuron-ready (every boot): hold a warm-pool launch once prepared, else start serving and report
# readiness.
#
# While the instance is launched into the warm pool (target lifecycle state Warmed:*), it only
# publishes the phases of its preparation and completes the launch action: Auto Scaling then stops it
# with the image pulled and the artifacts synced. Otherwise it starts every replica and the host nginx
# in front of them, waits until each answers its health path, starts the lifecycle watch (lifecycle-watch.sh: an instance that scale-in
# returns to the warm pool), completes the launch action (only now does the instance enter service)
# and signals CloudFormation.
#
# Its deadline counts from the kernel's boot, not from this script's start: the launch hook's
# heartbeat runs from the launch, and boot.sh's pull and sync come first. STARTUP_DEADLINE_SECONDS
# ends READY_MARGIN before that heartbeat (cdk_neuron.timeouts), so a replica that is not healthy in
# time fails here, with a log line that outlives the instance (lifecycle.sh, fail), instead of the
# hook's default result terminating the instance without a word. While it fetches and loads,
# progress.sh extends the launch action (the hook's heartbeat timeout is a progress window).
set -Eeuo pipefail
CDK_NEURON_PROGRAM=serving-ready
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
# shellcheck source=lifecycle.sh
. "${HOME_DIR}/serving/lifecycle.sh"
# shellcheck source=model.sh
. "${HOME_DIR}/serving/model.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION REPLICAS FIRST_REPLICA_PORT SERVICE_PORT HEALTH_PATH STARTUP_DEADLINE_SECONDS MODEL_TMPFS_GIB \
    PROGRESS_INTERVAL_SECONDS PROGRESS_STALL_SECONDS
trap 'fail "cdk-neuron-ready stopped at line ${LINENO}"' ERR

# Whole seconds since the kernel booted.
uptime_seconds() { cut -d . -f 1 "${ROOT}/proc/uptime"; }

state=$(imds meta-data/autoscaling/target-lifecycle-state) || fail "cannot read the target lifecycle state"
case "${state}" in
Warmed:*)
    # The pull and the sync of this boot prepared the pool: they are the pool's cold phases, published
    # as such (prepared=, not ready=); a later start reports its own phases.
    publish_phases "$(uptime_seconds)" prepared || log "could not publish the warm-pool preparation's phases"
    complete_lifecycle CONTINUE || fail "cannot complete the warm-pool launch"
    log "prepared for the warm pool (${state}); Auto Scaling stops the instance now"
    exit 0
    ;;
esac

# A start that boot.sh did not prepare on this boot (out of the warm pool, or a reboot) pulls nothing:
# its boot phase ends here, and the phases line says so (warm_boot), so the integ kit's timing report
# tells a warm start from a cold one (cdk_neuron.serving.start_paths).
if ! grep -q '^node_boot=' "${CDK_NEURON_ETC}/phases.env" 2>/dev/null; then
    record_phase warm_boot "$(uptime_seconds)"
fi

start_progress_watch
# A RAM-backed model directory does not survive a stop (the warm pool): fetch it again.
if model_needs_fetch; then
    progress_phase artifact-transfer "${DATA_DIR}/model"
    fetch_model || fail "cannot fetch ${ARTIFACT_URI} into the RAM-backed model directory"
fi

ports=()
for ((index = 0; index < REPLICAS; index++)); do
    systemctl start --no-block "cdk-neuron-replica@${index}.service" || fail "cannot start replica ${index}"
    ports+=("$((FIRST_REPLICA_PORT + index))")
done
systemctl start --no-block cdk-neuron-proxy.service || fail "cannot start the host proxy"
ports+=("${SERVICE_PORT}")
progress_phase load

for port in "${ports[@]}"; do
    until curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:${port}${HEALTH_PATH}"; do
        now=$(uptime_seconds)
        [ "${now}" -lt "${STARTUP_DEADLINE_SECONDS}" ] ||
            fail "no healthy answer on port ${port} ${now} s after boot (deadline ${STARTUP_DEADLINE_SECONDS} s)"
        sleep 10
    done
done
ready=$(uptime_seconds)
log "every replica is healthy, ${ready} s after boot"
publish_phases "${ready}" || log "could not publish the start-up phases"
systemctl start --no-block cdk-neuron-metrics.service || fail "cannot start the metrics publisher"
systemctl start --no-block cdk-neuron-lifecycle.service || fail "cannot start the lifecycle watch"
stop_progress_watch
complete_lifecycle CONTINUE || fail "cannot complete the launch lifecycle action"
# In service now: a failure here cannot take the instance back. A stack creation that waits for this
# signal and never gets it fails when its wait ends.
signal_stack SUCCESS || log "could not signal CloudFormation"
