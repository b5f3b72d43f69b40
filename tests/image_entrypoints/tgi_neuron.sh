#!/bin/bash
# Reproduction of TGI's Neuron image entrypoint (huggingface/text-generation-inference @a1f3ebe1, tag
# v3.2.3, backends/neuron/tgi-entrypoint.sh): tgi_env.py writes `export NAME=value` lines for the
# variables it fills in from a compiled model, the script sources them, then execs
# text-generation-launcher. Both get the arguments unquoted (split on spaces).
set -e -o pipefail -u
ENV_FILEPATH=$(mktemp)
export ENV_FILEPATH
trap 'rm -f "${ENV_FILEPATH}"' EXIT
# shellcheck disable=SC2068  # unquoted on purpose, as in the image
tgi_env.py $@
# shellcheck disable=SC1090
source "${ENV_FILEPATH}"
# shellcheck disable=SC2068
exec text-generation-launcher $@
