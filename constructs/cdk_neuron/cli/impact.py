"""``cdk-neuron impact``: what a deploy will do, before it does it.

Two ways to say "before":

- ``impact OLD_ASSEMBLY NEW_ASSEMBLY``: two cloud assemblies (e.g. main's cdk.out and a pull
  request's), offline; the cost change is ``cost --diff``'s.
- ``impact --deployed``: the deployed templates (CloudFormation ``GetTemplate``) against a new
  synthesis (``--app DIR``, default ./cdk.out, or ``--synth``); the cost change prices the workload
  records the deployed templates carry (their ``Metadata``). It also finds a stack whose first
  create failed and that termination protection keeps ``cdk deploy`` from retrying; ``--unblock``
  turns protection off on such a stack (it holds no resource).

For every environment: what is replaced, what restarts (an Auto Scaling group's instances and how
much of it stays in service, a Batch infrastructure update and how long running jobs get, a
SageMaker endpoint),
which data is at risk, what a service would refuse, and values resolved anew at every deploy. With
``--deployed`` it also asks the services about their state now: a HyperPod cluster update while the
cluster is not InService or deep health checks run is refused by HyperPod
(:mod:`cdk_neuron.lifecycle.live`; ``sagemaker:DescribeCluster``, ``sagemaker:ListClusterNodes`` and
``cloudformation:DescribeStackResource``). The
classification is :func:`cdk_neuron.lifecycle.impact`'s: the resource schemas' create-only
properties plus the services' own update rules. ``--fail-on-risk`` exits 1 when data is at risk or
an update would be refused: a gate for CI or for ``make deploy``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdk_neuron import lifecycle
from cdk_neuron.cli import assembly, cost, source
from cdk_neuron.cli.command import Command
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Column, Report
from cdk_neuron.cli.result import OMIT_IF_NONE, Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import ErrorCollector, NeuronConfigError, one_of
from cdk_neuron.lifecycle import Change, live
from cdk_neuron.lifecycle.deployed import DeployedStack, deployed_stack, physical_id, unblock

_CHANGES_SHOWN = (Change.REPLACED, Change.DELETED, Change.KEPT, Change.ADDED, Change.UPDATED)


@dataclass(frozen=True)
class ResourceChange:
    stack: str
    logical_id: str
    type: str
    change: str
    reasons: list[str]
    restarts: str | None = field(default=None, metadata=OMIT_IF_NONE)
    fails: str | None = field(default=None, metadata=OMIT_IF_NONE)
    data_at_risk: str | None = field(default=None, metadata=OMIT_IF_NONE)


@dataclass(frozen=True)
class StackChange:
    stack: str
    status: str
    """``created``, ``deleted``, ``changed`` or ``unchanged``."""
    counts: dict[str, int]
    floating: list[str]
    """SSM parameters the stack resolves anew at every deployment."""


@dataclass(frozen=True)
class ArtifactChange:
    """The fleet serves another artifact: how the change rolls out and what happens to the old one."""

    backend: str
    before: str | None
    """The artifact served now (None: the Hub checkpoint, compiled on each instance)."""
    after: str | None
    rollout: str
    old_artifact: str


@dataclass(frozen=True)
class EnvironmentImpact:
    name: str
    stacks: list[StackChange]
    replaced: list[ResourceChange]
    restarts: list[ResourceChange]
    data_at_risk: list[ResourceChange]
    refused: list[ResourceChange]
    cost: str | None
    blocked: list[str]
    """Stacks whose failed first create termination protection keeps cdk deploy from retrying."""
    unblocked: list[str]
    artifacts: list[ArtifactChange] = field(default_factory=list)
    """A change of the artifact the fleet serves (docs/lifecycle.md, "serving artifact")."""

    @property
    def at_risk(self) -> bool:
        return bool(self.data_at_risk or self.refused or self.blocked)


@dataclass(frozen=True)
class ImpactResult(Result):
    command = "impact"
    before: str
    after: str
    environments: list[EnvironmentImpact]
    summary: str


def _resource(stack: str, found: lifecycle.ResourceImpact) -> ResourceChange:
    return ResourceChange(
        stack=stack,
        logical_id=found.logical_id,
        type=found.type,
        change=found.change.value,
        reasons=list(found.reasons),
        restarts=found.restarts,
        fails=found.fails,
        data_at_risk=found.data_at_risk,
    )


def artifact_changes(old: Deployment | None, new: Deployment | None) -> list[ArtifactChange]:
    """What a change of the served artifact does, from the two sides' workload records."""
    if old is None or new is None or old.serving is None or new.serving is None:
        return []
    before, after = old.serving.model.artifact_uri, new.serving.model.artifact_uri
    if before == after:
        return []
    reads = f"the new instances read {after}" if after else "the new instances download the Hub checkpoint"
    if new.serving.backend == "sagemaker":
        rollout = (
            "a new SageMaker model and endpoint config; the endpoint update starts the new configuration's "
            "instances at the current count, shifts traffic once they are healthy, then stops the old ones "
            f"(blue/green, no capacity drop); {reads}, and the old model keeps its read grant on the old "
            "artifact until CloudFormation's clean-up phase"
        )
    else:
        rollout = (
            "an instance refresh that keeps 100% of the desired capacity healthy, launching each replacement "
            f"before terminating the instance it replaces (no capacity drop); {reads}, and the instances not yet "
            "replaced keep their read grant on the old artifact until CloudFormation's clean-up phase"
        )
    if before is None:
        kept = "none: the fleet served the Hub checkpoint"
    else:
        kept = (
            f"{before} is kept: cdk-neuron never deletes an artifact; delete it yourself once nothing serves it "
            "and you will not roll back to it"
        )
    return [
        ArtifactChange(
            backend=new.serving.backend, before=before, after=after, rollout=rollout, old_artifact=kept
        )
    ]


