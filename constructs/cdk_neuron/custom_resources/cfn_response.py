"""The CloudFormation custom resource protocol, shared by this directory's Lambda handlers.

CloudFormation sends a Create, Update or Delete request and waits for the function to PUT a result
to the request's pre-signed ``ResponseURL`` (CloudFormation User Guide, "Custom resources",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/template-custom-resources.html, read
2026-12-01). :func:`serve` runs one request and always answers, so a failure is reported as the
resource's status instead of a one-hour CloudFormation timeout.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Callable
from typing import Any

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

Work = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]
"""(event) -> (physical resource id, data for Fn::GetAtt)."""


def respond(
    event: dict[str, Any], status: str, physical_id: str, reason: str = "", data: dict[str, Any] | None = None
) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:1000] or "see the function's CloudWatch Logs",
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data or {},
        }
    ).encode("utf-8")
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30):
        pass


def serve(event: dict[str, Any], *, create_or_update: Work, delete: Work) -> None:
    """Run the request's work and report SUCCESS with its result, or FAILED with the error."""
    kind = event["RequestType"]
    physical_id = event.get("PhysicalResourceId") or f"failed-{event['RequestId']}"
    try:
        physical_id, data = (delete if kind == "Delete" else create_or_update)(event)
    except Exception as error:
        LOG.exception("%s failed", kind)
        respond(event, "FAILED", physical_id, f"{type(error).__name__}: {error}")
        return
    respond(event, "SUCCESS", physical_id, data=data)
