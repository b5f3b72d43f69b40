#!/bin/bash
# Reproduction of the SageMaker entrypoint of the Hugging Face TGI images
# (huggingface/text-generation-inference @d4bd5cac, tag v3.3.4, sagemaker-entrypoint.sh): HF_MODEL_ID
# is required and becomes MODEL_ID (HF_MODEL_REVISION becomes REVISION); the arguments (SageMaker's
# `serve`) are not used; the launcher listens on 8080.
if [[ -z "${HF_MODEL_ID:-}" ]]; then
    echo "HF_MODEL_ID must be set"
    exit 1
fi
export MODEL_ID="${HF_MODEL_ID}"
if [[ -n "${HF_MODEL_REVISION:-}" ]]; then
    export REVISION="${HF_MODEL_REVISION}"
fi
exec text-generation-launcher --port 8080
