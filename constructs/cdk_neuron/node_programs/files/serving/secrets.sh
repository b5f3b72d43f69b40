#!/bin/bash
# cdk-neuron-secrets (ExecStartPre of each replica when a Hugging Face token secret is configured):
# read the token from Secrets Manager onto tmpfs (/run), never onto disk or into the launch template.
set -euo pipefail
CDK_NEURON_PROGRAM=serving-secrets
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
load_settings "${CDK_NEURON_ETC}/fleet.env"
[ -n "${HF_TOKEN_SECRET_ARN:-}" ] || exit 0
[ -s "${ROOT}/run/cdk-neuron/hf-token.env" ] && exit 0
require REGION
install -d -m 0700 "${ROOT}/run/cdk-neuron"
token=$(aws secretsmanager get-secret-value --region "${REGION}" --secret-id "${HF_TOKEN_SECRET_ARN}" \
    --query SecretString --output text) || die "cannot read ${HF_TOKEN_SECRET_ARN}"
umask 077
printf 'HF_TOKEN=%s\n' "${token}" >"${ROOT}/run/cdk-neuron/hf-token.env.tmp"
mv "${ROOT}/run/cdk-neuron/hf-token.env.tmp" "${ROOT}/run/cdk-neuron/hf-token.env"
