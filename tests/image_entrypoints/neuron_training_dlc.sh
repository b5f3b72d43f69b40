#!/usr/bin/env bash
# Reproduction of the Neuron training DLC's entrypoint: ENTRYPOINT ["bash", "-m",
# "start_with_right_hostname.sh"] (aws-neuron/deep-learning-containers @6776548, tag 2.28.0).
# The first argument `train` starts SageMaker training (compiles a hostname shim, runs `train`);
# everything else is run by `eval "$@"`: the arguments are joined with spaces and parsed again.
if [[ "$1" = "train" ]]; then
    echo "reproduction: the SageMaker training branch; AWS Batch never takes it" >&2
    exit 97
fi
# shellcheck disable=SC2294  # eval of the joined arguments is the behaviour being reproduced
eval "$@"
