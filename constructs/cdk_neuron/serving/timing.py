"""Start-up time and disk size of a serving instance, from published Neuron load times.

Plain Python (no ``aws_cdk``). The derived times bound how long an instance (EC2) or a container
(SageMaker) may take to become ready before it is given up on. A generous bound costs only
detection latency; a tight one kills healthy instances that are still loading a big model, in a
loop. When a deployment has been timed, pass the measurements (:class:`MeasuredStartup`): they
replace the estimates below.

The model
---------
Container ready (container start until the health check answers: download from the Hub if the
model comes from there, load onto the NeuronCores, warm-up)::

    estimate = LOAD_FLOOR_SECONDS + LOAD_SECONDS_PER_GIB x weights          (480 s + 10.5 s/GiB)
    budget   = SAFETY x SMALL_HOST_FACTOR? x estimate                       (1.5 x, and 2 x on a small host)

A host is *small* when its memory is less than ``SMALL_HOST_MEMORY_RATIO`` (2) times the weights
its replicas hold (inf2.xlarge: 16 GiB for ~15 GiB of an 8B model). Around it:

- EC2: instance boot + image pull + (S3 artifacts) artifact transfer, each ``SAFETY`` x the estimate
  of :mod:`cdk_neuron.serving.floors` (the node's fast path: CRT transfer client, a RAM-backed model
  directory where memory allows, gp3 throughput sized to the instance), + the container budget.
  :func:`ec2_startup_model` returns every phase with its estimate, budget, floor and ratio
  (``cdk-neuron plan`` prints it); :func:`sagemaker_startup_model` the same for SageMaker.
- SageMaker: ``ModelDataDownloadTimeoutInSeconds`` = 60 s + ``SAFETY`` x the S3 download onto
  SageMaker's gp2 volume (S3 artifacts only); ``ContainerStartupHealthCheckTimeoutInSeconds`` = the
  container budget.

Before issue 25 the EC2 model assumed 300 s for boot and image pull, and the artifacts at 125 MiB/s
(gp3's baseline) onto a volume provisioned at 500 MiB/s: 4,677 s for Llama-3-70B on inf2.48xlarge,
1,189 s for Llama-3.2-3B on inf2.xlarge (docs/fast-start.md has the table, phase by phase).

The published data points (weights = parameters x 2 bytes, in GiB)
-----------------------------------------------------------------
Measurements (the estimate must cover them; it does, see :data:`PUBLISHED_LOAD_TIMES`):

- M1 Llama-2-7B (12.6 GiB), SageMaker, any instance, precompiled: "it can take up to 10 minutes to
  upload a Llama 7b model when deploying through SageMaker (regardless of the instance type)",
  mostly on the first load after the instance started (aws-neuron/transformers-neuronx issue #80,
  "Improve Neuron model loading time", 2024-03-13). The AWS reply measured ~40 s for the same model
  from safetensors with a warm compile cache on trn1.32xlarge (2024-04-09): 600 s is the cold case.
- M2 Llama-3-8B (14.9 GiB), inf2.8xlarge pod, vLLM from the Hub: "Deployment process may take up
  to 10 minutes ... for image retrieval and Model deployment from Huggingface" (awslabs/data-on-eks
  website/docs/gen-ai/inference/Neuron/vllm-ray-inf2.md @26ffb244, "Llama-3-8B with vLLM on
  Inferentia2").
- M3 Mixtral-8x7B (87.0 GiB), ml.inf2.48xlarge, optimum-neuron vLLM DLC from the Hub: "It takes
  around 15 minutes for deployment" (huggingface/optimum-neuron notebooks/sagemaker/
  deploy-mixtral-8x7b.ipynb @v0.4.5 abf59858, 2026-02-11).
- M4 Llama-3.3-70B (130.4 GiB), ml.inf2.48xlarge, same DLC from the Hub: "It takes around 30
  minutes for deployment" (notebooks/sagemaker/deploy-llama-3-3-70b.ipynb @v0.4.5). M3 and M4
  include instance provisioning, so they over-state the load time.
- Small hosts: a compiled SDXL took 9-10 min from ``torch.jit.load`` to the cores on inf2.xlarge
  and was OOM-killed without swap (aws-neuron/aws-neuron-sdk issue #753, 2023-09-27).

Budgets that published deployments use (the derived budget reaches B1 and B2 on inf2.xlarge and
keeps 70B under B3's 3,600 s):

- B1 Llama-3-8B on ml.inf2.xlarge: ``container_startup_health_check_timeout=1800`` (the Hugging
  Face SageMaker/Inferentia deploy snippet, dacorvo/deploy-inference-image-sagemaker
  deploy_snippet.py @0e336628, 2024-06-18; still 1800 in deploy_image.py @14cf3dc1, 2025-09-23:
  "Neuron models take a long time to load + warmup").
- B2 Llama-2-7B (14 GB) on inf2.xlarge and inf2.24xlarge: LMI ``option.model_loading_timeout=1600``
  (deepjavalibrary/djl-serving serving/docs/lmi/tuning_guides/tnx_tuning_guide.md @0827345e,
  Neuron SDK 2.15; that load compiles on the host). 13B int8 on inf2.xlarge: 3600 (it also
  quantizes on the host, so it is not comparable with a precompiled load).
- B3 Mixtral-8x7B and Llama-3.3-70B on ml.inf2.48xlarge: 3600 (M3, M4; Mixtral used 2400 at
  optimum-neuron v0.2.0, 2025-06-05).

Derivation: the floor and slope are the line through the cold 7-8B loads (M1, M2: 600 s at
12.6-14.9 GiB) and the 70B deployment (M4: ~1,800 s at 130 GiB); M3 falls well under it. The
published budgets are 2-3 x those measurements (B1: 1,800 / 600; B3: 3,600 / 1,800), so SAFETY
is 1.5 on a line that already over-states M3 and M4, and a small host doubles the estimate:
1.5 x 2 = 3 x the 8B measurement reproduces B1 (8B on inf2.xlarge: 1,910 s). SAFETY is no
larger so that 70B from S3 or the Hub stays under SageMaker's 3,600 s cap (2,774 s), as B3 shows it
must.

Service limits: SageMaker timeouts are 60-3,600 s; an Auto Scaling lifecycle hook waits at most
7,200 s. What cannot fit is refused with the reason and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from cdk_neuron.catalog import INSTANCES, get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.measurements import TimingReport, load_report
from cdk_neuron.serving import floors
from cdk_neuron.timeouts import SAFETY, STARTUP_MAX
from cdk_neuron.validation import whole_number

LOAD_FLOOR_SECONDS = 480.0
LOAD_SECONDS_PER_GIB = 10.5
SMALL_HOST_FACTOR = 2.0
SMALL_HOST_MEMORY_RATIO = 2.0
SAGEMAKER_DOWNLOAD_START_SECONDS = 60
SAGEMAKER_DEFAULT_DOWNLOAD_HOLDS_GB = 40.0
"""SageMaker's default ``ModelDataDownloadTimeoutInSeconds`` is not published, but it holds models up
to 40 GB: "If your model is larger than 40 GB, then you should increase this quota" ("SageMaker AI
endpoint parameters for large model inference", Amazon SageMaker AI Developer Guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/large-model-inference-hosting.html, read 2026-12-02).
An estimated timeout is therefore never below what 40 GB needs at the modelled rate: a floor (review
S5), not the default, which is not published and may be longer still."""

# SageMaker ProductionVariant limits (SM-PV; cfn-lint schema for AWS::SageMaker::EndpointConfig).
SAGEMAKER_TIMEOUT_MIN_SECONDS = 60
SAGEMAKER_TIMEOUT_MAX_SECONDS = 3600
SAGEMAKER_VOLUME_MAX_GB = 512
# The longest start-up an EC2 fleet may budget: the node extends its launch lifecycle action while it
# makes progress, up to the hook's global timeout (cdk_neuron.timeouts.STARTUP_MAX).
STARTUP_MAX_SECONDS = STARTUP_MAX

# Disk for the EC2 data volume: container images (the DLCs unpack to well over their compressed
# size; 40 GiB holds two image versions during a rolling update), the copies of the weights the volume
# holds, and 20 GiB of compile cache and logs. S3 artifacts (precompiled): one copy, synced and read in
# place; into a RAM-backed directory, the volume still keeps room for that one copy, because artifacts
# larger than the tmpfs go to the volume instead (serving/model.sh, MODEL_ON_VOLUME). From the Hub: the
# checkpoint the container downloads and the model it exports. (Until issue 25's review, S8, every
# fleet got three copies, also where the weights go to RAM: 460 GiB for prod's 70B, now 200 GiB.)
IMAGES_GIB = 40
PRECOMPILED_WEIGHT_COPIES = 1
HUB_WEIGHT_COPIES = 2
SCRATCH_GIB = 20

_GIB_TO_GB = 2**30 / 1e9


@dataclass(frozen=True)
class LoadTime:
    """A published Neuron load time or start-up budget (see the module docstring for sources)."""

    label: str
    weights_gib: float
    instance_type: str  # "any": the source says the time holds whatever the instance
    seconds: int
    kind: str  # "measured" (what a load took, at most) or "budget" (what a working deployment allows)
    source: str


# Weights are parameters x 2 bytes (bf16/fp16) in GiB: 6.74e9 -> 12.55, 8.03e9 -> 14.96, 46.7e9 -> 86.99,
# 70.6e9 -> 131.5 (the models' parameter counts on their Hugging Face model cards).
PUBLISHED_LOAD_TIMES: tuple[LoadTime, ...] = (
    LoadTime("M1 Llama-2-7B, SageMaker, cold", 12.55, "any", 600, "measured", "transformers-neuronx#80"),
    LoadTime("M2 Llama-3-8B, EKS pod, Hub", 14.96, "inf2.8xlarge", 600, "measured", "data-on-eks @26ffb244"),
    LoadTime("M3 Mixtral-8x7B, SageMaker, Hub", 86.99, "inf2.48xlarge", 900, "measured", "optimum-neuron @v0.4.5"),
    LoadTime("M4 Llama-3.3-70B, SageMaker, Hub", 131.5, "inf2.48xlarge", 1800, "measured", "optimum-neuron @v0.4.5"),
    LoadTime("B1 Llama-3-8B, SageMaker", 14.96, "inf2.xlarge", 1800, "budget", "deploy_snippet.py @0e336628"),
    LoadTime("B2 Llama-2-7B, LMI", 12.55, "inf2.xlarge", 1600, "budget", "djl-serving @0827345e"),
    LoadTime("B3 Llama-3.3-70B, SageMaker", 131.5, "inf2.48xlarge", 3600, "budget", "optimum-neuron @v0.4.5"),
)  # fmt: skip


def _whole_seconds(field: str, value: object) -> int:
    return whole_number(field, value, unit="seconds")


def _ceil_seconds(seconds: float) -> int:
    """A measured duration as whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds))


