"""Training clusters refuse bad configurations with NeuronConfigError, before anything is synthesized."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from test_training_support import PUBLIC_IMAGE, PinnedStack, first_zone, network

from cdk_neuron.catalog import EfaLayout
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.planner import plan_training
from cdk_neuron.storage import CheckpointStore
from cdk_neuron.training import (
    OFFERING_WARNING_ID,
    AutoScalingTrainingCluster,
    BatchTrainingCluster,
    Capacity,
)
from cdk_support import make_app

RESERVATION = "cr-0123456789abcdef0"
_ids = itertools.count()


@dataclasses.dataclass
class Env:
    stack: PinnedStack
    vpc: ec2.Vpc

    def cluster(self, **overrides: Any) -> BatchTrainingCluster:
        props: dict[str, Any] = {
            "vpc": self.vpc,
            "instance_type": "trn1.32xlarge",
            "max_nodes": 2,
            "vpc_subnets": first_zone(self.stack),
            "job_image": PUBLIC_IMAGE,
        }
        props.update(overrides)
        return BatchTrainingCluster(self.stack, f"Cluster{next(_ids)}", **props)

    def group(self, **overrides: Any) -> AutoScalingTrainingCluster:
        props: dict[str, Any] = {
            "vpc": self.vpc,
            "instance_type": "trn1.32xlarge",
            "max_nodes": 2,
            "vpc_subnets": first_zone(self.stack),
        }
        props.update(overrides)
        return AutoScalingTrainingCluster(self.stack, f"Group{next(_ids)}", **props)


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    app = make_app()
    stack = PinnedStack(app, "Refusals", region="us-east-1")
    yield Env(stack=stack, vpc=network(stack))


def _child_count(env: Env) -> int:
    return len(env.stack.node.find_all())


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"instance_type": "inf2.48xlarge"}, "instance_type", "training needs Trainium"),
        ({"instance_type": "p5.48xlarge"}, "instance_type", "not a Neuron instance type"),
        ({"instance_type": "trn1.2xlarge", "max_nodes": 2}, "max_nodes", "has no EFA"),
        ({"max_nodes": 0}, "max_nodes", ">= 1"),
        ({"max_nodes": True}, "max_nodes", ">= 1"),
        ({"instance_type": "trn2.48xlarge", "availability_zone_id": "use1-az4"}, "availability_zone_id", "not offered in use1-az4"),
        ({"availability_zone_id": "us-east-1a"}, "availability_zone_id", "AZ names .us-east-1a. map to different AZs"),
        ({"availability_zone_id": "use2-az3"}, "availability_zone_id", "stack deploys to us-east-1"),
        ({"capacity": Capacity.capacity_block(RESERVATION), "placement_group": True}, "placement_group", "UltraCluster"),
        ({"instance_type": "trn1n.32xlarge", "capacity": Capacity.capacity_block(RESERVATION)}, "capacity", "sells no Capacity Blocks for trn1n"),
        ({"capacity": "on-demand"}, "capacity", "Capacity.on_demand"),
        ({"job_image": None}, "job_image", "a BatchTrainingCluster runs a container"),
        ({"job_image": "public.ecr.aws/neuron/pytorch-training-neuronx:latest"}, "job_image", "pin the image"),
        ({"job_image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx"}, "job_image", "pin the image"),
        ({"retry_attempts": 0}, "retry_attempts", "between 1 and 10"),
        ({"retry_attempts": 11}, "retry_attempts", "between 1 and 10"),
        ({"root_volume_size": cdk.Size.gibibytes(30)}, "root_volume_size", "between 64 and 16384"),
        ({"job_timeout": cdk.Duration.seconds(30)}, "job_timeout", "whole seconds >= 60"),
        ({"update_timeout": cdk.Duration.minutes(0)}, "update_timeout", "between 1 and 7200"),
        ({"update_timeout": cdk.Duration.minutes(7201)}, "update_timeout", "between 1 and 7200"),
        ({"update_timeout": cdk.Duration.seconds(90)}, "update_timeout", "whole number of minutes"),
        ({"terminate_on_update": "yes"}, "terminate_on_update", "True or False"),
        ({"training_command": "  "}, "training_command", "command each node runs"),
        ({"environment": {"AWS_BATCH_JOB_ID": "x"}}, "environment", "AWS_BATCH"),
        ({"placement_group": "yes"}, "placement_group", "True, False or None"),
        ({"efa_layout": "efa"}, "efa_layout", "EfaLayout"),
    ],
)  # fmt: skip
def test_bad_props_are_refused(env: Env, overrides: dict[str, Any], field: str, message: str) -> None:
    before = _child_count(env)
    with pytest.raises(NeuronConfigError, match=message) as raised:
        env.cluster(**overrides)
    assert raised.value.field == field
    # Refused before any resource: only the (empty) cluster node itself was added.
    assert _child_count(env) - before <= 1


def test_an_az_the_snapshot_omits_is_a_warning_naming_the_zones_it_lists(env: Env) -> None:
    """Review-24 finding 5: MOTO lists trn1.32xlarge in other us-east-1 AZs, not use1-az3. It is the only
    AZ-level source, so the cluster is built with a warning that names what it lists, not refused."""
    from cdk_neuron.catalog import offered_az_ids

    cluster = env.cluster(availability_zone_id="use1-az3")
    warnings = [str(entry.data) for entry in cluster.node.metadata if entry.type == "aws:cdk:warning"]
    offered = ", ".join(offered_az_ids("trn1.32xlarge", "us-east-1"))
    assert [w for w in warnings if OFFERING_WARNING_ID in w] == [
        f"whether use1-az3 offers trn1.32xlarge is unknown: the AZ snapshot (MOTO, 2026-08-22) lists trn1.32xlarge in "
        f"{offered} of us-east-1, not in use1-az3; it is the only AZ-level source, so this is unknown rather than "
        f"refused: `cdk-neuron preflight` checks the account [ack: {OFFERING_WARNING_ID}]"
    ]


def test_an_az_in_a_region_both_sources_rule_out_is_refused(env: Env) -> None:
    with pytest.raises(NeuronConfigError) as raised:
        env.cluster(instance_type="trn2.48xlarge", availability_zone_id="use1-az4")
    assert raised.value.fix == (
        "trn2.48xlarge is not offered in use1-az4; it is not offered anywhere in us-east-1 (MOTO and CFN-LINT offerings)"
    )


def test_plan_for_another_instance_is_refused(env: Env) -> None:
    with pytest.raises(NeuronConfigError, match=r"plan is for trn1n\.32xlarge") as raised:
        env.cluster(plan=plan_training("trn1n.32xlarge", 2, 32))
    assert raised.value.field == "plan"


def test_max_nodes_below_plan_nodes_is_refused(env: Env) -> None:
    with pytest.raises(NeuronConfigError, match="plan needs 4 nodes") as raised:
        env.cluster(plan=plan_training("trn1.32xlarge", 4, 32), max_nodes=2)
    assert raised.value.field == "max_nodes"


def test_plan_that_does_not_fit_is_refused_by_the_planner(env: Env) -> None:
    # TP 64 does not fit trn1.32xlarge's 32-core NeuronLink domain: the planner refuses it.
    forged = dataclasses.replace(plan_training("trn1.32xlarge", 2, 32), tensor_parallel=64)
    with pytest.raises(NeuronConfigError, match="NeuronLink domain") as raised:
        env.cluster(plan=forged)
    assert raised.value.field == "tensor_parallel"


def test_hand_edited_plan_is_refused(env: Env) -> None:
    forged = dataclasses.replace(plan_training("trn1.32xlarge", 2, 32), data_parallel=7)
    with pytest.raises(NeuronConfigError, match="not what plan_training returns"):
        env.cluster(plan=forged)


def test_subnets_in_two_azs_are_refused(env: Env) -> None:
    with pytest.raises(NeuronConfigError, match="spans 2 AZs") as raised:
        env.cluster(vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS))
    assert raised.value.field == "vpc_subnets"


def test_default_selection_in_a_two_az_vpc_is_refused_not_guessed(env: Env) -> None:
    with pytest.raises(NeuronConfigError, match="spans 2 AZs"):
        env.cluster(vpc_subnets=None)


def test_public_subnets_are_refused(env: Env) -> None:
    with pytest.raises(NeuronConfigError, match="public subnets"):
        env.cluster(
            vpc_subnets=ec2.SubnetSelection(
                subnet_type=ec2.SubnetType.PUBLIC, availability_zones=["us-east-1a"]
            )
        )


def test_subnets_with_unknown_azs_must_be_a_single_subnet() -> None:
    app = make_app()
    stack = cdk.Stack(app, "Agnostic")  # env-agnostic: AZ names are tokens
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    with pytest.raises(NeuronConfigError, match="one AZ cannot be proven"):
        BatchTrainingCluster(
            stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2, job_image=PUBLIC_IMAGE
        )
    cluster = BatchTrainingCluster(
        stack,
        "Single",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=ec2.SubnetSelection(subnets=[vpc.private_subnets[0]]),
        job_image=PUBLIC_IMAGE,
    )
    assert cluster.availability_zone is None


def test_one_zone_store_in_another_az_is_refused(env: Env) -> None:
    other = ec2.SubnetSelection(
        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1b"]
    )
    store = CheckpointStore(env.stack, f"Store{next(_ids)}", vpc=env.vpc, vpc_subnets=other, one_zone=True)
    with pytest.raises(NeuronConfigError, match="cluster runs in us-east-1a") as raised:
        env.cluster(checkpoints=store)
    assert raised.value.field == "checkpoints"


def test_ena_primary_layout_that_fills_card_0_is_refused_with_batch(env: Env) -> None:
    trn2 = make_app()
    stack = PinnedStack(trn2, "Trn2", region="us-east-2")
    vpc = network(stack)
    with pytest.raises(NeuronConfigError, match="card 0") as raised:
        BatchTrainingCluster(
            stack,
            "Cluster",
            vpc=vpc,
            instance_type="trn2.48xlarge",
            max_nodes=2,
            vpc_subnets=first_zone(stack),
            efa_layout=EfaLayout.ENA_PRIMARY_EFA_ONLY,
            job_image=PUBLIC_IMAGE,
        )
    assert raised.value.field == "efa_layout"
    # trn1 has five interfaces per card: room is left, so the layout is accepted there.
    env.cluster(efa_layout=EfaLayout.ENA_PRIMARY_EFA_ONLY)


def test_unknown_offering_is_a_warning_not_an_error(env: Env) -> None:
    cluster = env.cluster(availability_zone_id="mec1-az1")
    warnings = [entry.data for entry in cluster.node.metadata if entry.type == "aws:cdk:warning"]
    assert any("mec1-az1" in str(w) and OFFERING_WARNING_ID in str(w) for w in warnings)


def test_offered_az_has_no_warning(env: Env) -> None:
    cluster = env.cluster(availability_zone_id="use1-az6")
    warnings = [str(entry.data) for entry in cluster.node.metadata if entry.type == "aws:cdk:warning"]
    assert not [w for w in warnings if OFFERING_WARNING_ID in w]


def test_add_job_definition_refusals(env: Env) -> None:
    cluster = env.cluster()
    with pytest.raises(NeuronConfigError, match="nodes or plan, not both"):
        cluster.add_job_definition("Both", training_command="x", nodes=1, plan=cluster.plan)
    with pytest.raises(NeuronConfigError, match="plan needs 4 nodes"):
        cluster.add_job_definition("TooBig", training_command="x", nodes=4)
    with pytest.raises(NeuronConfigError, match="retry_attempts"):
        cluster.add_job_definition("Retries", training_command="x", retry_attempts=0)
    with pytest.raises(NeuronConfigError, match="training_command"):
        cluster.add_job_definition("Empty", training_command="")


def test_auto_placement_follows_capacity(env: Env) -> None:
    assert env.cluster().placement_group is not None
    assert env.cluster(placement_group=False).placement_group is None
    # A Capacity Block places its own instances: the Auto Scaling cluster (the engine that can use
    # one; AWS Batch ignores the market type) makes no placement group, asked or not.
    block = Capacity.capacity_block(RESERVATION)
    assert env.group(capacity=block).placement_group is None
    assert env.group(capacity=block, placement_group=False).placement_group is None


CPG = "trn-odcr-cpg"


@pytest.mark.parametrize("requested", [True, False])
def test_a_reservations_placement_group_cannot_be_overridden(env: Env, requested: bool) -> None:
    capacity = Capacity.reservation(RESERVATION, placement_group_name=CPG)
    with pytest.raises(
        NeuronConfigError,
        match=rf"^Refusals/Cluster\d+: placement_group={requested}: .*placement group {CPG}",
    ) as err:
        env.cluster(capacity=capacity, placement_group=requested)
    assert err.value.field == "placement_group"


@pytest.mark.parametrize("batch", [True, False])
def test_reservation_in_an_existing_placement_group_launches_into_it(batch: bool) -> None:
    from aws_cdk.assertions import Template

    app = make_app()
    stack = PinnedStack(app, "ExistingGroup", region="us-east-1")
    props: dict[str, Any] = {
        "vpc": network(stack),
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "vpc_subnets": first_zone(stack),
        "capacity": Capacity.reservation_group(
            "arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs", placement_group_name=CPG
        ),
    }
    cluster = (
        BatchTrainingCluster(stack, "Cluster", job_image=PUBLIC_IMAGE, **props)
        if batch
        else AutoScalingTrainingCluster(stack, "Cluster", **props)
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::EC2::PlacementGroup", 0)  # the existing group, not a new one
    assert cluster.placement_group is not None and cluster.placement_group.placement_group_name == CPG
    if batch:
        (ce,) = template.find_resources("AWS::Batch::ComputeEnvironment").values()
        assert ce["Properties"]["ComputeResources"]["PlacementGroup"] == CPG
    else:
        (group,) = template.find_resources("AWS::AutoScaling::AutoScalingGroup").values()
        assert group["Properties"]["PlacementGroup"] == CPG
    (lt,) = template.find_resources("AWS::EC2::LaunchTemplate").values()
    assert lt["Properties"]["LaunchTemplateData"]["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {
            "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:111111111111:group/trn-odcrs"
        }
    }


def test_job_definitions_added_after_a_grant_are_granted_too(env: Env) -> None:
    from aws_cdk import aws_iam as iam

    cluster = env.cluster()
    role = iam.Role(env.stack, f"Submitter{next(_ids)}", assumed_by=iam.AccountRootPrincipal())
    cluster.grant_submit_jobs(role)
    later = cluster.add_job_definition("Later", training_command="echo later")
    policy = role.node.find_child("DefaultPolicy")
    assert isinstance(policy, iam.Policy)
    document = env.stack.resolve(policy.document.to_json())
    later_ref = {"Ref": env.stack.resolve(env.stack.get_logical_id(later.node.default_child))}
    submit_resources = [
        resource
        for statement in document["Statement"]
        if "batch:SubmitJob" in statement["Action"]
        for resource in (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
    ]
    assert later_ref in submit_resources
