"""The issue's Done-when: an app that is not ours plans, costs, preflights and runs jobs with the CLI.

tests/outside_app is someone else's app: cdk-neuron constructs in one top-level stack, and a
cdk.json with only the app command and CDK's feature flags (no ``environments``, no
``cdk-neuron:deployments`` loader). It is synthesized once per session into a cloud assembly,
and every command reads that assembly with ``--app``: plan and cost offline, preflight against
moto (service quotas by Stubber: moto does not serve the Trn and SageMaker quotas), and submit,
status --watch, logs and cancel against botocore's Stubber, which checks each request exactly,
among them ``cloudformation:DescribeStackResource`` turning the recorded logical ids into ARNs.

Here the app imports cdk_neuron from this checkout; ``make example`` runs the same CLI against the
example app with cdk-neuron installed from the wheel (examples/reserved-trn1n-sagemaker).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cli_support import RecordingClock
from moto import mock_aws

from cdk_neuron.cli import assembly
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.serving import ServingEngine
from cdk_neuron.training import encode_training_command
from cdk_support import use_fake_aws_credentials

APP_DIR = Path(__file__).parent / "outside_app"
REGION = "us-east-1"
ACCOUNT = "123456789012"
QUEUE_ARN = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/ClusterJobQueue-AbCdEf"
JOB_DEF = f"arn:aws:batch:{REGION}:{ACCOUNT}:job-definition/ClusterJobDefinition-AbCdEf:1"
LOG_GROUP = "Research-ClusterJobLogs-AbCdEf"
JOB = "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
COMMAND = "torchrun $TORCHRUN_ARGS train.py"


def _outside_app() -> Any:
    spec = importlib.util.spec_from_file_location("outside_app_main", APP_DIR / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def outside_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``cdk synth`` of the outside app, in-process, with its own cdk.json's context."""
    import aws_cdk as cdk

    outdir = tmp_path_factory.mktemp("outside-cdk.out")
    context = json.loads((APP_DIR / "cdk.json").read_text())["context"]
    app = cdk.App(outdir=str(outdir), context=context)
    _outside_app().build(app)
    app.synth()
    return outdir


def test_the_outside_app_has_no_configuration_of_ours() -> None:
    document = json.loads((APP_DIR / "cdk.json").read_text())
    assert set(document) == {"app", "context"}
    assert all(key.startswith("@aws-cdk") for key in document["context"])


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"], **kwargs)
    return code, json.loads(capsys.readouterr().out)


def test_plan(outside_assembly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", "--app", str(outside_assembly))
    assert code == 0
    (env,) = doc["environments"]
    assert (env["name"], env["region"], env["az_ids"]) == ("us-east-1", REGION, ["use1-az6"])
    assert env["training"]["world_size"] == 64 and env["training"]["az_id"] == "use1-az6"
    assert env["checkpoint"]["model_parameters"] == 8_000_000_000
    assert env["serving"]["instance_type"] == "inf2.8xlarge" and env["serving"]["backend"] == "sagemaker"
    assert env["omitted"] == []


def test_cost_from_the_synthesized_templates(
    outside_assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = run_json(capsys, "cost", "--app", str(outside_assembly), "--path", "Research/Cluster")
    assert code == 0
    (env,) = doc["environments"]
    lines = {line["item"]: line for line in env["full_scale"]["lines"]}
    assert lines["training nodes (max_nodes)"]["quantity"] == "2 x trn1.32xlarge"
    assert lines["serving instances (max_capacity)"]["quantity"] == "2 x ml.inf2.8xlarge"
    assert lines["NAT gateways"]["quantity"] == "1"
    assert lines["interface VPC endpoints"]["quantity"] == "1 x 2 AZ"
    assert lines["KMS keys"]["quantity"] == "3"
    assert lines["CloudWatch Logs groups and VPC flow logs"]["basis"].startswith("not priced")
    assert env["full_scale"]["complete"] is True


# --------------------------------------------------------------------------------------------
# preflight against moto
# --------------------------------------------------------------------------------------------

SERVICE_LINKED_ROLES = {
    "AWSServiceRoleForAutoScaling": "autoscaling.amazonaws.com",
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint": "sagemaker.application-autoscaling.amazonaws.com",
    "AWSServiceRoleForBatch": "batch.amazonaws.com",
    "AWSServiceRoleForECS": "ecs.amazonaws.com",
    "AWSServiceRoleForAmazonElasticFileSystem": "elasticfilesystem.amazonaws.com",
}
IMAGE_MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "digest": "sha256:" + "a" * 64,
            "size": 1,
            "mediaType": "application/vnd.docker.container.image.v1+json",
        },
        "layers": [],
    }
)


