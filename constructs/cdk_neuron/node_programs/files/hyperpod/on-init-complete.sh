#!/bin/bash
# cdk-neuron HyperPod lifecycle script: the OnInitComplete entry point (Extended mode).
#
# SageMaker HyperPod copies the cluster's lifecycle prefix (s3://sagemaker-.../lifecycle/<hash>/)
# to each node and runs this file as root after its own setup: Slurm (configured through the API),
# the Neuron driver and tools, EFA, and the health-monitoring agent are already in place
# ("ClusterLifeCycleConfig", Amazon SageMaker API Reference). Without a job image this script reaches
# no network beyond the VPC; with one (CONTAINERS=1) it installs Enroot and Pyxis from the Ubuntu
# archive and github.com, which only a NAT routes (cdk_neuron.training.hyperpod_containers):
# - the training environment (training-profile.env: the plan's degrees, EFA settings,
#   NEURON_COMPILE_CACHE_URL, CHECKPOINT_DIR) is installed for login shells and for the jobs
#   (their sbatch script sources /etc/profile.d/cdk-neuron-training.sh; srun passes it to each node);
# - the node programs (the stack's bundle, copied beside this script as NODE_PROGRAMS) are unpacked
#   into /opt/cdk-neuron with python3's zipfile (the image has python3: HyperPod's own sample
#   lifecycle scripts are Python, run as `python3 -u lifecycle_script.py` by their on_create.sh,
#   aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/
#   base-config/on_create.sh @5195cad): hyperpod/slurm-step.sh, which each job step runs, and the
#   launcher;
# - with a checkpoint store: amazon-efs-utils, from the package (or directory of packages) copied
#   beside this script when the image lacks mount.efs (the HyperPod Slurm image is Ubuntu, whose
#   archive has no efs-utils), installed with apt-get without downloading anything, then
#   the file system mounted with TLS and IAM through its access point (the store refuses anything
#   else), over NFS to its mount target in the VPC.
# - with a job image: Enroot and Pyxis (install_containers), so each job step runs in the image
#   (srun --container-image), with ECR credentials for Enroot;
# - on the controller (controller.sh runs this script with CDK_NEURON_NODE_ROLE=controller), the
#   cluster's controller_program, when it has one, starts in the background as a transient systemd
#   unit with the training profile loaded; this script does not wait for it (Slurm may not answer
#   until every node's lifecycle script has finished).
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

# node_release: this node's Ubuntu release (VERSION_ID of /etc/os-release, os-release(5)); empty when unknown.
node_release() {
    [ -r "${ROOT}/etc/os-release" ] || return 0
    sed -n 's/^VERSION_ID=//p' "${ROOT}/etc/os-release" | tr -d "\"'" | head -n 1
}

