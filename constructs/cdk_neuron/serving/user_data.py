"""The EC2 boot script of a serving instance, rendered from a :class:`BootConfig` (plain Python).

Rendering is a pure function so tests can read exactly what an instance runs. Values may be CDK
tokens (region, stack name); CDK resolves them inside the final user-data string.

What an instance does
---------------------
First boot (cloud-init user data, once per instance):

1. Formats and mounts the encrypted data volume (``/dev/sdf``) at ``/var/lib/cdk-neuron`` and moves
   Docker's data root onto it, so images, weights and compiled graphs never fill the DLAMI's root disk.
2. Installs Docker (``docker.io``) and the AWS CLI only if the AMI lacks them: the Neuron DLAMI is
   not documented to ship Docker, so this keeps the script correct on either answer.
3. Writes one systemd unit per replica. Each runs the engine container with one ``--device`` per
   Neuron chip that replica uses, ``NEURON_RT_VISIBLE_CORES`` set to its cores, and its own loopback
   port. With several replicas an nginx container spreads requests over them (least connections)
   on the service port the load balancer targets; with one replica the container serves that port
   directly. An ALB target group reaches one port per instance, and a forward action spreads over at
   most five target groups, so per-replica target groups cannot cover 12 or 24 replicas.
4. Pulls the images (after ``docker login`` for private ECR) and syncs precompiled artifacts from S3.
5. Starts ``cdk-neuron-ready``, which also runs at every later boot.

``cdk-neuron-ready`` (every boot): if the instance is being launched into the warm pool
(``Warmed:*`` target lifecycle state) it only completes the launch lifecycle action, so the instance
is stopped with everything pulled and synced. Otherwise it starts the replicas, waits until every
replica answers its health path, then completes the lifecycle action (the instance enters service
only now) and signals CloudFormation (rolling updates wait for it). Any failure abandons the
lifecycle action, so Auto Scaling replaces the instance instead of serving errors.

The Hugging Face token is read from Secrets Manager when a replica starts and kept on tmpfs
(``/run``), never in the launch template. Containers cannot reach instance credentials: IMDSv2 is
required with a hop limit of 1, and only the host talks to AWS APIs.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec

DATA_DIR = "/var/lib/cdk-neuron"
CONFIG_DIR = "/etc/cdk-neuron"
DATA_LABEL = "cdkneuron-data"
MODEL_MOUNT = "/model"
CACHE_MOUNT = "/data"
FIRST_REPLICA_PORT = 8081
# nginx from ECR Public (no Docker Hub rate limits); a minor-version tag, pinned like the engines.
PROXY_IMAGE = "public.ecr.aws/nginx/nginx:1.27-alpine"
METRIC_NAMESPACE = "CdkNeuron/Serving"
CONCURRENCY_METRIC = "ConcurrentRequests"
METRICS_INTERVAL_SECONDS = 20


@dataclass(frozen=True)
class ReplicaConfig:
    """One serving process: its chips, its NeuronCores and its loopback port."""

    index: int
    devices: tuple[str, ...]
    visible_cores: str
    host_port: int


@dataclass(frozen=True)
class BootConfig:
    """Everything the boot script needs; build it with :func:`boot_config`."""

    region: str
    stack_name: str
    asg_logical_id: str
    lifecycle_hook_name: str
    image_uri: str
    ecr_registry: str | None
    ecr_region: str | None
    container_port: int
    service_port: int
    health_path: str
    metrics_path: str
    concurrency_metrics: tuple[str, ...]
    container_environment: tuple[tuple[str, str], ...]
    container_args: tuple[str, ...]
    replicas: tuple[ReplicaConfig, ...]
    artifact_uri: str | None
    hf_token_secret_arn: str | None
    startup_timeout_seconds: int
    fleet_id: str
    proxy_image: str = PROXY_IMAGE

    @property
    def uses_proxy(self) -> bool:
        return len(self.replicas) > 1


def replica_configs(plan: ServingPlan) -> tuple[ReplicaConfig, ...]:
    """One replica per ``tensor_parallel`` cores: its chips, its cores and a loopback port (8081, ...)."""
    return tuple(
        ReplicaConfig(
            index=i,
            devices=plan.devices(i),
            visible_cores=plan.visible_cores(i),
            host_port=FIRST_REPLICA_PORT + i,
        )
        for i in range(plan.replicas_per_instance)
    )


def boot_config(
    spec: ModelSpec,
    plan: ServingPlan,
    engine: ServingEngine,
    *,
    region: str,
    stack_name: str,
    asg_logical_id: str,
    lifecycle_hook_name: str,
    service_port: int,
    startup_timeout_seconds: int,
    fleet_id: str,
    hf_token_secret_arn: str | None = None,
) -> BootConfig:
    """Map a model, its plan and an engine onto what one EC2 instance runs."""
    model = MODEL_MOUNT if spec.precompiled else spec.served_model_name
    image = engine.image
    artifact = spec.artifact
    return BootConfig(
        region=region,
        stack_name=stack_name,
        asg_logical_id=asg_logical_id,
        lifecycle_hook_name=lifecycle_hook_name,
        image_uri=image.uri(region),
        ecr_registry=image.registry_host(region) if image.is_private_ecr else None,
        ecr_region=image.ecr_region(region) if image.is_private_ecr else None,
        container_port=engine.port,
        service_port=service_port,
        health_path=engine.health_path,
        metrics_path=engine.metrics_path,
        concurrency_metrics=engine.concurrency_metrics,
        container_environment=tuple(engine.environment(spec, plan, model=model).items()),
        container_args=engine.container_args(spec, plan, model=model),
        replicas=replica_configs(plan),
        artifact_uri=artifact.uri if artifact is not None else None,
        hf_token_secret_arn=hf_token_secret_arn,
        startup_timeout_seconds=startup_timeout_seconds,
        fleet_id=fleet_id,
    )


def _env_line(key: str, value: str) -> str:
    # docker --env-file takes KEY=value literally (no quoting), one per line.
    if "\n" in value or "\n" in key or "=" in key:
        raise NeuronConfigError(
            "environment", {key: value}, "keys and values must be single-line, keys without '='"
        )
    return f"{key}={value}"


def _systemd_arg(arg: str) -> str:
    # systemd expands %specifiers and $VARIABLES in ExecStart. Container arguments must not contain
    # "$" (CDK tokens in the image URI do, but resolve to plain text before an instance sees them).
    escaped = arg.replace("%", "%%")
    return f'"{escaped}"' if any(c.isspace() for c in escaped) or not escaped else escaped


def _check_container_arg(arg: str) -> str:
    if "$" in arg or "\n" in arg or '"' in arg:
        raise NeuronConfigError("container_args", arg, 'arguments may not contain "$", quotes or newlines')
    return arg


def _shell_env(values: Mapping[str, str | int | None]) -> str:
    return "\n".join(f"{k}={shlex.quote('' if v is None else str(v))}" for k, v in values.items())


def _replica_unit(cfg: BootConfig, replica: ReplicaConfig) -> str:
    name = f"cdk-neuron-replica-{replica.index}"
    publish = (
        f"127.0.0.1:{replica.host_port}:{cfg.container_port}"
        if cfg.uses_proxy
        else f"{cfg.service_port}:{cfg.container_port}"
    )
    run = [
        "/usr/bin/docker",
        "run",
        "--rm",
        f"--name={name}",
        *(f"--device={device}" for device in replica.devices),
        f"--env-file={CONFIG_DIR}/{name}.env",
        *(["--env-file=/run/cdk-neuron/hf-token.env"] if cfg.hf_token_secret_arn else []),
        f"--publish={publish}",
        f"--volume={DATA_DIR}/cache:{CACHE_MOUNT}",
        *([f"--volume={DATA_DIR}/model:{MODEL_MOUNT}:ro"] if cfg.artifact_uri else []),
        # vLLM workers exchange tensors through /dev/shm; Docker's default is 64 MiB.
        "--shm-size=8g",
        "--ulimit=memlock=-1:-1",
        "--security-opt=no-new-privileges",
        "--log-driver=journald",
        cfg.image_uri,
        *(_check_container_arg(a) for a in cfg.container_args),
    ]
    pre_secret = "ExecStartPre=/usr/local/sbin/cdk-neuron-secrets\n" if cfg.hf_token_secret_arn else ""
    return (
        "[Unit]\n"
        f"Description=cdk-neuron serving replica {replica.index} (NeuronCores {replica.visible_cores})\n"
        "Requires=docker.service\n"
        "After=docker.service\n"
        "[Service]\n"
        "Restart=always\n"
        "RestartSec=10\n"
        "TimeoutStartSec=300\n"
        "TimeoutStopSec=90\n"
        f"ExecStartPre=-/usr/bin/docker rm -f {name}\n"
        f"{pre_secret}"
        f"ExecStart={' '.join(_systemd_arg(a) for a in run)}\n"
        f"ExecStop=/usr/bin/docker stop --time=60 {name}\n"
    )


def _proxy_unit(cfg: BootConfig) -> str:
    run = [
        "/usr/bin/docker",
        "run",
        "--rm",
        "--name=cdk-neuron-proxy",
        "--network=host",
        f"--volume={CONFIG_DIR}/nginx.conf:/etc/nginx/nginx.conf:ro",
        "--security-opt=no-new-privileges",
        "--log-driver=journald",
        cfg.proxy_image,
    ]
    return (
        "[Unit]\n"
        "Description=cdk-neuron local load spreader over the serving replicas\n"
        "Requires=docker.service\n"
        "After=docker.service\n"
        "[Service]\n"
        "Restart=always\n"
        "RestartSec=5\n"
        "ExecStartPre=-/usr/bin/docker rm -f cdk-neuron-proxy\n"
        f"ExecStart={' '.join(run)}\n"
        "ExecStop=/usr/bin/docker stop --time=30 cdk-neuron-proxy\n"
    )


def render_nginx_conf(cfg: BootConfig) -> str:
    """nginx spreading requests over the local replicas, streaming responses as they are generated."""
    servers = "\n".join(
        f"        server 127.0.0.1:{r.host_port} max_fails=1 fail_timeout=10s;" for r in cfg.replicas
    )
    return f"""worker_processes auto;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    upstream replicas {{
        least_conn;
{servers}
        keepalive 64;
    }}
    server {{
        listen {cfg.service_port};
        client_max_body_size 32m;
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            # Token streaming (server-sent events): pass bytes through as they arrive.
            proxy_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
            # Retry only what never reached a replica (nginx never resends a POST that was sent).
            proxy_next_upstream error timeout http_502 http_503;
        }}
    }}
}}
"""


_COMMON = r"""# Shared by the boot script and cdk-neuron-ready.
. /etc/cdk-neuron/fleet.env

