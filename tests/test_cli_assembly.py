"""``cdk_neuron.cli.assembly``: any app's cloud assembly read back into Deployments.

Two kinds of test: this repository's whole app synthesized once (app_assembly), whose
Deployments read from the assembly must plan and cost exactly as those the cdk.json loader builds;
and small hand-written assemblies for the shapes other apps produce (top-level stacks, inline
metadata of older CDKs, environment-agnostic stacks, several clusters in one environment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from app_assembly import synthesized_app
from assembly_writer import nat_and_endpoints, serving_record, training_record, write_manifest, write_stack

from cdk_neuron.cli import assembly, cost, deployments, plan
from cdk_neuron.cli.main import main
from cdk_neuron.cli.preflight import images
from cdk_neuron.deployment import Deployment
from cdk_neuron.errors import NeuronConfigError
from cdk_support import REPO_ROOT

MY_IMAGE = "111111111111.dkr.ecr.us-east-1.amazonaws.com/my-vllm:2026-12-01"

# --------------------------------------------------------------------------------------------
# This repository's app: the assembly says what cdk.json says
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Deployment], dict[str, Deployment]]:
    app = synthesized_app()
    return assembly.load(app.outdir), deployments.load(REPO_ROOT / "cdk.json")


def test_stages_become_environments_named_after_them(
    both: tuple[dict[str, Deployment], dict[str, Deployment]],
) -> None:
    read, configured = both
    assert list(read) == list(configured) == ["dev", "staging", "prod"]
    for name, env in read.items():
        want = configured[name]
        assert (env.region, env.account) == (want.region, want.account)
        assert env.training_az_id == want.training_az_id
        assert "/" + name + "/Training/Cluster" in env.construct_paths


def test_the_assembly_plans_as_the_configuration_does(
    both: tuple[dict[str, Deployment], dict[str, Deployment]],
) -> None:
    read, configured = both
    for name in read:
        got, want = plan.build([read[name]]).to_json(), plan.build([configured[name]]).to_json()
        assert got["environments"][0].keys() == want["environments"][0].keys()
        got_env, want_env = got["environments"][0], want["environments"][0]
        assert got_env["training"] == want_env["training"]
        assert got_env["checkpoint"] == want_env["checkpoint"]
        # The assembly records the planned instance type: the planner's choice reads as configured.
        assert {**got_env["serving"], "instance_chosen_by": None} == {
            **want_env["serving"],
            "instance_chosen_by": None,
        }


def _lines(section: dict[str, Any]) -> dict[str, tuple[str, float | None]]:
    return {
        line["item"]: (line["quantity"], line["usd_per_hour"])
        for line in section["lines"]
        if line["item"] != "CloudWatch Logs groups and VPC flow logs"
    }


def test_the_templates_price_as_the_configuration_does(
    both: tuple[dict[str, Deployment], dict[str, Deployment]],
) -> None:
    """NAT devices, endpoints, keys, alarms, dashboards and load balancers counted in the templates."""
    read, configured = both
    for name in read:
        got, want = cost.build([read[name]]).to_json(), cost.build([configured[name]]).to_json()
        for section in ("idle", "full_scale"):
            assert _lines(got["environments"][0][section]) == _lines(want["environments"][0][section])
            assert (
                got["environments"][0][section]["usd_per_hour"]
                == want["environments"][0][section]["usd_per_hour"]
            )
        assert read[name].network == configured[name].network
        assert images._images(read[name]) == images._images(configured[name])
        got_serving, want_serving = read[name].serving, configured[name].serving
        assert got_serving is not None and want_serving is not None
        assert (got_serving.certificate_arn, got_serving.token_secret) == (
            want_serving.certificate_arn,
            want_serving.token_secret,
        )
        assert len(read[name].standing.kms_keys) == len(configured[name].standing.kms_keys)
        assert read[name].standing.log_groups >= 1 and read[name].standing.flow_logs == 1


def test_the_training_record_names_its_job_queue_by_logical_id(
    both: tuple[dict[str, Deployment], dict[str, Deployment]],
) -> None:
    read, _ = both
    training = read["dev"].training
    assert training is not None and training.jobs is not None
    assert training.jobs.stack_name == "dev-Training"
    assert training.jobs.job_queue_logical_id and training.jobs.job_queue_logical_id.startswith(
        "ClusterJobQueue"
    )
    assert training.jobs.job_definition_logical_id
    assert training.job_image == configured_image(both, "dev")


def configured_image(both: tuple[dict[str, Deployment], dict[str, Deployment]], name: str) -> str | None:
    training = both[1][name].training
    return training.job_image if training is not None else None


def test_path_selects_the_environment_holding_a_construct(
    both: tuple[dict[str, Deployment], dict[str, Deployment]],
) -> None:
    read, configured = both
    assert assembly.select_path(read, "prod/Serving/Fleet").name == "prod"
    assert assembly.select_path(read, "/staging").name == "staging"
    assert assembly.select_path(read, "dev/Training/Cluster/JobQueue").name == "dev"
    with pytest.raises(NeuronConfigError, match="no deployment holds it"):
        assembly.select_path(read, "qa/Training")
    with pytest.raises(NeuronConfigError, match="add --app DIR or --synth"):
        assembly.select_path(configured, "dev/Training")


def test_plan_and_cost_read_an_assembly_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    outdir = str(synthesized_app().outdir)
    assert main(["plan", "--app", outdir, "--path", "prod/Training", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in doc["environments"]] == ["prod"]
    assert main(["--app", outdir, "cost", "--env", "dev", "--path", "prod/Training"]) == 2
    assert "is in prod, not --env dev" in capsys.readouterr().err
    assert main(["cost", "--app", outdir, "--config", "cdk.json"]) == 2
    assert "give one source" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Hand-written assemblies: the shapes of other apps
# --------------------------------------------------------------------------------------------


def test_top_level_stacks_group_by_environment(tmp_path: Path) -> None:
    """Network, training and serving stacks of one account and Region are one environment."""
    artifacts = {
        "Net": write_stack(tmp_path, "Net", resources=nat_and_endpoints()),
        "Train": write_stack(
            tmp_path,
            "Train",
            stack_name="ml-training",
            records={
                "/Train/Cluster": training_record(),
                "/Train/Checkpoints": {
                    "kind": "checkpoints",
                    "version": 1,
                    "one_zone": True,
                    "model_parameters": 8_000_000_000,
                    "writers": 2,
                    "master_weights_in_checkpoint": True,
                },
            },
        ),
        "Serve": write_stack(
            tmp_path,
            "Serve",
            inline=True,
            records={"/Serve/Fleet": serving_record()},
            resources={
                "Model": {
                    "Type": "AWS::SageMaker::Model",
                    "Properties": {"PrimaryContainer": {"Image": MY_IMAGE}},
                    "Metadata": {"aws:cdk:path": "Serve/Fleet/Model"},
                },
                "OtherModel": {
                    "Type": "AWS::SageMaker::Model",
                    "Properties": {"PrimaryContainer": {"Image": "elsewhere/other:1"}},
                    "Metadata": {"aws:cdk:path": "Serve/Other/Model"},
                },
            },
        ),
        "Other": write_stack(tmp_path, "Other", environment="aws://111111111111/eu-west-1"),
    }
    found = assembly.load(write_manifest(tmp_path, artifacts))
    assert list(found) == ["us-east-1"]  # eu-west-1 holds no cdk-neuron workload
    env = found["us-east-1"]
    assert (env.account, env.region, env.az_ids) == ("111111111111", "us-east-1", ("use1-az6",))
    assert env.training is not None and env.serving is not None
    assert env.training.plan.world_size == 64 and env.training.max_nodes == 4
    assert env.training.checkpoint is not None and env.training.checkpoint.writers == 2
    assert env.training.checkpoint.master_weights_in_checkpoint is True
    assert env.storage.one_zone is True
    assert env.training.jobs is not None and env.training.jobs.stack_name == "ml-training"
    assert env.serving.backend == "sagemaker" and env.serving.plan.tensor_parallel == 2
    assert env.serving.availability_zones == ("us-east-1a", "us-east-1b")
    # The image the fleet runs, from its own SageMaker model: preflight checks that one.
    assert env.serving.image == MY_IMAGE
    assert ("SageMaker serving", MY_IMAGE) in images._images(env)
    assert env.network.nat_gateways == 1 and env.network.nat_instance_type == "t4g.nano"
    assert env.network.interface_endpoints == ("ecr.api", "logs") and env.network.endpoint_azs == 2
    assert env.standing.kms_keys == ("training volumes", "key 2")
    assert (env.standing.alarms, env.standing.log_groups, env.standing.flow_logs) == (1, 1, 1)
    assert assembly.bootstrap_qualifier(tmp_path) == "custom1"


def test_two_accounts_in_one_region_and_agnostic_stacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts = {
        "A": write_stack(tmp_path, "A", records={"/A/Cluster": training_record()}),
        "B": write_stack(
            tmp_path, "B", environment="aws://222222222222/us-east-1", records={"/B/Fleet": serving_record()}
        ),
        "C": write_stack(
            tmp_path,
            "C",
            environment="aws://unknown-account/unknown-region",
            records={"/C/Cluster": training_record(availability_zone_id=None)},
        ),
    }
    write_manifest(tmp_path, artifacts)
    for variable in ("CDK_DEFAULT_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(NeuronConfigError, match=r"default\.region=None: its stacks are environment-agnostic"):
        assembly.load(tmp_path)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    found = assembly.load(tmp_path)
    assert list(found) == ["111111111111-us-east-1", "222222222222-us-east-1", "default"]
    agnostic = found["default"]
    assert (agnostic.account, agnostic.region, agnostic.az_ids, agnostic.training_az_id) == (
        None,
        "us-west-2",
        (),
        None,
    )


def test_several_clusters_in_one_stage_are_one_environment_each(tmp_path: Path) -> None:
    stage = tmp_path / "assembly-lab"
    artifacts = {
        "labA": write_stack(
            stage,
            "labA",
            display="lab/A",
            stack_name="lab-A",
            resources=nat_and_endpoints(),
            records={"/lab/A/Small": training_record(), "/lab/A/Big": training_record(max_nodes=8)},
        )
    }
    write_manifest(stage, artifacts)
    write_manifest(
        tmp_path,
        {
            "assembly-lab": {
                "type": "cdk:cloud-assembly",
                "properties": {"directoryName": "assembly-lab", "displayName": "lab"},
            }
        },
    )
    found = assembly.load(tmp_path)
    assert list(found) == ["lab/A/Big", "lab/A/Small"]
    big, small = found.values()
    assert big.training is not None and big.training.max_nodes == 8
    # The stage's NAT, endpoints and keys bill once: with the first environment only.
    assert big.network.nat_gateways == 1 and small.network.nat_gateways == 0
    assert small.standing.kms_keys == ()
    assert assembly.select_path(found, "lab/A/Small/JobQueue").name == "lab/A/Small"
    with pytest.raises(NeuronConfigError, match="is in several deployments"):
        assembly.select_path(found, "lab/A")


def test_records_the_cli_cannot_read_are_refused_with_their_path(tmp_path: Path) -> None:
    write_manifest(
        tmp_path,
        {"S": write_stack(tmp_path, "S", records={"/S/Cluster": {**training_record(), "version": 2}})},
    )
    with pytest.raises(NeuronConfigError, match="this cdk-neuron reads version 1"):
        assembly.load(tmp_path)
    write_manifest(
        tmp_path,
        {"S": write_stack(tmp_path, "S", records={"/S/Fleet": serving_record(engine="triton")})},
    )
    with pytest.raises(NeuronConfigError, match=r"^S/Fleet: engine='triton'"):
        assembly.load(tmp_path)
    write_manifest(tmp_path, {"S": write_stack(tmp_path, "S")})
    with pytest.raises(NeuronConfigError, match="records no cdk-neuron training cluster or inference fleet"):
        assembly.load(tmp_path)
    with pytest.raises(NeuronConfigError, match=r"holds no manifest\.json"):
        assembly.load(tmp_path / "missing")


@pytest.mark.parametrize(
    ("value", "service"),
    [
        ("com.amazonaws.us-west-2.sagemaker.runtime", "sagemaker.runtime"),
        ({"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".ecr.dkr"]]}, "ecr.dkr"),
        ({"Fn::Join": [".", ["com.amazonaws", {"Ref": "AWS::Region"}, "ssm"]]}, "ssm"),
        ({"Ref": "Service"}, "unknown service"),
    ],
)
def test_endpoint_service_names(value: object, service: str) -> None:
    assert assembly.endpoint_service(value) == service


SECRET = "arn:aws:secretsmanager:us-east-1:111111111111:secret:hf-token-AbCdEf"
CERTIFICATE = "arn:aws:acm:us-east-1:111111111111:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


def ec2_fleet_resources(*, secret_parts: list[object]) -> dict[str, Any]:
    user_data = {
        "Fn::Base64": {
            "Fn::Join": [
                "",
                ["#!/bin/bash\ncat > /etc/cdk-neuron/fleet.env <<'EOF'\nREGION=us-east-1\n", f"IMAGE={MY_IMAGE}\n",
                 "ARTIFACT_URI=''\n",
                 *secret_parts, "DATA_DIR=/opt/dlami/nvme\nEOF\n"],
            ]
        }
    }  # fmt: skip
    return {
        "Template": {
            "Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateData": {"UserData": user_data}},
        },
        "Listener": {
            "Type": "AWS::ElasticLoadBalancingV2::Listener",
            "Properties": {"Certificates": [{"CertificateArn": CERTIFICATE}], "Port": 443},
        },
    }


def test_an_ec2_fleet_image_certificate_and_token_secret_come_from_the_template(tmp_path: Path) -> None:
    record = {"/Web/Fleet": serving_record(backend="ec2", instance_type="inf2.8xlarge")}
    resources = ec2_fleet_resources(secret_parts=[f"HF_TOKEN_SECRET_ARN='{SECRET}'\n"])
    write_manifest(tmp_path, {"Web": write_stack(tmp_path, "Web", records=record, resources=resources)})
    serving = assembly.load(tmp_path)["us-east-1"].serving
    assert serving is not None
    assert (serving.image, serving.certificate_arn, serving.token_secret) == (MY_IMAGE, CERTIFICATE, SECRET)

    # A secret ARN a token interrupts (a secret imported by name) is not guessed at.
    interrupted = [
        "HF_TOKEN_SECRET_ARN=arn:",
        {"Ref": "AWS::Partition"},
        ":secretsmanager:us-east-1:1:secret:hf\n",
    ]
    resources = ec2_fleet_resources(secret_parts=interrupted)
    write_manifest(tmp_path, {"Web": write_stack(tmp_path, "Web", records=record, resources=resources)})
    serving = assembly.load(tmp_path)["us-east-1"].serving
    assert serving is not None and serving.token_secret is None and serving.image == MY_IMAGE
    # No secret: the setting is the empty string.
    resources = ec2_fleet_resources(secret_parts=["HF_TOKEN_SECRET_ARN=''\n"])
    write_manifest(tmp_path, {"Web": write_stack(tmp_path, "Web", records=record, resources=resources)})
    serving = assembly.load(tmp_path)["us-east-1"].serving
    assert serving is not None and serving.token_secret is None
