"""`cdk-neuron plan` and `cdk-neuron cost`: offline, from cdk.json and the catalog's dated tables."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cdk_neuron import catalog
from cdk_neuron.cli import cost
from cdk_neuron.cli.main import main
from cdk_support import REPO_ROOT
from stacks.config import deployment, load_cdk_json

REPO = Path(__file__).resolve().parents[1]
IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"


def environment(**overrides: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "region": "us-east-1",
        "az_ids": ["use1-az6", "use1-az4"],
        "removal_policy": "destroy",
        "network": {"nat_gateways": 0, "endpoint_azs": "all"},
        "training": {
            "instance_type": "trn1.32xlarge",
            "max_nodes": 4,
            "plan": {"nodes": 2, "tensor_parallel": 32},
            "job_image": IMAGE.format(region="us-east-1"),
            "checkpoint": {"model_parameters": 8_000_000_000, "writers": 2},
        },
        "storage": {"one_zone": True},
        "serving": {
            "backend": "ec2",
            "min_capacity": 1,
            "max_capacity": 3,
            "model": {
                "model_id": "meta-llama/Llama-3.2-3B-Instruct",
                "parameters": 3_210_000_000,
                "tensor_parallel": 2,  # one replica on both cores
                "artifact_uri": "s3://models-bucket/llama-3.2-3b/",
            },
        },
    }
    for key, value in overrides.items():
        env[key] = {**env[key], **value} if isinstance(value, dict) and key in env else value
    return env


def write_config(tmp_path: Path, **envs: dict[str, Any]) -> Path:
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps(
            {
                "app": "python3 app.py",
                "context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": envs},
            }
        )
    )
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    prod = environment(
        removal_policy="retain",
        account="222222222222",
        network={"nat_gateways": 2, "endpoint_azs": "all"},
        training={
            "max_nodes": 16,
            "plan": {"nodes": 16, "tensor_parallel": 32, "pipeline_parallel": 8},
            "capacity": {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"},
            "checkpoint": {"model_parameters": 70_000_000_000, "writers": 16},
        },
        serving={
            "backend": "sagemaker",
            "instance_type": "inf2.48xlarge",
            "min_capacity": 2,
            "max_capacity": 8,
            "model": {"model_id": "meta-llama/Meta-Llama-3-70B-Instruct", "parameters": 70_000_000_000},
        },
    )
    return write_config(tmp_path, dev=environment(), prod=prod)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def env_doc(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in doc["environments"] if e["name"] == name)


# --------------------------------------------------------------------------------------------
# plan
# --------------------------------------------------------------------------------------------


def test_plan_json_shape_and_values(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", "--config", str(config))
    assert code == 0
    assert set(doc) == {"command", "schema_version", "environments"}
    assert doc["command"] == "plan" and doc["schema_version"] == 1
    assert [e["name"] for e in doc["environments"]] == ["dev", "prod"]
    dev = env_doc(doc, "dev")
    assert set(dev) == {
        "name",
        "region",
        "az_ids",
        "training",
        "checkpoint",
        "serving",
        "startup",
        "result_costs",
        "omitted",
    }
    assert set(dev["training"]) == {
        "instance_type", "az_id", "engine", "capacity", "nodes", "max_nodes", "ranks_per_node", "world_size",
        "tensor_parallel", "pipeline_parallel", "data_parallel", "logical_nc_config", "tp_within_neuronlink",
        "efa_dimensions", "efa_traffic", "notes", "memory",
    }  # fmt: skip
    # This configuration names no training model: memory is not estimated, and no published figure matches.
    assert dev["training"]["memory"] is None
    assert dev["result_costs"]["training"]["label"] == "unknown"
    training = dev["training"]
    assert (training["nodes"], training["ranks_per_node"], training["world_size"]) == (2, 32, 64)
    assert (training["tensor_parallel"], training["pipeline_parallel"], training["data_parallel"]) == (
        32,
        1,
        2,
    )
    assert training["tp_within_neuronlink"] is True
    assert training["efa_dimensions"] == ["data"]
    assert training["az_id"] == "use1-az6"

    checkpoint = dev["checkpoint"]
    # 8e9 x (2 + 8) bytes: NxD Training's checkpoint (16-bit weights and Adam's two fp32 moments, no master
    # weights: use_master_weights_in_ckpt is False in every config it publishes).
    assert (checkpoint["size_gb"], checkpoint["bytes_per_parameter"]) == (pytest.approx(80.0), 10.0)
    assert checkpoint["writers"] == 2 and checkpoint["file_system"] == "EFS One Zone"
    assert checkpoint["save_minutes"] > 0

    serving = dev["serving"]
    # Llama-3.2 3B bf16 at the configured TP 2: 2.99 GiB of weights + 4 of 8 KV heads (0.22 GiB)
    # per core; one replica loads 5.98 of inf2.xlarge's 12 usable GiB of host RAM.
    assert serving["instance_type"] == "inf2.xlarge"
    assert serving["instance_chosen_by"] == "planner (cheapest fit)"
    assert serving["tensor_parallel"] == 2
    assert serving["replicas_per_instance"] == 1
    assert serving["kv_heads_per_core"] == 4
    assert 0 < serving["hbm_per_core_gib"] < serving["hbm_limit_per_core_gib"] == 16
    assert 0 < serving["headroom"] < 1

    prod = env_doc(doc, "prod")["training"]
    assert prod["efa_dimensions"] == ["pipeline", "data"]
    assert prod["data_parallel"] == 2


def test_plan_one_environment_and_table(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", str(config), "--env", "prod"]) == 0
    out = capsys.readouterr().out
    assert "prod (us-east-1): training placement" in out
    assert "checkpoint estimate" in out and "serving sizing" in out
    assert "TP inside NeuronLink" in out
    assert "dev (" not in out


def test_plan_without_checkpoint_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = environment()
    del env["training"]["checkpoint"]
    path = write_config(tmp_path, dev=env)
    code, doc = run_json(capsys, "plan", "--config", str(path))
    assert code == 0 and doc["environments"][0]["checkpoint"] is None
    assert main(["plan", "--config", str(path)]) == 0
    assert "no checkpoint estimate" in capsys.readouterr().out


def test_plan_reads_the_repository_cdk_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "plan", "--config", str(REPO / "cdk.json"))
    assert code == 0
    assert [e["name"] for e in doc["environments"]] == list(load_cdk_json(REPO / "cdk.json"))


def test_invalid_config_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, dev=environment(training={"max_nodes": 0}))
    assert main(["plan", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "environments.dev.training.max_nodes" in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["plan", "--env", "nope"], "--env='nope'"),
        (["cost", "--env", "nope"], "--env='nope'"),
    ],
)
def test_unknown_environment_exit_2(
    config: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    assert main([*argv, "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "dev, prod" in err


def test_missing_cdk_json_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", str(tmp_path / "absent.json")]) == 2
    assert "cannot read it as JSON" in capsys.readouterr().err


def test_usage_errors_exit_2(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "--config", str(config), "--", "python", "x.py"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_offline_commands_import_neither_aws_cdk_nor_boto3(config: Path) -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from cdk_neuron.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['plan', '--config', {str(config)!r}, '--json']) == 0\n"
        f"    assert main(['cost', '--config', {str(config)!r}, '--json']) == 0\n"
        "print(sorted(m for m in ('aws_cdk', 'boto3', 'botocore', 'jsii') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------
# cost
# --------------------------------------------------------------------------------------------


def line(section: dict[str, Any], item: str) -> dict[str, Any]:
    return next(x for x in section["lines"] if x["item"] == item)


def test_cost_json_shape(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "cost", "--config", str(config))
    assert code == 0
    assert set(doc) == {
        "command", "schema_version", "prices_date", "prices_note", "refresh", "hours_per_month", "summary",
        "environments",
    }  # fmt: skip
    assert doc["prices_date"] == catalog.PRICES_DATE
    assert "refresh" in doc["refresh"]
    for env in doc["environments"]:
        assert set(env) == {
            "name", "region", "prices_date", "idle", "full_scale", "gpu_comparison", "result_costs", "omitted",
            "assumptions", "claims",
        }  # fmt: skip
        for section in (env["idle"], env["full_scale"]):
            assert set(section) == {
                "lines", "usd_per_hour", "usd_per_month", "complete", "usd_per_hour_excluding_stored_data",
            }  # fmt: skip
            stored = sum(x["usd_per_hour"] for x in section["lines"] if x["stored_data"])
            assert section["usd_per_hour_excluding_stored_data"] == pytest.approx(
                section["usd_per_hour"] - stored, abs=1e-3
            )
            assert section["complete"] is True
            assert section["usd_per_hour"] == pytest.approx(
                sum(x["usd_per_hour"] for x in section["lines"]), abs=1e-3
            )
            assert section["usd_per_month"] == pytest.approx(section["usd_per_hour"] * 730, rel=1e-4)
            for item in section["lines"]:
                assert set(item) == {
                    "item",
                    "quantity",
                    "usd_per_hour",
                    "usd_per_month",
                    "basis",
                    "stored_data",
                    "price_region",
                    "other_region",
                }
        assert set(env["gpu_comparison"]) == {"training", "serving"}
        for claim in env["claims"]:
            assert set(claim) == {"claim", "source", "status"}


def test_cost_idle_and_full_scale_arithmetic(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, "cost", "--config", str(config))
    trn = catalog.ON_DEMAND_PRICES["trn1.32xlarge"].usd_per_hour
    dev, prod = env_doc(doc, "dev"), env_doc(doc, "prod")

    # dev: on-demand training scales to zero; ec2 fleet of inf2.xlarge, min 1, max 3; ALB; no NAT.
    assert line(dev["idle"], "training nodes")["usd_per_hour"] == 0
    inf2 = catalog.ON_DEMAND_PRICES["inf2.xlarge"].usd_per_hour
    assert line(dev["idle"], "serving instances (minimum)")["usd_per_hour"] == pytest.approx(inf2)
    assert line(dev["full_scale"], "training nodes (max_nodes)")["usd_per_hour"] == pytest.approx(4 * trn)
    assert line(dev["full_scale"], "serving instances (max_capacity)")["usd_per_hour"] == pytest.approx(
        3 * inf2
    )
    assert line(dev["idle"], "application load balancer")["usd_per_hour"] == pytest.approx(0.0225)
    assert line(dev["idle"], "NAT gateways")["usd_per_hour"] == 0
    assert line(dev["idle"], "public IPv4 addresses")["usd_per_hour"] == 0
    # Without NAT the nodes need 13 endpoints: the 10 every node uses (ECR, ECS, logs, metrics,
    # SSM), EC2 for the training nodes' DescribeInstanceTopology at boot, plus autoscaling and
    # cloudformation for the EC2 fleet's lifecycle hook and signal.
    endpoints = line(dev["idle"], "interface VPC endpoints")
    assert endpoints["quantity"] == "13 x 2 AZ"
    assert endpoints["usd_per_hour"] == pytest.approx(13 * 2 * 0.01)
    assert line(dev["idle"], "KMS keys")["usd_per_month"] == pytest.approx(6 * 1.0)
    alarms = line(dev["idle"], "CloudWatch alarms and dashboard")
    assert alarms["quantity"] == "14 alarms, 1 dashboard"  # min_capacity 1: no scale-from-zero alarm
    assert alarms["usd_per_month"] == pytest.approx(14 * 0.10 + 3.0)
    efs = line(dev["idle"], "EFS checkpoints")
    assert efs["usd_per_month"] == pytest.approx(80 * cost.KEPT_CHECKPOINTS * 0.30)
    assert "One Zone priced at the Standard rate" in efs["basis"]

    # prod: a reservation bills max_nodes even idle; SageMaker prices; two NATs; no ALB.
    reserved = line(prod["idle"], "training capacity reservation")
    assert reserved["usd_per_hour"] == pytest.approx(16 * trn)
    assert "used or not" in reserved["basis"]
    ml = catalog.SAGEMAKER_PRICES["ml.inf2.48xlarge"].usd_per_hour
    assert line(prod["idle"], "serving instances (minimum)")["usd_per_hour"] == pytest.approx(2 * ml)
    assert line(prod["full_scale"], "serving instances (max_capacity)")["quantity"] == "8 x ml.inf2.48xlarge"
    assert line(prod["idle"], "NAT gateways")["usd_per_hour"] == pytest.approx(2 * 0.045)
    assert line(prod["idle"], "public IPv4 addresses")["usd_per_hour"] == pytest.approx(2 * 0.005)
    assert not any(x["item"] == "application load balancer" for x in prod["idle"]["lines"])
    # SageMaker: no fleet nodes, so no autoscaling/cloudformation endpoints; sagemaker.runtime instead
    # (and EC2 for the training nodes' topology).
    assert line(prod["idle"], "interface VPC endpoints")["quantity"] == "12 x 2 AZ"
    assert line(prod["idle"], "CloudWatch alarms and dashboard")["quantity"] == "8 alarms, 1 dashboard"


def test_cost_of_a_nat_instance_without_endpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = environment(network={"nat_gateways": 1, "nat_instance_type": "t4g.nano", "endpoint_azs": "none"})
    _, doc = run_json(capsys, "cost", "--config", str(write_config(tmp_path, dev=env)))
    idle = env_doc(doc, "dev")["idle"]
    nat = line(idle, "NAT instances")
    assert (nat["quantity"], nat["usd_per_hour"]) == ("1 x t4g.nano", pytest.approx(0.0042))
    assert line(idle, "public IPv4 addresses")["usd_per_hour"] == pytest.approx(0.005)
    endpoints = line(idle, "interface VPC endpoints")
    assert (endpoints["quantity"], endpoints["usd_per_hour"]) == ("none", 0)
    assert any("No interface endpoints" in a for a in env_doc(doc, "dev")["assumptions"])


def test_cost_capacity_block_is_prepaid_and_endpoints_in_training_az(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = environment(
        network={"nat_gateways": 0, "endpoint_azs": "training"},
        training={"capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}},
    )
    # A Capacity Block needs the Auto Scaling group engine (AWS Batch ignores the market type).
    env["training"]["engine"] = "auto-scaling-group"
    del env["training"]["job_image"]
    _, doc = run_json(capsys, "cost", "--config", str(write_config(tmp_path, dev=env)))
    idle = doc["environments"][0]["idle"]
    block = line(idle, "training Capacity Block")
    assert block["usd_per_hour"] == 0 and "paid up front" in block["basis"]
    assert line(idle, "interface VPC endpoints")["quantity"].endswith("x 1 AZ")


def test_cost_gpu_comparison(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, "cost", "--config", str(config))
    prod = env_doc(doc, "prod")["gpu_comparison"]
    rows = {(r["instance_type"], r["basis"]): r for r in prod["training"]}
    assert rows[("trn1.32xlarge", "configured cluster")]["accelerator_memory_gib"] == 16 * 512
    p4d_memory = catalog.GPU_INSTANCES["p4d.24xlarge"].total_gpu_memory_gib
    same_memory = rows[("p4d.24xlarge", "same accelerator memory")]
    assert same_memory["nodes"] == math.ceil(16 * 512 / p4d_memory)
    p4d = catalog.ON_DEMAND_PRICES["p4d.24xlarge"].usd_per_hour
    assert same_memory["usd_per_hour"] == pytest.approx(same_memory["nodes"] * p4d, abs=1e-3)
    same_nodes = rows[("p5.48xlarge", "same node count")]
    assert same_nodes["nodes"] == 16
    assert same_nodes["relative_to_neuron"] == pytest.approx(
        16 * catalog.ON_DEMAND_PRICES["p5.48xlarge"].usd_per_hour / (16 * 21.5), abs=1e-3
    )

    serving = {r["family"]: r for r in env_doc(doc, "dev")["gpu_comparison"]["serving"]}
    assert set(serving) == {"inf2", "g5", "g6e"}
    # 3B bf16 (~6.4 GiB with its KV cache) fits one 22 GiB A10G and one 45 GiB L40S with 35 % headroom;
    # the fleet is 3 instances x 1 replica = 3 replicas, one per g6e.xlarge (cheapest per replica).
    assert serving["g5"]["tensor_parallel"] == 1
    assert serving["g6e"]["instance_type"] == "g6e.xlarge" and serving["g6e"]["tensor_parallel"] == 1
    assert serving["g6e"]["instances_for_fleet"] == 3
    # 70B (~131 GiB) fits no g5 instance at all: said so, not invented.
    prod_serving = {r["family"]: r for r in prod["serving"]}
    assert prod_serving["g5"]["instance_type"] is None and prod_serving["g5"]["usd_per_hour"] is None
    assert prod_serving["g6e"]["instance_type"] == "g6e.48xlarge"


def test_cost_labels_claims_and_dates(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, "cost", "--config", str(config))
    claims = env_doc(doc, "dev")["claims"]
    assert any(
        "50%" in c["claim"] and "usage.ai" in c["source"] and "vendor claim" in c["status"] for c in claims
    )
    stale = next(c for c in claims if "34%" in c["claim"])
    assert "stale" in stale["status"] and "2.1%" in stale["status"]
    assert not any("Trn2" in c["claim"] for c in claims)  # a trn1 cluster gets no Trn2 claim
    assert any("equal wall-clock" in a for a in env_doc(doc, "dev")["assumptions"])

    assert main(["cost", "--config", str(config), "--env", "dev", "--details", "--output", "text"]) == 0
    out = capsys.readouterr().out
    assert "CLAIM" in out and "idle (minimum capacity)" in out and "full scale" in out
    assert f"Price table dated {catalog.PRICES_DATE}" in out and "refresh" in out


def _price_item(usd: str, usage_type: str = "x", unit: str = "Hrs", *tiers: tuple[str, str]) -> str:
    """A Price List product; ``tiers`` are extra (beginRange, USD) dimensions in the same unit."""
    dimensions = {"D": {"unit": unit, "beginRange": "0", "pricePerUnit": {"USD": usd}}}
    for i, (begin, price) in enumerate(tiers):
        dimensions[f"T{i}"] = {"unit": unit, "beginRange": begin, "pricePerUnit": {"USD": price}}
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": "x", "usagetype": usage_type}},
            "terms": {"OnDemand": {"T": {"priceDimensions": dimensions}}},
        }
    )


def _pricing_stub() -> tuple[Any, Stubber]:
    pricing = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    return pricing, Stubber(pricing)


def _ec2_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    return [
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
        {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
        {"Type": "TERM_MATCH", "Field": "licenseModel", "Value": "No License required"},
    ]


def _expect_ec2(stubber: Stubber, region: str, types: set[str], priced: dict[str, str]) -> None:
    for instance_type in sorted(types):
        stubber.add_response(
            "get_products",
            {
                "PriceList": [_price_item(priced[instance_type])] if instance_type in priced else [],
                "FormatVersion": "aws_v1",
            },
            {"ServiceCode": "AmazonEC2", "Filters": _ec2_filters(instance_type, region), "MaxResults": 10},
        )


def test_cost_live_prices_use_the_price_list_api(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Price List API is not in moto: botocore's Stubber answers GetProducts."""
    pricing, stubber = _pricing_stub()
    dev = deployment(load_cdk_json(config)["dev"])
    _expect_ec2(stubber, "us-east-1", cost.ec2_types(dev), {"trn1.32xlarge": "30.0"})
    # The services dev uses (no NAT): the API answers none of them, so the table's prices stay.
    assert cost.service_keys(dev) == {
        "alarm_month", "dashboard_month", "efs_one_zone_gb_month", "efs_standard_gb_month",
        "interface_endpoint_az_hour", "kms_key_month", "s3_standard_gb_month", "alb_hour",
    }  # fmt: skip
    for _ in cost.service_keys(dev):
        stubber.add_response("get_products", {"PriceList": [], "FormatVersion": "aws_v1"})
    with stubber:
        code = main(
            ["cost", "--config", str(config), "--env", "dev", "--live-prices", "--json"],
            clients=lambda service, region: pricing,
        )
    stubber.assert_no_pending_responses()
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    env = out["environments"][0]
    assert env["prices_date"] == date.today().isoformat() and out["summary"][0]["prices"] == "live"
    training = line(env["full_scale"], "training nodes (max_nodes)")
    assert training["usd_per_hour"] == pytest.approx(4 * 30.0)
    assert "AWS Price List API" in training["basis"]
    # Types the API did not price keep the dated table's price.
    assert "KARP" in line(env["full_scale"], "serving instances (max_capacity)")["basis"]
    assert "SVC-ALB" in line(env["full_scale"], "application load balancer")["basis"]