@pytest.fixture
def moto_account() -> Iterator[dict[str, Any]]:
    """A bootstrapped account with the images and service-linked roles a first deploy needs."""
    app = _outside_app()
    with pytest.MonkeyPatch.context() as patch:
        use_fake_aws_credentials(patch, REGION)
        with mock_aws():
            services = ("ec2", "ssm", "sts", "cloudformation", "ecr", "iam", "s3")
            clients = {s: boto3.client(s, region_name=REGION) for s in services}
            clients["ssm"].put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="21", Type="String")
            toolkit = {
                "Resources": {
                    "M": {
                        "Type": "AWS::SSM::Parameter",
                        "Properties": {"Name": "/outside/toolkit", "Type": "String", "Value": "x"},
                    }
                }
            }
            clients["cloudformation"].create_stack(StackName="CDKToolkit", TemplateBody=json.dumps(toolkit))
            serving_image = ServingEngine.optimum_neuron().sagemaker_image
            assert serving_image is not None
            for image in (app.JOB_IMAGE, serving_image.uri(REGION)):
                registry, _, rest = image.partition("/")
                repository, _, tag = rest.partition(":")
                account = registry.split(".")[0]
                known = {
                    r["repositoryName"]
                    for r in clients["ecr"].describe_repositories(registryId=account)["repositories"]
                }
                if repository not in known:
                    clients["ecr"].create_repository(repositoryName=repository, registryId=account)
                clients["ecr"].put_image(
                    registryId=account, repositoryName=repository, imageManifest=IMAGE_MANIFEST, imageTag=tag
                )
            for name, service in SERVICE_LINKED_ROLES.items():
                clients["iam"].create_role(
                    RoleName=name, Path=f"/aws-service-role/{service}/", AssumeRolePolicyDocument="{}"
                )
            yield clients


def stubbed(service: str) -> tuple[Any, Stubber]:
    client = boto3.client(service, region_name=REGION, aws_access_key_id="stub", aws_secret_access_key="stub")
    return client, Stubber(client)


def test_preflight(
    outside_assembly: Path, moto_account: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = stubbed("service-quotas")
    stub.add_response(
        "get_service_quota",
        {"Quota": {"QuotaCode": "L-2C3B7624", "QuotaName": "Running On-Demand Trn instances", "Value": 256}},
        {"ServiceCode": "ec2", "QuotaCode": "L-2C3B7624"},
    )
    stub.add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {"QuotaCode": "L-AAAA1111", "QuotaName": "ml.inf2.8xlarge for endpoint usage", "Value": 2}
            ]
        },
        {"ServiceCode": "sagemaker"},
    )

    def clients(service: str, region: str) -> Any:
        assert region == REGION
        return quotas if service == "service-quotas" else moto_account[service]

    with stub:
        code, doc = run_json(capsys, "preflight", "--app", str(outside_assembly), clients=clients)
    stub.assert_no_pending_responses()
    failures = [
        (c["check"], c["subject"], c["detail"])
        for c in doc["checks"]
        if c["status"] != "PASS" and c["status"] != "INFO"
    ]
    assert code == 0, failures
    by_check = {(c["check"], c["subject"]): c for c in doc["checks"]}
    assert by_check[("account", ACCOUNT)]["status"] == "PASS"
    assert by_check[("offering", "trn1.32xlarge @ use1-az6")]["status"] == "PASS"
    assert by_check[("quota", "Running On-Demand Trn instances (L-2C3B7624)")]["detail"].startswith(
        "256 vCPUs >= 256"
    )
    assert by_check[("bootstrap", "/cdk-bootstrap/hnb659fds/version")]["status"] == "PASS"
    assert by_check[("image", _outside_app().JOB_IMAGE)]["status"] == "PASS"


# --------------------------------------------------------------------------------------------
# submit, status --watch, logs, cancel against Stubber
# --------------------------------------------------------------------------------------------