def _environment(
    name: str,
    impacts: Sequence[lifecycle.StackImpact],
    *,
    cost_line: str | None,
    blocked: Sequence[str] = (),
    unblocked: Sequence[str] = (),
    artifacts: Sequence[ArtifactChange] = (),
) -> EnvironmentImpact:
    def every(predicate: Any) -> list[ResourceChange]:
        return [_resource(s.stack, r) for s in impacts for r in s.resources if predicate(r)]

    return EnvironmentImpact(
        name=name,
        stacks=[
            StackChange(
                stack=s.stack,
                status=s.status,
                counts={k.value: n for k in _CHANGES_SHOWN if (n := len(s.of(k)))},
                floating=[ssm for _, ssm in s.floating],
            )
            for s in impacts
        ],
        replaced=every(lambda r: r.change is Change.REPLACED),
        restarts=every(lambda r: r.restarts is not None and r.change is not Change.UNCHANGED),
        data_at_risk=every(lambda r: r.data_at_risk is not None),
        refused=every(lambda r: r.fails is not None),
        cost=cost_line,
        blocked=list(blocked),
        unblocked=list(unblocked),
        artifacts=list(artifacts),
    )


def _summary(environments: Sequence[EnvironmentImpact]) -> str:
    replaced = sum(len(e.replaced) for e in environments)
    risk = sum(len(e.data_at_risk) for e in environments)
    refused = sum(len(e.refused) for e in environments)
    blocked = sum(len(e.blocked) for e in environments)
    parts = [f"{replaced} resource(s) replaced", f"{risk} with data at risk"]
    if refused:
        parts.append(f"{refused} update(s) a service will refuse")
    if blocked:
        parts.append(f"{blocked} stack(s) cannot be retried until unblocked")
    return "Impact: " + ", ".join(parts)


# -- reading the two sides -----------------------------------------------------------------------


def _by_environment(stacks: Sequence[assembly.Stack]) -> dict[str, dict[str, assembly.Stack]]:
    """Stacks by environment (a Stage's name; top-level stacks by Region), then by stack name."""
    grouped: dict[str, dict[str, assembly.Stack]] = {}
    for stack in stacks:
        name = stack.stage or stack.region or assembly.AGNOSTIC
        grouped.setdefault(name, {})[stack.stack_name] = stack
    return grouped


