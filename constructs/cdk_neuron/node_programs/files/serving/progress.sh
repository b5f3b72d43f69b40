#!/bin/bash
# cdk-neuron-progress <pid>: extend the launch lifecycle action while the start-up run by <pid>
# (boot.sh, or ready.sh at a later boot) makes progress; fail the start-up when it stops moving.
#
# The launch hook's heartbeat timeout is a progress window (cdk_neuron.timeouts, a few minutes), not
# the worst-case start-up: an instance whose programs died (a hung kernel, a failed cloud-init) is
# abandoned after that window. A start-up that moves is held longer by one
# RecordLifecycleActionHeartbeat per PROGRESS_INTERVAL_SECONDS, each of which "extends the timeout by
# the length of time defined using the PutLifecycleHook API call", up to the hook's global timeout,
# "172800 seconds (48 hours) or 100 times HeartbeatTimeout, whichever is smaller" (Amazon EC2 Auto
# Scaling API Reference, RecordLifecycleActionHeartbeat and LifecycleHook, read 2026-12-02). The
# start-up's own deadline (STARTUP_DEADLINE_SECONDS) still ends it well before that.
#
# What counts as progress is what the start-up program says it does now (${CDK_NEURON_ETC}/progress,
# written by progress_phase in lifecycle.sh: a phase name and, for a copy, the directory it writes):
# - a copy (the image pull, the model transfer): the bytes used on the directory's file system grew;
# - load: every replica unit is active (the Neuron runtime prints nothing a program could read while
#   it loads; a replica that exited is not loading, and systemd restarts it after RestartSec);
# - any other step (the device check, the data volume, the units): it runs; each is bounded by its
#   own wait, far below PROGRESS_STALL_SECONDS;
# - a new phase is progress.
# With no progress for PROGRESS_STALL_SECONDS, this program stops the start-up program (so it cannot
# complete the action afterwards) and fails the launch the way the start-up would have (lifecycle.sh,
# fail): a log line and a LaunchFailures point that outlive the instance, then ABANDON. It exits
# when the start-up program exits, and when Auto Scaling has no action pending for the instance (a
# reboot while in service: nothing to extend, nothing to fail).
#
# Its clock is the kernel's uptime, the clock of STARTUP_DEADLINE_SECONDS.
set -uo pipefail
CDK_NEURON_PROGRAM=serving-progress
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
# shellcheck source=lifecycle.sh
. "${HOME_DIR}/serving/lifecycle.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION LIFECYCLE_HOOK REPLICAS PROGRESS_INTERVAL_SECONDS PROGRESS_STALL_SECONDS
starter=${1:?usage: progress.sh <pid of the start-up program>}

uptime_seconds() { cut -d . -f 1 "${ROOT}/proc/uptime"; }

# used_bytes <dir>: the bytes used on the file system that holds <dir>.
used_bytes() { df -B1 --output=used "${ROOT}$1" 2>/dev/null | tail -n 1 | tr -d ' '; }

# replicas_active: every replica unit of this instance is active.
replicas_active() {
    local index
    for ((index = 0; index < REPLICAS; index++)); do
        systemctl is-active --quiet "cdk-neuron-replica@${index}.service" || return 1
    done
}

seen_phase="" seen_bytes="" phase="" dir=""
# moved: whether the start-up moved since the last look (updates seen_phase and seen_bytes).
moved() {
    local bytes
    phase="" dir=""
    [ -r "${CDK_NEURON_ETC}/progress" ] && read -r phase dir <"${CDK_NEURON_ETC}/progress"
    if [ "${phase}" != "${seen_phase}" ]; then
        seen_phase=${phase}
        seen_bytes=$([ -n "${dir}" ] && used_bytes "${dir}")
        return 0
    fi
    if [ -n "${dir}" ]; then
        bytes=$(used_bytes "${dir}") || return 1
        [ -n "${bytes}" ] && [ "${bytes}" != "${seen_bytes}" ] || return 1
        seen_bytes=${bytes}
        return 0
    fi
    [ "${phase}" = load ] && {
        replicas_active
        return
    }
    return 0
}

last_progress=$(uptime_seconds)
while kill -0 "${starter}" 2>/dev/null; do
    now=$(uptime_seconds)
    if moved; then
        last_progress=${now}
        heartbeat
        case $? in
        0) ;;
        2) exit 0 ;; # no action pending: nothing to extend
        *) log "could not record a heartbeat; the hook's window covers the next try" ;;
        esac
    elif [ $((now - last_progress)) -ge "${PROGRESS_STALL_SECONDS}" ]; then
        # Stop the start-up first, so it cannot complete the action after the ABANDON below.
        kill "${starter}" 2>/dev/null
        fail "no progress in ${phase:-the start-up} for $((now - last_progress)) s (PROGRESS_STALL_SECONDS ${PROGRESS_STALL_SECONDS})"
    fi
    sleep "${PROGRESS_INTERVAL_SECONDS}"
done
# The start-up program ended (it completed the action, or failed it itself).
exit 0
