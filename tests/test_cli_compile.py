"""``cdk-neuron compile`` against a hand-written cloud assembly, with botocore's Stubber for
CloudFormation (the task's physical ids) and ECS (RunTask: moto's RunTask does not take container
environment overrides as ECS does)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from assembly_writer import serving_record, write_manifest, write_stack
from botocore.stub import Stubber

from cdk_neuron.cli.main import main
from cdk_support import use_fake_aws_credentials

REGION = "us-east-1"
CLUSTER = f"arn:aws:ecs:{REGION}:111111111111:cluster/dev-Compile"
TASK_DEF = f"arn:aws:ecs:{REGION}:111111111111:task-definition/devCompileTask:3"
TASK = f"arn:aws:ecs:{REGION}:111111111111:task/dev-Compile/0123456789abcdef"
DEFINITION = {
    "taskDefinition": {
        "containerDefinitions": [
            {"name": n, "logConfiguration": {"logDriver": "awslogs", "options": {
                "awslogs-group": "devCompileLogs", "awslogs-stream-prefix": n}}}
            for n in ("fetch", "export", "upload")
        ]
    }
}  # fmt: skip
"""What ecs:DescribeTaskDefinition answers for the task: where each container logs."""


def compilation_record(**overrides: Any) -> dict[str, Any]:
    return {
        "kind": "compilation",
        "version": 1,
        "engine": "optimum-neuron",
        "cluster_logical_id": "CompileCluster1",
        "task_definition_logical_id": "CompileTask1",
        "security_group_logical_id": "CompileGroup1",
        "subnets": [{"Ref": "VpcPrivate1"}, "subnet-0literal"],
        "checkpoints": True,
        **overrides,
    }


@pytest.fixture
def assembly(tmp_path: Path) -> str:
    serving = serving_record(
        backend="ec2",
        instance_type="inf2.xlarge",
        model={
            "model_id": "meta-llama/Llama-3.2-1B-Instruct",
            "parameters": 1_240_000_000,
            "tensor_parallel": 2,
        },
        tensor_parallel=2,
    )
    folder = tmp_path / "cdk.out"
    write_manifest(
        folder,
        {
            "devServing": write_stack(
                folder,
                "devServing",
                stack_name="dev-Serving",
                records={"/dev/Serving/Fleet": serving, "/dev/Serving/Compile": compilation_record()},
            )
        },
    )
    return str(folder)


def _stubs(ids: dict[str, str]) -> tuple[Any, Stubber, Any, Stubber]:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cf = Stubber(cloudformation)
    for logical, physical in ids.items():
        cf.add_response(
            "describe_stack_resource",
            {
                "StackResourceDetail": {
                    "LogicalResourceId": logical,
                    "PhysicalResourceId": physical,
                    "ResourceType": "AWS::X::Y",
                    "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            },
            {"StackName": "dev-Serving", "LogicalResourceId": logical},
        )
    ecs = boto3.client("ecs", region_name=REGION)
    return cloudformation, cf, ecs, Stubber(ecs)


IDS = {
    "CompileCluster1": CLUSTER,
    "CompileTask1": TASK_DEF,
    "CompileGroup1": "sg-0compile",
    "VpcPrivate1": "subnet-0private",
}


def _run(assembly: str, clients: dict[str, Any], *argv: str) -> int:
    return main(
        ["compile", "--app", assembly, "--json", *argv], clients=lambda service, region: clients[service]
    )


def test_compile_runs_the_task_for_the_fleets_shape(
    assembly: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, ecs, stub = _stubs(IDS)
    stub.add_response("run_task", {"tasks": [{"taskArn": TASK}], "failures": []})
    stub.add_response("describe_task_definition", DEFINITION, {"taskDefinition": TASK_DEF})
    with cf, stub:
        code = _run(
            assembly,
            {"cloudformation": cloudformation, "ecs": ecs},
            "--source", "checkpoint:run-7/step-1200", "--step", "1200", "--source-tp", "8",
            "--source-hw-backend", "trn2", "--artifact-uri", "s3://models/llama-1b/run-7/",
        )  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert (
        doc["task_arn"] == TASK
        and doc["manifest_uri"] == "s3://models/llama-1b/run-7/cdk-neuron-artifact.json"
    )
    assert doc["shape"] == "batch 1 x 4096, TP 2, bf16"
    cf.assert_no_pending_responses()
    stub.assert_no_pending_responses()


def test_the_run_task_request_carries_every_containers_settings(
    assembly: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, _, _ = _stubs(IDS)
    seen: dict[str, Any] = {}

    class Recording:
        def run_task(self, **request: Any) -> dict[str, Any]:
            seen.update(request)
            return {"tasks": [{"taskArn": TASK}], "failures": []}

        def describe_task_definition(self, **request: Any) -> dict[str, Any]:
            return DEFINITION

    with cf:
        code = _run(
            assembly,
            {"cloudformation": cloudformation, "ecs": Recording()},
            "--source", "s3://checkpoints/llama/", "--artifact-uri", "s3://models/llama-1b/a/",
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (
        seen["cluster"] == CLUSTER and seen["taskDefinition"] == TASK_DEF and seen["launchType"] == "FARGATE"
    )
    assert seen["networkConfiguration"]["awsvpcConfiguration"] == {
        "subnets": ["subnet-0private", "subnet-0literal"],
        "securityGroups": ["sg-0compile"],
        "assignPublicIp": "DISABLED",
    }
    overrides = {
        c["name"]: {e["name"]: e["value"] for e in c["environment"]}
        for c in seen["overrides"]["containerOverrides"]
    }
    assert list(overrides) == ["fetch", "export", "upload"]
    assert overrides["fetch"]["SOURCE_URI"] == "s3://checkpoints/llama/"
    assert (overrides["export"]["TENSOR_PARALLEL"], overrides["export"]["BATCH_SIZE"]) == ("2", "1")
    assert overrides["upload"]["ARTIFACT_URI"] == "s3://models/llama-1b/a/"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--source", "ftp://x", "--artifact-uri", "s3://m/a/"], "--source='ftp://x': use checkpoint:"),
        (["--source", "hub:not a model", "--artifact-uri", "s3://m/a/"], "source='not a model'"),
        (["--source", "hub:org/m", "--artifact-uri", "https://m/a"], "artifact_uri='https://m/a'"),
        (["--source", "checkpoint:../up", "--artifact-uri", "s3://m/a/"], "source='../up'"),
        (
            ["--source", "checkpoint:run", "--source-hw-backend", "inf2", "--artifact-uri", "s3://m/a/"],
            "hw_backend='inf2': use one of trn1, trn2",
        ),
        (
            ["--source", "checkpoint:run", "--source-kv-multiplier", "0", "--artifact-uri", "s3://m/a/"],
            "kv_size_multiplier=0: must be a whole number >= 1",
        ),
    ],
)
def test_bad_input_is_refused_before_any_aws_call(
    assembly: str, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    def no_aws(service: str, region: str) -> Any:
        raise AssertionError(f"called {service}")

    code = main(["compile", "--app", assembly, *argv], clients=no_aws)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err


def test_an_environment_without_a_compilation_says_how_to_add_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cdk.out"
    write_manifest(folder, {"s": write_stack(folder, "s", records={"/dev/Serving/Fleet": serving_record()})})
    code = main(["compile", "--app", str(folder), "--source", "hub:org/m", "--artifact-uri", "s3://m/a/"])
    err = capsys.readouterr().err
    assert code == 2 and "has no ModelCompilation: add one to the app" in err


def test_a_task_ecs_refuses_is_a_failure_naming_the_reason(
    assembly: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, ecs, stub = _stubs(IDS)
    stub.add_response("run_task", {"tasks": [], "failures": [{"arn": CLUSTER, "reason": "MISSING"}]})
    with cf, stub:
        code = _run(
            assembly, {"cloudformation": cloudformation, "ecs": ecs},
            "--source", "hub:org/m", "--artifact-uri", "s3://models/a/",
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "ecs:RunTask started no compile task" in err and "MISSING" in err, err


def _assembly_with(tmp_path: Path, **record: Any) -> str:
    serving = serving_record(
        backend="ec2",
        instance_type="inf2.xlarge",
        model={
            "model_id": "meta-llama/Llama-3.2-1B-Instruct",
            "parameters": 1_240_000_000,
            "tensor_parallel": 2,
        },
        tensor_parallel=2,
    )
    folder = tmp_path / "cdk.out"
    records = {"/dev/Serving/Fleet": serving, "/dev/Serving/Compile": compilation_record(**record)}
    write_manifest(
        folder, {"devServing": write_stack(folder, "devServing", stack_name="dev-Serving", records=records)}
    )
    return str(folder)


def test_what_the_deployed_task_cannot_do_is_refused_before_any_aws_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cdk_neuron.serving import ServingEngine

    fleet_image = ServingEngine.optimum_neuron().image.uri(REGION)
    older = fleet_image.replace("sdk2.26.1", "sdk2.25.0")
    assembly = _assembly_with(
        tmp_path, checkpoints=False, artifact_bucket="models", artifact_prefix="compiled/", image=older
    )

    def no_aws(service: str, region: str) -> Any:
        raise AssertionError(f"called {service}")

    code = main(
        ["compile", "--app", assembly, "--source", "checkpoint:run-7/step-1200", "--source-tp", "8",
         "--artifact-uri", "s3://other/llama/"],
        clients=no_aws,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert (
        "--source='checkpoint:run-7/step-1200': the environment's ModelCompilation mounts no CheckpointStore"
        in err
    )
    assert "may write only under compiled/ (its artifact_prefix): use s3://models/compiled/<name>/" in err
    # No training cluster in this assembly to take the checkpoint's generation from: named beside the rest.
    assert "--source-hw-backend=None: us-east-1 has no training cluster to take it from: give trn1" in err
    assert "the ModelCompilation writes to bucket models" in err
    assert (
        f"image='{older}': the ModelCompilation compiles with this image and the fleet serves {fleet_image}"
        in err
    )


def test_an_artifact_under_the_granted_prefix_of_the_right_bucket_is_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdk_neuron.serving import ServingEngine

    use_fake_aws_credentials(monkeypatch, REGION)
    assembly = _assembly_with(
        tmp_path,
        artifact_bucket="models",
        artifact_prefix="compiled/",
        image=ServingEngine.optimum_neuron().image.uri(REGION),
    )
    cloudformation, cf, ecs, stub = _stubs(IDS)
    stub.add_response("run_task", {"tasks": [{"taskArn": TASK}], "failures": []})
    stub.add_response("describe_task_definition", DEFINITION, {"taskDefinition": TASK_DEF})
    with cf, stub:
        code = _run(
            assembly,
            {"cloudformation": cloudformation, "ecs": ecs},
            "--source", "checkpoint:run-7/step-1200", "--source-tp", "8", "--source-hw-backend", "trn1",
            "--artifact-uri", "s3://models/compiled/llama-1b/run-7/",
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err


def test_a_checkpoint_source_carries_its_training_layout() -> None:
    from cdk_neuron.cli.compiling import parse_source

    source = parse_source(
        "checkpoint:run-7/step-1200",
        step=1200,
        tensor_parallel=8,
        pipeline_parallel=2,
        revision=None,
        hw_backend="trn2",
    )
    assert (source.uri, source.step, source.tensor_parallel, source.pipeline_parallel, source.hw_backend) == (
        "run-7/step-1200", 1200, 8, 2, "trn2",
    )  # fmt: skip


def test_a_training_checkpoints_kv_multiplier_and_config_source_reach_the_task(
    assembly: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation, cf, _, _ = _stubs(IDS)
    seen: dict[str, Any] = {}

    class Recording:
        def run_task(self, **request: Any) -> dict[str, Any]:
            seen.update(request)
            return {"tasks": [{"taskArn": TASK}], "failures": []}

        def describe_task_definition(self, **request: Any) -> dict[str, Any]:
            return DEFINITION

    with cf:
        code = _run(
            assembly,
            {"cloudformation": cloudformation, "ecs": Recording()},
            "--source", "checkpoint:run-7/step-1200", "--source-tp", "32", "--source-kv-multiplier", "4",
            "--source-hw-backend", "trn1",
            "--config-from", "hub:meta-llama/Llama-3.1-8B", "--artifact-uri", "s3://models/llama-1b/b/",
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    overrides = {
        c["name"]: {e["name"]: e["value"] for e in c["environment"]}
        for c in seen["overrides"]["containerOverrides"]
    }
    assert overrides["export"]["CONVERT_KV_MULTIPLIER"] == "4"
    assert (
        overrides["export"]["CONFIG_FROM"]
        == overrides["fetch"]["CONFIG_FROM"]
        == "hub:meta-llama/Llama-3.1-8B"
    )


def test_a_bad_config_source_is_refused_before_any_aws_call(
    assembly: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_aws(service: str, region: str) -> Any:
        raise AssertionError(f"called {service}")

    code = main(
        ["compile", "--app", assembly, "--source", "checkpoint:run", "--config-from", "llama",
         "--artifact-uri", "s3://models/a/"],
        clients=no_aws,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "config_from='llama': use hub:<org/model>[@revision] or s3://" in err


# -- this repository's app: the compile task found from cdk.json alone ---------------------------------

CONFIG = str(Path(__file__).resolve().parent.parent / "cdk.json")


class _RecordingEcs:
    """ECS as the compile command calls it: RunTask (recorded) and DescribeTaskDefinition."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}

    def run_task(self, **request: Any) -> dict[str, Any]:
        self.run.update(request)
        return {"tasks": [{"taskArn": TASK}], "failures": []}

    def describe_task_definition(self, **request: Any) -> dict[str, Any]:
        return DEFINITION


