#!/bin/bash
# cdk-neuron-launcher: every node of a multi-node training job runs this before the training command.
#
# AWS Batch runs it in the job container from the host's node-program bundle, mounted read-only at
# /opt/cdk-neuron (cdk_neuron.training.launcher.launcher_command), as
#     /bin/bash /opt/cdk-neuron/training/launcher.sh --command-base64 <the training_command parameter>
# The parameter holds the command base64-encoded, so it arrives as one word of [A-Za-z0-9+/=] through
# any image entrypoint: the Neuron training DLCs start `bash -m start_with_right_hostname.sh`, which
# runs `eval "$@"` and so re-parses a plain command (splitting it, expanding $TORCHRUN_ARGS before this
# script has set it); an image without an entrypoint runs the words as given. Both reach this script
# with the same two arguments. On a self-managed node group (AutoScalingTrainingCluster) run
# /opt/cdk-neuron/training/launcher.sh '<command>' (or --command-base64) on every node with
# CDK_NEURON_NODE_INDEX, CDK_NEURON_NNODES and CDK_NEURON_MAIN_ADDRESS from your scheduler.
#
# It derives, once, for every node: MASTER_ADDR and NODE_RANK (in topology order, below),
# MASTER_PORT, NEURON_RT_ROOT_COMM_ID, NNODES, WORLD_SIZE = NNODES x NPROC_PER_NODE, NEURON_DP_DEGREE
# = WORLD_SIZE / (TP x PP) and TORCHRUN_ARGS; then bash runs the training command with them.
#
# Batch sets AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS only on child nodes (AWS Batch User Guide,
# "Environment variables" for multi-node parallel jobs): the main node uses its own address.
#
# Topology order (CDK_NEURON_RANK_ORDER=topology, set by the cluster): before torchrun, the nodes agree
# on a node order through the main node (training/rank_order.py, standard-library Python): grouped by
# UltraServer, then by the network nodes above them, from the DescribeInstanceTopology answer the
# host wrote at boot (CDK_NEURON_TOPOLOGY_FILE). NODE_RANK becomes the node's place in that order and
# MASTER_ADDR the address of rank 0, so each run of CDK_NEURON_DOMAIN_GROUP_INSTANCES nodes holds whole
# TP x EP groups inside one NeuronLink domain. When the nodes cannot hold the plan (an UltraServer with
# the wrong number of the job's nodes, topology missing), every node stops with exit code 3 before the
# training command starts. Any other value keeps the scheduler's order.
set -euo pipefail

log() { echo "cdk-neuron-launcher: $*" >&2; }

own_address() {
    local addr=""
    if command -v ip >/dev/null 2>&1; then
        addr="$(ip -4 -o addr show dev "${CCOM_SOCKET_IFNAME:-eth0}" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')"
    fi
    if [ -z "${addr}" ] && command -v hostname >/dev/null 2>&1; then
        addr="$(hostname -I 2>/dev/null | awk '{print $1}')"
    fi
    if [ -z "${addr}" ] && command -v python3 >/dev/null 2>&1; then
        addr="$(python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))' 2>/dev/null || true)"
    fi
    printf '%s' "${addr}"
}

NODE_INDEX="${AWS_BATCH_JOB_NODE_INDEX:-${CDK_NEURON_NODE_INDEX:-0}}"
export NNODES="${AWS_BATCH_JOB_NUM_NODES:-${CDK_NEURON_NNODES:-1}}"
# Batch sets the main node's address only on child nodes; the main node uses its own.
MAIN_ADDRESS="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-${CDK_NEURON_MAIN_ADDRESS:-}}"
OWN_ADDRESS=""
if [ -z "${MAIN_ADDRESS}" ] || [ "${CDK_NEURON_RANK_ORDER:-scheduler}" = topology ]; then
    OWN_ADDRESS="$(own_address)"
fi
if [ -z "${MAIN_ADDRESS}" ]; then
    MAIN_ADDRESS="${OWN_ADDRESS}"
fi
if [ -z "${MAIN_ADDRESS}" ]; then
    log "cannot determine the main node's address"
    exit 1
fi