def _node_phases(report: TimingReport, total: int | None) -> MeasuredStartup | None:
    """Every phase from the node's own phases lines, where the report has them (None otherwise).

    A cold start into service (``total``: its launch -> InService): launch -> InService less the node's
    kernel-start -> ready is EC2's provisioning, which the boot phase holds with the node's set-up; the
    container's share is what ready leaves after boot, pull and transfer.

    A warm start (the warm pool, ``warm_*`` keys): its boot is not a new launch's, so only the load
    carries over to the cold model; the image pull and the transfer come from the warm pool's
    preparation, which was a new launch (``image_pull_seconds``, ``artifact_transfer_seconds``), and the
    transfer from the warm start where the preparation had none (a RAM-backed model directory).
    """
    timings = report.timings
    if "warm_boot_to_ready_seconds" in timings and "warm_boot_seconds" in timings:
        ready, boot = timings["warm_boot_to_ready_seconds"], timings["warm_boot_seconds"]
        warm_transfer = timings.get("warm_artifact_transfer_seconds")
        pull = timings.get("image_pull_seconds")
        transfer = timings.get("artifact_transfer_seconds", warm_transfer)
        return MeasuredStartup(
            source=f"{report.label}: a warm start's load"
            + ("" if pull is None else ", the warm pool's preparation's image pull and transfer")
            + " (a warm start's boot is not a new launch's: not measured for the cold path)",
            image_pull_seconds=None if pull is None else _ceil_seconds(pull),
            artifact_download_seconds=None if transfer is None else _ceil_seconds(transfer),
            container_ready_seconds=_ceil_seconds(ready - boot - (warm_transfer or 0.0)),
        )
    if total is None or "boot_to_ready_seconds" not in timings or "node_boot_seconds" not in timings:
        return None
    ready, boot = timings["boot_to_ready_seconds"], timings["node_boot_seconds"]
    pull = timings.get("image_pull_seconds", 0.0)
    transfer = timings.get("artifact_transfer_seconds")
    # EC2's share before the kernel: measured against the kernel's start where the line carries it,
    # else launch -> InService less kernel start -> ready.
    provisioning = timings.get("launch_to_kernel_seconds", max(0.0, total - ready))
    return MeasuredStartup(
        source=f"{report.label}: the node's phases, launch -> InService {total} s",
        boot_seconds=_ceil_seconds(provisioning + boot),
        image_pull_seconds=_ceil_seconds(pull),
        artifact_download_seconds=None if transfer is None else _ceil_seconds(transfer),
        container_ready_seconds=_ceil_seconds(ready - boot - pull - (transfer or 0.0)),
    )


