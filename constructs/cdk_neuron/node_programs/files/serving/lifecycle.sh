# shellcheck shell=bash
# cdk-neuron serving: report an instance's readiness to EC2 Auto Scaling and CloudFormation. Sourced.
#
# The group's launch lifecycle hook holds every new instance in Pending:Wait until the instance
# completes the action (CONTINUE) or the heartbeat runs out, whose default result is ABANDON. During
# stack creation and rolling updates CloudFormation also waits for a signal per instance.
#
# While the start-up runs, progress.sh extends the action (RecordLifecycleActionHeartbeat) as long as
# the start-up makes progress: the hook's heartbeat timeout is a progress window, not the whole
# start-up (cdk_neuron.timeouts).
#
# Two answers mean "nothing is waiting" and are the only refusals taken as success:
# - CompleteLifecycleAction: "No active Lifecycle Action found" (an instance rebooted while in
#   service; EC2 Auto Scaling API reference, CompleteLifecycleAction). A heartbeat for an instance
#   with no pending action is refused the same way (the service validates both by instance ID).
# - SignalResource: "<stack> is in <STATE> state and cannot be signaled" (an instance launched by
#   scaling, outside a creation or update; CloudFormation answers ValidationError).
# Every other failure (no route to the API, no permission) is an error.
#
# Callers load fleet.env first (REGION, LIFECYCLE_HOOK, STACK_NAME, ASG_LOGICAL_ID, LOG_GROUP,
# METRIC_NAMESPACE, FLEET_ID).

instance_id() { imds meta-data/instance-id; }

# complete_lifecycle CONTINUE|ABANDON
complete_lifecycle() {
    local group instance output
    group=$(imds meta-data/tags/instance/aws:autoscaling:groupName) || {
        log "cannot read the aws:autoscaling:groupName tag from instance metadata"
        return 1
    }
    instance=$(instance_id) || return 1
    if output=$(aws autoscaling complete-lifecycle-action --region "${REGION}" \
        --lifecycle-hook-name "${LIFECYCLE_HOOK}" --auto-scaling-group-name "${group}" \
        --instance-id "${instance}" --lifecycle-action-result "$1" 2>&1); then
        log "lifecycle action completed: $1"
        return 0
    fi
    if grep -q 'No active Lifecycle Action found' <<<"${output}"; then
        log "no lifecycle action is pending (instance already in service)"
        return 0
    fi
    log "complete-lifecycle-action $1 failed: ${output}"
    return 1
}

# heartbeat: extend this instance's launch action by the hook's heartbeat timeout. Returns 0 when
# recorded, 2 when no action is pending (nothing to extend), 1 on any other failure.
heartbeat() {
    local group instance output
    group=$(imds meta-data/tags/instance/aws:autoscaling:groupName) || {
        log "cannot read the aws:autoscaling:groupName tag from instance metadata"
        return 1
    }
    instance=$(instance_id) || return 1
    if output=$(aws autoscaling record-lifecycle-action-heartbeat --region "${REGION}" \
        --lifecycle-hook-name "${LIFECYCLE_HOOK}" --auto-scaling-group-name "${group}" \
        --instance-id "${instance}" 2>&1); then
        return 0
    fi
    if grep -q 'No active Lifecycle Action found' <<<"${output}"; then
        log "no lifecycle action is pending: nothing to extend"
        return 2
    fi
    log "record-lifecycle-action-heartbeat failed: ${output}"
    return 1
}

# progress_phase <phase> [<dir>]: what the start-up does now, for the progress watch (progress.sh): a
# phase that copies into <dir> progresses while the bytes used there grow.
progress_phase() {
    printf '%s %s\n' "$1" "${2:-}" >"${CDK_NEURON_ETC}/progress"
}

# start_progress_watch: run progress.sh beside this program (it exits with it).
start_progress_watch() {
    progress_phase start
    /bin/bash "${HOME_DIR}/serving/progress.sh" "$$" &
    PROGRESS_WATCH=$!
}

# stop_progress_watch: before this program completes the action (or gives up), so no heartbeat follows.
stop_progress_watch() {
    if [ -n "${PROGRESS_WATCH:-}" ] && kill "${PROGRESS_WATCH}" 2>/dev/null; then
        # It ends with SIGTERM's status, which is how it is meant to end here.
        if ! wait "${PROGRESS_WATCH}" 2>/dev/null; then :; fi
    fi
    PROGRESS_WATCH=""
    rm -f "${CDK_NEURON_ETC}/progress"
}

