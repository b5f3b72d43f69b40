"""AutoScalingTrainingCluster's engine: a self-managed node group in the cluster placement group."""

from __future__ import annotations

from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron._nag import acknowledge


def build_auto_scaling_group(
    scope: Construct,
    *,
    vpc: ec2.IVpc,
    subnets: ec2.SubnetSelection,
    launch_template: ec2.LaunchTemplate,
    placement_group: ec2.IPlacementGroup | None,
    max_nodes: int,
    desired_capacity: int | None,
    notification_topic: sns.ITopic | None,
) -> autoscaling.AutoScalingGroup:
    """An Auto Scaling group of 0 to ``max_nodes`` nodes from the cluster's launch template.

    The group has no L2 prop for a placement group (aws/aws-cdk#12298), so it is set on the L1.
    """
    group = autoscaling.AutoScalingGroup(
        scope,
        "AutoScalingGroup",
        vpc=vpc,
        vpc_subnets=subnets,
        launch_template=launch_template,
        min_capacity=0,
        max_capacity=max_nodes,
        desired_capacity=desired_capacity,
        notifications=[autoscaling.NotificationConfiguration(topic=notification_topic)]
        if notification_topic is not None
        else None,
    )
    cfn = group.node.default_child
    assert isinstance(cfn, autoscaling.CfnAutoScalingGroup)
    if placement_group is not None:
        cfn.placement_group = placement_group.placement_group_name
    if notification_topic is None:
        acknowledge(
            group,
            "AwsSolutions-AS3",
            "No notification_topic was given: the group is sized by the team's own scheduler "
            "(Ray, Slurm, torchrun), and its scaling activity history records every launch and "
            "termination; AutoScalingTrainingCluster(notification_topic=...) sends them to SNS.",
        )
    return group


__all__ = ["build_auto_scaling_group"]
