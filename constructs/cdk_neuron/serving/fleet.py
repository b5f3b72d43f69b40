"""What every inference fleet shares: :class:`IInferenceFleet` and :class:`InferenceFleetBase`.

:class:`~cdk_neuron.serving.Ec2InferenceFleet` and :class:`~cdk_neuron.serving.SageMakerInferenceFleet`
extend :class:`InferenceFleetBase`, which validates the props both backends take (model, engine,
instance type, capacity, placement) and creates the volume key. Their imports
(``from_*_attributes``) implement only the interfaces: an imported fleet has no model or plan.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, Node

from cdk_neuron import _manifest
from cdk_neuron._subnets import select_subnets
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_neuron.planner import ServingPlan
from cdk_neuron.serving.artifact_manifest import ArtifactManifest
from cdk_neuron.serving.engines import ContainerImage, ServingEngine
from cdk_neuron.serving.model_spec import ModelSpec
from cdk_neuron.serving.placement import select_availability_zones
from cdk_neuron.serving.timing import MeasuredStartup
from cdk_neuron.validation import matching, number, whole_number

# Synth warning ids, in aws-cdk-lib's "@scope/module:camelCase" form like the other constructs'
# (acknowledge one with cdk.Annotations.of(scope).acknowledge_warning(id, reason)).
ENGINE_MAINTENANCE_WARNING_ID = "@cdk-neuron/serving:engineMaintenance"
HUB_MODEL_WARNING_ID = "@cdk-neuron/serving:hubModel"
SERVED_MODEL_NAME_WARNING_ID = "@cdk-neuron/serving:servedModelName"
OFFERING_UNKNOWN_WARNING_ID = "@cdk-neuron/serving:offeringUnknown"
SAGEMAKER_IDLE_CORES_WARNING_ID = "@cdk-neuron/serving:sagemakerIdleCores"


def attribute(field: str, value: object, pattern: re.Pattern[str], what: str) -> str:
    """An imported attribute: a CDK token (checked at deployment) or a literal ``pattern`` matches."""
    if isinstance(value, str) and cdk.Token.is_unresolved(value):
        return value
    return matching(field, value, pattern, what)


class IInferenceFleet(ec2.IConnectable, iam.IGrantable, Protocol):
    """An inference fleet, built here or imported: reachable through ``connections``, acting as
    ``grant_principal``."""

    @property
    def node(self) -> Node:
        """The construct tree node."""
        ...

    @property
    def connections(self) -> ec2.Connections:
        """The fleet's network access: allow clients with ``connections.allow_default_port_from(...)``."""
        ...

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The principal the fleet's serving code runs as: grant it access to what the model reads."""
        ...


