"""A Trn3 Gen1 cluster on UltraServer capacity: synthesized, cdk-nag, cfn-lint and the deploy rules.

UltraServer Capacity Blocks reach their instances through the launch template's market type, which
AWS Batch ignores (BATCH-LT), so the cluster is the Auto Scaling group engine's; a Batch cluster on
that capacity is refused (issue 22, defect 4).

The catalog records the Trn3 server's network facts as unknown (no source publishes them, looked
2026-12-01), so the cluster refuses the bare catalog entry; the test completes it with
``with_facts`` the way a user would from ``aws ec2 describe-instance-types`` in their account. The
numbers given here are the test's inputs, not catalog facts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2
from deploy_rules_gate import check_gate, gate_params
from test_training_support import PUBLIC_IMAGE, PinnedStack, Scenario, build, first_zone

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import FABRIC_ULTRASERVER, plan_training
from cdk_neuron.training import AutoScalingTrainingCluster, BatchTrainingCluster, Capacity

GROUP = "arn:aws:resource-groups:us-east-2:111111111111:group/trn3-ultraservers"
TRN3 = get_instance("trn3.48xlarge").with_facts(
    source="test input standing for the account's describe-instance-types answer",
    network_cards=16,
    max_interfaces_per_card=2,
    efa_interfaces=16,
    nvme_gb=0,
)


def _plan() -> Any:
    # Two Trn3 Gen1 UltraServers (8 servers); TP 256 = one UltraServer at LNC=2.
    return plan_training(TRN3, 8, 256, logical_nc_config=2, ultraserver_capacity=True, allow_unlisted_tp=True)


@pytest.fixture(scope="module")
def trn3() -> Scenario:
    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> AutoScalingTrainingCluster:
        return AutoScalingTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type=TRN3,
            max_nodes=8,
            plan=_plan(),
            vpc_subnets=first_zone(stack),
            capacity=Capacity.ultraserver_capacity_block(resource_group_arn=GROUP),
        )

    return build("us-east-2", make)


def _settings(s: Scenario, name: str) -> dict[str, str]:
    from cdk_support import flatten_user_data, parse_settings, settings_in

    text = flatten_user_data(s.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
    return parse_settings(settings_in(text)[name])


def test_plan_keeps_tp_inside_each_ultraserver() -> None:
    plan = _plan()
    assert plan.fabrics["tensor"] == FABRIC_ULTRASERVER
    assert (plan.domain_group_instances, plan.neuronlink_domain_instances) == (4, 4)


def test_launch_template_targets_the_ultraserver_capacity_block_group(trn3: Scenario) -> None:
    data = trn3.one("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceType"] == "trn3.48xlarge"
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP}
    }
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert len(data["NetworkInterfaces"]) == 16
    # cfn-lint's instance types come from the EC2 API model, which lists no Trn3 type yet (EC2-MODEL):
    # the template says so for that one check, on that one resource.
    (template,) = trn3.resources("AWS::EC2::LaunchTemplate").values()
    assert template["Metadata"]["cfn-lint"] == {"config": {"ignore_checks": ["E3628"]}}
    # AWS places UltraServer Capacity Block instances itself: no placement group.
    assert not trn3.resources("AWS::EC2::PlacementGroup")
    assert trn3.cluster.placement_group is None


def test_nodes_order_ranks_by_ultraserver(trn3: Scenario) -> None:
    # The hosts' profile carries what the launcher reads (docs/neuronlink.md, self-managed node group).
    profile = _settings(trn3, "training-profile.env")
    assert profile["CDK_NEURON_RANK_ORDER"] == "topology"
    assert profile["CDK_NEURON_DOMAIN_GROUP_INSTANCES"] == "4"
    assert profile["CDK_NEURON_ULTRASERVER"] == "1"
    assert profile["NEURON_LOGICAL_NC_CONFIG"] == "2"
    assert profile["NPROC_PER_NODE"] == "64"


def test_nodes_wait_for_their_capacity_block_id(trn3: Scenario) -> None:
    settings = _settings(trn3, "training.env")
    assert settings["ULTRASERVER"] == "1"
    assert settings["TOPOLOGY_FILE"] == "/var/lib/cdk-neuron/topology.json"


def test_cdk_nag_is_clean(trn3: Scenario) -> None:
    assert trn3.nag() == []


def test_cfn_lint_is_clean(trn3: Scenario, tmp_path: Path) -> None:
    from cfnlint.api import lint_file
    from cfnlint.config import ManualArgs

    path = tmp_path / "trn3.template.json"
    path.write_text(json.dumps(trn3.json))
    found = [str(m) for m in lint_file(path, config=ManualArgs(regions=["us-east-2"]))]
    # The test stack pins AZ names on purpose (PinnedStack acknowledges W3010 for the same reason), and
    # CDK's own custom-resource provider (the test VPC's default-group restriction) trips W3005, which
    # the app skips on those handlers (test_app_stage); neither is the cluster's.
    assert [
        f for f in found if not f.startswith("[W3010:") and not (f.startswith("[W3005:") and "('Custom" in f)
    ] == []


@pytest.mark.parametrize(("name", "rule"), gate_params("training_cluster:trn3"))
def test_deploy_rules(trn3: Scenario, name: str, rule: str | None) -> None:
    check_gate(name, trn3.json, rule, region="us-east-2")


# -- refusals -----------------------------------------------------------------------------------


def _refused(match: str, **props: Any) -> None:
    def make(stack: PinnedStack, vpc: ec2.Vpc, extras: dict[str, Any]) -> BatchTrainingCluster:
        settings: dict[str, Any] = {
            "vpc": vpc,
            "instance_type": TRN3,
            "max_nodes": 8,
            "plan": _plan(),
            "vpc_subnets": first_zone(stack),
            "capacity": Capacity.ultraserver_capacity_block("cr-0123456789abcdef0"),
            "job_image": PUBLIC_IMAGE,
            **props,
        }
        return BatchTrainingCluster(stack, "Cluster", **settings)

    with pytest.raises(NeuronConfigError, match=match):
        build("us-east-2", make)


@pytest.mark.parametrize(
    "capacity",
    [
        Capacity.ultraserver_capacity_block(resource_group_arn=GROUP),
        Capacity.ultraserver_capacity_block("cr-0123456789abcdef0"),
    ],
    ids=["group", "block"],
)
def test_a_batch_cluster_on_ultraserver_capacity_blocks_is_refused_naming_the_group_engine(
    capacity: Capacity,
) -> None:
    # AWS Batch ignores the launch template's InstanceMarketOptions (BATCH-LT): the block is unusable.
    _refused(
        r"^Training/Cluster: capacity='ultraserver-capacity-block .*': AWS Batch ignores a launch template's "
        r"instance market options .* Use AutoScalingTrainingCluster",
        capacity=capacity,
    )


def test_the_bare_catalog_entry_is_refused_for_what_it_does_not_know() -> None:
    _refused(
        r"instance_type='trn3\.48xlarge': a cluster needs network_cards, .* no source publishes",
        instance_type="trn3.48xlarge",
    )


def test_a_spanning_plan_on_capacity_that_cannot_guarantee_it_is_refused() -> None:
    _refused(
        r"^Training/Cluster: capacity='on-demand': the plan .* only UltraServer capacity guarantees",
        capacity=Capacity.on_demand(),
    )


def test_an_instance_capacity_block_of_a_trn3_server_is_refused() -> None:
    _refused(
        r"trn3\.48xlarge is sold in UltraServers: use Capacity\.ultraserver_capacity_block",
        capacity=Capacity.capacity_block("cr-0123456789abcdef0"),
    )


def test_ultraserver_capacity_blocks_only_for_ultraserver_servers() -> None:
    with pytest.raises(NeuronConfigError, match=r"trn1\.32xlarge is not sold as UltraServer Capacity Blocks"):
        Capacity.ultraserver_capacity_block("cr-0123456789abcdef0").check_instance(
            get_instance("trn1.32xlarge")
        )
    with pytest.raises(NeuronConfigError, match=r"reservation id or a resource group ARN, not both"):
        Capacity.ultraserver_capacity_block("cr-0123456789abcdef0", resource_group_arn=GROUP)
    with pytest.raises(NeuronConfigError, match=r"reservation id or a resource group ARN, not both"):
        Capacity.ultraserver_capacity_block()
    block = Capacity.ultraserver_capacity_block("cr-0123456789abcdef0")
    assert block.launch_template_data() == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
        },
        "InstanceMarketOptions": {"MarketType": "capacity-block"},
    }
    assert block.guarantees_ultraserver(get_instance("trn2u.48xlarge"))
    assert not block.guarantees_ultraserver(get_instance("trn2.48xlarge"))
    assert Capacity.capacity_block("cr-0123456789abcdef0").guarantees_ultraserver(
        get_instance("trn2u.48xlarge")
    )
    assert block.purchase_option(TRN3) == "UltraServer Capacity Block"
