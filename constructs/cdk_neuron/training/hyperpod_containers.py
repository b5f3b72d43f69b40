"""How a HyperPod job gets its Neuron software: the training image, run by Slurm through Enroot and Pyxis.

Plain Python (no ``aws_cdk``): the construct writes these settings into the lifecycle prefix, the
app's configuration checks the image and the routes, and the construct and the CLI write the same
sbatch script (:mod:`cdk_neuron.training.hyperpod_jobs`).

Why a container, and not a venv on the hosts: the HyperPod Slurm image carries the Neuron driver,
runtime, collectives and tools, but no ML framework (``srun -N1 dpkg -l | grep neuron`` on a
trn1.32xlarge compute node lists aws-neuronx-collectives, -dkms, -runtime-lib and -tools only; the
sample then builds a venv with ``pip install torch-neuronx neuronx-distributed`` from
pip.repos.neuron.amazonaws.com after ``apt-get install python3.10-venv g++``:
aws-samples/awsome-distributed-training ``3.test_cases/pytorch/neuronx-distributed/llama3/slurm/README.md``
@7217859, 2026-02-21). A host venv would pin framework wheels against whatever runtime the image has
today, and ``UpdateClusterSoftware`` changes that runtime under it. The Neuron training DLC carries its
own runtime and framework and needs only the host's driver, which is how the Batch engine already runs
it: so ``job_image`` means the same on both engines, the Neuron training DLC from ECR.

How the image runs: Pyxis, Slurm's SPANK plugin for Enroot (``srun --container-image``). Neither is on
the HyperPod image: the HyperPod samples install both from their lifecycle scripts (``utils/
install_enroot_pyxis.sh``, "Config.enable_docker_enroot_pyxis", True by default; the README's health
table says Pyxis "should be installed by default through life-cycle scripts", awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod`` @7217859). The lifecycle script does what that script does,
without Docker (Enroot imports from the registry itself):

- ``apt-get install`` from the Ubuntu archive: Enroot's dependencies (its Debian control file:
  curl, gawk, jq, parallel, squashfs-tools, zstd, bsdmainutils; NVIDIA/enroot ``pkg/deb/control`` @v3.4.1)
  and what the sample adds (fuse-overlayfs, squashfuse), and build-essential for Pyxis;
- Enroot :data:`ENROOT_VERSION` (the ``enroot`` and ``enroot+caps`` .debs of its GitHub release) and
  Pyxis :data:`PYXIS_VERSION` (its source tarball from GitHub, built against the image's Slurm headers in
  ``/opt/slurm/include``: a SPANK plugin must be compiled against the Slurm release it loads into,
  NVIDIA/pyxis README), both the versions the HyperPod sample pins;
- Pyxis registered in ``/opt/slurm/etc/plugstack.conf``, Enroot's paths on the node's instance store
  (``/opt/dlami/nvme`` when mounted, else ``/opt/sagemaker``, else ``/tmp``, as the sample does), and
  ECR credentials in Enroot's netrc file as Enroot documents them (``password $(aws ecr
  get-login-password --region <region>)``, NVIDIA/enroot ``doc/cmd/import.md`` @v3.4.1).

So a HyperPod cluster with a job image needs a route to github.com and the Ubuntu archive (a NAT), and
to ECR (its interface endpoints and the S3 gateway, or the NAT):
:func:`cdk_neuron.node_programs.reach.hyperpod_node`.

How the command reaches the image: Pyxis does not run the image's ENTRYPOINT unless asked
(``--container-entrypoint``, or ``execute_entrypoint=1`` in its plugstack line; default off,
NVIDIA/pyxis ``config.c`` @v0.19.0); the sbatch script says ``--no-container-entrypoint`` anyway, so a
site configuration cannot turn on the DLC's ``eval`` entrypoint. The command is the same
base64-carrying step command as on the hosts, which passes unchanged through either path (the tests
run it through both). Pyxis sets the host's exported environment in the container, "but their
existing values in the image take precedence"; ``--container-env`` names the variables whose host
value must win (NVIDIA/pyxis README @v0.19.0): the cluster's training profile
(:data:`CONTAINER_ENV_VARIABLE`).

Enroot :data:`ENROOT_VERSION` parses ``docker://[USER@][REGISTRY#]IMAGE[:TAG]`` only (``src/docker.sh``
@v3.4.1): no digest, so a HyperPod job image is pinned by tag (:func:`pyxis_image`).
"""

from __future__ import annotations

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.validation import IMAGE_URI, ecr_region, pinned_image

