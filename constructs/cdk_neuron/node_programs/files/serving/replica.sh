#!/bin/bash
# cdk-neuron serving replica <index>: one engine container on its own NeuronCores (ExecStart of
# cdk-neuron-replica@<index>.service).
#
# The container gets one --device per Neuron chip that holds its cores and NEURON_RT_VISIBLE_CORES
# set to those cores (replica-<index>.env), the engine's environment (container.env, docker
# --env-file syntax) and arguments (container.args, one per line). With one replica it publishes the
# service port directly; with several, a loopback port behind the local nginx.
set -euo pipefail
CDK_NEURON_PROGRAM=serving-replica
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
index=${1:?usage: replica.sh <index>}
load_settings "${CDK_NEURON_ETC}/fleet.env" "${CDK_NEURON_ETC}/replica-${index}.env"
require IMAGE DATA_DIR REPLICAS FIRST_REPLICA_PORT SERVICE_PORT CONTAINER_PORT REPLICA_DEVICES VISIBLE_CORES

if [ "${REPLICAS}" -gt 1 ]; then
    publish="127.0.0.1:$((FIRST_REPLICA_PORT + index)):${CONTAINER_PORT}"
else
    publish="${SERVICE_PORT}:${CONTAINER_PORT}"
fi
run=(docker run --rm "--name=cdk-neuron-replica-${index}")
for device in ${REPLICA_DEVICES}; do
    run+=("--device=${device}")
done
run+=(
    "--env=NEURON_RT_VISIBLE_CORES=${VISIBLE_CORES}"
    "--env-file=${CDK_NEURON_ETC}/container.env"
    "--publish=${publish}"
    "--volume=${ROOT}${DATA_DIR}/cache:/data"
    # vLLM workers exchange tensors through /dev/shm; Docker's default is 64 MiB.
    --shm-size=8g
    --ulimit=memlock=-1:-1
    --security-opt=no-new-privileges
    --log-driver=journald
)
if [ -n "${ARTIFACT_URI:-}" ]; then
    run+=("--volume=${ROOT}${DATA_DIR}/model:/model:ro")
fi
if [ -n "${HF_TOKEN_SECRET_ARN:-}" ]; then
    run+=("--env-file=${ROOT}/run/cdk-neuron/hf-token.env")
fi
mapfile -t arguments <"${CDK_NEURON_ETC}/container.args"
exec "${run[@]}" "${IMAGE}" "${arguments[@]}"
