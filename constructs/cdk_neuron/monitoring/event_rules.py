"""EventBridge rules: Batch job failures and checkpoint backup failures page; Batch job states count.

AWS Batch publishes no job-state metrics to CloudWatch, so every ``Batch Job State Change`` event of
the training queue is written to a log group and a metric filter counts transitions by ``Status``
(:data:`~cdk_neuron.metrics.names.BATCH_JOB_STATE_CHANGES`). The log doubles as the history of
every job's states with its ``statusReason``. Writing to it takes one CloudWatch Logs resource policy
(an account allows 10 per Region), created here as plain CloudFormation rather than through the
custom-resource Lambda that ``aws_events_targets.CloudWatchLogGroup`` deploys.
"""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.interfaces import aws_events as events_refs
from constructs import Construct

from cdk_neuron import _cdk_values
from cdk_neuron.kms_actions import DATA_KEY_ACTIONS
from cdk_neuron.metrics.names import BATCH_JOB_STATE_CHANGES, JOB_QUEUE_DIMENSION, STATUS_DIMENSION

BATCH_JOB_STATE_CHANGE = "Batch Job State Change"
BACKUP_JOB_STATE_CHANGE = "Backup Job State Change"
BACKUP_FAILED_STATES = ("FAILED", "ABORTED", "EXPIRED")
JOB_STATE_LOG_RETENTION = logs.RetentionDays.ONE_YEAR


def _field(path: str) -> str:
    return events.EventField.from_path(path)


def batch_job_failed_rule(
    scope: Construct, id: str, *, environment: str, job_queue_arn: str, topic: sns.ITopic
) -> events.Rule:
    """Every job of the queue that ends FAILED, with its reason, to the alarm topic."""
    rule = events.Rule(
        scope,
        id,
        description=f"cdk-neuron {environment}: a training job failed",
        event_pattern=events.EventPattern(
            source=["aws.batch"],
            detail_type=[BATCH_JOB_STATE_CHANGE],
            detail={"status": ["FAILED"], "jobQueue": [job_queue_arn]},
        ),
    )
    message = (
        f"cdk-neuron {environment}: Batch job {_field('$.detail.jobName')} ({_field('$.detail.jobId')}) "
        f"FAILED: {_field('$.detail.statusReason')}"
    )
    rule.add_target(targets.SnsTopic(topic, message=events.RuleTargetInput.from_text(message)))
    return rule


def backup_failed_rule(
    scope: Construct, id: str, *, environment: str, backup_vault_name: str, topic: sns.ITopic
) -> events.Rule:
    """Backup jobs of the checkpoint vault that fail, abort or expire, to the alarm topic."""
    rule = events.Rule(
        scope,
        id,
        description=f"cdk-neuron {environment}: a checkpoint backup failed",
        event_pattern=events.EventPattern(
            source=["aws.backup"],
            detail_type=[BACKUP_JOB_STATE_CHANGE],
            detail={"state": list(BACKUP_FAILED_STATES), "backupVaultName": [backup_vault_name]},
        ),
    )
    message = (
        f"cdk-neuron {environment}: backup of {_field('$.detail.resourceArn')} into vault "
        f"{_field('$.detail.backupVaultName')} is {_field('$.detail.state')}: {_field('$.detail.statusMessage')}"
    )
    rule.add_target(targets.SnsTopic(topic, message=events.RuleTargetInput.from_text(message)))
    return rule


@jsii.implements(events.IRuleTarget)
class _LogGroupTarget:
    """Deliver events to a log group whose resource policy is managed by the caller."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._log_group = log_group

    def bind(self, rule: events_refs.IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        del rule, id  # the target is the same for every rule
        return events.RuleTargetConfig(arn=self._log_group.log_group_arn)


class BatchJobStateLog(Construct):
    """Every job-state event of one Batch queue, logged and counted by ``Status``.

    Attributes: ``log_group``, ``rule``, ``metric_filter``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        environment: str,
        namespace: str,
        job_queue_arn: str,
        key: kms.IKey,
        removal_policy: cdk.RemovalPolicy,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        # Under /aws/events/, the prefix EventBridge uses for its log-group targets.
        name = f"/aws/events/cdk-neuron/{environment}/batch-job-states"
        _allow_log_encryption(key, name)
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            log_group_name=name,
            encryption_key=key,
            retention=JOB_STATE_LOG_RETENTION,
            # A fixed name: kept, it must not survive a rolled-back first create (the retry would fail).
            removal_policy=_cdk_values.retained(removal_policy),
        )
        policy = logs.CfnResourcePolicy(
            self,
            "DeliveryPolicy",
            policy_name=f"cdk-neuron-{environment}-batch-job-states",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "EventBridgeDeliversBatchJobStates",
                            "Effect": "Allow",
                            "Principal": {"Service": ["events.amazonaws.com", "delivery.logs.amazonaws.com"]},
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": f"{self.log_group.log_group_arn}",
                        }
                    ],
                }
            ),
        )
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"cdk-neuron {environment}: log every training job state change",
            event_pattern=events.EventPattern(
                source=["aws.batch"],
                detail_type=[BATCH_JOB_STATE_CHANGE],
                detail={"jobQueue": [job_queue_arn]},
            ),
        )
        self.rule.add_target(_LogGroupTarget(self.log_group))
        self.rule.node.add_dependency(policy)
        self.metric_filter = self.log_group.add_metric_filter(
            "StateChanges",
            filter_pattern=logs.FilterPattern.exists("$.detail.status"),
            metric_namespace=namespace,
            metric_name=BATCH_JOB_STATE_CHANGES,
            metric_value="1",
            dimensions={STATUS_DIMENSION: "$.detail.status", JOB_QUEUE_DIMENSION: "$.detail.jobQueue"},
        )


def _allow_log_encryption(key: kms.IKey, log_group_name: str) -> None:
    stack = cdk.Stack.of(key)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchLogsToEncryptTheJobStateLog",
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=list(DATA_KEY_ACTIONS),
            resources=["*"],
            conditions={
                "ArnEquals": {
                    "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=log_group_name,
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                }
            },
        )
    )


__all__ = [
    "BACKUP_FAILED_STATES",
    "BatchJobStateLog",
    "backup_failed_rule",
    "batch_job_failed_rule",
]
