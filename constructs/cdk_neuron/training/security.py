"""The cluster's security group, KMS key policy and instance role."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron import iam_statements
from cdk_neuron._nag import acknowledge

SSM_CORE_POLICY = "AmazonSSMManagedInstanceCore"
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"


NODE_GROUP_DESCRIPTION = "cdk-neuron training nodes: EFA within the group, HTTPS out"


def node_security_group(
    scope: Construct, id: str, vpc: ec2.IVpc, *, description: str = NODE_GROUP_DESCRIPTION
) -> ec2.SecurityGroup:
    """The nodes' security group. Every rule is here, each with its reason.

    ``description`` is create-only (a change replaces the group): an engine whose group must never be
    replaced by accident pins its own copy (HyperPod: its VpcConfig is create-only too).

    - all traffic from and to the group itself: EFA's SRD transport is not TCP or UDP, so the EFA
      user guide requires an all-protocols self rule in both directions (EFA-SG). The same rules carry
      the torch rendezvous, the Neuron root communicator and Batch's per-task network interfaces.
    - TCP 443 to anywhere: the AWS APIs the nodes call (ECS, ECR, S3, CloudWatch Logs, SSM, STS),
      through VPC endpoints or a NAT gateway, and the AL2023 package repositories (on S3).
    - TCP 2049 to the checkpoint store is added when one is granted (EFS over TLS).

    DNS, NTP and instance metadata go to link-local addresses that security groups do not filter.
    No ingress from outside the group: shells go through SSM Session Manager, not SSH.
    """
    group = ec2.SecurityGroup(
        scope,
        id,
        vpc=vpc,
        allow_all_outbound=False,
        description=description,
    )
    group.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA and collectives between training nodes")
    group.add_egress_rule(group, ec2.Port.all_traffic(), "EFA and collectives between training nodes")
    group.add_egress_rule(
        ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS APIs, ECR, S3 and package repos"
    )
    return group


DEFAULT_SECURITY_GROUP_WARNING_ID = "@cdk-neuron/training:defaultSecurityGroupRules"
DEFAULT_SECURITY_GROUP_WARNING = (
    "With EFA, AWS Batch gives the node containers the VPC's default security group, so this cluster adds rules "
    "to it: TCP within the group, HTTPS out, NFS to the checkpoint file system. AWS Security Hub EC2.2 (and CIS "
    "AWS Foundations 5.4, AWS Config vpc-default-security-group-closed) then reports the VPC, and anything "
    "launched into this VPC without a security group joins the training containers' network. Name a security "
    "group on everything else you launch here, and acknowledge this warning with your reason "
    "(docs/lifecycle.md, 'The VPC default security group')."
)


def open_task_security_group(scope: Construct, id: str, security_group_id: str) -> ec2.ISecurityGroup:
    """The security group of the node containers' own interfaces, opened for what they need.

    AWS Batch runs multi-node containers in ``awsvpc`` mode: each gets its own network interface with
    the compute environment's security groups, "If you don't specify a security group, the default
    security group for the VPC is used" (AWS Batch User Guide, "Compute environment considerations
    for MNP", read 2026-12-01). With EFA the compute environment may name none (its launch template's
    network interfaces carry them), so the containers get the VPC's default group, which a CDK VPC
    (``restrictDefaultSecurityGroup``) leaves with no rules. These rules let the containers reach
    each other and AWS:

    - TCP from and to the group itself: torchrun's rendezvous store on the main node
      (``MASTER_ADDR:MASTER_PORT``), the Neuron runtime's root communicator
      (``NEURON_RT_ROOT_COMM_ID``) and the collectives' bootstrap sockets (``CCOM_SOCKET_IFNAME=eth0``).
      TCP, not all protocols, so the rule is not the VPC's original default rule, which the VPC's
      restricting custom resource removes.
    - TCP 443 out: S3 (compile cache, data), and other AWS APIs the training code calls.

    The collectives' data itself travels over the hosts' EFA interfaces, in the node security group.

    The rules fail AWS Security Hub EC2.2 ("VPC default security groups should not allow inbound or
    outbound traffic"), which cdk-nag's ``VPCDefaultSecurityGroupClosed`` cannot see (it checks only
    that the VPC has its restricting custom resource): ``scope`` gets a synth warning
    (:data:`DEFAULT_SECURITY_GROUP_WARNING_ID`) for its app to acknowledge.
    """
    cdk.Annotations.of(scope).add_warning_v2(
        DEFAULT_SECURITY_GROUP_WARNING_ID, DEFAULT_SECURITY_GROUP_WARNING
    )
    group = ec2.SecurityGroup.from_security_group_id(
        scope, id, security_group_id, allow_all_outbound=False, mutable=True
    )
    rendezvous = (
        "torchrun rendezvous, Neuron root communicator and collective bootstrap between node containers"
    )
    group.add_ingress_rule(group, ec2.Port.tcp_range(0, 65535), rendezvous)
    group.add_egress_rule(group, ec2.Port.tcp_range(0, 65535), rendezvous)
    group.add_egress_rule(
        ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS from node containers to AWS APIs and S3"
    )
    return group


def allow_instance_launches(key: kms.IKey) -> bool:
    """Let the roles that launch instances (and so create their encrypted root volumes) on the
    cluster's behalf use ``key``: EC2 Auto Scaling for the self-managed group and for the groups Batch
    manages, and Batch (:func:`cdk_neuron.iam_statements.allow_instance_launches`: matched by
    ``aws:PrincipalArn``, since a new account has no Batch service-linked role before its first
    compute environment).

    Returns False when ``key`` is imported: its policy must then grant the same (documented on the
    ``kms_key`` prop).
    """
    return iam_statements.allow_instance_launches(
        key, (iam_statements.AUTO_SCALING_SERVICE_ROLE, iam_statements.BATCH_SERVICE_ROLE)
    )


def allow_log_encryption(key: kms.IKey) -> bool:
    """Let CloudWatch Logs encrypt this account's log groups in this region with ``key``."""
    return iam_statements.allow_log_encryption(key, sid="AllowCloudWatchLogsToEncryptTrainingLogs")


