"""CloudFormation custom resource: the capacity a replacement Auto Scaling group must start with.

With ``AutoScalingReplacingUpdate``, CloudFormation builds a new group and deletes the old one once
the new one is created (UpdatePolicy attribute, CloudFormation template reference). A group
template without ``DesiredCapacity`` starts at ``MinSize``: a fleet that auto scaling grew to 8
instances would serve with its minimum after the swap. This resource reads the desired capacity of
the running group(s) of the fleet (found by the ``cdk-neuron:fleet`` tag) when its properties
change, which they do whenever the launch template or the subnets change, exactly when a
replacement happens, and returns it as ``DesiredCapacity`` for the new group, clamped to
``[MinSize, MaxSize]``. Properties: ``TagKey``, ``TagValue``, ``MinSize``, ``MaxSize`` (and any
others that only make it run again). Delete does nothing.
"""

from __future__ import annotations

from typing import Any

import boto3
import cfn_response  # type: ignore[import-not-found]  # beside this file in the function's code

LOG = cfn_response.LOG
_DELETING = "Delete in progress"


def running_desired(autoscaling: Any, tag_key: str, tag_value: str) -> int | None:
    """The largest desired capacity among the fleet's groups that are not being deleted."""
    found: list[int] = []
    pages = autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
        Filters=[{"Name": f"tag:{tag_key}", "Values": [tag_value]}]
    )
    for page in pages:
        for group in page.get("AutoScalingGroups", []):
            if group.get("Status") != _DELETING:
                found.append(int(group["DesiredCapacity"]))
    return max(found) if found else None


def desired_capacity(properties: dict[str, Any], autoscaling: Any) -> int:
    low, high = int(properties["MinSize"]), int(properties["MaxSize"])
    running = running_desired(autoscaling, properties["TagKey"], properties["TagValue"])
    return low if running is None else min(max(running, low), high)


def handler(event: dict[str, Any], context: Any, autoscaling: Any = None) -> None:
    client = autoscaling or boto3.client("autoscaling")
    properties = event["ResourceProperties"]

    def read(_: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        desired = desired_capacity(properties, client)
        LOG.info("fleet %s starts a new group at %d", properties["TagValue"], desired)
        return f"capacity:{properties['TagValue']}", {"DesiredCapacity": str(desired)}

    def nothing(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return event["PhysicalResourceId"], {}

    cfn_response.serve(event, create_or_update=read, delete=nothing)
