"""Subnet-selection helpers shared by the constructs."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2


def select_subnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection) -> ec2.SelectedSubnets:
    """``vpc.select_subnets`` for a SubnetSelection struct (the Python binding takes keywords only)."""
    return vpc.select_subnets(
        availability_zones=selection.availability_zones,
        one_per_az=selection.one_per_az,
        subnet_filters=selection.subnet_filters,
        subnet_group_name=selection.subnet_group_name,
        subnets=selection.subnets,
        subnet_type=selection.subnet_type,
    )


def describe_selection(selection: ec2.SubnetSelection) -> str:
    """A readable rendering of a selection for error messages (the struct's repr is jsii noise)."""
    parts = []
    if selection.subnet_type is not None:
        parts.append(f"subnet_type={selection.subnet_type.name}")
    if selection.subnet_group_name is not None:
        parts.append(f"subnet_group_name={selection.subnet_group_name!r}")
    if selection.availability_zones is not None:
        parts.append(f"availability_zones={list(selection.availability_zones)}")
    if selection.subnets is not None:
        parts.append(f"subnets=<{len(selection.subnets)} subnets>")
    return f"SubnetSelection({', '.join(parts)})"
