"""Image contracts: what each container image cdk-neuron runs does with the command it is given.

Plain Python. A container's process is ``ENTRYPOINT + CMD``, and a platform can replace only some
of it: AWS Batch replaces CMD with the job definition's ``command`` and can never replace the
ENTRYPOINT; ``docker run IMAGE ARGS`` (the EC2 fleet's ``serving/replica.sh``) replaces CMD with
ARGS; SageMaker hosting runs ``docker run IMAGE serve`` ("How SageMaker AI Runs Your Inference
Image": "SageMaker AI overrides default CMD statements in a container by specifying the serve
argument after the image name", https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html,
read 2026-12-01). So what reaches the program is whatever the image's entrypoint makes of those
arguments, and each contract below records that from the image's published Dockerfile and
entrypoint script, at the commit of the pinned tag.

The tests compose exactly what Batch, ``docker run`` and SageMaker execute and run it under bash
through reproductions of these entrypoints (written for the tests, ``tests/image_entrypoints``), so
a change on either side that breaks the meeting point fails ``make test``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cdk_neuron.serving.engines.optimum_neuron import OPTIMUM_NEURON_REPOSITORY, OPTIMUM_NEURON_TAG
from cdk_neuron.serving.engines.tgi import (
    TGI_REPOSITORY,
    TGI_SAGEMAKER_REPOSITORY,
    TGI_SAGEMAKER_TAG,
    TGI_TAG,
)
from cdk_neuron.serving.engines.vllm_neuron import (
    VLLM_NEURON_REGISTRY,
    VLLM_NEURON_REPOSITORY,
    VLLM_NEURON_TAG,
)
from cdk_neuron.timeouts import COMPILE_KILL_AFTER
from cdk_neuron.training.efa_installer import AWS_EFA_KEY_FINGERPRINT
from cdk_neuron.training.efa_installer import DEFAULT_VERSION as EFA_HOST_VERSION

Platform = Literal["batch", "ec2", "sagemaker", "ecs"]
ArgumentHandling = Literal["eval", "argv", "word-split", "ignored"]


@dataclass(frozen=True)
class ImageContract:
    """One image (or one platform's use of it) and what its entrypoint does with its arguments.

    :ivar name: short key (``training-dlc``, ``optimum-neuron-ec2``, ...).
    :ivar image: the repository and pinned tag cdk-neuron runs by default.
    :ivar platform: who starts the container (``batch``, ``ec2`` through ``docker run``, ``sagemaker``,
        ``ecs``: a Fargate task of :class:`~cdk_neuron.compilation.ModelCompilation`).
    :ivar source: repository, path(s) and commit of the Dockerfile and entrypoint script.
    :ivar entrypoint: the image's ENTRYPOINT, exactly.
    :ivar cmd: the image's CMD (replaced by what the platform passes).
    :ivar arguments: what the entrypoint does with its arguments: ``eval`` (joined and re-parsed by a
        shell), ``argv`` (run as given), ``word-split`` (joined, then split on spaces unquoted),
        ``ignored``.
    :ivar passes: what cdk-neuron gives it (command, arguments, environment).
    :ivar reads: the environment variables the image and cdk-neuron's contract rely on.
    :ivar needs: tools cdk-neuron's own code runs inside the container (the launcher's), and where the
        image has them.
    :ivar notes: anything else the meeting point depends on (versions, listening port, caveats).
    :ivar replaced_by: the ENTRYPOINT the platform sets instead of the image's (an ECS task definition's
        ``entryPoint``; AWS Batch and SageMaker cannot replace it), ``<step seconds>`` standing for each
        step's budget. Empty: the image's runs.
    """

    name: str
    image: str
    platform: Platform
    source: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    arguments: ArgumentHandling
    passes: str
    reads: tuple[str, ...]
    needs: tuple[str, ...] = ()
    notes: str = ""
    replaced_by: tuple[str, ...] = ()


TRAINING_DLC_COMMIT = "6776548882d6fc2cefc979eb941a6a76095aeb2d"
"""aws-neuron/deep-learning-containers tag 2.28.0 (2026-02-27); the entrypoint script is unchanged at
2be9ed1d (2026-08-17, the 2.32.0 README update)."""

TRAINING_DLC_IMAGE = "pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"

TRAINING_DLC_EFA_INSTALLER = "1.47.0"
"""The EFA installer inside the training DLC at :data:`TRAINING_DLC_IMAGE`.