def _ec2_before_container_seconds(instance_type: str) -> int:
    """The estimated boot and image pull of an EC2 instance (unmargined), whole seconds."""
    known = instance_type.removeprefix("ml.") in INSTANCES
    pull = floors.image_pull(instance_type).estimate_seconds if known else 0.0
    return math.ceil(floors.boot().estimate_seconds + pull)


@dataclass(frozen=True)
class MeasuredStartup:
    """Start-up phases timed on a real deployment of this model, instance type and image.

    ``MeasuredStartup.from_report(path)`` reads them from an integ suite's timing report
    (docs/integ.md, :mod:`cdk_neuron.measurements`).

    Each phase given replaces its estimate; the budget is still ``SAFETY`` x the measurement, so a
    run slower than the measured one still fits. Phases left None keep the estimate.

    :param source: where the numbers come from (a timing report, a dashboard and a date): it is
        quoted in every explanation so a reviewer can trace the budget. Required.
    :param boot_seconds: EC2 only: launch until the node programs start the image pull (EC2 launch,
        OS boot, the node's set-up). Default: None - estimated.
    :param image_pull_seconds: EC2 only: the serving image's pull. Default: None - estimated.
    :param artifact_download_seconds: the S3 artifacts onto the instance (EC2 sync, SageMaker model
        download). Default: None - estimated.
    :param container_ready_seconds: container start until its health check answers (download from
        the Hub if any, load, warm-up). Default: None - estimated.
    """

    source: str
    boot_seconds: int | None = None
    artifact_download_seconds: int | None = None
    image_pull_seconds: int | None = None
    container_ready_seconds: int | None = None

    @staticmethod
    def from_report(report: TimingReport | str | Path) -> MeasuredStartup:
        """The measurements of an integ suite's timing report (a path or a ``TimingReport``).

        - ``serving_sagemaker``: ``container_ready_seconds`` = endpoint creating -> InService. It also
          holds instance provisioning and the image pull, so the budget derived from it is on the safe
          side.
        - a new launch into service (``serving_ec2``, ``train_compile_serve``) with the node's phases (``node_boot_seconds``,
          ``image_pull_seconds``, ``artifact_transfer_seconds``, ``boot_to_ready_seconds``): every phase
          is measured; EC2's provisioning (launch -> InService less kernel start -> ready) counts
          as boot.
        - a warm start (``scale_from_zero``, whose fleet has a warm pool: ``warm_boot_seconds``,
          ``warm_boot_to_ready_seconds``): the load, and the image pull and transfer of the warm pool's
          preparation (a new launch); never the warm boot as a cold one's.
        - a new launch without them: the report observes launch -> InService as a whole;
          ``container_ready_seconds`` is that minus the boot and image pull the EC2 model estimates
          for the report's instance type (:mod:`cdk_neuron.serving.floors`, not measured), so that fed
          back, the budget is those budgets plus 1.5 x the rest. The source says so.

        Refused (``NeuronConfigError``) for a failed run, a training report, or a report without the
        timing.

        :param report: the JSON report a live ``make integ`` run wrote (``integ-reports/<suite>.json``),
            or the parsed ``cdk_neuron.measurements.TimingReport``.
        """
        loaded = report if isinstance(report, TimingReport) else load_report(report)
        if loaded.outcome != "passed":
            raise NeuronConfigError(
                "report", loaded.label, "the run failed: its timings do not show a working start-up"
            )
        if loaded.suite == "serving_sagemaker":
            key = "endpoint_creating_to_in_service_seconds"
            if key not in loaded.timings:
                raise NeuronConfigError("report", loaded.label, f"has no {key}")
            return MeasuredStartup(
                source=f"{loaded.label}: endpoint creating -> InService",
                container_ready_seconds=_ceil_seconds(loaded.timings[key]),
            )
        if loaded.suite in ("serving_ec2", "scale_from_zero", "train_compile_serve"):
            key = "instance_launch_to_in_service_seconds"
            warm_key = "warm_start_to_in_service_seconds"
            if key not in loaded.timings and warm_key not in loaded.timings:
                raise NeuronConfigError("report", loaded.label, f"has no {key} (nor {warm_key})")
            cold = key in loaded.timings
            phases = _node_phases(loaded, _ceil_seconds(loaded.timings[key]) if cold else None)
            if phases is not None:
                return phases
            if not cold:
                raise NeuronConfigError(
                    "report",
                    loaded.label,
                    f"has {warm_key} but not the warm start's phases line: nothing to feed back",
                )
            total = _ceil_seconds(loaded.timings[key])
            before = _ec2_before_container_seconds(loaded.instance_type or "")
            return MeasuredStartup(
                source=f"{loaded.label}: launch -> InService {total} s less the estimated {before} s boot "
                "and image pull",
                container_ready_seconds=max(1, total - before),
            )
        raise NeuronConfigError("report", loaded.label, "only serving reports hold a start-up")

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source.strip():
            raise NeuronConfigError(
                "measured_startup.source", self.source, "say where the timings come from (report, date)"
            )
        phases = (
            "boot_seconds",
            "image_pull_seconds",
            "artifact_download_seconds",
            "container_ready_seconds",
        )
        for phase in phases:
            value = getattr(self, phase)
            if value is not None:
                _whole_seconds(f"measured_startup.{phase}", value)
        if all(getattr(self, phase) is None for phase in phases):
            raise NeuronConfigError(
                "measured_startup", self, f"give at least one measured phase ({', '.join(phases)})"
            )


