"""What the deployed resources would refuse *now*: an update the templates allow that the service turns
down because of its current state.

The caller passes the AWS clients (boto3, moto or Stubber): this module imports no AWS SDK.

SageMaker HyperPod (``AWS::SageMaker::Cluster``): CloudFormation updates a cluster in place with
``UpdateCluster``, which HyperPod refuses

- while the cluster is not ``InService`` (another update, a software update or a rollback in flight:
  ``ClusterStatus`` Creating, Updating, SystemUpdating, RollingBack, Failed, Deleting; "DescribeCluster",
  Amazon SageMaker API Reference, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html);
- while deep health checks run on any node (``InstanceStatus`` ``DeepHealthCheckInProgress``,
  ``ListClusterNodes``): "the UpdateCluster API will not function as expected" then and answers
  ``ConflictException`` ("Updating SageMaker HyperPod cluster configuration", Amazon SageMaker AI
  Developer Guide, :data:`HYPERPOD_CONFLICT`). The page is the EKS one of the same API; the Slurm
  pages say nothing either way, so the guard applies to both.

A refused update fails the stack's deployment and CloudFormation rolls it back. :func:`refused_now`
marks such an update in an :func:`cdk_neuron.lifecycle.impact` result, so ``cdk-neuron impact
--deployed`` (and its ``--fail-on-risk`` gate) report it before the deploy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from cdk_neuron.lifecycle.impact import Change, ResourceImpact, StackImpact
from cdk_neuron.lifecycle.rules import HYPERPOD_UPDATE, Source

HYPERPOD_CLUSTER = "AWS::SageMaker::Cluster"
UPDATABLE = "InService"
CHECKING = "DeepHealthCheckInProgress"
HYPERPOD_CONFLICT = Source(
    "Updating SageMaker HyperPod cluster configuration, Amazon SageMaker AI Developer Guide (UpdateCluster "
    '"will not function as expected" while deep health checks run: ConflictException)',
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html",
    read_on="2026-12-02",
)
DESCRIBE_CLUSTER = Source(
    "DescribeCluster, Amazon SageMaker API Reference (ClusterStatus)",
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html",
    read_on="2026-12-02",
)
_MISSING = ("ResourceNotFound", "ValidationException")


def _code(error: Exception) -> str | None:
    response = getattr(error, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def _checking_nodes(sagemaker: Any, cluster: str) -> list[str]:
    """The nodes of ``cluster`` whose deep health checks are running, through every page."""
    found: list[str] = []
    kwargs: dict[str, Any] = {"ClusterName": cluster, "MaxResults": 100}
    while True:
        page = sagemaker.list_cluster_nodes(**kwargs)
        for node in page.get("ClusterNodeSummaries", []):
            if (node.get("InstanceStatus") or {}).get("Status") == CHECKING:
                found.append(f"{node.get('InstanceGroupName')}/{node.get('InstanceId')}")
        token = page.get("NextToken")
        if not token:
            return found
        kwargs["NextToken"] = token


def hyperpod_update_refusal(sagemaker: Any, cluster: str) -> str | None:
    """Why HyperPod would refuse an ``UpdateCluster`` of ``cluster`` (name or ARN) now; None when it
    would take it, or when there is no such cluster (nothing deployed to refuse)."""
    try:
        described = sagemaker.describe_cluster(ClusterName=cluster)
    except Exception as error:
        if _code(error) in _MISSING:
            return None
        raise
    name = described.get("ClusterName", cluster)
    status = described.get("ClusterStatus")
    if status != UPDATABLE:
        return (
            f"cluster {name} is {status}: HyperPod takes an update only {UPDATABLE}, and the deployment "
            "would roll back; deploy after it is InService (aws sagemaker describe-cluster). "
            f"Source: {HYPERPOD_UPDATE.cite()}; {DESCRIBE_CLUSTER.cite()}"
        )
    checking = _checking_nodes(sagemaker, cluster)
    if checking:
        shown = ", ".join(checking[:5]) + (f" and {len(checking) - 5} more" if len(checking) > 5 else "")
        return (
            f"deep health checks are running on {len(checking)} node(s) of HyperPod cluster {name} ({shown}): "
            "HyperPod answers UpdateCluster with ConflictException until they finish, and the deployment would "
            "roll back; deploy when no node is DeepHealthCheckInProgress (aws sagemaker list-cluster-nodes). "
            f"Source: {HYPERPOD_CONFLICT.cite()}"
        )
    return None


def refused_now(
    impacts: Iterable[StackImpact], refusal: Callable[[str, ResourceImpact], str | None]
) -> list[StackImpact]:
    """``impacts`` with every in-place HyperPod cluster update that ``refusal(stack, resource)`` says the
    service would refuse now marked as failing (``fails``, with the source). A resource already marked
    failing keeps its reason; added, replaced and deleted clusters are not updates and are left alone."""
    marked = []
    for stack in impacts:
        resources = []
        for resource in stack.resources:
            why = None
            if (
                resource.type == HYPERPOD_CLUSTER
                and resource.change is Change.UPDATED
                and resource.fails is None
            ):
                why = refusal(stack.stack, resource)
            if why is not None:
                sources = (
                    *resource.sources,
                    *(s for s in (HYPERPOD_UPDATE, HYPERPOD_CONFLICT) if s not in resource.sources),
                )
                resource = replace(resource, fails=why, sources=sources)
            resources.append(resource)
        marked.append(replace(stack, resources=tuple(resources)))
    return marked


__all__ = [
    "CHECKING",
    "DESCRIBE_CLUSTER",
    "HYPERPOD_CLUSTER",
    "HYPERPOD_CONFLICT",
    "UPDATABLE",
    "hyperpod_update_refusal",
    "refused_now",
]
