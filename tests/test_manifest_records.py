"""Each construct records in the cloud assembly what the CLI needs (cdk_neuron._manifest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ACCOUNT, REGION = "111111111111", "us-east-1"
AZS = ["us-east-1a", "us-east-1b"]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The records in the stack's metadata file, and in its template's Metadata section."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.serving import ModelSpec, SageMakerInferenceFleet
    from cdk_neuron.storage import CheckpointStore
    from cdk_neuron.training import BatchTrainingCluster, Capacity

    out = tmp_path_factory.mktemp("assembly")
    from cdk_support import cdk_json_context

    app = cdk.App(outdir=str(out), context=cdk_json_context())

    class Pinned(cdk.Stack):
        @property
        def availability_zones(self) -> list[str]:
            return AZS

    stack = Pinned(app, "Workloads", env=cdk.Environment(account=ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, model_parameters=8e9, writers=2)
    BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=ec2.SubnetSelection(
            availability_zones=[AZS[0]], subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        ),
        availability_zone_id="use1-az6",
        checkpoints=store,
        capacity=Capacity.reservation("cr-0123456789abcdef0"),
        job_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
    )
    SageMakerInferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=ModelSpec(
            model_id="meta-llama/Llama-3.1-8B-Instruct", artifact_uri="s3://models/llama/", parameters=8e9
        ),
        instance_type="inf2.8xlarge",
    )
    app.synth()
    manifest = json.loads((Path(out) / "manifest.json").read_text())
    metadata_file = manifest["artifacts"]["Workloads"]["additionalMetadataFile"]
    metadata = json.loads((Path(out) / metadata_file).read_text())
    found = {}
    for path, entries in metadata.items():
        for entry in entries:
            if entry["type"] == "cdk-neuron:workload":
                found[path] = entry["data"]
    template = json.loads((Path(out) / "Workloads.template.json").read_text())
    return found, template


@pytest.fixture(scope="module")
def records(synthesized: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return synthesized[0]


def test_the_template_carries_the_same_records_for_what_is_deployed(
    synthesized: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """GetTemplate returns the template, not the cloud assembly: cdk-neuron impact --deployed prices
    what is deployed from these."""
    from cdk_neuron.cli.assembly import template_records

    records, template = synthesized
    assert template["Metadata"]["cdk-neuron:workloads"] == records
    assert {r.path: r.kind for r in template_records(template)} == {p: d["kind"] for p, d in records.items()}
    assert template_records({"Resources": {}}) == ()


def test_each_workload_records_itself_at_its_construct_path(records: dict[str, dict[str, Any]]) -> None:
    assert {path: data["kind"] for path, data in records.items()} == {
        "/Workloads/Checkpoints": "checkpoints",
        "/Workloads/Cluster": "training",
        "/Workloads/Fleet": "serving",
    }
    assert all(data["version"] == 1 for data in records.values())


def test_the_training_record_names_plan_capacity_and_the_job_queue(
    records: dict[str, dict[str, Any]],
) -> None:
    training = records["/Workloads/Cluster"]
    assert training["instance_type"] == "trn1.32xlarge" and training["max_nodes"] == 2
    # CDK drops None values from metadata: readers treat a missing key as None.
    assert training["plan"] == {"nodes": 2, "tensor_parallel": 32, "pipeline_parallel": 1}
    assert training["capacity"]["kind"] == "reservation"
    assert training["capacity"]["reservation_id"] == "cr-0123456789abcdef0"
    assert training["availability_zone_id"] == "use1-az6"
    assert training["job_image"].endswith("ubuntu24.04")
    assert training["job_queue_logical_id"].startswith("ClusterJobQueue")
    assert training["job_definition_logical_id"].startswith("ClusterJobDefinition")


def test_the_serving_and_storage_records(records: dict[str, dict[str, Any]]) -> None:
    serving = records["/Workloads/Fleet"]
    assert (serving["backend"], serving["engine"], serving["instance_type"]) == (
        "sagemaker",
        "optimum-neuron",
        "inf2.8xlarge",
    )
    assert serving["model"]["parameters"] == 8_000_000_000
    assert serving["model"]["artifact_uri"].startswith("s3://models/llama")
    assert records["/Workloads/Checkpoints"] == {
        "kind": "checkpoints",
        "version": 1,
        "one_zone": False,
        "model_parameters": 8_000_000_000,
        "writers": 2,
    }


def test_a_checkpoint_with_master_weights_records_it_and_is_sized_at_14_bytes() -> None:
    """Recorded only when true (absent means false), so existing records and snapshots stay as they were."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk.assertions import Template

    from cdk_neuron.storage import CheckpointStore

    stack = cdk.Stack(cdk.App(), "Master", env=cdk.Environment(account=ACCOUNT, region=REGION))
    store = CheckpointStore(
        stack,
        "Checkpoints",
        vpc=ec2.Vpc(stack, "Vpc"),
        model_parameters=8e9,
        master_weights_in_checkpoint=True,
    )
    assert store.checkpoint_estimate is not None
    # 8e9 x (2 + 8 + 4) bytes = 112 GB.
    assert store.checkpoint_estimate.size_gb == pytest.approx(112.0)
    record = Template.from_stack(stack).to_json()["Metadata"]["cdk-neuron:workloads"]["/Master/Checkpoints"]
    assert record["master_weights_in_checkpoint"] is True


def test_a_plan_with_a_model_records_what_the_cli_needs_to_plan_it_again() -> None:
    # The CLI re-plans from the record: the model, ZeRO-1, the level and the recomputed modules.
    from cdk_neuron import _manifest
    from cdk_neuron.cli import assembly
    from cdk_neuron.planner import TrainingModel, plan_training

    plan = plan_training(
        "trn2.48xlarge", 8, 32, 4, 2, model=TrainingModel(parameters=70_553_706_496, sequence_length=8192),
        activation_checkpointing="selective", recompute=["LlamaRMSNorm", "ActivationMultiplyMLP"],
    )  # fmt: skip
    record = _manifest._plan(plan)
    assert record["model"] == {"parameters": 70_553_706_496, "sequence_length": 8192, "micro_batch_size": 1}
    assert (record["zero1"], record["activation_checkpointing"], record["recompute"]) == (
        True, "selective", ["LlamaRMSNorm", "ActivationMultiplyMLP"],
    )  # fmt: skip
    data = {"kind": "training", "instance_type": "trn2.48xlarge", "max_nodes": 8, "plan": record,
            "engine": "auto-scaling-group"}  # fmt: skip
    stack = assembly.Stack("T", "T", "/T", None, ACCOUNT, REGION, {}, ())
    again = assembly.training(assembly.Record("/T/Cluster", data), stack, None).plan
    assert (again.recompute, again.memory) == (plan.recompute, plan.memory)
    # Without a level that recomputes modules, none are recorded. (With none recomputed this layout needs
    # 12.55 GiB per core, over half of 24: full recomputation keeps it within the limit.)
    full = plan_training("trn2.48xlarge", 8, 32, 4, 2, model=plan.model, activation_checkpointing="full")
    assert "recompute" not in _manifest._plan(full)
