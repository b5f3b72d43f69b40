"""NetworkStack, as synthesized for the shipped environments: AZ-ID pinning, egress, endpoints, flow logs.

Which endpoints exist and that every node destination has a route: tests/test_node_reach.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from stacks.config import load_environments

ENVIRONMENTS = load_environments(shipped_environments())
ENV_NAMES = list(ENVIRONMENTS)


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


def resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def props(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("Properties", {})  # type: ignore[no-any-return]


def service_of(endpoint: dict[str, Any]) -> str:
    """'ecr.api' from the endpoint's ServiceName (com.amazonaws.<region>.ecr.api, maybe a Join)."""
    name = props(endpoint)["ServiceName"]
    if isinstance(name, dict):
        name = "".join(part if isinstance(part, str) else "" for part in name["Fn::Join"][1])
    return str(name).split(".", 3)[3]


@pytest.mark.parametrize("env", ENV_NAMES)
def test_every_subnet_is_pinned_by_az_id_never_by_name(built: SynthesizedApp, env: str) -> None:
    template = built.template(env, "Network")
    subnets = resources(template, "AWS::EC2::Subnet")
    assert subnets
    for subnet in subnets.values():
        assert "AvailabilityZone" not in props(subnet)
        assert props(subnet)["AvailabilityZoneId"] in ENVIRONMENTS[env].az_ids
        assert props(subnet)["MapPublicIpOnLaunch"] is False
    # One private subnet per configured AZ ID.
    private = [s for s in subnets.values() if _subnet_tag(s, "aws-cdk:subnet-name") == "Private"]
    assert sorted(props(s)["AvailabilityZoneId"] for s in private) == sorted(ENVIRONMENTS[env].az_ids)


def _subnet_tag(subnet: dict[str, Any], key: str) -> str | None:
    return next((t["Value"] for t in props(subnet).get("Tags", []) if t["Key"] == key), None)


@pytest.mark.parametrize("env", ENV_NAMES)
def test_no_template_names_an_availability_zone(built: SynthesizedApp, env: str) -> None:
    text = built.template_path(env, "Network").read_text()
    assert f"{ENVIRONMENTS[env].region}a" not in text
    assert "dummy1a" not in text
    assert "Fn::GetAZs" not in text


@pytest.mark.parametrize("env", ENV_NAMES)
def test_training_subnets_are_exactly_one_subnet_in_the_training_az(built: SynthesizedApp, env: str) -> None:
    network = built.stack(env, "Network")
    selection = network.training_subnets
    selected = network.vpc.select_subnets(
        subnet_type=selection.subnet_type, availability_zones=selection.availability_zones
    ).subnets
    assert len(selected) == 1
    assert selected[0].availability_zone == ENVIRONMENTS[env].training_az_id
    subnet_id = network.get_logical_id(selected[0].node.default_child)
    assert network.resolve(network.training_subnet_availability_zone) == {
        "Fn::GetAtt": [subnet_id, "AvailabilityZone"]
    }


def test_dev_egresses_through_a_nat_instance_not_a_gateway(built: SynthesizedApp) -> None:
    template = built.template("dev", "Network")
    assert not resources(template, "AWS::EC2::NatGateway")
    assert not resources(template, "AWS::EC2::EIP")
    assert len(resources(template, "AWS::EC2::Instance")) == 1
    private = [
        s
        for s in resources(template, "AWS::EC2::Subnet").values()
        if _subnet_tag(s, "aws-cdk:subnet-name") == "Private"
    ]
    assert {_subnet_tag(s, "aws-cdk:subnet-type") for s in private} == {"Private"}


def test_prod_has_one_nat_gateway_per_az_and_private_routes_through_them(built: SynthesizedApp) -> None:
    template = built.template("prod", "Network")
    nats = resources(template, "AWS::EC2::NatGateway")
    assert len(nats) == len(ENVIRONMENTS["prod"].az_ids) == 2
    assert len({props(n)["SubnetId"]["Ref"] for n in nats.values()}) == 2
    nat_routes = [r for r in resources(template, "AWS::EC2::Route").values() if "NatGatewayId" in props(r)]
    assert len(nat_routes) == 2
    assert {props(r)["DestinationCidrBlock"] for r in nat_routes} == {"0.0.0.0/0"}


def test_staging_shares_one_nat_gateway(built: SynthesizedApp) -> None:
    assert len(resources(built.template("staging", "Network"), "AWS::EC2::NatGateway")) == 1


