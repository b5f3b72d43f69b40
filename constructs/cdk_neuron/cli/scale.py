"""``cdk-neuron scale``: set how many Trainium workers a HyperPod cluster runs.

HyperPod does not scale to zero by itself: the controller bills while the cluster exists, and every
worker while its group's count says so. A dev cluster is deployed with 0 workers; ``scale --workers
N`` starts N before a job and ``scale --workers 0`` stops them after.

**How.** ``sagemaker:UpdateCluster`` takes the whole list of instance groups ("Specify the instance
groups to update", UpdateCluster, Amazon SageMaker API Reference,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html, read 2026-12-02):
``scale`` reads ``sagemaker:DescribeCluster`` and sends every group back as described (every field
``ClusterInstanceGroupSpecification`` accepts, with ``InstanceCount`` its ``TargetCount``), with only
the worker group's count changed. It refuses while the cluster is not ``InService`` (an update in
flight would be overwritten), while deep health checks run on the group (UpdateCluster "will not
function as expected" then and answers ``ConflictException``: "Updating SageMaker HyperPod cluster
configuration", Amazon SageMaker AI Developer Guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html,
the EKS page of the same API, read 2026-12-02), and while Slurm runs or holds jobs on a cluster it
would shrink, unless ``--force`` (HyperPod chooses the nodes it removes; a job on them fails).

**CloudFormation.** The stack's template keeps the count it was deployed with (cdk.json
``training.worker_count``, 0 in dev). ``scale`` does not write cdk.json: the CLI serves any app built
on the library, whose configuration is its own. CloudFormation sends ``InstanceGroups`` again only
when the cluster resource changes in the template, so the next ``cdk deploy`` that changes the
cluster (its lifecycle scripts, a count in cdk.json) puts the count back to the template's; a deploy
that leaves the cluster alone leaves the count alone. ``scale`` prints the cdk.json key to set when
the count should stay.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

from cdk_neuron import timeouts
from cdk_neuron.cli import hyperpod
from cdk_neuron.cli.aws import AwsLookupError, error_code, error_summary
from cdk_neuron.cli.command import Command, environment_options, in_region, one_environment
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.output import Report
from cdk_neuron.cli.result import Result
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.deployment import Deployment, HyperPodLocation
from cdk_neuron.errors import ErrorCollector, NeuronConfigError
from cdk_neuron.lifecycle import live
from cdk_neuron.training.hyperpod_facts import MAX_INSTANCE_COUNT

WAIT_INTERVAL = timeouts.HYPERPOD_SCALE_POLL
WAIT_LIMIT = timeouts.HYPERPOD_SCALE_WAIT


@dataclass(frozen=True)
class Scaled(Result):
    """``cdk-neuron scale``: the worker group before and after, and how to keep the count."""

    command = "scale"
    environment: str
    region: str
    cluster: str
    group: str
    instance_type: str | None
    target_before: int
    target_after: int
    running: int
    requested: bool
    outcome: str
    template_note: str
    status_command: str


def _hyperpod_environment(ctx: Context, args: argparse.Namespace) -> Deployment:
    env = in_region([one_environment(ctx.deployments, args)], args.region)[0]
    training = env.training
    if training is None or training.engine != "hyperpod":
        raise NeuronConfigError(
            "--env",
            env.name,
            "scale sets the workers of a HyperPod cluster, and "
            + (
                f"{env.name} has no training cluster"
                if training is None
                else f"{env.name} trains on {training.engine}"
            )
            + ": choose an environment with training.engine hyperpod (AWS Batch scales to zero by itself)",
        )
    if args.stack is not None:
        location = replace(training.hyperpod or HyperPodLocation(), stack_name=args.stack)
        env = replace(env, training=replace(training, hyperpod=location))
    return env


def group_specs(
    sagemaker: Any, groups: tuple[dict[str, Any], ...], name: str, count: int
) -> list[dict[str, Any]]:
    """Every group as UpdateCluster takes it, from DescribeCluster's ``InstanceGroups``: the fields
    ``ClusterInstanceGroupSpecification`` has (read from the client's own service model, so a field
    AWS adds is carried over), ``InstanceCount`` from ``TargetCount``, ``name``'s set to ``count``."""
    accepted = set(sagemaker.meta.service_model.shape_for("ClusterInstanceGroupSpecification").members)
    specs = []
    for group in groups:
        spec = {k: v for k, v in group.items() if k in accepted and v not in (None, [], {})}
        target = group.get("TargetCount", group.get("CurrentCount"))
        if target is None:
            raise AwsLookupError(
                f"DescribeCluster gave instance group {group.get('InstanceGroupName')} no count"
            )
        spec["InstanceCount"] = count if group.get("InstanceGroupName") == name else int(target)
        if "MinCount" in group and "MinInstanceCount" in accepted:
            spec["MinInstanceCount"] = group["MinCount"]
        specs.append(spec)
    return specs


