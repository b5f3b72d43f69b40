#!/usr/bin/env python3
"""An app of someone else's: cdk-neuron constructs, and no configuration of cdk-neuron's own.

Its cdk.json holds only the app command and CDK's feature flags: no ``environments``, no
``cdk-neuron:deployments`` loader. The ``cdk-neuron`` CLI reads what it needs from the cloud
assembly ``cdk synth`` writes (``cdk-neuron plan --app cdk.out``): the constructs record
themselves there. tests/test_cli_outside_app.py synthesizes it and drives every command.

One top-level stack, no Stage: a VPC with one NAT gateway and an ECR interface endpoint, an AWS
Batch training cluster on trn1.32xlarge with an EFS checkpoint store, and a SageMaker endpoint on
inf2.8xlarge.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from cdk_neuron import BatchTrainingCluster, CheckpointStore, ModelSpec
from cdk_neuron.serving import SageMakerInferenceFleet

ACCOUNT, REGION = "123456789012", "us-east-1"
# The AZ name this account maps to use1-az6 (where trn1.32xlarge is offered) first.
AZ_NAMES = ["us-east-1a", "us-east-1b"]
TRAINING_AZ_ID = "use1-az6"
JOB_IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:"
    "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
)


class ResearchStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return AZ_NAMES

    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        vpc = ec2.Vpc(self, "Vpc", availability_zones=AZ_NAMES, nat_gateways=1)
        vpc.add_interface_endpoint("Ecr", service=ec2.InterfaceVpcEndpointAwsService.ECR)
        checkpoints = CheckpointStore(self, "Checkpoints", vpc=vpc, model_parameters=8e9, writers=2)
        BatchTrainingCluster(
            self,
            "Cluster",
            vpc=vpc,
            instance_type="trn1.32xlarge",
            max_nodes=2,
            vpc_subnets=ec2.SubnetSelection(
                availability_zones=[AZ_NAMES[0]], subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
            ),
            availability_zone_id=TRAINING_AZ_ID,
            checkpoints=checkpoints,
            job_image=JOB_IMAGE,
        )
        SageMakerInferenceFleet(
            self,
            "Endpoint",
            vpc=vpc,
            model=ModelSpec(model_id="meta-llama/Llama-3.1-8B-Instruct", parameters=8e9),
            instance_type="inf2.8xlarge",
        )


def build(app: cdk.App) -> ResearchStack:
    return ResearchStack(app, "Research", env=cdk.Environment(account=ACCOUNT, region=REGION))


if __name__ == "__main__":
    app = cdk.App()
    build(app)
    app.synth()
