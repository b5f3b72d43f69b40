#!/bin/bash
# cdk-neuron serving instance, first boot (run once by cloud-init through the bootstrap).
#
# The instance runs the ECS-optimized Amazon Linux 2023 Neuron AMI: the Neuron driver, Docker and
# the Neuron tools come installed (aws/amazon-ecs-ami scripts/enable-ecs-agent-inferentia-support.sh
# and install-docker.sh); anything else comes from the Amazon Linux repositories, which are in S3.
# So a fleet reaches only AWS services and its image registry, with or without a NAT.
#
# 1. Format and mount the encrypted data volume at DATA_DIR; Docker keeps images there.
# 2. Stop the ECS agent (this fleet is not an ECS cluster).
# 3. Log in to the image's ECR registry, pull the image, sync the model artifacts from S3.
# 4. Install the systemd units from the bundle (one per replica, the local proxy, the metrics
#    publisher) and start cdk-neuron-ready, which also runs at every later boot.
# 5. Start the Neuron metrics publisher when the fleet enables node metrics (publisher.json).
# Any failure abandons the launch (Auto Scaling replaces the instance) and fails the stack's wait.
set -Eeuo pipefail
CDK_NEURON_PROGRAM=serving-boot
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
# shellcheck source=lifecycle.sh
. "${HOME_DIR}/serving/lifecycle.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
require REGION STACK_NAME ASG_LOGICAL_ID LIFECYCLE_HOOK IMAGE DATA_DIR DATA_LABEL REPLICAS \
    FIRST_REPLICA_PORT SERVICE_PORT
trap 'fail "the boot script stopped at line ${LINENO}"' ERR

mount_data_volume() {
    local device="" root_disk disk waited=0
    if ! blkid -L "${DATA_LABEL}" >/dev/null 2>&1; then
        root_disk=$(lsblk -no PKNAME "$(findmnt -no SOURCE /)")
        # The data volume is the only disk besides the root disk without a file system; it may
        # appear a few seconds after boot.
        while [ -z "${device}" ] && [ "${waited}" -lt 120 ]; do
            for disk in $(lsblk -dpno NAME,TYPE | awk '$2 == "disk" { print $1 }'); do
                [ "$(basename "${disk}")" = "${root_disk}" ] && continue
                if [ -z "$(lsblk -no FSTYPE "${disk}" | tr -d '[:space:]')" ]; then
                    device=${disk}
                    break
                fi
            done
            if [ -z "${device}" ]; then
                sleep 5
                waited=$((waited + 5))
            fi
        done
        [ -n "${device}" ] || fail "the data volume did not appear within 120 s"
        mkfs.ext4 -q -L "${DATA_LABEL}" "${device}"
    fi
    grep -q "LABEL=${DATA_LABEL}" "${ROOT}/etc/fstab" ||
        echo "LABEL=${DATA_LABEL} ${DATA_DIR} ext4 defaults,nofail,noatime 0 2" >>"${ROOT}/etc/fstab"
    install -d -m 0755 "${ROOT}${DATA_DIR}"
    mountpoint -q "${ROOT}${DATA_DIR}" || mount "${ROOT}${DATA_DIR}"
    install -d -m 0755 "${ROOT}${DATA_DIR}/docker" "${ROOT}${DATA_DIR}/cache" "${ROOT}${DATA_DIR}/model"
}

configure_docker() {
    command -v docker >/dev/null 2>&1 || fail "docker is missing: use the ECS-optimized AL2023 Neuron AMI"
    install -d "${ROOT}/etc/docker" "${ROOT}/etc/systemd/system/docker.service.d"
    python3 - "${ROOT}/etc/docker/daemon.json" "${DATA_DIR}/docker" <<'PY'
import json, os, sys
path, data_root = sys.argv[1], sys.argv[2]
config = json.load(open(path)) if os.path.exists(path) else {}
config["data-root"] = data_root
json.dump(config, open(path, "w"), indent=2)
PY
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
        retry 5 bash -c 'aws ecr get-login-password --region "$1" | docker login --username AWS --password-stdin "$2"' \
            _ "${ECR_REGION}" "${ECR_REGISTRY}" || fail "docker login to ${ECR_REGISTRY} failed"
    fi
    retry 5 docker pull --quiet "${IMAGE}" || fail "cannot pull ${IMAGE}"
}

sync_artifacts() {
    [ -n "${ARTIFACT_URI:-}" ] || return 0
    retry 5 aws s3 sync --only-show-errors --region "${REGION}" "${ARTIFACT_URI}" "${ROOT}${DATA_DIR}/model" ||
        fail "cannot sync ${ARTIFACT_URI}"
}

install_units() {
    local units="${HOME_DIR}/serving/units" index upstreams=""
    install -m 0644 "${units}/cdk-neuron-replica@.service" "${units}/cdk-neuron-ready.service" \
        "${units}/cdk-neuron-metrics.service" "${ROOT}/etc/systemd/system/"
    if [ "${REPLICAS}" -gt 1 ]; then
        # Several replicas: a host nginx (Amazon Linux package) spreads requests over their loopback
        # ports on the port the load balancer targets.
        command -v nginx >/dev/null 2>&1 || retry 3 dnf install -y -q nginx || fail "cannot install nginx"
        for ((index = 0; index < REPLICAS; index++)); do
            upstreams+="        server 127.0.0.1:$((FIRST_REPLICA_PORT + index)) max_fails=1 fail_timeout=10s;"$'\n'
        done
        UPSTREAMS=${upstreams} SERVICE_PORT=${SERVICE_PORT} python3 - "${HOME_DIR}/serving/nginx.conf.in" "${CDK_NEURON_ETC}/nginx.conf" <<'PY'
import os, sys
text = open(sys.argv[1]).read()
text = text.replace("@SERVICE_PORT@", os.environ["SERVICE_PORT"]).replace("@UPSTREAMS@", os.environ["UPSTREAMS"].rstrip("\n"))
open(sys.argv[2], "w").write(text)
PY
        install -m 0644 "${units}/cdk-neuron-proxy.service" "${ROOT}/etc/systemd/system/"
    fi
    systemctl daemon-reload
    systemctl enable cdk-neuron-ready.service
}

install -d -m 0755 "${CDK_NEURON_ETC}" "${ROOT}/etc/systemd/system"
mount_data_volume
stop_ecs_agent
configure_docker
pull_image
sync_artifacts
install_units
if [ -r "${CDK_NEURON_ETC}/publisher.json" ]; then
    /bin/bash "${HOME_DIR}/monitoring/setup.sh" || fail "the Neuron metrics publisher did not start"
fi
# --no-block: cloud-init is itself a unit, and cdk-neuron-ready must not wait on it.
systemctl start --no-block cdk-neuron-ready.service
log "first boot done; cdk-neuron-ready takes over"