def _selected(names: Sequence[str], env: str | None) -> list[str]:
    if env is None:
        return list(names)
    if env not in names:
        raise NeuronConfigError(
            "--env", env, f"no such environment in the assembly; there are {one_of(names)}"
        )
    return [env]


def _cost_lines(
    old: Sequence[Deployment], new: Sequence[Deployment], named: str | None = None
) -> dict[str, str]:
    """Per environment, ``cost --diff``'s hourly changes at idle and at full scale."""
    result = cost.diff(old, new, named=named)
    return {
        env.name: f"idle {cost.signed(env.idle.change_usd_per_hour)}/hour, full scale "
        f"{cost.signed(env.full_scale.change_usd_per_hour)}/hour"
        if env.idle.change_usd_per_hour or env.full_scale.change_usd_per_hour
        else "no change"
        for env in result.environments
    }


UNPRICED_DEPLOYED = (
    "unknown: the deployed templates carry no cdk-neuron workload records (deployed with a cdk-neuron "
    "before 0.2); compare two assemblies with cdk-neuron cost --diff"
)


def _deployed_sides(
    name: str, stacks: Mapping[str, assembly.Stack], deployed: Mapping[str, DeployedStack]
) -> tuple[str | None, list[ArtifactChange]]:
    """``cost --diff`` from what is deployed to the new synthesis, and the artifact change: the deployed
    side is read from the records each template carries in its Metadata
    (:data:`cdk_neuron.cli.assembly.TEMPLATE_METADATA`), with the stacks' places taken from the new
    assembly. (None, []): the environment records no workload."""
    try:
        new = list(assembly.deployments(stacks.values()).values())
    except NeuronConfigError:
        return None, []
    present = [
        dataclasses.replace(s, template=template, records=assembly.template_records(template))
        for s in stacks.values()
        if (template := deployed[s.stack_name].template) is not None
    ]
    if present and not any(s.records for s in present):
        return UNPRICED_DEPLOYED, []
    old = list(assembly.deployments(present).values()) if present else []
    # Nothing deployed yet: the whole environment is added, and priced as such.
    artifacts = artifact_changes(_named(old, name), _named(new, name))
    return _cost_lines(old, new, named=name).get(name), artifacts


def _named(deployments: Sequence[Deployment], name: str) -> Deployment | None:
    return next((d for d in deployments if d.name == name), None)


def _between_assemblies(old: str, new: str, env: str | None, new_releases: bool) -> ImpactResult:
    # Errors name the positional argument the folder came from, and both are read before either is
    # refused, so one run names every bad folder.
    found = ErrorCollector()
    old_stacks = found.run(lambda: assembly.read_stacks(old, field="OLD"))
    new_stacks = found.run(lambda: assembly.read_stacks(new, field="NEW"))
    found.raise_if_any()
    assert old_stacks is not None and new_stacks is not None
    before = _by_environment(old_stacks)
    after = _by_environment(new_stacks)
    names = _selected([*after, *(n for n in before if n not in after)], env)
    old_deployments = assembly.load(old, field="OLD")
    new_deployments = assembly.load(new, field="NEW")
    costs = _cost_lines(list(old_deployments.values()), list(new_deployments.values()))
    environments = []
    for name in names:
        impacts = lifecycle.impact(
            {k: dict(s.template) for k, s in before.get(name, {}).items()},
            {k: dict(s.template) for k, s in after.get(name, {}).items()},
            new_releases=new_releases,
        )
        artifacts = artifact_changes(old_deployments.get(name), new_deployments.get(name))
        environments.append(_environment(name, impacts, cost_line=costs.get(name), artifacts=artifacts))
    return ImpactResult(before=old, after=new, environments=environments, summary=_summary(environments))


