# shellcheck shell=bash
# cdk-neuron serving: fetch the model artifacts from S3 (the fast path of docs/fast-start.md). Sourced
# by boot.sh (first boot) and ready.sh (every later start), never run.
#
# - The AWS CLI's CRT transfer client, its target bandwidth the instance's network
#   (S3_TARGET_BANDWIDTH): many parallel ranged GETs instead of the classic client's 10 requests, so
#   one transfer is not held to EC2's 5 Gbps single-flow limit. Its settings live in a config file of
#   ours (AWS_CONFIG_FILE for this command only), so the AMI's own AWS configuration is untouched.
#   Through the S3 gateway endpoint like every other S3 read: routed with or without a NAT.
# - Where the host's memory allows (MODEL_TMPFS_GIB > 0, cdk_neuron.serving.floors.model_dir_in_ram),
#   the model directory is a tmpfs: the transfer is bound by the network only and the replicas load
#   from memory. A stopped instance (the warm pool) loses it, so ready.sh fetches it again at start.
#   The tmpfs is sized from the model's parameters; the artifacts under ARTIFACT_URI may hold more
#   (compiled graphs, pre-sharded weights). They are measured first (aws s3 ls --summarize), and
#   artifacts that do not fit go to the data volume instead, once and for good (MODEL_ON_VOLUME), with
#   a log line: a tmpfs that fills fails every retry of the sync, on every replacement instance.

# record_phase <name> <seconds>: how long a start-up phase took on this boot, in phases.env, which
# ready.sh publishes once the instance is ready (publish_phases) and then removes.
record_phase() {
    printf '%s=%s\n' "$1" "$2" >>"${CDK_NEURON_ETC}/phases.env"
    log "phase $1: $2 s"
}

# model_dir: where the replicas read the model from.
model_dir() { printf '%s\n' "${ROOT}${DATA_DIR}/model"; }

# The marker of artifacts too large for the RAM-backed directory: they live on the data volume.
MODEL_ON_VOLUME="${CDK_NEURON_ETC}/model-on-volume"

# artifact_bytes: the total size of the objects under ARTIFACT_URI.
artifact_bytes() {
    local listing
    listing=$(retry 3 aws s3 ls --recursive --summarize --region "${REGION}" "${ARTIFACT_URI}") || return 1
    awk '/Total Size:/ { print $3 }' <<<"${listing}"
}

# in_ram: whether the model directory is to be a tmpfs, deciding it the first time from the artifacts' size.
in_ram() {
    local bytes limit
    [ "${MODEL_TMPFS_GIB:-0}" -gt 0 ] && [ ! -e "${MODEL_ON_VOLUME}" ] || return 1
    bytes=$(artifact_bytes) && [ -n "${bytes}" ] || {
        log "cannot measure the artifacts under ${ARTIFACT_URI}"
        return 2
    }
    limit=$((MODEL_TMPFS_GIB * 1024 * 1024 * 1024))
    if [ "${bytes}" -gt "${limit}" ]; then
        log "the artifacts (${bytes} bytes) do not fit the RAM-backed model directory (${MODEL_TMPFS_GIB} GiB): they go to the data volume"
        : >"${MODEL_ON_VOLUME}"
        return 1
    fi
}

# write_transfer_config: the CRT client settings, in ${CDK_NEURON_ETC}/s3-transfer.config.
write_transfer_config() {
    {
        printf '[default]\ns3 =\n    preferred_transfer_client = crt\n'
        [ -z "${S3_TARGET_BANDWIDTH:-}" ] || printf '    target_bandwidth = %s\n' "${S3_TARGET_BANDWIDTH}"
    } >"${CDK_NEURON_ETC}/s3-transfer.config"
}

# prepare_model_dir: mount the tmpfs (RAM-backed) unless it is mounted or the artifacts do not fit,
# or make the directory.
prepare_model_dir() {
    local dir ram
    dir=$(model_dir)
    install -d -m 0755 "${dir}" || return 1
    mountpoint -q "${dir}" && return 0
    in_ram
    ram=$?
    [ "${ram}" -eq 2 ] && return 1
    if [ "${ram}" -eq 0 ]; then
        mount -t tmpfs -o "size=${MODEL_TMPFS_GIB}g,mode=0755" cdk-neuron-model "${dir}" || return 1
        log "model directory in RAM: tmpfs of ${MODEL_TMPFS_GIB} GiB"
    fi
}

# fetch_model: the artifacts into the model directory, timed (the log line the integ kit reads).
fetch_model() {
    local started dir
    [ -n "${ARTIFACT_URI:-}" ] || return 0
    dir=$(model_dir)
    prepare_model_dir || {
        log "cannot prepare the model directory ${dir}"
        return 1
    }
    write_transfer_config || return 1
    started=$(date +%s)
    retry 5 until_deadline env AWS_CONFIG_FILE="${CDK_NEURON_ETC}/s3-transfer.config" \
        aws s3 sync --only-show-errors --region "${REGION}" "${ARTIFACT_URI}" "${dir}" || return 1
    record_phase artifact_transfer "$(($(date +%s) - started))"
}

# model_needs_fetch: true when the RAM-backed directory is gone (the instance was stopped and started),
# or was never filled (a warm-pool launch skips it: boot.sh, sync_artifacts).
model_needs_fetch() {
    [ -n "${ARTIFACT_URI:-}" ] && [ "${MODEL_TMPFS_GIB:-0}" -gt 0 ] && [ ! -e "${MODEL_ON_VOLUME}" ] &&
        ! mountpoint -q "$(model_dir)"
}
