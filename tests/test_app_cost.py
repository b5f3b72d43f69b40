"""`cdk-neuron cost` prices what the app really creates: its counts are checked against the templates."""

from __future__ import annotations

from collections import Counter

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron.cli import cost
from stacks.config import deployment, load_environments
from stacks.stage import EnvironmentStage

ENVIRONMENTS = load_environments(shipped_environments())


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


def _types(built: SynthesizedApp, env: str) -> Counter[str]:
    return Counter(
        resource["Type"]
        for stack_id in EnvironmentStage.STACK_IDS
        for resource in built.template(env, stack_id)["Resources"].values()
    )


@pytest.mark.parametrize("env", list(ENVIRONMENTS))
def test_cost_counts_match_the_templates(built: SynthesizedApp, env: str) -> None:
    config = ENVIRONMENTS[env]
    described = deployment(config)
    types = _types(built, env)
    assert types["AWS::KMS::Key"] == len(described.standing.kms_keys)
    assert types["AWS::CloudWatch::Alarm"] == described.standing.alarms
    assert types["AWS::CloudWatch::Dashboard"] == described.standing.dashboards
    services, azs = cost.interface_endpoints(described)
    interface = [
        r
        for stack_id in EnvironmentStage.STACK_IDS
        for r in built.template(env, stack_id)["Resources"].values()
        if r["Type"] == "AWS::EC2::VPCEndpoint" and r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert len(interface) == len(services)
    assert all(len(r["Properties"]["SubnetIds"]) == azs for r in interface)
    nat = config.network.nat_gateways
    if config.network.nat_instance_type is None:
        assert (types["AWS::EC2::NatGateway"], types["AWS::EC2::EIP"]) == (nat, nat)
    else:
        assert (types["AWS::EC2::NatGateway"], types["AWS::EC2::Instance"]) == (0, nat)
    assert types["AWS::ElasticLoadBalancingV2::LoadBalancer"] == described.standing.load_balancers


def test_dev_costs_at_most_ten_cents_an_hour_idle_without_stored_data() -> None:
    """Issue 13's budget for dev: idle at most $0.10/h, stored data aside."""
    from cdk_neuron.cli.pricing import PriceBook

    section = cost._total(cost.idle(deployment(ENVIRONMENTS["dev"]), PriceBook()))
    assert section.complete is True
    assert section.usd_per_hour_excluding_stored_data <= 0.10
