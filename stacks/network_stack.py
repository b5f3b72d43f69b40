"""NetworkStack: the environment's VPC, pinned to AZ IDs, with flow logs and the routes the nodes need.

Every host a node reaches is derived from the node programs themselves
(``cdk_neuron.node_programs.reach``, assembled per environment by ``stacks.config.node_destinations``)
and tests check that this stack routes each one. Three ways out, per environment
(``network`` in cdk.json):

- **NAT instance, no interface endpoints (dev).** ``nat_instance_type: "t4g.nano"`` with
  ``endpoint_azs: "none"``: one aws-cdk-lib ``NatProvider.instance_v2`` carries every AWS API
  call and the Hugging Face Hub, while S3 (the node-program bundle, model artifacts, ECR image
  layers, the Amazon Linux repositories) stays on the free S3 gateway endpoint. It costs a t4g.nano
  and a public IPv4 address, $0.009/h, where the 12 interface endpoints a dev fleet would
  otherwise need cost $0.12/h in one AZ: the difference between meeting the $0.10/h idle budget
  and not. The price is one instance's bandwidth (a t4g.nano bursts to 5 Gbps, baseline
  32 Mbps: enough for API calls, slow for a model download from the Hub) and no failover (EC2
  automatic recovery restarts it on a host failure). It is hardened: IMDSv2, an encrypted root
  volume, HTTPS from the VPC CIDR only, no SSH key.
- **NAT gateways plus endpoints (staging, prod).** Managed NAT gateways for what has no endpoint,
  and an interface endpoint for every AWS service a node calls: a 16-node job pulls a ~10 GB
  image on every node, and through a NAT gateway that volume would be billed per GB processed
  ($0.045/GB against $0.01/GB through an endpoint) and share the gateway's bandwidth with model
  downloads. Prod has one NAT gateway per AZ so an AZ outage does not cut the other AZ's egress;
  staging shares one.
- **No NAT.** ``nat_gateways: 0``: isolated subnets, endpoints only. The configuration then
  refuses anything an endpoint cannot reach (a public image, a Hub download, ECR in another region).

Endpoints (private DNS on, one security group: HTTPS from the VPC CIDR only, no egress):

- S3 gateway, always: free, and S3 is most of the bytes.
- Interface endpoints for exactly the services the nodes call (``stacks.config.interface_endpoints``):
  ``ecr.api``/``ecr.dkr`` (images), ``ecs``/``ecs-agent``/``ecs-telemetry`` (the ECS agent
  AWS Batch drives), ``logs`` (job logs), ``monitoring`` (Neuron and fleet metrics),
  ``ssm``/``ssmmessages``/``ec2messages`` (Session Manager replaces SSH), ``autoscaling`` and
  ``cloudformation`` (an EC2 fleet's lifecycle hook and creation signal), ``secretsmanager``
  (a Hugging Face token), ``sagemaker.runtime`` (callers of a SageMaker endpoint in the VPC).

Not created, because no node calls them: ``sts`` (Batch and ECS hand out task-role credentials
through the ECS agent, and instance profiles through IMDS), ``batch`` (the service drives the
nodes through ECS), ``elasticfilesystem`` (mounts go to the mount-target DNS names), ``kms``
(EFS, S3, Logs and Secrets Manager call KMS on the caller's behalf).

Flow logs go to a CloudWatch Logs group encrypted with a customer-managed, rotating KMS key and
kept ``network.flow_log_retention_days``. Logs rather than S3: Logs Insights queries them in
place, and an S3 destination would need its own bucket with access logging and a second key.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_neuron.kms_actions import DATA_KEY_ACTIONS
from stacks.config import EnvironmentConfig, interface_endpoints
from stacks.pinned import PinnedAzStack, removal_policy_of

_R = logs.RetentionDays
# cdk.json gives days; the L2 takes its enum (the same set CloudWatch Logs accepts).
LOG_RETENTION: dict[int, logs.RetentionDays] = {
    1: _R.ONE_DAY, 3: _R.THREE_DAYS, 5: _R.FIVE_DAYS, 7: _R.ONE_WEEK, 14: _R.TWO_WEEKS, 30: _R.ONE_MONTH,
    60: _R.TWO_MONTHS, 90: _R.THREE_MONTHS, 120: _R.FOUR_MONTHS, 150: _R.FIVE_MONTHS, 180: _R.SIX_MONTHS,
    365: _R.ONE_YEAR, 400: _R.THIRTEEN_MONTHS, 545: _R.EIGHTEEN_MONTHS, 731: _R.TWO_YEARS,
    1096: _R.THREE_YEARS, 1827: _R.FIVE_YEARS, 2192: _R.SIX_YEARS, 2557: _R.SEVEN_YEARS,
    2922: _R.EIGHT_YEARS, 3288: _R.NINE_YEARS, 3653: _R.TEN_YEARS,
}  # fmt: skip

# What CloudWatch Logs needs on the key that encrypts a log group (CloudWatch Logs User Guide,
# "Encrypt log data in CloudWatch Logs using AWS KMS").


_NAT_INSTANCE_ACKNOWLEDGMENTS = {
    "AwsSolutions-EC28": "A NAT instance keeps no state worth per-minute metrics; detailed monitoring would "
    "bill per metric for a router that CloudFormation can replace at any deploy.",
    "AwsSolutions-EC29": "A NAT instance is disposable: a new AMI or instance type replaces it (and its route) "
    "on the next deploy, which termination protection would block.",
    "NIST.800.53.R5-EC2InstanceNoPublicIp": "A NAT instance needs a public IP to forward the private subnets' "
    "traffic; its security group admits HTTPS from the VPC CIDR only.",
    "NIST.800.53.R5-EC2InstancesInVPC": "It is in the VPC's public subnet: with a public IP, aws-cdk-lib "
    "puts the SubnetId on the network interface, where this rule does not look.",
}
"""Why each nag rule does not apply to a NAT instance (network.nat_instance_type)."""


class NetworkStack(PinnedAzStack):
    """The VPC of one environment.

    Attributes:
        vpc: private subnets in every configured AZ ID (isolated without NAT, with egress with NAT);
            public subnets only to hold NAT gateways.
        workload_subnets: the private subnets in every AZ (serving fleets, endpoints).
        training_subnets: exactly one private subnet, in the training AZ (``az_ids[0]``): an EFA
            cluster needs one AZ and one cluster placement group.
        training_subnet_availability_zone: the AZ *name* of that subnet as ``Fn::GetAtt
            Subnet.AvailabilityZone``, for properties that only accept names (EFS One Zone).
        endpoint_security_group: the interface endpoints' group (HTTPS in from the VPC CIDR); None
            without interface endpoints (``endpoint_azs: "none"``).
    """

    def __init__(self, scope: Construct, id: str, *, config: EnvironmentConfig, **kwargs: Any) -> None:
        super().__init__(scope, id, config=config, **kwargs)
        network = config.network
        removal = removal_policy_of(config)
        prefix = int(network.cidr.split("/")[1])
        private_type = (
            ec2.SubnetType.PRIVATE_WITH_EGRESS
            if network.has_internet_egress
            else ec2.SubnetType.PRIVATE_ISOLATED
        )
        # Fixed masks (not an even split), so adding an AZ later never renumbers existing subnets.
        subnets = [ec2.SubnetConfiguration(name="Private", subnet_type=private_type, cidr_mask=prefix + 3)]
        if network.has_internet_egress:
            subnets.append(
                ec2.SubnetConfiguration(
                    name="Public",
                    subnet_type=ec2.SubnetType.PUBLIC,
                    cidr_mask=prefix + 5,
                    map_public_ip_on_launch=False,
                )
            )

        nat_instances = (
            ec2.NatProvider.instance_v2(
                instance_type=ec2.InstanceType(network.nat_instance_type),
                # Only the VPC may send through it; the provider's default lets the internet in.
                default_allowed_traffic=ec2.NatTrafficDirection.OUTBOUND_ONLY,
                # The public subnets do not map public IPs on launch, and a NAT needs one.
                associate_public_ip_address=True,
            )
            if network.nat_instance_type is not None
            else None
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(network.cidr),
            # AZ IDs stand in for names here; _pin_subnets_to_az_ids turns them into AvailabilityZoneId.
            availability_zones=list(config.az_ids),
            nat_gateways=network.nat_gateways,
            nat_gateway_provider=nat_instances,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
        )
        self._pin_subnets_to_az_ids()
        if nat_instances is not None:
            self._harden_nat_instances(nat_instances)
        for public_subnet in self.vpc.public_subnets:
            cdk.Validations.of(public_subnet.node.find_child("DefaultRoute")).acknowledge(
                cdk.Acknowledgment(
                    id="NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW",
                    reason="Public subnets hold only the NAT gateways, whose egress needs the route to the "
                    "internet gateway; no instance or workload is ever placed in them (map_public_ip_on_launch is off).",
                )
            )

        self.workload_subnets = ec2.SubnetSelection(subnet_type=private_type)
        self.training_subnets = ec2.SubnetSelection(
            subnet_type=private_type, availability_zones=[config.training_az_id]
        )
        training_subnet = self.vpc.select_subnets(
            subnet_type=private_type, availability_zones=[config.training_az_id]
        ).subnets[0]
        cfn_training_subnet = training_subnet.node.default_child
        assert isinstance(cfn_training_subnet, ec2.CfnSubnet)
        self.training_subnet = training_subnet
        self.training_subnet_availability_zone: str = cfn_training_subnet.attr_availability_zone

        self._add_flow_logs(removal)
        self.endpoint_security_group = self._add_endpoints(private_type)

    def _harden_nat_instances(self, provider: ec2.NatInstanceProviderV2) -> None:
        """IMDSv2, an encrypted root volume, and HTTPS from this VPC only.

        ``NatProvider.instance_v2`` runs Amazon Linux 2023 with iptables masquerading (its default
        user data); it leaves IMDSv1 on and the root volume unencrypted unless the account
        encrypts EBS by default.
        """
        # HTTPS is all the nodes send out (AWS APIs, registries, the Hugging Face Hub); DNS and
        # time stay inside the VPC (Route 53 Resolver, Amazon Time Sync Service).
        provider.connections.allow_from(
            ec2.Peer.ipv4(self.config.network.cidr), ec2.Port.tcp(443), "HTTPS from the VPC, to forward"
        )
        for instance in provider.gateway_instances:
            # The L2 copies the subnet's AZ, here an AZ *ID* (see _pin_subnets_to_az_ids), which
            # EC2 refuses as AvailabilityZone; the subnet on the network interface places it.
            instance.instance.availability_zone = None
            instance.instance.block_device_mappings = [
                ec2.CfnInstance.BlockDeviceMappingProperty(
                    device_name="/dev/xvda",
                    ebs=ec2.CfnInstance.EbsProperty(encrypted=True, volume_type="gp3"),
                )
            ]
            cdk.Aspects.of(instance).add(ec2.InstanceRequireImdsv2Aspect())
            for rule, reason in _NAT_INSTANCE_ACKNOWLEDGMENTS.items():
                cdk.Validations.of(instance).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))

    def _pin_subnets_to_az_ids(self) -> None:
        """Replace every subnet's AvailabilityZone (a name) with AvailabilityZoneId."""
        for subnet in [*self.vpc.public_subnets, *self.vpc.private_subnets, *self.vpc.isolated_subnets]:
            cfn_subnet = subnet.node.default_child
            assert isinstance(cfn_subnet, ec2.CfnSubnet)
            cfn_subnet.availability_zone_id = subnet.availability_zone
            cfn_subnet.availability_zone = None

    def _add_flow_logs(self, removal: cdk.RemovalPolicy) -> None:
        # A fixed name lets the key policy name the log group without a circular reference.
        log_group_name = f"/cdk-neuron/{self.config.name}/vpc-flow-logs"
        key = kms.Key(
            self,
            "FlowLogKey",
            description=f"cdk-neuron {self.config.name}: VPC flow logs",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsUsesKeyForFlowLogGroup",
                principals=[iam.ServicePrincipal(f"logs.{self.region}.amazonaws.com")],
                actions=list(DATA_KEY_ACTIONS),
                resources=["*"],  # in a key policy "*" means this key
                conditions={
                    "ArnEquals": {
                        "kms:EncryptionContext:aws:logs:arn": self.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name=log_group_name,
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        log_group = logs.LogGroup(
            self,
            "FlowLogs",
            log_group_name=log_group_name,
            encryption_key=key,
            retention=LOG_RETENTION[self.config.network.flow_log_retention_days],
            removal_policy=removal,
        )
        # Our own role with a customer-managed policy: the L2 would attach an inline policy (NIST
        # IAMNoInlinePolicy). The trust is limited to this account's flow logs (confused deputy).
        role = iam.Role(
            self,
            "FlowLogRole",
            description=f"cdk-neuron {self.config.name}: VPC flow logs write to {log_group_name}",
            assumed_by=iam.ServicePrincipal(
                "vpc-flow-logs.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": self.account},
                    "ArnLike": {
                        "aws:SourceArn": self.format_arn(
                            service="ec2", resource="vpc-flow-log", resource_name="*"
                        )
                    },
                },
            ),
        )
        iam.ManagedPolicy(
            self,
            "FlowLogPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                    resources=[log_group.log_group_arn],
                )
            ],
        )
        self.vpc.add_flow_log(
            "FlowLog",
            # without_policy_updates: the grants the L2 would add are already in FlowLogPolicy.
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group, role.without_policy_updates()),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )

    def _add_endpoints(self, private_type: ec2.SubnetType) -> ec2.SecurityGroup | None:
        config = self.config
        self.vpc.add_gateway_endpoint(
            "S3",
            service=ec2.GatewayVpcEndpointAwsService.S3,
            subnets=[ec2.SubnetSelection(subnet_type=private_type)],
        )
        # Logical ids and services come from stacks.config, which also hands them to `cdk-neuron cost`.
        services = interface_endpoints(config)
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        if not services:  # endpoint_azs "none": the NAT carries every AWS API call
            return None
        security_group = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="Interface endpoints: HTTPS from inside the VPC only",
            allow_all_outbound=False,
        )
        # The literal CIDR, not the VPC's CidrBlock token: the rule reads the same in the template,
        # and cdk-nag's EC23 cannot evaluate a token CIDR.
        security_group.add_ingress_rule(
            ec2.Peer.ipv4(config.network.cidr), ec2.Port.tcp(443), "HTTPS from inside the VPC"
        )
        endpoint_subnets = ec2.SubnetSelection(
            subnet_type=private_type,
            availability_zones=[config.training_az_id] if config.network.endpoint_azs == "training" else None,
        )
        self.interface_endpoints = {
            name: self.vpc.add_interface_endpoint(
                name,
                service=ec2.InterfaceVpcEndpointAwsService(service),
                subnets=endpoint_subnets,
                security_groups=[security_group],
                open=False,
                private_dns_enabled=True,
            )
            for name, service in services.items()
        }
        return security_group
