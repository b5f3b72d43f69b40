"""The nodes' launch template: IMDSv2, an encrypted gp3 root volume, one EFA per network card.

cdk-nag checks IMDSv2 and volume encryption only on instances and Auto Scaling groups, not on a
launch template that only AWS Batch uses, and it never sees raw overrides ("Raw overrides take place
after template synthesis, these fixes are not caught by cdk-nag", cdk-nag README): the training
cluster tests assert every property set here.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron.catalog import EfaLayout, NeuronInstance, efa_network_interfaces
from cdk_neuron.training.capacity import Capacity

ROOT_DEVICE_NAME = "/dev/xvda"  # Amazon Linux 2023's root device
# Neuron training images are tens of GB; gp3's baseline 125 MiB/s makes every first pull on a new
# node slow. 500 MiB/s needs at least 2,000 IOPS (gp3 allows 0.25 MiB/s per IOPS).
ROOT_VOLUME_THROUGHPUT_MIBPS = 500
ROOT_VOLUME_IOPS = 6000
# 1: only the host's own processes reach the metadata service. A bridge-mode container is one hop
# further, and AWS Batch's awsvpc-mode job containers are refused by the ECS agent
# (ECS_AWSVPC_BLOCK_IMDS, written by node-setup.sh): jobs get their credentials from the job role
# (the ECS credentials endpoint), never the instance role ("Amazon EC2 container instance security
# considerations for Amazon ECS", Amazon ECS Developer Guide, read 2026-12-02).
METADATA_HOP_LIMIT = 1


def build_launch_template(
    scope: Construct,
    id: str,
    *,
    instance: NeuronInstance,
    machine_image: ec2.IMachineImage,
    security_group: ec2.ISecurityGroup,
    kms_key: kms.IKey,
    root_volume_size: cdk.Size,
    efa_layout: EfaLayout,
    capacity: Capacity,
    user_data: ec2.UserData,
    role: iam.IRole | None,
) -> ec2.LaunchTemplate:
    """A launch template for ``instance`` nodes.

    ``role`` becomes the template's instance profile; Batch passes none because the compute
    environment attaches its own profile (Batch ignores the template's). The placement group is set
    by the engine (compute environment or Auto Scaling group), not here, so there is one source of it.
    """
    efa = instance.supports_efa
    template = ec2.LaunchTemplate(
        scope,
        id,
        instance_type=ec2.InstanceType(instance.name),
        machine_image=machine_image,
        user_data=user_data,
        role=role,
        require_imdsv2=True,
        http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
        http_put_response_hop_limit=METADATA_HOP_LIMIT,
        block_devices=[
            ec2.BlockDevice(
                device_name=ROOT_DEVICE_NAME,
                volume=ec2.BlockDeviceVolume.ebs(
                    int(root_volume_size.to_gibibytes()),
                    volume_type=ec2.EbsDeviceVolumeType.GP3,
                    encrypted=True,
                    kms_key=kms_key,
                    delete_on_termination=True,
                    iops=ROOT_VOLUME_IOPS,
                    throughput=ROOT_VOLUME_THROUGHPUT_MIBPS,
                ),
            )
        ],
        # Without EFA interfaces the group goes on the template itself; with them it goes on each
        # interface, because EC2 rejects SecurityGroupIds next to NetworkInterfaces.
        security_group=None if efa else security_group,
        # A node that cannot set up (no EFA, no scratch) powers itself off; terminating then lets
        # AWS Batch or the Auto Scaling group replace it (node_programs/files/bootstrap.sh).
        instance_initiated_shutdown_behavior=ec2.InstanceInitiatedShutdownBehavior.TERMINATE,
    )
    cfn = template.node.default_child
    assert isinstance(cfn, ec2.CfnLaunchTemplate)
    overrides: dict[str, Any] = dict(capacity.launch_template_data())
    if efa:
        overrides["NetworkInterfaces"] = efa_network_interfaces(
            instance, [security_group.security_group_id], efa_layout
        )
    for key, value in overrides.items():
        cfn.add_property_override(f"LaunchTemplateData.{key}", value)
    if efa:
        cfn.add_property_deletion_override("LaunchTemplateData.SecurityGroupIds")
    if not instance.in_ec2_model:
        # cfn-lint checks instance types against the EC2 API model's list per region (E3628), which
        # names no Trn3 type yet (catalog source EC2-MODEL); the type is the one the user confirmed.
        cfn.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E3628"]}})
    return template


__all__ = [
    "METADATA_HOP_LIMIT",
    "ROOT_DEVICE_NAME",
    "ROOT_VOLUME_IOPS",
    "ROOT_VOLUME_THROUGHPUT_MIBPS",
    "build_launch_template",
]