def node_role(scope: Construct, id: str, *, ecs_agent: bool) -> iam.Role:
    """The instance role: Session Manager for shells, plus the ECS agent's permissions for Batch.

    ``AmazonSSMManagedInstanceCore`` is AWS's minimal policy for Session Manager. With Batch, the ECS
    agent on the node needs ``AmazonEC2ContainerServiceforEC2Role``: the AMI floats with its SSM
    parameter, so the agent version (and the calls it makes) changes without a code change here,
    and AWS updates this policy with the agent. Jobs never use this role: they get the job role.
    """
    role = iam.Role(
        scope,
        id,
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description="cdk-neuron training node: SSM shell"
        + (", ECS agent for AWS Batch" if ecs_agent else ""),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(SSM_CORE_POLICY)],
    )
    reasons = {
        SSM_CORE_POLICY: "AWS's minimal policy for SSM Session Manager, which replaces SSH on nodes "
        "that have no inbound rules and no public IP.",
    }
    if ecs_agent:
        role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(ECS_INSTANCE_POLICY))
        reasons[ECS_INSTANCE_POLICY] = (
            "The ECS agent on Batch nodes needs exactly this AWS-maintained set (register, poll, "
            "submit state); the AMI floats via SSM, so a hand-written copy would silently break "
            "newer agents. Job code runs with the separate job role."
        )
    for name, reason in reasons.items():
        acknowledge(role, f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]", reason)
    return role


__all__ = [
    "DEFAULT_SECURITY_GROUP_WARNING_ID",
    "ECS_INSTANCE_POLICY",
    "SSM_CORE_POLICY",
    "allow_instance_launches",
    "allow_log_encryption",
    "node_role",
    "node_security_group",
    "open_task_security_group",
]