The Dockerfile installs ``aws-efa-installer-latest.tar.gz`` at build time (``efa_installer.sh -y -g
--skip-kmod --skip-limit-conf --no-verify``), so the version is not in its source, and neither the
DLC repository's README nor the Neuron "Neuron Containers" release notes for 2.28.0 name it. It is
the release that was "latest" when the tag was built: the tag's commit is dated 2026-02-27, and the
EFA installer release notes list 1.47.0 on 2026-01-29 and the next release, 1.48.0, on 2026-04-14
("Elastic Fabric Adapter release notes", Amazon EC2 User Guide,
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-changelog.html, read 2026-12-01). The
hosts must install an EFA driver at least this new (:mod:`cdk_neuron.training.efa_installer`), and
a test holds the pin to it."""

_TRAINING_SOURCE = (
    f"aws-neuron/deep-learning-containers @{TRAINING_DLC_COMMIT[:7]} (tag 2.28.0): "
    "pytorch/training/2.9.0/Dockerfile.neuronx, common/start_with_right_hostname.sh"
)

AWS_CLI_DOCKERFILE_COMMIT = "1c30287a"
"""aws/aws-cli ``docker/Dockerfile`` as read (2026-12-02): Amazon Linux 2 plus less, groff and jq, the
CLI under /usr/local/bin, ``ENTRYPOINT ["/usr/local/bin/aws"]``."""

COMPILE_STEP_ENTRYPOINT = ("timeout", f"--kill-after={COMPILE_KILL_AFTER}", "<step seconds>", "bash", "-c")
"""What the ModelCompilation task definition sets as each step's entryPoint: the program under GNU
``timeout`` with the step's budget (``cdk_neuron.timeouts.compile_step_seconds``; exit 124 when it
stops the step)."""

_SAGEMAKER_SERVE = (
    "SageMaker runs `docker run IMAGE serve` (your-algorithms-inference-code.html) and passes the "
    "model's environment"
)

IMAGE_CONTRACTS: tuple[ImageContract, ...] = (
    ImageContract(
        name="training-dlc",
        image=TRAINING_DLC_IMAGE,
        platform="batch",
        source=_TRAINING_SOURCE,
        entrypoint=("bash", "-m", "start_with_right_hostname.sh"),
        cmd=("/bin/bash",),
        arguments="eval",
        passes=(
            "command `/bin/bash /opt/cdk-neuron/training/launcher.sh --command-base64 Ref::training_command` "
            "(the parameter base64-encoded, so eval leaves it whole); the job definition's environment"
        ),
        reads=(
            "AWS_BATCH_JOB_NODE_INDEX",
            "AWS_BATCH_JOB_NUM_NODES",
            "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS (child nodes only)",
            "NPROC_PER_NODE, NEURON_TP_DEGREE, NEURON_PP_DEGREE (the job definition)",
            "FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, CCOM_SOCKET_IFNAME (the job definition)",
        ),
        needs=(
            "bash (ENTRYPOINT runs it)",
            "base64 (coreutils, in the Ubuntu 24.04 base)",
            "python3 (built from source into /usr/local/bin, Python 3.12.11)",
            "hostname -I (the Ubuntu base's hostname package; the image installs no iproute2, so no `ip`)",
        ),
        notes=(
            "The script's `train` branch is SageMaker training's; every other first argument is "
            "`eval`ed, so a plain command would be split and its `$VARIABLES` expanded before the "
            f"launcher runs. EFA: `aws-efa-installer-latest` at build time, {TRAINING_DLC_EFA_INSTALLER} "
            "by the release dates (TRAINING_DLC_EFA_INSTALLER); the host installs "
            f"{EFA_HOST_VERSION} (`EfaInstaller.pinned()`, held at least as new by a test), verified "
            "as the EC2 User Guide documents: AWS's GPG signature under the key with fingerprint "
            f"{AWS_EFA_KEY_FINGERPRINT} (checked by the mirror at deployment), then the SHA-256 of "
            "that copy on every node. Batch's stop signal (SIGTERM on job "
            "timeout or termination) reaches the container's init (initProcessEnabled); the entrypoint "
            "bash runs the command as a child and forwards nothing, and without a tty `bash -m` has no "
            "job control, so the whole job is one process group: TINI_KILL_PROCESS_GROUP=1 in the job's "
            "environment makes the init signal that group, and the launcher, peer watch and training "
            "processes get the SIGTERM within ECS's 30 s stop timeout."
        ),
    ),
    ImageContract(
        name="optimum-neuron-ec2",
        image=f"{OPTIMUM_NEURON_REPOSITORY}:{OPTIMUM_NEURON_TAG}",
        platform="ec2",
        source="huggingface/optimum-neuron @abf59858 (tag v0.4.5): docker/vllm/Dockerfile (entrypoint.sh)",
        entrypoint=("./entrypoint.sh",),
        cmd=(),
        arguments="word-split",
        passes="`docker run IMAGE --model M --served_model_name N --batch_size B ...` (ModelSpec, plan)",
        reads=(
            "SM_ON_<FLAG> (each becomes --<flag>)",
            "HF_TOKEN",
            "HUGGINGFACE_HUB_CACHE (/tmp in the image)",
        ),
        notes=(
            'The entrypoint stores its arguments in one string (`ARGS_CLI="${@}"`) and appends it '
            "unquoted to `optimum-cli neuron serve --port 8080`: every argument is split on spaces "
            "and glob-expanded, so cdk-neuron refuses arguments with whitespace or glob characters "
            "for this engine. The server listens on 8080."
        ),
    ),
    ImageContract(
        name="optimum-neuron-sagemaker",
        image=f"{OPTIMUM_NEURON_REPOSITORY}:{OPTIMUM_NEURON_TAG}",
        platform="sagemaker",
        source="huggingface/optimum-neuron @abf59858 (tag v0.4.5): docker/vllm/Dockerfile (entrypoint.sh)",
        entrypoint=("./entrypoint.sh",),
        cmd=(),
        arguments="word-split",
        passes=f"{_SAGEMAKER_SERVE}: SM_ON_MODEL, SM_ON_SERVED_MODEL_NAME, SM_ON_BATCH_SIZE, ...",
        reads=("SM_ON_<FLAG> (each becomes --<flag>, the name lower-cased)",),
        notes=(
            "`serve` is appended after the SM_ON flags and reaches optimum-cli, which hands unknown "
            "arguments to vLLM's parser (optimum/commands/neuron/serve.py @v0.4.5); Hugging Face's "
            "SageMaker notebooks deploy this image this way (notebooks/sagemaker @v0.4.5)."
        ),
    ),
    ImageContract(
        name="vllm-neuron-ec2",
        image=f"{VLLM_NEURON_REGISTRY}/{VLLM_NEURON_REPOSITORY}:{VLLM_NEURON_TAG}",
        platform="ec2",
        source=(
            "aws-neuron/deep-learning-containers @b08f346 (tag 2.25.0): "
            "docker/vllm/inference/0.9.1/Dockerfile.neuronx, docker/common/vllm_entrypoint.py"
        ),
        entrypoint=("python", "/usr/local/bin/vllm_entrypoint.py"),
        cmd=("/bin/bash",),
        arguments="argv",
        passes="`docker run IMAGE python3 -m vllm.entrypoints.openai.api_server --model M ...`",
        reads=("VLLM_NEURON_FRAMEWORK", "NEURON_COMPILED_ARTIFACTS", "VLLM_TARGET_DEVICE=neuron (image)"),
        notes=(
            "The entrypoint runs `subprocess.check_call(sys.argv[1:])`: the arguments are the "
            "command, unchanged. The image's HEALTHCHECK probes :8080/ping; cdk-neuron checks /health."
        ),
    ),
    ImageContract(
        name="tgi-ec2",
        image=f"ghcr.io/huggingface/{TGI_REPOSITORY}:{TGI_TAG}",
        platform="ec2",
        source=(
            "huggingface/text-generation-inference @a1f3ebe1 (tag v3.2.3): Dockerfile.neuron, "
            "backends/neuron/tgi-entrypoint.sh, backends/neuron/tgi_env.py"
        ),
        entrypoint=("/tgi-entrypoint.sh",),
        cmd=(),
        arguments="word-split",
        passes="`docker run IMAGE` with no arguments; everything in the environment (MODEL_ID, HF_NUM_CORES, ...)",
        reads=(
            "MODEL_ID",
            "HF_NUM_CORES",
            "HF_AUTO_CAST_TYPE",
            "MAX_BATCH_SIZE, MAX_TOTAL_TOKENS, MAX_INPUT_TOKENS, MAX_BATCH_PREFILL_TOKENS",
            "PORT (80 in the image)",
        ),
        notes=(
            "The entrypoint runs `tgi_env.py $@` and `exec text-generation-launcher $@` unquoted; "
            "cdk-neuron passes no arguments, so nothing is split."
        ),
    ),
    ImageContract(
        name="tgi-sagemaker",
        image=f"{TGI_SAGEMAKER_REPOSITORY}:{TGI_SAGEMAKER_TAG}",
        platform="sagemaker",
        source=(
            "huggingface/text-generation-inference @d4bd5cac (tag v3.3.4): sagemaker-entrypoint.sh (the "
            "Hugging Face TGI DLCs' SageMaker entrypoint; the DLC's own build files are not in a public "
            "repository we could read)"
        ),
        entrypoint=("/sagemaker-entrypoint.sh",),
        cmd=(),
        arguments="ignored",
        passes=f"{_SAGEMAKER_SERVE}: HF_MODEL_ID, HF_NUM_CORES, MAX_* ...",
        reads=("HF_MODEL_ID (required; becomes MODEL_ID)", "HF_MODEL_REVISION", "the TGI variables above"),
        notes="The script ignores its arguments (`serve`) and starts `text-generation-launcher --port 8080`.",
    ),
    ImageContract(
        name="optimum-neuron-compile",
        image=f"{OPTIMUM_NEURON_REPOSITORY}:{OPTIMUM_NEURON_TAG}",
        platform="ecs",
        source=(
            "huggingface/optimum-neuron @abf59858 (tag v0.4.5): docker/vllm/Dockerfile (entrypoint.sh); "
            "pyproject.toml @abf59858 (the neuronx extra the image installs: `uv pip install .[neuronx,vllm]`)"
        ),
        entrypoint=("./entrypoint.sh",),
        cmd=(),
        arguments="argv",
        replaced_by=COMPILE_STEP_ENTRYPOINT,
        passes=(
            "the task definition's entryPoint `timeout ... bash -c` and command `[node_programs/files/compile/export.sh]` "
            "(one argument: the program's text); ecs:RunTask's container overrides carry CompileRequest's "
            "settings as environment"
        ),
        reads=(
            "SOURCE_KIND, SOURCE_URI, SOURCE_STEP, MODEL_ID, MODEL_REVISION",
            "CONVERT_TP, CONVERT_PP, CONVERT_KV_MULTIPLIER (a neuronx-distributed training checkpoint)",
            "BATCH_SIZE, SEQUENCE_LENGTH, TENSOR_PARALLEL, DTYPE (the fleet's shape)",
            "ENGINE, ENGINE_VERSION, IMAGE, NEURON_SDK, ARTIFACT_URI, WORK_DIR, CHECKPOINT_MOUNT",
            "NEURON_COMPILE_CACHE_URL (the shared S3 compile cache)",
            "HF_TOKEN (a Secrets Manager container secret, gated Hub sources)",
        ),
        needs=(
            "optimum-cli (optimum-neuron 0.4.5: `optimum-cli export neuron --instance_type inf2 ...`, the "
            "image's own exporter, which runs the image's neuronx-cc)",
            "python3 (/opt/venv, first on PATH) with huggingface_hub (Hub sources), neuronx_distributed "
            "(checkpoint conversion), torch and safetensors; it also hashes the files and reads the export's "
            "neuron_config.json back into the manifest",
            "bash; coreutils timeout (the entryPoint), mkdir, rm, touch, date, wc, du; findutils find (the "
            "Ubuntu base image's)",
        ),
        notes=(
            "The image's ENTRYPOINT starts the server whatever its arguments (`exec optimum-cli neuron serve "
            '"${ARGS[@]}" ${ARGS_CLI}`), so the export cannot be passed to it as a command: ECS, unlike AWS '
            "Batch and SageMaker, lets a task definition replace the ENTRYPOINT, and the ModelCompilation task "
            "does. Compiling in the serving image makes the compiler the one whose runtime loads the graphs. "
            "No Neuron device is needed (Neuron Compiler FAQ); the task runs on Fargate, CPU only."
        ),
    ),
    ImageContract(
        name="aws-cli-compile",
        image="public.ecr.aws/aws-cli/aws-cli:2.22.35",
        platform="ecs",
        source=f"aws/aws-cli @{AWS_CLI_DOCKERFILE_COMMIT}: docker/Dockerfile",
        entrypoint=("/usr/local/bin/aws",),
        cmd=(),
        arguments="argv",
        replaced_by=COMPILE_STEP_ENTRYPOINT,
        passes=(
            "the task definition's entryPoint `timeout ... bash -c` and command `[node_programs/files/compile/fetch.sh]` "
            "(the fetch container) or `[.../upload.sh]` (the upload container)"
        ),
        reads=("SOURCE_KIND, SOURCE_URI, WORK_DIR (fetch)", "ARTIFACT_URI, WORK_DIR (upload)"),
        needs=(
            "aws (/usr/local/bin/aws: `aws s3 sync`, `aws s3 ls`, `aws s3 cp`)",
            "bash; coreutils timeout (the entryPoint), rm, ls, mkdir, touch (Amazon Linux 2's, the image's base)",
        ),
        notes=(
            "The ENTRYPOINT is the AWS CLI itself, so a shell program needs the entrypoint replaced (`aws bash "
            "-c ...` would be an unknown AWS CLI command)."
        ),
    ),
    ImageContract(
        name="optimum-neuron-batch-compile",
        image=f"{OPTIMUM_NEURON_REPOSITORY}:{OPTIMUM_NEURON_TAG}",
        platform="batch",
        source=(
            "huggingface/optimum-neuron @abf59858 (tag v0.4.5): docker/vllm/Dockerfile (entrypoint.sh, "
            "`#!/bin/bash`); GNU Bash Reference Manual, Bash Startup Files (BASH_ENV)"
        ),
        entrypoint=("./entrypoint.sh",),
        cmd=(),
        arguments="word-split",
        passes=(
            "BatchModelCompilation's export container: environment BASH_ENV=/opt/cdk-neuron/compile/serving-entry.sh "
            "(the host's bundle, mounted read-only), CDK_NEURON_STEP_SECONDS, CDK_NEURON_KILL_AFTER, the request's "
            "settings (batch:SubmitJob ecsPropertiesOverride); command `--cdk-neuron-compile-needs-bash-env`"
        ),
        reads=(
            "BASH_ENV (read by the entrypoint's bash before its first line)",
            "the optimum-neuron-compile contract's settings (CompileRequest)",
        ),
        needs=(
            "bash (the ENTRYPOINT's interpreter: it reads BASH_ENV)",
            "coreutils timeout, dirname (serving-entry.sh)",
            "everything the optimum-neuron-compile contract needs (export.sh is the same program)",
        ),
        notes=(
            "AWS Batch cannot replace an ENTRYPOINT (no entryPoint in ContainerProperties or TaskContainerProperties), "
            "and this one starts the server whatever its arguments. Its bash reads BASH_ENV first, and "
            "serving-entry.sh unsets it and execs the export under timeout, so the server never starts. If the "
            "entrypoint stops being a bash script, the command reaches `optimum-cli neuron serve`, which refuses "
            "the unknown flag: the step fails at once instead of serving until the job times out."
        ),
    ),
    ImageContract(
        name="training-dlc-compile",
        image=TRAINING_DLC_IMAGE,
        platform="batch",
        source=_TRAINING_SOURCE,
        entrypoint=("bash", "-m", "start_with_right_hostname.sh"),
        cmd=("/bin/bash",),
        arguments="eval",
        passes=(
            "BatchModelCompilation's fetch and upload containers: command `timeout --kill-after=30 <step seconds> "
            "bash /opt/cdk-neuron/compile/<step>.sh` (words without shell syntax: eval leaves them whole)"
        ),
        reads=(
            "SOURCE_KIND, SOURCE_URI, CONFIG_FROM, WORK_DIR (fetch)",
            "ARTIFACT_URI, ARTIFACT_PREFIX, WORK_DIR (upload)",
        ),
        needs=(
            'aws (AWS CLI v1: the Dockerfile\'s `pip install "awscli<2"`, /usr/local/bin; `aws s3 sync`, `aws s3 cp`, '
            "`aws s3api list-objects-v2`, `aws s3api put-object --if-none-match`)",
            "bash; coreutils timeout, rm, ls, mkdir, touch (the Ubuntu 24.04 base's)",
        ),
        notes=(
            "The image the cluster's training jobs run, so a node that trained has it cached. `awscli<2` is "
            "unpinned in the Dockerfile: the CLI is the 1.x release current when the tag was built (2026-02), "
            "newer than S3's conditional writes (2024-08), which `put-object --if-none-match` needs."
        ),
    ),
)


def contract(name: str) -> ImageContract:
    """The contract called ``name``; KeyError for an unknown one."""
    for item in IMAGE_CONTRACTS:
        if item.name == name:
            return item
    raise KeyError(name)


__all__ = [
    "AWS_CLI_DOCKERFILE_COMMIT",
    "COMPILE_STEP_ENTRYPOINT",
    "IMAGE_CONTRACTS",
    "TRAINING_DLC_COMMIT",
    "TRAINING_DLC_EFA_INSTALLER",
    "TRAINING_DLC_IMAGE",
    "ArgumentHandling",
    "ImageContract",
    "Platform",
    "contract",
]
