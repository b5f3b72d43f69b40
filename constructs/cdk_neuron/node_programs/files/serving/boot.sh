#!/bin/bash
# cdk-neuron serving instance, first boot (run once by cloud-init through the bootstrap).
#
# The instance runs the ECS-optimized Amazon Linux 2023 Neuron AMI: the Neuron driver, Docker and
# the Neuron tools come installed (aws/amazon-ecs-ami scripts/enable-ecs-agent-inferentia-support.sh
# and install-docker.sh); anything else comes from the Amazon Linux repositories, which are in S3.
# So a fleet reaches only AWS services and its image registry, with or without a NAT.
#
# Throughout, progress.sh extends the launch lifecycle action while this start-up makes progress, and
# fails it when it stops moving (lifecycle.sh, progress_phase says what it is doing).
# 0. Check the Neuron devices (NEURON_DEVICES of /dev/neuronN, then neuron-ls): replicas are given
#    them by path, so an instance without them must not join the fleet.
# 1. Format (XFS) and mount the encrypted data volume, found by its identity, at DATA_DIR; Docker
#    keeps images there.
# 2. Stop the ECS agent (this fleet is not an ECS cluster).
# 3. Log in to the image's ECR registry, pull the image (16 layers at once), sync the model artifacts
#    from S3 with the CRT transfer client, into RAM where the host's memory allows (model.sh).
# 4. Install the systemd units from the bundle (one per replica, the host nginx in front of them,
#    the metrics publisher, the lifecycle watch) with the timings of cdk_neuron.timeouts filled in,
#    and start cdk-neuron-ready, which also runs at every later boot.
# 5. Start the Neuron metrics publisher when the fleet enables node metrics (publisher.json).
# Any failure abandons the launch (Auto Scaling replaces the instance) and is recorded where it
# outlives the instance (serving/lifecycle.sh, fail).
set -Eeuo pipefail
CDK_NEURON_PROGRAM=serving-boot
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
require REGION STACK_NAME ASG_LOGICAL_ID LIFECYCLE_HOOK IMAGE DATA_DIR DATA_DEVICE DATA_LABEL REPLICAS \
    FIRST_REPLICA_PORT SERVICE_PORT MODEL_TMPFS_GIB DOCKER_MAX_CONCURRENT_DOWNLOADS NEURON_DEVICES \
    NEURON_DEVICE_WAIT STARTUP_DEADLINE_SECONDS PROGRESS_INTERVAL_SECONDS PROGRESS_STALL_SECONDS
EBS_MODEL='Amazon Elastic Block Store'
trap 'fail "the boot script stopped at line ${LINENO}"' ERR

