#!/bin/bash
# cdk-neuron HyperPod lifecycle script: the OnInitComplete entry point (Extended mode).
#
# SageMaker HyperPod copies the cluster's lifecycle prefix (s3://sagemaker-.../lifecycle/<hash>/)
# to each node and runs this file as root after its own setup: Slurm (configured through the API),
# the Neuron driver and tools, EFA, and the health-monitoring agent are already in place
# ("ClusterLifeCycleConfig", Amazon SageMaker API Reference). So this script reaches no network
# beyond the VPC:
# - the training environment (training-profile.env: the plan's degrees, EFA settings,
#   NEURON_COMPILE_CACHE_URL, CHECKPOINT_DIR) is installed for login shells and for the jobs
#   (their sbatch script sources /etc/profile.d/cdk-neuron-training.sh; srun passes it to each node);
# - the node programs (the stack's bundle, copied beside this script as NODE_PROGRAMS) are unpacked
#   into /opt/cdk-neuron with python3's zipfile (the image has python3: HyperPod's own sample
#   lifecycle scripts are Python, run as `python3 -u lifecycle_script.py` by their on_create.sh,
#   aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/
#   base-config/on_create.sh @5195cad): hyperpod/slurm-step.sh, which each job step runs, and the
#   launcher;
# - with a checkpoint store: amazon-efs-utils, from the package copied beside this script when the
#   image lacks mount.efs (the HyperPod Slurm image is Ubuntu, whose archive has no efs-utils), then
#   the file system mounted with TLS and IAM through its access point (the store refuses anything
#   else), over NFS to its mount target in the VPC.
# Any failure exits non-zero: HyperPod then fails the node's creation and reports the lifecycle
# script's log in CloudWatch (/aws/sagemaker/Clusters/<name>/<id>), instead of a node that runs jobs
# without its checkpoints.
set -euo pipefail
CDK_NEURON_PROGRAM=hyperpod-lifecycle
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
# shellcheck source=../lib/common.sh
. "${HERE}/lib/common.sh"
load_settings "${HERE}/hyperpod.env"
require CLUSTER_NAME NODE_PROGRAMS
INSTALL_DIR="${ROOT}/opt/cdk-neuron"

install_profile() {
    install -d "${ROOT}/etc/cdk-neuron" "${ROOT}/etc/profile.d"
    install -m 0644 "${HERE}/training-profile.env" "${ROOT}/etc/cdk-neuron/training-profile.env"
    cat >"${ROOT}/etc/profile.d/cdk-neuron-training.sh" <<'PROFILE'
# cdk-neuron: the training environment of this HyperPod cluster (written by its lifecycle script).
set -a
. /etc/cdk-neuron/training-profile.env
set +a
PROFILE
    chmod 0644 "${ROOT}/etc/profile.d/cdk-neuron-training.sh"
}

install_programs() {
    [ -r "${HERE}/${NODE_PROGRAMS}" ] || die "${NODE_PROGRAMS} is not in the lifecycle prefix"
    command -v python3 >/dev/null 2>&1 || die "python3 is missing: the job step and the launcher need it"
    # A fresh tree each time: a re-run (UpdateClusterSoftware) must not keep programs a new bundle dropped.
    rm -rf "${INSTALL_DIR}.new"
    install -d "${INSTALL_DIR}.new"
    python3 -m zipfile -e "${HERE}/${NODE_PROGRAMS}" "${INSTALL_DIR}.new" ||
        die "cannot unpack ${NODE_PROGRAMS}"
    [ -r "${INSTALL_DIR}.new/hyperpod/slurm-step.sh" ] || die "${NODE_PROGRAMS} holds no hyperpod/slurm-step.sh"
    rm -rf "${INSTALL_DIR}"
    mv "${INSTALL_DIR}.new" "${INSTALL_DIR}"
    chmod -R a+rX,go-w "${INSTALL_DIR}"
}

install_efs_utils() {
    command -v mount.efs >/dev/null 2>&1 && return 0
    require EFS_UTILS_PACKAGE
    [ -r "${HERE}/${EFS_UTILS_PACKAGE}" ] ||
        die "mount.efs is missing and ${EFS_UTILS_PACKAGE} is not in the lifecycle prefix"
    dpkg -i "${HERE}/${EFS_UTILS_PACKAGE}" || die "cannot install ${EFS_UTILS_PACKAGE} (dpkg -i)"
    command -v mount.efs >/dev/null 2>&1 || die "${EFS_UTILS_PACKAGE} installed no mount.efs"
}

mount_checkpoints() {
    local options="tls,iam,accesspoint=${CHECKPOINT_ACCESS_POINT_ID}"
    local source="${CHECKPOINT_FILE_SYSTEM_ID}:/"
    mkdir -p "${ROOT}${CHECKPOINT_DIR}"
    mountpoint -q "${ROOT}${CHECKPOINT_DIR}" ||
        retry 5 mount -t efs -o "${options}" "${source}" "${ROOT}${CHECKPOINT_DIR}" ||
        die "cannot mount ${source} at ${CHECKPOINT_DIR}"
    grep -qs " ${CHECKPOINT_DIR} efs " "${ROOT}/etc/fstab" ||
        echo "${source} ${CHECKPOINT_DIR} efs _netdev,${options} 0 0" >>"${ROOT}/etc/fstab"
}

main() {
    log "setting up a node of HyperPod cluster ${CLUSTER_NAME}"
    install_profile
    install_programs
    if [ -n "${CHECKPOINT_FILE_SYSTEM_ID:-}" ]; then
        require CHECKPOINT_ACCESS_POINT_ID CHECKPOINT_DIR
        install_efs_utils
        mount_checkpoints
    fi
    log "done"
}

main "$@"