def parent(status: str) -> dict[str, Any]:
    return {
        "jobId": JOB,
        "jobName": "run-1",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "jobDefinition": JOB_DEF,
        "startedAt": 1_796_000_000_000,
        "nodeProperties": {
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [
                {
                    "targetNodes": "0:1",
                    "container": {
                        "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": LOG_GROUP}},
                    },
                }
            ],
        },
    }


def child(index: int, status: str) -> dict[str, Any]:
    return {
        "jobId": f"{JOB}#{index}",
        "jobName": "run-1",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "jobDefinition": JOB_DEF,
        "startedAt": 1_796_000_000_000,
        "nodeDetails": {"nodeIndex": index, "isMainNode": index == 0},
        "container": {"logStreamName": f"training/default/{JOB}-{index}"},
    }


def stack_resource(logical_id: str, arn: str, kind: str) -> dict[str, Any]:
    return {
        "StackResourceDetail": {
            "StackName": "Research",
            "LogicalResourceId": logical_id,
            "PhysicalResourceId": arn,
            "ResourceType": kind,
            "LastUpdatedTimestamp": datetime(2026, 12, 1, tzinfo=timezone.utc),
            "ResourceStatus": "CREATE_COMPLETE",
        }
    }


@pytest.fixture
def stubs() -> Iterator[dict[str, tuple[Any, Stubber]]]:
    found = {service: stubbed(service) for service in ("cloudformation", "batch", "logs")}
    for _, stub in found.values():
        stub.activate()
    yield found
    for _, stub in found.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def factory(stubs: dict[str, tuple[Any, Stubber]]) -> Callable[[str, str], Any]:
    def clients(service: str, region: str) -> Any:
        assert region == REGION
        return stubs[service][0]

    return clients


def test_submit_resolves_the_recorded_logical_ids(
    outside_assembly: Path, stubs: dict[str, tuple[Any, Stubber]], capsys: pytest.CaptureFixture[str]
) -> None:
    training = assembly.load(outside_assembly)["us-east-1"].training
    assert training is not None and training.jobs is not None
    queue_id, definition_id = training.jobs.job_queue_logical_id, training.jobs.job_definition_logical_id
    assert queue_id and definition_id
    cloudformation, batch = stubs["cloudformation"][1], stubs["batch"][1]
    cloudformation.add_response(
        "describe_stack_resource",
        stack_resource(queue_id, QUEUE_ARN, "AWS::Batch::JobQueue"),
        {"StackName": "Research", "LogicalResourceId": queue_id},
    )
    cloudformation.add_response(
        "describe_stack_resource",
        stack_resource(definition_id, JOB_DEF, "AWS::Batch::JobDefinition"),
        {"StackName": "Research", "LogicalResourceId": definition_id},
    )
    definition = {
        "jobDefinitionName": "ClusterJobDefinition-AbCdEf",
        "jobDefinitionArn": JOB_DEF,
        "revision": 1,
        "status": "ACTIVE",
        "type": "multinode",
        "nodeProperties": {
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [{"targetNodes": "0:1", "container": {"image": _outside_app().JOB_IMAGE}}],
        },
    }
    batch.add_response(
        "describe_job_definitions", {"jobDefinitions": [definition]}, {"jobDefinitions": [JOB_DEF]}
    )
    batch.add_response(
        "submit_job",
        {"jobName": "run-1", "jobId": JOB},
        {
            "jobName": "run-1",
            "jobQueue": QUEUE_ARN,
            "jobDefinition": JOB_DEF,
            # The command travels base64-encoded (it must survive the image entrypoint's eval).
            "parameters": {"training_command": encode_training_command(COMMAND)},
        },
    )
    argv = ["submit", "--app", str(outside_assembly), "--name", "run-1", "--json", "--", COMMAND]
    assert main(argv, clients=factory(stubs)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["job_id"], doc["stack"], doc["job_queue"], doc["nodes"]) == (JOB, "Research", QUEUE_ARN, 2)
    # The next commands read the same assembly.
    assert doc["watch_command"] == f"cdk-neuron status --watch {JOB} --app {outside_assembly} --env us-east-1"