export MASTER_PORT="${MASTER_PORT:-29500}"
export WORLD_SIZE=$((NNODES * NPROC_PER_NODE))
# NPROC_PER_NODE and the NEURON_*_DEGREE variables come from the job environment (the plan).
# shellcheck disable=SC2153
model_parallel=$((NEURON_TP_DEGREE * NEURON_PP_DEGREE))
if ((WORLD_SIZE % model_parallel != 0)); then
    log "world size ${WORLD_SIZE} (${NNODES} nodes x ${NPROC_PER_NODE}) is not divisible by TP x PP = ${model_parallel}"
    exit 1
fi
export NEURON_DP_DEGREE=$((WORLD_SIZE / model_parallel))

# refuse_command <why>: the command did not arrive as one base64 word; say how to send it.
refuse_command() {
    log "REFUSED: $*"
    log "the training_command parameter holds the command base64-encoded, in one word: cdk-neuron submit -- 'COMMAND'" \
        "does this; with the AWS CLI pass --parameters training_command=\"\$(printf '%s' 'COMMAND' | base64 | tr -d '\\n')\""
    exit 2
}

# decode_command <base64>: the training command, or a refusal (exit 2) when the text is not base64.
decode_command() {
    local encoded=$1 decoded
    if [[ ! "${encoded}" =~ ^[A-Za-z0-9+/]+={0,2}$ ]] || ((${#encoded} % 4 != 0)); then
        refuse_command "'${encoded:0:60}' is not base64"
    fi
    command -v base64 >/dev/null 2>&1 || refuse_command "the image has no base64 (coreutils) to decode the command"
    decoded=$(printf '%s' "${encoded}" | base64 -d 2>/dev/null) || refuse_command "'${encoded:0:60}' does not decode"
    [[ "${decoded}" =~ [^[:space:]] ]] || refuse_command "the decoded command is empty"
    printf '%s' "${decoded}"
}

if [ "${1:-}" = --command-base64 ]; then
    if [ "$#" -ne 2 ]; then
        # An entrypoint that re-parses its arguments (eval) split a plain command into words.
        refuse_command "expected one base64 word after --command-base64, got $(($# - 1)) word(s): ${*:2:4} ..."
    fi
    command_line="$(decode_command "$2")" || exit 2
else
    command_line="${1:-}"
    if [ "$#" -gt 1 ]; then
        refuse_command "got $# arguments; pass the command as one argument (or --command-base64 <base64>)"
    fi
fi
if [ -z "${command_line}" ]; then
    log "no training command: set the training_command parameter"
    exit 2
fi
log "training command: ${command_line}"

# A lost or missing node ends the attempt with this code, which the job definition's retry rules retry.
PEER_LOST_EXIT_CODE=75

# require_peer_settings: the timings of a multi-node job (cdk_neuron.timeouts; the job definition and
# the self-managed nodes' profile set them).
require_peer_settings() {
    local name
    for name in CDK_NEURON_PEER_PORT CDK_NEURON_PEER_JOIN_TIMEOUT CDK_NEURON_PEER_INTERVAL \
        CDK_NEURON_PEER_SILENCE CDK_NEURON_STOP_GRACE; do
        if [ -z "${!name:-}" ]; then
            log "REFUSED: ${name} is not set (the job definition sets it; on your own nodes source /etc/profile.d/cdk-neuron-training.sh)"
            exit 3
        fi
    done
}

NODE_RANK="${NODE_INDEX}"
MASTER_ADDR="${MAIN_ADDRESS}"
if ((NNODES > 1)); then
    require_peer_settings
fi
if ((NNODES > 1)) && [ "${CDK_NEURON_RANK_ORDER:-scheduler}" = topology ]; then
    if [ -z "${OWN_ADDRESS}" ]; then
        log "REFUSED: cannot determine this node's own address for the topology exchange"
        exit 3
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        log "REFUSED: topology order needs python3 in the image (set CDK_NEURON_RANK_ORDER=scheduler to skip it)"
        exit 3
    fi
    status=0
    assignment="$(python3 "${CDK_NEURON_HOME:-/opt/cdk-neuron}/training/rank_order.py" \
        --index "${NODE_INDEX}" --nnodes "${NNODES}" \
        --address "${OWN_ADDRESS}" --main-address "${MAIN_ADDRESS}" \
        --port "${RANK_ORDER_PORT:-29700}" \
        --topology "${CDK_NEURON_TOPOLOGY_FILE:-/var/lib/cdk-neuron/topology.json}" \
        --group-instances "${CDK_NEURON_DOMAIN_GROUP_INSTANCES:-1}" \
        --ultraserver "${CDK_NEURON_ULTRASERVER:-0}" \
        --timeout "${CDK_NEURON_PEER_JOIN_TIMEOUT}" --lost-exit-code "${PEER_LOST_EXIT_CODE}")" || status=$?
    if [ "${status}" -ne 0 ]; then
        if [ "${status}" -eq "${PEER_LOST_EXIT_CODE}" ]; then
            log "LOST: not every node reported within ${CDK_NEURON_PEER_JOIN_TIMEOUT} s; no training step ran (exit ${PEER_LOST_EXIT_CODE}: retried)"
            exit "${PEER_LOST_EXIT_CODE}"
        fi
        log "REFUSED: the nodes cannot be ordered for this plan (see above); no training step ran"
        exit 3
    fi
    order=""
    while IFS='=' read -r key value; do
        case "${key}" in
            NODE_RANK) NODE_RANK="${value}" ;;
            MASTER_ADDR) MASTER_ADDR="${value}" ;;
            RANK_ORDER) order="${value}" ;;
        esac
    done <<<"${assignment}"
    log "topology order (scheduler indexes by rank): ${order}"
