"""Which engine runs the cluster's nodes: AWS Batch multi-node parallel, or a self-managed Auto Scaling group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import aws_cdk as cdk
from aws_cdk import aws_sns as sns

from cdk_neuron.errors import NeuronConfigError

EngineKind = Literal["batch", "auto-scaling-group"]

# AWS Batch's limit for UpdatePolicy.JobExecutionTimeoutMinutes.
_MAX_UPDATE_TIMEOUT_MINUTES = 360
_DEFAULT_UPDATE_TIMEOUT = cdk.Duration.minutes(_MAX_UPDATE_TIMEOUT_MINUTES)


@dataclass(frozen=True)
class Engine:
    """The engine of a :class:`~cdk_neuron.training.TrainingCluster`. Build one with the class methods.

    - :meth:`batch` (the default): AWS Batch multi-node parallel. A managed EC2 compute environment
      that scales from zero, a job queue and a multi-node job definition; submit jobs with
      ``aws batch submit-job``.
    - :meth:`auto_scaling_group`: a self-managed node group (an EC2 Auto Scaling group in the
      placement group) for teams that run Ray, Slurm or plain torchrun themselves.
    """

    kind: EngineKind = "batch"
    update_timeout: cdk.Duration = _DEFAULT_UPDATE_TIMEOUT
    terminate_on_update: bool = False
    desired_capacity: int | None = None
    notification_topic: sns.ITopic | None = None

    @classmethod
    def batch(
        cls,
        *,
        update_timeout: cdk.Duration = _DEFAULT_UPDATE_TIMEOUT,
        terminate_on_update: bool = False,
    ) -> Engine:
        """AWS Batch multi-node parallel.

        Args:
            update_timeout: how long running jobs may keep running when a deployment changes the
                compute environment's infrastructure (a new launch template version, e.g. a new AMI
                published under the SSM parameter). Default 360 minutes, Batch's maximum: the gentlest
                setting for long training runs, which should checkpoint and can resume.
            terminate_on_update: terminate running jobs at once on such an update instead. Default False.
        """
        minutes = _minutes("update_timeout", update_timeout)
        if not 1 <= minutes <= _MAX_UPDATE_TIMEOUT_MINUTES:
            raise NeuronConfigError(
                "update_timeout",
                update_timeout.to_human_string(),
                f"AWS Batch accepts 1 to {_MAX_UPDATE_TIMEOUT_MINUTES} minutes",
            )
        if not isinstance(terminate_on_update, bool):
            raise NeuronConfigError("terminate_on_update", terminate_on_update, "use True or False")
        return cls(kind="batch", update_timeout=update_timeout, terminate_on_update=terminate_on_update)

    @classmethod
    def auto_scaling_group(
        cls, *, desired_capacity: int | None = None, notification_topic: sns.ITopic | None = None
    ) -> Engine:
        """A self-managed Auto Scaling group of training nodes (min 0, max ``max_nodes``).

        Args:
            desired_capacity: nodes to run. Default None: the group starts at 0 (its minimum) and
                ``DesiredCapacity`` stays out of the template, so a size set later by your scheduler
                or operators is not reset by the next deployment. Give a number to pin the size on
                every deployment.
            notification_topic: an SNS topic that receives the group's launch, termination and
                failure notifications. Default None (none are sent; the group's activity history
                still records them).
        """
        if desired_capacity is not None and (
            isinstance(desired_capacity, bool)
            or not isinstance(desired_capacity, int)
            or desired_capacity < 0
        ):
            raise NeuronConfigError("desired_capacity", desired_capacity, "use a whole number >= 0, or None")
        return cls(
            kind="auto-scaling-group",
            desired_capacity=desired_capacity,
            notification_topic=notification_topic,
        )

    @property
    def is_batch(self) -> bool:
        return self.kind == "batch"


def _minutes(field: str, value: object) -> float:
    if not isinstance(value, cdk.Duration):
        raise NeuronConfigError(field, value, "use aws_cdk.Duration, e.g. Duration.minutes(30)")
    seconds = value.to_seconds(integral=False)
    if cdk.Token.is_unresolved(seconds) or seconds % 60:
        raise NeuronConfigError(field, value.to_human_string(), "use a whole number of minutes")
    return seconds / 60


__all__ = ["Engine", "EngineKind"]