def _margin(seconds: float) -> int:
    return math.ceil(SAFETY * seconds)


def is_small_host(weights_gib: float, *, instance_type: str, replicas: int = 1) -> bool:
    """Whether the host has less than ``SMALL_HOST_MEMORY_RATIO`` x the weights its replicas load."""
    return get_instance(instance_type).memory_gib < SMALL_HOST_MEMORY_RATIO * weights_gib * replicas


def load_estimate_seconds(weights_gib: float) -> float:
    """The unmargined container-ready estimate on a host with enough memory (the fitted line)."""
    return LOAD_FLOOR_SECONDS + LOAD_SECONDS_PER_GIB * weights_gib


@dataclass(frozen=True)
class Phase:
    """One budgeted phase of a start-up: its seconds and how they were derived."""

    seconds: int
    explanation: str


def container_ready(
    weights_gib: float,
    *,
    instance_type: str,
    replicas: int = 1,
    measured: MeasuredStartup | None = None,
) -> Phase:
    """Budget from container start until the health check answers (see the module docstring)."""
    if measured is not None and measured.container_ready_seconds is not None:
        seconds = _margin(measured.container_ready_seconds)
        return Phase(
            seconds,
            f"container ready {seconds} s = {SAFETY} x {measured.container_ready_seconds} s measured "
            f"({measured.source})",
        )
    estimate = load_estimate_seconds(weights_gib)
    host = get_instance(instance_type)
    small = is_small_host(weights_gib, instance_type=instance_type, replicas=replicas)
    seconds = _margin(estimate * (SMALL_HOST_FACTOR if small else 1.0))
    held = f"{replicas} x {weights_gib:.1f} GiB" if replicas > 1 else f"{weights_gib:.1f} GiB"
    host_note = (
        f" x {SMALL_HOST_FACTOR:g} (small host: {host.memory_gib} GiB memory for {held} of weights)"
        if small
        else ""
    )
    return Phase(
        seconds,
        f"container ready {seconds} s = {SAFETY} x ({LOAD_FLOOR_SECONDS:.0f} s + {LOAD_SECONDS_PER_GIB} s/GiB x "
        f"{weights_gib:.1f} GiB){host_note}, from published Neuron load times",
    )


