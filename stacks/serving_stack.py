"""ServingStack: the inference fleet, on EC2 Auto Scaling or a SageMaker endpoint."""

from __future__ import annotations

import re
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from cdk_neuron import ami
from cdk_neuron.monitoring import NodeMetrics
from cdk_neuron.serving import Ec2InferenceFleet, SageMakerInferenceFleet
from stacks.config import EnvironmentConfig, ServingConfig
from stacks.network_stack import NetworkStack
from stacks.pinned import PinnedAzStack, removal_policy_of
from stacks.scan_skips import skip_checkov

# A complete secret ARN ends in "-" and six random characters; a name or partial ARN does not.
_COMPLETE_SECRET_ARN = re.compile(r"^arn:.+:secret:.+-[A-Za-z0-9]{6}$")


class ServingStack(PinnedAzStack):
    """The fleet in the private subnets of every configured AZ ID.

    A fleet whose minimum is two or more instances must span at least two AZs, so one AZ's outage
    leaves it serving. Output: the serving URL (EC2: the internal load balancer) or the SageMaker
    endpoint name.
    """

    def __init__(
        self, scope: Construct, id: str, *, config: EnvironmentConfig, network: NetworkStack, **kwargs: Any
    ) -> None:
        super().__init__(scope, id, config=config, **kwargs)
        serving = config.serving
        shared: dict[str, Any] = {
            "vpc": network.vpc,
            "model": serving.model,
            "engine": serving.engine,
            "instance_type": serving.instance_type,
            "min_capacity": serving.min_capacity,
            "max_capacity": serving.max_capacity,
            "vpc_subnets": network.workload_subnets,
            # The VPC's zones are named by their AZ IDs (see PinnedAzStack).
            "availability_zone_ids": {az_id: az_id for az_id in config.az_ids},
            "min_availability_zones": min(2, len(config.az_ids)) if serving.min_capacity >= 2 else 1,
            "removal_policy": removal_policy_of(config),
            # serving.model.artifact_manifest: config has compared it already; the fleet checks it again.
            "artifact_manifest": serving.artifact_manifest,
        }
        self.fleet: Ec2InferenceFleet | SageMakerInferenceFleet
        if serving.backend == "sagemaker":
            self.fleet = SageMakerInferenceFleet(self, "Fleet", **shared)
            cdk.CfnOutput(self, "EndpointName", value=self.fleet.endpoint_name)
        else:
            self.fleet = Ec2InferenceFleet(
                self,
                "Fleet",
                **shared,
                certificate=self._certificate(serving),
                hugging_face_token=self._token(serving),
                warm_pool=serving.warm_pool,
                warm_pool_size=serving.warm_pool_size,
                machine_image=ami.machine_image(config.ami_release),
                # The instances publish Neuron metrics for the MonitoringStack.
                node_metrics=NodeMetrics(environment=config.name),
            )
            self._accept_scan_findings(self.fleet, serving)
            cdk.CfnOutput(self, "ServingUrl", value=self.fleet.url)

    @staticmethod
    def _accept_scan_findings(fleet: Ec2InferenceFleet, serving: ServingConfig) -> None:
        skip_checkov(
            fleet.access_log_bucket,
            "CKV_AWS_18",
            "This is the load balancer's access-log bucket; logging its own accesses would need yet "
            "another bucket.",
        )
        if serving.certificate_arn is None:
            reason = (
                "No serving.certificate_arn is configured: the internal load balancer listens on HTTP, "
                "reachable only from inside the VPC (its security group admits the VPC CIDR). Set "
                "certificate_arn to serve HTTPS with TLS 1.2+."
            )
            skip_checkov(fleet.listener, "CKV_AWS_2", reason)
            skip_checkov(fleet.listener, "CKV_AWS_103", reason)

    def _certificate(self, serving: ServingConfig) -> acm.ICertificate | None:
        if serving.certificate_arn is None:
            return None
        return acm.Certificate.from_certificate_arn(self, "Certificate", serving.certificate_arn)

    def _token(self, serving: ServingConfig) -> secretsmanager.ISecret | None:
        name = serving.hugging_face_token_secret
        return import_secret(self, "HuggingFaceToken", name) if name is not None else None


def import_secret(scope: Construct, id: str, name: str) -> secretsmanager.ISecret:
    """A Secrets Manager secret by complete ARN, partial ARN or name (``hugging_face_token_secret``)."""
    if _COMPLETE_SECRET_ARN.match(name):
        return secretsmanager.Secret.from_secret_complete_arn(scope, id, name)
    if name.startswith("arn:"):
        return secretsmanager.Secret.from_secret_partial_arn(scope, id, name)
    return secretsmanager.Secret.from_secret_name_v2(scope, id, name)
