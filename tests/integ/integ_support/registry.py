"""Every suite: what it proves, whether it runs by default, and what it keeps running (for the cost).

Hours are this project's estimates for one run, not AWS figures: ``expected`` is a run that passes,
``most`` is one where every bounded wait runs out (job timeouts, waiters, start-up budgets) before the
stacks are destroyed. The estimate prices them with ``cdk_neuron``'s own tables (:mod:`.estimate`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerators:
    """Instances a suite runs while it runs: ``count`` x ``instance_type`` for some hours."""

    instance_type: str
    count: int
    expected_hours: float
    most_hours: float
    sagemaker: bool = False


@dataclass(frozen=True)
class Compile:
    """A ModelCompilation task (Fargate) a suite runs before its fleet exists, for some hours."""

    expected_hours: float
    most_hours: float
    """The compile step's own timeout (``integ_support.compiled.COMPILE_TIMEOUT``), rounded up."""


SERVING_COMPILE = Compile(expected_hours=0.25, most_hours=0.85)
TRAINED_COMPILE = Compile(expected_hours=0.25, most_hours=0.85)
"""Converting and exporting the fine-tuned 0.36B checkpoint: as for the serving suites."""
"""Exporting the 0.49B serving model from the Hub at TP 2 on 16 vCPU: a quarter hour expected (this
project's estimate, not measured), at most the step's 50-minute timeout."""


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    proves: str
    accelerators: Accelerators
    run_expected_hours: float
    """The whole run: deploy, assertions, destroy (the NAT gateway, its address, the ALB)."""
    run_most_hours: float
    kms_keys: int
    load_balancer: bool = False
    opt_in: bool = False
    compile: Compile | None = None
    more_accelerators: tuple[Accelerators, ...] = ()
    """Instances the suite runs besides :attr:`accelerators` (train_compile_serve: the serving fleet)."""
    hyperpod_controller: str | None = None
    """A HyperPod suite's controller type (``ml.m5.xlarge``): it bills for the whole run, like the worker."""

    @property
    def all_accelerators(self) -> tuple[Accelerators, ...]:
        return (self.accelerators, *self.more_accelerators)


SUITES: dict[str, SuiteInfo] = {
    s.name: s
    for s in (
        SuiteInfo(
            "training_smoke",
            "a trn1.2xlarge Batch job sees its NeuronCores (neuron-ls), all-reduces on them, and writes "
            "and reads back 256 MiB on the checkpoint store",
            Accelerators("trn1.2xlarge", 1, expected_hours=0.5, most_hours=1.5),
            run_expected_hours=1.0,
            run_most_hours=2.0,
            kms_keys=2,
        ),
        SuiteInfo(
            "training_efa",
            "two trn1.32xlarge in the placement group all-reduce over EFA above 10 GiB/s bus bandwidth",
            Accelerators("trn1.32xlarge", 2, expected_hours=0.75, most_hours=1.5),
            run_expected_hours=1.5,
            run_most_hours=2.5,
            kms_keys=1,
            opt_in=True,
        ),
        SuiteInfo(
            "training_hyperpod",
            "a HyperPod Slurm cluster (controller + one trn1.32xlarge) is InService; on it sinfo shows the "
            "worker idle, the cluster's sbatch script runs a two-rank nccom-test all-reduce, and a checkpoint "
            "written into the store reads back with its SHA-256",
            # HyperPod does not scale to zero: the worker bills from creation to deletion, i.e. the run.
            Accelerators("trn1.32xlarge", 1, expected_hours=2.0, most_hours=3.5, sagemaker=True),
            run_expected_hours=2.0,
            run_most_hours=3.5,
            kms_keys=2,
            opt_in=True,
            hyperpod_controller="ml.m5.xlarge",
        ),
        SuiteInfo(
            "serving_ec2",
            "the suite compiles its model on Fargate (manifest checked), then an inf2.xlarge fleet serving "
            "that artifact is InService and healthy behind the internal ALB and answers a chat completion, "
            "from a Lambda in the VPC, with the served model's name",
            Accelerators("inf2.xlarge", 1, expected_hours=0.75, most_hours=1.5),
            run_expected_hours=1.25,
            run_most_hours=2.85,
            kms_keys=2,
            load_balancer=True,
            compile=SERVING_COMPILE,
        ),
        SuiteInfo(
            "serving_sagemaker",
            "the same model, compiled by the suite, on an ml.inf2.xlarge endpoint is InService and answers "
            "InvokeEndpoint",
            Accelerators("inf2.xlarge", 1, expected_hours=0.75, most_hours=1.5, sagemaker=True),
            run_expected_hours=1.25,
            run_most_hours=2.85,
            kms_keys=2,
            compile=SERVING_COMPILE,
        ),
        SuiteInfo(
            "scale_from_zero",
            "a fleet at zero with dev's warm pool, serving the model the suite compiled, starts the pool's "
            "stopped instance on the first request and answers within its start-up budget",
            # The pool's instance runs twice: prepared (boot, pull, transfer, then stopped) and woken
            # (boot, load). At most, each for the start-up budget (1,217 s), and the wait for the pool
            # (the budget + 300 s) is added to the run.
            Accelerators("inf2.xlarge", 1, expected_hours=0.5, most_hours=1.85),
            run_expected_hours=1.25,
            run_most_hours=3.25,
            kms_keys=2,
            load_balancer=True,
            compile=SERVING_COMPILE,
        ),
        SuiteInfo(
            "train_compile_serve",
            "a trn1.2xlarge Batch job fine-tunes a model a few steps and saves an NxD checkpoint on the "
            "checkpoint store; the ModelCompilation task converts and compiles that checkpoint; an "
            "inf2.xlarge fleet serves the artifact and answers a chat completion with the model's name",
            # The job: node launch, image pull, Hub download, graph compile, 5 steps, save; at most the
            # training step's 55-minute wait (the job's own timeout is 45 minutes).
            Accelerators("trn1.2xlarge", 1, expected_hours=0.75, most_hours=1.5),
            run_expected_hours=2.25,
            run_most_hours=4.0,
            kms_keys=4,
            load_balancer=True,
            opt_in=True,
            compile=TRAINED_COMPILE,
            more_accelerators=(Accelerators("inf2.xlarge", 1, expected_hours=0.75, most_hours=1.5),),
        ),
    )
}
DEFAULT_SUITES = tuple(name for name, s in SUITES.items() if not s.opt_in)


def selected(names: list[str]) -> list[SuiteInfo]:
    """The named suites (the default ones when none is named); an unknown name stops the run."""
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise SystemExit(f"unknown suite(s) {', '.join(unknown)}; suites: {', '.join(SUITES)}")
    return [SUITES[n] for n in (names or DEFAULT_SUITES)]
