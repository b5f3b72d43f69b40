"""SageMakerInferenceFleet: serve a model on a SageMaker real-time endpoint on ml.<Neuron instance>."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Protocol, cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from cdk_neuron import _cdk_values
from cdk_neuron._scope import reported_by
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics.options import (
    DEFAULT_PERIOD,
    MathOptions,
    MetricOptions,
    resource_metric,
    with_math_options,
)
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_neuron.serving.engines import ContainerImage, ServingEngine
from cdk_neuron.serving.fleet import (
    SAGEMAKER_IDLE_CORES_WARNING_ID,
    IInferenceFleet,
    InferenceFleetBase,
    attribute,
)
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.sagemaker_backend import SAGEMAKER_MODEL_DIR, SageMakerFleet, build_sagemaker_fleet
from cdk_neuron.serving.settings import SageMakerSettings
from cdk_neuron.serving.timing import MeasuredStartup, sagemaker_storage_gb, sagemaker_timeouts
from cdk_neuron.validation import IAM_ROLE_ARN, SAGEMAKER_NAME, SECURITY_GROUP_ID, matching

if TYPE_CHECKING:
    from typing_extensions import Unpack

# SageMaker hosting offers these Neuron types (AWS::SageMaker::EndpointConfig InstanceType enum).
SAGEMAKER_TYPES = frozenset(
    {"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge",
     "trn1n.32xlarge", "trn2.48xlarge"}
)  # fmt: skip
INVOKE_ACTIONS = ("sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream")
# Endpoint invocation metrics (SageMaker developer guide, "Amazon SageMaker AI metrics in Amazon
# CloudWatch": namespace AWS/SageMaker) and instance metrics (namespace /aws/sagemaker/Endpoints).
INVOCATION_NAMESPACE = "AWS/SageMaker"
INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"
_NAME = "1-63 letters, digits and hyphens, starting with a letter or digit"


class ISageMakerInferenceFleet(IInferenceFleet, Protocol):
    """A SageMaker inference fleet, built here (:class:`SageMakerInferenceFleet`) or imported
    (:meth:`SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes`).

    Every ``metric_*()`` method only reads: it returns an ``aws_cloudwatch.Metric`` (default period 5
    minutes, the statistic named in its docstring) and takes ``aws_cloudwatch.MetricOptions``
    keywords (``period``, ``statistic``, ``label``, ``dimensions_map``, ...) to override them.
    """

    @property
    def endpoint_name(self) -> str:
        """The endpoint's name (the ``EndpointName`` dimension)."""
        ...

    @property
    def endpoint_arn(self) -> str:
        """The endpoint's ARN."""
        ...

    @property
    def variant_name(self) -> str:
        """The production variant (the ``VariantName`` dimension)."""
        ...

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...
    def metric(self, metric_name: str, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_invocations(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_invocation_4xx_errors(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_invocation_5xx_errors(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_error_rate(self, **options: Unpack[MathOptions]) -> cw.MathExpression: ...
    def metric_model_latency(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_overhead_latency(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_concurrent_requests_per_model(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_cpu_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_memory_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class SageMakerFleetMetrics(Construct, metaclass=jsii.JSIIAbstractClass):
    """The metrics and the invoke grant of a SageMaker fleet, from its endpoint and variant names
    (built or imported).

    Every metric method only reads: it returns an ``aws_cloudwatch.Metric`` attached to this
    construct (default period 5 minutes, the statistic its docstring names) and takes
    ``aws_cloudwatch.MetricOptions`` keywords to override them, like aws-cdk-lib's ``metric*()``
    methods.
    """

    endpoint_name: str
    """The endpoint's name (CloudFormation generates it for a fleet built here)."""
    endpoint_arn: str
    """The endpoint's ARN."""
    variant_name: str
    """The production variant: the metrics' ``VariantName`` dimension."""
    _connections: ec2.Connections
    _grant_principal: iam.IPrincipal

    @property
    def connections(self) -> ec2.Connections:
        """The model's security group (no inbound; SageMaker is invoked through its API)."""
        return self._connections

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The model's execution role (an import without ``execution_role_arn``: an
        ``iam.UnknownPrincipal``)."""
        return self._grant_principal

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke the endpoint, including streaming responses."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(INVOKE_ACTIONS), resource_arns=[self.endpoint_arn]
        )

    def _dimensions(self) -> dict[str, str]:
        return {"EndpointName": self.endpoint_name, "VariantName": self.variant_name}

    def metric(self, metric_name: str, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Any ``AWS/SageMaker`` metric of the variant (dimensions ``EndpointName``, ``VariantName``;
        Average)."""
        return resource_metric(
            self, INVOCATION_NAMESPACE, metric_name, self._dimensions(), statistic="Average", options=options
        )

    def _sum(self, metric_name: str, options: MetricOptions) -> cw.Metric:
        return resource_metric(
            self, INVOCATION_NAMESPACE, metric_name, self._dimensions(), statistic="Sum", options=options
        )

    def metric_invocations(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Requests sent to the variant (``Invocations``, Sum)."""
        return self._sum("Invocations", options)

    def metric_invocation_4xx_errors(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Requests the model answered 4xx (``Invocation4XXErrors``, Sum)."""
        return self._sum("Invocation4XXErrors", options)

    def metric_invocation_5xx_errors(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Requests the model answered 5xx (``Invocation5XXErrors``, Sum)."""
        return self._sum("Invocation5XXErrors", options)

    def metric_error_rate(self, **options: Unpack[MathOptions]) -> cw.MathExpression:
        """Percent of invocations that failed with a 5xx (model or container errors).

        :param options: ``color``, ``label`` and ``period`` overrides. Default: 5 minutes, labelled
            ``"5xx (% of invocations)"``.
        """
        period = options.get("period", DEFAULT_PERIOD)
        expression = cw.MathExpression(
            expression="IF(FILL(invocations, 0) > 0, 100 * FILL(errors5xx, 0) / FILL(invocations, 0), 0)",
            using_metrics={
                "invocations": self.metric_invocations(period=period, label="Invocations (Sum)"),
                "errors5xx": self.metric_invocation_5xx_errors(
                    period=period, label="Invocation5XXErrors (Sum)"
                ),
            },
            label="5xx (% of invocations)",
            period=period,
        )
        return with_math_options(expression, options)

    def metric_model_latency(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Time the model took to answer, in microseconds (``ModelLatency``, Average; pass
        ``statistic="p99"`` for a percentile)."""
        return self.metric("ModelLatency", **options)

    def metric_overhead_latency(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """SageMaker's own time per request on top of the model's, in microseconds
        (``OverheadLatency``, Average)."""
        return self.metric("OverheadLatency", **options)

    def metric_concurrent_requests_per_model(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Concurrent requests per model copy, high resolution (``ConcurrentRequestsPerModel``,
        Average): what the endpoint's auto scaling tracks."""
        return self.metric("ConcurrentRequestsPerModel", **options)

    def _instance(self, metric_name: str, options: MetricOptions) -> cw.Metric:
        return resource_metric(
            self, INSTANCE_NAMESPACE, metric_name, self._dimensions(), statistic="Average", options=options
        )

    def metric_cpu_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Host CPU, % summed over vCPUs (``/aws/sagemaker/Endpoints`` ``CPUUtilization``, Average)."""
        return self._instance("CPUUtilization", options)

    def metric_memory_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Host memory, % (``/aws/sagemaker/Endpoints`` ``MemoryUtilization``, Average): loading the
        weights needs room on the host before they reach the Neuron devices."""
        return self._instance("MemoryUtilization", options)


class SageMakerInferenceFleet(SageMakerFleetMetrics, InferenceFleetBase):
    """A fleet serving one model on a SageMaker real-time endpoint on ``ml.<instance_type>``.

    A model in the VPC (network isolation when the weights come from S3), a least-privilege
    execution role, an endpoint config on ``ml.<type>`` with derived timeouts, volume and KMS key,
    and Application Auto Scaling on concurrent requests per model.

    Model and endpoint-config changes (a new image, new artifacts) update the endpoint in place and
    keep the instance count auto scaling reached. SageMaker refuses to change the *instance type* of
    a variant registered with auto scaling: to move to another instance type, create a new fleet (a
    new construct id), shift clients, then remove the old one.

    SageMaker runs no code of ours on its instances: there is no ``node_metrics`` (SageMaker publishes
    no Neuron metrics for them; the endpoint's are the ``metric_*()`` methods), and no
    ``hugging_face_token`` (SageMaker has no secret injection for model containers, so the token would
    sit in plain text in the model: upload precompiled artifacts and set ``ModelSpec.artifact_uri``).

    Every invalid combination raises :class:`~cdk_neuron.errors.NeuronConfigError`, naming this
    construct's path, in the constructor before any resource exists.

    :param vpc: the VPC. Required.
    :param model: what to serve. Required.
    :param engine: serving container with a SageMaker image in private ECR. Default:
        ``ServingEngine.optimum_neuron()``.
    :param instance_type: a Neuron type SageMaker hosting offers, e.g. ``"inf2.xlarge"`` (``"ml."``
        prefix accepted). Default: the cheapest instance the model fits
        (:func:`~cdk_neuron.planner.size_model`).
    :param min_capacity: endpoint instances, at least 1. Default: 1.
    :param max_capacity: the most endpoint instances scaling may run. Default: twice ``min_capacity``.
    :param vpc_subnets: subnets for the model's network interfaces. Default: private subnets with egress.
    :param availability_zone_ids: AZ name -> AZ ID of the selected subnets' zones in this account, e.g.
        ``{"us-east-1a": "use1-az4"}``. Zones in a Region both offerings sources rule out are dropped, and
        a fleet with none is refused; a zone only the AZ snapshot omits is left out while enough listed
        zones remain, else kept with a warning (one source's silence is never a refusal). Default:
        None - only the region is checked.
    :param min_availability_zones: fewest zones the model's interfaces must span. Also the floor for
        ``min_capacity``. Default: 1.
    :param artifact_key: KMS key of the artifact bucket, granted decrypt. Default: None (SSE-S3).
    :param artifact_manifest: the artifact's manifest (``ArtifactManifest.from_file(...)`` on a copy of
        the ``cdk-neuron-artifact.json`` that ``cdk-neuron compile`` writes at the artifact prefix). The
        fleet refuses, at synthesis and naming each, an artifact compiled for another batch, sequence
        length, TP, dtype, engine or Neuron SDK than it would serve. Default: None - not checked here
        (``cdk-neuron preflight`` reads the manifest from S3).
    :param kms_key: key for the ML storage volume. Default: a new key with rotation, kept on stack
        deletion per ``removal_policy``.
    :param removal_policy: for the key this construct creates. Default:
        ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``.
    :param target_concurrency: in-flight plus queued requests per model copy to track. Default:
        ``batch_size`` (every batch slot busy).
    :param variant_name: production variant name (the auto-scaling resource id uses it). Default:
        ``"AllTraffic"``.
    :param model_data_download_timeout_seconds: how long SageMaker may take to copy the model from S3
        to an instance. Default: derived from the weights (60-3,600 s).
    :param container_startup_health_check_timeout_seconds: how long the container may take to load
        the model and pass its health check. Default: derived from the weights (60-3,600 s).
    :param volume_size_gb: ML storage volume per instance. Default: 2 x weights + 20 GiB, in GB.
        Refused on trn1, trn1n and trn2, which serve from their local NVMe (SageMaker accepts no
        VolumeSizeInGB for them).
    :param measured_startup: start-up phases timed on a real deployment (the S3 download and the
        container becoming ready); they replace the estimates (each still x 1.5). Explicit timeouts
        above win over them. Default: None - estimated from published load times.

    :ivar endpoint: the SageMaker endpoint.
    :ivar endpoint_config: the endpoint config (instance type and count, volume, timeouts).
    :ivar sagemaker_model: the SageMaker model (container, VPC config, network isolation).
    :ivar execution_role: the model's execution role (also ``grant_principal``).
    :ivar endpoint_name: the endpoint's name (CloudFormation generates it).
    :ivar variant_name: the production variant (the ``VariantName`` dimension).
    :ivar scalable_target: the variant's Application Auto Scaling target (``min_capacity`` ..
        ``max_capacity``, with its target-tracking policy): add scheduled or step scaling with
        ``scale_on_schedule()`` / ``scale_on_metric()``, as aws-autoscaling's group allows.
    :ivar container_startup_timeout_seconds: ``ContainerStartupHealthCheckTimeoutInSeconds``: how long
        the container may take to answer.
    :ivar model_data_download_timeout_seconds: ``ModelDataDownloadTimeoutInSeconds``: how long the S3
        download may take.
    """

    _MIN_CAPACITY: ClassVar[int] = 1

    endpoint: sagemaker.CfnEndpoint
    endpoint_config: sagemaker.CfnEndpointConfig
    sagemaker_model: sagemaker.CfnModel
    execution_role: iam.IRole
    scalable_target: appscaling.ScalableTarget
    container_startup_timeout_seconds: int
    model_data_download_timeout_seconds: int

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        model: ModelSpec,
        engine: ServingEngine | None = None,
        instance_type: str | None = None,
        min_capacity: int = 1,
        max_capacity: int | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        availability_zone_ids: Mapping[str, str] | None = None,
        min_availability_zones: int = 1,
        artifact_key: kms.IKey | None = None,
        artifact_manifest: ArtifactManifest | None = None,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        target_concurrency: float | None = None,
        variant_name: str = "AllTraffic",
        model_data_download_timeout_seconds: int | None = None,
        container_startup_health_check_timeout_seconds: int | None = None,
        volume_size_gb: int | None = None,
        measured_startup: MeasuredStartup | None = None,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self.variant_name = matching("variant_name", variant_name, SAGEMAKER_NAME, _NAME)
            self._timeouts_given = (
                model_data_download_timeout_seconds,
                container_startup_health_check_timeout_seconds,
            )
            self._volume_size_gb = volume_size_gb
            shared = self._validate_shared(
                vpc=vpc,
                model=model,
                engine=engine,
                instance_type=instance_type,
                min_capacity=min_capacity,
                max_capacity=max_capacity,
                vpc_subnets=vpc_subnets,
                availability_zone_ids=availability_zone_ids,
                min_availability_zones=min_availability_zones,
                artifact_key=artifact_key,
                target_concurrency=target_concurrency,
                measured_startup=measured_startup,
                artifact_manifest=artifact_manifest,
            )

            self._init_shared(shared, kms_key=kms_key, removal_policy=removal_policy)
            built: SageMakerFleet = build_sagemaker_fleet(
                self,
                SageMakerSettings(
                    vpc=shared.vpc,
                    subnets=shared.subnets,
                    placement_subnets=shared.placement_subnets,
                    model=shared.model,
                    engine=shared.engine,
                    plan=shared.plan,
                    min_capacity=shared.min_capacity,
                    max_capacity=shared.max_capacity,
                    key=self.kms_key,
                    key_created=kms_key is None,
                    removal_policy=removal_policy,
                    artifact_key=shared.artifact_key,
                    target_concurrency=shared.target_concurrency,
                    measured_startup=shared.measured_startup,
                    variant_name=self.variant_name,
                    model_data_download_timeout_seconds=model_data_download_timeout_seconds,
                    container_startup_health_check_timeout_seconds=container_startup_health_check_timeout_seconds,
                    volume_size_gb=volume_size_gb,
                ),
            )
            self.endpoint = built.endpoint
            self.endpoint_config = built.endpoint_config
            self.sagemaker_model = built.model
            self.execution_role = built.execution_role
            self.scalable_target = built.scalable_target
            self.endpoint_name = built.endpoint.attr_endpoint_name
            self.endpoint_arn = built.endpoint.ref
            self.container_startup_timeout_seconds = built.timeouts.container_startup_health_check_seconds
            self.model_data_download_timeout_seconds = built.timeouts.model_data_download_seconds
            self._connections = built.connections
            self._grant_principal = built.execution_role
            self._annotate(
                shared,
                model_location=SAGEMAKER_MODEL_DIR,
                hub_model_note=", and the SageMaker model cannot run with network isolation",
            )
            self._record(shared, backend="sagemaker")

    # -- backend hooks of the shared validation ------------------------------------------------

    def _check_plan(self, plan: ServingPlan) -> None:
        if plan.instance_type not in SAGEMAKER_TYPES:
            raise NeuronConfigError(
                "instance_type",
                plan.instance_type,
                f"SageMaker hosting offers ml.{', ml.'.join(sorted(SAGEMAKER_TYPES))}",
            )

    def _serving_image(self, engine: ServingEngine) -> ContainerImage | None:
        return engine.sagemaker_image  # the image SageMaker runs (TGI's differs from its EC2 image)

    def _check_engine(self, engine: ServingEngine, model: ModelSpec, plan: ServingPlan) -> None:
        engine.validate(model, plan)
        engine.validate_sagemaker()

    def _replicas_per_target(self, plan: ServingPlan) -> int:
        return 1  # SageMaker runs one container per instance

    def _check_startup(self, model: ModelSpec, plan: ServingPlan, measured: MeasuredStartup | None) -> None:
        download, startup = self._timeouts_given
        sagemaker_timeouts(
            plan.weights_gib,
            precompiled=model.precompiled,
            instance_type=plan.instance_type,
            model_data_download_seconds=download,
            container_startup_health_check_seconds=startup,
            measured=measured,
            volume_gb=sagemaker_storage_gb(plan.instance_type, plan.weights_gib, given=self._volume_size_gb),
        )

    def _annotate_backend(self, annotations: cdk.Annotations) -> None:
        if self.plan.replicas_per_instance > 1:
            annotations.add_warning_v2(
                SAGEMAKER_IDLE_CORES_WARNING_ID,
                f"TP {self.plan.tensor_parallel} uses {self.plan.tensor_parallel} of "
                f"{get_instance(self.instance_type).neuron_cores} NeuronCores: a SageMaker endpoint runs one "
                "container per instance, so the rest idle; pick a smaller instance or TP = all cores",
            )

    # -- import ----------------------------------------------------------------------------------

    @staticmethod
    def from_sagemaker_inference_fleet_attributes(
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variant_name: str = "AllTraffic",
        security_group_id: str | None = None,
        execution_role_arn: str | None = None,
    ) -> ISageMakerInferenceFleet:
        """A SageMaker fleet defined elsewhere (another stack or app), for its metrics and grants.

        The endpoint and variant names are all every ``metric_*()`` and ``grant_invoke`` need.
        Tokens (e.g. ``Fn.import_value``) are accepted; literals are checked.

        :param endpoint_name: the endpoint's name. Required. The invoke grant names
            ``arn:<partition>:sagemaker:<region>:<account>:endpoint/<name>`` in this stack's account and
            region, the name lowercased as SageMaker's ARNs are (a token is used as given).
        :param variant_name: the production variant. Default: ``"AllTraffic"``.
        :param security_group_id: the model's security group, for ``connections``. Default: None -
            ``connections`` holds no security group.
        :param execution_role_arn: the model's execution role, the import's ``grant_principal`` (grants
            add a policy to it in this stack). Default: None - ``grant_principal`` is an ``iam.UnknownPrincipal``:
            identity-policy grants only warn and resource-policy grants fail at synthesis, as for
            aws-cdk-lib's imports without a role.
        """
        return _ImportedSageMakerInferenceFleet(
            scope,
            id,
            endpoint_name=endpoint_name,
            variant_name=variant_name,
            security_group_id=security_group_id,
            execution_role_arn=execution_role_arn,
        )


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class _ImportedSageMakerInferenceFleet(SageMakerFleetMetrics):
    """A SageMaker fleet from its attributes
    (:meth:`SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variant_name: str,
        security_group_id: str | None,
        execution_role_arn: str | None,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self.endpoint_name = attribute("endpoint_name", endpoint_name, SAGEMAKER_NAME, _NAME)
            self.variant_name = attribute("variant_name", variant_name, SAGEMAKER_NAME, _NAME)
            if security_group_id is not None:
                attribute(
                    "security_group_id", security_group_id, SECURITY_GROUP_ID, "a security group id, sg-..."
                )
            if execution_role_arn is not None:
                attribute("execution_role_arn", execution_role_arn, IAM_ROLE_ARN, "an IAM role ARN")
        name = endpoint_name if cdk.Token.is_unresolved(endpoint_name) else endpoint_name.lower()
        self.endpoint_arn = cdk.Stack.of(self).format_arn(
            service="sagemaker", resource="endpoint", resource_name=name
        )
        self._connections = ec2.Connections(
            security_groups=[
                ec2.SecurityGroup.from_security_group_id(self, "SecurityGroup", security_group_id)
            ]
            if security_group_id is not None
            else None
        )
        self._grant_principal = cast(
            iam.IPrincipal,
            iam.Role.from_role_arn(self, "ExecutionRole", execution_role_arn)
            if execution_role_arn is not None
            else iam.UnknownPrincipal(resource=self),
        )


__all__ = [
    "INVOKE_ACTIONS",
    "SAGEMAKER_TYPES",
    "ISageMakerInferenceFleet",
    "SageMakerFleetMetrics",
    "SageMakerInferenceFleet",
]
