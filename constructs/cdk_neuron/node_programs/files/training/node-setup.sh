#!/bin/bash
# cdk-neuron training node setup: runs from user data after the EFA boothook, before the ECS agent.
#
# - Batch: the ECS agent keeps job containers (awsvpc mode) away from the metadata service.
# - First, the Neuron devices: at least NEURON_DEVICES of /dev/neuronN (one per chip, what every job
#   container is given) and a working neuron-ls; otherwise no job may land here (the bootstrap powers
#   the node off, and the boot-failure bound and alarm count it).
# - Instance-store NVMe (when the type has it): striped (RAID 0) into one XFS file system at
#   SCRATCH_DIR, mounted by label with nofail so a stop/start, which empties instance store, does
#   not hang the boot. The disks are found by their Nitro model string, so the root EBS volume is
#   never taken whatever order the kernel enumerates controllers in.
# - Self-managed node group only (ENGINE=auto-scaling-group): no ECS agent; host limits for EFA
#   (memlock) and many ranks (nofile); the checkpoint file system mounted with TLS and IAM through
#   its access point; the training environment exported to every login shell.
# - With EFA (TOPOLOGY_FILE set): this instance's DescribeInstanceTopology answer, asked with the
#   instance role, written to TOPOLOGY_FILE for the launcher (the job definition mounts its directory
#   read-only). On UltraServer servers (ULTRASERVER=1) it asks up to TOPOLOGY_ATTEMPTS times, waiting
#   TOPOLOGY_STEP x attempt seconds in between (cdk_neuron.timeouts: about five minutes), for EC2 to
#   fill in CapacityBlockId, which it does eventually after launch. A node that cannot read its
#   topology still boots: the launcher refuses only plans that need it.
# - Node metrics, when the cluster enables them (publisher.json present): monitoring/setup.sh.
# Any other failure stops the boot: the bootstrap powers the node off to be replaced.
set -euo pipefail
CDK_NEURON_PROGRAM=training-setup
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
load_settings "${CDK_NEURON_ETC}/training.env"
require ENGINE
INSTANCE_STORE_MODEL='Amazon EC2 NVMe Instance Storage'
# At most 12 characters: mkfs.xfs refuses a longer label (xfsprogs man/man8/mkfs.xfs.8.in, "-L label").
SCRATCH_LABEL=cdkn-scratch