def artifact_download(
    weights_gib: float,
    *,
    instance_type: str,
    target: floors.TransferTarget | None = None,
    replicas: int = 1,
    measured: MeasuredStartup | None = None,
) -> Phase:
    """Budget to copy the S3 artifacts onto the instance (without SageMaker's fixed start); ``target``:
    the EC2 node's (default) or SageMaker's (:func:`cdk_neuron.serving.floors.sagemaker_target`)."""
    if measured is not None and measured.artifact_download_seconds is not None:
        seconds = _margin(measured.artifact_download_seconds)
        return Phase(
            seconds,
            f"S3 download {seconds} s = {SAFETY} x {measured.artifact_download_seconds} s measured "
            f"({measured.source})",
        )
    chosen = target or floors.node_target(weights_gib, instance_type=instance_type, replicas=replicas)
    figure = floors.artifact_transfer(weights_gib, instance_type=instance_type, target=chosen)
    seconds = _margin(figure.estimate_seconds)
    return Phase(
        seconds,
        f"S3 download {seconds} s = {SAFETY} x {figure.estimate_seconds:.0f} s ({figure.estimate_why})",
    )


@dataclass(frozen=True)
class StartupPhase:
    """One phase of a start-up: the unmargined estimate, the budget, the floor and where each comes from.

    :ivar basis: ``estimated`` (the fast path's model), ``measured`` (a ``MeasuredStartup``) or
        ``published`` (the load: published Neuron load times).
    :ivar controlled: whether cdk-neuron's own choices set this phase (boot, image pull, transfer),
        as opposed to the Neuron runtime's load; the goal of at most 2 x the floor applies to these.
    :ivar skipped: the phase does not run on this start path (``basis`` ``skipped``).
    """

    name: str
    estimate_seconds: float
    budget_seconds: int
    floor_seconds: float | None
    basis: str
    estimate_why: str
    floor_why: str
    controlled: bool
    skipped: bool = False
    """The phase does not run on this start path (a warm start's image pull): estimate and floor 0."""
    provisioned_floor_seconds: float | None = None
    """The floor with the volume as the fleet provisions it, where slower than the hardware's
    (``floors.PhaseFloor.provisioned_floor_seconds``): explains a gap; the goal uses ``floor_seconds``."""

    @property
    def ratio(self) -> float | None:
        """Estimate over floor, None where no floor is published."""
        return floors.over_floor(self.estimate_seconds, self.floor_seconds)

    @property
    def budget_ratio(self) -> float | None:
        """Budget over floor, None where no floor is published."""
        return floors.over_floor(self.budget_seconds, self.floor_seconds)


@dataclass(frozen=True)
class StartupModel:
    """Every phase of one fleet's start-up, in order, and the published load figure it follows."""

    backend: str
    instance_type: str
    weights_gib: float
    phases: tuple[StartupPhase, ...]
    load_source: str
    path: str = floors.COLD
    """``cold`` (a new launch) or ``warm`` (a stopped warm-pool instance started again); SageMaker: cold."""

    @property
    def controlled_estimate_seconds(self) -> float:
        """Boot, image pull and transfer, unmargined: the phases the goals of issue 25 are about."""
        return sum(p.estimate_seconds for p in self.phases if p.controlled)

    @property
    def estimate_seconds(self) -> float:
        return sum(p.estimate_seconds for p in self.phases)

    @property
    def budget_seconds(self) -> int:
        return sum(p.budget_seconds for p in self.phases)

    def phase(self, name: str) -> StartupPhase:
        for phase in self.phases:
            if phase.name == name:
                return phase
        raise KeyError(f"no phase {name!r}; phases: {', '.join(p.name for p in self.phases)}")


def nearest_published_load(weights_gib: float) -> LoadTime:
    """The published load measurement closest in weights (what the load estimate follows there)."""
    measured = [t for t in PUBLISHED_LOAD_TIMES if t.kind in ("measured",)]
    return min(measured, key=lambda t: abs(t.weights_gib - weights_gib))


def _controlled_phase(figure: floors.PhaseFloor, measured_seconds: int | None, source: str) -> StartupPhase:
    if figure.skipped:
        return StartupPhase(
            figure.phase, 0.0, 0, figure.floor_seconds, "skipped", figure.estimate_why, figure.floor_why,
            True, skipped=True,
        )  # fmt: skip
    if measured_seconds is not None:
        return StartupPhase(
            figure.phase, float(measured_seconds), _margin(measured_seconds), figure.floor_seconds,
            "measured", f"{measured_seconds} s measured ({source})", figure.floor_why, True,
            provisioned_floor_seconds=figure.provisioned_floor_seconds,
        )  # fmt: skip
    return StartupPhase(
        figure.phase, figure.estimate_seconds, _margin(figure.estimate_seconds), figure.floor_seconds,
        "estimated", figure.estimate_why, figure.floor_why, True,
        provisioned_floor_seconds=figure.provisioned_floor_seconds,
    )  # fmt: skip


