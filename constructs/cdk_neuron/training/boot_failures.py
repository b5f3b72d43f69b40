"""A bound on a training cluster's boot-failure loop, and the metric that shows the churn.

A node that cannot boot (the bundle or the EFA installer unreachable, a Neuron device missing, the
EFA driver not loading) powers off, and the launch template terminates it on that shutdown, so AWS
Batch or the Auto Scaling group launches another: a deterministic failure repeats forever, billing
every launch, while the job stays RUNNABLE. So:

- every failed boot is counted: ``cdk_neuron_give_up`` (``node_programs/files/bootstrap.sh``) puts one
  ``BootFailures`` data point (namespace :data:`NAMESPACE`, dimension ``Cluster``) before it powers
  the node off, with the instance role's ``cloudwatch:PutMetricData`` confined to that namespace;
- an alarm (``TrainingClusterBase.boot_failure_alarm``) goes off at
  :data:`cdk_neuron.timeouts.BOOT_FAILURE_LIMIT` failures within
  :data:`cdk_neuron.timeouts.BOOT_FAILURE_WINDOW`, and stops the launches: an Auto Scaling cluster's
  alarm sets the group's capacity to 0 (a step scaling policy of ExactCapacity 0, "Step and simple
  scaling policies", Amazon EC2 Auto Scaling User Guide); a Batch cluster's alarm state change
  (EventBridge "CloudWatch Alarm State Change", "Alarm events and EventBridge", Amazon CloudWatch User
  Guide) invokes a function that sets the compute environment DISABLED, which "doesn't scale out"
  (``state``, "Compute environment parameters", AWS Batch User Guide). Running jobs keep running;
  RUNNABLE ones wait. After fixing the cause, enable it again: ``aws batch
  update-compute-environment --compute-environment <arn> --state ENABLED`` (or set the group's
  capacity);
- ``NeuronMonitoring`` pages on the first failed boot (``metric_boot_failures``).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_batch as batch
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_neuron import timeouts
from cdk_neuron._custom_resource import handler_function
from cdk_neuron._nag import acknowledge
from cdk_neuron.iam_statements import PUT_METRIC_DATA_REASON, put_metric_data

NAMESPACE = "CdkNeuron/Training"
"""Where training nodes record their failed boots (the instance role may write nowhere else)."""
METRIC_NAME = "BootFailures"
CLUSTER_DIMENSION = "Cluster"
SETTINGS_FILE = "boot-failure.env"
"""The settings ``cdk_neuron_give_up`` reads to record a failed boot."""


def settings(cluster_id: str) -> dict[str, str]:
    return {
        "BOOT_FAILURE_NAMESPACE": NAMESPACE,
        "BOOT_FAILURE_METRIC": METRIC_NAME,
        "BOOT_FAILURE_DIMENSIONS": f"{CLUSTER_DIMENSION}={cluster_id}",
    }


def metric(cluster_id: str, period: cdk.Duration) -> cw.Metric:
    return cw.Metric(
        namespace=NAMESPACE,
        metric_name=METRIC_NAME,
        dimensions_map={CLUSTER_DIMENSION: cluster_id},
        statistic="Sum",
        period=period,
    )


def record_policy(scope: Construct, role: iam.IRole) -> iam.ManagedPolicy:
    policy = iam.ManagedPolicy(
        scope,
        "BootFailurePolicy",
        description=f"cdk-neuron training nodes: record a failed boot in the {NAMESPACE} namespace only",
        roles=[role],
        statements=[put_metric_data(NAMESPACE, sid="RecordBootFailures")],
    )
    acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", f"{PUT_METRIC_DATA_REASON} ({NAMESPACE})")
    return policy


def limit_alarm(scope: Construct, cluster_id: str) -> cw.Alarm:
    return cw.Alarm(
        scope,
        "BootFailureLimit",
        # Named like every alarm of a stack (unique per account and Region, NeuronMonitoring's rule).
        alarm_name=f"{cdk.Stack.of(scope).stack_name}-{scope.node.id}-BootFailureLimit-{cluster_id[:8]}",
        alarm_description=(
            f"{timeouts.BOOT_FAILURE_LIMIT} training nodes failed their boot within "
            f"{timeouts.BOOT_FAILURE_WINDOW // 60} minutes: the cluster stops launching nodes until the "
            "cause is fixed (see the nodes' console output; cdk_neuron.training.boot_failures)"
        ),
        metric=metric(cluster_id, cdk.Duration.seconds(timeouts.BOOT_FAILURE_WINDOW)),
        threshold=timeouts.BOOT_FAILURE_LIMIT,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )


def stop_group(scope: Construct, alarm: cw.Alarm, group: autoscaling.AutoScalingGroup) -> None:
    """The alarm sets the group's capacity to 0 (ExactCapacity 0 for any breach)."""
    action = autoscaling.StepScalingAction(
        scope,
        "StopOnBootFailures",
        auto_scaling_group=group,
        adjustment_type=autoscaling.AdjustmentType.EXACT_CAPACITY,
    )
    action.add_adjustment(adjustment=0, lower_bound=0)
    alarm.add_alarm_action(cw_actions.AutoScalingAction(action))


