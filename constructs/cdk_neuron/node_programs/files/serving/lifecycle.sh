# shellcheck shell=bash
# cdk-neuron serving: report an instance's readiness to EC2 Auto Scaling and CloudFormation. Sourced.
#
# The group's launch lifecycle hook holds every new instance in Pending:Wait until the instance
# completes the action (CONTINUE) or the heartbeat runs out, whose default result is ABANDON. During
# stack creation and rolling updates CloudFormation also waits for a signal per instance.
#
# Two answers mean "nothing is waiting" and are the only refusals taken as success:
# - CompleteLifecycleAction: "No active Lifecycle Action found" (an instance rebooted while in
#   service; EC2 Auto Scaling API reference, CompleteLifecycleAction).
# - SignalResource: "<stack> is in <STATE> state and cannot be signaled" (an instance launched by
#   scaling, outside a creation or update; CloudFormation answers ValidationError).
# Every other failure (no route to the API, no permission) is an error.

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

# fail <why>: take this instance out of the launch (ABANDON makes Auto Scaling replace it) and fail
# the stack operation waiting for it, then stop.
fail() {
    log "FAILED: $*"
    complete_lifecycle ABANDON || log "could not abandon the launch; the hook's heartbeat will"
    signal_stack FAILURE || log "could not signal FAILURE; CloudFormation's signal timeout will"
    exit 1
}