def _startup_model(
    label: str,
    weights_gib: float,
    *,
    node_phases: bool,
    target: floors.TransferTarget | None,
    instance_type: str,
    replicas: int,
    measured: MeasuredStartup | None,
    transfer_start_seconds: int = 0,
    transfer_min_budget_seconds: int = 0,
    path: str = floors.COLD,
    warm_pool: bool = False,
) -> StartupModel:
    source = measured.source if measured is not None else ""
    warm = path == floors.WARM
    phases: list[StartupPhase] = []
    if node_phases:
        # The integ suites time a new launch: a measured boot or pull is a cold start's.
        phases.append(
            _controlled_phase(
                floors.warm_boot() if warm else floors.boot(),
                None if measured is None or warm else measured.boot_seconds,
                source,
            )
        )
        phases.append(
            _controlled_phase(
                floors.warm_image_pull()
                if warm
                else floors.image_pull(
                    instance_type, in_ram=target is not None and target.in_ram, warm_pool=warm_pool
                ),
                None if measured is None or warm else measured.image_pull_seconds,
                source,
            )
        )
    if target is not None:
        transfer_figure = floors.warm_artifact_transfer if warm else floors.artifact_transfer
        figure = transfer_figure(weights_gib, instance_type=instance_type, target=target)
        transfer = _controlled_phase(
            figure, None if measured is None else measured.artifact_download_seconds, source
        )
        if transfer_start_seconds or transfer_min_budget_seconds:
            # The budget is the deployed timeout: SageMaker's fixed start before the copy, then the copy,
            # and at least what the deployed timeout allows (sagemaker_timeouts' 40 GB rule).
            budget = max(transfer.budget_seconds + transfer_start_seconds, transfer_min_budget_seconds)
            transfer = replace(transfer, budget_seconds=budget)
        phases.append(transfer)
    ready = container_ready(weights_gib, instance_type=instance_type, replicas=replicas, measured=measured)
    in_ram = target is not None and target.in_ram
    load_floor, load_floor_why = floors.load_floor(weights_gib, instance_type=instance_type, in_ram=in_ram)
    nearest = nearest_published_load(weights_gib)
    if measured is not None and measured.container_ready_seconds is not None:
        estimate, basis, why = float(measured.container_ready_seconds), "measured", f"measured ({source})"
        load_source = f"measured: {source}"
    else:
        small = is_small_host(weights_gib, instance_type=instance_type, replicas=replicas)
        estimate = load_estimate_seconds(weights_gib) * (SMALL_HOST_FACTOR if small else 1.0)
        basis = "published"
        why = f"{LOAD_FLOOR_SECONDS:.0f} s + {LOAD_SECONDS_PER_GIB} s/GiB x {weights_gib:.1f} GiB" + (
            f" x {SMALL_HOST_FACTOR:g} (small host)" if small else ""
        )
        load_source = (
            f"published Neuron load times (line through M1, M2, M4); nearest: {nearest.label}, "
            f"{nearest.seconds} s for {nearest.weights_gib:.1f} GiB ({nearest.source})"
        )
    phases.append(
        StartupPhase(
            "load and warm-up", estimate, ready.seconds, load_floor, basis, why, load_floor_why, False
        )
    )
    return StartupModel(
        label, instance_type.removeprefix("ml."), weights_gib, tuple(phases), load_source, path=path
    )


def ec2_startup_model(
    weights_gib: float,
    *,
    precompiled: bool,
    instance_type: str,
    replicas: int = 1,
    measured: MeasuredStartup | None = None,
    path: str = floors.COLD,
    warm_pool: bool = False,
) -> StartupModel:
    """An EC2 serving instance's start-up, phase by phase: boot, image pull, artifact transfer (S3
    artifacts only), load and warm-up; each with its estimate, budget (``SAFETY`` x estimate, the load:
    :func:`container_ready`), floor and ratio.

    ``path``: ``cold`` (default; a new launch, what every budget is sized for) or ``warm`` (a stopped
    warm-pool instance started again: no node set-up, no image pull, the artifacts fetched again only
    into a RAM-backed directory; :mod:`cdk_neuron.serving.start_paths` says which events take which).
    The load is the same on both paths: the Neuron runtime loads the model at every start."""
    if path not in floors.START_PATHS:
        raise NeuronConfigError("path", path, f"use one of {', '.join(floors.START_PATHS)}")
    target = (
        floors.node_target(weights_gib, instance_type=instance_type, replicas=replicas, warm_pool=warm_pool)
        if precompiled
        else None
    )
    return _startup_model(
        "ec2",
        weights_gib,
        node_phases=True,
        target=target,
        instance_type=instance_type,
        replicas=replicas,
        measured=measured,
        path=path,
        warm_pool=warm_pool,
    )


