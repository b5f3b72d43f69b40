#!/bin/bash
# cdk-neuron compile, step 1 of 3: bring an S3 source checkpoint onto the task's shared volume.
#
# Runs in the AWS CLI image (ModelCompilation's "fetch" container; the task definition replaces the
# image's `aws` entrypoint with `bash -c <this file>`), or in the Neuron training DLC on AWS Batch
# (BatchModelCompilation: `timeout ... bash /opt/cdk-neuron/compile/fetch.sh` through its `eval` entrypoint). Only an S3 source is fetched here: a
# CheckpointStore checkpoint is mounted read-only into the export container, and a Hub source is
# downloaded there with the serving image's own huggingface_hub.
#
# Settings (container environment): SOURCE_KIND (s3 | checkpoint | hub), SOURCE_URI, CONFIG_FROM
# (hub:... or s3://...: where a checkpoint's missing config.json and tokenizer are), WORK_DIR.
# On success it leaves ${WORK_DIR}/status/fetch.ok: the export step (dependsOn COMPLETE) starts only
# with it.
set -euo pipefail
CDK_NEURON_PROGRAM=compile-fetch
log() { printf 'cdk-neuron[%s]: %s\n' "${CDK_NEURON_PROGRAM}" "$*" >&2; }
die() {
    log "FAILED: $*"
    exit 1
}

: "${SOURCE_KIND:?}" "${SOURCE_URI:?}" "${WORK_DIR:?}"
# Every step runs as root (neither image sets USER: aws/aws-cli docker/Dockerfile, optimum-neuron
# docker/vllm/Dockerfile @v0.4.5), so the shared volume keeps its default modes.
# Start from an empty work directory. A Fargate task's is new; a BatchModelCompilation job's is on the
# host's scratch, where an earlier job (or an earlier attempt of this one) may have left its files.
shopt -s dotglob nullglob
rm -rf -- "${WORK_DIR:?}"/*
shopt -u dotglob nullglob
mkdir -p "${WORK_DIR}/source" "${WORK_DIR}/export" "${WORK_DIR}/status"
case "${SOURCE_KIND}" in
    s3)
        log "fetching ${SOURCE_URI}"
        aws s3 sync "${SOURCE_URI%/}/" "${WORK_DIR}/source/" --only-show-errors ||
            die "aws s3 sync ${SOURCE_URI} (does the task role read it? ModelCompilation.grant_read_source)"
        [ -n "$(ls -A "${WORK_DIR}/source")" ] || die "nothing under ${SOURCE_URI}"
        ;;
    checkpoint | hub) log "${SOURCE_KIND} source: read by the export step" ;;
    *) die "SOURCE_KIND=${SOURCE_KIND}: use s3, checkpoint or hub" ;;
esac
# config.json and the tokenizer for a checkpoint that lacks them, when they are in S3 (CONFIG_FROM).
case "${CONFIG_FROM:-}" in
    s3://*)
        log "fetching config.json and tokenizer from ${CONFIG_FROM}"
        aws s3 cp "${CONFIG_FROM%/}/" "${WORK_DIR}/config/" --recursive --exclude '*' \
            --include '*.json' --include 'tokenizer*' --include '*.model' --include 'vocab*' \
            --include merges.txt --include '*.tiktoken' --exclude '*/*' --only-show-errors ||
            die "aws s3 cp ${CONFIG_FROM} (does the task role read it? ModelCompilation.grant_read_source)"
        [ -f "${WORK_DIR}/config/config.json" ] || die "no config.json under ${CONFIG_FROM}"
        ;;
esac
touch "${WORK_DIR}/status/fetch.ok"
