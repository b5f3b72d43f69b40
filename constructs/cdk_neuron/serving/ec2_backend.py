"""Ec2InferenceFleet's resources: an Auto Scaling group of Neuron instances behind an internal ALB (internal)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IConstruct

from cdk_neuron import ami, timeouts
from cdk_neuron._nag import acknowledge, acknowledge_wildcards
from cdk_neuron.iam_statements import (
    PUT_METRIC_DATA_REASON,
    allow_instance_launches,
    allow_log_encryption,
    put_metric_data,
)
from cdk_neuron.metrics.options import MetricOptions, resource_metric
from cdk_neuron.node_programs.bundle import (
    bundle_location,
    bundle_object_arn,
    limit_user_data_size,
    node_bundle,
)
from cdk_neuron.serving import start_paths
from cdk_neuron.serving.floors import DataVolumePerformance, data_volume_performance, model_dir_in_ram
from cdk_neuron.serving.permissions import artifact_policy, image_pull_statements
from cdk_neuron.serving.settings import Ec2Settings
from cdk_neuron.serving.timing import Ec2Startup, ec2_data_volume_gib, ec2_startup
from cdk_neuron.serving.user_data import (
    CONCURRENCY_METRIC,
    DATA_DEVICE,
    LAUNCH_FAILURE_METRIC,
    METRIC_NAMESPACE,
    RETURN_HOOK_NAME,
    boot_config,
    render_user_data,
)

SERVICE_PORT = 8080
LIFECYCLE_HOOK_NAME = "cdk-neuron-ready"
FLEET_TAG = "cdk-neuron:fleet"
"""The tag that names a fleet's group: the instances' lifecycle permissions are pinned to it."""
# Amazon Linux 2023 (the ECS-optimized Neuron AMI) boots from /dev/xvda; the data volume is DATA_DEVICE.
ROOT_DEVICE = "/dev/xvda"


@dataclass(frozen=True)
class Ec2Fleet:
    load_balancer: elbv2.ApplicationLoadBalancer
    listener: elbv2.ApplicationListener
    target_group: elbv2.ApplicationTargetGroup
    auto_scaling_group: autoscaling.AutoScalingGroup
    launch_template: ec2.LaunchTemplate
    instance_role: iam.Role
    instance_security_group: ec2.SecurityGroup
    load_balancer_security_group: ec2.SecurityGroup
    access_log_bucket: s3.IBucket
    connections: ec2.Connections
    url: str
    startup: Ec2Startup
    user_data: ec2.UserData
    log_group: logs.LogGroup


def concurrency_metric(scope: Construct, fleet_id: str, options: MetricOptions) -> cloudwatch.Metric:
    """In-flight plus queued requests per instance, as every instance publishes it (``metrics.sh``)."""
    return resource_metric(
        scope, METRIC_NAMESPACE, CONCURRENCY_METRIC, {"Fleet": fleet_id}, statistic="Average", options=options
    )


def launch_failure_metric(scope: Construct, fleet_id: str, options: MetricOptions) -> cloudwatch.Metric:
    """Abandoned launches, one data point each, as ``serving/lifecycle.sh`` records them."""
    return resource_metric(
        scope, METRIC_NAMESPACE, LAUNCH_FAILURE_METRIC, {"Fleet": fleet_id}, statistic="Sum", options=options
    )


def load_balancer_metric(
    scope: IConstruct,
    load_balancer_full_name: str,
    metric_name: str,
    *,
    statistic: str,
    options: MetricOptions,
) -> cloudwatch.Metric:
    """An ``AWS/ApplicationELB`` metric of the load balancer itself (as ``load_balancer.metrics`` builds it)."""
    return resource_metric(
        scope,
        "AWS/ApplicationELB",
        metric_name,
        {"LoadBalancer": load_balancer_full_name},
        statistic=statistic,
        options=options,
    )


def target_group_metric(
    scope: IConstruct,
    load_balancer_full_name: str,
    target_group_full_name: str,
    metric_name: str,
    *,
    statistic: str,
    options: MetricOptions,
) -> cloudwatch.Metric:
    """A per-target-group ALB metric, dimensioned by the two ``*FullName`` attributes.

    ``target_group.metrics`` derives the load balancer's name from the listener ARN with
    ``Fn::Split``/``Fn::Join``; across stacks that only works through strong references (cfn-lint
    cannot type-check it over a weak one). The resources' own ``GetAtt`` attributes need neither.
    """
    return resource_metric(
        scope,
        "AWS/ApplicationELB",
        metric_name,
        {"TargetGroup": target_group_full_name, "LoadBalancer": load_balancer_full_name},
        statistic=statistic,
        options=options,
    )


def _access_log_bucket(scope: Construct, settings: Ec2Settings) -> s3.IBucket:
    if settings.access_log_bucket is not None:
        return settings.access_log_bucket
    bucket = s3.Bucket(
        scope,
        "AccessLogs",
        # ALB access-log delivery supports only SSE-S3 (Amazon S3-managed keys), not SSE-KMS.
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=True,
        removal_policy=settings.removal_policy,
        # Elastic Load Balancing writes a test object as soon as logging is enabled ("Enable access
        # logs for your Application Load Balancer", ELB user guide, read 2026-12-01), so a bucket the
        # stack deletes must be emptied first: aws-cdk-lib's autoDeleteObjects denies new writes,
        # then deletes every object version.
        auto_delete_objects=settings.removal_policy == cdk.RemovalPolicy.DESTROY,
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        "This bucket receives the load balancer's access logs; logging access to the log bucket into "
        "itself would loop and into another bucket would only move the question",
    )
    acknowledge(
        bucket,
        "NIST.800.53.R5-S3BucketLoggingEnabled",
        "This bucket is the access-log destination itself (see AwsSolutions-S1)",
    )
    acknowledge(
        bucket,
        "NIST.800.53.R5-S3DefaultEncryptionKMS",
        "Elastic Load Balancing delivers access logs only to buckets encrypted with SSE-S3; SSE-KMS is "
        "not supported for ALB access logs",
    )
    acknowledge(
        bucket,
        "NIST.800.53.R5-S3BucketReplicationEnabled",
        "Access logs are operational telemetry of one regional load balancer; versioning and RETAIN "
        "protect them, cross-region replication is left to the account's logging strategy",
    )
    return bucket


def _instance_policy(
    scope: Construct,
    settings: Ec2Settings,
    role: iam.Role,
    bundle: s3_assets.Asset,
    log_group: logs.ILogGroup,
) -> iam.ManagedPolicy:
    """The instances' permissions as one customer-managed policy, each wildcard with its reason."""
    stack = cdk.Stack.of(scope)
    statements: list[tuple[iam.PolicyStatement, str]] = [
        (
            iam.PolicyStatement(
                sid="ReadNodePrograms",
                actions=["s3:GetObject"],
                resources=[bundle_object_arn(bundle)],
            ),
            "the node-program bundle, one object",
        )
    ]
    image = settings.engine.image
    if image.is_private_ecr:
        statements += image_pull_statements(stack, image)
    secret = settings.hugging_face_token
    if secret is not None:
        statements.append(
            (
                iam.PolicyStatement(
                    sid="ReadHubToken",
                    actions=["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                    # A secret imported by name has no suffix in its ARN; match the 6 random characters.
                    resources=[secret.secret_full_arn or f"{secret.secret_arn}-??????"],
                ),
                "the Hugging Face token secret",
            )
        )
        if secret.encryption_key is not None:
            statements.append(
                (
                    iam.PolicyStatement(
                        sid="DecryptHubToken",
                        actions=["kms:Decrypt"],
                        resources=[secret.encryption_key.key_arn],
                        conditions={
                            "StringEquals": {
                                "kms:ViaService": f"secretsmanager.{stack.region}.{stack.url_suffix}"
                            }
                        },
                    ),
                    "the secret's key, through Secrets Manager only",
                )
            )
    statements += [
        (
            iam.PolicyStatement(
                sid="CompleteLaunchLifecycle",
                # Complete the launch action, and extend it while the start-up makes progress
                # (serving/progress.sh). Both take the group as resource and its tags as condition
                # keys ("Actions, resources, and condition keys for Amazon EC2 Auto Scaling", Service
                # Authorization Reference, read 2026-12-02).
                actions=["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"],
                resources=[
                    stack.format_arn(
                        service="autoscaling",
                        resource="autoScalingGroup",
                        resource_name="*:autoScalingGroupName/*",
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
                conditions={"StringEquals": {f"autoscaling:ResourceTag/{FLEET_TAG}": settings.fleet_id}},
            ),
            "a group's ARN embeds a UUID generated at creation, and this policy must exist before the group; "
            "the resource-tag condition pins the action to this fleet's group",
        ),
        (put_metric_data(METRIC_NAMESPACE, sid="PublishConcurrency"), PUT_METRIC_DATA_REASON),
        (
            # What Docker's awslogs driver calls (Docker docs, "Amazon CloudWatch Logs logging driver",
            # Credentials). The group's ARN attribute ends in ":*", the form IAM policies use for the
            # group and its streams ("LogGroup", CloudWatch Logs API Reference; both read 2026-12-01).
            iam.PolicyStatement(
                sid="WriteReplicaLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            ),
            "the fleet's replica log group and its streams",
        ),
    ]
    if settings.node_metrics is not None:
        statements.append(
            (
                put_metric_data(settings.node_metrics.namespace, sid="PublishNeuronMetrics"),
                PUT_METRIC_DATA_REASON,
            )
        )
    policy = iam.ManagedPolicy(
        scope,
        "InstancePolicy",
        description="cdk-neuron serving instance: node programs, image, artifacts, readiness, metrics",
        statements=[statement for statement, _ in statements],
        roles=[role],
    )
    acknowledge_wildcards(policy, statements)
    return policy


def _security_groups(scope: Construct, settings: Ec2Settings) -> tuple[ec2.SecurityGroup, ec2.SecurityGroup]:
    lb_sg = ec2.SecurityGroup(
        scope,
        "LoadBalancerSecurityGroup",
        vpc=settings.vpc,
        description="cdk-neuron inference load balancer: clients inside the VPC only",
        allow_all_outbound=False,
    )
    instance_sg = ec2.SecurityGroup(
        scope,
        "InstanceSecurityGroup",
        vpc=settings.vpc,
        description="cdk-neuron inference instances: the load balancer only; egress for images and artifacts",
        allow_all_outbound=False,
    )
    # Everything an instance reaches is HTTPS: AWS APIs, image registries, S3 (artifacts, the
    # node-program bundle, the Amazon Linux repositories) and, without artifacts, the Hugging Face Hub.
    instance_sg.add_egress_rule(
        ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: AWS APIs, images, S3, Amazon Linux repositories"
    )
    return lb_sg, instance_sg


def _data_volume_performance(settings: Ec2Settings) -> DataVolumePerformance:
    """The data volume's gp3 throughput and IOPS: to the instance, or to the image where the weights
    go to a RAM-backed directory (the same rule as the node's ``MODEL_TMPFS_GIB``, user_data.py)."""
    plan = settings.plan
    in_ram = settings.model.artifact is not None and model_dir_in_ram(
        plan.weights_gib, instance_type=plan.instance_type, replicas=plan.replicas_per_instance
    )
    return data_volume_performance(plan.instance_type, in_ram=in_ram, warm_pool=settings.warm_pool)


def _block_devices(settings: Ec2Settings, size_gib: int) -> list[dict[str, object]]:
    """Both mappings; the root keeps the AMI's snapshot size (no VolumeSize) but is encrypted with our key.

    The data volume's gp3 throughput and IOPS are sized to the instance's EBS bandwidth
    (:func:`cdk_neuron.serving.floors.data_volume_performance`): 1,192 MiB/s on inf2.xlarge, 2,000 MiB/s
    (gp3's maximum) on inf2.48xlarge; 500 MiB/s where the weights go to RAM and the volume takes only
    the image.
    """
    performance = _data_volume_performance(settings)
    return [
        {
            "DeviceName": ROOT_DEVICE,
            "Ebs": {
                "Encrypted": True,
                "KmsKeyId": settings.key.key_arn,
                "VolumeType": "gp3",
                "DeleteOnTermination": True,
            },
        },
        {
            "DeviceName": DATA_DEVICE,
            "Ebs": {
                "Encrypted": True,
                "KmsKeyId": settings.key.key_arn,
                "VolumeType": "gp3",
                "VolumeSize": size_gib,
                "Throughput": performance.throughput_mibps,
                "Iops": performance.iops,
                "DeleteOnTermination": True,
            },
        },
    ]


def vpc_cidr(vpc: ec2.IVpc) -> str:
    """The VPC's primary CIDR, as a literal when the VPC was created in this app with one.

    ``Vpc.vpc_cidr_block`` is a ``Fn::GetAtt`` even for a literal CIDR; the literal is the same value
    and lets security-group rules be checked at synthesis.
    """
    cfn_vpc = vpc.node.default_child if isinstance(vpc, ec2.Vpc) else None
    literal = cfn_vpc.cidr_block if isinstance(cfn_vpc, ec2.CfnVPC) else None
    if isinstance(literal, str) and not cdk.Token.is_unresolved(literal):
        return literal
    return vpc.vpc_cidr_block


def build_ec2_fleet(scope: Construct, settings: Ec2Settings) -> Ec2Fleet:
    """The fleet's resources, in the order they depend on each other (each step below builds one part)."""
    stack = cdk.Stack.of(scope)
    spec, plan, engine = settings.model, settings.plan, settings.engine
    startup = ec2_startup(
        plan.weights_gib,
        precompiled=spec.precompiled,
        instance_type=plan.instance_type,
        replicas=plan.replicas_per_instance,
        measured=settings.measured_startup,
        warm_pool=settings.warm_pool,
    )
    startup_seconds = settings.startup_timeout_seconds or startup.seconds
    volume_gib = settings.data_volume_gib or ec2_data_volume_gib(
        plan.weights_gib, precompiled=spec.precompiled
    )

    if settings.key_created:
        allow_instance_launches(settings.key)
    lb_sg, instance_sg = _security_groups(scope, settings)
    log_group = _replica_log_group(scope, settings)
    role, bundle, policy = _instance_role(scope, settings, log_group)
    artifacts = artifact_policy(scope, settings, role, reader="serving instance")
    boot = boot_config(
        spec,
        plan,
        engine,
        region=stack.region,
        stack_name=stack.stack_name,
        asg_logical_id="",  # known once the group exists (below)
        lifecycle_hook_name=LIFECYCLE_HOOK_NAME,
        service_port=SERVICE_PORT,
        startup_timeout_seconds=startup_seconds,
        fleet_id=settings.fleet_id,
        log_group=log_group.log_group_name,
        hf_token_secret_arn=settings.hugging_face_token.secret_arn if settings.hugging_face_token else None,
    )
    # Rendered after the group exists: the script signals CloudFormation with the group's logical ID.
    user_data = ec2.UserData.for_linux(shebang="#!/bin/bash")
    launch_template = _launch_template(scope, settings, role, instance_sg, user_data, volume_gib)
    group = _auto_scaling_group(scope, settings, launch_template, startup_seconds, startup.boot_seconds)
    group.node.add_dependency(policy)
    if artifacts is not None:
        group.node.add_dependency(artifacts)
    metrics_settings = (
        settings.node_metrics.settings_files(workload="serving", instance_type=plan.instance_type)
        if settings.node_metrics is not None
        else None
    )
    cfn_group = group.node.default_child
    assert isinstance(cfn_group, autoscaling.CfnAutoScalingGroup)
    user_data.add_commands(
        render_user_data(
            replace(boot, asg_logical_id=stack.get_logical_id(cfn_group)),
            bundle_location(bundle),
            extra_settings=metrics_settings,
            shebang=False,
        )
    )
    _acknowledge_group(group, settings)
    if settings.warm_pool:
        group.add_warm_pool(
            pool_state=autoscaling.PoolState.STOPPED,
            min_size=0,
            reuse_on_scale_in=True,
            # warm_pool_size N: N stopped instances at the minimum (start_paths, WP-SIZE).
            max_group_prepared_capacity=start_paths.max_group_prepared_capacity(
                settings.warm_pool_size, min_capacity=settings.min_capacity
            ),
        )

    front = _load_balancer(scope, settings, lb_sg, group)
    _scaling(scope, settings, group, front.load_balancer)
    connections = ec2.Connections(security_groups=[lb_sg], default_port=ec2.Port.tcp(front.port))
    return Ec2Fleet(
        load_balancer=front.load_balancer,
        listener=front.listener,
        target_group=front.target_group,
        auto_scaling_group=group,
        launch_template=launch_template,
        instance_role=role,
        instance_security_group=instance_sg,
        load_balancer_security_group=lb_sg,
        access_log_bucket=front.bucket,
        connections=connections,
        url=f"{front.scheme}://{front.load_balancer.load_balancer_dns_name}",
        startup=Ec2Startup(
            seconds=startup_seconds, explanation=startup.explanation, boot_seconds=startup.boot_seconds
        ),
        user_data=user_data,
        log_group=log_group,
    )


def _replica_log_group(scope: Construct, settings: Ec2Settings) -> logs.LogGroup:
    """Where every replica's container logs (``serving/replica.sh``), encrypted with the fleet key.

    Kept per ``removal_policy`` (RETAIN_ON_UPDATE_OR_DELETE by default): the logs of replaced instances
    are the point.
    """
    allow_log_encryption(settings.key, sid="AllowCloudWatchLogsToEncryptReplicaLogs")
    return logs.LogGroup(
        scope,
        "ReplicaLogs",
        retention=settings.log_retention,
        encryption_key=settings.key,
        removal_policy=settings.removal_policy,
    )


def _instance_role(
    scope: Construct, settings: Ec2Settings, log_group: logs.ILogGroup
) -> tuple[iam.Role, s3_assets.Asset, iam.ManagedPolicy]:
    """The instances' role (SSM for operators; the rest in the managed InstancePolicy) and the bundle it reads."""
    role = iam.Role(
        scope,
        "InstanceRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description="cdk-neuron inference instance",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
    )
    acknowledge(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
        "Instances have no SSH and no public IP; Session Manager is the only operator access, and this "
        "AWS-maintained policy is the documented minimum for the SSM agent",
    )
    bundle = node_bundle(scope)
    policy = _instance_policy(scope, settings, role, bundle, log_group)
    acknowledge(
        role,
        "NIST.800.53.R5-IAMNoInlinePolicy",
        "The only inline statement is the one aws-autoscaling's Signals adds: cloudformation:SignalResource "
        "on this stack, for the readiness signal; everything else is in the managed InstancePolicy",
    )
    return role, bundle, policy


def _launch_template(
    scope: Construct,
    settings: Ec2Settings,
    role: iam.Role,
    instance_sg: ec2.SecurityGroup,
    user_data: ec2.UserData,
    volume_gib: int,
) -> ec2.LaunchTemplate:
    """IMDSv2 with hop limit 1, an encrypted gp3 data volume, terminate on shutdown."""
    launch_template = ec2.LaunchTemplate(
        scope,
        "LaunchTemplate",
        machine_image=settings.machine_image or ami.machine_image(),
        instance_type=ec2.InstanceType(settings.plan.instance_type),
        user_data=user_data,
        role=role,
        security_group=instance_sg,
        block_devices=[
            ec2.BlockDevice(
                device_name=DATA_DEVICE,
                volume=ec2.BlockDeviceVolume.ebs(
                    volume_gib,
                    encrypted=True,
                    kms_key=settings.key,
                    volume_type=ec2.EbsDeviceVolumeType.GP3,
                    throughput=_data_volume_performance(settings).throughput_mibps,
                    iops=_data_volume_performance(settings).iops,
                    delete_on_termination=True,
                ),
            )
        ],
        require_imdsv2=True,
        # Hop limit 1: containers (one network hop further) cannot reach instance credentials.
        http_put_response_hop_limit=1,
        # The boot script reads its group name (aws:autoscaling:groupName) from instance tags.
        instance_metadata_tags=True,
        detailed_monitoring=True,
        # A node that cannot boot powers itself off (node_programs/files/bootstrap.sh); terminating
        # then lets Auto Scaling replace it.
        instance_initiated_shutdown_behavior=ec2.InstanceInitiatedShutdownBehavior.TERMINATE,
    )
    limit_user_data_size(launch_template, user_data)
    cfn_launch_template = launch_template.node.default_child
    assert isinstance(cfn_launch_template, ec2.CfnLaunchTemplate)
    # The L2 block device needs a size, but the root volume must keep the AMI snapshot's size.
    cfn_launch_template.add_property_override(
        "LaunchTemplateData.BlockDeviceMappings", _block_devices(settings, volume_gib)
    )
    return launch_template


def _update_policy(settings: Ec2Settings) -> cdk.CfnUpdatePolicy:
    """Instance refresh: replace instances while keeping ``min_healthy_percentage`` of the *desired*
    capacity in service, launching replacements first at 100 %.

    Not ``AutoScalingRollingUpdate``: its ``MinInstancesInService`` is a number fixed in the template
    (it came from ``min_capacity``: 0 in dev, so the one instance was terminated before its
    replacement started), and CloudFormation's UpdatePolicy reference says rolling updates honour
    neither the group's instance maintenance policy nor launch-before-terminate, and wait at most one
    hour (PauseTime). ``AutoScalingInstanceRefresh`` runs an EC2 Auto Scaling instance refresh, whose
    ``MinHealthyPercentage``/``MaxHealthyPercentage`` are percentages of the desired capacity and
    whose replacements count only once they are ``InService``, i.e. once the launch lifecycle hook
    (ready.sh) completed ("UpdatePolicy attribute", AWS CloudFormation Template Reference,
    https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-updatepolicy.html;
    "Use an instance refresh to update instances in an Auto Scaling group", Amazon EC2 Auto Scaling
    User Guide, https://docs.aws.amazon.com/autoscaling/ec2/userguide/asg-instance-refresh.html; both
    read 2026-12-01). Set through ``cfn_options`` so any aws-cdk-lib the package accepts renders it.
    """
    return cdk.CfnUpdatePolicy(
        # What aws-cdk-lib sets by default: a stack update leaves the group's current size alone.
        auto_scaling_scheduled_action=cdk.CfnAutoScalingScheduledAction(
            ignore_unmodified_group_size_properties=True
        ),
        auto_scaling_instance_refresh=cdk.CfnAutoScalingInstanceRefresh(
            strategy="Rolling",
            preferences=cdk.CfnAutoScalingInstanceRefreshPreferences(
                min_healthy_percentage=settings.min_healthy_percentage,
                max_healthy_percentage=max_healthy_percentage(settings.min_healthy_percentage),
                instance_warmup=timeouts.INSTANCE_WARMUP,
            ),
        ),
    )


def max_healthy_percentage(min_healthy_percentage: int) -> int:
    """110 when nothing may leave service first (so a replacement launches before the old instance
    terminates), else 100."""
    return 110 if min_healthy_percentage == 100 else 100


def _auto_scaling_group(
    scope: Construct,
    settings: Ec2Settings,
    launch_template: ec2.LaunchTemplate,
    startup_seconds: int,
    boot_seconds: int,
) -> autoscaling.AutoScalingGroup:
    """The group: ELB health checks, readiness signals, a launch lifecycle hook and the update policy.

    Every wait comes from :mod:`cdk_neuron.timeouts` (``serving_startup_chain``): the hook's heartbeat
    is the progress window, which the node extends while its start-up moves (``progress.sh``), up to
    the start-up budget; CloudFormation's creation wait covers a replacement launch; the health
    check grace only covers the load balancer confirming an instance the hook already held until
    its replicas answered.
    """
    group = autoscaling.AutoScalingGroup(
        scope,
        "Group",
        vpc=settings.vpc,
        vpc_subnets=settings.placement_subnets,
        min_capacity=settings.min_capacity,
        max_capacity=settings.max_capacity,
        launch_template=None if settings.spot else launch_template,
        mixed_instances_policy=autoscaling.MixedInstancesPolicy(
            launch_template=launch_template,
            instances_distribution=autoscaling.InstancesDistribution(
                on_demand_base_capacity=0,
                on_demand_percentage_above_base_capacity=0,
                spot_allocation_strategy=autoscaling.SpotAllocationStrategy.PRICE_CAPACITY_OPTIMIZED,
            ),
        )
        if settings.spot
        else None,
        capacity_rebalance=True if settings.spot else None,
        health_checks=autoscaling.HealthChecks.with_additional_checks(
            additional_types=[autoscaling.AdditionalHealthCheckType.ELB],
            grace_period=cdk.Duration.seconds(timeouts.HEALTH_CHECK_GRACE),
        ),
        signals=autoscaling.Signals.wait_for_min_capacity(
            timeout=cdk.Duration.seconds(timeouts.creation_policy_seconds(startup_seconds))
        ),
        min_healthy_percentage=settings.min_healthy_percentage,
        max_healthy_percentage=max_healthy_percentage(settings.min_healthy_percentage),
        # Readiness is gated by the lifecycle hook, so a new instance counts towards metrics at once.
        default_instance_warmup=cdk.Duration.seconds(timeouts.INSTANCE_WARMUP),
        group_metrics=[autoscaling.GroupMetrics.all()],
        notifications=[autoscaling.NotificationConfiguration(topic=settings.notification_topic)]
        if settings.notification_topic is not None
        else None,
    )
    cdk.Tags.of(group).add(FLEET_TAG, settings.fleet_id)
    cfn_group = group.node.default_child
    assert isinstance(cfn_group, autoscaling.CfnAutoScalingGroup)
    cfn_group.cfn_options.update_policy = _update_policy(settings)
    # Inline hook specification (not a separate LifecycleHook resource), so even the instances of the
    # group's first launch wait for their replicas before they are put in service.
    hooks: list[cdk.IResolvable | autoscaling.CfnAutoScalingGroup.LifecycleHookSpecificationProperty] = [
        autoscaling.CfnAutoScalingGroup.LifecycleHookSpecificationProperty(
            lifecycle_hook_name=LIFECYCLE_HOOK_NAME,
            lifecycle_transition="autoscaling:EC2_INSTANCE_LAUNCHING",
            default_result="ABANDON",
            heartbeat_timeout=timeouts.hook_heartbeat_seconds(boot_seconds),
        )
    ]
    if settings.warm_pool:
        # An instance that scale-in returns to the warm pool "pauses at the Warmed:Pending:Wait state
        # for the EC2_INSTANCE_TERMINATING lifecycle action" ("Use lifecycle hooks with a warm pool in
        # Auto Scaling group", Amazon EC2 Auto Scaling User Guide,
        # https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pool-instance-lifecycle.html): without
        # this hook nothing pauses it, and Auto Scaling stops it while its replicas still serve. The
        # lifecycle watch completes it once they stopped; CONTINUE when it cannot, so a termination is
        # never held longer than the heartbeat (timeouts.POOL_RETURN_HEARTBEAT).
        hooks.append(
            autoscaling.CfnAutoScalingGroup.LifecycleHookSpecificationProperty(
                lifecycle_hook_name=RETURN_HOOK_NAME,
                lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING",
                default_result="CONTINUE",
                heartbeat_timeout=timeouts.POOL_RETURN_HEARTBEAT,
            )
        )
    cfn_group.lifecycle_hook_specification_list = hooks
    return group


def _acknowledge_group(group: autoscaling.AutoScalingGroup, settings: Ec2Settings) -> None:
    if settings.notification_topic is None:
        acknowledge(
            group,
            "AwsSolutions-AS3",
            "No notification topic was given (notification_topic); EC2 Auto Scaling publishes every "
            "launch, termination and failure to EventBridge regardless",
        )
    if settings.spot:
        unseen = (
            "The rule reads only the group's LaunchTemplate property, not MixedInstancesPolicy.LaunchTemplate "
            "(Spot); the launch template used requires IMDSv2 and encrypts every volume with the fleet key"
        )
        acknowledge(group, "AwsSolutions-EC26", unseen)
        acknowledge(group, "NIST.800.53.R5-EC2IMDSv2Enabled", unseen)


@dataclass(frozen=True)
class _Front:
    """The load balancer side of the fleet."""

    load_balancer: elbv2.ApplicationLoadBalancer
    bucket: s3.IBucket
    target_group: elbv2.ApplicationTargetGroup
    listener: elbv2.ApplicationListener
    port: int
    scheme: str


def _load_balancer(
    scope: Construct, settings: Ec2Settings, lb_sg: ec2.SecurityGroup, group: autoscaling.AutoScalingGroup
) -> _Front:
    """An internal ALB with access logs, least-outstanding-requests routing, HTTPS with a certificate."""
    engine = settings.engine
    load_balancer = elbv2.ApplicationLoadBalancer(
        scope,
        "LoadBalancer",
        vpc=settings.vpc,
        vpc_subnets=settings.subnets,
        internet_facing=False,
        security_group=lb_sg,
        drop_invalid_header_fields=True,
        # The time to first token of a long prompt can exceed the default 60 s.
        idle_timeout=cdk.Duration.seconds(timeouts.ALB_IDLE_TIMEOUT),
    )
    bucket = _access_log_bucket(scope, settings)
    load_balancer.log_access_logs(bucket, prefix=f"cdk-neuron/{settings.fleet_id}")
    acknowledge(
        load_balancer,
        "NIST.800.53.R5-ALBWAFEnabled",
        "Internal load balancer reachable only from inside the VPC; a WAF web ACL can be associated by "
        "the account's edge policy if required",
    )
    acknowledge(
        load_balancer,
        "NIST.800.53.R5-ELBDeletionProtectionEnabled",
        "The load balancer is stateless and recreated by this stack; deletion protection would block "
        "stack teardown and rollbacks",
    )

    target_group = elbv2.ApplicationTargetGroup(
        scope,
        "TargetGroup",
        vpc=settings.vpc,
        port=SERVICE_PORT,
        protocol=elbv2.ApplicationProtocol.HTTP,
        target_type=elbv2.TargetType.INSTANCE,
        targets=[group],
        # Generation requests vary from milliseconds to minutes: route to the least busy instance.
        load_balancing_algorithm_type=elbv2.TargetGroupLoadBalancingAlgorithmType.LEAST_OUTSTANDING_REQUESTS,
        # Streaming generations can run for minutes: keep a deregistering instance's connections that long.
        deregistration_delay=cdk.Duration.seconds(timeouts.DEREGISTRATION_DELAY),
        health_check=elbv2.HealthCheck(
            path=engine.health_path,
            port=str(SERVICE_PORT),
            healthy_http_codes="200",
            interval=cdk.Duration.seconds(timeouts.HEALTH_CHECK_INTERVAL),
            timeout=cdk.Duration.seconds(timeouts.HEALTH_CHECK_TIMEOUT),
            healthy_threshold_count=timeouts.HEALTHY_THRESHOLD,
            unhealthy_threshold_count=timeouts.UNHEALTHY_THRESHOLD,
        ),
    )
    if settings.certificate is not None:
        port = 443
        listener = load_balancer.add_listener(
            "Https",
            port=port,
            protocol=elbv2.ApplicationProtocol.HTTPS,
            certificates=[elbv2.ListenerCertificate.from_certificate_manager(settings.certificate)],
            ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
            open=False,
            default_target_groups=[target_group],
        )
        scheme = "https"
    else:
        port = 80
        listener = load_balancer.add_listener(
            "Http",
            port=port,
            protocol=elbv2.ApplicationProtocol.HTTP,
            open=False,
            default_target_groups=[target_group],
        )
        scheme = "http"
        plain_http = (
            "No certificate was given (certificate=...), so the internal load balancer serves plain HTTP, "
            "reachable only from the VPC CIDR; pass an ACM certificate to get an HTTPS-only listener"
        )
        acknowledge(load_balancer, "NIST.800.53.R5-ALBHttpToHttpsRedirection", plain_http)
        acknowledge(listener, "NIST.800.53.R5-ELBv2ACMCertificateRequired", plain_http)
    cidr = vpc_cidr(settings.vpc)
    lb_sg.add_ingress_rule(
        ec2.Peer.ipv4(cidr), ec2.Port.tcp(port), f"clients inside the VPC ({scheme.upper()})"
    )
    if cdk.Token.is_unresolved(cidr):
        unresolved = (
            f"The only ingress is the VPC's own CIDR on port {port}; it is a CloudFormation reference these "
            "rules cannot evaluate (they report an error instead of a result)"
        )
        for rule in (
            "AwsSolutions-EC23",
            "NIST.800.53.R5-EC2RestrictedCommonPorts",
            "NIST.800.53.R5-EC2RestrictedSSH",
        ):
            acknowledge(lb_sg, rule, unresolved)
    return _Front(load_balancer, bucket, target_group, listener, port, scheme)


def _scaling(
    scope: Construct,
    settings: Ec2Settings,
    group: autoscaling.AutoScalingGroup,
    load_balancer: elbv2.ApplicationLoadBalancer,
) -> None:
    """Target tracking on in-flight requests (and optionally requests per minute); wake from zero."""
    if settings.target_requests_per_minute is not None:
        group.scale_on_request_count(
            "RequestsPerInstance",
            target_requests_per_minute=settings.target_requests_per_minute,
            estimated_instance_warmup=cdk.Duration.seconds(timeouts.INSTANCE_WARMUP),
        )
    group.scale_to_track_metric(
        "ConcurrencyPerInstance",
        metric=concurrency_metric(scope, settings.fleet_id, {"period": cdk.Duration.minutes(1)}),
        target_value=settings.target_concurrency,
        estimated_instance_warmup=cdk.Duration.seconds(timeouts.INSTANCE_WARMUP),
    )

    if settings.min_capacity == 0:
        _scale_from_zero(group, load_balancer)


def _scale_from_zero(
    group: autoscaling.AutoScalingGroup, load_balancer: elbv2.ApplicationLoadBalancer
) -> None:
    """Start one instance when requests reach a fleet that has scaled to zero.

    Target tracking cannot leave zero: with no instances there is no per-target metric. Nor can the
    load balancer's ``RequestCount``: it "is only incremented for requests where the load balancer
    node was able to choose a target", and with no registered target there is none. What does exist
    at zero is the load balancer's own answer: "HTTP 503: Service unavailable - The target groups
    for the load balancer have no registered targets" ("Troubleshoot your Application Load
    Balancers"), counted in ``HTTPCode_ELB_503_Count``, reported whenever it is nonzero ("CloudWatch
    metrics for your Application Load Balancer"; both ELB user guide, read 2026-12-01). So a step
    policy adds one instance when the load balancer answers 503 while the desired capacity is 0.
    Once desired is 1 the expression drops to 0, so the alarm never adds a second instance; target
    tracking takes over from there.
    """
    one_minute = cdk.Duration.minutes(1)
    wake = cloudwatch.MathExpression(
        expression="IF(rejected > 0 AND desired == 0, 1, 0)",
        using_metrics={
            "rejected": load_balancer_metric(
                load_balancer,
                load_balancer.load_balancer_full_name,
                "HTTPCode_ELB_503_Count",
                statistic="Sum",
                options={"period": one_minute},
            ),
            "desired": cloudwatch.Metric(
                namespace="AWS/AutoScaling",
                metric_name="GroupDesiredCapacity",
                dimensions_map={"AutoScalingGroupName": group.auto_scaling_group_name},
                statistic="Maximum",
                period=one_minute,
            ),
        },
        period=one_minute,
        label="requests refused while scaled to zero",
    )
    # A plain StepScalingAction + Alarm: scale_on_metric's internal policy trips a deprecation
    # warning (StepScalingActionProps#cooldown) on every synth.
    action = autoscaling.StepScalingAction(
        group,
        "ScaleFromZero",
        auto_scaling_group=group,
        adjustment_type=autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        metric_aggregation_type=autoscaling.MetricAggregationType.MAXIMUM,
    )
    action.add_adjustment(adjustment=1, lower_bound=0)
    alarm = cloudwatch.Alarm(
        group,
        "ScaleFromZeroAlarm",
        metric=wake,
        threshold=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description="Requests reached the load balancer while the fleet is scaled to zero: start one instance",
    )
    alarm.add_alarm_action(cloudwatch_actions.AutoScalingAction(action))
