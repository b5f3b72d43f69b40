"""The compile tax (cdk_neuron.compilation.tax): time, cost and break-even of compiling a new shape,
and ``cost --check-artifacts``, which asks S3 (moto) whether the shape is compiled already."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from test_artifact_manifest import manifest_data

from cdk_neuron import catalog
from cdk_neuron.cli.artifact_cache import look_up
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_neuron.compilation.job import compile_task_usd_per_hour
from cdk_neuron.compilation.tax import (
    LARGE_MODEL_PARAMETERS,
    compile_tax,
    compile_time,
)
from cdk_neuron.deployment import Deployment
from cdk_neuron.serving import ModelSpec
from cdk_support import REPO_ROOT
from stacks.config import deployments

FARGATE_HOUR = 16 * 0.04048 + 120 * 0.004445 + (200 - 20) * 0.000111  # 1.20106 $/h


def test_the_fargate_prices_are_the_published_us_east_1_rates() -> None:
    got = {k: (p.usd_per_hour, p.region, p.source) for k, p in catalog.FARGATE_PRICES.items()}
    assert got == {
        "vcpu_hour": (0.04048, "us-east-1", "SVC-FARGATE"),
        "gb_hour": (0.004445, "us-east-1", "SVC-FARGATE"),
        "ephemeral_gb_hour": (0.000111, "us-east-1", "SVC-FARGATE"),
    }
    assert catalog.FARGATE_INCLUDED_EPHEMERAL_GB == 20
    assert "https://aws.amazon.com/fargate/pricing/" in catalog.SOURCES["SVC-FARGATE"].citation
    assert catalog.SOURCES["SVC-FARGATE"].date == "2026-03-10"


def test_the_compile_task_costs_its_vcpus_memory_and_the_storage_above_20_gb() -> None:
    assert compile_task_usd_per_hour() == pytest.approx(FARGATE_HOUR)
    assert round(FARGATE_HOUR, 4) == 1.2011


@pytest.mark.parametrize(
    ("parameters", "minutes", "low", "high"),
    [
        (1e9, 25, 3, None),
        (LARGE_MODEL_PARAMETERS - 1, 25, 3, None),
        (LARGE_MODEL_PARAMETERS, 60, 25, None),
        (70e9, 60, 25, None),
    ],
)
def test_compile_time_is_the_tax_below_20b_and_an_hour_from_there(
    parameters: float, minutes: float, low: float, high: float | None
) -> None:
    time = compile_time(parameters)
    assert (time.minutes, time.low_minutes, time.high_minutes, time.label) == (
        minutes,
        low,
        high,
        "estimated",
    )
    assert time.sources and all("(" in s for s in time.sources)


def test_a_measured_compile_replaces_the_estimate() -> None:
    time = compile_time(8e9, measured_seconds=1512.5)
    assert (time.minutes, time.label) == (pytest.approx(25.2083, abs=1e-3), "measured")
    assert "compile_seconds" in time.basis


def _plan(parameters: float, instance: str, tp: int | None = None) -> Any:
    return ModelSpec(model_id="org/m", parameters=int(parameters), tensor_parallel=tp).plan(instance)


def test_a_3b_model_on_inf2_xlarge_compiles_on_fargate_and_cannot_compile_on_its_instance() -> None:
    tax = compile_tax(_plan(3.21e9, "inf2.xlarge", 2), parameters=3.21e9, region="us-east-1")
    assert tax.on_fargate and tax.where.startswith("Fargate (16 vCPU, 120 GiB)")
    assert tax.usd == pytest.approx(25 / 60 * FARGATE_HOUR)
    assert tax.per_start_usd == pytest.approx(25 / 60 * 0.7582)
    assert tax.break_even_starts == pytest.approx(FARGATE_HOUR / 0.7582)
    assert tax.formula == "N = compile $/h / instance $/h = 1.2011 / 0.7582 = 1.58 (the 25 min cancel)"
    # 6 GiB of weights: an export holds ~18 GiB, inf2.xlarge has 16 GiB of host memory.
    assert not tax.instance_can_compile
    assert tax.advice.startswith("precompile: inf2.xlarge cannot compile it at start-up")
    assert "it has 16 GiB" in tax.advice


def test_a_small_model_its_instance_can_compile_pays_from_the_second_start() -> None:
    tax = compile_tax(_plan(1.24e9, "inf2.xlarge", 2), parameters=1.24e9, region="us-east-1")
    assert tax.instance_can_compile
    assert tax.break_even_starts == pytest.approx(1.584, abs=1e-3)
    assert tax.advice.startswith("precompiling pays from the 2nd instance start")
    assert "no artifact_uri" in tax.advice and "25 min" in tax.advice


def test_on_a_dearer_instance_one_start_already_costs_more_than_the_compile() -> None:
    tax = compile_tax(_plan(3.21e9, "inf2.8xlarge", 2), parameters=3.21e9, region="us-east-1")
    assert tax.break_even_starts == pytest.approx(FARGATE_HOUR / 1.96786)
    assert tax.advice.startswith("precompile: it costs no more than one start that compiles on inf2.8xlarge")


def test_a_70b_model_is_compiled_by_hand_on_inf2_48xlarge() -> None:
    tax = compile_tax(_plan(70e9, "inf2.48xlarge", 24), parameters=70e9, region="us-west-2")
    assert not tax.on_fargate
    assert tax.where.startswith("inf2.48xlarge, by hand (130 GiB of weights exceed the Fargate task's 40)")
    assert tax.usd == pytest.approx(12.98127)
    assert tax.break_even_starts == pytest.approx(1.0)


def test_sagemaker_starts_are_priced_at_the_hosting_price_where_one_is_known() -> None:
    plan = _plan(1.24e9, "inf2.xlarge", 2)
    east = compile_tax(plan, parameters=1.24e9, region="us-east-1", sagemaker=True)
    assert (east.instance_type, east.instance_usd_per_hour) == ("ml.inf2.xlarge", 0.99)
    west = compile_tax(plan, parameters=1.24e9, region="us-west-2", sagemaker=True)
    assert (west.break_even_starts, west.per_start_usd) == (None, None)
    assert west.formula == "unknown: no price for ml.inf2.xlarge"
    assert "break-even is unknown" in west.advice


@pytest.mark.parametrize(
    ("n", "word"), [(2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"), (21, "21st")]
)
def test_ordinals(n: int, word: str) -> None:
    from cdk_neuron.compilation.tax import _ordinal

    assert _ordinal(n) == word


# -- plan and cost -----------------------------------------------------------------------------------


def _run(args: list[str], clients: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(args, context=Context(clients=clients, stdout=out, stderr=err))
    return status, out.getvalue(), err.getvalue()


CONFIG = str(REPO_ROOT / "cdk.json")


def test_plan_shows_the_compile_tax_offline_and_says_the_cache_is_unknown() -> None:
    status, out, _ = _run(["plan", "--config", CONFIG, "--env", "dev", "--json"])
    assert status == ExitStatus.OK
    line = json.loads(out)["environments"][0]["result_costs"]["compile"]
    assert (line["minutes"], line["label"], line["usd"], line["compiled"]) == (25.0, "estimated", 0.5, None)
    assert line["cache"].startswith("unknown offline: cdk-neuron cost --check-artifacts")
    assert line["break_even_starts"] == 1.58
    status, text, _ = _run(["plan", "--config", CONFIG, "--env", "dev", "-o", "text"])
    assert "dev: compile tax of a new shape" in text
    assert "cost: $0.50 on Fargate" in text


def test_cost_shows_it_too() -> None:
    status, out, _ = _run(["cost", "--config", CONFIG, "--env", "prod", "--json"])
    assert status == ExitStatus.OK
    line = json.loads(out)["environments"][0]["result_costs"]["compile"]
    # prod compiles its 70B on one trn1.32xlarge of its training cluster: an hour of the node, $21.50;
    # the fleet's inf2.48xlarge ($12.98/h) compiling at start-up instead breaks even at 1.66 starts.
    assert (line["minutes"], line["usd"], line["usd_per_hour"], line["break_even_starts"]) == (
        60.0,
        21.5,
        21.5,
        1.66,
    )
    assert line["where"].startswith(
        "trn1.32xlarge of the training cluster: BatchModelCompilation (its export gets 126 vCPU"
    )
    assert "the whole node" in line["price_basis"]
    # Priced for the compiler's minutes, and says what else the node bills and at most how much.
    assert "the compiler's minutes only" in line["price_basis"] and "up to 1.4 h more" in line["price_basis"]


def test_a_fleet_that_fits_fargate_is_priced_on_the_training_node_only_when_it_compiles_there() -> None:
    from cdk_neuron.compilation.job import HostCompile
    from cdk_neuron.compilation.tax import compile_tax
    from cdk_neuron.serving import ModelSpec

    model = ModelSpec(model_id="m/m", parameters=3_210_000_000, tensor_parallel=2)
    plan = model.plan("inf2.xlarge")
    fargate = compile_tax(plan, parameters=model.parameters, region="us-east-1")
    on_node = compile_tax(
        plan,
        parameters=model.parameters,
        region="us-east-1",
        host=HostCompile.on(catalog.get_instance("trn1.32xlarge")),
    )
    assert fargate.on_fargate and fargate.usd_per_hour is not None and fargate.usd_per_hour < 2
    assert not on_node.on_fargate and on_node.usd_per_hour == 21.5
    assert "exceed" not in on_node.where  # 6 GiB of weights: it runs there because cdk.json says so


# -- is the shape compiled already? (moto) ------------------------------------------------------------

BUCKET = "cdk-neuron-dev-models"
PARENT = "meta-llama/Llama-3.2-3B-Instruct"
CONFIGURED = f"s3://{BUCKET}/{PARENT}/neuron-bs1-seq4096/"


def _dev() -> Deployment:
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return deployments(context)["dev"]


def _put(s3: Any, prefix: str, **replace_: Any) -> None:
    data = manifest_data(artifact_uri=f"s3://{BUCKET}/{prefix}/", **replace_)
    data["model"]["id"] = "meta-llama/Llama-3.2-3B-Instruct"
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/cdk-neuron-artifact.json", Body=json.dumps(data).encode())


@pytest.fixture
def s3() -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_the_configured_artifact_of_the_shape_means_no_compile(s3: Any) -> None:
    _put(s3, f"{PARENT}/neuron-bs1-seq4096")
    status = look_up(s3, _dev().serving, env="dev")  # type: ignore[arg-type]
    assert (status.compiled, status.measured_seconds, status.artifact_uri) == (True, 1512.5, CONFIGURED)
    assert status.text.startswith(f"yes: {CONFIGURED} holds this shape (compiled in 25.2 min)")


def test_an_artifact_of_the_shape_beside_it_is_found_and_named_with_use_artifact(s3: Any) -> None:
    _put(s3, f"{PARENT}/neuron-bs1-seq4096", shape={"batch_size": 4, "sequence_length": 4096,
                                                    "tensor_parallel": 2, "dtype": "bf16"})  # fmt: skip
    _put(s3, f"{PARENT}/run-7-step-1200")
    status = look_up(s3, _dev().serving, env="dev")  # type: ignore[arg-type]
    assert status.compiled is True
    assert f"use-artifact --env dev s3://{BUCKET}/{PARENT}/run-7-step-1200/" in status.text


def test_a_new_shape_needs_a_compile_timed_by_the_models_earlier_compiles(s3: Any) -> None:
    _put(s3, f"{PARENT}/neuron-bs4", shape={"batch_size": 4, "sequence_length": 4096, "tensor_parallel": 2,
                                            "dtype": "bf16"}, compile_seconds=1800.0)  # fmt: skip
    # Another compiler release: optimum-neuron loads it only under that neuronx-cc, so not this fleet's.
    _put(s3, f"{PARENT}/neuron-cc-other", neuron={"sdk": "2.26.1", "compiler": "2.21.18209.0", "target": "trn1"},
         compile_seconds=1200.0)  # fmt: skip
    s3.put_object(Bucket=BUCKET, Key=f"{PARENT}/broken/cdk-neuron-artifact.json", Body=b"{not json")
    status = look_up(s3, _dev().serving, env="dev")  # type: ignore[arg-type]
    assert (status.compiled, status.measured_seconds) == (False, 1800.0)
    assert status.text.startswith(f"no: no artifact of this shape at {CONFIGURED} or beside it")
    assert "(3 other manifest(s) read)" in status.text


def test_without_artifact_uri_the_instances_compile_at_every_start() -> None:
    serving = _dev().serving
    assert serving is not None
    status = look_up(None, replace(serving, model=replace(serving.model, artifact_uri=None)), env="dev")
    assert status.compiled is False and "every instance compiles" in status.text


def test_an_s3_error_leaves_it_unknown_naming_the_error() -> None:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        status = look_up(s3, _dev().serving, env="dev")  # type: ignore[arg-type]
    assert status.compiled is None
    assert status.text.startswith("unknown: S3 answered NoSuchBucket")


def test_cost_check_artifacts_reads_s3_and_uses_the_measured_time(s3: Any) -> None:
    _put(s3, f"{PARENT}/neuron-bs1-seq4096", compile_seconds=900.0)
    status, out, _ = _run(
        ["cost", "--config", CONFIG, "--env", "dev", "--check-artifacts", "--json"],
        clients=lambda service, region: boto3.client(service, region_name=region),
    )
    assert status == ExitStatus.OK
    line = json.loads(out)["environments"][0]["result_costs"]["compile"]
    assert (line["compiled"], line["label"], line["minutes"]) == (True, "measured", 15.0)
    assert line["usd"] == round(15 / 60 * FARGATE_HOUR, 2)
    _, text, _ = _run(
        ["cost", "--config", CONFIG, "--env", "dev", "--check-artifacts", "--details", "-o", "text"],
        clients=lambda service, region: boto3.client(service, region_name=region),
    )
    assert "worth it: nothing to compile now; for a new shape: precompile" in text


def test_cost_diff_refuses_check_artifacts() -> None:
    status, _, err = _run(["cost", "--diff", "a", "b", "--check-artifacts"])
    assert status == ExitStatus.USAGE
    assert "--check-artifacts" in err


# -- a fleet the compile task refuses: plan and cost say so and price nothing -----------------------------


@pytest.mark.parametrize("instance", ["trn3.48xlarge"])
def test_a_fleet_the_compile_task_refuses_is_not_priced(instance: str) -> None:
    from cdk_neuron.compilation.job import export_target_refusal

    if instance not in catalog.INSTANCES:
        pytest.skip(f"{instance} is not in the catalog")
    tax = compile_tax(_plan(8e9, instance), parameters=8e9, region="us-east-1")
    family = instance.split(".")[0]
    assert tax.refused == export_target_refusal(instance) and tax.refused is not None
    assert f"no {family} target" in tax.refused
    assert (tax.usd, tax.usd_per_hour, tax.per_start_usd, tax.break_even_starts) == (None, None, None, None)
    assert not tax.on_fargate and tax.where.startswith("refused")


def test_plan_and_cost_say_refused_as_compile_does() -> None:
    from cdk_neuron.cli.output import Report, render_text
    from cdk_neuron.cli.result_costs import render_compile, result_costs
    from cdk_neuron.compilation import CompileRequest, ModelSource

    dev = deployments(json.loads((REPO_ROOT / "cdk.json").read_text()))["dev"]
    assert dev.serving is not None
    model = ModelSpec(model_id="org/m", parameters=8_000_000_000, tensor_parallel=8)
    trn3 = replace(dev, serving=replace(dev.serving, model=model, plan=model.plan("trn3.48xlarge")))
    line = result_costs(trn3).compile
    assert line is not None and line.refused is not None and line.usd is None
    out = Report()
    render_compile("dev", line, out)
    written = io.StringIO()
    render_text(out, written)
    assert "refused" in written.getvalue() and "$" not in written.getvalue()
    # The same words cdk-neuron compile refuses the request with.
    with pytest.raises(Exception, match="no trn3 target") as raised:
        CompileRequest(
            source=ModelSource.s3("s3://models-bucket/hf/llama/"),
            artifact_uri="s3://models-bucket/compiled/llama/",
            model=model,
            plan=trn3.serving.plan,  # type: ignore[union-attr]
            engine=dev.serving.engine,
        )
    assert line.refused in str(raised.value)


def test_a_trn2_fleet_is_compiled_on_fargate_and_priced() -> None:
    tax = compile_tax(_plan(8e9, "trn2.48xlarge"), parameters=8e9, region="us-east-1")
    assert tax.refused is None and tax.on_fargate and tax.usd is not None and tax.usd > 0