imds() {
    local token
    token=$(curl -sf -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
    curl -sf -H "X-aws-ec2-metadata-token: ${token}" "http://169.254.169.254/latest/$1"
}
instance_id() { imds meta-data/instance-id; }
lifecycle_state() { imds meta-data/autoscaling/target-lifecycle-state || echo InService; }
complete_lifecycle() {
    # Needs instance metadata tags (aws:autoscaling:groupName); harmless outside a launch.
    aws autoscaling complete-lifecycle-action --region "${REGION}" \
        --lifecycle-hook-name "${LIFECYCLE_HOOK}" \
        --auto-scaling-group-name "$(imds meta-data/tags/instance/aws:autoscaling:groupName)" \
        --instance-id "$(instance_id)" --lifecycle-action-result "$1" || true
}
signal_stack() {
    # CloudFormation counts these during creation and rolling updates; at other times it rejects them.
    aws cloudformation signal-resource --region "${REGION}" --stack-name "${STACK_NAME}" \
        --logical-resource-id "${ASG_LOGICAL_ID}" --unique-id "$(instance_id)" --status "$1" >/dev/null 2>&1 || true
}
fail() {
    echo "cdk-neuron: $*" >&2
    complete_lifecycle ABANDON
    signal_stack FAILURE
    exit 1
}
retry() {
    local attempt
    for attempt in 1 2 3 4 5; do
        "$@" && return 0
        sleep $((attempt * 15))
    done
    return 1
}
"""

_SECRETS = r"""#!/bin/bash
# Reads the Hugging Face token from Secrets Manager onto tmpfs for the replica containers.
set -euo pipefail
. /usr/local/lib/cdk-neuron/common.sh
[ -s /run/cdk-neuron/hf-token.env ] && exit 0
install -d -m 0700 /run/cdk-neuron
token=$(aws secretsmanager get-secret-value --region "${REGION}" --secret-id "${HF_TOKEN_SECRET_ARN}" \
    --query SecretString --output text)
umask 077
printf 'HF_TOKEN=%s\n' "${token}" > /run/cdk-neuron/hf-token.env.tmp
mv /run/cdk-neuron/hf-token.env.tmp /run/cdk-neuron/hf-token.env
"""

_READY = r"""#!/bin/bash
# Every boot: hold a warm-pool launch after preparation, else start serving and report readiness.
set -uo pipefail
. /usr/local/lib/cdk-neuron/common.sh
case "$(lifecycle_state)" in
    Warmed:*)
        echo "cdk-neuron: entering the warm pool; images and artifacts are in place"
        complete_lifecycle CONTINUE
        exit 0
        ;;