def disable_compute_environment(
    scope: Construct,
    alarm: cw.Alarm,
    compute_environment: batch.ManagedEc2EcsComputeEnvironment,
    *,
    kms_key: kms.IKey,
    removal_policy: cdk.RemovalPolicy,
) -> events.Rule:
    """On the alarm's move to ALARM, a function sets the compute environment DISABLED (construct
    ``BootFailureBreaker`` under ``scope``: the function, its role, policy and logs, and the rule)."""
    scope = Construct(scope, "BootFailureBreaker")
    handler = handler_function(
        scope,
        handler="boot_failure_breaker.handler",
        description="cdk-neuron: disable a training compute environment whose nodes keep failing to boot",
        statements=[
            (
                iam.PolicyStatement(
                    sid="DisableComputeEnvironment",
                    actions=["batch:UpdateComputeEnvironment"],
                    resources=[compute_environment.compute_environment_arn],
                ),
                "",
            )
        ],
        timeout=cdk.Duration.seconds(30),
        removal_policy=removal_policy,
        outside_vpc_reason="The function calls one AWS Batch API and touches nothing in the VPC",
        kms_key=kms_key,
        acknowledgments={
            "NIST.800.53.R5-LambdaConcurrency": "EventBridge invokes it only when the boot-failure alarm goes "
            "into ALARM; reserving concurrency fails in new accounts whose whole quota is the unreserved "
            "minimum of 10",
            "NIST.800.53.R5-LambdaDLQ": "EventBridge retries the invocation (its retry policy) and the alarm that "
            "triggers it stays in ALARM and pages through NeuronMonitoring; a lost event leaves the compute "
            "environment as it was, never in a worse state",
        },
    )
    handler.function.add_environment("COMPUTE_ENVIRONMENT", compute_environment.compute_environment_arn)
    rule = events.Rule(
        scope,
        "Rule",
        description="cdk-neuron: the training nodes' boot-failure alarm went into ALARM",
        event_pattern=events.EventPattern(
            source=["aws.cloudwatch"],
            detail_type=["CloudWatch Alarm State Change"],
            resources=[alarm.alarm_arn],
            detail={"state": {"value": ["ALARM"]}},
        ),
    )
    rule.add_target(targets.LambdaFunction(handler.function, retry_attempts=8))
    acknowledge(
        alarm,
        "NIST.800.53.R5-CloudWatchAlarmAction",
        "Its action is the EventBridge rule on its state change (BootFailureBreaker), which disables the "
        "compute environment: an alarm cannot call AWS Batch itself. NeuronMonitoring pages on the same "
        "metric.",
    )
    return rule


__all__ = [
    "CLUSTER_DIMENSION",
    "METRIC_NAME",
    "NAMESPACE",
    "SETTINGS_FILE",
    "disable_compute_environment",
    "limit_alarm",
    "metric",
    "record_policy",
    "settings",
    "stop_group",
]
