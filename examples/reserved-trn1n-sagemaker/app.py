#!/usr/bin/env python3
"""A CDK app of your own, built from the cdk-neuron package (installed with pip, not imported from a checkout).

One stack in us-east-2:
- a trn1n.32xlarge training cluster (AWS Batch multi-node) that launches only into an On-Demand
  Capacity Reservation, with a regional EFS checkpoint store and an S3 Neuron compile cache;
- a SageMaker real-time endpoint on Inferentia2 serving precompiled Neuron artifacts from S3.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from cdk_neuron import (
    BatchTrainingCluster,
    Capacity,
    CheckpointStore,
    CompileCache,
    ModelSpec,
    plan_training,
)
from cdk_neuron.serving import SageMakerInferenceFleet
from cdk_neuron.training import DEFAULT_SECURITY_GROUP_WARNING_ID

# AZ names differ per account; AZ IDs do not. trn1n.32xlarge is offered in us-east-2 only in the AZ
# with ID use2-az3 (see `cdk-neuron preflight`). Put the AZ *name* your account maps to use2-az3 first
# (`aws ec2 describe-availability-zones --region us-east-2`).
TRAINING_AZ_ID = "use2-az3"
AZ_NAMES = ["us-east-2c", "us-east-2a"]
RESERVATION_ID = "cr-0123456789abcdef0"
# AWS Neuron training Deep Learning Container, pinned by tag (never "latest").
JOB_IMAGE = "763104351884.dkr.ecr.us-east-2.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"


class ReservedTrainingAndEndpointStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        vpc = ec2.Vpc(
            self,
            "Vpc",
            availability_zones=AZ_NAMES,
            nat_gateways=1,
            restrict_default_security_group=True,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Public",
                    subnet_type=ec2.SubnetType.PUBLIC,
                    cidr_mask=24,
                    map_public_ip_on_launch=False,
                ),
                ec2.SubnetConfiguration(
                    name="Nodes", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20
                ),
            ],
            flow_logs={"All": ec2.FlowLogOptions(traffic_type=ec2.FlowLogTrafficType.ALL)},
        )
        flow_log = vpc.node.find_child("All")
        cdk.Validations.of(flow_log).acknowledge(
            cdk.Acknowledgment(
                id="NIST.800.53.R5-IAMNoInlinePolicy",
                reason="CDK scopes the flow-log role's generated policy to this one log group",
            ),
            cdk.Acknowledgment(
                id="NIST.800.53.R5-CloudWatchLogGroupEncrypted",
                reason="Flow records hold addresses and ports, no payload; CloudWatch Logs encrypts at rest by default",
            ),
        )
        # The NAT gateway needs a route to the internet gateway; nodes have no public IPs.
        for subnet in vpc.public_subnets:
            cdk.Validations.of(subnet).acknowledge(
                cdk.Acknowledgment(
                    id="NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW",
                    reason="Public subnets hold only the NAT gateway; instances run in private subnets",
                )
            )
        training_subnets = ec2.SubnetSelection(subnet_group_name="Nodes", availability_zones=[AZ_NAMES[0]])

        checkpoints = CheckpointStore(
            self, "Checkpoints", vpc=vpc, vpc_subnets=ec2.SubnetSelection(subnet_group_name="Nodes")
        )
        cache = CompileCache(self, "CompileCache")
        # 4 nodes x 32 NeuronCores: TP 32 inside each node's NeuronLink domain, data parallel over EFA.
        plan = plan_training("trn1n.32xlarge", nodes=4, tensor_parallel=32)
        cluster = BatchTrainingCluster(
            self,
            "Training",
            vpc=vpc,
            vpc_subnets=training_subnets,
            availability_zone_id=TRAINING_AZ_ID,
            instance_type="trn1n.32xlarge",
            max_nodes=4,
            plan=plan,
            capacity=Capacity.reservation(RESERVATION_ID),
            job_image=JOB_IMAGE,
            checkpoints=checkpoints,
            compile_cache=cache,
        )
        # With EFA, Batch gives the node containers the VPC's default security group, which the cluster
        # opens for them (Security Hub EC2.2 reports it): say why that is acceptable here.
        cdk.Validations.of(cluster).acknowledge(
            cdk.Acknowledgment(
                id=f"Annotation::{DEFAULT_SECURITY_GROUP_WARNING_ID}",
                reason="This VPC holds only this stack, and everything else in it names its own security group",
            )
        )
        endpoint = SageMakerInferenceFleet(
            self,
            "Endpoint",
            vpc=vpc,
            model=ModelSpec(
                artifact_uri="s3://example-neuron-artifacts/llama-3-8b/bs4-seq4096-tp2/",
                parameters=8_000_000_000,
                batch_size=4,
                compiled_batch_size=4,
                compiled_sequence_length=4096,
                compiled_tensor_parallel=2,
            ),
            # 8B bf16 (14.9 GiB) needs more host RAM to load than inf2.xlarge's 16 GiB allows.
            instance_type="inf2.8xlarge",
            min_capacity=1,
            max_capacity=3,
        )
        cdk.CfnOutput(self, "JobQueueArn", value=cluster.job_queue.job_queue_arn)
        cdk.CfnOutput(self, "EndpointName", value=endpoint.endpoint_name)


def build(app: cdk.App) -> ReservedTrainingAndEndpointStack:
    return ReservedTrainingAndEndpointStack(
        app,
        "ReservedTrainingAndEndpoint",
        env=cdk.Environment(account="123456789012", region="us-east-2"),
    )


if __name__ == "__main__":
    app = cdk.App()
    build(app)
    app.synth()