def test_status_watch_logs_and_cancel(
    outside_assembly: Path, stubs: dict[str, tuple[Any, Stubber]], capsys: pytest.CaptureFixture[str]
) -> None:
    batch, logs = stubs["batch"][1], stubs["logs"][1]
    app = ["--app", str(outside_assembly)]
    for state in ("RUNNABLE", "RUNNING", "SUCCEEDED"):
        batch.add_response("describe_jobs", {"jobs": [parent(state)]}, {"jobs": [JOB]})
        batch.add_response(
            "describe_jobs", {"jobs": [child(0, state), child(1, state)]}, {"jobs": [f"{JOB}#0", f"{JOB}#1"]}
        )
    clock = RecordingClock()
    code, doc = run_json(
        capsys, "status", "--watch", JOB, *app, context=Context(clients=factory(stubs), clock=clock)
    )
    assert code == 0 and doc["status"] == "SUCCEEDED" and clock.calls == [15, 15]
    assert [t["to"] for t in doc["transitions"] if t["subject"] == "job"] == [
        "RUNNABLE",
        "RUNNING",
        "SUCCEEDED",
    ]

    batch.add_response("describe_jobs", {"jobs": [parent("SUCCEEDED")]}, {"jobs": [JOB]})
    batch.add_response("describe_jobs", {"jobs": [child(0, "SUCCEEDED")]}, {"jobs": [f"{JOB}#0"]})
    stream = f"training/default/{JOB}-0"
    request = {"logGroupName": LOG_GROUP, "logStreamName": stream, "startFromHead": True}
    logs.add_response(
        "get_log_events",
        {
            "events": [{"timestamp": 1_796_000_000_000, "message": "step 1 loss 2.5"}],
            "nextForwardToken": "f/1",
        },
        request,
    )
    logs.add_response(
        "get_log_events", {"events": [], "nextForwardToken": "f/1"}, {**request, "nextToken": "f/1"}
    )
    code, doc = run_json(capsys, "logs", JOB, *app, clients=factory(stubs))
    assert code == 0 and [e["message"] for e in doc["events"]] == ["step 1 loss 2.5"]
    assert (doc["log_group"], doc["log_stream"]) == (LOG_GROUP, stream)

    batch.add_response("describe_jobs", {"jobs": [parent("RUNNABLE")]}, {"jobs": [JOB]})
    batch.add_response("cancel_job", {}, {"jobId": JOB, "reason": "wrong config"})
    code, doc = run_json(capsys, "cancel", JOB, "--reason", "wrong config", *app, clients=factory(stubs))
    assert code == 0 and doc["requested"] is True and doc["status_before"] == "RUNNABLE"


def test_list_and_a_stack_not_deployed(
    outside_assembly: Path, stubs: dict[str, tuple[Any, Stubber]], capsys: pytest.CaptureFixture[str]
) -> None:
    training = assembly.load(outside_assembly)["us-east-1"].training
    assert training is not None and training.jobs is not None and training.jobs.job_queue_logical_id
    queue_id = training.jobs.job_queue_logical_id
    cloudformation, batch = stubs["cloudformation"][1], stubs["batch"][1]
    # list needs only the queue: one DescribeStackResource.
    cloudformation.add_response(
        "describe_stack_resource",
        stack_resource(queue_id, QUEUE_ARN, "AWS::Batch::JobQueue"),
        {"StackName": "Research", "LogicalResourceId": queue_id},
    )
    batch.add_response(
        "list_jobs",
        {"jobSummaryList": [{"jobId": JOB, "jobName": "run-1", "status": "RUNNING", "createdAt": 1}]},
        {"jobQueue": QUEUE_ARN, "jobStatus": "RUNNING", "maxResults": 50},
    )
    code, doc = run_json(
        capsys, "list", "--state", "RUNNING", "--app", str(outside_assembly), clients=factory(stubs)
    )
    assert code == 0 and [j["job_id"] for j in doc["jobs"]] == [JOB] and doc["stack"] == "Research"

    cloudformation.add_client_error(
        "describe_stack_resource",
        service_error_code="ValidationError",
        service_message="Stack 'Research' does not exist",
        http_status_code=400,
        expected_params={"StackName": "Research", "LogicalResourceId": queue_id},
    )
    assert main(["list", "--app", str(outside_assembly), "--state", "RUNNING"], clients=factory(stubs)) == 1
    err = capsys.readouterr().err
    assert err.startswith("cdk-neuron: stack Research has no resource") and err.count("\n") == 1