# data_volume: the block device of the EBS volume the launch template maps at DATA_DEVICE.
#
# Chosen by its identity, never as "a disk without a file system": an instance-store NVMe has none
# either after a stop (which empties it), so that rule could format and fill a disk that a warm-pool
# stop then wipes. Amazon Linux's udev rule links the mapping's name (/dev/sdf) to its NVMe device
# ("Map Amazon EBS volumes to NVMe device names", Amazon EBS User Guide,
# https://docs.aws.amazon.com/ebs/latest/userguide/identify-nvme-ebs-device.html, read 2026-12-01);
# without that link, the one EBS device (NVMe model "Amazon Elastic Block Store", serial = volume
# ID) that is not the root disk is the data volume, since the launch template maps only those two.
data_volume() {
    local model disk root_disk candidates=()
    if [ -L "${ROOT}${DATA_DEVICE}" ] || [ -b "${ROOT}${DATA_DEVICE}" ]; then
        readlink -f "${ROOT}${DATA_DEVICE}"
        return 0
    fi
    root_disk=$(lsblk -no PKNAME "$(findmnt -no SOURCE /)") || return 1
    for model in "${ROOT}"/sys/block/nvme*n1/device/model; do
        [ -e "${model}" ] || continue
        disk=${model#"${ROOT}"/sys/block/}
        disk=${disk%%/*}
        [ "${disk}" = "${root_disk}" ] && continue
        grep -q "^${EBS_MODEL}" "${model}" && candidates+=("/dev/${disk}")
    done
    if [ "${#candidates[@]}" -gt 1 ]; then
        log "several EBS volumes besides the root (${candidates[*]}) and no ${DATA_DEVICE} link"
        return 1
    fi
    [ "${#candidates[@]}" -eq 1 ] && echo "${candidates[0]}"
}

mount_data_volume() {
    local device="" waited=0 existing
    if ! blkid -L "${DATA_LABEL}" >/dev/null 2>&1; then
        # The volume may appear a few seconds after boot.
        until device=$(data_volume) && [ -n "${device}" ]; do
            [ "${waited}" -lt 120 ] || fail "the data volume (${DATA_DEVICE}) did not appear within 120 s"
            sleep 5
            waited=$((waited + 5))
        done
        existing=$(blkid -p -o value -s TYPE "${device}" 2>/dev/null || true)
        [ -z "${existing}" ] || fail "${device} (${DATA_DEVICE}) already holds a ${existing} file system without our label"
        ensure_command mkfs.xfs xfsprogs || fail "cannot install xfsprogs"
        mkfs.xfs -q -L "${DATA_LABEL}" "${device}"
        log "data volume ${DATA_DEVICE}: ${device}, XFS"
    fi
    grep -q "LABEL=${DATA_LABEL}" "${ROOT}/etc/fstab" ||
        echo "LABEL=${DATA_LABEL} ${DATA_DIR} xfs defaults,nofail,noatime 0 2" >>"${ROOT}/etc/fstab"
    install -d -m 0755 "${ROOT}${DATA_DIR}"
    mountpoint -q "${ROOT}${DATA_DIR}" || mount "${ROOT}${DATA_DIR}"
    install -d -m 0755 "${ROOT}${DATA_DIR}/docker" "${ROOT}${DATA_DIR}/cache" "${ROOT}${DATA_DIR}/model"
}

configure_docker() {
    command -v docker >/dev/null 2>&1 || fail "docker is missing: use the ECS-optimized AL2023 Neuron AMI"
    install -d "${ROOT}/etc/docker" "${ROOT}/etc/systemd/system/docker.service.d"
    # More layers in flight than Docker's default 3 (cdk_neuron.serving.floors).
    python3 - "${ROOT}/etc/docker/daemon.json" "${DATA_DIR}/docker" "${DOCKER_MAX_CONCURRENT_DOWNLOADS}" <<'PY'
import json, os, sys
path, data_root, downloads = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = json.load(open(path)) if os.path.exists(path) else {}
config["data-root"] = data_root
config["max-concurrent-downloads"] = downloads
json.dump(config, open(path, "w"), indent=2)
PY
    # dockerd decompresses layers with unpigz when it is installed (MOBY_DISABLE_PIGZ, dockerd reference);
    # pigz comes with Amazon Linux's docker package, so this only guards an AMI without it. A slower pull
    # is no reason to fail a start: say so and go on.
    ensure_command unpigz pigz || log "no unpigz: Docker decompresses the image's layers with Go's gzip"
    # Docker starts only once the data volume is mounted.
    printf '[Unit]\nRequiresMountsFor=%s\n' "${DATA_DIR}" >"${ROOT}/etc/systemd/system/docker.service.d/cdk-neuron.conf"
    systemctl daemon-reload
    systemctl enable docker.service
    systemctl restart docker.service
}

stop_ecs_agent() {
    # The AMI starts the ECS agent after cloud-init; this fleet registers with no ECS cluster.
    # --no-block: the agent's start is queued behind cloud-init, which runs this script.
    if systemctl cat ecs.service >/dev/null 2>&1; then
        systemctl disable --now --no-block ecs.service
    fi
}

pull_image() {
    if [ -n "${ECR_REGISTRY:-}" ]; then
        # shellcheck disable=SC2016  # $1 and $2 are the inner shell's arguments
        retry 5 until_deadline bash -c 'aws ecr get-login-password --region "$1" | docker login --username AWS --password-stdin "$2"' \
            _ "${ECR_REGION}" "${ECR_REGISTRY}" || fail "docker login to ${ECR_REGISTRY} failed"
    fi
    local started
    # The boot phase ends where the pull starts: seconds since the kernel started.
    record_phase node_boot "$(cut -d . -f 1 "${ROOT}/proc/uptime")"
    progress_phase image-pull "${DATA_DIR}/docker"
    started=$(date +%s)
    retry 5 until_deadline docker pull --quiet "${IMAGE}" || fail "cannot pull ${IMAGE}"
    record_phase image_pull "$(($(date +%s) - started))"
    # The image's unpacked size, for the pull's floor (cdk_neuron.serving.floors assumes 18 GB until a
    # report measures it); a measurement, never a reason to fail the start.
    local size
    if size=$(docker image inspect --format '{{.Size}}' "${IMAGE}") && [[ "${size}" =~ ^[0-9]+$ ]]; then
        printf 'image_bytes=%s\n' "${size}" >>"${CDK_NEURON_ETC}/phases.env"
    else
        log "cannot read the size of ${IMAGE}: the report's pull floor stays the assumed one"
    fi
}

sync_artifacts() {
    local state
    # Launched into the warm pool with a RAM-backed model directory: the stop that follows empties
    # the tmpfs, and ready.sh fetches it at the start that takes the instance out of the pool.
    if [ "${MODEL_TMPFS_GIB:-0}" -gt 0 ] && state=$(imds meta-data/autoscaling/target-lifecycle-state) &&
        [[ "${state}" == Warmed:* ]]; then
        log "launched into the warm pool (${state}): the RAM-backed model is fetched when it starts"
        return 0
    fi
    progress_phase artifact-transfer "${DATA_DIR}/model"
    fetch_model || fail "cannot sync ${ARTIFACT_URI}"
}

install_units() {
    local units="${HOME_DIR}/serving/units" unit index
    # The host nginx (an Amazon Linux package) is always in front of the replicas, even of one: the
    # load balancer reuses idle connections for 300 s and the model servers drop them after 5, so
    # the proxy holds the connections from the load balancer (cdk_neuron.timeouts).
    ensure_command nginx nginx || fail "cannot install nginx"
    UPSTREAMS=""
    for ((index = 0; index < REPLICAS; index++)); do
        UPSTREAMS+="        server 127.0.0.1:$((FIRST_REPLICA_PORT + index)) max_fails=1 fail_timeout=10s;"$'\n'
    done
    UPSTREAMS=${UPSTREAMS%$'\n'}
    fill_template "${HOME_DIR}/serving/nginx.conf.in" "${CDK_NEURON_ETC}/nginx.conf" ||
        fail "cannot write nginx.conf"
    for unit in cdk-neuron-replica@.service cdk-neuron-ready.service cdk-neuron-proxy.service \
        cdk-neuron-metrics.service cdk-neuron-lifecycle.service; do
        fill_template "${units}/${unit}" "${ROOT}/etc/systemd/system/${unit}" || fail "cannot write ${unit}"
    done
    systemctl daemon-reload
    systemctl enable cdk-neuron-ready.service
}

install -d -m 0755 "${CDK_NEURON_ETC}" "${ROOT}/etc/systemd/system"
rm -f "${CDK_NEURON_ETC}/phases.env"
start_progress_watch
progress_phase neuron-devices
check_neuron_devices "${NEURON_DEVICES}" "${NEURON_DEVICE_WAIT}" || fail "the Neuron devices are not usable"
progress_phase data-volume
mount_data_volume
stop_ecs_agent
progress_phase docker
configure_docker
pull_image
sync_artifacts
progress_phase units
install_units
if [ -r "${CDK_NEURON_ETC}/publisher.json" ]; then
    /bin/bash "${HOME_DIR}/monitoring/setup.sh" || fail "the Neuron metrics publisher did not start"
fi
# cdk-neuron-ready runs its own progress watch.
stop_progress_watch
# --no-block: cloud-init is itself a unit, and cdk-neuron-ready must not wait on it.
systemctl start --no-block cdk-neuron-ready.service
log "first boot done; cdk-neuron-ready takes over"
