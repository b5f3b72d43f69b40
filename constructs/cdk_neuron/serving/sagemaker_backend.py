"""SageMakerInferenceFleet's resources: a SageMaker real-time endpoint on ml.<Neuron instance> (internal).

aws-cdk-lib has SageMaker L1s only; the L2s live in the alpha module, which this library does not
depend on. Model, EndpointConfig and Endpoint are immutable in SageMaker: CloudFormation replaces
the model and endpoint config on any change and updates the endpoint to the new config.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from cdk_neuron import catalog
from cdk_neuron._nag import acknowledge_wildcards
from cdk_neuron._subnets import select_subnets
from cdk_neuron.iam_statements import PUT_METRIC_DATA_REASON, put_metric_data
from cdk_neuron.serving.permissions import artifact_policy, image_pull_statements
from cdk_neuron.serving.settings import SageMakerSettings
from cdk_neuron.serving.timing import SageMakerTimeouts, sagemaker_storage_gb, sagemaker_timeouts

# Where SageMaker puts ModelDataSource contents inside the container.
SAGEMAKER_MODEL_DIR = "/opt/ml/model"
LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints"
# CreateEndpoint: EndpointName "Length Constraints: Maximum length of 63", pattern
# ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (SageMaker API Reference).
ENDPOINT_NAME_MAX = 63


@dataclass(frozen=True)
class SageMakerFleet:
    model: sagemaker.CfnModel
    endpoint_config: sagemaker.CfnEndpointConfig
    endpoint: sagemaker.CfnEndpoint
    execution_role: iam.Role
    security_group: ec2.SecurityGroup
    scalable_target: appscaling.ScalableTarget
    connections: ec2.Connections
    timeouts: SageMakerTimeouts
    volume_size_gb: int | None
    """None on instance types that serve from local NVMe (trn1, trn1n, trn2)."""
    network_isolation: bool


def _execution_policy(
    scope: Construct,
    settings: SageMakerSettings,
    role: iam.Role,
    subnet_ids: list[str],
    sg: ec2.SecurityGroup,
) -> iam.ManagedPolicy:
    """The execution role's permissions as one customer-managed policy, each wildcard with its reason."""
    stack = cdk.Stack.of(scope)
    image = settings.engine.validate_sagemaker()
    vpc_arn = stack.format_arn(service="ec2", resource="vpc", resource_name=settings.vpc.vpc_id)
    network_interfaces = stack.format_arn(service="ec2", resource="network-interface", resource_name="*")
    eni_reason = (
        "SageMaker creates the model's network interfaces with generated IDs; deletion and permissions are "
        "limited to interfaces in this VPC by condition, creation to these subnets and security group"
    )
    statements: list[tuple[iam.PolicyStatement, str]] = [
        *image_pull_statements(stack, image),
        (
            iam.PolicyStatement(
                sid="EndpointLogs",
                actions=[
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                    "logs:DescribeLogStreams",
                ],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=f"{LOG_GROUP_PREFIX}/*",
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            ),
            "SageMaker names the log group after the endpoint, which CloudFormation names at creation; "
            "limited to SageMaker's endpoint log groups",
        ),
        (put_metric_data(LOG_GROUP_PREFIX, sid="EndpointMetrics"), PUT_METRIC_DATA_REASON),
        # SageMaker attaches the model's network interfaces in our subnets (SageMaker developer guide,
        # "Give SageMaker Hosted Endpoints Access to Resources in Your Amazon VPC").
        (
            iam.PolicyStatement(
                sid="DescribeVpc",
                actions=[
                    "ec2:DescribeVpcs",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeNetworkInterfaces",
                ],
                resources=["*"],
            ),
            "EC2 Describe* actions have no resource-level permissions",
        ),
        (
            iam.PolicyStatement(
                sid="CreateEndpointInterfaces",
                actions=["ec2:CreateNetworkInterface"],
                resources=[
                    network_interfaces,
                    *(
                        stack.format_arn(service="ec2", resource="subnet", resource_name=s)
                        for s in subnet_ids
                    ),
                    stack.format_arn(
                        service="ec2", resource="security-group", resource_name=sg.security_group_id
                    ),
                ],
            ),
            eni_reason,
        ),
        (
            iam.PolicyStatement(
                sid="ManageEndpointInterfaces",
                actions=[
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                ],
                resources=[network_interfaces],
                conditions={"ArnEquals": {"ec2:Vpc": vpc_arn}},
            ),
            eni_reason,
        ),
    ]
    policy = iam.ManagedPolicy(
        scope,
        "ExecutionPolicy",
        description="cdk-neuron SageMaker model: pull the image, logs, VPC interfaces",
        statements=[statement for statement, _ in statements],
        roles=[role],
    )
    acknowledge_wildcards(policy, statements)
    return policy


