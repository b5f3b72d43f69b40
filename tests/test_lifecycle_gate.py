"""The lifecycle gate over every environment the app ships: retry and teardown.

- Retry: a first create that fails at any resource rolls back; nothing it keeps may have a fixed
  name (the retry would fail with "already exists"), in any environment.
- Teardown: dev is destroyed every evening; ``cdk destroy`` must not fail (every bucket and vault it
  deletes is emptied first, services' writes included) and must leave nothing behind (nothing kept,
  no log group a Lambda function creates outside the stack). No environment deletes a key while it
  keeps data that key encrypts.

The change matrix (what each common change replaces) is in test_change_matrix.py.
"""

from __future__ import annotations

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron.lifecycle import lifecycle_findings
from stacks.config import load_environments

ENVIRONMENTS = load_environments(shipped_environments())


@pytest.fixture(scope="module")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_every_environment_survives_a_retry_and_its_teardown(built: SynthesizedApp, env: str) -> None:
    teardown = ENVIRONMENTS[env].removal_policy == "destroy"
    found = lifecycle_findings(built.environment(env), teardown=teardown)
    assert [str(f) for f in found] == []


def test_the_gate_covers_a_torn_down_and_a_kept_environment() -> None:
    # Otherwise the test above would check only one of its two paths.
    assert {env.removal_policy for env in ENVIRONMENTS.values()} == {"destroy", "retain"}


