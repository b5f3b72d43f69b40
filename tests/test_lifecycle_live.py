"""What a deployed HyperPod cluster would refuse now (cdk_neuron.lifecycle.live), through botocore's
Stubber, and ``cdk-neuron impact --deployed`` reporting it as a refused update (its gate fails)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.lifecycle import Change, ResourceImpact, StackImpact, live

REGION = "us-east-1"
NAME = "dev-training"
ARN = f"arn:aws:sagemaker:{REGION}:111111111111:cluster/abcdef123456"
STACK = "HyperPodStack"
LOGICAL = "ClusterResource1A2B3C4D"


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


def _node(instance: str, status: str, group: str = "trn") -> dict[str, Any]:
    return {
        "InstanceGroupName": group,
        "InstanceId": instance,
        "InstanceType": "ml.trn1.32xlarge",
        "LaunchTime": "2026-12-01T00:00:00Z",
        "InstanceStatus": {"Status": status},
    }


def _described(status: str) -> dict[str, Any]:
    return {
        "ClusterArn": ARN,
        "ClusterName": NAME,
        "ClusterStatus": status,
        "InstanceGroups": [],
    }


def _sagemaker(status: str, pages: list[list[dict[str, Any]]] | None = None) -> tuple[Any, Stubber]:
    client = _client("sagemaker")
    stub = Stubber(client)
    stub.add_response("describe_cluster", _described(status), {"ClusterName": ARN})
    for index, page in enumerate(pages or []):
        request: dict[str, Any] = {"ClusterName": ARN, "MaxResults": 100}
        if index:
            request["NextToken"] = f"page-{index}"
        response: dict[str, Any] = {"ClusterNodeSummaries": page}
        if index + 1 < len(pages or []):
            response["NextToken"] = f"page-{index + 1}"
        stub.add_response("list_cluster_nodes", response, request)
    return client, stub


# -- hyperpod_update_refusal ------------------------------------------------------------------------


def test_an_in_service_cluster_without_checks_running_takes_the_update() -> None:
    client, stub = _sagemaker(
        "InService", [[_node("i-0a", "Running"), _node("i-0c", "Running", "controller")]]
    )
    with stub:
        assert live.hyperpod_update_refusal(client, ARN) is None
        stub.assert_no_pending_responses()


@pytest.mark.parametrize("status", ["Updating", "SystemUpdating", "RollingBack", "Creating", "Failed"])
def test_a_cluster_not_in_service_refuses_and_the_nodes_are_not_read(status: str) -> None:
    client, stub = _sagemaker(status)
    with stub:
        why = live.hyperpod_update_refusal(client, ARN)
        stub.assert_no_pending_responses()
    assert why is not None
    assert why.startswith(f"cluster {NAME} is {status}: HyperPod takes an update only InService")
    assert "Source: UpdateCluster, Amazon SageMaker API Reference" in why
    assert "API_DescribeCluster.html" in why


def test_deep_health_checks_on_any_page_refuse_and_name_the_nodes() -> None:
    pages = [
        [_node("i-0a", "Running")],
        [_node("i-0b", "DeepHealthCheckInProgress"), _node("i-0d", "DeepHealthCheckInProgress")],
    ]
    client, stub = _sagemaker("InService", pages)
    with stub:
        why = live.hyperpod_update_refusal(client, ARN)
        stub.assert_no_pending_responses()
    assert why is not None
    assert why.startswith(
        f"deep health checks are running on 2 node(s) of HyperPod cluster {NAME} (trn/i-0b, trn/i-0d): "
        "HyperPod answers UpdateCluster with ConflictException"
    )
    assert "sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html" in why


def test_a_cluster_that_is_not_there_refuses_nothing_and_other_errors_are_raised() -> None:
    client = _client("sagemaker")
    stub = Stubber(client)
    stub.add_client_error("describe_cluster", "ResourceNotFound", "Cluster not found")
    stub.add_client_error("describe_cluster", "AccessDeniedException", "not allowed")
    with stub:
        assert live.hyperpod_update_refusal(client, ARN) is None
        with pytest.raises(Exception, match="AccessDeniedException"):
            live.hyperpod_update_refusal(client, ARN)


# -- refused_now -------------------------------------------------------------------------------------


def _impact(*resources: ResourceImpact) -> list[StackImpact]:
    return [StackImpact(stack=STACK, status="changed", resources=resources)]


def test_only_in_place_cluster_updates_are_asked_about_and_marked() -> None:
    asked: list[str] = []

    def refusal(stack: str, resource: ResourceImpact) -> str | None:
        asked.append(resource.logical_id)
        return "busy"

    impacts = _impact(
        ResourceImpact("Updated", live.HYPERPOD_CLUSTER, Change.UPDATED),
        ResourceImpact("Replaced", live.HYPERPOD_CLUSTER, Change.REPLACED),
        ResourceImpact("Added", live.HYPERPOD_CLUSTER, Change.ADDED),
        ResourceImpact("Failing", live.HYPERPOD_CLUSTER, Change.UPDATED, fails="a volume key change"),
        ResourceImpact("Queue", "AWS::Batch::JobQueue", Change.UPDATED),
    )
    (marked,) = live.refused_now(impacts, refusal)
    assert asked == ["Updated"]
    assert marked.find("Updated").fails == "busy"
    assert live.HYPERPOD_CONFLICT in marked.find("Updated").sources
    assert marked.find("Failing").fails == "a volume key change"
    assert marked.find("Replaced").fails is None and marked.find("Queue").fails is None


# -- cdk-neuron impact --deployed -----------------------------------------------------------------


def _template(workers: int) -> dict[str, Any]:
    return {
        "Resources": {
            LOGICAL: {
                "Type": "AWS::SageMaker::Cluster",
                "Properties": {
                    "ClusterName": NAME,
                    "InstanceGroups": [
                        {
                            "InstanceGroupName": "controller",
                            "InstanceCount": 1,
                            "InstanceType": "ml.m5.xlarge",
                        },
                        {
                            "InstanceGroupName": "trn",
                            "InstanceCount": workers,
                            "InstanceType": "ml.trn1.32xlarge",
                        },
                    ],
                },
            }
        }
    }


def _assembly(tmp_path: Path, template: dict[str, Any]) -> str:
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / f"{STACK}.template.json").write_text(json.dumps(template))
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "version": "48.0.0",
                "artifacts": {
                    STACK: {
                        "type": "aws:cloudformation:stack",
                        "environment": f"aws://unknown-account/{REGION}",
                        "properties": {"templateFile": f"{STACK}.template.json"},
                    }
                },
            }
        )
    )
    return str(out)


def _impact_deployed(
    tmp_path: Path, sagemaker: tuple[Any, Stubber], *args: str
) -> tuple[int, dict[str, Any]]:
    cloudformation = _client("cloudformation")
    stub = Stubber(cloudformation)
    stack = {"StackName": STACK, "StackStatus": "UPDATE_COMPLETE", "CreationTime": "2026-11-01T00:00:00Z"}
    stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
    stub.add_response(
        "get_template",
        {"TemplateBody": json.dumps(_template(1))},
        {"StackName": STACK, "TemplateStage": "Original"},
    )
    stub.add_response(
        "describe_stack_resource",
        {
            "StackResourceDetail": {
                "StackName": STACK,
                "LogicalResourceId": LOGICAL,
                "PhysicalResourceId": ARN,
                "ResourceType": "AWS::SageMaker::Cluster",
                "LastUpdatedTimestamp": "2026-11-01T00:00:00Z",
                "ResourceStatus": "UPDATE_COMPLETE",
            }
        },
        {"StackName": STACK, "LogicalResourceId": LOGICAL},
    )
    clients = {"cloudformation": cloudformation, "sagemaker": sagemaker[0]}
    out, err = io.StringIO(), io.StringIO()
    app = _assembly(tmp_path, _template(2))
    with stub, sagemaker[1]:
        status = main(
            ["impact", "--deployed", "--app", app, "--json", *args],
            context=Context(clients=lambda service, region: clients[service], stdout=out, stderr=err),
        )
        stub.assert_no_pending_responses()
        sagemaker[1].assert_no_pending_responses()
    (env,) = json.loads(out.getvalue())["environments"]
    return status, env


def test_impact_reports_a_cluster_update_hyperpod_would_refuse_now_and_the_gate_fails(tmp_path: Path) -> None:
    sagemaker = _sagemaker("InService", [[_node("i-0b", "DeepHealthCheckInProgress")]])
    status, env = _impact_deployed(tmp_path, sagemaker, "--fail-on-risk")
    assert status == ExitStatus.FAILED
    (refused,) = env["refused"]
    assert (refused["stack"], refused["logical_id"], refused["change"]) == (STACK, LOGICAL, "updated")
    assert refused["fails"].startswith("deep health checks are running on 1 node(s) of HyperPod cluster")


def test_impact_lets_the_update_through_when_the_cluster_can_take_it(tmp_path: Path) -> None:
    sagemaker = _sagemaker("InService", [[_node("i-0b", "Running")]])
    status, env = _impact_deployed(tmp_path, sagemaker, "--fail-on-risk")
    assert status == ExitStatus.OK
    assert env["refused"] == []