def _overrides(run: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        c["name"]: {e["name"]: e["value"] for e in c["environment"]}
        for c in run["overrides"]["containerOverrides"]
    }


def test_the_apps_compile_task_is_found_by_its_pinned_ids_and_its_subnets_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cf = Stubber(cloudformation)
    for logical, physical in (
        ("CompileCluster", CLUSTER),
        ("CompileTaskDefinition", TASK_DEF),
        ("CompileSecurityGroup", "sg-0compile"),
    ):
        cf.add_response(
            "describe_stack_resource",
            {
                "StackResourceDetail": {
                    "LogicalResourceId": logical,
                    "PhysicalResourceId": physical,
                    "ResourceType": "AWS::X::Y",
                    "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            },
            {"StackName": "dev-Training", "LogicalResourceId": logical},
        )
    cf.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "dev-Training",
                    "CreationTime": "2026-12-01T00:00:00Z",
                    "StackStatus": "UPDATE_COMPLETE",
                    "Outputs": [{"OutputKey": "CompileSubnetIds", "OutputValue": "subnet-0training"}],
                }
            ]
        },
        {"StackName": "dev-Training"},
    )
    ecs = _RecordingEcs()
    with cf:
        code = main(
            ["compile", "--config", CONFIG, "--env", "dev", "--json", "--source", "checkpoint:run-7/step-1200",
             "--source-tp", "32", "--artifact-uri", "s3://cdk-neuron-dev-models/compiled/llama-3b/run-7/"],
            clients=lambda service, region: {"cloudformation": cloudformation, "ecs": ecs}[service],
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    cf.assert_no_pending_responses()
    vpc = ecs.run["networkConfiguration"]["awsvpcConfiguration"]
    assert (vpc["subnets"], vpc["securityGroups"]) == (["subnet-0training"], ["sg-0compile"])
    # The task carries the task definition's environment/project tags (cost allocation).
    assert (ecs.run["propagateTags"], ecs.run["enableECSManagedTags"]) == ("TASK_DEFINITION", True)
    export = _overrides(ecs.run)["export"]
    # dev trains on trn1.32xlarge: its checkpoints convert with NxD's trn1 backend, without being told.
    assert export["CONVERT_HW_BACKEND"] == "trn1"
    # dev has a NAT: the fleet's model on the Hub may supply a missing config, so the export is online.
    assert "HF_HUB_OFFLINE" not in export


def _offline_assembly(tmp_path: Path) -> str:
    return _assembly_with(
        tmp_path,
        internet=False,
        aws_cli_image=f"111111111111.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35",
        aws_cli_cache_repository="cdk-neuron-ecr-public/aws-cli/aws-cli",
    )


def test_without_a_nat_a_hub_source_is_refused_before_any_aws_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_aws(service: str, region: str) -> Any:
        raise AssertionError(f"called {service}")

    code = main(
        ["compile", "--app", _offline_assembly(tmp_path), "--source", "hub:meta-llama/Llama-3.2-1B-Instruct",
         "--artifact-uri", "s3://models/a/"],
        clients=no_aws,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "source='hub:meta-llama/Llama-3.2-1B-Instruct': the compile task's subnets have no route" in err


def test_without_a_nat_an_uncached_aws_cli_image_is_refused_with_the_pull_that_caches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    ecr = boto3.client("ecr", region_name=REGION)
    stub = Stubber(ecr)
    stub.add_client_error(
        "describe_images",
        service_error_code="ImageNotFoundException",
        expected_params={
            "repositoryName": "cdk-neuron-ecr-public/aws-cli/aws-cli",
            "imageIds": [{"imageTag": "2.22.35"}],
        },
    )

    def clients(service: str, region: str) -> Any:
        if service != "ecr":
            raise AssertionError(f"called {service}: nothing may start before the image is cached")
        return ecr

    with stub:
        code = main(
            ["compile", "--app", _offline_assembly(tmp_path), "--source", "checkpoint:run-7/step-1200",
             "--source-hw-backend", "trn1", "--artifact-uri", "s3://models/a/"],
            clients=clients,
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "is not in the ECR pull-through cache yet, and the task's subnets have no NAT" in err
    assert (
        f"docker pull 111111111111.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35"
        in err
    )
    stub.assert_no_pending_responses()


def _refused_pull(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *,
    sts_account: str | None,
) -> str:
    """The refusal ``compile`` prints for an uncached AWS CLI image in an assembly synthesized with the
    placeholder account, with STS answering ``sts_account`` (None: STS refuses)."""
    use_fake_aws_credentials(monkeypatch, REGION)
    assembly = _assembly_with(
        tmp_path,
        internet=False,
        aws_cli_image=f"000000000000.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35",
        aws_cli_cache_repository="cdk-neuron-ecr-public/aws-cli/aws-cli",
    )
    ecr, sts = boto3.client("ecr", region_name=REGION), boto3.client("sts", region_name=REGION)
    ecr_stub, sts_stub = Stubber(ecr), Stubber(sts)
    ecr_stub.add_client_error("describe_images", service_error_code="ImageNotFoundException")
    if sts_account is None:
        sts_stub.add_client_error("get_caller_identity", service_error_code="ExpiredToken")
    else:
        sts_stub.add_response(
            "get_caller_identity",
            {"Account": sts_account, "Arn": f"arn:aws:iam::{sts_account}:user/u", "UserId": "AIDA"},
        )
    with ecr_stub, sts_stub:
        code = main(
            ["compile", "--app", assembly, "--source", "checkpoint:run-7/step-1200", "--source-hw-backend",
             "trn1", "--artifact-uri", "s3://models/a/"],
            clients=lambda service, region: {"ecr": ecr, "sts": sts}[service],
        )  # fmt: skip
    ecr_stub.assert_no_pending_responses()
    sts_stub.assert_no_pending_responses()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    return err


def test_the_pull_that_caches_the_image_names_the_callers_account_not_the_placeholder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    err = _refused_pull(tmp_path, capsys, monkeypatch, sts_account="222222222222")
    pull = f"222222222222.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35"
    assert f"--password-stdin 222222222222.dkr.ecr.{REGION}.amazonaws.com && docker pull {pull}" in err
    assert "docker pull 000000000000" not in err and "<account-id>" not in err


def test_without_sts_the_pull_names_an_account_placeholder_and_how_to_fill_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    err = _refused_pull(tmp_path, capsys, monkeypatch, sts_account=None)
    assert (
        f"docker pull <account-id>.dkr.ecr.{REGION}.amazonaws.com/cdk-neuron-ecr-public/aws-cli/aws-cli:2.22.35"
        in err
    )
    assert "aws sts get-caller-identity --query Account --output text" in err
    assert "000000000000.dkr" not in err.split("is not in the ECR pull-through cache")[1]


def test_without_a_nat_a_cached_image_runs_and_the_export_is_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_aws_credentials(monkeypatch, REGION)
    ecr = boto3.client("ecr", region_name=REGION)
    stub = Stubber(ecr)
    stub.add_response(
        "describe_images",
        {
            "imageDetails": [
                {"repositoryName": "cdk-neuron-ecr-public/aws-cli/aws-cli", "imageTags": ["2.22.35"]}
            ]
        },
        {"repositoryName": "cdk-neuron-ecr-public/aws-cli/aws-cli", "imageIds": [{"imageTag": "2.22.35"}]},
    )
    cloudformation, cf, _, _ = _stubs(IDS)
    ecs = _RecordingEcs()
    with stub, cf:
        code = main(
            ["compile", "--app", _offline_assembly(tmp_path), "--json", "--source", "checkpoint:run-7/step-1200",
             "--config-from", "s3://models/configs/llama/", "--artifact-uri", "s3://models/a/"],
            clients=lambda service, region: {"ecr": ecr, "cloudformation": cloudformation, "ecs": ecs}[service],
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert _overrides(ecs.run)["export"]["HF_HUB_OFFLINE"] == "1"
    stub.assert_no_pending_responses()


def test_the_checkpoints_generation_is_the_training_clusters() -> None:
    from cdk_neuron.cli.compiling import source_hw_backend
    from stacks.config import deployments

    dev = deployments(json.loads(Path(CONFIG).read_text()))["dev"]
    assert source_hw_backend(None, dev, 32) == "trn1"
    assert source_hw_backend("trn2", dev, 32) == "trn2"  # what the user says wins
    assert dev.training is not None
    trn2 = dataclasses.replace(dev, training=dataclasses.replace(dev.training, instance_type="trn2.48xlarge"))
    assert source_hw_backend(None, trn2, 32) == "trn2"
    untrained = dataclasses.replace(dev, training=None)
    assert source_hw_backend(None, untrained, None) == "trn1"  # no conversion: nothing reads it
