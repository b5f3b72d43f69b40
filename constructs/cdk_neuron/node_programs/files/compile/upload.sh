#!/bin/bash
# cdk-neuron compile, step 3 of 3: upload the export, then its manifest, to a new artifact prefix.
#
# Runs in the AWS CLI image (ModelCompilation's "upload" container, the task's essential one: the
# task stops with it, and its exit code says whether the artifact was written). Artifacts are
# written once:
# - the prefix must be empty before anything is written (`list-objects-v2 --max-keys 1`; any error
#   stops the upload, so "cannot tell" is never read as "empty");
# - the files go with `aws s3 cp --recursive`, which writes every file (`sync` would skip an object
#   of the same size left by an earlier attempt, and the manifest would then describe bytes that are
#   not there);
# - the manifest goes last, alone, with `put-object --if-none-match '*'`: S3 refuses it with 412
#   Precondition Failed if another writer got there first ("How to prevent object overwrites with
#   conditional writes", Amazon S3 User Guide,
#   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html, read 2026-12-02).
#   A prefix holds cdk-neuron-artifact.json only once every file it lists is there, so a fleet or
#   preflight never trusts a half-written artifact.
#
# Settings: ARTIFACT_URI (s3://bucket/prefix/), ARTIFACT_PREFIX (the key prefix the task may write
# under, from the task definition), WORK_DIR.
set -euo pipefail
CDK_NEURON_PROGRAM=compile-upload
log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
die() {
    log "FAILED: $*"
    exit 1
}

: "${ARTIFACT_URI:?}" "${WORK_DIR:?}" "${ARTIFACT_PREFIX:?}"
[ -f "${WORK_DIR}/status/export.ok" ] ||
    die "the export step did not succeed (its log: stream prefix export); nothing uploaded"
manifest=cdk-neuron-artifact.json
destination="${ARTIFACT_URI%/}/"
location="${destination#s3://}"
bucket="${location%%/*}"
key="${location#*/}"
case "${key}" in
    "${ARTIFACT_PREFIX}"?*) ;;
    *) die "${destination} is outside ${ARTIFACT_PREFIX}, the only prefix this task may write: use s3://${bucket}/${ARTIFACT_PREFIX}<name>/" ;;
esac
[ -f "${WORK_DIR}/export/${manifest}" ] || die "the export wrote no ${manifest}"

count=$(aws s3api list-objects-v2 --bucket "${bucket}" --prefix "${key}" --max-keys 1 \
    --query KeyCount --output text) || die "listing ${destination}: cannot tell whether it is empty"
[ "${count}" = "0" ] ||
    die "${destination} already holds objects: artifacts are written once, to a new prefix; compile to another --artifact-uri"

log "uploading to ${destination}"
aws s3 cp "${WORK_DIR}/export/" "${destination}" --recursive --exclude "${manifest}" --only-show-errors ||
    die "aws s3 cp to ${destination}"
if ! answer=$(aws s3api put-object --bucket "${bucket}" --key "${key}${manifest}" \
    --body "${WORK_DIR}/export/${manifest}" --if-none-match '*' 2>&1); then
    case "${answer}" in
        *PreconditionFailed* | *"(412)"*)
            die "${destination}${manifest} was written by another compile while this one uploaded: its files may be mixed with this one's; compile again to a new prefix" ;;
        *) die "writing ${destination}${manifest}: ${answer}" ;;
    esac
fi
log "done: ${destination}${manifest}"