setup_scratch() {
    local disks=() model device
    mountpoint -q "${ROOT}${SCRATCH_DIR}" && return 0
    for model in "${ROOT}"/sys/block/nvme*n1/device/model; do
        [ -e "${model}" ] || continue
        if grep -q "${INSTANCE_STORE_MODEL}" "${model}"; then
            device=${model#"${ROOT}"/sys/block/}
            disks+=("/dev/${device%%/*}")
        fi
    done
    [ "${#disks[@]}" -gt 0 ] || die "no instance-store NVMe disk found for ${SCRATCH_DIR}"
    if [ "${#disks[@]}" -gt 1 ]; then
        ensure_command mdadm mdadm || die "no mdadm"
        mdadm --create /dev/md/scratch --run --force --level=0 --raid-devices="${#disks[@]}" "${disks[@]}"
        device=/dev/md/scratch
    else
        device=${disks[0]}
    fi
    ensure_command mkfs.xfs xfsprogs || die "no mkfs.xfs"
    mkfs.xfs -f -L "${SCRATCH_LABEL}" "${device}"
    mkdir -p "${ROOT}${SCRATCH_DIR}"
    mount -o noatime "${device}" "${ROOT}${SCRATCH_DIR}"
    chmod 1777 "${ROOT}${SCRATCH_DIR}"
    grep -qs " ${SCRATCH_DIR} " "${ROOT}/etc/fstab" ||
        echo "LABEL=${SCRATCH_LABEL} ${SCRATCH_DIR} xfs defaults,noatime,nofail 0 2" >>"${ROOT}/etc/fstab"
    log "scratch: ${#disks[@]} NVMe disk(s) at ${SCRATCH_DIR}"
}

# block_task_metadata: AWS Batch runs multi-node jobs in awsvpc mode, where the hop limit does not keep a
# container from the metadata service and so from the instance role's credentials; the ECS agent
# refuses it to awsvpc tasks with ECS_AWSVPC_BLOCK_IMDS ("Amazon EC2 container instance security
# considerations for Amazon ECS"). Jobs keep their own role through the ECS credentials endpoint.
# Written before the agent starts (this runs from user data, ahead of it).
block_task_metadata() {
    local config="${ROOT}/etc/ecs/ecs.config"
    install -d "${ROOT}/etc/ecs"
    grep -qs '^ECS_AWSVPC_BLOCK_IMDS=true$' "${config}" || echo 'ECS_AWSVPC_BLOCK_IMDS=true' >>"${config}"
}

stop_ecs_agent() {
    # --no-block: the agent's start is queued behind cloud-init, which runs this script.
    if systemctl cat ecs.service >/dev/null 2>&1; then
        systemctl disable --now --no-block ecs.service
    fi
}

host_limits() {
    # memlock unlimited: EFA registers (pins) memory. nofile: 32+ ranks per node each hold many EFA
    # and Neuron handles; a low limit shows up as "Timeout waiting for RX" (aws-neuron-sdk#713).
    install -d "${ROOT}/etc/security/limits.d"
    cat >"${ROOT}/etc/security/limits.d/90-cdk-neuron.conf" <<LIMITS
* soft memlock unlimited
* hard memlock unlimited
* soft nofile ${NOFILE_LIMIT}
* hard nofile ${NOFILE_LIMIT}
LIMITS
}

mount_checkpoints() {
    local options="tls,iam,accesspoint=${CHECKPOINT_ACCESS_POINT_ID}"
    local source="${CHECKPOINT_FILE_SYSTEM_ID}:/"
    ensure_command mount.efs amazon-efs-utils || die "no mount.efs"
    mkdir -p "${ROOT}${CHECKPOINT_DIR}"
    mountpoint -q "${ROOT}${CHECKPOINT_DIR}" ||
        retry 5 mount -t efs -o "${options}" "${source}" "${ROOT}${CHECKPOINT_DIR}" ||
        die "cannot mount ${source} at ${CHECKPOINT_DIR}"
    grep -qs " ${CHECKPOINT_DIR} efs " "${ROOT}/etc/fstab" ||
        echo "${source} ${CHECKPOINT_DIR} efs _netdev,${options} 0 0" >>"${ROOT}/etc/fstab"
}

export_profile() {
    # The training environment (training-profile.env) for SSM sessions and Slurm/Ray workers.
    install -d "${ROOT}/etc/profile.d"
    cat >"${ROOT}/etc/profile.d/cdk-neuron-training.sh" <<'PROFILE'
set -a
. /etc/cdk-neuron/training-profile.env
set +a
PROFILE
    chmod 0644 "${ROOT}/etc/profile.d/cdk-neuron-training.sh"
}

record_topology() {
    local instance_id answer="" attempt target="${ROOT}${TOPOLOGY_FILE}"
    instance_id=$(imds meta-data/instance-id) || {
        log "topology: no instance id from the metadata service; ranks keep the scheduler's order"
        return 0
    }
    install -d -m 0755 "$(dirname "${target}")"
    for ((attempt = 1; attempt <= TOPOLOGY_ATTEMPTS; attempt++)); do
        if answer=$(aws ec2 describe-instance-topology --region "${REGION}" --instance-ids "${instance_id}" \
            --output json); then
            if [ "${ULTRASERVER:-0}" != 1 ] || grep -q '"CapacityBlockId": "' <<<"${answer}"; then
                break
            fi
            log "topology: no CapacityBlockId yet (attempt ${attempt}/${TOPOLOGY_ATTEMPTS})"
        else
            answer=""
            log "topology: DescribeInstanceTopology failed (attempt ${attempt}/${TOPOLOGY_ATTEMPTS})"
        fi
        if ((attempt < TOPOLOGY_ATTEMPTS)); then sleep $((attempt * TOPOLOGY_STEP)); fi
    done
    if [ -z "${answer}" ]; then
        log "topology: none recorded; plans whose groups span instances will be refused at job start"
        return 0
    fi
    printf '%s\n' "${answer}" >"${target}.new"
    chmod 0644 "${target}.new"
    mv "${target}.new" "${target}"
    log "topology: recorded in ${TOPOLOGY_FILE}"
}

require NEURON_DEVICES NEURON_DEVICE_WAIT
check_neuron_devices "${NEURON_DEVICES}" "${NEURON_DEVICE_WAIT}" || die "the Neuron devices are not usable"
if [ -n "${SCRATCH_DIR:-}" ]; then
    setup_scratch
fi
if [ -n "${TOPOLOGY_FILE:-}" ]; then
    require REGION TOPOLOGY_ATTEMPTS TOPOLOGY_STEP
    record_topology
fi
if [ "${ENGINE}" = batch ]; then
    block_task_metadata
fi
if [ "${ENGINE}" = auto-scaling-group ]; then
    require NOFILE_LIMIT
    stop_ecs_agent
    host_limits
    if [ -n "${CHECKPOINT_FILE_SYSTEM_ID:-}" ]; then
        require CHECKPOINT_ACCESS_POINT_ID CHECKPOINT_DIR
        mount_checkpoints
    fi
    export_profile
fi
if [ -r "${CDK_NEURON_ETC}/publisher.json" ]; then
    /bin/bash "${HOME_DIR}/monitoring/setup.sh"
fi
log "training node ready"