def _busy(ctx: Context, cluster: hyperpod.Cluster, group: str) -> list[str]:
    """Slurm jobs running or waiting on the cluster (``squeue``), for the shrink check."""
    from cdk_neuron.cli import slurm_jobs

    node = hyperpod.controller(ctx, cluster)
    remote = hyperpod.require_ok(hyperpod.run(ctx, cluster, node, "list", "active"), "squeue")
    jobs = [slurm_jobs.job_from(r) for r in remote.all("job")]
    return [f"{j.job_id} {j.state}" for j in jobs if j.state not in slurm_jobs.TERMINAL_STATES]


def scale(
    ctx: Context,
    env: Deployment,
    *,
    workers: int,
    cluster_name: str | None,
    group_name: str | None,
    force: bool,
    wait: bool,
) -> Scaled:
    training = env.training
    assert training is not None
    if not 0 <= workers <= min(training.max_nodes, MAX_INSTANCE_COUNT):
        raise NeuronConfigError(
            "--workers",
            workers,
            f"use 0 to {training.max_nodes} (environments.{env.name}.training.max_nodes)",
        )
    cluster = hyperpod.find(ctx, env, cluster_name)
    group = cluster.worker_group(group_name)
    name = str(group["InstanceGroupName"])
    if (group.get("SlurmConfig") or {}).get("NodeType") == "Controller":
        raise NeuronConfigError(
            "--group",
            name,
            "is the Slurm controller's group, which runs one node while the cluster exists: scale a worker group",
        )
    before = int(group.get("TargetCount", group.get("CurrentCount", 0)))
    running = int(group.get("CurrentCount", 0))
    note = (
        f"CloudFormation still holds {name}'s deployed count: the next `cdk deploy` that changes the cluster "
        f"sets it back. To keep {workers}, set environments.{env.name}.training.worker_count to {workers} in cdk.json "
        "(or your app's equivalent) before that deploy."
    )
    status_command = f"aws sagemaker describe-cluster --cluster-name {cluster.name} --region {cluster.region}"

    def result(running: int, requested: bool, outcome: str) -> Scaled:
        return Scaled(
            environment=env.name,
            region=env.region,
            cluster=cluster.name,
            group=name,
            instance_type=group.get("InstanceType"),
            target_before=before,
            target_after=workers,
            running=running,
            requested=requested,
            outcome=outcome,
            template_note=note,
            status_command=status_command,
        )

    if workers == before:
        return result(running, False, f"nothing to do: {name} already targets {workers} ({running} running)")
    if cluster.status != live.UPDATABLE:
        raise AwsLookupError(
            f"cluster {cluster.name} is {cluster.status}: HyperPod takes an update only InService; wait for it "
            f"({status_command})"
        )
    if workers < before and not force:
        busy = _busy(ctx, cluster, name)
        if busy:
            raise AwsLookupError(
                f"Slurm has {len(busy)} job(s) not ended on cluster {cluster.name} ({', '.join(busy[:5])}): "
                f"HyperPod chooses which {name} nodes to remove, and a job on them fails. Wait for them, cancel "
                "them, or pass --force"
            )
    checking = [n.instance_id for n in hyperpod.nodes(ctx, cluster, name) if n.status == live.CHECKING]
    if checking:
        raise AwsLookupError(
            f"deep health checks are running on {len(checking)} {name} node(s) of cluster {cluster.name} "
            f"({', '.join(checking[:5])}): HyperPod's UpdateCluster does not work until they finish; retry then"
        )
    sagemaker = ctx.aws("sagemaker", cluster.region)
    try:
        sagemaker.update_cluster(
            ClusterName=cluster.name, InstanceGroups=group_specs(sagemaker, cluster.groups, name, workers)
        )
    except Exception as error:
        if error_code(error) != "ConflictException":
            raise
        raise AwsLookupError(
            f"HyperPod refused the update of cluster {cluster.name} ({error_summary(error)}): another update or "
            f"deep health checks are in progress; wait until it is InService with no node in "
            f"DeepHealthCheckInProgress ({status_command}), then retry"
        ) from None
    outcome = f"requested: {name} from {before} to {workers} workers; HyperPod "
    outcome += "starts them and runs their deep health checks" if workers > before else "removes nodes"
    if wait:
        running = _wait(ctx, cluster, name, workers)
        outcome += f"; the cluster is InService with {running} running"
    return result(running, True, outcome)


