#!/bin/bash
# Reproduction of optimum-neuron's vLLM image entrypoint (huggingface/optimum-neuron @abf59858, tag
# v0.4.5, docker/vllm/Dockerfile, entrypoint.sh): every SM_ON_<NAME>=value in the environment becomes
# "--<name> value" (name lower-cased), the arguments are kept as ONE string and appended unquoted
# after them, and the script execs `optimum-cli neuron serve --port 8080 ...`.
joined="$*"
flags=(--port 8080)
while IFS='=' read -r name value; do
    flag=$(printf '%s' "${name#SM_ON_}" | tr '[:upper:]' '[:lower:]')
    flags+=("--${flag}")
    if [ -n "${value}" ]; then
        flags+=("${value}")
    fi
done < <(env | grep '^SM_ON_')
# shellcheck disable=SC2086  # unquoted on purpose: the image splits (and globs) its arguments
exec optimum-cli neuron serve "${flags[@]}" ${joined}
