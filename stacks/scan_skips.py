"""checkov skips for what the app deliberately accepts: one resource, one check, one reason each.

checkov reads ``Metadata.checkov.skip`` on a resource (``make scan``). A skip is placed here, in the
stack that made the decision, on the exact CloudFormation resource, rather than in a global skip
file that would also hide the next resource to fail the same check.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import IConstruct


def skip_checkov(construct: IConstruct, check_id: str, reason: str) -> None:
    """Add a checkov skip to the CloudFormation resource behind ``construct`` (an L2 or an L1)."""
    resource = construct if isinstance(construct, cdk.CfnResource) else construct.node.default_child
    if not isinstance(resource, cdk.CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to annotate")
    metadata: dict[str, Any] = resource.get_metadata("checkov") or {"skip": []}
    if any(skip["id"] == check_id for skip in metadata["skip"]):
        return
    metadata["skip"] = [*metadata["skip"], {"id": check_id, "comment": reason}]
    resource.add_metadata("checkov", metadata)
