"""Does a synthesized VPC route each destination a node reaches? Read from the template, not the config.

A node may run in any private subnet, so a destination counts as routed only when every private
route table carries it: a default route to a NAT (gateway or instance), the S3 gateway endpoint
for S3, or an interface endpoint of its service (private DNS makes that VPC-wide).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdk_neuron.node_programs.reach import Destination

PRIVATE_SUBNET_TYPES = {"Private", "Isolated"}


def _resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _props(resource: dict[str, Any]) -> dict[str, Any]:
    return resource.get("Properties", {})  # type: ignore[no-any-return]


def _tag(resource: dict[str, Any], key: str) -> str | None:
    return next((t["Value"] for t in _props(resource).get("Tags", []) if t["Key"] == key), None)


def service_of(endpoint: dict[str, Any]) -> str:
    """'ecr.api' from the endpoint's ServiceName (com.amazonaws.<region>.ecr.api, maybe a Join)."""
    name = _props(endpoint)["ServiceName"]
    if isinstance(name, dict):
        name = "".join(part if isinstance(part, str) else "" for part in name["Fn::Join"][1])
    return str(name).split(".", 3)[3]


@dataclass(frozen=True)
class Routes:
    private_tables: frozenset[str]
    nat_tables: frozenset[str]
    s3_gateway_tables: frozenset[str]
    interface_services: frozenset[str]

    def carries(self, destination: Destination) -> bool:
        if self.private_tables <= self.nat_tables:
            return True
        if destination.route == "s3-gateway":
            return self.private_tables <= self.s3_gateway_tables
        if destination.route == "interface-endpoint":
            return destination.service in self.interface_services
        return False


def routes_of(template: dict[str, Any]) -> Routes:
    subnets = {
        name
        for name, subnet in _resources(template, "AWS::EC2::Subnet").items()
        if _tag(subnet, "aws-cdk:subnet-type") in PRIVATE_SUBNET_TYPES
    }
    private_tables = frozenset(
        _props(a)["RouteTableId"]["Ref"]
        for a in _resources(template, "AWS::EC2::SubnetRouteTableAssociation").values()
        if _props(a)["SubnetId"]["Ref"] in subnets
    )
    nat_tables = frozenset(
        _props(r)["RouteTableId"]["Ref"]
        for r in _resources(template, "AWS::EC2::Route").values()
        if _props(r).get("DestinationCidrBlock") == "0.0.0.0/0"
        and ("NatGatewayId" in _props(r) or "InstanceId" in _props(r))
    )
    endpoints = _resources(template, "AWS::EC2::VPCEndpoint").values()
    s3_tables = frozenset(
        table["Ref"]
        for e in endpoints
        if _props(e).get("VpcEndpointType") == "Gateway" and service_of(e) == "s3"
        for table in _props(e).get("RouteTableIds", [])
    )
    interface = frozenset(
        service_of(e)
        for e in endpoints
        if _props(e).get("VpcEndpointType") == "Interface" and _props(e).get("PrivateDnsEnabled")
    )
    assert private_tables, "no private route table found"
    return Routes(private_tables, nat_tables, s3_tables, interface)


def unrouted(template: dict[str, Any], destinations: Iterable[Destination]) -> list[Destination]:
    routes = routes_of(template)
    return [d for d in destinations if not routes.carries(d)]