@dataclass(frozen=True)
class SharedProps:
    """The props both fleet classes take, validated (internal)."""

    vpc: ec2.IVpc
    model: ModelSpec
    engine: ServingEngine
    plan: ServingPlan
    min_capacity: int
    max_capacity: int
    subnets: ec2.SubnetSelection
    placement_subnets: ec2.SubnetSelection
    availability_zones: tuple[str, ...]
    placement_warnings: tuple[str, ...]
    artifact_key: kms.IKey | None
    target_concurrency: float
    measured_startup: MeasuredStartup | None


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class InferenceFleetBase(Construct, metaclass=jsii.JSIIAbstractClass):
    """A fleet serving one model on Neuron instances: what both backends share.

    The model's :class:`~cdk_neuron.serving.ModelSpec` drives everything: the planner sizes it
    against each instance's HBM (picking the cheapest instance when ``instance_type`` is omitted),
    and the plan decides the TP per replica, the replicas per instance, their Neuron devices and
    cores, disk sizes and start-up timeouts. Every invalid combination raises
    :class:`~cdk_neuron.errors.NeuronConfigError`, naming this construct's path, in the constructor
    before any resource exists.

    Abstract: build an :class:`~cdk_neuron.serving.Ec2InferenceFleet` or a
    :class:`~cdk_neuron.serving.SageMakerInferenceFleet`.

    :ivar model: what is served.
    :ivar engine: the serving container.
    :ivar plan: the sizing (:class:`~cdk_neuron.planner.ServingPlan`).
    :ivar instance_type: the Neuron instance type, without ``ml.``.
    :ivar availability_zones: the AZ names the fleet runs in (those of the subnets that offer the type).
    :ivar kms_key: the key of the instance or model volumes.
    :ivar target_concurrency: the concurrency target scaling tracks.
    :ivar min_capacity: the fewest instances the fleet scales to.
    :ivar max_capacity: the most instances the fleet scales to.
    """

    _MIN_CAPACITY: ClassVar[int]
    """The smallest ``min_capacity`` the backend accepts."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.model: ModelSpec
        self.engine: ServingEngine
        self.plan: ServingPlan
        self.instance_type: str
        self.availability_zones: tuple[str, ...]
        self.kms_key: kms.IKey
        self.target_concurrency: float
        self.min_capacity: int
        self.max_capacity: int

    # -- the interface -----------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def connections(self) -> ec2.Connections:
        """The fleet's network access."""

    @property
    @abc.abstractmethod
    def grant_principal(self) -> iam.IPrincipal:
        """The principal the fleet's serving code runs as."""

    # -- what each backend adds to the shared validation -----------------------------------------

    def _check_plan(self, plan: ServingPlan) -> None:
        """Refuse an instance type the backend does not offer."""

    @abc.abstractmethod
    def _check_engine(self, engine: ServingEngine, model: ModelSpec, plan: ServingPlan) -> None:
        """Refuse an engine the backend cannot run."""

    @abc.abstractmethod
    def _replicas_per_target(self, plan: ServingPlan) -> int:
        """Model copies behind one unit of ``target_concurrency`` (an instance, or a model copy)."""

    @abc.abstractmethod
    def _check_startup(self, model: ModelSpec, plan: ServingPlan, measured: MeasuredStartup | None) -> None:
        """Refuse start-up timings and volumes beyond the backend's limits."""

    def _check_subnets(self, availability_zones: tuple[str, ...]) -> None:
        """Refuse a subnet selection the backend cannot use."""

    def _serving_image(self, engine: ServingEngine) -> ContainerImage | None:
        """The image this backend runs the engine in (what an artifact's SDK must match)."""
        return engine.image

    def _check_artifact_manifest(
        self, manifest: ArtifactManifest | None, model: ModelSpec, plan: ServingPlan, engine: ServingEngine
    ) -> None:
        """Refuse an artifact whose manifest says it cannot be served here, naming every mismatch."""
        if manifest is None:
            return
        if not isinstance(manifest, ArtifactManifest):
            raise NeuronConfigError(
                "artifact_manifest",
                manifest,
                "pass cdk_neuron.serving.ArtifactManifest.from_file(path) (the cdk-neuron-artifact.json "
                "beside the artifact), or None",
            )
        found = [
            NeuronConfigError(f"artifact_manifest.{e.field}", e.value, e.fix)
            for e in manifest.mismatches(model, plan, engine.name, self._serving_image(engine))
        ]
        if found:
            raise NeuronConfigErrors(found) if len(found) > 1 else found[0]

    # -- shared validation and resources -----------------------------------------------------------

    def _validate_shared(
        self,
        *,
        vpc: ec2.IVpc,
        model: ModelSpec,
        engine: ServingEngine | None,
        instance_type: str | None,
        min_capacity: int,
        max_capacity: int | None,
        vpc_subnets: ec2.SubnetSelection | None,
        availability_zone_ids: Mapping[str, str] | None,
        min_availability_zones: int,
        artifact_key: kms.IKey | None,
        target_concurrency: float | None,
        measured_startup: MeasuredStartup | None,
        artifact_manifest: ArtifactManifest | None = None,
    ) -> SharedProps:
        """Validate the shared props (and the backend's hooks); creates nothing."""
        if not isinstance(model, ModelSpec):
            raise NeuronConfigError("model", model, "pass a cdk_neuron.ModelSpec")
        engine = engine if engine is not None else ServingEngine.optimum_neuron()
        if not isinstance(engine, ServingEngine):
            raise NeuronConfigError(
                "engine", engine, "use ServingEngine.optimum_neuron(), .vllm_neuron() or .tgi()"
            )
        if measured_startup is not None and not isinstance(measured_startup, MeasuredStartup):
            raise NeuronConfigError(
                "measured_startup",
                measured_startup,
                "pass a cdk_neuron.serving.MeasuredStartup (or None to estimate)",
            )
        if instance_type is not None:
            get_instance(instance_type)  # refuses non-Neuron types, listing the valid ones
        plan = model.plan(instance_type)
        self._check_plan(plan)
        self._check_engine(engine, model, plan)
        self._check_artifact_manifest(artifact_manifest, model, plan, engine)

        min_capacity = whole_number("min_capacity", min_capacity, minimum=self._MIN_CAPACITY)
        max_capacity = whole_number(
            "max_capacity",
            max_capacity if max_capacity is not None else max(2 * min_capacity, 1),
            minimum=max(min_capacity, 1),
        )
        if target_concurrency is None:
            # Every continuous-batching slot of every replica behind one scaling unit busy.
            concurrency = float(model.batch_size * self._replicas_per_target(plan))
        else:
            concurrency = number("target_concurrency", target_concurrency, above=0)
        # Timing and volume limits are refused here, before any resource exists.
        self._check_startup(model, plan, measured_startup)

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
        self._check_subnets(tuple(selected.availability_zones))
        return SharedProps(
            vpc=vpc,
            model=model,
            engine=engine,
            plan=plan,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
            subnets=subnets,
            placement_subnets=ec2.SubnetSelection(
                subnets=[s for s in selected.subnets if s.availability_zone in placement.availability_zones]
            ),
            availability_zones=placement.availability_zones,
            placement_warnings=placement.warnings,
            artifact_key=artifact_key,
            target_concurrency=concurrency,
            measured_startup=measured_startup,
        )

    def _init_shared(
        self, shared: SharedProps, *, kms_key: kms.IKey | None, removal_policy: cdk.RemovalPolicy
    ) -> None:
        """Set the shared attributes and create the volume key (the fleet's first resource)."""
        self.model = shared.model
        self.engine = shared.engine
        self.plan = shared.plan
        self.instance_type = shared.plan.instance_type
        self.availability_zones = shared.availability_zones
        self.kms_key = kms_key or kms.Key(
            self,
            "Key",
            description=f"cdk-neuron inference fleet {self.node.path}: instance and model volumes",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        self.target_concurrency = shared.target_concurrency
        self.min_capacity = shared.min_capacity
        self.max_capacity = shared.max_capacity

    def _annotate(self, shared: SharedProps, *, model_location: str, hub_model_note: str = "") -> None:
        """The synth warnings both backends give: engine status, Hub downloads, served names, AZs."""
        annotations = cdk.Annotations.of(self)
        if self.engine.status == "maintenance":
            annotations.add_warning_v2(
                ENGINE_MAINTENANCE_WARNING_ID,
                f"{self.engine.describe()}: {self.engine.status_note}",
            )
        if not self.model.precompiled:
            annotations.add_warning_v2(
                HUB_MODEL_WARNING_ID,
                "The model comes from the Hugging Face Hub: every new instance downloads the weights and "
                "needs a precompiled or cached Neuron configuration"
                + hub_model_note
                + ". Export it once and set ModelSpec.artifact_uri for fast scale-out.",
            )
        # Where the container finds the model: the mounted artifacts, or the Hub id itself.
        location = model_location if self.model.precompiled else self.model.served_model_name
        caveat = self.engine.served_name_caveat(self.model, model=location)
        if caveat is not None:
            annotations.add_warning_v2(SERVED_MODEL_NAME_WARNING_ID, caveat)
        self._annotate_backend(annotations)
        for warning in shared.placement_warnings:
            annotations.add_warning_v2(OFFERING_UNKNOWN_WARNING_ID, warning)

    def _annotate_backend(self, annotations: cdk.Annotations) -> None:
        """Warnings only one backend gives."""

    def _record(
        self, shared: SharedProps, *, backend: str, warm_pool: bool = False, warm_pool_size: int | None = None
    ) -> None:
        """What the ``cdk-neuron`` CLI reads back from the cloud assembly (:mod:`cdk_neuron._manifest`)."""
        _manifest.record_serving(
            self,
            backend=backend,
            engine=self.engine.name,
            model=shared.model,
            plan=shared.plan,
            min_capacity=shared.min_capacity,
            max_capacity=shared.max_capacity,
            availability_zones=shared.availability_zones,
            warm_pool=warm_pool,
            warm_pool_size=warm_pool_size,
        )


__all__ = [
    "ENGINE_MAINTENANCE_WARNING_ID",
    "HUB_MODEL_WARNING_ID",
    "OFFERING_UNKNOWN_WARNING_ID",
    "SAGEMAKER_IDLE_CORES_WARNING_ID",
    "SERVED_MODEL_NAME_WARNING_ID",
    "IInferenceFleet",
    "InferenceFleetBase",
    "attribute",
]