def _service_filters(region: str, usage_type: str, family: str | None = None) -> list[dict[str, str]]:
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    if family:
        filters.append({"Type": "TERM_MATCH", "Field": "productFamily", "Value": family})
    return [*filters, {"Type": "CONTAINS", "Field": "usagetype", "Value": usage_type}]


def test_live_prices_cover_every_line_in_the_environments_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SageMaker hosting, NAT, IPv4, endpoints, EFS, S3, KMS and CloudWatch, all priced in us-west-2."""
    region = "us-west-2"
    env = environment(
        region=region,
        az_ids=["usw2-az4", "usw2-az1"],
        network={"nat_gateways": 1, "endpoint_azs": "all"},
        training={"job_image": IMAGE.format(region=region)},
        storage={"one_zone": False},
        serving={"backend": "sagemaker", "instance_type": "inf2.xlarge"},
    )
    path = write_config(tmp_path, staging=env)
    staging = deployment(load_cdk_json(path)["staging"])
    pricing, stubber = _pricing_stub()
    _expect_ec2(stubber, region, cost.ec2_types(staging), {"trn1.32xlarge": "22.0", "inf2.xlarge": "0.80"})
    stubber.add_response(
        "get_products",
        {"PriceList": [_price_item("1.25")], "FormatVersion": "aws_v1"},
        {
            "ServiceCode": "AmazonSageMaker",
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.inf2.xlarge"},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
                {"Type": "TERM_MATCH", "Field": "component", "Value": "Hosting"},
            ],
            "MaxResults": 10,
        },
    )
    # (service code, usage type, product family, products answered), in the order they are asked.
    services = [
        ("AmazonCloudWatch", "CW:AlarmMonitorUsage", None, [_price_item("0.11", "USW2-CW:AlarmMonitorUsage", "Alarms")]),
        ("AmazonCloudWatch", "DashboardsUsageHour", None, []),  # not answered: the table's price stays
        ("AmazonEFS", "TimedStorage-ByteHrs", None, [
            _price_item("0.025", "USW2-IATimedStorage-ByteHrs", "GB-Mo"),  # Infrequent Access: not this one
            _price_item("0.33", "USW2-TimedStorage-ByteHrs", "GB-Mo"),
        ]),
        ("AmazonVPC", "VpcEndpoint-Hours", None, [_price_item("0.011", "USW2-VpcEndpoint-Hours")]),
        ("awskms", "KMS-Keys", None, [_price_item("1.10", "USW2-KMS-Keys", "Keys")]),
        ("AmazonEC2", "NatGateway-Hours", "NAT Gateway", [
            _price_item("0.048", "USW2-NatGateway-Bytes", "GB"),
            _price_item("0.048", "USW2-NatGateway-Hours"),
        ]),
        ("AmazonVPC", "PublicIPv4:InUseAddress", None, [_price_item("0.005", "USW2-PublicIPv4:InUseAddress")]),
        ("AmazonS3", "TimedStorage-ByteHrs", None, [
            _price_item("0.024", "USW2-TimedStorage-ByteHrs", "GB-Mo", ("51200", "0.023")),
        ]),
    ]  # fmt: skip
    for service_code, usage_type, family, products in services:
        stubber.add_response(
            "get_products",
            {"PriceList": products, "FormatVersion": "aws_v1"},
            {
                "ServiceCode": service_code,
                "Filters": _service_filters(region, usage_type, family),
                "MaxResults": 100,
            },
        )
    with stubber:
        code = main(["cost", "--config", str(path), "--live-prices", "--json"], clients=lambda s, r: pricing)
    stubber.assert_no_pending_responses()
    assert code == 0
    env_doc_ = json.loads(capsys.readouterr().out)["environments"][0]
    full = env_doc_["full_scale"]

    def hourly(item: str) -> float:
        return float(line(full, item)["usd_per_hour"])

    assert hourly("serving instances (max_capacity)") == pytest.approx(3 * 1.25)  # SageMaker, live
    assert hourly("NAT gateways") == pytest.approx(0.048)
    # 10 for every node, EC2 for the training nodes' topology, sagemaker.runtime for serving.
    assert hourly("interface VPC endpoints") == pytest.approx(12 * 2 * 0.011)
    assert line(full, "KMS keys")["usd_per_month"] == pytest.approx(6 * 1.10)
    assert line(full, "S3 compile cache")["usd_per_month"] == pytest.approx(50 * 0.024)  # the first tier
    assert line(full, "EFS checkpoints")["usd_per_month"] == pytest.approx(80 * 2 * 0.33)
    alarms = line(full, "CloudWatch alarms and dashboard")
    assert alarms["usd_per_month"] == pytest.approx(8 * 0.11 + 3.0)
    # Only the dashboard price came from the table: that line says it is a us-east-1 price.
    assert [x["item"] for x in full["lines"] if x["other_region"]] == ["CloudWatch alarms and dashboard"]
    assert alarms["basis"].startswith(f"us-east-1 price applied to {region}; ")
    for item in ("serving instances (max_capacity)", "NAT gateways", "EFS checkpoints"):
        assert (
            "AWS Price List API" in line(full, item)["basis"] and line(full, item)["price_region"] == region
        )


@pytest.mark.parametrize(
    ("region", "az_ids", "instances_elsewhere"),
    [
        ("us-west-2", ["usw2-az4", "usw2-az1"], False),  # same Neuron prices as us-east-1 (SKY catalog)
        ("ap-southeast-2", ["apse2-az1", "apse2-az3"], True),  # trn1 and inf2 offered, priced differently
    ],
)
def test_lines_priced_at_us_east_1_for_another_region_say_so(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    region: str,
    az_ids: list[str],
    instances_elsewhere: bool,
) -> None:
    env = environment(
        region=region,
        az_ids=az_ids,
        network={"nat_gateways": 1},
        training={"job_image": IMAGE.format(region=region)},
        serving={"instance_type": None},
    )
    env["serving"]["model"] = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "parameters": 8_000_000_000}
    code, doc = run_json(capsys, "cost", "--config", str(write_config(tmp_path, dev=env)))
    assert code == 0
    (only,) = doc["environments"]
    flagged = {x["item"] for x in only["full_scale"]["lines"] if x["other_region"]}
    # Every service price in the table is a us-east-1 price: each says so in another region.
    assert {
        "NAT gateways",
        "public IPv4 addresses",
        "interface VPC endpoints",
        "KMS keys",
        "S3 compile cache",
    } <= flagged
    for item in flagged:
        basis = line(only["full_scale"], item)["basis"]
        assert basis.startswith(f"us-east-1 price applied to {region}; "), basis
    assert ("training nodes (max_nodes)" in flagged) is instances_elsewhere
    assert any(f"apply us-east-1 table prices to {region}" in a for a in only["assumptions"])
    (summary,) = doc["summary"]
    assert summary["other_region_lines"] and summary["prices"] == "table"


def test_us_east_1_lines_are_not_flagged(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, "cost", "--config", str(config))
    for env in doc["environments"]:
        assert not [x["item"] for x in env["full_scale"]["lines"] if x["other_region"]]
        assert all(x["price_region"] in (None, "us-east-1") for x in env["idle"]["lines"])


def test_plan_and_cost_print_the_cost_of_a_result_with_its_label_and_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The shipped cdk.json: prod trains Llama 3.1 70B on 16 trn1.32xlarge (TP 32, PP 8). The published
    # figure is for 32 nodes (65,044.48 tokens/s): scaled to 16 it is 32,522.24, labelled estimated;
    # 1e12 tokens take 8,541.19 h at 16 x $21.50/h = $2,938,160.33. The GPU beside it: 64 H100 at
    # 1,602 tokens/s each on 8 p5.48xlarge, $1,192,953.25 (published).
    shipped = str(REPO_ROOT / "cdk.json")
    code, doc = run_json(capsys, "plan", "--config", shipped, "--env", "prod")
    assert code == 0
    costs = env_doc(doc, "prod")["result_costs"]
    assert costs["training_tokens"] == 1e12
    training = costs["training"]
    assert (training["label"], training["usd"], training["tokens_per_second"]) == (
        "estimated", 2_938_160.33, 32_522.24,
    )  # fmt: skip
    assert training["throughput_source"] == "NEURON-TRAIN-PERF"
    assert training["throughput_basis"].startswith("scaled linearly from 32 to 16 nodes")
    assert (costs["training_gpu"]["label"], costs["training_gpu"]["usd"]) == ("published", 1_192_953.25)
    # Serving Llama 3 70B bf16 at TP 24, batch 4: optimum-neuron's chart (OPTN-BENCH) gives 75 tokens/s,
    # 1e6 / 75 / 3,600 = 3.7037 h x $12.98127 = $48.08; no GPU figure is published at batch 4.
    assert (costs["serving"]["label"], costs["serving"]["usd"]) == ("published", 48.08)
    assert costs["serving"]["throughput_source"] == "OPTN-BENCH"
    assert costs["serving_gpu"] is None
    memory = env_doc(doc, "prod")["training"]["memory"]
    # 0.513351 + 1.026702 + 1.540053 + 3.559814 (c = 22 with CoreAttention and LlamaMLP recomputed and a
    # KV head per rank at TP 32) = 6.639920 GiB, of half the 16 GiB (the limit calibrated on NxDT's configs).
    assert (memory["total_gib"], memory["usable_gib"], memory["label"]) == (6.64, 8.0, "estimated")
    assert (memory["activation_checkpointing"], memory["recompute"]) == (
        "selective",
        ["CoreAttention", "LlamaMLP"],
    )

    # A measurement replaces the figures and is labelled measured; --tokens sets the run.
    code, doc = run_json(
        capsys, "cost", "--config", shipped, "--env", "prod", "--tokens", "2e11", "--tokens-per-second", "40000",
        "--serving-tokens-per-second", "100",
    )  # fmt: skip
    assert code == 0
    costs = env_doc(doc, "prod")["result_costs"]
    # 2e11 / 40,000 / 3,600 = 1,388.89 h x $344/h = $477,777.78; 1e6 / 100 / 3,600 = 2.78 h x $12.98127.
    assert (costs["training"]["label"], costs["training"]["usd"]) == ("measured", 477_777.78)
    assert costs["training"]["throughput_basis"] == "given with --tokens-per-second"
    assert (costs["serving"]["label"], costs["serving"]["usd"]) == ("measured", 36.06)
    assert main(["plan", "--config", shipped, "--tokens-per-second", "0"]) == 2
    assert "--tokens-per-second=0.0: must be greater than 0" in capsys.readouterr().err
    assert main(["cost", "--config", shipped, "--tokens", "-1"]) == 2
    assert "--tokens=-1.0: must be greater than 0" in capsys.readouterr().err


def test_the_cost_of_a_result_is_printed_beside_the_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = str(REPO_ROOT / "cdk.json")
    assert main(["cost", "--config", shipped]) == 0
    out = capsys.readouterr().out
    assert "cost of a result (on-demand; training run = 1e+12 tokens; label in brackets)" in out
    assert "$2,938,160 (estimated)" in out and "$1,192,953 (published)" in out
    assert main(["plan", "--config", shipped, "--env", "prod"]) == 0
    out = capsys.readouterr().out
    assert "prod: cost of a result (on-demand prices)" in out
    assert "GPU, same model size" in out
    assert "HBM per NeuronCore" in out and "6.64 of 8.00 GiB usable (16 GiB HBM; estimated)" in out
    assert "checkpointing selective (recompute CoreAttention," in out