@contextmanager
def _new_assembly(args: argparse.Namespace, ctx: Context) -> Iterator[str]:
    if args.config:
        raise NeuronConfigError(
            "--config",
            args.config,
            "impact compares templates: give --app DIR (what cdk synth wrote) or --synth",
        )
    if args.synth:
        with tempfile.TemporaryDirectory(prefix="cdk-neuron-impact-") as outdir:
            source.synthesize(outdir, run=ctx.run, cwd=ctx.cwd)
            yield outdir
        return
    directory = args.app or str(Path(ctx.cwd or ".") / source.DEFAULT_ASSEMBLY)
    if not assembly.has_manifest(directory):
        raise NeuronConfigError(
            "--app", directory, "holds no cloud assembly: run cdk synth first, or pass --synth"
        )
    yield directory


def _against_deployed(args: argparse.Namespace, ctx: Context, directory: str) -> ImpactResult:
    after = _by_environment(assembly.read_stacks(directory))
    environments = []
    for name in _selected(list(after), args.env):
        deployed: dict[str, DeployedStack] = {}
        for stack_name, stack in after[name].items():
            region = args.region or stack.region
            if region is None:
                raise NeuronConfigError(
                    "--region",
                    None,
                    f"{stack_name} is environment-agnostic: give the Region it is deployed in",
                )
            deployed[stack_name] = deployed_stack(ctx.aws("cloudformation", region), stack_name)
        blocked = [s.name for s in deployed.values() if s.blocks_retry]
        unblocked = []
        if args.unblock:
            for stack_name in blocked:
                region = args.region or after[name][stack_name].region
                if unblock(ctx.aws("cloudformation", str(region)), deployed[stack_name]):
                    unblocked.append(stack_name)
        impacts = lifecycle.impact(
            {k: s.template for k, s in deployed.items() if s.template is not None},
            {k: dict(s.template) for k, s in after[name].items()},
            new_releases=args.new_releases,
        )
        regions = {k: str(args.region or s.region) for k, s in after[name].items()}
        impacts = live.refused_now(impacts, functools.partial(_refused_now, ctx, regions))
        cost_line, artifacts = _deployed_sides(name, after[name], deployed)
        environments.append(
            _environment(
                name,
                impacts,
                cost_line=cost_line,
                blocked=[s for s in blocked if s not in unblocked],
                unblocked=unblocked,
                artifacts=artifacts,
            )
        )
    return ImpactResult(
        before="deployed stacks (CloudFormation GetTemplate)",
        after=directory,
        environments=environments,
        summary=_summary(environments),
    )


def _refused_now(
    ctx: Context, regions: Mapping[str, str], stack: str, resource: lifecycle.ResourceImpact
) -> str | None:
    """Why the deployed resource's service would refuse its update now (its current state), if it would."""
    region = regions[stack]
    cluster = physical_id(ctx.aws("cloudformation", region), stack, resource.logical_id)
    if cluster is None:
        return None
    return live.hyperpod_update_refusal(ctx.aws("sagemaker", region), cluster)


# -- output ----------------------------------------------------------------------------------------


def _columns(text: str) -> tuple[Column, ...]:
    return (Column("stack", "id"), Column("resource", "id"), Column(text))


def _rows(changes: Sequence[ResourceChange], text: str) -> list[tuple[str, str, str]]:
    return [(c.stack, c.logical_id, str(getattr(c, text))) for c in changes]