@pytest.mark.slow
def test_dev_deletes_what_it_creates_and_empties_what_services_write_into(built: SynthesizedApp) -> None:
    templates = built.environment("dev")
    policies = {
        (stack, logical): resource.get("DeletionPolicy", "Delete")
        for stack, template in templates.items()
        for logical, resource in template["Resources"].items()
    }
    assert {policy for policy in policies.values()} == {"Delete"}
    emptied = {
        (stack, resource["Properties"]["BucketName"]["Ref"])
        for stack, template in templates.items()
        for resource in template["Resources"].values()
        if resource["Type"] == "Custom::S3AutoDeleteObjects"
    }
    # The compile cache the cluster writes into, and the bucket ELB writes access logs (and its test
    # object) into.
    assert sorted(logical[: -len("XXXXXXXX")] for _, logical in emptied) == [
        "CompileCacheBucket",
        "FleetAccessLogs",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_nodes_boot_the_pinned_ami_release_and_only_the_nat_follows_new_releases(
    built: SynthesizedApp, env: str
) -> None:
    """A deploy never picks up a newer Neuron AMI by itself: no Batch infrastructure update under
    running jobs, no fleet replacement, unless ami_release changes."""
    from cdk_neuron import ami
    from cdk_neuron.lifecycle.template import floating_parameters

    config = ENVIRONMENTS[env]
    for stack_id in ("Training", "Serving"):
        parameters = built.template(env, stack_id).get("Parameters", {})
        amis = {p["Default"] for p in parameters.values() if "optimized-ami" in str(p.get("Default"))}
        expected = (
            set()
            if stack_id == "Serving" and config.serving.backend == "sagemaker"
            else {ami.release_parameter(config.ami_release)}
        )
        assert amis == expected, stack_id
    floating = {
        stack_id: sorted(floating_parameters(built.template(env, stack_id)).values())
        for stack_id in ("Network", "Training", "Serving", "Monitoring")
    }
    # The dev NAT instance (aws-cdk-lib's NatProvider.instance_v2) boots the latest Amazon Linux
    # 2023, which AWS publishes under no per-release parameter; a new one replaces that instance only.
    nat = (
        ["/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64"]
        if config.network.nat_instance_type
        else []
    )
    assert floating == {"Network": nat, "Training": [], "Serving": [], "Monitoring": []}


# -- the VPC default security group (docs/lifecycle.md) ----------------------------------------------

# Every resource type in the templates that puts a network interface into a subnet, and where it names
# its security groups. A type with subnets that is missing here fails the test below: add it.
_GROUPS: dict[str, tuple[str, ...]] = {
    "AWS::EC2::Instance": ("SecurityGroupIds", "NetworkInterfaces"),
    "AWS::EC2::LaunchTemplate": (
        "LaunchTemplateData.SecurityGroupIds",
        "LaunchTemplateData.NetworkInterfaces",
    ),
    "AWS::AutoScaling::AutoScalingGroup": ("LaunchTemplate",),
    "AWS::Batch::ComputeEnvironment": (
        "ComputeResources.SecurityGroupIds",
        "ComputeResources.LaunchTemplate",
    ),
    "AWS::EFS::MountTarget": ("SecurityGroups",),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": ("SecurityGroups",),
    "AWS::EC2::VPCEndpoint": ("SecurityGroupIds",),
    "AWS::Lambda::Function": ("VpcConfig.SecurityGroupIds",),
    "AWS::SageMaker::Model": ("VpcConfig.SecurityGroupIds",),
}
# Subnet-taking types that place no interface of their own (custom resources only pass values on).
_NO_INTERFACE = {"AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::NatGateway", "AWS::EC2::Route",
                 "AWS::EC2::RouteTable", "AWS::EC2::Subnet", "AWS::EC2::FlowLog"}  # fmt: skip
_SUBNET_KEYS = ("SubnetId", "SubnetIds", "Subnets", "VPCZoneIdentifier", "SubnetMappings")


def _at(properties: dict[str, object], dotted: str) -> object:
    node: object = properties
    for key in dotted.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _launch_template_groups(template: dict[str, object], reference: object) -> bool:
    from cdk_neuron.lifecycle.template import references, resources

    for logical, _ in references(reference):
        data = resources(template)[logical].get("Properties", {}).get("LaunchTemplateData", {})
        interfaces = data.get("NetworkInterfaces") or []
        return bool(data.get("SecurityGroupIds")) or (
            bool(interfaces) and all(i.get("Groups") for i in interfaces)
        )
    return False


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_only_the_batch_node_containers_use_the_vpc_default_security_group(
    built: SynthesizedApp, env: str
) -> None:
    """Anything launched without a security group joins the VPC's default group, which the EFA Batch
    cluster opens for its node containers: nothing in the stacks may get there by omission, and the
    rules on it are exactly the documented ones."""
    from cdk_neuron.lifecycle.template import outputs, references, resources, stack_outputs

    templates = built.environment(env)
    network = built.stack(env, "Network").stack_name
    vpcs = {k for k, r in resources(templates[network]).items() if r["Type"] == "AWS::EC2::VPC"}
    default_outputs = {
        name for name, value in outputs(templates[network]).items()
        if any(logical in vpcs and attribute == "DefaultSecurityGroup" for logical, attribute in references(value))
    }  # fmt: skip

    def is_default(value: object) -> bool:
        return any(stack == network and name in default_outputs for stack, name in stack_outputs(value))

    rules = set()
    checked = set()
    for stack, template in templates.items():
        for logical, resource in resources(template).items():
            kind, props = resource["Type"], resource.get("Properties", {})
            if kind in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
                if is_default(props.get("GroupId")):
                    peer = (
                        "itself" if is_default(props.get("SourceSecurityGroupId") or props.get("DestinationSecurityGroupId"))
                        else props.get("CidrIp") or "another group"
                    )  # fmt: skip
                    rules.add(
                        (
                            kind.removeprefix("AWS::EC2::SecurityGroup"),
                            props["IpProtocol"],
                            props["FromPort"],
                            props["ToPort"],
                            peer,
                        )
                    )
                continue
            if (
                kind in _NO_INTERFACE
                or kind.startswith("Custom::")
                or (not any(k in props for k in _SUBNET_KEYS) and kind not in _GROUPS)
            ):
                continue
            assert kind in _GROUPS, f"{stack}/{logical}: {kind} takes subnets; say where it names its groups"
            if kind == "AWS::Lambda::Function" and "VpcConfig" not in props:
                continue
            if kind == "AWS::EC2::VPCEndpoint" and props.get("VpcEndpointType") != "Interface":
                continue
            named = [_at(props, path) for path in _GROUPS[kind]]
            if kind == "AWS::AutoScaling::AutoScalingGroup":
                assert _launch_template_groups(template, named[0]), f"{stack}/{logical}"
            elif kind == "AWS::Batch::ComputeEnvironment":
                assert named[0] or _launch_template_groups(template, named[1]), f"{stack}/{logical}"
            elif kind == "AWS::EC2::Instance" and not named[0]:
                assert named[1] and all(i.get("GroupSet") for i in named[1]), f"{stack}/{logical}"
            elif kind != "AWS::EC2::LaunchTemplate":
                assert named[0], f"{stack}/{logical} names no security group"
            assert not is_default(named), f"{stack}/{logical} names the default group"
            checked.add(kind)

    assert {"AWS::Batch::ComputeEnvironment", "AWS::EFS::MountTarget", "AWS::EC2::LaunchTemplate"} <= checked
    config = ENVIRONMENTS[env].training
    efa_batch = config.engine == "batch" and config.max_nodes > 1
    assert rules == (
        {
            ("Ingress", "tcp", 0, 65535, "itself"),
            ("Egress", "tcp", 0, 65535, "itself"),
            ("Egress", "tcp", 443, 443, "0.0.0.0/0"),
            ("Egress", "tcp", 2049, 2049, "another group"),
        }
        if efa_batch
        else set()
    )
