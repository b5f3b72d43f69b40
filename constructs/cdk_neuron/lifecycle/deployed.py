"""What is deployed now: each stack's status, termination protection and template (CloudFormation).

The caller passes a CloudFormation client (boto3, moto or Stubber): this module imports no AWS SDK.

- :func:`deployed_stack`: ``DescribeStacks`` and ``GetTemplate`` (the template as submitted,
  ``TemplateStage=Original``) of one stack, or "not there".
- :func:`physical_id`: ``DescribeStackResource``, the deployed resource behind a logical id (for the
  live checks of :mod:`cdk_neuron.lifecycle.live`).
- :func:`unblock`: a first create that failed leaves the stack ``ROLLBACK_COMPLETE``, holding no
  resource. The CDK CLI deletes such a stack before it creates it again ("Found existing stack ...
  that had previously failed creation. Deleting it before attempting to re-create it",
  aws/aws-cdk-cli packages/@aws-cdk/toolkit-lib/lib/api/deployments/deploy-stack.ts; the same code
  is in aws-cdk 2.1148.1's lib/index.js), but it turns termination protection on after creating
  the change set and before executing it, so a protected stack whose first create failed cannot be
  deleted ("Stack ... cannot be deleted while TerminationProtection is enabled") and the retry stops
  there. Turning protection off on a ``ROLLBACK_COMPLETE`` stack loses nothing: the next ``cdk
  deploy`` deletes the empty stack, creates it, and turns protection on again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FAILED_CREATE = "ROLLBACK_COMPLETE"
"""A first create that rolled back completely: the stack holds no resource."""
ROLLBACK_FAILED = "ROLLBACK_FAILED"
"""A first create whose rollback failed: some resources may remain; the CDK CLI still deletes it."""
REVIEW_IN_PROGRESS = "REVIEW_IN_PROGRESS"
"""A stack that only a change set of type CREATE made: it holds no resource, and the CDK CLI treats it as
not existing (``stack.exists && stack.stackStatus.name !== "REVIEW_IN_PROGRESS"``, deploy-stack.ts;
aws-cdk 2.1148.1 lib/index.js). Its "template" is an unexecuted change set's, not what is deployed."""


@dataclass(frozen=True)
class DeployedStack:
    name: str
    status: str | None
    """The stack's status, or None when there is no such stack."""
    termination_protection: bool = False
    template: dict[str, Any] | None = None
    """The deployed template; None when there is none to compare with (no stack, or a failed create)."""

    @property
    def blocks_retry(self) -> bool:
        """Its first create failed and termination protection keeps the CDK CLI from deleting it."""
        return self.termination_protection and self.status in (FAILED_CREATE, ROLLBACK_FAILED)


def _missing(error: Exception) -> bool:
    response = getattr(error, "response", None) or {}
    found = response.get("Error", {})
    return found.get("Code") == "ValidationError" and "does not exist" in str(found.get("Message", ""))


def deployed_stack(cloudformation: Any, name: str) -> DeployedStack:
    """The stack ``name`` as CloudFormation has it."""
    try:
        (stack,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except Exception as error:
        if _missing(error):
            return DeployedStack(name, None)
        raise
    status = str(stack["StackStatus"])
    protected = bool(stack.get("EnableTerminationProtection", False))
    if status in (FAILED_CREATE, ROLLBACK_FAILED, REVIEW_IN_PROGRESS) or status.startswith("DELETE_"):
        return DeployedStack(name, status, protected)
    body = cloudformation.get_template(StackName=name, TemplateStage="Original")["TemplateBody"]
    template = json.loads(body) if isinstance(body, str) else dict(body)
    return DeployedStack(name, status, protected, template)


def physical_id(cloudformation: Any, stack: str, logical_id: str) -> str | None:
    """The physical id of ``logical_id`` in the deployed ``stack`` (``DescribeStackResource``); None when
    the stack has no such resource yet."""
    try:
        found = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=logical_id)
    except Exception as error:
        response = getattr(error, "response", None) or {}
        if response.get("Error", {}).get("Code") == "ValidationError":
            return None
        raise
    value = found.get("StackResourceDetail", {}).get("PhysicalResourceId")
    return str(value) if value else None


def unblock(cloudformation: Any, stack: DeployedStack) -> bool:
    """Turn termination protection off on a stack whose first create rolled back (it holds nothing),
    so ``cdk deploy`` can delete and create it again. Returns whether it did.

    A stack whose rollback *failed* may still hold resources: it is left to you.
    """
    if not (stack.termination_protection and stack.status == FAILED_CREATE):
        return False
    cloudformation.update_termination_protection(EnableTerminationProtection=False, StackName=stack.name)
    return True


__all__ = [
    "FAILED_CREATE",
    "REVIEW_IN_PROGRESS",
    "ROLLBACK_FAILED",
    "DeployedStack",
    "deployed_stack",
    "physical_id",
    "unblock",
]
