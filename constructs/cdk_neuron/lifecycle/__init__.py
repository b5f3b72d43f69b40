"""Lifecycle: what a deployment will do, and whether a stack survives retry and teardown.

Plain Python over synthesized templates (no aws_cdk, no cfn-lint, no AWS calls), so the test suite,
your own CI and ``cdk-neuron impact`` share it:

- :func:`impact`: the templates before and after a change -> for every resource of every stack,
  unchanged, updated, replaced or deleted, what restarts (instances, jobs, an endpoint) and which
  data is at risk. Replacement comes from the CloudFormation resource schemas (:mod:`.schema`) and
  the services' own update rules (:mod:`.rules`).
- :func:`retry_findings`: what a rolled-back first create keeps under a fixed name.
- :func:`teardown_findings` / :func:`key_findings`: what ``cdk destroy`` fails on or leaves behind,
  and keys deleted under data that is kept.
"""

from __future__ import annotations

from cdk_neuron.lifecycle.checks import (
    EMPTIES_METADATA,
    Finding,
    key_findings,
    lifecycle_findings,
    retry_findings,
    teardown_findings,
)
from cdk_neuron.lifecycle.impact import Change, ResourceImpact, StackImpact, impact, stateful_losses

__all__ = [
    "EMPTIES_METADATA",
    "Change",
    "Finding",
    "ResourceImpact",
    "StackImpact",
    "impact",
    "key_findings",
    "lifecycle_findings",
    "retry_findings",
    "stateful_losses",
    "teardown_findings",
]