def sagemaker_startup_model(
    weights_gib: float,
    *,
    precompiled: bool,
    instance_type: str,
    replicas: int = 1,
    measured: MeasuredStartup | None = None,
    volume_gib: float | None = None,
) -> StartupModel:
    """A SageMaker endpoint instance's start-up as its two timeouts see it: the model download (S3
    artifacts only) and the container's load and warm-up. SageMaker provisions the instance and pulls
    the image before either starts. ``replicas`` is the plan's (SageMaker runs one container). The
    download's budget is what the variant gets as ``ModelDataDownloadTimeoutInSeconds``: the fixed
    start and the margined copy, and never less than what 40 GB needs (:func:`sagemaker_timeouts`)."""
    deployed = (
        sagemaker_timeouts(
            weights_gib,
            precompiled=True,
            instance_type=instance_type,
            measured=measured,
            volume_gb=None if volume_gib is None else math.ceil(volume_gib * _GIB_TO_GB),
        ).model_data_download_seconds
        if precompiled
        else 0
    )
    return _startup_model(
        "sagemaker",
        weights_gib,
        node_phases=False,
        target=floors.sagemaker_target(weights_gib, volume_gib=volume_gib) if precompiled else None,
        instance_type=instance_type,
        replicas=replicas,
        measured=measured,
        transfer_start_seconds=SAGEMAKER_DOWNLOAD_START_SECONDS,
        transfer_min_budget_seconds=deployed,
    )


@dataclass(frozen=True)
class Ec2Startup:
    """How long an EC2 serving instance may take to become ready, and why.

    :ivar boot_seconds: the boot phase's budget: launch until the node programs run and can record
        their first lifecycle heartbeat (:func:`cdk_neuron.timeouts.hook_heartbeat_seconds`).
    """

    seconds: int
    explanation: str
    boot_seconds: int


def ec2_startup(
    weights_gib: float,
    *,
    precompiled: bool,
    instance_type: str,
    replicas: int = 1,
    measured: MeasuredStartup | None = None,
    warm_pool: bool = False,
) -> Ec2Startup:
    """Time from launch until every replica on an instance answers its health check.

    Used for the node's start-up deadline and the CloudFormation signal timeout; the launch hook's
    heartbeat is the progress window (:data:`cdk_neuron.timeouts.LIFECYCLE_PROGRESS_WINDOW`), which
    the node extends while it makes progress. Artifacts from S3 are synced before the containers start; a Hub model is
    downloaded by the container, which the container budget already covers. The phases are those of
    :func:`ec2_startup_model`.
    """
    model = ec2_startup_model(
        weights_gib,
        precompiled=precompiled,
        instance_type=instance_type,
        replicas=replicas,
        measured=measured,
        warm_pool=warm_pool,
    )
    seconds = model.budget_seconds
    parts = [
        f"{p.name} {p.budget_seconds} s"
        + (f" = {SAFETY} x {p.estimate_seconds:.0f} s" if p.controlled else "")
        + f" ({p.estimate_why})"
        for p in model.phases
    ]
    explanation = " + ".join(parts) + f" = {seconds} s"
    if seconds > STARTUP_MAX_SECONDS:
        raise NeuronConfigError(
            "parameters",
            round(weights_gib, 1),
            f"an instance would need ~{seconds} s to start ({explanation}), more than the "
            f"{STARTUP_MAX_SECONDS} s an Auto Scaling lifecycle hook can be extended; quantize the model, "
            "or time a deployment and pass the measurements (MeasuredStartup)",
        )
    return Ec2Startup(
        seconds=seconds, explanation=explanation, boot_seconds=model.phase("instance boot").budget_seconds
    )


@dataclass(frozen=True)
class SageMakerTimeouts:
    """``ModelDataDownloadTimeoutInSeconds`` and ``ContainerStartupHealthCheckTimeoutInSeconds``."""

    model_data_download_seconds: int
    container_startup_health_check_seconds: int
    explanation: str


def _check_sagemaker_limit(field: str, seconds: int, why: str) -> int:
    if seconds > SAGEMAKER_TIMEOUT_MAX_SECONDS:
        raise NeuronConfigError(
            field,
            seconds,
            f"SageMaker allows at most {SAGEMAKER_TIMEOUT_MAX_SECONDS} s ({why}); quantize the model, pass "
            "measured start-up times (MeasuredStartup) if a deployment was timed, or use Ec2InferenceFleet, "
            f"whose start-up may take up to {STARTUP_MAX_SECONDS} s",
        )
    return max(SAGEMAKER_TIMEOUT_MIN_SECONDS, seconds)


