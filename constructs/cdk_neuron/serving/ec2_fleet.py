"""Ec2InferenceFleet: serve a model on EC2 Auto Scaling Neuron instances behind an internal ALB."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron import _cdk_values
from cdk_neuron._scope import reported_by
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.metrics import series
from cdk_neuron.metrics.names import (
    CORE_UTILIZATION,
    DEVICE_MEMORY_USED,
    DEVICE_MEMORY_UTILIZATION,
    ECC_CORRECTED,
    ECC_UNCORRECTED,
    NeuronMetric,
)
from cdk_neuron.metrics.node_metrics import NodeMetrics
from cdk_neuron.metrics.options import DEFAULT_PERIOD, MathOptions, MetricOptions, with_math_options
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving import start_paths
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_neuron.serving.ec2_backend import (
    Ec2Fleet,
    build_ec2_fleet,
    concurrency_metric,
    launch_failure_metric,
    load_balancer_metric,
    target_group_metric,
)
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.fleet import IInferenceFleet, InferenceFleetBase, attribute
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.settings import Ec2Settings
from cdk_neuron.serving.timing import STARTUP_MAX_SECONDS, MeasuredStartup, ec2_startup
from cdk_neuron.serving.user_data import MODEL_MOUNT
from cdk_neuron.validation import (
    ALB_FULL_NAME,
    CONSTRUCT_ADDRESS,
    IAM_ROLE_ARN,
    LOG_GROUP_NAME,
    SECURITY_GROUP_ID,
    TARGET_GROUP_FULL_NAME,
    whole_number,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

# gp3 volumes are 1 to 16,384 GiB (Amazon EBS volume types).
_GP3_MAX_GIB = 16384
# As the training job logs (BatchTrainingCluster's log_retention).
DEFAULT_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS


class IEc2InferenceFleet(IInferenceFleet, Protocol):
    """An EC2 inference fleet, built here (:class:`Ec2InferenceFleet`) or imported
    (:meth:`Ec2InferenceFleet.from_ec2_inference_fleet_attributes`).

    Every ``metric_*()`` method only reads: it returns an ``aws_cloudwatch.Metric`` (default period 5
    minutes, the statistic named in its docstring) and takes ``aws_cloudwatch.MetricOptions``
    keywords (``period``, ``statistic``, ``label``, ``dimensions_map``, ...) to override them.
    """

    @property
    def fleet_id(self) -> str:
        """The fleet's ``Fleet`` dimension (and ``cdk-neuron:fleet`` tag): its construct address."""
        ...

    @property
    def load_balancer_full_name(self) -> str:
        """The load balancer's ``LoadBalancer`` dimension (``app/<name>/<id>``)."""
        ...

    @property
    def target_group_full_name(self) -> str:
        """The target group's ``TargetGroup`` dimension (``targetgroup/<name>/<id>``)."""
        ...

    @property
    def node_metrics(self) -> NodeMetrics | None:
        """Where the instances publish Neuron metrics, or None when they publish none."""
        ...

    @property
    def min_capacity(self) -> int:
        """The fewest instances the fleet scales to: monitoring pages for idle instances above it."""
        ...

    @property
    def log_group(self) -> logs.ILogGroup | None:
        """The replicas' CloudWatch Logs group (a stream per instance and replica), or None when an
        import was not given its name."""
        ...

    def metric_request_count(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_http_code_target_5xx(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_http_code_elb_5xx(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_http_code_elb_503(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_target_response_time(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_error_rate(self, **options: Unpack[MathOptions]) -> cw.MathExpression: ...
    def metric_healthy_host_count(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_unhealthy_host_count(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_concurrent_requests(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_launch_failures(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron(self, metric: NeuronMetric, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron_core_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron_device_memory_used(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron_device_memory_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron_ecc_corrected(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...
    def metric_neuron_ecc_uncorrected(self, **options: Unpack[MetricOptions]) -> cw.Metric: ...


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class Ec2FleetMetrics(Construct, metaclass=jsii.JSIIAbstractClass):
    """The metrics of an EC2 fleet, from the names they are dimensioned by (built or imported).

    Every method only reads: it returns an ``aws_cloudwatch.Metric`` attached to this construct
    (default period 5 minutes, the statistic its docstring names) and takes
    ``aws_cloudwatch.MetricOptions`` keywords to override them, like aws-cdk-lib's ``metric*()``
    methods.
    """

    fleet_id: str
    """The fleet's ``Fleet`` dimension (and ``cdk-neuron:fleet`` tag): its construct address."""
    load_balancer_full_name: str
    """The load balancer's ``LoadBalancer`` dimension (``app/<name>/<id>``)."""
    target_group_full_name: str
    """The target group's ``TargetGroup`` dimension (``targetgroup/<name>/<id>``)."""
    node_metrics: NodeMetrics | None
    """Where the instances publish Neuron metrics, or None when they publish none."""
    min_capacity: int
    """The fewest instances the fleet scales to: monitoring pages for idle instances above it."""
    log_group: logs.ILogGroup | None
    """The replicas' CloudWatch Logs group: every model server's output, one stream per instance and
    replica (``<instance-id>/replica-<n>``), kept after Auto Scaling replaces the instance. None on an
    import that was not given its name."""
    _connections: ec2.Connections
    _grant_principal: iam.IPrincipal

    @property
    def connections(self) -> ec2.Connections:
        """The load balancer's security group with the listener port as default port."""
        return self._connections

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The instances' role (an import without ``instance_role_arn``: an ``iam.UnknownPrincipal``)."""
        return self._grant_principal

    # -- load balancer and target group --------------------------------------------------------

    def _target_group(self, metric_name: str, statistic: str, options: MetricOptions) -> cw.Metric:
        return target_group_metric(
            self,
            self.load_balancer_full_name,
            self.target_group_full_name,
            metric_name,
            statistic=statistic,
            options=options,
        )

    def metric_request_count(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Requests the load balancer routed to the fleet (``RequestCount``, Sum)."""
        return self._target_group("RequestCount", "Sum", options)

    def metric_http_code_target_5xx(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """5xx answers of the model servers (``HTTPCode_Target_5XX_Count``, Sum)."""
        return self._target_group("HTTPCode_Target_5XX_Count", "Sum", options)

    def metric_http_code_elb_5xx(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """5xx answers of the load balancer itself, e.g. 503 with no healthy target
        (``HTTPCode_ELB_5XX_Count``, Sum; dimension ``LoadBalancer`` only)."""
        return load_balancer_metric(
            self, self.load_balancer_full_name, "HTTPCode_ELB_5XX_Count", statistic="Sum", options=options
        )

    def metric_http_code_elb_503(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """503 answers of the load balancer (``HTTPCode_ELB_503_Count``, Sum): at zero instances, the
        requests that wake the fleet (the scale-from-zero alarm watches it)."""
        return load_balancer_metric(
            self, self.load_balancer_full_name, "HTTPCode_ELB_503_Count", statistic="Sum", options=options
        )

    def metric_target_response_time(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Seconds from a request leaving the load balancer until the answer's headers
        (``TargetResponseTime``, Average; pass ``statistic="p99"`` for a percentile)."""
        return self._target_group("TargetResponseTime", "Average", options)

    def metric_error_rate(self, **options: Unpack[MathOptions]) -> cw.MathExpression:
        """Percent of requests answered 5xx, by the targets or by the load balancer itself.

        Load-balancer 5xx are added to the denominator as well: requests the ALB rejects before it
        picks a target (503 when no target is healthy) are not in ``RequestCount`` (ALB CloudWatch
        metrics reference), and they are exactly the requests a dead fleet produces.

        :param options: ``color``, ``label`` and ``period`` overrides. Default: 5 minutes, labelled
            ``"5xx (% of requests)"``.
        """
        period = options.get("period", DEFAULT_PERIOD)
        expression = cw.MathExpression(
            expression=(
                "IF(FILL(requests, 0) + FILL(elb5xx, 0) > 0, "
                "100 * (FILL(target5xx, 0) + FILL(elb5xx, 0)) / (FILL(requests, 0) + FILL(elb5xx, 0)), 0)"
            ),
            using_metrics={
                "requests": self.metric_request_count(period=period),
                "target5xx": self.metric_http_code_target_5xx(period=period),
                "elb5xx": self.metric_http_code_elb_5xx(period=period),
            },
            label="5xx (% of requests)",
            period=period,
        )
        return with_math_options(expression, options)

    def metric_healthy_host_count(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Instances passing the health check (``HealthyHostCount``, Average)."""
        return self._target_group("HealthyHostCount", "Average", options)

    def metric_unhealthy_host_count(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Instances failing the health check (``UnHealthyHostCount``, Average)."""
        return self._target_group("UnHealthyHostCount", "Average", options)

    # -- what the instances publish ------------------------------------------------------------

    def metric_concurrent_requests(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """In-flight plus queued requests per instance, published by every instance every 20 s
        (``CdkNeuron/Serving`` ``ConcurrentRequests``, dimension ``Fleet``; Average): what target
        tracking scales on."""
        return concurrency_metric(self, self.fleet_id, options)

    def metric_launch_failures(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Instances whose launch was abandoned (boot or readiness failed; ``serving/lifecycle.sh``
        writes why to the log group), one data point each (``CdkNeuron/Serving`` ``LaunchFailures``,
        dimension ``Fleet``; Sum). Each is a launch and a termination Auto Scaling then repeats."""
        return launch_failure_metric(self, self.fleet_id, options)

    def metric_neuron(self, metric: NeuronMetric, **options: Unpack[MetricOptions]) -> cw.Metric:
        """A Neuron node metric of the serving workload (:mod:`cdk_neuron.metrics.names`), in the
        series every serving instance of the ``node_metrics`` environment writes into (dimensions
        ``Environment``, ``Workload=serving``), with the metric's own statistic unless given.

        Refused (:class:`~cdk_neuron.errors.NeuronConfigError`) when the fleet has no ``node_metrics``.
        """
        published = self.node_metrics
        if published is None:
            raise NeuronConfigError(
                "node_metrics",
                None,
                f"{self.node.path} publishes no Neuron node metrics; give it "
                "node_metrics=NodeMetrics(environment=...) to read them",
            )
        rest: dict[str, Any] = dict(options)
        period = rest.pop("period", DEFAULT_PERIOD)
        statistic = rest.pop("statistic", None)
        base = series.neuron(
            published.namespace, metric, published.environment, "serving", period=period, statistic=statistic
        )
        return base.with_(**rest).attach_to(self)

    def metric_neuron_core_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """NeuronCore utilization, % (``NeuronCoreUtilization``, Average)."""
        return self.metric_neuron(CORE_UTILIZATION, **options)

    def metric_neuron_device_memory_used(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Neuron device memory (HBM) in use, bytes (``NeuronDeviceMemoryUsed``, Maximum)."""
        return self.metric_neuron(DEVICE_MEMORY_USED, **options)

    def metric_neuron_device_memory_utilization(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Neuron device memory (HBM) in use, % of the instance's (``NeuronDeviceMemoryUtilization``, Maximum)."""
        return self.metric_neuron(DEVICE_MEMORY_UTILIZATION, **options)

    def metric_neuron_ecc_corrected(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Corrected ECC events in Neuron device memory (``EccCorrected``, Sum)."""
        return self.metric_neuron(ECC_CORRECTED, **options)

    def metric_neuron_ecc_uncorrected(self, **options: Unpack[MetricOptions]) -> cw.Metric:
        """Uncorrected ECC events: a failing device (``EccUncorrected``, Sum)."""
        return self.metric_neuron(ECC_UNCORRECTED, **options)


class Ec2InferenceFleet(Ec2FleetMetrics, InferenceFleetBase):
    """A fleet serving one model on Neuron instances in EC2 Auto Scaling, behind an internal ALB.

    An Auto Scaling group in private subnets of every configured AZ that offers the type, launched
    from a template with the ECS-optimized Amazon Linux 2023 Neuron AMI (SSM parameter: Neuron driver,
    Docker and tools installed), IMDSv2 required, an encrypted root and gp3 data volume, and node
    programs (``cdk_neuron/node_programs/files/serving``) that run one container per replica with
    explicit ``--device`` flags and ``NEURON_RT_VISIBLE_CORES``, logging to a KMS-encrypted CloudWatch
    Logs group (one stream per instance and replica) that outlives the instances. A launch lifecycle hook keeps each
    instance out of service until every replica is healthy; updates are instance refreshes that keep
    ``min_healthy_percentage`` of the desired capacity in service and count a replacement only once
    the same hook released it. Behind it: an internal ALB (HTTPS with ``certificate``, else HTTP from the VPC
    only), access logs, invalid headers dropped, least-outstanding-requests routing. Target tracking
    on in-flight requests per instance (and optionally on request count).

    Every invalid combination raises :class:`~cdk_neuron.errors.NeuronConfigError`, naming this
    construct's path, in the constructor before any resource exists.

    :param vpc: the VPC. Required.
    :param model: what to serve. Required.
    :param engine: serving container. Default: ``ServingEngine.optimum_neuron()`` (the actively
        maintained Inf2 path; TGI and the NxD Inference vLLM plugin are in maintenance).
    :param instance_type: e.g. ``"inf2.xlarge"`` (``"ml."`` prefix accepted). Default: the cheapest
        instance the model fits (:func:`~cdk_neuron.planner.size_model`).
    :param min_capacity: instances. 0 costs nothing while idle: the first request to the load
        balancer then starts one instance (it answers 503 until that instance is healthy, i.e. for
        the startup time), and target tracking scales back to 0 when the fleet is idle. Default: 1.
    :param max_capacity: the most instances scaling may run. Default: twice ``min_capacity`` (at least 1).
    :param vpc_subnets: subnets for the load balancer and the instances, in at least two AZs.
        Default: private subnets with egress.
    :param availability_zone_ids: AZ name -> AZ ID of the selected subnets' zones in this account, e.g.
        ``{"us-east-1a": "use1-az4"}``. Zones in a Region both offerings sources rule out are dropped, and
        a fleet with none is refused; a zone only the AZ snapshot omits is left out while enough listed
        zones remain, else kept with a warning (one source's silence is never a refusal). Default:
        None - only the region is checked.
    :param min_availability_zones: fewest zones the instances must span; production stacks pass 2.
        Also the floor for ``min_capacity``. Default: 1.
    :param min_healthy_percentage: capacity kept in service while instances are replaced (the instance
        refresh of a stack update, and the group's instance maintenance policy), as a percentage of the
        desired capacity; 100 launches each replacement before terminating the instance it replaces,
        even for a fleet of one. Default: 100.
    :param certificate: ACM certificate for an HTTPS listener. Default: None - HTTP on port 80,
        reachable from the VPC CIDR only.
    :param hugging_face_token: secret whose string is a Hugging Face token, read at boot. Default: None.
    :param artifact_key: KMS key of the artifact bucket, granted decrypt. Default: None (SSE-S3).
    :param artifact_manifest: the artifact's manifest (``ArtifactManifest.from_file(...)`` on a copy of
        the ``cdk-neuron-artifact.json`` that ``cdk-neuron compile`` writes at the artifact prefix). The
        fleet refuses, at synthesis and naming each, an artifact compiled for another batch, sequence
        length, TP, dtype, engine or Neuron SDK than it would serve. Default: None - not checked here
        (``cdk-neuron preflight`` reads the manifest from S3).
    :param warm_pool: keep stopped, pre-initialized instances (image pulled, artifacts synced) so
        scale-out and a wake from zero skip the node's set-up, the image pull and, where the artifacts
        are on the data volume, their transfer (the warm path of ``timing.ec2_startup_model``; a
        replacement and an instance refresh launch new instances). Stopped instances bill their EBS
        volumes (``start_paths.standing_cost``, printed by ``cdk-neuron plan``). Not with ``spot``;
        instances scale-in returns to the pool stop serving and complete their hook themselves
        (``serving/lifecycle-watch.sh``). Default: False.
    :param warm_pool_size: with ``warm_pool``, the stopped instances the pool keeps while the fleet runs
        ``min_capacity``, 1 to ``max_capacity - min_capacity`` (the pool's ``MaxGroupPreparedCapacity``
        is ``min_capacity`` + this; it holds fewer as the fleet grows, and a scale-out beyond them is
        a new launch, the cold path). Each stopped instance bills its volumes. Default: None - the pool
        keeps ``max_capacity`` - desired (PutWarmPool's default).
    :param spot: run on Spot capacity (price-capacity-optimized, capacity rebalancing). Default: False.
    :param kms_key: key for the EBS volumes and the replica log group. Its policy must let the
        ``AWSServiceRoleForAutoScaling`` role use it (matched by ``aws:PrincipalArn`` under ``Principal:
        *``, as ``cdk_neuron.iam_statements.allow_instance_launches`` writes it: a policy naming the role
        fails in an account that never used Auto Scaling), and CloudWatch Logs
        (``logs.<region>.amazonaws.com``) for this account's log groups; a ``kms.Key`` of this app gets
        both statements added, an imported key must have them. Default: a new key with rotation, kept on stack deletion
        per ``removal_policy``.
    :param removal_policy: for the key, the access-log bucket and the replica log group this construct
        creates; with ``DESTROY`` the access-log bucket is emptied before it is deleted. Default:
        ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``.
    :param access_log_bucket: ALB access-log bucket (must use SSE-S3). Default: a new versioned,
        SSL-only bucket.
    :param machine_image: AMI for the instances: Amazon Linux 2023 with the Neuron driver and Docker.
        Default: the ECS-optimized AL2023 Neuron AMI of the release :data:`cdk_neuron.ami.RELEASE`,
        through that release's own SSM parameter, so a new AMI never arrives unasked (pass
        ``cdk_neuron.ami.machine_image(<release>)`` to move; ``cdk-neuron ami`` shows the newest). Everything else the
        instances install comes from the Amazon Linux repositories, in S3, so the fleet needs no
        internet access.
    :param notification_topic: SNS topic for Auto Scaling launch/terminate/error notifications.
        Default: None.
    :param target_requests_per_minute: also track ALB requests per instance per minute. Default: None.
    :param target_concurrency: in-flight plus queued requests per instance to track. Default:
        ``batch_size`` x replicas per instance (every batch slot busy).
    :param node_metrics: run the Neuron metrics publisher on every instance and let the instance role
        publish into its namespace only. Default: None (no node metrics).
    :param startup_timeout_seconds: how long an instance may take from launch until every replica is
        healthy, at most :data:`cdk_neuron.timeouts.STARTUP_MAX`; the node gives up (and says why)
        shortly before it, records lifecycle heartbeats while it makes progress (the launch hook's
        heartbeat timeout is the progress window, not this), and CloudFormation's creation wait
        allows a replacement launch
        (``cdk_neuron.timeouts``, docs/timeouts-and-keep-alives.md). Default: derived from the model size (:func:`cdk_neuron.serving.timing.ec2_startup`).
    :param data_volume_gib: size of the encrypted gp3 data volume holding images, weights and compiled
        artifacts, 1 to 16,384. Default: 40 GiB + 3 x weights + 20 GiB, rounded up to 10 GiB.
    :param measured_startup: start-up phases timed on a real deployment; they replace the estimates
        (each still x 1.5). Default: None - estimated from published load times.
    :param log_retention: retention of the replica log group, where every model server's output goes
        (stream ``<instance-id>/replica-<n>``). Default: three months, as the training job logs.

    :ivar load_balancer: the internal Application Load Balancer.
    :ivar listener: the load balancer's listener (HTTPS on 443 with a certificate, else HTTP on 80).
    :ivar target_group: the instances' target group (least outstanding requests).
    :ivar auto_scaling_group: the Auto Scaling group.
    :ivar launch_template: the instances' launch template.
    :ivar instance_role: the instances' role, e.g. to grant access to more artifacts (also
        ``grant_principal``).
    :ivar access_log_bucket: the load balancer's access-log bucket.
    :ivar log_group: the replicas' CloudWatch Logs group: every model server's output, one stream per
        instance and replica (``<instance-id>/replica-<n>``), kept after Auto Scaling replaces the
        instance.
    :ivar url: ``http(s)://<internal ALB DNS name>``.
    :ivar startup_timeout_seconds: how long an instance may take from launch until every replica is
        healthy.
    :ivar fleet_id: the fleet's ``Fleet`` dimension (and ``cdk-neuron:fleet`` tag): its construct
        address.
    :ivar node_metrics: where the instances publish Neuron metrics, or None when they publish none.
    """

    _MIN_CAPACITY: ClassVar[int] = 0

    load_balancer: elbv2.ApplicationLoadBalancer
    listener: elbv2.ApplicationListener
    target_group: elbv2.ApplicationTargetGroup
    auto_scaling_group: autoscaling.AutoScalingGroup
    launch_template: ec2.LaunchTemplate
    instance_role: iam.IRole
    access_log_bucket: s3.IBucket
    log_group: logs.ILogGroup
    url: str
    startup_timeout_seconds: int

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
        min_healthy_percentage: int = 100,
        certificate: acm.ICertificate | None = None,
        hugging_face_token: secretsmanager.ISecret | None = None,
        artifact_key: kms.IKey | None = None,
        artifact_manifest: ArtifactManifest | None = None,
        warm_pool: bool = False,
        warm_pool_size: int | None = None,
        spot: bool = False,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = _cdk_values.DEFAULT_REMOVAL_POLICY,
        access_log_bucket: s3.IBucket | None = None,
        machine_image: ec2.IMachineImage | None = None,
        notification_topic: sns.ITopic | None = None,
        target_requests_per_minute: int | None = None,
        target_concurrency: float | None = None,
        node_metrics: NodeMetrics | None = None,
        startup_timeout_seconds: int | None = None,
        data_volume_gib: int | None = None,
        measured_startup: MeasuredStartup | None = None,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            region = cdk.Stack.of(self).region
            if cdk.Token.is_unresolved(region):
                # ELBv2 access logs are written by the region's Elastic Load Balancing account, which
                # the bucket policy must name (Elastic Load Balancing User Guide, "Enable access logs
                # for your Application Load Balancer"); an environment-agnostic stack has no region.
                raise NeuronConfigError(
                    "region",
                    "unresolved",
                    "Ec2InferenceFleet needs a stack with a concrete region, env=cdk.Environment(region=...), "
                    "to grant its access-log bucket to that region's load-balancer account",
                )
            if warm_pool and spot:
                raise NeuronConfigError(
                    "warm_pool",
                    True,
                    "EC2 Auto Scaling warm pools cannot be combined with Spot (mixed instances policies); "
                    "use warm_pool with on-demand capacity, or spot without a warm pool",
                )
            if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
                raise NeuronConfigError(
                    "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
                )
            if startup_timeout_seconds is not None:
                whole_number("startup_timeout_seconds", startup_timeout_seconds, unit="seconds")
                if startup_timeout_seconds > STARTUP_MAX_SECONDS:
                    raise NeuronConfigError(
                        "startup_timeout_seconds",
                        startup_timeout_seconds,
                        f"heartbeats hold a launch lifecycle action at most {STARTUP_MAX_SECONDS + 1} s "
                        f"(100 x its heartbeat timeout); use <= {STARTUP_MAX_SECONDS}",
                    )
            if data_volume_gib is not None:
                whole_number("data_volume_gib", data_volume_gib, maximum=_GP3_MAX_GIB, unit="GiB")
            min_healthy_percentage = whole_number(
                "min_healthy_percentage", min_healthy_percentage, minimum=0, maximum=100
            )
            if target_requests_per_minute is not None:
                whole_number("target_requests_per_minute", target_requests_per_minute)
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

            pool = start_paths.pool_size(
                warm_pool_size,
                warm_pool=warm_pool,
                min_capacity=shared.min_capacity,
                max_capacity=shared.max_capacity,
            )
            self._init_shared(shared, kms_key=kms_key, removal_policy=removal_policy)
            self.node_metrics = node_metrics
            self.fleet_id = self.node.addr
            built: Ec2Fleet = build_ec2_fleet(
                self,
                Ec2Settings(
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
                    min_healthy_percentage=min_healthy_percentage,
                    certificate=certificate,
                    hugging_face_token=hugging_face_token,
                    access_log_bucket=access_log_bucket,
                    machine_image=machine_image,
                    notification_topic=notification_topic,
                    warm_pool=warm_pool,
                    spot=spot,
                    target_requests_per_minute=target_requests_per_minute,
                    fleet_id=self.fleet_id,
                    node_metrics=node_metrics,
                    startup_timeout_seconds=startup_timeout_seconds,
                    data_volume_gib=data_volume_gib,
                    log_retention=log_retention,
                    warm_pool_size=pool,
                ),
            )
            self.load_balancer = built.load_balancer
            self.listener = built.listener
            self.target_group = built.target_group
            self.auto_scaling_group = built.auto_scaling_group
            self.launch_template = built.launch_template
            self.instance_role = built.instance_role
            self.access_log_bucket = built.access_log_bucket
            self.log_group = built.log_group
            self.url = built.url
            self.startup_timeout_seconds = built.startup.seconds
            self.load_balancer_full_name = built.load_balancer.load_balancer_full_name
            self.target_group_full_name = built.target_group.target_group_full_name
            self._connections = built.connections
            self._grant_principal = built.instance_role
            self._user_data = built.user_data
            self._annotate(shared, model_location=MODEL_MOUNT)
            self._record(shared, backend="ec2", warm_pool=warm_pool, warm_pool_size=pool)

    # -- backend hooks of the shared validation ------------------------------------------------

    def _check_engine(self, engine: ServingEngine, model: ModelSpec, plan: ServingPlan) -> None:
        engine.validate(model, plan)

    def _replicas_per_target(self, plan: ServingPlan) -> int:
        return plan.replicas_per_instance  # target tracking is per instance

    def _check_startup(self, model: ModelSpec, plan: ServingPlan, measured: MeasuredStartup | None) -> None:
        ec2_startup(
            plan.weights_gib,
            precompiled=model.precompiled,
            instance_type=plan.instance_type,
            replicas=plan.replicas_per_instance,
            measured=measured,
        )

    def _check_subnets(self, availability_zones: tuple[str, ...]) -> None:
        if len(set(availability_zones)) < 2:
            raise NeuronConfigError(
                "vpc_subnets",
                sorted(set(availability_zones)),
                "an Application Load Balancer needs subnets in at least two availability zones",
            )

    # -- import ----------------------------------------------------------------------------------

    @staticmethod
    def from_ec2_inference_fleet_attributes(
        scope: Construct,
        id: str,
        *,
        load_balancer_full_name: str,
        target_group_full_name: str,
        fleet_id: str,
        security_group_id: str,
        port: int = 80,
        instance_role_arn: str | None = None,
        node_metrics: NodeMetrics | None = None,
        log_group_name: str | None = None,
        min_capacity: int = 0,
    ) -> IEc2InferenceFleet:
        """An EC2 fleet defined elsewhere (another stack or app), for its metrics and connections.

        These are the fewest attributes with which every ``metric_*()`` and ``connections`` work: the
        three metric dimensions and the load balancer's security group. Tokens (e.g.
        ``Fn.import_value``) are accepted; literals are checked.

        :param load_balancer_full_name: the ALB's ``LoadBalancerFullName`` (``app/<name>/<id>``).
            Required.
        :param target_group_full_name: the target group's ``TargetGroupFullName``
            (``targetgroup/<name>/<id>``). Required.
        :param fleet_id: the fleet's ``fleet_id`` (its construct address; also the instances'
            ``cdk-neuron:fleet`` tag). Required.
        :param security_group_id: the load balancer's security group; ``connections.allow_from(...)``
            adds ingress rules to it in this stack. Required.
        :param port: the listener port (``connections.default_port``). Default: 80 (443 for a fleet
            with a certificate).
        :param instance_role_arn: the instances' role, the import's ``grant_principal`` (grants add a
            policy to it in this stack). Default: None - ``grant_principal`` is an ``iam.UnknownPrincipal``:
            identity-policy grants only warn and resource-policy grants fail at synthesis, as for
            aws-cdk-lib's imports without a role.
        :param node_metrics: where the instances publish Neuron metrics, for ``metric_neuron*()``.
            Default: None (those methods refuse).
        :param log_group_name: the fleet's replica log group (``log_group.log_group_name``), e.g. to
            add metric filters or grant reading it. Default: None - ``log_group`` is None.
        :param min_capacity: the fleet's ``min_capacity``: ``NeuronMonitoring`` pages for idle
            instances above it only. Default: 0 (every instance left idle pages).
        """
        return _ImportedEc2InferenceFleet(
            scope,
            id,
            load_balancer_full_name=load_balancer_full_name,
            target_group_full_name=target_group_full_name,
            fleet_id=fleet_id,
            security_group_id=security_group_id,
            port=port,
            instance_role_arn=instance_role_arn,
            node_metrics=node_metrics,
            log_group_name=log_group_name,
            min_capacity=min_capacity,
        )

    def add_user_data(self, *commands: str) -> None:
        """Run ``commands`` (bash, as root) at an instance's first boot, after the cdk-neuron boot
        program (data volume mounted, image pulled, replicas' units installed and starting).

        They run under ``set -euo pipefail``: a failing command ends the user data but not the
        replicas, and the instance still enters service once they are healthy. The 16 KB user-data
        limit is checked at synthesis, these commands included.
        """
        self._user_data.add_commands(*commands)


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class _ImportedEc2InferenceFleet(Ec2FleetMetrics):
    """An EC2 fleet from its attributes (:meth:`Ec2InferenceFleet.from_ec2_inference_fleet_attributes`)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        load_balancer_full_name: str,
        target_group_full_name: str,
        fleet_id: str,
        security_group_id: str,
        port: int,
        instance_role_arn: str | None,
        node_metrics: NodeMetrics | None,
        log_group_name: str | None,
        min_capacity: int,
    ) -> None:
        super().__init__(scope, id)
        with reported_by(self):
            self.load_balancer_full_name = attribute(
                "load_balancer_full_name",
                load_balancer_full_name,
                ALB_FULL_NAME,
                "a load balancer's full name, app/<name>/<16 hex digits>",
            )
            self.target_group_full_name = attribute(
                "target_group_full_name",
                target_group_full_name,
                TARGET_GROUP_FULL_NAME,
                "a target group's full name, targetgroup/<name>/<16 hex digits>",
            )
            self.fleet_id = attribute(
                "fleet_id", fleet_id, CONSTRUCT_ADDRESS, "a fleet's fleet_id, c8 and 40 hex digits"
            )
            attribute(
                "security_group_id", security_group_id, SECURITY_GROUP_ID, "a security group id, sg-..."
            )
            whole_number("port", port, maximum=65535)
            self.min_capacity = whole_number("min_capacity", min_capacity, minimum=0)
            if instance_role_arn is not None:
                attribute("instance_role_arn", instance_role_arn, IAM_ROLE_ARN, "an IAM role ARN")
            if log_group_name is not None:
                attribute(
                    "log_group_name",
                    log_group_name,
                    LOG_GROUP_NAME,
                    "a log group name, 1 to 512 of a-z A-Z 0-9 _ - / . #",
                )
            if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
                raise NeuronConfigError(
                    "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
                )
        self.node_metrics = node_metrics
        group = ec2.SecurityGroup.from_security_group_id(
            self, "SecurityGroup", security_group_id, allow_all_outbound=False
        )
        self._connections = ec2.Connections(security_groups=[group], default_port=ec2.Port.tcp(port))
        self._grant_principal = cast(
            iam.IPrincipal,
            iam.Role.from_role_arn(self, "InstanceRole", instance_role_arn)
            if instance_role_arn is not None
            else iam.UnknownPrincipal(resource=self),
        )
        self.log_group = (
            logs.LogGroup.from_log_group_name(self, "LogGroup", log_group_name)
            if log_group_name is not None
            else None
        )


__all__ = ["Ec2FleetMetrics", "Ec2InferenceFleet", "IEc2InferenceFleet"]
