#!/bin/bash
# cdk-neuron training node: install the pinned EFA software before the ECS agent starts.
#
# Runs from a cloud-boothook, early in every boot, ahead of cloud-init's final stage and so ahead of
# the ECS agent, which AWS Batch needs before it places a job. The ECS-optimized AL2023 Neuron AMI
# installs the Neuron driver and tools but not the EFA software (aws/amazon-ecs-ami
# scripts/enable-ecs-agent-inferentia-support.sh), and the AWS Batch EFA guide requires the EFA
# driver on the host; device RDMA (FI_EFA_USE_DEVICE_RDMA=1) needs the out-of-tree efa module the
# installer builds. `--minimal` installs that module and rdma-core only: the job images bring their
# own libfabric ("Get started with EFA", Amazon EC2 User Guide).
#
# The installer tarball is the pinned version, copied into the cluster's own bucket at deployment
# and checked against its pinned SHA-256 both there and here. Idempotent: a node that already has
# that version only loads the module. Any failure stops the boot: the bootstrap then powers the node
# off and AWS Batch (or the Auto Scaling group) replaces it, rather than running jobs without EFA.
set -euo pipefail
CDK_NEURON_PROGRAM=efa-install
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
load_settings "${CDK_NEURON_ETC}/training.env"
require REGION EFA_INSTALLER_VERSION EFA_INSTALLER_SHA256 EFA_INSTALLER_BUCKET EFA_INSTALLER_KEY EFA_DEVICES

installed_version() {
    sed -n 's/^# EFA installer version: //p' "${ROOT}/opt/amazon/efa_installed_packages" 2>/dev/null
}

efa_device_count() {
    local devices=("${ROOT}"/sys/class/infiniband/*)
    [ -e "${devices[0]}" ] || {
        echo 0
        return
    }
    echo "${#devices[@]}"
}

if [ "$(installed_version)" = "${EFA_INSTALLER_VERSION}" ]; then
    log "EFA installer ${EFA_INSTALLER_VERSION} is already installed"
else
    workdir=$(mktemp -d)
    trap 'rm -rf "${workdir}"' EXIT
    retry 5 aws s3 cp --only-show-errors --region "${REGION}" \
        "s3://${EFA_INSTALLER_BUCKET}/${EFA_INSTALLER_KEY}" "${workdir}/efa.tar.gz" ||
        die "cannot download s3://${EFA_INSTALLER_BUCKET}/${EFA_INSTALLER_KEY}"
    verify_sha256 "${workdir}/efa.tar.gz" "${EFA_INSTALLER_SHA256}" ||
        die "the EFA installer is not the pinned ${EFA_INSTALLER_VERSION}"
    tar -xzf "${workdir}/efa.tar.gz" -C "${workdir}"
    (cd "${workdir}/aws-efa-installer" && ./efa_installer.sh -y --minimal) ||
        die "efa_installer.sh ${EFA_INSTALLER_VERSION} failed"
    [ "$(installed_version)" = "${EFA_INSTALLER_VERSION}" ] ||
        die "efa_installer.sh finished but EFA ${EFA_INSTALLER_VERSION} is not recorded as installed"
fi
modprobe efa || die "the efa kernel module does not load"
found=$(efa_device_count)
[ "${found}" -ge "${EFA_DEVICES}" ] || die "${found} EFA devices found, ${EFA_DEVICES} expected"
log "EFA ${EFA_INSTALLER_VERSION} ready: ${found} devices"