# signal_stack SUCCESS|FAILURE
signal_stack() {
    local instance output
    instance=$(instance_id) || return 1
    if output=$(aws cloudformation signal-resource --region "${REGION}" --stack-name "${STACK_NAME}" \
        --logical-resource-id "${ASG_LOGICAL_ID}" --unique-id "${instance}" --status "$1" 2>&1); then
        log "CloudFormation signalled: $1"
        return 0
    fi
    if grep -Eq 'state and can ?not be signaled' <<<"${output}"; then
        log "no stack operation waits for a signal"
        return 0
    fi
    log "signal-resource $1 failed: ${output}"
    return 1
}

# put_line <message>: one line in the fleet's log group, stream <instance-id>/lifecycle (next to its
# replicas' streams), where it outlives the instance.
put_line() {
    local instance stream events output
    instance=$(instance_id) || instance=unknown-instance
    stream="${instance}/lifecycle"
    if ! output=$(aws logs create-log-stream --region "${REGION}" --log-group-name "${LOG_GROUP}" \
        --log-stream-name "${stream}" 2>&1) && ! grep -q 'ResourceAlreadyExistsException' <<<"${output}"; then
        log "create-log-stream failed: ${output}"
        return 1
    fi
    events=$(python3 -c 'import json, sys, time
print(json.dumps([{"timestamp": int(time.time() * 1000), "message": sys.argv[1]}]))' "$1") ||
        return 1
    aws logs put-log-events --region "${REGION}" --log-group-name "${LOG_GROUP}" --log-stream-name "${stream}" \
        --log-events "${events}" >/dev/null
}

# record_failure <why>: write why this instance failed where it outlives the instance, which Auto
# Scaling terminates once the launch is abandoned: a line in the fleet's log group and a
# LaunchFailures data point (the fleet alarms on them).
record_failure() {
    put_line "cdk-neuron: FAILED: $1" || return 1
    aws cloudwatch put-metric-data --region "${REGION}" --namespace "${METRIC_NAMESPACE}" \
        --metric-name "${LAUNCH_FAILURE_METRIC}" --dimensions "Fleet=${FLEET_ID}" --unit Count --value 1
}

# publish_phases <seconds> [ready|prepared]: this boot's start-up phases (phases.env) and the seconds
# from the kernel's start to every replica healthy (ready, the default), or to a warm-pool launch
# prepared before its stop (prepared: image pulled, artifacts synced, nothing started), as one line in
# the fleet's log group ("cdk-neuron: phases node_boot=41 image_pull=70 artifact_transfer=12 ready=702
# boot_epoch=1764650000"),
# which the integ kit's timing report reads (tests/integ/integ_support/collect.py): a warm pool's cold
# phases are those of its preparation. Then phases.env is removed, so a later start (the warm pool)
# reports only its own phases.
publish_phases() {
    local line="cdk-neuron: phases" name value
    if [ -r "${CDK_NEURON_ETC}/phases.env" ]; then
        while IFS='=' read -r name value; do
            [ -n "${name}" ] && line+=" ${name}=${value}"
        done <"${CDK_NEURON_ETC}/phases.env"
    fi
    line+=" ${2:-ready}=$1"
    # The kernel's start as epoch seconds: with Auto Scaling's activity StartTime it gives EC2's share
    # before the kernel (a launch activity into the warm pool ends only once the instance is stopped,
    # so its EndTime cannot).
    line+=" boot_epoch=$(($(date +%s) - $(cut -d . -f 1 "${ROOT}/proc/uptime")))"
    rm -f "${CDK_NEURON_ETC}/phases.env"
    put_line "${line}"
}

# fail <why>: take this instance out of the launch, say why where it outlives the instance, stop.
#
# ABANDON makes Auto Scaling terminate and replace the instance. No FAILURE signal goes to
# CloudFormation: one would fail a stack creation at the first abandoned instance, while the
# stack's wait (CreationPolicy) is sized for a replacement launch (cdk_neuron.timeouts,
# LAUNCH_ATTEMPTS); an instance that never succeeds still fails the creation when that wait ends.
fail() {
    log "FAILED: $*"
    stop_progress_watch
    record_failure "$*" || log "could not record the failure in CloudWatch"
    complete_lifecycle ABANDON || log "could not abandon the launch; the hook's heartbeat will"
    exit 1
}