def render(result: ImpactResult) -> Report:
    out = Report()
    for env in result.environments:
        out.table(
            f"{env.name}: stacks",
            (Column("stack", "id"), Column("status", "status"), Column("changes")),
            (
                (s.stack, s.status, ", ".join(f"{n} {k}" for k, n in s.counts.items()) or "-")
                for s in env.stacks
            ),
        )
        if env.replaced:
            out.table(
                f"{env.name}: replaced",
                _columns("why"),
                [(c.stack, c.logical_id, "; ".join(c.reasons)) for c in env.replaced],
            )
        for change in env.artifacts:
            out.pairs(
                f"{env.name}: serving artifact ({change.backend})",
                [
                    ("now", change.before or "the Hub checkpoint"),
                    ("after the deploy", change.after or "the Hub checkpoint (compiled on each instance)"),
                    ("rollout", change.rollout),
                    ("old artifact", change.old_artifact),
                ],
            )
        if env.restarts:
            out.table(f"{env.name}: what restarts", _columns("what"), _rows(env.restarts, "restarts"))
        out.notes(f"{env.name}: data at risk", [str(c.data_at_risk) for c in env.data_at_risk] or ["none"])
        if env.refused:
            out.table(f"{env.name}: the service will refuse", _columns("why"), _rows(env.refused, "fails"))
        floating = sorted({f for s in env.stacks for f in s.floating})
        out.notes(
            f"{env.name}: resolved anew at every deploy",
            [
                f"{f}: a newer release changes what it points to (--new-releases shows what that does)"
                for f in floating
            ],
        )
        out.notes(
            f"{env.name}: retry blocked",
            [
                f"{s}: its first create failed and termination protection keeps cdk deploy from deleting it; "
                "run cdk-neuron impact --deployed --unblock (it holds no resource)"
                for s in env.blocked
            ]
            + [
                f"{s}: termination protection turned off; cdk deploy will delete and re-create it"
                for s in env.unblocked
            ],
        )
        if env.cost is not None:
            out.pairs(f"{env.name}: cost change", [("per hour", env.cost)])
    out.line(result.summary, style="bold")
    return out


# -- the command -----------------------------------------------------------------------------------


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "assemblies",
        nargs="*",
        metavar="ASSEMBLY",
        help="OLD and NEW cloud assemblies to compare offline (omit with --deployed)",
    )
    parser.add_argument("--env", metavar="NAME", help="one environment (a Stage's name; default: all)")
    parser.add_argument(
        "--deployed",
        action="store_true",
        help="compare the deployed templates (CloudFormation GetTemplate) with --app DIR (default ./cdk.out) "
        "or --synth",
    )
    parser.add_argument(
        "--unblock",
        action="store_true",
        help="with --deployed: turn termination protection off on stacks whose first create failed (they hold "
        "no resource), so cdk deploy can retry them",
    )
    parser.add_argument(
        "--new-releases",
        action="store_true",
        help="assume every floating SSM parameter (an AMI 'recommended' or 'latest') resolves to something new",
    )
    parser.add_argument(
        "--fail-on-risk",
        action="store_true",
        help="exit 1 when data is at risk, a service would refuse an update, or a retry is blocked",
    )


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    if args.deployed:
        if args.assemblies:
            raise NeuronConfigError(
                "ASSEMBLY",
                " ".join(args.assemblies),
                "--deployed compares with one new synthesis: give --app DIR",
            )
        with _new_assembly(args, ctx) as directory:
            result = _against_deployed(args, ctx, directory)
    else:
        if len(args.assemblies) != 2:
            raise NeuronConfigError(
                "ASSEMBLY",
                " ".join(args.assemblies) or None,
                "give OLD and NEW cloud assemblies, or --deployed to compare with what is deployed",
            )
        for option, value in (("--unblock", args.unblock), ("--app", args.app), ("--synth", args.synth),
                              ("--config", args.config), ("--region", args.region)):  # fmt: skip
            if value:
                raise NeuronConfigError(
                    option, value, "it needs --deployed; two assemblies are compared offline"
                )
        result = _between_assemblies(args.assemblies[0], args.assemblies[1], args.env, args.new_releases)
    ctx.show(result, render)
    if args.fail_on_risk and any(env.at_risk for env in result.environments):
        return ExitStatus.FAILED
    return ExitStatus.OK


COMMAND = Command(
    "impact",
    "What a deploy will do: replaced, restarted, data at risk, refused updates and cost (two assemblies, or "
    "--deployed).",
    _run,
    arguments=_arguments,
    aws=True,
)


__all__ = [
    "COMMAND",
    "ArtifactChange",
    "EnvironmentImpact",
    "ImpactResult",
    "ResourceChange",
    "StackChange",
    "artifact_changes",
    "render",
]
