"""``cost`` for a HyperPod cluster: the standing line names the controller, HyperPod's own rates come
from the Price List with ``--live-prices`` (Stubber), and EC2's rate is never used for its nodes."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import boto3
from botocore.stub import Stubber

from cdk_neuron import planner
from cdk_neuron.cli.cost import full_scale, hyperpod_types, idle
from cdk_neuron.cli.pricing import PriceBook, live_price_book
from cdk_neuron.deployment import Deployment, HyperPodLocation, TrainingDeployment
from cdk_neuron.training.capacity import Capacity

REGION = "us-west-2"


def hyperpod_env(workers: int = 2, capacity: Capacity | None = None) -> Deployment:
    return Deployment(
        name="dev",
        region=REGION,
        az_ids=("usw2-az4",),
        training=TrainingDeployment(
            instance_type="trn1.32xlarge",
            max_nodes=4,
            plan=planner.plan_training("trn1.32xlarge", 2, 32),
            engine="hyperpod",
            worker_count=workers,
            capacity=capacity or Capacity.on_demand(),
            hyperpod=HyperPodLocation(stack_name="dev-Training"),
        ),
    )


def item(lines: list[Any], name: str) -> Any:
    (found,) = [line for line in lines if line.item == name]
    return found


def product(usd: str, **attributes: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": attributes},
            "terms": {
                "OnDemand": {"T": {"priceDimensions": {"D": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}
            },
        }
    )


def live(answers: dict[str, list[str]]) -> PriceBook:
    pricing = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(pricing)
    for name in sorted(answers):
        stub.add_response(
            "get_products",
            {"PriceList": answers[name], "FormatVersion": "aws_v1"},
            {
                "ServiceCode": "AmazonSageMaker",
                "Filters": [
                    {"Type": "TERM_MATCH", "Field": "instanceName", "Value": name},
                    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
                ],
                "MaxResults": 100,
            },
        )
    with stub:
        book = live_price_book(pricing, REGION, (), hyperpod_types=hyperpod_types(hyperpod_env()))
    stub.assert_no_pending_responses()
    return book


def test_offline_the_standing_line_names_the_controller_and_asks_for_live_prices() -> None:
    env = hyperpod_env(workers=0)
    standing = item(idle(env, PriceBook()), "HyperPod cluster (standing)")
    assert standing.quantity == "1 x ml.m5.xlarge (controller) + 0 x ml.trn1.32xlarge, always on"
    assert standing.usd_per_hour is None and "run with --live-prices" in standing.basis
    nodes = item(full_scale(env, PriceBook()), "training nodes (max_nodes)")
    # Never EC2's trn1 rate: HyperPod sells the instance at its own.
    assert nodes.usd_per_hour is None and "HyperPod's rates are not EC2's" in nodes.basis


def test_live_prices_take_the_products_that_name_a_cluster_and_say_which() -> None:
    book = live(
        {
            "ml.m5.xlarge": [
                product("0.23", component="Hosting", usagetype="USW2-Host:ml.m5.xlarge"),
                product("0.28", component="Cluster", usagetype="USW2-Cluster:ml.m5.xlarge"),
            ],
            "ml.trn1.32xlarge": [
                product("21.5", component="studio-jupyterlab", usagetype="USW2-Studio:ml.trn1.32xlarge"),
                product("25.0", component="Hosting", usagetype="USW2-Host:ml.trn1.32xlarge"),
                product("26.5", component="HyperPod", usagetype="USW2-HyperPod:ml.trn1.32xlarge"),
            ],
        }
    )
    env = hyperpod_env(workers=2)
    standing = item(idle(env, book), "HyperPod cluster (standing)")
    assert standing.usd_per_hour == 0.28 + 2 * 26.5
    assert (
        "usage type USW2-Cluster:ml.m5.xlarge" in standing.basis
        and "USW2-HyperPod:ml.trn1.32xlarge" in standing.basis
    )
    assert item(full_scale(env, book), "training nodes (max_nodes)").usd_per_hour == 4 * 26.5


def test_a_type_the_price_list_does_not_sell_in_a_cluster_stays_unpriced_and_says_so() -> None:
    book = live(
        {
            "ml.m5.xlarge": [product("0.28", component="Cluster", usagetype="USW2-Cluster:ml.m5.xlarge")],
            "ml.trn1.32xlarge": [
                product("25.0", component="Hosting", usagetype="USW2-Host:ml.trn1.32xlarge")
            ],
        }
    )
    standing = item(idle(hyperpod_env(workers=2), book), "HyperPod cluster (standing)")
    assert standing.usd_per_hour is None
    assert "the Price List API gave no HyperPod price for ml.trn1.32xlarge" in standing.basis
    # With no worker running, the controller alone is the standing cost.
    alone = item(idle(hyperpod_env(workers=0), book), "HyperPod cluster (standing)")
    assert alone.usd_per_hour == 0.28


def test_training_plan_workers_are_prepaid_and_only_the_controller_bills_by_the_hour() -> None:
    plan = Capacity.training_plan("arn:aws:sagemaker:us-west-2:111111111111:training-plan/trn1-week")
    book = replace(PriceBook(), live_hyperpod={"ml.m5.xlarge": live_controller()})
    env = hyperpod_env(workers=4, capacity=plan)
    standing = item(idle(env, book), "HyperPod cluster (standing)")
    assert standing.usd_per_hour == 0.28 and "fee is paid up front" in standing.basis
    nodes = item(full_scale(env, book), "training nodes (max_nodes)")
    assert nodes.usd_per_hour == 0.0 and nodes.basis.startswith("prepaid")


def live_controller() -> Any:
    from cdk_neuron.catalog import Price

    return Price(0.28, REGION, "AWS Price List API", "retrieved today; usage type USW2-Cluster:ml.m5.xlarge")


def test_only_hyperpod_environments_ask_for_hyperpod_prices() -> None:
    env = hyperpod_env()
    assert hyperpod_types(env) == {"ml.trn1.32xlarge", "ml.m5.xlarge"}
    assert env.training is not None
    assert hyperpod_types(replace(env, training=replace(env.training, engine="batch"))) == set()


def test_the_gpu_comparison_says_it_compares_ec2_rates_for_a_hyperpod_cluster() -> None:
    from cdk_neuron.cli.cost import training_comparison

    rows = training_comparison(hyperpod_env(), PriceBook())
    assert rows[0].basis == "configured cluster (EC2 rates; HyperPod bills its own)"