fi
export NODE_RANK MASTER_ADDR
export NEURON_RT_ROOT_COMM_ID="${MASTER_ADDR}:${ROOT_COMM_PORT:-29600}"
export TORCHRUN_ARGS="--nnodes=${NNODES} --node_rank=${NODE_RANK} --nproc_per_node=${NPROC_PER_NODE} --master_addr=${MASTER_ADDR} --master_port=${MASTER_PORT}"
log "node ${NODE_RANK}/${NNODES} (scheduler index ${NODE_INDEX}), main ${MASTER_ADDR}:${MASTER_PORT}, root comm ${NEURON_RT_ROOT_COMM_ID}, world ${WORLD_SIZE} = TP ${NEURON_TP_DEGREE} x PP ${NEURON_PP_DEGREE} x DP ${NEURON_DP_DEGREE}"
if ((NNODES == 1)); then
    exec "${BASH:-/bin/bash}" -c "${command_line}"
fi
# Several nodes: training/peer_watch.py runs the command and ends the attempt (exit 75, retried) when a
# node is lost, which AWS Batch does not do for child nodes. The main node (index 0) waits for every
# child to join before its training starts.
if [ "${CDK_NEURON_PEER_WATCH:-on}" = off ]; then
    log "CDK_NEURON_PEER_WATCH=off: a lost node is NOT detected; the attempt runs until the job timeout"
    exec "${BASH:-/bin/bash}" -c "${command_line}"
fi
if ! command -v python3 >/dev/null 2>&1; then
    log "REFUSED: a multi-node job needs python3 in the image to watch its peers (or set CDK_NEURON_PEER_WATCH=off)"
    exit 3
fi
role="join"
if [ "${NODE_INDEX}" = 0 ]; then role="serve"; fi
exec python3 "${CDK_NEURON_HOME:-/opt/cdk-neuron}/training/peer_watch.py" "${role}" \
    --index "${NODE_INDEX}" --nnodes "${NNODES}" --main-address "${MAIN_ADDRESS}" \
    --port "${CDK_NEURON_PEER_PORT}" --join-timeout "${CDK_NEURON_PEER_JOIN_TIMEOUT}" \
    --interval "${CDK_NEURON_PEER_INTERVAL}" --silence "${CDK_NEURON_PEER_SILENCE}" \
    --stop-grace "${CDK_NEURON_STOP_GRACE}" --lost-exit-code "${PEER_LOST_EXIT_CODE}" \
    -- "${BASH:-/bin/bash}" -c "${command_line}"
