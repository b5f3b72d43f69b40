"""InferenceFleet: serve a model on Inferentia2 (or Trainium) at the lowest cost per token."""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdk_neuron._subnets import select_subnets
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring.node_metrics import NodeMetrics
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.backends import FleetBackend
from cdk_neuron.serving.ec2_backend import Ec2Fleet, build_ec2_fleet
from cdk_neuron.serving.engines import ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.placement import select_availability_zones
from cdk_neuron.serving.sagemaker_backend import SAGEMAKER_MODEL_DIR, SageMakerFleet, build_sagemaker_fleet
from cdk_neuron.serving.settings import FleetSettings
from cdk_neuron.serving.timing import ec2_startup, sagemaker_storage_gb, sagemaker_timeouts
from cdk_neuron.serving.user_data import MODEL_MOUNT
from cdk_neuron.validation import whole_number

# SageMaker hosting offers these Neuron types (AWS::SageMaker::EndpointConfig InstanceType enum).
_SAGEMAKER_TYPES = frozenset(
    {"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge",
     "trn1n.32xlarge", "trn2.48xlarge"}
)  # fmt: skip


def _whole(field: str, value: object, minimum: int, maximum: int | None = None) -> int:
    return whole_number(field, value, minimum=minimum, maximum=maximum)


