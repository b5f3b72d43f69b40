"""A deployed stack's outputs and resources, as the job commands read them
(``cloudformation:DescribeStacks``, ``cloudformation:DescribeStackResource``).

Below every command module: ``submit``, the daily loop, ``compile`` and the HyperPod commands all
find what they act on through these two calls.
"""

from __future__ import annotations

from typing import Any

from cdk_neuron.cli.aws import AwsLookupError


def stack_outputs(cloudformation: Any, stack_name: str) -> dict[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except Exception as error:
        if "does not exist" in str(error):
            raise AwsLookupError(
                f"stack {stack_name} does not exist in this account and Region: deploy the training stack "
                "first, or pass --stack NAME"
            ) from None
        raise
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def stack_resource_arn(cloudformation: Any, stack_name: str, logical_id: str) -> str:
    """The physical id of a stack's resource: the ARN for ``AWS::Batch::JobQueue`` and ``JobDefinition``."""
    try:
        detail = cloudformation.describe_stack_resource(StackName=stack_name, LogicalResourceId=logical_id)
    except Exception as error:
        if "does not exist" in str(error):
            raise AwsLookupError(
                f"stack {stack_name} has no resource {logical_id} in this account and Region: deploy the "
                "training stack first, or pass --stack NAME"
            ) from None
        raise
    physical = detail["StackResourceDetail"].get("PhysicalResourceId")
    if not physical:
        raise AwsLookupError(
            f"{logical_id} in stack {stack_name} has no physical id yet "
            f"({detail['StackResourceDetail'].get('ResourceStatus', '?')}): wait for the deploy to finish"
        )
    return str(physical)


__all__ = ["stack_outputs", "stack_resource_arn"]