esac
for unit in ${UNITS}; do
    systemctl start --no-block "${unit}" || fail "cannot start ${unit}"
done
deadline=$((SECONDS + STARTUP_TIMEOUT_SECONDS))
for port in ${REPLICA_PORTS} ${SERVICE_PORT}; do
    until curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:${port}${HEALTH_PATH}"; do
        [ "${SECONDS}" -lt "${deadline}" ] || fail "no healthy answer on port ${port} after ${STARTUP_TIMEOUT_SECONDS} s"
        sleep 10
    done
done
echo "cdk-neuron: all replicas healthy"
systemctl start --no-block cdk-neuron-metrics.service
complete_lifecycle CONTINUE
signal_stack SUCCESS
"""

_METRICS = r"""#!/bin/bash
# Publishes the instance's in-flight + queued requests (summed over replicas) for target tracking.
set -uo pipefail
. /usr/local/lib/cdk-neuron/common.sh
while true; do
    total=0
    for port in ${REPLICA_PORTS}; do
        value=$(curl -sf --max-time 5 "http://127.0.0.1:${port}${METRICS_PATH}" | awk -v names="${CONCURRENCY_METRICS}" '
            BEGIN { n = split(names, wanted, " ") }
            /^#/ { next }
            { for (i = 1; i <= n; i++) { k = length(wanted[i])
                if (substr($1, 1, k) == wanted[i] && (length($1) == k || substr($1, k + 1, 1) == "{")) sum += $NF } }
            END { printf "%.0f", sum + 0 }') || value=0
        total=$((total + ${value:-0}))
    done
    aws cloudwatch put-metric-data --region "${REGION}" --namespace "${METRIC_NAMESPACE}" \
        --metric-name "${METRIC_NAME}" --dimensions "Fleet=${FLEET_ID}" --unit Count --value "${total}" || true
    sleep "${METRICS_INTERVAL_SECONDS}"
done
"""

_PREPARE = r"""
mount_data_volume() {
    local dev="" root_disk d waited=0
    if ! blkid -L "${DATA_LABEL}" >/dev/null 2>&1; then
        root_disk=$(lsblk -no PKNAME "$(findmnt -no SOURCE /)")
        while [ -z "${dev}" ] && [ "${waited}" -lt 120 ]; do
            for d in $(lsblk -dpno NAME,TYPE | awk '$2 == "disk" { print $1 }'); do
                [ "$(basename "${d}")" = "${root_disk}" ] && continue
                [ -z "$(lsblk -no FSTYPE "${d}" | tr -d '[:space:]')" ] && dev="${d}" && break
            done
            [ -n "${dev}" ] || { sleep 5; waited=$((waited + 5)); }
        done
        [ -n "${dev}" ] || fail "the data volume (/dev/sdf) did not appear"
        mkfs.ext4 -q -L "${DATA_LABEL}" "${dev}"
    fi
    grep -q "LABEL=${DATA_LABEL}" /etc/fstab ||
        echo "LABEL=${DATA_LABEL} ${DATA_DIR} ext4 defaults,nofail,noatime 0 2" >> /etc/fstab
    install -d -m 0755 "${DATA_DIR}"
    mountpoint -q "${DATA_DIR}" || mount "${DATA_DIR}" || fail "cannot mount the data volume"
    install -d -m 0755 "${DATA_DIR}/docker" "${DATA_DIR}/cache" "${DATA_DIR}/model"
}

install_tools() {
    if ! command -v docker >/dev/null 2>&1; then
        retry apt-get update -q || fail "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive retry apt-get install -y -q docker.io || fail "cannot install docker"
    fi
    if ! command -v aws >/dev/null 2>&1; then
        retry snap install aws-cli --classic || fail "cannot install the AWS CLI"
    fi
    # Docker keeps images and layers on the data volume, and starts only once it is mounted.
    install -d /etc/docker /etc/systemd/system/docker.service.d
    python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
config = json.load(open(path)) if os.path.exists(path) else {}
config["data-root"] = "/var/lib/cdk-neuron/docker"
json.dump(config, open(path, "w"), indent=2)
PY
    printf '[Unit]\nRequiresMountsFor=%s\n' "${DATA_DIR}" > /etc/systemd/system/docker.service.d/cdk-neuron.conf
    systemctl daemon-reload
    systemctl enable docker.service
    systemctl restart docker.service || fail "docker did not start"
}

pull_images() {
    if [ -n "${ECR_REGISTRY}" ]; then
        retry sh -c 'aws ecr get-login-password --region "$1" | docker login --username AWS --password-stdin "$2"' \
            _ "${ECR_REGION}" "${ECR_REGISTRY}" || fail "docker login to ${ECR_REGISTRY} failed"
    fi
    retry docker pull --quiet "${IMAGE}" || fail "cannot pull ${IMAGE}"
    if [ -n "${PROXY_IMAGE}" ]; then
        retry docker pull --quiet "${PROXY_IMAGE}" || fail "cannot pull ${PROXY_IMAGE}"
    fi
}

sync_artifacts() {
    [ -n "${ARTIFACT_URI}" ] || return 0
    retry aws s3 sync --only-show-errors --region "${REGION}" "${ARTIFACT_URI}" "${DATA_DIR}/model" ||
        fail "cannot sync ${ARTIFACT_URI}"
}
"""


def render_user_data(cfg: BootConfig, *, shebang: bool = True) -> str:
    """The whole boot script (bash) for one serving instance (``shebang=False`` when CDK adds it)."""
    if not cfg.replicas:
        raise NeuronConfigError("replicas", 0, "a serving instance runs at least one replica")
    units = [f"cdk-neuron-replica-{r.index}.service" for r in cfg.replicas]
    if cfg.uses_proxy:
        units.append("cdk-neuron-proxy.service")
    fleet_env = _shell_env(
        {
            "REGION": cfg.region,
            "STACK_NAME": cfg.stack_name,
            "ASG_LOGICAL_ID": cfg.asg_logical_id,
            "LIFECYCLE_HOOK": cfg.lifecycle_hook_name,
            "IMAGE": cfg.image_uri,
            "PROXY_IMAGE": cfg.proxy_image if cfg.uses_proxy else None,
            "ECR_REGISTRY": cfg.ecr_registry,
            "ECR_REGION": cfg.ecr_region,
            "ARTIFACT_URI": cfg.artifact_uri,
            "HF_TOKEN_SECRET_ARN": cfg.hf_token_secret_arn,
            "DATA_DIR": DATA_DIR,
            "DATA_LABEL": DATA_LABEL,
            "UNITS": " ".join(units),
            "REPLICA_PORTS": " ".join(
                str(r.host_port if cfg.uses_proxy else cfg.service_port) for r in cfg.replicas
            ),
            "SERVICE_PORT": cfg.service_port if cfg.uses_proxy else "",
            "HEALTH_PATH": cfg.health_path,
            "METRICS_PATH": cfg.metrics_path,
            "CONCURRENCY_METRICS": " ".join(cfg.concurrency_metrics),
            "METRIC_NAMESPACE": METRIC_NAMESPACE,
            "METRIC_NAME": CONCURRENCY_METRIC,
            "METRICS_INTERVAL_SECONDS": METRICS_INTERVAL_SECONDS,
            "FLEET_ID": cfg.fleet_id,
            "STARTUP_TIMEOUT_SECONDS": cfg.startup_timeout_seconds,
        }
    )
    base_env = [
        *cfg.container_environment,
        # Hub downloads and compiled graphs persist on the data volume across container restarts.
        ("HUGGINGFACE_HUB_CACHE", f"{CACHE_MOUNT}/hub"),
        ("NEURON_COMPILE_CACHE_URL", f"{CACHE_MOUNT}/neuron-compile-cache"),
    ]
    parts = [
        *(["#!/bin/bash"] if shebang else []),
        "# cdk-neuron InferenceFleet instance boot script (rendered by cdk_neuron.serving.user_data).",
        "set -Eeuo pipefail",
        "exec > >(tee -a /var/log/cdk-neuron-boot.log | logger -t cdk-neuron-boot) 2>&1",
        f"install -d -m 0755 {CONFIG_DIR} /usr/local/lib/cdk-neuron",
        f"cat > {CONFIG_DIR}/fleet.env <<'CDK_NEURON_EOF'\n{fleet_env}\nCDK_NEURON_EOF",
        f"cat > /usr/local/lib/cdk-neuron/common.sh <<'CDK_NEURON_EOF'\n{_COMMON}CDK_NEURON_EOF",
        ". /usr/local/lib/cdk-neuron/common.sh",
        "trap 'fail \"boot script failed at line ${LINENO}\"' ERR",
    ]
    for replica in cfg.replicas:
        name = f"cdk-neuron-replica-{replica.index}"
        env_lines = "\n".join(
            _env_line(k, v) for k, v in (("NEURON_RT_VISIBLE_CORES", replica.visible_cores), *base_env)
        )
        parts.append(f"cat > {CONFIG_DIR}/{name}.env <<'CDK_NEURON_EOF'\n{env_lines}\nCDK_NEURON_EOF")
        parts.append(
            f"cat > /etc/systemd/system/{name}.service <<'CDK_NEURON_EOF'\n{_replica_unit(cfg, replica)}CDK_NEURON_EOF"
        )
    if cfg.uses_proxy:
        parts.append(
            f"cat > {CONFIG_DIR}/nginx.conf <<'CDK_NEURON_EOF'\n{render_nginx_conf(cfg)}CDK_NEURON_EOF"
        )
        parts.append(
            f"cat > /etc/systemd/system/cdk-neuron-proxy.service <<'CDK_NEURON_EOF'\n{_proxy_unit(cfg)}CDK_NEURON_EOF"
        )
    if cfg.hf_token_secret_arn:
        parts.append(f"cat > /usr/local/sbin/cdk-neuron-secrets <<'CDK_NEURON_EOF'\n{_SECRETS}CDK_NEURON_EOF")
        parts.append("chmod 0755 /usr/local/sbin/cdk-neuron-secrets")
    parts += [
        f"cat > /usr/local/sbin/cdk-neuron-ready <<'CDK_NEURON_EOF'\n{_READY}CDK_NEURON_EOF",
        f"cat > /usr/local/sbin/cdk-neuron-metrics <<'CDK_NEURON_EOF'\n{_METRICS}CDK_NEURON_EOF",
        "chmod 0755 /usr/local/sbin/cdk-neuron-ready /usr/local/sbin/cdk-neuron-metrics",
        "cat > /etc/systemd/system/cdk-neuron-ready.service <<'CDK_NEURON_EOF'\n"
        "[Unit]\n"
        "Description=cdk-neuron: start serving and report readiness (or park in the warm pool)\n"
        "Wants=network-online.target\n"
        "After=network-online.target docker.service\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        "TimeoutStartSec=infinity\n"
        "ExecStart=/usr/local/sbin/cdk-neuron-ready\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
        "CDK_NEURON_EOF",
        "cat > /etc/systemd/system/cdk-neuron-metrics.service <<'CDK_NEURON_EOF'\n"
        "[Unit]\n"
        "Description=cdk-neuron: publish in-flight requests to CloudWatch\n"
        "After=cdk-neuron-ready.service\n"
        "[Service]\n"
        "Restart=always\n"
        "RestartSec=10\n"
        "ExecStart=/usr/local/sbin/cdk-neuron-metrics\n"
        "CDK_NEURON_EOF",
        _PREPARE.strip("\n"),
        "mount_data_volume",
        "install_tools",
        "pull_images",
        "sync_artifacts",
        "systemctl daemon-reload",
        "systemctl enable cdk-neuron-ready.service",
        # --no-block: cloud-init is itself a unit that the ready unit must not wait on.
        "systemctl start --no-block cdk-neuron-ready.service",
    ]
    return "\n".join(parts) + "\n"


__all__ = [
    "CONCURRENCY_METRIC",
    "METRIC_NAMESPACE",
    "PROXY_IMAGE",
    "BootConfig",
    "ReplicaConfig",
    "boot_config",
    "render_nginx_conf",
    "render_user_data",
    "replica_configs",
]