@pytest.mark.parametrize("env", ENV_NAMES)
def test_interface_endpoints_share_one_https_only_group_and_private_dns(
    built: SynthesizedApp, env: str
) -> None:
    template = built.template(env, "Network")
    endpoints = resources(template, "AWS::EC2::VPCEndpoint")
    interface = [e for e in endpoints.values() if props(e).get("VpcEndpointType") == "Interface"]
    gateway = [e for e in endpoints.values() if props(e).get("VpcEndpointType") == "Gateway"]
    assert [service_of(e) for e in gateway] == ["s3"]
    if ENVIRONMENTS[env].network.endpoint_azs == "none":
        assert interface == []
        assert "EndpointSecurityGroup" not in "".join(resources(template, "AWS::EC2::SecurityGroup"))
        return
    (security_group,) = (
        k for k in resources(template, "AWS::EC2::SecurityGroup") if "EndpointSecurityGroup" in k
    )
    for endpoint in interface:
        assert props(endpoint)["PrivateDnsEnabled"] is True
        assert props(endpoint)["SecurityGroupIds"] == [{"Fn::GetAtt": [security_group, "GroupId"]}]
        expected_subnets = (
            1 if ENVIRONMENTS[env].network.endpoint_azs == "training" else len(ENVIRONMENTS[env].az_ids)
        )
        assert len(props(endpoint)["SubnetIds"]) == expected_subnets


def test_only_staging_adds_the_sagemaker_runtime_endpoint(built: SynthesizedApp) -> None:
    found = {
        env: "sagemaker.runtime"
        in {
            service_of(e) for e in resources(built.template(env, "Network"), "AWS::EC2::VPCEndpoint").values()
        }
        for env in ENV_NAMES
    }
    assert found == {"dev": False, "staging": True, "prod": False}


@pytest.mark.parametrize("env", [e for e in ENV_NAMES if ENVIRONMENTS[e].network.has_interface_endpoints])
def test_endpoint_security_group_allows_only_https_from_the_vpc(built: SynthesizedApp, env: str) -> None:
    (group,) = (
        g
        for k, g in resources(built.template(env, "Network"), "AWS::EC2::SecurityGroup").items()
        if "EndpointSecurityGroup" in k
    )
    assert props(group)["SecurityGroupIngress"] == [
        {
            "CidrIp": ENVIRONMENTS[env].network.cidr,
            "Description": "HTTPS from inside the VPC",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    # allow_all_outbound=False renders CDK's "disallow all" placeholder rule.
    assert [rule["CidrIp"] for rule in props(group)["SecurityGroupEgress"]] == ["255.255.255.255/32"]


@pytest.mark.parametrize("env", ENV_NAMES)
def test_flow_logs_go_to_an_encrypted_log_group_with_retention(built: SynthesizedApp, env: str) -> None:
    template = built.template(env, "Network")
    (flow_log,) = resources(template, "AWS::EC2::FlowLog").values()
    assert props(flow_log)["TrafficType"] == "ALL"
    assert props(flow_log)["LogDestinationType"] == "cloud-watch-logs"
    group_id = props(flow_log)["LogGroupName"]["Ref"]
    group = template["Resources"][group_id]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert props(group)["RetentionInDays"] == ENVIRONMENTS[env].network.flow_log_retention_days
    key_id = props(group)["KmsKeyId"]["Fn::GetAtt"][0]
    key = template["Resources"][key_id]
    assert props(key)["EnableKeyRotation"] is True
    logs_statement = next(
        s for s in props(key)["KeyPolicy"]["Statement"] if s.get("Sid", "").startswith("CloudWatchLogs")
    )
    assert logs_statement["Condition"]["ArnEquals"]["kms:EncryptionContext:aws:logs:arn"].endswith(
        f":log-group:/cdk-neuron/{env}/vpc-flow-logs"
    )
    # A fixed name: kept, the group must still go when the stack's first create rolls back.
    expected_policy = "Delete" if ENVIRONMENTS[env].removal_policy == "destroy" else "RetainExceptOnCreate"
    assert group["DeletionPolicy"] == key["DeletionPolicy"] == expected_policy


@pytest.mark.parametrize("env", ENV_NAMES)
def test_flow_log_role_has_a_managed_scoped_policy_and_a_confused_deputy_guard(
    built: SynthesizedApp, env: str
) -> None:
    template = built.template(env, "Network")
    assert not resources(template, "AWS::IAM::Policy")
    (policy,) = resources(template, "AWS::IAM::ManagedPolicy").values()
    (statement,) = props(policy)["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == [
        "logs:CreateLogStream",
        "logs:DescribeLogStreams",
        "logs:PutLogEvents",
    ]
    assert statement["Resource"]["Fn::GetAtt"][1] == "Arn"
    role_id = props(policy)["Roles"][0]["Ref"]
    (trust,) = props(template["Resources"][role_id])["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    assert set(trust["Condition"]) == {"StringEquals", "ArnLike"}
