"""The change matrix: the changes users make to cdk.json, and what each does to the deployed stacks.

Each :class:`Change` edits one environment of cdk.json. :func:`synthesize_environment` builds only
that environment, in-process, without the built-in template validator (the templates are the same;
the validator's own start-up costs seconds); the baseline is the whole app's synthesis the test
session already shares. :func:`cdk_neuron.lifecycle.impact` then classifies every resource.

**Adding a change** is one line in :data:`CHANGES`: a name, the environment it is made in, the
cdk.json keys it sets (dotted paths below the environment), and, when the change *must* replace or
delete something stateful, what and why (``replaces``). Every other change is "common": the gate
(tests/test_change_matrix.py) refuses it if it replaces or deletes a file system, bucket, key, vault
or log group. Then regenerate the table in docs/lifecycle.md: ``make change-matrix-doc``.

**Adding a resource type** to what counts as stateful, or a service's update rule, is one entry in
:mod:`cdk_neuron.lifecycle.rules` (``STATEFUL`` or ``SERVICE_RULES``).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdk_neuron import lifecycle
from cdk_neuron.lifecycle import Change as Kind
from cdk_neuron.lifecycle import StackImpact

NEWER_AMI_RELEASE = "al2023-ami-ecs-neuron-hvm-2023.0.20261020-kernel-6.1-x86_64"
CERTIFICATE = "arn:aws:acm:us-west-2:222222222222:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


@dataclass(frozen=True, eq=False)
class Change:
    """One edit to one environment of cdk.json."""

    name: str
    env: str
    sets: Mapping[str, Any] = field(default_factory=dict)
    replaces: Mapping[str, str] = field(default_factory=dict)
    """Stateful resources (logical-id prefix, without the stack) this change must replace or delete,
    each with the reason: what ``cdk-neuron impact`` warns about before the deploy. Empty: a common
    change, which may replace or delete nothing stateful."""
    new_releases: bool = False
    """No edit at all: what a deploy does after AWS publishes new releases of what floats."""

    @property
    def common(self) -> bool:
        return not self.replaces

    def apply(self, environments: Mapping[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(dict(environments))
        for path, value in self.sets.items():
            node = changed[self.env]
            *parents, last = path.split(".")
            for key in parents:
                node = node.setdefault(key, {})
            node[last] = value
        return changed


_MODEL = "serving.model"

CHANGES: tuple[Change, ...] = (
    Change(
        "serving artifact (EC2)",
        "prod",
        {
            f"{_MODEL}.artifact_uri": "s3://cdk-neuron-prod-models/meta-llama/Meta-Llama-3-70B-Instruct/neuron-tp24-bs4-seq4096-v2/"
        },
    ),
    Change(
        "serving artifact (SageMaker)",
        "staging",
        {
            f"{_MODEL}.artifact_uri": "s3://cdk-neuron-staging-models/meta-llama/Llama-3.2-3B-Instruct/run-7-step-1200/"
        },
    ),
    Change("serving instance type (SageMaker)", "staging", {"serving.instance_type": "inf2.8xlarge"}),
    Change("serving instance type (EC2)", "dev", {"serving.instance_type": "inf2.8xlarge"}),
    Change(
        "serving engine",
        "dev",
        {"serving.engine": "tgi"},
        replaces={
            "CompilationAwsCliCache": "the compile task runs optimum-neuron's export only, so compilation.enabled "
            "defaults to false for tgi and the ModelCompilation goes: its cache of the public AWS CLI image with it "
            "(dev deletes; the next compile environment pulls it again)",
            "CompilationLogs": "the ModelCompilation's compile logs go with it (dev deletes)",
        },
    ),
    Change("serving capacity", "prod", {"serving.min_capacity": 3, "serving.max_capacity": 10}),
    Change("compile artifact prefix", "staging", {"compilation.artifact_prefix": "compiled-v2/"}),
    Change(
        "compile task removed",
        "dev",
        {"compilation.enabled": False},
        replaces={
            "CompilationAwsCliCache": "the compile task's cache of the public AWS CLI image goes with it (dev "
            "deletes; a compile environment pulls it again)",
            "CompilationLogs": "the compile logs go with the task (dev deletes)",
        },
    ),
    Change("certificate added", "prod", {"serving.certificate_arn": CERTIFICATE}),
    # Issue 25: the pool's size is its MaxGroupPreparedCapacity, updated in place (no interruption).
    Change("warm pool sized", "dev", {"serving.warm_pool_size": 1}),
    Change("training node count", "prod", {"training.max_nodes": 32, "training.plan.nodes": 32}),
    Change("training instance type", "staging", {"training.instance_type": "trn1n.32xlarge"}),
    Change(
        "training capacity",
        "dev",
        {"training.capacity": {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"}},
    ),
    Change("AMI release", "prod", {"ami_release": NEWER_AMI_RELEASE}),
    Change("monitoring only", "staging", {"monitoring.alarm_email": "oncall@example.com"}),
    Change("tags edited", "prod", {"tags.cost-center": "ml-platform"}),
    Change("new AWS releases, no edit", "dev", new_releases=True),
    Change(
        "storage.one_zone",
        "staging",
        {"storage.one_zone": True},
        replaces={
            "CheckpointsFileSystem": "EFS One Zone is a create-only property (AvailabilityZoneName): a new, empty "
            "file system; the old one and its checkpoints are kept (UpdateReplacePolicy Retain), to copy from",
        },
    ),
    Change(
        "serving backend switch (EC2 to SageMaker)",
        "dev",
        # SageMaker has no warm pool: dev's goes with its EC2 fleet (issue 25 gave dev one).
        {"serving.backend": "sagemaker", "serving.min_capacity": 1, "serving.warm_pool": False},
        replaces={
            "FleetAccessLogs": "the EC2 fleet's load balancer goes, and its access-log bucket with it (dev deletes)",
            "FleetReplicaLogs": "the EC2 fleet's replica log group goes with the fleet (dev deletes)",
            "CustomS3AutoDeleteObjectsCustomResourceProviderLogs": "the bucket-emptying provider's log group goes "
            "with the last bucket it empties",
        },
    ),
)


def synthesize_environment(
    environments: Mapping[str, Any], env: str, context: Mapping[str, Any], *, outdir: str | None = None
) -> dict[str, Any]:
    """Synthesize only ``env`` of ``environments``; its templates by stack name. The cloud assembly
    is written to ``outdir`` (kept), else to a temporary folder."""
    import aws_cdk as cdk

    from stacks.app_builder import build_app

    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    try:
        with tempfile.TemporaryDirectory(prefix="cdk-neuron-matrix-") as scratch:
            app = cdk.App(
                context={**context, "environments": dict(environments), "env": env},
                outdir=outdir or scratch,
                builtin_cloud_formation_validation=False,
            )
            (stage,) = build_app(app)
            app.synth()
            return {
                stack.stack_name: json.loads((Path(stage.outdir) / stack.template_file).read_text())
                for stack in stage.stacks
            }
    finally:
        if saved is not None:
            os.environ["CDK_DEFAULT_ACCOUNT"] = saved


def compute(
    environments: Mapping[str, Any],
    baseline: Callable[[str], Mapping[str, Any]],
    context: Mapping[str, Any],
    *,
    afters: dict[Change, Mapping[str, Any]] | None = None,
) -> dict[Change, list[StackImpact]]:
    """Every change's impact on ``baseline(env)`` (the environment's templates before any change).
    ``afters``, when given, receives each change's templates after it (for the retry and teardown
    checks, which must hold after every change too)."""
    results: dict[Change, list[StackImpact]] = {}
    for change in CHANGES:
        before = baseline(change.env)
        after = (
            before
            if change.new_releases
            else synthesize_environment(change.apply(environments), change.env, context)
        )
        if afters is not None:
            afters[change] = after
        results[change] = lifecycle.impact(before, after, new_releases=change.new_releases)
    return results


# -- the result table -----------------------------------------------------------------------------------

# Resource classes for the table, in column order: (title, types).
CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("file system", ("AWS::EFS::FileSystem", "AWS::EFS::MountTarget", "AWS::EFS::AccessPoint")),
    ("buckets", ("AWS::S3::Bucket",)),
    ("keys", ("AWS::KMS::Key",)),
    ("vault", ("AWS::Backup::BackupVault",)),
    ("log groups", ("AWS::Logs::LogGroup",)),
    ("Batch", ("AWS::Batch::ComputeEnvironment", "AWS::Batch::JobQueue", "AWS::Batch::JobDefinition")),
    ("launch templates", ("AWS::EC2::LaunchTemplate", "AWS::EC2::PlacementGroup")),
    ("serving group", ("AWS::AutoScaling::AutoScalingGroup", "AWS::AutoScaling::WarmPool")),
    ("SageMaker", ("AWS::SageMaker::Endpoint", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Model")),
    ("load balancer", ("AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::ElasticLoadBalancingV2::Listener",
                       "AWS::ElasticLoadBalancingV2::TargetGroup")),
    ("IAM", ("AWS::IAM::Role", "AWS::IAM::ManagedPolicy", "AWS::IAM::Policy", "AWS::IAM::InstanceProfile")),
    ("monitoring", ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard", "AWS::Events::Rule",
                    "AWS::SNS::Topic", "AWS::SNS::Subscription")),
    ("network", ("AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::Instance", "AWS::EC2::SecurityGroup",
                 "AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress", "AWS::EC2::Route")),
)  # fmt: skip
# The worst kind in a cell wins.
_ORDER = (Kind.UNCHANGED, Kind.UPDATED, Kind.ADDED, Kind.KEPT, Kind.DELETED, Kind.REPLACED)
_ABBREVIATION = {
    Kind.UNCHANGED: "·",
    Kind.UPDATED: "updated",
    Kind.ADDED: "added",
    Kind.KEPT: "removed, kept",
    Kind.DELETED: "deleted",
    Kind.REPLACED: "**replaced**",
}


def cell(impacts: Sequence[StackImpact], types: tuple[str, ...]) -> str:
    kinds = [r.change for s in impacts for r in s.resources if r.type in types]
    if not kinds:
        return "n/a"
    return _ABBREVIATION[max(kinds, key=_ORDER.index)]


def restarts(impacts: Sequence[StackImpact]) -> list[str]:
    """What restarts, one line per resource that says so."""
    return sorted(
        {
            f"{r.logical_id}: {r.restarts}"
            for s in impacts
            for r in s.resources
            if r.restarts and r.change is not Kind.UNCHANGED
        }
    )


def table(results: Mapping[Change, Sequence[StackImpact]]) -> str:
    """The markdown table: one row per change, one column per resource class, then what restarts."""
    header = ["Change (environment)", *(title for title, _ in CLASSES)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for change, impacts in results.items():
        lines.append(
            f"| {change.name} ({change.env}) | "
            + " | ".join(cell(impacts, types) for _, types in CLASSES)
            + " |"
        )
    lines += ["", "What restarts, per change:", ""]
    for change, impacts in results.items():
        found = restarts(impacts)
        lines.append(
            f"- **{change.name}** ({change.env}): " + ("; ".join(found) if found else "nothing") + "."
        )
    losses = [
        (change, stack, resource)
        for change, impacts in results.items()
        for stack, resource in lifecycle.stateful_losses(impacts)
    ]
    lines += ["", "Data at risk (stateful resources replaced or deleted):", ""]
    lines += [f"- **{c.name}** ({c.env}): {r.data_at_risk}" for c, _, r in losses] or ["- none"]
    return "\n".join(lines) + "\n"


__all__ = ["CHANGES", "CLASSES", "Change", "cell", "compute", "restarts", "synthesize_environment", "table"]