@jsii.implements(ec2.IConnectable)
class InferenceFleet(Construct):
    """A fleet serving one model on Neuron instances, on EC2 Auto Scaling or a SageMaker endpoint.

    The model's :class:`ModelSpec` drives everything: the planner sizes it against each instance's HBM
    (picking the cheapest instance when ``instance_type`` is omitted), and the plan decides the TP per
    replica, the replicas per instance, their Neuron devices and cores, disk sizes and start-up
    timeouts. Every invalid combination raises :class:`~cdk_neuron.errors.NeuronConfigError` in the
    constructor.

    ``FleetBackend.ec2()`` (default): an Auto Scaling group in private subnets of every configured AZ
    that offers the type, launched from a template with the ECS-optimized Amazon Linux 2023 Neuron
    AMI (SSM parameter: Neuron driver, Docker and tools installed), IMDSv2 required, an encrypted root
    and gp3 data volume, and node programs (``cdk_neuron/node_programs/files/serving``) that run one
    container per replica with explicit ``--device`` flags and ``NEURON_RT_VISIBLE_CORES``. A launch lifecycle hook
    keeps each instance out of service until every replica is healthy; rolling updates wait for the
    same readiness signal. Behind it: an internal ALB (HTTPS with ``certificate``, else HTTP from the
    VPC only), access logs, invalid headers dropped, least-outstanding-requests routing. Target
    tracking on in-flight requests per instance (and optionally on request count).

    ``FleetBackend.sagemaker()``: a model in the VPC (network isolation when the weights come from S3),
    a least-privilege execution role, an endpoint config on ``ml.<type>`` with derived timeouts,
    volume and KMS key, and Application Auto Scaling on concurrent requests per model.

    :param vpc: the VPC.
    :param model: what to serve.
    :param engine: serving container. Default: ``ServingEngine.optimum_neuron()`` (the actively
        maintained Inf2 path; TGI and the NxD Inference vLLM plugin are in maintenance).
    :param backend: Default: ``FleetBackend.ec2()``.
    :param instance_type: e.g. ``"inf2.xlarge"`` (``"ml."`` prefix accepted). Default: the cheapest
        instance the model fits (:func:`~cdk_neuron.planner.size_model`).
    :param min_capacity: instances (EC2) or endpoint instances (SageMaker). Default: 1. An EC2 fleet
        may use 0 to cost nothing while idle: the first request to the load balancer then starts one
        instance (it answers 503 until that instance is healthy, i.e. for the startup time), and
        target tracking scales back to 0 when the fleet is idle. SageMaker needs at least 1.
    :param max_capacity: Default: twice ``min_capacity`` (at least 1).
    :param vpc_subnets: subnets for the load balancer and instances / SageMaker interfaces. Default:
        private subnets with egress.
    :param availability_zone_ids: AZ name -> AZ ID of the selected subnets' zones in this account, e.g.
        ``{"us-east-1a": "use1-az4"}``. Zones whose ID does not offer the instance type are dropped
        (catalog offerings) and a fleet with none is refused. Default: None - only the region is checked.
    :param min_availability_zones: fewest zones the instances must span; production stacks pass 2.
        Also the floor for ``min_capacity``. Default: 1.
    :param min_healthy_percentage: capacity kept in service while instances are replaced (rolling
        updates and instance refreshes); 100 launches replacements before terminating. Default: 100.
    :param certificate: ACM certificate for an HTTPS listener (EC2). Default: None - HTTP on port 80,
        reachable from the VPC CIDR only.
    :param hugging_face_token: secret whose string is a Hugging Face token, read at boot (EC2 only;
        SageMaker would store it in plain text in the model). Default: None.
    :param artifact_key: KMS key of the artifact bucket, granted decrypt. Default: None (SSE-S3).
    :param warm_pool: keep stopped, pre-initialized instances (image pulled, artifacts synced) so
        scale-out skips boot and download (EC2, not with ``spot``). Default: False.
    :param spot: run on Spot capacity (price-capacity-optimized, capacity rebalancing; EC2). Default:
        False.
    :param kms_key: key for EBS volumes or the SageMaker volume. Its policy must let the
        ``AWSServiceRoleForAutoScaling`` role use it (EC2). Default: a new key with rotation, kept on
        stack deletion per ``removal_policy``.
    :param removal_policy: for the key and the access-log bucket this construct creates. Default:
        ``RemovalPolicy.RETAIN``.
    :param access_log_bucket: ALB access-log bucket (must use SSE-S3). Default: a new versioned,
        SSL-only bucket.
    :param machine_image: AMI for the instances: Amazon Linux 2023 with the Neuron driver and Docker.
        Default: the ECS-optimized AL2023 Neuron AMI via
        ``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id`` (resolved at
        each deployment; pin an AMI here to control when instances change). Everything else the
        instances install comes from the Amazon Linux repositories, in S3, so the fleet needs no
        internet access.
    :param notification_topic: SNS topic for Auto Scaling launch/terminate/error notifications (EC2).
        Default: None.
    :param target_requests_per_minute: also track ALB requests per instance per minute (EC2). Default:
        None.
    :param target_concurrency: in-flight plus queued requests per instance (EC2) or per model copy
        (SageMaker) to track. Default: ``batch_size`` x replicas per instance (every batch slot busy).
    :param node_metrics: run the Neuron metrics publisher on every instance (EC2) and let the instance
        role publish into its namespace only. Default: None (no node metrics). SageMaker instances
        run no code of ours: their endpoint metrics come from SageMaker.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        model: ModelSpec,
        engine: ServingEngine | None = None,
        backend: FleetBackend | None = None,
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
        warm_pool: bool = False,
        spot: bool = False,
        kms_key: kms.IKey | None = None,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
        access_log_bucket: s3.IBucket | None = None,
        machine_image: ec2.IMachineImage | None = None,
        notification_topic: sns.ITopic | None = None,
        target_requests_per_minute: int | None = None,
        target_concurrency: float | None = None,
        node_metrics: NodeMetrics | None = None,
    ) -> None:
        super().__init__(scope, id)
        if not isinstance(model, ModelSpec):
            raise NeuronConfigError("model", model, "pass a cdk_neuron.ModelSpec")
        engine = engine if engine is not None else ServingEngine.optimum_neuron()
        backend = backend if backend is not None else FleetBackend.ec2()
        if not isinstance(engine, ServingEngine):
            raise NeuronConfigError(
                "engine", engine, "use ServingEngine.optimum_neuron(), .vllm_neuron() or .tgi()"
            )
        if not isinstance(backend, FleetBackend):
            raise NeuronConfigError("backend", backend, "use FleetBackend.ec2() or FleetBackend.sagemaker()")
        self._check_backend_props(
            backend,
            certificate=certificate,
            hugging_face_token=hugging_face_token,
            warm_pool=warm_pool,
            spot=spot,
            access_log_bucket=access_log_bucket,
            machine_image=machine_image,
            notification_topic=notification_topic,
            target_requests_per_minute=target_requests_per_minute,
            node_metrics=node_metrics,
        )
        if node_metrics is not None and not isinstance(node_metrics, NodeMetrics):
            raise NeuronConfigError(
                "node_metrics", node_metrics, "pass cdk_neuron.monitoring.NodeMetrics(environment=...)"
            )

        if instance_type is not None:
            get_instance(instance_type)  # refuses non-Neuron types, listing the valid ones
        plan = model.plan(instance_type)
        if backend.is_sagemaker and plan.instance_type not in _SAGEMAKER_TYPES:
            raise NeuronConfigError(
                "instance_type",
                plan.instance_type,
                f"SageMaker hosting offers ml.{', ml.'.join(sorted(_SAGEMAKER_TYPES))}",
            )
        engine.validate(model, plan)
        if backend.is_sagemaker:
            engine.validate_sagemaker()

        # An EC2 fleet may idle at zero instances (it wakes on the first request); a SageMaker
        # endpoint always keeps at least one instance.
        min_capacity = _whole("min_capacity", min_capacity, 1 if backend.is_sagemaker else 0)
        max_capacity = _whole(
            "max_capacity",
            max_capacity if max_capacity is not None else max(2 * min_capacity, 1),
            max(min_capacity, 1),
        )
        min_healthy_percentage = _whole("min_healthy_percentage", min_healthy_percentage, 0, 100)
        if target_requests_per_minute is not None:
            _whole("target_requests_per_minute", target_requests_per_minute, 1)
        concurrency = self._target_concurrency(target_concurrency, model, plan, backend)

        # Timing and volume limits are refused here, before any resource exists.
        if backend.is_sagemaker:
            sagemaker_timeouts(
                plan.weights_gib,
                precompiled=model.precompiled,
                instance_type=plan.instance_type,
                model_data_download_seconds=backend.model_data_download_timeout_seconds,
                container_startup_health_check_seconds=backend.container_startup_health_check_timeout_seconds,
                measured=backend.measured_startup,
            )
            sagemaker_storage_gb(plan.instance_type, plan.weights_gib, given=backend.volume_size_gb)
        else:
            ec2_startup(
                plan.weights_gib,
                precompiled=model.precompiled,
                instance_type=plan.instance_type,
                replicas=plan.replicas_per_instance,
                measured=backend.measured_startup,
            )

        subnets = vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        selected = select_subnets(vpc, subnets)
        stack = cdk.Stack.of(self)
        placement = select_availability_zones(
            plan.instance_type,
            subnet_azs=selected.availability_zones,
            region=None if cdk.Token.is_unresolved(stack.region) else stack.region,
            availability_zone_ids=availability_zone_ids,
            min_availability_zones=min_availability_zones,
        )
        if 0 < min_capacity < min_availability_zones:
            raise NeuronConfigError(
                "min_capacity",
                min_capacity,
                f"spreading over {min_availability_zones} availability zones needs at least "
                f"{min_availability_zones} instances; raise min_capacity or lower min_availability_zones",
            )
        if backend.is_ec2 and len(set(selected.availability_zones)) < 2:
            raise NeuronConfigError(
                "vpc_subnets",
                sorted(set(selected.availability_zones)),
                "an Application Load Balancer needs subnets in at least two availability zones",
            )
        placement_subnets = ec2.SubnetSelection(
            subnets=[s for s in selected.subnets if s.availability_zone in placement.availability_zones]
        )

        self.model = model
        self.engine = engine
        self.backend = backend
        self.plan: ServingPlan = plan
        self.instance_type: str = plan.instance_type
        self.availability_zones: tuple[str, ...] = placement.availability_zones
        self.key: kms.IKey = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron inference fleet {self.node.path}: instance and model volumes",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        settings = FleetSettings(
            vpc=vpc,
            subnets=subnets,
            placement_subnets=placement_subnets,
            model=model,
            engine=engine,
            backend=backend,
            plan=plan,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            min_healthy_percentage=min_healthy_percentage,
            key=self.key,
            key_created=kms_key is None,
            removal_policy=removal_policy,
            certificate=certificate,
            hugging_face_token=hugging_face_token,
            artifact_key=artifact_key,
            access_log_bucket=access_log_bucket,
            machine_image=machine_image,
            notification_topic=notification_topic,
            warm_pool=warm_pool,
            spot=spot,
            target_requests_per_minute=target_requests_per_minute,
            target_concurrency=concurrency,
            fleet_id=self.node.addr,
            node_metrics=node_metrics,
        )

        self._ec2: Ec2Fleet | None = None
        self._sagemaker: SageMakerFleet | None = None
        if backend.is_ec2:
            self._ec2 = build_ec2_fleet(self, settings)
            self.connections: ec2.Connections = self._ec2.connections
            self.url: str = self._ec2.url
            self.startup_timeout_seconds: int = self._ec2.startup.seconds
        else:
            self._sagemaker = build_sagemaker_fleet(self, settings)
            self.connections = self._sagemaker.connections
            self.url = self._sagemaker.endpoint.attr_endpoint_name
            self.startup_timeout_seconds = self._sagemaker.timeouts.container_startup_health_check_seconds
        self.target_concurrency: float = concurrency
        self.node_metrics: NodeMetrics | None = node_metrics
        self._annotate(placement.warnings)

    # ------------------------------------------------------------------------------------------
    # Validation helpers
    # ------------------------------------------------------------------------------------------

    @staticmethod
    def _check_backend_props(backend: FleetBackend, **props: object) -> None:
        if backend.is_sagemaker:
            for name, value in props.items():
                if value not in (None, False):
                    why = (
                        "SageMaker has no secret injection for model containers, so the token would sit in "
                        "plain text in the model; upload precompiled artifacts and set ModelSpec.artifact_uri"
                        if name == "hugging_face_token"
                        else "applies only to FleetBackend.ec2()"
                    )
                    raise NeuronConfigError(name, value, why)
        if props["warm_pool"] and props["spot"]:
            raise NeuronConfigError(
                "warm_pool",
                True,
                "EC2 Auto Scaling warm pools cannot be combined with Spot (mixed instances policies); "
                "use warm_pool with on-demand capacity, or spot without a warm pool",
            )

    @staticmethod
    def _target_concurrency(
        given: float | None, model: ModelSpec, plan: ServingPlan, backend: FleetBackend
    ) -> float:
        if given is None:
            # Every continuous-batching slot of every replica busy; SageMaker runs one container.
            replicas = plan.replicas_per_instance if backend.is_ec2 else 1
            return float(model.batch_size * replicas)
        if isinstance(given, bool) or not isinstance(given, (int, float)) or given <= 0:
            raise NeuronConfigError("target_concurrency", given, "must be a number > 0")
        return float(given)

    def _annotate(self, placement_warnings: tuple[str, ...]) -> None:
        annotations = cdk.Annotations.of(self)
        if self.engine.status == "maintenance":
            annotations.add_warning_v2(
                "cdk-neuron:engine-maintenance",
                f"{self.engine.describe()}: {self.engine.status_note}",
            )
        if not self.model.precompiled:
            annotations.add_warning_v2(
                "cdk-neuron:hub-model",
                "The model comes from the Hugging Face Hub: every new instance downloads the weights and "
                "needs a precompiled or cached Neuron configuration"
                + (
                    ", and the SageMaker model cannot run with network isolation"
                    if self.backend.is_sagemaker
                    else ""
                )
                + ". Export it once and set ModelSpec.artifact_uri for fast scale-out.",
            )
        # Where the container finds the model: the mounted artifacts, or the Hub id itself.
        location = (
            (SAGEMAKER_MODEL_DIR if self.backend.is_sagemaker else MODEL_MOUNT)
            if self.model.precompiled
            else self.model.served_model_name
        )
        caveat = self.engine.served_name_caveat(self.model, model=location)
        if caveat is not None:
            annotations.add_warning_v2("cdk-neuron:served-model-name", caveat)
        if self.backend.is_sagemaker and self.plan.replicas_per_instance > 1:
            annotations.add_warning_v2(
                "cdk-neuron:sagemaker-idle-cores",
                f"TP {self.plan.tensor_parallel} uses {self.plan.tensor_parallel} of "
                f"{get_instance(self.instance_type).neuron_cores} NeuronCores: a SageMaker endpoint runs one "
                "container per instance, so the rest idle; pick a smaller instance or TP = all cores",
            )
        for warning in placement_warnings:
            annotations.add_warning_v2("cdk-neuron:offerings-unknown", warning)

    # ------------------------------------------------------------------------------------------
    # Attributes
    # ------------------------------------------------------------------------------------------

    @property
    def load_balancer(self) -> elbv2.ApplicationLoadBalancer | None:
        """The internal ALB (EC2 backend), else None."""
        return self._ec2.load_balancer if self._ec2 else None

    @property
    def listener(self) -> elbv2.ApplicationListener | None:
        return self._ec2.listener if self._ec2 else None

    @property
    def target_group(self) -> elbv2.ApplicationTargetGroup | None:
        return self._ec2.target_group if self._ec2 else None

    @property
    def auto_scaling_group(self) -> autoscaling.AutoScalingGroup | None:
        """The Auto Scaling group (EC2 backend), else None."""
        return self._ec2.auto_scaling_group if self._ec2 else None

    @property
    def launch_template(self) -> ec2.LaunchTemplate | None:
        return self._ec2.launch_template if self._ec2 else None

    @property
    def instance_role(self) -> iam.IRole | None:
        """The instances' role (EC2 backend), e.g. to grant access to more artifacts."""
        return self._ec2.instance_role if self._ec2 else None

    @property
    def access_log_bucket(self) -> s3.IBucket | None:
        return self._ec2.access_log_bucket if self._ec2 else None

    @property
    def endpoint(self) -> sagemaker.CfnEndpoint | None:
        """The SageMaker endpoint (SageMaker backend), else None."""
        return self._sagemaker.endpoint if self._sagemaker else None

    @property
    def endpoint_config(self) -> sagemaker.CfnEndpointConfig | None:
        return self._sagemaker.endpoint_config if self._sagemaker else None

    @property
    def sagemaker_model(self) -> sagemaker.CfnModel | None:
        return self._sagemaker.model if self._sagemaker else None

    @property
    def execution_role(self) -> iam.IRole | None:
        """The SageMaker execution role (SageMaker backend), else None."""
        return self._sagemaker.execution_role if self._sagemaker else None

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke the SageMaker endpoint (including streaming responses).

        The EC2 backend's load balancer has no IAM authorization: use
        ``fleet.connections.allow_from(peer, fleet.connections.default_port)`` instead.
        """
        if self._sagemaker is None:
            raise NeuronConfigError(
                "grant_invoke",
                grantee,
                "the EC2 backend's load balancer is authorized by network, not IAM; use "
                "fleet.connections.allow_from(...)",
            )
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            resource_arns=[self._sagemaker.endpoint.ref],
        )


__all__ = ["InferenceFleet"]
