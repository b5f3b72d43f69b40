#!/bin/bash
# cdk-neuron serving replica <index>: one engine container on its own NeuronCores (ExecStart of
# cdk-neuron-replica@<index>.service).
#
# The container gets one --device per Neuron chip that holds its cores and NEURON_RT_VISIBLE_CORES
# set to those cores (replica-<index>.env), the engine's environment (container.env, docker
# --env-file syntax) and arguments (container.args, one per line). It publishes a loopback port
# (FIRST_REPLICA_PORT + index) behind the host nginx, which alone listens on the service port.
#
# Logs go to the fleet's CloudWatch Logs group (LOG_GROUP), one stream per instance and replica
# (<instance-id>/replica-<index>), so they outlive an instance that Auto Scaling replaces. Docker's
# awslogs driver runs in the Docker daemon with the instance role, which may only
# logs:CreateLogStream and logs:PutLogEvents in this group; awslogs-create-group=false: the group
# belongs to the stack. mode=non-blocking with a bounded buffer: once the buffer is full a
# CloudWatch Logs outage drops lines instead of blocking the model server's stdout, and the daemon
# creates the stream in the background, retrying, so the container starts even then (moby
# daemon/logger/awslogs/cloudwatchlogs.go, New). `docker logs` on the instance still works: Docker
# keeps a local cache for drivers it cannot read back. Option names and semantics, read 2026-12-01:
#   "Amazon CloudWatch Logs logging driver" https://docs.docker.com/engine/logging/drivers/awslogs/
#   "Configure logging drivers" (mode, max-buffer-size) https://docs.docker.com/engine/logging/configure/
#   "Use docker logs with remote logging drivers" https://docs.docker.com/engine/logging/dual-logging/
set -euo pipefail
CDK_NEURON_PROGRAM=serving-replica
# Paths are under ${ROOT}: empty on a node, a scratch directory when the tests run this script.
ROOT="${CDK_NEURON_ROOT:-}"
HOME_DIR="${ROOT}/opt/cdk-neuron"
# shellcheck source=../lib/common.sh
. "${HOME_DIR}/lib/common.sh"
index=${1:?usage: replica.sh <index>}
load_settings "${CDK_NEURON_ETC}/fleet.env" "${CDK_NEURON_ETC}/replica-${index}.env"
require REGION LOG_GROUP IMAGE DATA_DIR FIRST_REPLICA_PORT CONTAINER_PORT REPLICA_DEVICES VISIBLE_CORES
# Per container; "25m" is 25 MiB (Docker parses it with go-units RAMInBytes), as the training jobs'.
LOG_BUFFER_SIZE=25m
instance=$(imds meta-data/instance-id) || instance=""
[ -n "${instance}" ] || die "cannot read this instance's id (IMDSv2), which names its log streams"

publish="127.0.0.1:$((FIRST_REPLICA_PORT + index)):${CONTAINER_PORT}"
# --init: the images' entrypoints (a Python wrapper, a shell script) run the server as a child and
# forward no signal, so docker stop's SIGTERM never reached it and every stop waited for the SIGKILL.
# Docker's init (tini) with TINI_KILL_PROCESS_GROUP signals the whole group, the server included.
run=(docker run --rm --init --env=TINI_KILL_PROCESS_GROUP=1 "--name=cdk-neuron-replica-${index}")
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
    --log-driver=awslogs
    "--log-opt=awslogs-region=${REGION}"
    "--log-opt=awslogs-group=${LOG_GROUP}"
    "--log-opt=awslogs-stream=${instance}/replica-${index}"
    --log-opt=awslogs-create-group=false
    --log-opt=mode=non-blocking
    "--log-opt=max-buffer-size=${LOG_BUFFER_SIZE}"
)
if [ -n "${ARTIFACT_URI:-}" ]; then
    run+=("--volume=${ROOT}${DATA_DIR}/model:/model:ro")
fi
if [ -n "${HF_TOKEN_SECRET_ARN:-}" ]; then
    run+=("--env-file=${ROOT}/run/cdk-neuron/hf-token.env")
fi
mapfile -t arguments <"${CDK_NEURON_ETC}/container.args"
exec "${run[@]}" "${IMAGE}" "${arguments[@]}"
