"""Every host a node reaches, derived from the programs it runs and the agents of its AMI.

Plain Python (no ``aws_cdk``). A node in a private subnet reaches a host only through a route:
an interface VPC endpoint (one AWS service), the S3 gateway endpoint (S3, which also serves ECR
image layers and the Amazon Linux 2023 package repositories), or a NAT (anything). A call with no
route hangs until it times out, so the network must be checked against what the nodes really
call, not against a list someone remembers. This module builds that list:

- :func:`program_calls` reads the node programs themselves (``files/``): every ``aws <service>``
  command and ``boto3.client("<service>")`` becomes a destination, every ``dnf install`` the
  package repositories, every container started with ``--log-driver=awslogs`` CloudWatch Logs
  (the Docker daemon sends its output there). A new call in a script shows up here without anyone updating a list, and
  a service this module cannot map fails the tests (:data:`CLI_SERVICES`).
- The agents of the ECS-optimized AMI that cdk-neuron nodes boot (:data:`ECS_AGENT`,
  :data:`SSM_AGENT`) and what the configuration adds (image registry, model source) come from
  :func:`image_destinations` and the role functions.

An app assembles them per node of an environment and derives its VPC endpoints from the same
list, so the routes it builds are the routes its nodes need (this repository's app does it in
``stacks/config.py``, ``node_destinations`` and ``interface_endpoints``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import FILES_DIR
from cdk_neuron.validation import ecr_region

Route = Literal["interface-endpoint", "s3-gateway", "internet"]
"""What can carry a destination: an interface endpoint of its service (or a NAT); the S3 gateway
endpoint (or a NAT); only a NAT (a host outside AWS's service endpoints)."""


@dataclass(frozen=True)
class Destination:
    """One host a node reaches.

    ``service`` is the VPC endpoint service name (``com.amazonaws.<region>.<service>``) for AWS
    services, or the host name for anything else. ``caller`` says who calls it (a program and
    line, or an agent), so a failed route check points at the code that needs the route.
    """

    service: str
    route: Route
    caller: str


# aws CLI and boto3 service names -> the VPC endpoint service that answers them ("AWS services
# that integrate with AWS PrivateLink", Amazon VPC User Guide). `aws ecr get-login-password`
# calls the ECR API (api.ecr.<region>); image pulls then go to the registry (ecr.dkr) and S3.
CLI_SERVICES: dict[str, tuple[str, Route]] = {
    "autoscaling": ("autoscaling", "interface-endpoint"),
    "cloudformation": ("cloudformation", "interface-endpoint"),
    "cloudwatch": ("monitoring", "interface-endpoint"),
    "ec2": ("ec2", "interface-endpoint"),
    "ecr": ("ecr.api", "interface-endpoint"),
    "logs": ("logs", "interface-endpoint"),
    "s3": ("s3", "s3-gateway"),
    "s3api": ("s3", "s3-gateway"),
    "secretsmanager": ("secretsmanager", "interface-endpoint"),
    "sts": ("sts", "interface-endpoint"),
}

PACKAGE_REPOSITORIES = Destination(
    "s3",
    "s3-gateway",
    # AL2023's dnf resolves its repositories to al2023-repos-<region>-*.s3.dualstack.<region>.amazonaws.com
    # (shown by `dnf repolist -v` in shamimice03/aws-secure-env, 2025-01-04), so the S3 gateway
    # endpoint carries `dnf install` without a NAT. The ECS-optimized AMI deletes the Neuron yum
    # repository after installing the driver (aws/amazon-ecs-ami
    # scripts/enable-ecs-agent-inferentia-support.sh), so no other repository is consulted.
    "dnf install (Amazon Linux 2023 repositories in S3)",
)

_ECS = "ECS container agent"
ECS_AGENT: tuple[Destination, ...] = (
    # "Amazon ECS interface VPC endpoints (AWS PrivateLink)", Amazon ECS Developer Guide:
    # container instances need ecs-agent, ecs-telemetry and ecs.
    Destination("ecs", "interface-endpoint", f"{_ECS}: registers the container instance"),
    Destination("ecs-agent", "interface-endpoint", f"{_ECS}: receives tasks (AWS Batch jobs)"),
    Destination("ecs-telemetry", "interface-endpoint", f"{_ECS}: sends container metrics"),
    # "Amazon ECR interface VPC endpoints", Amazon ECR User Guide: the agent pulls through
    # ecr.api and ecr.dkr, and the layers come from S3 (the gateway endpoint).
    Destination("ecr.api", "interface-endpoint", f"{_ECS}: image manifests and auth tokens"),
    Destination("ecr.dkr", "interface-endpoint", f"{_ECS}: image pulls"),
    Destination("s3", "s3-gateway", f"{_ECS}: image layers"),
    # The job definitions use the awslogs driver.
    Destination("logs", "interface-endpoint", f"{_ECS}: awslogs driver (job logs)"),
)
"""What AWS Batch needs from a container instance: the agent of the ECS-optimized AMI."""

SSM_AGENT: tuple[Destination, ...] = tuple(
    Destination(service, "interface-endpoint", "SSM Agent: Session Manager (there is no SSH)")
    # "Use VPC endpoints to improve the security of EC2 instances", AWS Systems Manager User Guide.
    # The ECS-optimized AMI enables the agent (aws/amazon-ecs-ami scripts/enable-services.sh).
    for service in ("ssm", "ssmmessages", "ec2messages")
)

_AWS_CLI = re.compile(r"\baws\s+([a-z0-9-]+)\s+([a-z0-9-]+)")
_BOTO3 = re.compile(r"\bclient\(\s*[\"']([a-z0-9-]+)[\"']")
_DNF = re.compile(r"\bdnf\s+install\b")
# Docker's awslogs driver: the daemon calls CloudWatch Logs (CreateLogStream, PutLogEvents).
_AWSLOGS = re.compile(r"--log-driver[=\s]+awslogs\b")


def _code_lines(path: Path) -> Iterable[tuple[int, str]]:
    """(line number, code) without comments: a call mentioned in a comment makes no request."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        code = line.split("#", 1)[0] if path.suffix in (".sh", ".py") else line
        if code.strip():
            yield number, code


def program_calls(*paths: str) -> tuple[Destination, ...]:
    """The destinations the node programs under ``paths`` call (files or directories of ``files/``).

    Raises :class:`NeuronConfigError` for an ``aws`` or boto3 service that :data:`CLI_SERVICES`
    does not map: its route could not be checked.
    """
    found: list[Destination] = []
    for relative in paths:
        root = FILES_DIR / relative
        if not root.exists():
            raise NeuronConfigError("program", relative, f"no such node program under {FILES_DIR}")
        files = sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file())
        for file in files:
            if "__pycache__" in file.parts or file.suffix not in (".sh", ".py"):
                continue
            name = file.relative_to(FILES_DIR).as_posix()
            for number, code in _code_lines(file):
                calls = [(m.group(1), f"aws {m.group(1)} {m.group(2)}") for m in _AWS_CLI.finditer(code)]
                calls += [(m.group(1), f'boto3 client("{m.group(1)}")') for m in _BOTO3.finditer(code)]
                for cli, what in calls:
                    if cli not in CLI_SERVICES:
                        raise NeuronConfigError(
                            f"{name}:{number}",
                            what,
                            "add the service to cdk_neuron.node_programs.reach.CLI_SERVICES "
                            "so its route is checked",
                        )
                    service, route = CLI_SERVICES[cli]
                    found.append(Destination(service, route, f"{name}:{number} {what}"))
                if _AWSLOGS.search(code):
                    service, route = CLI_SERVICES["logs"]
                    found.append(
                        Destination(
                            service, route, f"{name}:{number} docker --log-driver=awslogs (container logs)"
                        )
                    )
                if _DNF.search(code):
                    found.append(
                        Destination(
                            PACKAGE_REPOSITORIES.service,
                            PACKAGE_REPOSITORIES.route,
                            f"{name}:{number} {PACKAGE_REPOSITORIES.caller}",
                        )
                    )
    return tuple(found)


def image_destinations(image_uri: str, region: str, caller: str) -> tuple[Destination, ...]:
    """Where pulling ``image_uri`` goes: ECR in ``region`` (API, registry, S3 layers) or its registry host.

    An ECR registry in another region is reached over the internet: interface endpoints serve
    their own region only.
    """
    first = image_uri.split("/", 1)[0]
    registry = first if ("." in first or ":" in first) and "/" in image_uri else "registry-1.docker.io"
    if ecr_region(registry) == region:
        return (
            Destination("ecr.api", "interface-endpoint", f"{caller}: {image_uri} (auth and manifest)"),
            Destination("ecr.dkr", "interface-endpoint", f"{caller}: {image_uri}"),
            Destination("s3", "s3-gateway", f"{caller}: {image_uri} (layers)"),
        )
    return (Destination(registry, "internet", f"{caller}: {image_uri}"),)


HUGGING_FACE_HUB = "huggingface.co"
GITHUB = "github.com"
# Where github.com redirects downloads: tag archives to codeload.github.com, release assets to
# release-assets.githubusercontent.com since GitHub moved them there in 2025 (a github.com release URL
# answers 302 to it: packit/ai-workflows#634, "Allow egress to release-assets.githubusercontent.com",
# 2026-06-29; different-ai/openwork#3131, 2026-07-25, which traced the chain against a live release)
# and objects.githubusercontent.com before (still named by allow-lists for clients that kept it). An
# egress filter must allow all three.
GITHUB_CODELOAD = "codeload.github.com"
GITHUB_RELEASE_ASSETS = "release-assets.githubusercontent.com"
GITHUB_RELEASE_ASSETS_BEFORE_2025 = "objects.githubusercontent.com"
UBUNTU_SECURITY = "security.ubuntu.com"
# Where Ubuntu's apt sources point on an EC2 instance (<region>.ec2.archive.ubuntu.com): outside AWS's
# service endpoints, so only a NAT carries it.
UBUNTU_ARCHIVE = "ec2.archive.ubuntu.com"


def model_destinations(artifact_uri: str | None, caller: str) -> tuple[Destination, ...]:
    """Where model files come from: the S3 artifact, or the Hugging Face Hub (and its CDN)."""
    if artifact_uri is not None:
        return (Destination("s3", "s3-gateway", f"{caller}: {artifact_uri}"),)
    return (Destination(HUGGING_FACE_HUB, "internet", f"{caller}: model download from the Hub"),)


TRAINING_PROGRAMS = ("bootstrap.sh", "lib", "training")
SERVING_PROGRAMS = ("bootstrap.sh", "lib", "serving")
MONITORING_PROGRAMS = ("monitoring",)
HYPERPOD_PROGRAMS = (
    "hyperpod",
    "lib",
    "training/launcher.sh",
    "training/rank_order.py",
    "training/peer_watch.py",
)


def training_node(*, job_image: str | None, region: str, node_metrics: bool) -> tuple[Destination, ...]:
    """A Trainium node: its programs, SSM, and with a job image (AWS Batch) the ECS agent and the image."""
    destinations = [*program_calls(*TRAINING_PROGRAMS), *SSM_AGENT]
    if node_metrics:
        destinations += program_calls(*MONITORING_PROGRAMS)
    if job_image is not None:
        destinations += [*ECS_AGENT, *image_destinations(job_image, region, "training job image")]
    return tuple(destinations)


def hyperpod_node(*, job_image: str | None = None, region: str = "") -> tuple[Destination, ...]:
    """A HyperPod node: what its lifecycle script and job programs call, and SSM (the job commands'
    sessions); with a job image, what installing Enroot and Pyxis fetches and the image itself.

    HyperPod installs and runs its own agents (Slurm, health monitoring, log delivery) and copies the
    lifecycle prefix to the node itself; those are the service's paths, not listed here. Without a
    job image the lifecycle script fetches nothing (the node programs and efs-utils come in the
    prefix), so with no NAT only the SSM endpoints and the S3 gateway are needed. With one it
    installs Enroot and Pyxis from the Ubuntu archive and github.com (only a NAT routes them) and
    every job step pulls the image (:mod:`cdk_neuron.training.hyperpod_containers`).
    """
    destinations = [*program_calls(*HYPERPOD_PROGRAMS), *SSM_AGENT]
    if job_image is not None:
        lifecycle = "hyperpod/on-init-complete.sh install_containers"
        destinations += [
            Destination(UBUNTU_ARCHIVE, "internet", f"{lifecycle}: apt-get (Enroot's dependencies)"),
            Destination(
                UBUNTU_SECURITY,
                "internet",
                f"{lifecycle}: apt-get update (every apt source the image configures)",
            ),
            Destination(GITHUB, "internet", f"{lifecycle}: the Enroot .debs and the Pyxis source"),
            Destination(
                GITHUB_CODELOAD, "internet", f"{lifecycle}: the Pyxis tag archive (github.com redirects)"
            ),
            Destination(
                GITHUB_RELEASE_ASSETS,
                "internet",
                f"{lifecycle}: the Enroot release assets (github.com redirects there since 2025)",
            ),
            Destination(
                GITHUB_RELEASE_ASSETS_BEFORE_2025,
                "internet",
                f"{lifecycle}: the Enroot release assets (github.com's redirect target before 2025)",
            ),
            *image_destinations(job_image, region, "training job image (Enroot, through Pyxis)"),
        ]
    return tuple(destinations)


def serving_node(
    *,
    image_uri: str,
    region: str,
    artifact_uri: str | None,
    token_secret: bool,
    node_metrics: bool,
) -> tuple[Destination, ...]:
    """An Inferentia2 EC2 serving node: its programs, SSM, the engine image and the model."""
    destinations = [
        *(
            d
            for d in program_calls(*SERVING_PROGRAMS)
            # secrets.sh runs only when a Hugging Face token secret is configured.
            if token_secret or d.service != "secretsmanager"
        ),
        *SSM_AGENT,
        *image_destinations(image_uri, region, "serving engine image"),
        *model_destinations(artifact_uri, "serving replica"),
    ]
    if node_metrics:
        destinations += program_calls(*MONITORING_PROGRAMS)
    return tuple(destinations)


def sagemaker_model(*, artifact_uri: str | None) -> tuple[Destination, ...]:
    """A SageMaker model with ``VpcConfig``: its model files travel through the VPC.

    "Give SageMaker AI hosted endpoints access to resources in your Amazon VPC" (SageMaker
    Developer Guide): with a VPC configuration the model's S3 artifacts are fetched from inside the
    VPC, so the subnets need the S3 gateway endpoint or a NAT. The image is pulled by SageMaker.
    """
    return model_destinations(artifact_uri, "SageMaker model container")


COMPILE_PROGRAMS = ("compile",)
FARGATE_TASK = "Fargate (task ENI)"


def _compile_destinations(
    caller: str,
    *,
    export_image: str,
    tools_image: str,
    region: str,
    hub: bool,
    token_secret: bool,
    compile_cache: bool,
) -> tuple[Destination, ...]:
    """What a compile calls wherever it runs, named after ``caller`` (the Fargate task or the Batch job)."""
    destinations = [
        *program_calls(*COMPILE_PROGRAMS),
        *image_destinations(export_image, region, f"{caller}: export image"),
        *image_destinations(tools_image, region, f"{caller}: fetch and upload image"),
        Destination("logs", "interface-endpoint", f"{caller}: awslogs driver (compile logs)"),
    ]
    if token_secret:
        destinations.append(
            Destination("secretsmanager", "interface-endpoint", f"{caller}: the Hub token secret, at start")
        )
    if compile_cache:
        destinations.append(
            Destination(
                "s3", "s3-gateway", "compile export: neuronx-cc's shared cache (NEURON_COMPILE_CACHE_URL)"
            )
        )
    if hub:
        destinations.append(
            Destination(HUGGING_FACE_HUB, "internet", "compile export: hub: sources and hub: config")
        )
    return tuple(destinations)


def compile_task(
    *,
    export_image: str,
    aws_cli_image: str,
    region: str,
    hub: bool,
    token_secret: bool,
    compile_cache: bool,
) -> tuple[Destination, ...]:
    """A ModelCompilation task on Fargate: its programs, both images, its logs and what a request reads.

    From platform version 1.4.0 every byte a Fargate task sends, image pulls included, leaves through
    its ENI in the task's subnets, so without a NAT it needs ``ecr.api``, ``ecr.dkr`` and the S3 gateway
    for images in ECR, ``secretsmanager`` for a secret in the task definition ("Migrating to Linux
    platform version 1.4.0 on Amazon ECS", Amazon ECS Developer Guide,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/platform-version-migration.html, read
    2026-12-02), and ``logs`` for the awslogs driver. No ``sts``: the containers take the task role's
    credentials from the ECS credentials endpoint (169.254.170.2, inside the task), and no ``ecs``: the
    Fargate agent is AWS's. ``hub``: a request may read a ``hub:`` source or ``hub:`` config (only where
    the task's network reaches the internet; ``cdk-neuron compile`` refuses them elsewhere).
    """
    return _compile_destinations(
        FARGATE_TASK,
        export_image=export_image,
        tools_image=aws_cli_image,
        region=region,
        hub=hub,
        token_secret=token_secret,
        compile_cache=compile_cache,
    )


BATCH_COMPILE_JOB = "Batch compile job (host network on a compile node of its own)"


def compile_job(
    *,
    export_image: str,
    tools_image: str,
    region: str,
    hub: bool,
    token_secret: bool,
    compile_cache: bool,
) -> tuple[Destination, ...]:
    """A BatchModelCompilation job on a training node: its programs, both images, its logs, what a
    request reads.

    A simple ECS-on-EC2 Batch job runs in host network mode ("Networking modes for AWS Batch jobs", AWS
    Batch User Guide, read 2026-12-02), so everything leaves through the training node's own interface,
    in the training subnets: the ECS agent (already a training node's destination) pulls both images
    (``ecr.api``, ``ecr.dkr``, the S3 gateway), fetches the Hub token (``secretsmanager``) and sends the
    awslogs stream (``logs``); the programs reach S3 (sources, artifacts, the compile cache) and, with a
    route, the Hub.
    """
    return _compile_destinations(
        BATCH_COMPILE_JOB,
        export_image=export_image,
        tools_image=tools_image,
        region=region,
        hub=hub,
        token_secret=token_secret,
        compile_cache=compile_cache,
    )


__all__ = [
    "BATCH_COMPILE_JOB",
    "CLI_SERVICES",
    "COMPILE_PROGRAMS",
    "ECS_AGENT",
    "GITHUB",
    "GITHUB_CODELOAD",
    "GITHUB_RELEASE_ASSETS",
    "GITHUB_RELEASE_ASSETS_BEFORE_2025",
    "HUGGING_FACE_HUB",
    "MONITORING_PROGRAMS",
    "PACKAGE_REPOSITORIES",
    "SERVING_PROGRAMS",
    "SSM_AGENT",
    "TRAINING_PROGRAMS",
    "UBUNTU_ARCHIVE",
    "UBUNTU_SECURITY",
    "Destination",
    "Route",
    "compile_job",
    "compile_task",
    "image_destinations",
    "model_destinations",
    "program_calls",
    "sagemaker_model",
    "serving_node",
    "training_node",
]
