"""The settings a serving instance boots with, rendered from a :class:`BootConfig` (plain Python).

The programs themselves are files in the node-program bundle (``cdk_neuron/node_programs/files/
serving``); user data carries only the bootstrap and these settings. Rendering is a pure function so
tests can read exactly what an instance gets. Values may be CDK tokens (region, stack name); CDK
resolves them inside the final user-data string.

What an instance does
---------------------
``serving/boot.sh`` (first boot): formats (XFS) and mounts the encrypted data volume, found by its
EBS identity, at ``/var/lib/cdk-neuron`` and moves Docker's data root onto it, stops the AMI's ECS
agent, logs in to ECR, pulls the engine image, syncs precompiled artifacts from S3, installs one
systemd unit per replica (``cdk-neuron-replica@<n>``: the container with one ``--device`` per
Neuron chip of the replica and ``NEURON_RT_VISIBLE_CORES``, logging to the fleet's CloudWatch Logs
group, one stream per instance and replica), the host nginx in front of the replicas (even of one:
it holds the load balancer's idle connections longer than the model servers would), and starts
``cdk-neuron-ready``.

``serving/ready.sh`` (every boot): in the warm pool it only completes the launch action; otherwise it
starts the replicas, waits until each answers its health path, starts the lifecycle watch,
completes the launch lifecycle action (the instance enters service only now) and signals
CloudFormation. Any failure abandons the launch, so Auto Scaling replaces the instance instead of
serving errors, and is recorded in the fleet's log group and its ``LaunchFailures`` metric.
``serving/lifecycle-watch.sh`` completes the warm-pool return of an instance that scale-in puts back
in the pool. Every timing comes from :mod:`cdk_neuron.timeouts` through ``fleet.env``.

The Hugging Face token is read from Secrets Manager when a replica starts and kept on tmpfs
(``/run``), never in the launch template. Containers cannot reach instance credentials: IMDSv2 is
required with a hop limit of 1, and only the host talks to AWS APIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cdk_neuron import catalog, timeouts
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import (
    BundleLocation,
    render_boot_script,
    render_docker_env,
    render_lines,
    render_settings,
)
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving import floors
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec

DATA_DIR = "/var/lib/cdk-neuron"
CONFIG_DIR = "/etc/cdk-neuron"
# XFS labels have at most 12 characters ("mkfs.xfs will not proceed" with a longer one: xfsprogs
# man/man8/mkfs.xfs.8.in, -L); tests hold every label the node programs format with to it.
DATA_LABEL = "cdkn-data"
# Where the launch template maps the data volume; boot.sh finds its NVMe device by this name.
DATA_DEVICE = "/dev/sdf"
MODEL_MOUNT = "/model"
CACHE_MOUNT = "/data"
FIRST_REPLICA_PORT = 8081
METRIC_NAMESPACE = "CdkNeuron/Serving"
CONCURRENCY_METRIC = "ConcurrentRequests"
LAUNCH_FAILURE_METRIC = "LaunchFailures"
"""One data point per launch an instance abandoned (``serving/lifecycle.sh``, fail)."""


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
    log_group: str
    model_tmpfs_gib: int = 0
    """Size of the RAM-backed model directory (tmpfs), 0: the artifacts go to the data volume
    (:func:`cdk_neuron.serving.floors.model_dir_in_ram`)."""
    s3_target_bandwidth: str = ""
    """The CRT transfer client's ``target_bandwidth`` (the instance's network in bytes per second, e.g.
    ``12500000000`` for 100 Gbps); empty:
    the AWS CLI's own choice."""
    neuron_devices: int = 1
    """/dev/neuronN devices the instance has (its chips): boot.sh checks them before anything else."""


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
    log_group: str,
    hf_token_secret_arn: str | None = None,
) -> BootConfig:
    """Map a model, its plan and an engine onto what one EC2 instance runs."""
    model = MODEL_MOUNT if spec.precompiled else spec.served_model_name
    image = engine.image
    artifact = spec.artifact
    in_ram = artifact is not None and floors.model_dir_in_ram(
        plan.weights_gib, instance_type=plan.instance_type, replicas=plan.replicas_per_instance
    )
    host = catalog.host_io(plan.instance_type)
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
        log_group=log_group,
        model_tmpfs_gib=floors.tmpfs_size_gib(plan.weights_gib) if in_ram else 0,
        # In bytes per second: the CLI reads a rate suffix in powers of 2 ("100Gb/s" would be 107.4
        # Gbps; "AWS CLI S3 Configuration", target_bandwidth), the network is published in powers of 10.
        s3_target_bandwidth=str(round(host.network_burst_gbps * 1e9 / 8)) if host is not None else "",
        neuron_devices=catalog.get_instance(plan.instance_type).chips,
    )