def _wait(ctx: Context, cluster: hyperpod.Cluster, group: str, workers: int) -> int:
    """Poll DescribeCluster until the cluster is InService with ``workers`` nodes in ``group``."""
    waited = 0.0
    while waited <= WAIT_LIMIT:
        ctx.clock.sleep(WAIT_INTERVAL)
        waited += WAIT_INTERVAL
        now = hyperpod.describe(ctx, cluster.region, cluster.name)
        current = int(now.group(group).get("CurrentCount", 0))
        if now.status == "Failed":
            raise AwsLookupError(
                f"cluster {cluster.name} failed while scaling: see {now.name}'s FailureMessage"
            )
        if now.status == "InService" and current == workers:
            return current
    raise AwsLookupError(
        f"cluster {cluster.name} did not reach {workers} {group} nodes in {WAIT_LIMIT // 60} minutes: "
        f"check aws sagemaker list-cluster-nodes --cluster-name {cluster.name} --region {cluster.region}"
    )


def render(result: Scaled) -> Report:
    out = Report()
    out.pairs(
        f"{result.environment}: scale {result.cluster}",
        [
            ("worker group", f"{result.group} ({result.instance_type})"),
            ("target before", result.target_before),
            ("target now", result.target_after),
            ("running", result.running),
            ("outcome", result.outcome),
        ],
    )
    if result.requested:
        out.line(result.template_note)
        out.commands("Watch it with:", [result.status_command])
    return out


def _arguments(parser: argparse.ArgumentParser) -> None:
    environment_options(parser, one=True)
    parser.add_argument(
        "--workers", type=int, required=True, metavar="N", help="workers to run: 0..training.max_nodes"
    )
    parser.add_argument(
        "--group", help="the worker instance group (default: the cluster's only Compute group)"
    )
    parser.add_argument(
        "--force", action="store_true", help="shrink even while Slurm has jobs that have not ended"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help=f"poll until the cluster is InService with N workers (up to {WAIT_LIMIT // 3600} h)",
    )
    parser.add_argument(
        "--stack", help="the stack with the HyperPodClusterName output (default: as the app says)"
    )
    hyperpod.cluster_option(parser)


def _run(args: argparse.Namespace, ctx: Context) -> ExitStatus:
    found = ErrorCollector()
    env = found.run(lambda: _hyperpod_environment(ctx, args))
    found.raise_if_any()
    assert env is not None
    result = scale(
        ctx,
        env,
        workers=args.workers,
        cluster_name=args.cluster,
        group_name=args.group,
        force=args.force,
        wait=args.wait,
    )
    ctx.show(result, render)
    return ExitStatus.OK


COMMAND = Command(
    "scale",
    "Set how many workers a HyperPod cluster runs (0 stops their bill): scale --workers N",
    _run,
    arguments=_arguments,
    aws=True,
    epilog=(
        "UpdateCluster with every instance group as described and the worker count changed. The stack keeps its "
        "deployed count: the next cdk deploy that changes the cluster sets it back (set training.worker_count to keep N)."
    ),
)

__all__ = ["COMMAND", "Scaled", "group_specs", "render", "scale"]