def endpoint_name(endpoint: sagemaker.CfnEndpoint, instance_type: str) -> str:
    """The endpoint's name: unique in the stack, and different for every instance type.

    SageMaker refuses an UpdateEndpoint that changes the instance type of a variant Application Auto
    Scaling manages ("If the update would change the instance type for any model that is a target
    for auto scaling, the update fails", Update endpoints that use auto scaling, SageMaker AI
    developer guide, read 2026-12-01), and removing the variant fails the same way. A name that
    carries the instance type makes a new type a new endpoint instead (``EndpointName`` is
    create-only): CloudFormation creates it, registers its variant for auto scaling, points the
    stack's outputs at it, and deletes the old endpoint (with its scaling) only in its cleanup
    phase, so requests keep being served throughout. Callers read the name from the stack output.
    """
    suffix = instance_type.replace(".", "-")
    base = cdk.Names.unique_resource_name(
        endpoint, max_length=ENDPOINT_NAME_MAX - len(suffix) - 1, separator="-"
    )
    return f"{base}-{suffix}"


def build_sagemaker_fleet(scope: Construct, settings: SageMakerSettings) -> SageMakerFleet:
    spec, plan, engine = settings.model, settings.plan, settings.engine
    image = engine.validate_sagemaker()
    stack = cdk.Stack.of(scope)
    # Instance types with local NVMe (trn1, trn1n, trn2) keep the model on it: no VolumeSizeInGB, and
    # no endpoint-config KmsKeyId (SageMaker refuses it; a hardware module encrypts local volumes).
    volume_gb = sagemaker_storage_gb(plan.instance_type, plan.weights_gib, given=settings.volume_size_gb)
    timeouts = sagemaker_timeouts(
        plan.weights_gib,
        precompiled=spec.precompiled,
        instance_type=plan.instance_type,
        model_data_download_seconds=settings.model_data_download_timeout_seconds,
        container_startup_health_check_seconds=settings.container_startup_health_check_timeout_seconds,
        measured=settings.measured_startup,
        volume_gb=volume_gb,
    )
    local_storage = volume_gb is None
    # Isolation cuts the container off the network: possible only when the weights come from S3.
    network_isolation = engine.supports_network_isolation and spec.precompiled

    security_group = ec2.SecurityGroup(
        scope,
        "SecurityGroup",
        vpc=settings.vpc,
        description="cdk-neuron SageMaker model: no inbound; HTTPS out for S3, ECR and CloudWatch",
        allow_all_outbound=False,
    )
    security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: S3, ECR, CloudWatch, Hub")
    subnet_ids = select_subnets(settings.vpc, settings.placement_subnets).subnet_ids

    role = iam.Role(
        scope,
        "ExecutionRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description="cdk-neuron SageMaker model execution role (least privilege)",
    )
    policy = _execution_policy(scope, settings, role, subnet_ids, security_group)
    # The artifact's read grant is a policy of its own per artifact (permissions.artifact_policy): a
    # new artifact adds one, and the old fleet keeps reading the old prefix until clean-up.
    artifacts = artifact_policy(
        scope, settings, role, reader="SageMaker model", id_prefix="SageMakerArtifactPolicy"
    )

    model_location = SAGEMAKER_MODEL_DIR if spec.precompiled else spec.served_model_name
    artifact = spec.artifact
    container = sagemaker.CfnModel.ContainerDefinitionProperty(
        image=image.uri(stack.region),
        mode="SingleModel",
        environment=engine.sagemaker_environment(spec, plan, model=model_location),
        model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
            s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                s3_uri=artifact.uri, s3_data_type="S3Prefix", compression_type="None"
            )
        )
        if artifact is not None
        else None,
    )
    model = sagemaker.CfnModel(
        scope,
        "Model",
        execution_role_arn=role.role_arn,
        primary_container=container,
        enable_network_isolation=network_isolation,
        vpc_config=sagemaker.CfnModel.VpcConfigProperty(
            security_group_ids=[security_group.security_group_id], subnets=subnet_ids
        ),
    )
    # SageMaker checks the role's permissions when it creates the model.
    model.node.add_dependency(policy)
    if artifacts is not None:
        model.node.add_dependency(artifacts)

    endpoint_config = sagemaker.CfnEndpointConfig(
        scope,
        "EndpointConfig",
        kms_key_id=None if local_storage else settings.key.key_arn,
        production_variants=[
            sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name=settings.variant_name,
                model_name=model.attr_model_name,
                instance_type=f"ml.{plan.instance_type}",
                initial_instance_count=settings.min_capacity,
                initial_variant_weight=1,
                volume_size_in_gb=volume_gb,
                model_data_download_timeout_in_seconds=timeouts.model_data_download_seconds,
                container_startup_health_check_timeout_in_seconds=timeouts.container_startup_health_check_seconds,
                inference_ami_version=catalog.SAGEMAKER_NEURON_AMI_VERSION,
                # Requests range from milliseconds to minutes: send each to the least busy instance.
                routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                    routing_strategy="LEAST_OUTSTANDING_REQUESTS"
                ),
            )
        ],
    )
    endpoint = sagemaker.CfnEndpoint(
        scope,
        "Endpoint",
        endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        # A new config (new model, new image) keeps the instance count auto scaling reached.
        retain_all_variant_properties=True,
    )
    endpoint.endpoint_name = endpoint_name(endpoint, plan.instance_type)
    # The ML storage volumes are encrypted with the key through grants SageMaker creates as the
    # principal that creates the endpoint (the deployment role), which the key policy's account
    # statement covers; the execution role needs no key permissions.

    scalable_target = appscaling.ScalableTarget(
        scope,
        "Scaling",
        service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
        resource_id=f"endpoint/{endpoint.attr_endpoint_name}/variant/{settings.variant_name}",
        scalable_dimension="sagemaker:variant:DesiredInstanceCount",
        min_capacity=settings.min_capacity,
        max_capacity=settings.max_capacity,
        # SageMaker variants scale through Application Auto Scaling's service-linked role; naming it
        # keeps the construct from creating an unused role.
        role=iam.Role.from_role_arn(
            scope,
            "ScalingServiceRole",
            f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/"
            "sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
            mutable=False,
        ),
    )
    scalable_target.scale_to_track_metric(
        "ConcurrencyPerModel",
        target_value=settings.target_concurrency,
        predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION,
        # New capacity takes the container start-up to serve; do not pile on before it arrives.
        scale_out_cooldown=cdk.Duration.seconds(min(timeouts.container_startup_health_check_seconds, 600)),
        scale_in_cooldown=cdk.Duration.seconds(600),
    )
    return SageMakerFleet(
        model=model,
        endpoint_config=endpoint_config,
        endpoint=endpoint,
        execution_role=role,
        security_group=security_group,
        scalable_target=scalable_target,
        connections=ec2.Connections(security_groups=[security_group]),
        timeouts=timeouts,
        volume_size_gb=volume_gb,
        network_isolation=network_isolation,
    )