install_efs_utils() {
    command -v mount.efs >/dev/null 2>&1 && return 0
    require EFS_UTILS_PACKAGE EFS_UTILS_UBUNTU
    local release
    release="$(node_release)"
    [ -n "${release}" ] || die "cannot read VERSION_ID from /etc/os-release: the node's Ubuntu release is unknown, so ${EFS_UTILS_PACKAGE} (built for Ubuntu ${EFS_UTILS_UBUNTU}) is not installed"
    # Packages built on another release depend on library versions this one lacks (or install, and break).
    [ "${release}" = "${EFS_UTILS_UBUNTU}" ] ||
        die "${EFS_UTILS_PACKAGE} was built for Ubuntu ${EFS_UTILS_UBUNTU}, but this node runs Ubuntu ${release}: build amazon-efs-utils (and 'apt-get download stunnel4 nfs-common') on Ubuntu ${release}, and set efs_utils_release='${release}' (cdk.json training.efs_utils_release)"
    local package="${HERE}/${EFS_UTILS_PACKAGE}" staged=() unpacked
    [ -r "${package}" ] || die "mount.efs is missing and ${EFS_UTILS_PACKAGE} is not in the lifecycle prefix"
    case "${package}" in
        *.zip) # a directory of .debs: amazon-efs-utils and the dependencies the image lacks
            unpacked="$(mktemp -d)"
            python3 -m zipfile -e "${package}" "${unpacked}" || die "cannot unpack ${EFS_UTILS_PACKAGE}"
            shopt -s nullglob
            staged=("${unpacked}"/*.deb)
            shopt -u nullglob
            ;;
        *) staged=("${package}") ;;
    esac
    ((${#staged[@]} > 0)) || die "${EFS_UTILS_PACKAGE} holds no .deb file"
    # apt-get installs local .debs with their dependencies resolved among them and what the image has;
    # --no-download: nothing is fetched (no route may exist), so a missing dependency fails here, by
    # name, instead of leaving dpkg's half-configured package (apt-get(8); efs-utils' Debian control
    # file depends on python3, nfs-common, stunnel4, openssl and util-linux, aws/efs-utils).
    apt-get install -y --no-download "${staged[@]}" ||
        die "cannot install ${EFS_UTILS_PACKAGE} offline: apt-get names the dependency the image lacks above. Stage it beside the package: on the HyperPod image's Ubuntu release, put amazon-efs-utils*.deb and the .debs of 'apt-get download stunnel4 nfs-common' (and their missing dependencies) in one directory and pass that directory as efs_utils_package"
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

# The directory Enroot keeps images and containers in: the instance store when the image mounted it,
# else HyperPod's secondary volume, else /tmp (the order of the HyperPod sample's
# install_enroot_pyxis.sh; a Neuron DLC is several GB, unpacked once per node and job).
enroot_base() {
    local where
    for where in /opt/dlami/nvme /opt/sagemaker; do
        if mountpoint -q "${ROOT}${where}"; then
            echo "${where}"
            return 0
        fi
    done
    echo /tmp
}

# install_containers: Enroot and Pyxis, so jobs run in the cluster's job image (srun --container-image).
# Everything here comes from outside the VPC (the Ubuntu archive, github.com: a NAT; the app refuses
# engine hyperpod without one) except the image itself (ECR). A re-run (UpdateClusterSoftware, a
# replaced node) installs again only what is missing and rewrites the configuration.
install_containers() {
    require ENROOT_VERSION PYXIS_VERSION APT_PACKAGES ENROOT_RELEASES PYXIS_ARCHIVE
    local slurm="${ROOT}/opt/slurm" arch work base packages
    [ -r "${slurm}/include/slurm/spank.h" ] ||
        die "${slurm}/include/slurm/spank.h is missing: Pyxis is built against the image's Slurm headers"
    read -r -a packages <<<"${APT_PACKAGES}"
    retry 3 apt-get -o DPkg::Lock::Timeout=300 update ||
        die "apt-get update failed: the node needs a route to the Ubuntu archive (a NAT)"
    retry 3 apt-get -o DPkg::Lock::Timeout=300 install -y "${packages[@]}" ||
        die "cannot install ${APT_PACKAGES} from the Ubuntu archive (apt-get's reason is above)"
    arch="$(dpkg --print-architecture)" || die "dpkg cannot name the architecture"
    work="$(mktemp -d)"
    if ! enroot version 2>/dev/null | grep -qx "${ENROOT_VERSION}"; then
        local deb
        for deb in "enroot_${ENROOT_VERSION}-1_${arch}.deb" "enroot+caps_${ENROOT_VERSION}-1_${arch}.deb"; do
            retry 3 curl -fsSL --proto '=https' -o "${work}/${deb}" "${ENROOT_RELEASES}/v${ENROOT_VERSION}/${deb}" ||
                die "cannot download ${deb} from ${ENROOT_RELEASES} (a NAT must route github.com)"
        done
        apt-get -o DPkg::Lock::Timeout=300 install -y "${work}/enroot_${ENROOT_VERSION}-1_${arch}.deb" \
            "${work}/enroot+caps_${ENROOT_VERSION}-1_${arch}.deb" || die "cannot install Enroot ${ENROOT_VERSION}"
    fi
    if [ ! -r "${ROOT}/usr/local/share/pyxis/pyxis.conf" ] ||
        ! grep -qs "^${PYXIS_VERSION}\$" "${ROOT}/usr/local/share/pyxis/cdk-neuron-version"; then
        retry 3 curl -fsSL --proto '=https' -o "${work}/pyxis.tar.gz" "${PYXIS_ARCHIVE}/v${PYXIS_VERSION}.tar.gz" ||
            die "cannot download Pyxis ${PYXIS_VERSION} from ${PYXIS_ARCHIVE} (a NAT must route github.com)"
        tar -xzf "${work}/pyxis.tar.gz" -C "${work}" || die "cannot unpack Pyxis ${PYXIS_VERSION}"
        # CPPFLAGS from the environment: Pyxis's Makefile appends it to its own (`CPPFLAGS := ... $(CPPFLAGS)`);
        # given as a make argument it would replace them.
        CPPFLAGS="-I ${slurm}/include" make -C "${work}/pyxis-${PYXIS_VERSION}" ||
            die "cannot build Pyxis ${PYXIS_VERSION} against ${slurm}/include"
        make -C "${work}/pyxis-${PYXIS_VERSION}" install || die "cannot install Pyxis ${PYXIS_VERSION}"
        echo "${PYXIS_VERSION}" >"${ROOT}/usr/local/share/pyxis/cdk-neuron-version"
    fi
    rm -rf "${work}"
    # Pyxis's plugstack line, once (Slurm reads plugstack.conf beside slurm.conf; a wildcard include
    # does not work in configless mode, the HyperPod sample's slurm_fix_plugstackconf.sh).
    install -d "${slurm}/etc/plugstack.conf.d"
    ln -sfn /usr/local/share/pyxis/pyxis.conf "${slurm}/etc/plugstack.conf.d/pyxis.conf"
    grep -qsx "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf" "${slurm}/etc/plugstack.conf" ||
        echo "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf" >>"${slurm}/etc/plugstack.conf"
    base="$(enroot_base)"
    install -d -m 1777 "${ROOT}${base}/enroot" "${ROOT}${base}/enroot/cache" "${ROOT}${base}/enroot/data" \
        "${ROOT}${base}/enroot/runtime" "${ROOT}${base}/enroot/tmp"
    install -d -m 0755 "${ROOT}/etc/enroot/cdk-neuron"
    # Enroot's settings: per-user runtime and data under the store; the whole /dev (the NeuronCores and
    # the EFA devices) in the container; no home mount; a writable root file system.
    cat >"${ROOT}/etc/enroot/enroot.conf" <<CONF
# cdk-neuron: written by the HyperPod lifecycle script (see NVIDIA/enroot doc/configuration.md).
ENROOT_RUNTIME_PATH        ${base}/enroot/runtime/user-\$(id -u)
ENROOT_CACHE_PATH          ${base}/enroot/cache
ENROOT_DATA_PATH           ${base}/enroot/data/user-\$(id -u)
ENROOT_TEMP_PATH           ${base}/enroot/tmp
ENROOT_CONFIG_PATH         /etc/enroot/cdk-neuron
ENROOT_SQUASH_OPTIONS      -comp lzo -noI -noD -noF -noX -no-duplicates
ENROOT_ROOTFS_WRITABLE     yes
ENROOT_MOUNT_HOME          no
ENROOT_RESTRICT_DEV        no
CONF
    # ECR: Enroot runs the command in the password field at every import (NVIDIA/enroot doc/cmd/import.md).
    if [ -n "${ECR_REGISTRY:-}" ]; then
        command -v aws >/dev/null 2>&1 || die "the aws CLI is missing: Enroot logs in to ${ECR_REGISTRY} with it"
        # shellcheck disable=SC2016 # the $(...) is Enroot's to run, at import time
        printf 'machine %s login AWS password $(aws ecr get-login-password --region %s)\n' \
            "${ECR_REGISTRY}" "${ECR_REGION}" >"${ROOT}/etc/enroot/cdk-neuron/.credentials"
        chmod 0644 "${ROOT}/etc/enroot/cdk-neuron/.credentials"
    fi
    # slurmd (and slurmctld) load SPANK plugins at start.
    local unit
    for unit in slurmctld slurmd; do
        if systemctl is-active --quiet "${unit}"; then
            systemctl restart "${unit}" || die "cannot restart ${unit} to load Pyxis"
        fi
    done
    log "Enroot ${ENROOT_VERSION} and Pyxis ${PYXIS_VERSION} installed; Enroot data under ${base}/enroot"
}

start_controller_program() {
    local program="${ROOT}/etc/cdk-neuron/controller-program.sh"
    install -m 0700 "${HERE}/controller-program.sh" "${program}"
    install -m 0600 "${HERE}/controller-program.env" "${ROOT}/etc/cdk-neuron/controller-program.env"
    command -v systemd-run >/dev/null 2>&1 || die "systemd-run is missing: cannot start the controller program"
    # A replaced or re-run controller starts it again; a unit of the same name still running is stopped first.
    if systemctl is-active --quiet cdk-neuron-controller-program.service; then
        systemctl stop cdk-neuron-controller-program.service || die "cannot stop the running controller program"
    fi
    systemd-run --unit=cdk-neuron-controller-program --collect --no-block \
        --setenv=CDK_NEURON_CONTROLLER_SETTINGS=/etc/cdk-neuron/controller-program.env \
        --property=StandardOutput=append:/var/log/cdk-neuron-controller-program.log \
        --property=StandardError=append:/var/log/cdk-neuron-controller-program.log \
        /bin/bash -c '. /etc/profile.d/cdk-neuron-training.sh && exec /bin/bash /etc/cdk-neuron/controller-program.sh' ||
        die "cannot start the controller program (systemd-run)"
    log "controller program started (unit cdk-neuron-controller-program, log /var/log/cdk-neuron-controller-program.log)"
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
    if [ -n "${CONTAINERS:-}" ]; then
        install_containers
    fi
    if [ "${CDK_NEURON_NODE_ROLE:-worker}" = controller ] && [ -r "${HERE}/controller-program.sh" ]; then
        start_controller_program
    fi
    log "done"
}

main "$@"
