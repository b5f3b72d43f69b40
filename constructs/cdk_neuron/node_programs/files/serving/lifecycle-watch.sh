#!/bin/bash
# cdk-neuron-lifecycle (started by ready.sh once the instance serves): complete the one lifecycle
# transition that reaches an instance while it is in service.
#
# With a warm pool that reuses instances on scale in, Auto Scaling returns a serving instance to the
# pool instead of terminating it: the instance "pauses at the Warmed:Pending:Wait state for the
# EC2_INSTANCE_TERMINATING lifecycle action" ("Use lifecycle hooks with a warm pool in Auto Scaling
# group", Amazon EC2 Auto Scaling User Guide,
# https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pool-instance-lifecycle.html, read
# 2026-12-02): the group's return hook (LIFECYCLE_RETURN_HOOK, default result CONTINUE), not its
# launch hook. The instance does not reboot on the way, so ready.sh (every boot) cannot answer.
#
# This loop reads the instance's target lifecycle state from instance metadata every
# LIFECYCLE_POLL_SECONDS. On Warmed:* it stops serving (each replica gets REPLICA_STOP_TIMEOUT to
# finish its requests), completes the action with CONTINUE and exits: Auto Scaling stops the instance,
# and ready.sh serves again at the boot that takes it out of the pool. Every other state (InService,
# Standby, Terminating:*) needs nothing from here.
set -uo pipefail
CDK_NEURON_PROGRAM=serving-lifecycle
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
# shellcheck source=lifecycle.sh
. "${HOME_DIR}/serving/lifecycle.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION LIFECYCLE_RETURN_HOOK LIFECYCLE_POLL_SECONDS

while true; do
    if state=$(imds meta-data/autoscaling/target-lifecycle-state); then
        case "${state}" in
        Warmed:*)
            log "scale-in returns this instance to the warm pool (${state}): stop serving"
            # Replicas first, so requests in flight finish through the proxy.
            systemctl stop 'cdk-neuron-replica@*.service' || log "a replica did not stop cleanly"
            systemctl stop cdk-neuron-proxy.service cdk-neuron-metrics.service ||
                log "the proxy or the metrics publisher did not stop cleanly"
            if LIFECYCLE_HOOK="${LIFECYCLE_RETURN_HOOK}" complete_lifecycle CONTINUE; then
                log "returned to the warm pool; Auto Scaling stops the instance now"
                exit 0
            fi
            ;;
        esac
    else
        log "cannot read the target lifecycle state; trying again"
    fi
    sleep "${LIFECYCLE_POLL_SECONDS}"
done
