#!/bin/bash
# cdk-neuron compile, step 3 of 3: upload the export, then its manifest, to the artifact prefix.
#
# Runs in the AWS CLI image (ModelCompilation's "upload" container, started only when the export
# container exited 0). The manifest goes last, on its own: a prefix holds cdk-neuron-artifact.json
# only once every file it lists is there, so a fleet or preflight never trusts a half-written
# artifact. An existing manifest at the prefix stops the upload: artifacts are written once.
#
# Settings: ARTIFACT_URI (s3://bucket/prefix/), WORK_DIR.
set -euo pipefail
CDK_NEURON_PROGRAM=compile-upload
log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
die() {
    log "FAILED: $*"
    exit 1
}

: "${ARTIFACT_URI:?}" "${WORK_DIR:?}"
manifest=cdk-neuron-artifact.json
destination="${ARTIFACT_URI%/}/"
[ -f "${WORK_DIR}/export/${manifest}" ] || die "the export wrote no ${manifest}"
if aws s3 ls "${destination}${manifest}" >/dev/null 2>&1; then
    die "${destination}${manifest} exists: artifacts are written once; compile to a new prefix"
fi
log "uploading to ${destination}"
aws s3 sync "${WORK_DIR}/export/" "${destination}" --exclude "${manifest}" --only-show-errors ||
    die "aws s3 sync to ${destination}"
aws s3 cp "${WORK_DIR}/export/${manifest}" "${destination}${manifest}" --only-show-errors ||
    die "aws s3 cp ${manifest}"
log "done: ${destination}${manifest}"