def sagemaker_timeouts(
    weights_gib: float,
    *,
    precompiled: bool,
    instance_type: str,
    model_data_download_seconds: int | None = None,
    container_startup_health_check_seconds: int | None = None,
    measured: MeasuredStartup | None = None,
    volume_gb: int | None = None,
) -> SageMakerTimeouts:
    """Both SageMaker timeouts, clamped to >= 60 s; > 3,600 s is refused naming the field.

    With ``precompiled`` (S3 artifacts) SageMaker downloads the model before starting the container,
    so the download has its own timeout; from the Hub the container downloads during its start-up
    health check (inside the container budget). Explicit seconds win over measurements, which win
    over the estimate; all are held to the same limits. A SageMaker endpoint runs one container.

    ``volume_gb``: the variant's ``VolumeSizeInGB`` when given (its gp2 throughput depends on its size);
    default: the size :func:`sagemaker_volume_gb` derives.
    """
    if model_data_download_seconds is not None:
        download = _whole_seconds("model_data_download_timeout_seconds", model_data_download_seconds)
        download_why = "given"
    elif precompiled:
        target = floors.sagemaker_target(
            weights_gib, volume_gib=None if volume_gb is None else volume_gb * 1e9 / 2**30
        )
        phase = artifact_download(weights_gib, instance_type=instance_type, target=target, measured=measured)
        download = SAGEMAKER_DOWNLOAD_START_SECONDS + phase.seconds
        download_why = f"{SAGEMAKER_DOWNLOAD_START_SECONDS} s start + {phase.explanation}"
        documented_gib = SAGEMAKER_DEFAULT_DOWNLOAD_HOLDS_GB / _GIB_TO_GB
        estimated = measured is None or measured.artifact_download_seconds is None
        if estimated and weights_gib < documented_gib:
            held = artifact_download(documented_gib, instance_type=instance_type, target=target)
            if SAGEMAKER_DOWNLOAD_START_SECONDS + held.seconds > download:
                download = SAGEMAKER_DOWNLOAD_START_SECONDS + held.seconds
                download_why = (
                    f"{download} s, a floor at what {SAGEMAKER_DEFAULT_DOWNLOAD_HOLDS_GB:.0f} GB needs at the modelled "
                    f"rate: SageMaker documents its (unpublished) default as enough up to "
                    f"{SAGEMAKER_DEFAULT_DOWNLOAD_HOLDS_GB:.0f} GB; this model's own copy would give "
                    f"{SAGEMAKER_DOWNLOAD_START_SECONDS + phase.seconds} s "
                    f"({SAGEMAKER_DOWNLOAD_START_SECONDS} s start + {held.explanation})"
                )
    else:
        download, download_why = SAGEMAKER_TIMEOUT_MIN_SECONDS, "nothing to download from S3"
    if container_startup_health_check_seconds is not None:
        startup = _whole_seconds(
            "container_startup_health_check_timeout_seconds", container_startup_health_check_seconds
        )
        startup_why = "given"
    else:
        phase = container_ready(weights_gib, instance_type=instance_type, measured=measured)
        startup, startup_why = phase.seconds, phase.explanation
    download = _check_sagemaker_limit("model_data_download_timeout_seconds", download, download_why)
    startup = _check_sagemaker_limit("container_startup_health_check_timeout_seconds", startup, startup_why)
    return SageMakerTimeouts(
        model_data_download_seconds=download,
        container_startup_health_check_seconds=startup,
        explanation=f"download {download} s ({download_why}); start-up {startup} s ({startup_why})",
    )


def ec2_data_volume_gib(weights_gib: float, *, precompiled: bool = True) -> int:
    """Size of the EC2 data volume (images, the weights it holds, caches), rounded up to 10 GiB:
    one copy of precompiled S3 artifacts (also where they go to RAM: the volume takes them when they do
    not fit the tmpfs), two from the Hub (checkpoint and export)."""
    copies = PRECOMPILED_WEIGHT_COPIES if precompiled else HUB_WEIGHT_COPIES
    raw = IMAGES_GIB + copies * weights_gib + SCRATCH_GIB
    return int(math.ceil(raw / 10) * 10)


def sagemaker_volume_gb(weights_gib: float, *, given: int | None = None) -> int:
    """``VolumeSizeInGB`` for a SageMaker variant: two copies of the weights plus 20 GiB, in GB (max 512)."""
    size = given if given is not None else math.ceil((2 * weights_gib + SCRATCH_GIB) * _GIB_TO_GB)
    whole_number("volume_size_gb", size, unit="GB")
    if size > SAGEMAKER_VOLUME_MAX_GB:
        raise NeuronConfigError(
            "volume_size_gb",
            size,
            f"SageMaker ML storage volumes hold at most {SAGEMAKER_VOLUME_MAX_GB} GB; quantize the model "
            "or use Ec2InferenceFleet",
        )
    return size


def sagemaker_storage_gb(instance_type: str, weights_gib: float, *, given: int | None = None) -> int | None:
    """``VolumeSizeInGB`` for a variant on ``instance_type``, or None where the instance has local NVMe.

    SageMaker hosts the model on an instance's own NVMe storage when it has some (trn1, trn1n,
    trn2) and refuses ``VolumeSizeInGB`` for it ("Host instance storage volumes", SageMaker
    Developer Guide, https://docs.aws.amazon.com/sagemaker/latest/dg/host-instance-storage.html;
    deploy rule E9605). Inf2 is EBS-only and gets :func:`sagemaker_volume_gb`.
    """
    if get_instance(instance_type).nvme_gb == 0:
        return sagemaker_volume_gb(weights_gib, given=given)
    if given is not None:
        raise NeuronConfigError(
            "volume_size_gb",
            given,
            f"ml.{instance_type} serves from its local NVMe storage and SageMaker accepts no VolumeSizeInGB "
            "for it: remove volume_size_gb",
        )
    return None


__all__ = [
    "LOAD_FLOOR_SECONDS",
    "LOAD_SECONDS_PER_GIB",
    "PUBLISHED_LOAD_TIMES",
    "SAFETY",
    "STARTUP_MAX_SECONDS",
    "Ec2Startup",
    "LoadTime",
    "MeasuredStartup",
    "Phase",
    "SageMakerTimeouts",
    "StartupModel",
    "StartupPhase",
    "artifact_download",
    "container_ready",
    "ec2_data_volume_gib",
    "ec2_startup",
    "ec2_startup_model",
    "is_small_host",
    "load_estimate_seconds",
    "nearest_published_load",
    "sagemaker_startup_model",
    "sagemaker_storage_gb",
    "sagemaker_timeouts",
    "sagemaker_volume_gb",
]
