#!/bin/bash
# cdk-neuron compile on AWS Batch: how the export step gets into the serving image, whose ENTRYPOINT
# Batch cannot replace.
#
# This file is not run, it is *read*: BatchModelCompilation's export container sets
# BASH_ENV=/opt/cdk-neuron/compile/serving-entry.sh (the host's node-program bundle, mounted read-only).
# The serving image's ENTRYPOINT is ["./entrypoint.sh"], a `#!/bin/bash` script that ends in
# `exec optimum-cli neuron serve "${ARGS[@]}" ${ARGS_CLI}` whatever its arguments
# (huggingface/optimum-neuron docker/vllm/Dockerfile @v0.4.5), and an AWS Batch job definition can
# set a container's command but never its entrypoint (ContainerProperties and TaskContainerProperties
# have no entryPoint: AWS Batch API Reference, read 2026-12-02). A non-interactive bash started to run
# a script first reads the file BASH_ENV names ("Bash Startup Files", Bash Reference Manual,
# https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html, read 2026-12-02), so the
# entrypoint's own bash reads this file before its first line, and this file replaces that bash with
# the export program: the server is never started. Should the image's entrypoint stop being a bash
# script, BASH_ENV is not read and the job's command (a word optimum-cli's parser refuses) makes the
# container fail at once instead of serving.
#
# BASH_ENV is removed before anything else runs, or every bash the export starts would read this file
# again. The step runs under GNU timeout with its budget (CDK_NEURON_STEP_SECONDS, from
# cdk_neuron.timeouts.compile_step_seconds), as on Fargate; exit 124 when it ran out of time.
unset BASH_ENV
exec timeout --kill-after="${CDK_NEURON_KILL_AFTER:?}" "${CDK_NEURON_STEP_SECONDS:?}" \
    bash "$(dirname "${BASH_SOURCE[0]}")/export.sh"