BOOT_PROGRAM = "serving/boot.sh"


RETURN_HOOK_NAME = "cdk-neuron-return"
"""The warm-pool return hook (``EC2_INSTANCE_TERMINATING``): an instance that scale-in returns to the
warm pool waits on it in ``Warmed:Pending:Wait`` until ``serving/lifecycle-watch.sh`` has stopped its
replicas (:data:`cdk_neuron.timeouts.POOL_RETURN_HEARTBEAT`). Only fleets with a warm pool have it."""


def settings_files(cfg: BootConfig) -> dict[str, str]:
    """The files under ``/etc/cdk-neuron`` that the serving programs read."""
    if not cfg.replicas:
        raise NeuronConfigError("replicas", 0, "a serving instance runs at least one replica")
    fleet = render_settings(
        {
            "REGION": cfg.region,
            "STACK_NAME": cfg.stack_name,
            "ASG_LOGICAL_ID": cfg.asg_logical_id,
            "LIFECYCLE_HOOK": cfg.lifecycle_hook_name,
            "LIFECYCLE_RETURN_HOOK": RETURN_HOOK_NAME,
            "IMAGE": cfg.image_uri,
            "ECR_REGISTRY": cfg.ecr_registry,
            "ECR_REGION": cfg.ecr_region,
            "ARTIFACT_URI": cfg.artifact_uri,
            "HF_TOKEN_SECRET_ARN": cfg.hf_token_secret_arn,
            "DATA_DIR": DATA_DIR,
            "DATA_DEVICE": DATA_DEVICE,
            "DATA_LABEL": DATA_LABEL,
            "REPLICAS": len(cfg.replicas),
            "NEURON_DEVICES": cfg.neuron_devices,
            "FIRST_REPLICA_PORT": FIRST_REPLICA_PORT,
            "SERVICE_PORT": cfg.service_port,
            "CONTAINER_PORT": cfg.container_port,
            "HEALTH_PATH": cfg.health_path,
            "METRICS_PATH": cfg.metrics_path,
            "CONCURRENCY_METRICS": " ".join(cfg.concurrency_metrics),
            "METRIC_NAMESPACE": METRIC_NAMESPACE,
            "METRIC_NAME": CONCURRENCY_METRIC,
            "LAUNCH_FAILURE_METRIC": LAUNCH_FAILURE_METRIC,
            "METRICS_INTERVAL_SECONDS": timeouts.METRICS_INTERVAL,
            "FLEET_ID": cfg.fleet_id,
            "LOG_GROUP": cfg.log_group,
            "MODEL_TMPFS_GIB": cfg.model_tmpfs_gib,
            "S3_TARGET_BANDWIDTH": cfg.s3_target_bandwidth,
            "DOCKER_MAX_CONCURRENT_DOWNLOADS": floors.DOCKER_MAX_CONCURRENT_DOWNLOADS,
            **timeouts.serving_node_settings(cfg.startup_timeout_seconds),
        }
    )
    container_env = [
        *cfg.container_environment,
        # Hub downloads and compiled graphs persist on the data volume across container restarts.
        ("HUGGINGFACE_HUB_CACHE", f"{CACHE_MOUNT}/hub"),
        ("NEURON_COMPILE_CACHE_URL", f"{CACHE_MOUNT}/neuron-compile-cache"),
    ]
    files = {
        "fleet.env": fleet,
        "container.env": render_docker_env(container_env),
        "container.args": render_lines(cfg.container_args, field="container_args"),
    }
    for replica in cfg.replicas:
        files[f"replica-{replica.index}.env"] = render_settings(
            {"REPLICA_DEVICES": " ".join(replica.devices), "VISIBLE_CORES": replica.visible_cores}
        )
    return files


def render_user_data(
    cfg: BootConfig,
    bundle: BundleLocation,
    *,
    extra_settings: Mapping[str, str] | None = None,
    shebang: bool = True,
) -> str:
    """The instance's whole user data: its settings and the bootstrap of ``serving/boot.sh``.

    ``extra_settings`` adds files under ``/etc/cdk-neuron`` (e.g. ``publisher.json`` for node metrics).
    """
    return render_boot_script(
        bundle=bundle,
        settings={**settings_files(cfg), **(extra_settings or {})},
        program_path=BOOT_PROGRAM,
        purpose="inference instance boot",
        shebang=shebang,
    )


__all__ = [
    "BOOT_PROGRAM",
    "CONCURRENCY_METRIC",
    "LAUNCH_FAILURE_METRIC",
    "METRIC_NAMESPACE",
    "BootConfig",
    "ReplicaConfig",
    "boot_config",
    "render_user_data",
    "replica_configs",
    "settings_files",
]
