"""EventBridge target: disable the training compute environment whose nodes keep failing to boot.

Invoked by the rule on the cluster's boot-failure alarm ("CloudWatch Alarm State Change" events,
detail ``state.value`` ALARM; ``cdk_neuron.training.boot_failures``). Sets the compute environment
named by ``COMPUTE_ENVIRONMENT`` DISABLED, so AWS Batch stops launching nodes that fail the same way;
running jobs keep running. Any other state is logged and ignored. Runs in AWS Lambda (boto3 included).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import boto3

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)


def handler(event: dict[str, Any], context: Any, batch: Any = None) -> dict[str, Any]:
    compute_environment = os.environ["COMPUTE_ENVIRONMENT"]
    detail = event.get("detail") or {}
    state = (detail.get("state") or {}).get("value")
    alarm = detail.get("alarmName", "the boot-failure alarm")
    if state != "ALARM":
        LOG.info("%s is %s: nothing to do", alarm, state)
        return {"disabled": False}
    client = batch or boto3.client("batch")
    client.update_compute_environment(computeEnvironment=compute_environment, state="DISABLED")
    LOG.warning(
        "%s: disabled %s (%s); enable it again once the nodes boot: aws batch update-compute-environment "
        "--compute-environment %s --state ENABLED",
        alarm,
        compute_environment,
        (detail.get("state") or {}).get("reason", ""),
        compute_environment,
    )
    return {"disabled": True}
