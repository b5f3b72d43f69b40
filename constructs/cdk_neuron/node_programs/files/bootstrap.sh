# shellcheck shell=bash
# cdk-neuron bootstrap: the only node code that travels in user data.
#
# EC2 caps user data at 16 KB, raw, before base64 ("Run commands when you launch an EC2 instance
# with user data input", Amazon EC2 User Guide). So user data holds just this and the node's
# settings; the programs themselves are one bundle, a CDK file asset in the account's bootstrap
# bucket, fetched here over the S3 gateway endpoint (or a NAT) and unpacked into /opt/cdk-neuron.
#
# cdk_neuron_bootstrap <program>: fetch the bundle unless this exact bundle is already unpacked
# (cloud-boothooks run at every boot), then run <program>, a path inside the bundle.
# cdk_neuron_give_up <why>: say so (on the console: `aws ec2 get-console-output`), count the failed
# boot (boot-failure.env: cdk_neuron.training.boot_failures) and power off: the launch templates
# terminate on an instance-initiated shutdown, so Auto Scaling or AWS Batch replaces the node.

# It runs on the left of `||` (see the last line of the user data), where bash ignores `set -e`, so
# every step that matters ends in `|| return 1`.
cdk_neuron_bootstrap() {
    local program=$1 home="${CDK_NEURON_ROOT:-}/opt/cdk-neuron" archive staging
    # shellcheck disable=SC1091
    . "${CDK_NEURON_ROOT:-}/etc/cdk-neuron/bundle.env" || return 1
    if [ ! -f "${home}/lib/common.sh" ] || [ "$(cat "${home}/bundle.key" 2>/dev/null)" != "${BUNDLE_KEY}" ]; then
        if ! command -v aws >/dev/null 2>&1; then
            # Amazon Linux 2023's minimal AMI (the ECS-optimized AMIs' base) has no AWS CLI; its
            # repositories are in S3, reached like the bundle itself.
            command -v dnf >/dev/null 2>&1 || {
                echo "cdk-neuron: no AWS CLI and no dnf to install it; use an AMI with AWS CLI v2" >&2
                return 1
            }
            dnf install -y -q awscli-2 || dnf install -y -q awscli-2 || return 1
        fi
        archive=$(mktemp)
        aws s3 cp --only-show-errors --region "${REGION}" "s3://${BUNDLE_BUCKET}/${BUNDLE_KEY}" "${archive}" ||
            aws s3 cp --only-show-errors --region "${REGION}" "s3://${BUNDLE_BUCKET}/${BUNDLE_KEY}" "${archive}" ||
            return 1
        staging="${home}.new"
        rm -rf "${staging}" || return 1
        mkdir -p "${staging}" || return 1
        python3 -m zipfile -e "${archive}" "${staging}" || return 1
        rm -f "${archive}"
        printf '%s\n' "${BUNDLE_KEY}" >"${staging}/bundle.key" || return 1
        rm -rf "${home}" || return 1
        mv "${staging}" "${home}" || return 1
    fi
    /bin/bash "${home}/${program}"
}

cdk_neuron_give_up() {
    # cloud-init copies user-data output to the serial console.
    echo "cdk-neuron: $* - this node cannot work and powers off to be replaced" >&2
    cdk_neuron_count_failed_boot || echo "cdk-neuron: the failed boot could not be counted" >&2
    poweroff
}

# Serving instances have no boot-failure.env (serving/lifecycle.sh records their failures).
cdk_neuron_count_failed_boot() {
    local settings="${CDK_NEURON_ROOT:-}/etc/cdk-neuron/boot-failure.env"
    [ -r "${settings}" ] || return 0
    # shellcheck disable=SC1090
    . "${settings}" || return 1
    # shellcheck disable=SC1091
    . "${CDK_NEURON_ROOT:-}/etc/cdk-neuron/bundle.env" || return 1
    command -v aws >/dev/null 2>&1 || return 1
    aws cloudwatch put-metric-data --region "${REGION}" --namespace "${BOOT_FAILURE_NAMESPACE}" \
        --metric-name "${BOOT_FAILURE_METRIC}" --dimensions "${BOOT_FAILURE_DIMENSIONS}" --unit Count --value 1
}