ENROOT_VERSION = "3.4.1"
PYXIS_VERSION = "0.19.0"
ENROOT_RELEASES = "https://github.com/NVIDIA/enroot/releases/download"
PYXIS_ARCHIVE = "https://github.com/NVIDIA/pyxis/archive/refs/tags"
# The Ubuntu packages the lifecycle script installs before Enroot and Pyxis.
APT_PACKAGES: tuple[str, ...] = (
    "build-essential",
    "curl",
    "squashfs-tools",
    "parallel",
    "zstd",
    "jq",
    "fuse-overlayfs",
    "squashfuse",
)
IMAGE_VARIABLE = "CDK_NEURON_JOB_IMAGE"
"""The profile variable holding the job image in Pyxis's form; empty: jobs run on the hosts."""
MOUNTS_VARIABLE = "CDK_NEURON_CONTAINER_MOUNTS"
CONTAINER_ENV_VARIABLE = "CDK_NEURON_CONTAINER_ENV"
TOPOLOGY_VARIABLE = "CDK_NEURON_SLURM_TOPOLOGY_B64"
"""``scontrol show topology``, base64, read by the batch step on the host: the image has no scontrol."""
PROGRAMS_DIR = "/opt/cdk-neuron"

_DIGEST_FIX = (
    "HyperPod runs the image with Enroot {version}, which takes docker://[USER@][REGISTRY#]IMAGE[:TAG] "
    "and no digest: pin the image by tag, e.g. "
    "763104351884.dkr.ecr.<region>.amazonaws.com/pytorch-training-neuronx:<tag>"
)


def pyxis_image(field: str, uri: object) -> str:
    """``--container-image`` for an image URI: ``registry#repository:tag`` (Enroot's form).

    Refuses what Enroot :data:`ENROOT_VERSION` cannot import: a digest, an image without a registry.
    """
    image = pinned_image(field, uri)
    match = IMAGE_URI.match(image)
    if match is None:
        raise NeuronConfigError(
            field,
            image,
            "give registry/repository:tag, e.g. <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>",
        )
    if match["digest"]:
        raise NeuronConfigError(field, image, _DIGEST_FIX.format(version=ENROOT_VERSION))
    return f"{match['registry']}#{match['repository']}:{match['tag']}"


def registry_credentials(uri: str) -> tuple[str, str] | None:
    """(registry host, region) when ``uri`` is in a private ECR registry (Enroot logs in with
    ``aws ecr get-login-password``); None for any other registry (pulled anonymously)."""
    match = IMAGE_URI.match(uri)
    if match is None:
        return None
    region = ecr_region(match["registry"])
    return None if region is None else (match["registry"], region)


def container_mounts(checkpoint_dir: str | None) -> str:
    """``--container-mounts``: the node programs read-only, and the checkpoint store's mount point."""
    mounts = [f"{PROGRAMS_DIR}:{PROGRAMS_DIR}:ro"]
    if checkpoint_dir is not None:
        mounts.append(f"{checkpoint_dir}:{checkpoint_dir}")
    return ",".join(mounts)


def container_profile(uri: str, profile_names: list[str], *, checkpoint_dir: str | None) -> dict[str, str]:
    """The profile variables that make the sbatch script run its step in ``uri``."""
    names = sorted({*profile_names, TOPOLOGY_VARIABLE})
    return {
        IMAGE_VARIABLE: pyxis_image("job_image", uri),
        MOUNTS_VARIABLE: container_mounts(checkpoint_dir),
        CONTAINER_ENV_VARIABLE: ",".join(names),
    }


def lifecycle_settings(uri: str) -> dict[str, str]:
    """What the lifecycle script needs to install Enroot and Pyxis and log in to the image's registry."""
    credentials = registry_credentials(uri)
    return {
        "CONTAINERS": "1",
        "ENROOT_VERSION": ENROOT_VERSION,
        "PYXIS_VERSION": PYXIS_VERSION,
        "APT_PACKAGES": " ".join(APT_PACKAGES),
        "ENROOT_RELEASES": ENROOT_RELEASES,
        "PYXIS_ARCHIVE": PYXIS_ARCHIVE,
        "ECR_REGISTRY": credentials[0] if credentials else "",
        "ECR_REGION": credentials[1] if credentials else "",
    }


__all__ = [
    "APT_PACKAGES",
    "CONTAINER_ENV_VARIABLE",
    "ENROOT_VERSION",
    "IMAGE_VARIABLE",
    "MOUNTS_VARIABLE",
    "PYXIS_VERSION",
    "TOPOLOGY_VARIABLE",
    "container_mounts",
    "container_profile",
    "lifecycle_settings",
    "pyxis_image",
    "registry_credentials",
]
