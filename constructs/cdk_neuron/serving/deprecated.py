"""Deprecated: the 0.1 serving API, ``InferenceFleet(..., backend=FleetBackend.ec2())``.

Use :class:`~cdk_neuron.serving.Ec2InferenceFleet` or :class:`~cdk_neuron.serving.SageMakerInferenceFleet`
(``docs/migration/serving.md`` maps every old name to its new one). These two names remain only
while the README's examples still use them; each call warns (``DeprecationWarning``) and builds the
new class, so no fleet has an attribute that is None by backend. Plain Python until a fleet is built.
"""

from __future__ import annotations

import abc
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdk_neuron.serving.timing import MeasuredStartup

if TYPE_CHECKING:
    from constructs import Construct

    from cdk_neuron.serving.fleet import InferenceFleetBase

_DEPRECATED = (
    "cdk_neuron.serving.{old} is deprecated: use Ec2InferenceFleet(...) or SageMakerInferenceFleet(...), "
    "whose backend options are their own keyword props (docs/migration/serving.md)"
)


@dataclass(frozen=True)
class FleetBackend(abc.ABC):
    """Deprecated: pick the class instead (:class:`~cdk_neuron.serving.Ec2InferenceFleet`,
    :class:`~cdk_neuron.serving.SageMakerInferenceFleet`); the options are their keyword props.

    :param options: the backend's keyword props, as given to :meth:`ec2` or :meth:`sagemaker`.
    """

    options: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def ec2(
        *,
        startup_timeout_seconds: int | None = None,
        data_volume_gib: int | None = None,
        measured_startup: MeasuredStartup | None = None,
    ) -> FleetBackend:
        """Deprecated: :class:`~cdk_neuron.serving.Ec2InferenceFleet` with these keyword props.

        :param startup_timeout_seconds: Default: derived.
        :param data_volume_gib: Default: derived.
        :param measured_startup: Default: None.
        """
        warnings.warn(_DEPRECATED.format(old="FleetBackend"), DeprecationWarning, stacklevel=2)
        return _Ec2(
            {
                "startup_timeout_seconds": startup_timeout_seconds,
                "data_volume_gib": data_volume_gib,
                "measured_startup": measured_startup,
            }
        )

    @staticmethod
    def sagemaker(
        *,
        variant_name: str = "AllTraffic",
        model_data_download_timeout_seconds: int | None = None,
        container_startup_health_check_timeout_seconds: int | None = None,
        volume_size_gb: int | None = None,
        measured_startup: MeasuredStartup | None = None,
    ) -> FleetBackend:
        """Deprecated: :class:`~cdk_neuron.serving.SageMakerInferenceFleet` with these keyword props.

        :param variant_name: Default: ``"AllTraffic"``.
        :param model_data_download_timeout_seconds: Default: derived.
        :param container_startup_health_check_timeout_seconds: Default: derived.
        :param volume_size_gb: Default: derived.
        :param measured_startup: Default: None.
        """
        warnings.warn(_DEPRECATED.format(old="FleetBackend"), DeprecationWarning, stacklevel=2)
        return _SageMaker(
            {
                "variant_name": variant_name,
                "model_data_download_timeout_seconds": model_data_download_timeout_seconds,
                "container_startup_health_check_timeout_seconds": container_startup_health_check_timeout_seconds,
                "volume_size_gb": volume_size_gb,
                "measured_startup": measured_startup,
            }
        )

    @abc.abstractmethod
    def build(self, scope: Construct, id: str, props: dict[str, Any]) -> InferenceFleetBase:
        """The fleet class of this backend, with ``props`` and the backend's options."""


class _Ec2(FleetBackend):
    def build(self, scope: Construct, id: str, props: dict[str, Any]) -> InferenceFleetBase:
        from cdk_neuron.serving.ec2_fleet import Ec2InferenceFleet

        return Ec2InferenceFleet(scope, id, **props, **self.options)


class _SageMaker(FleetBackend):
    # The 0.1 API took every prop for both backends and ignored or refused the EC2-only ones unless
    # they kept their defaults; given a default, they are dropped here (anything else is a TypeError).
    _EC2_ONLY_DEFAULTS: dict[str, object] = {
        "min_healthy_percentage": 100,
        "certificate": None,
        "hugging_face_token": None,
        "warm_pool": False,
        "spot": False,
        "access_log_bucket": None,
        "machine_image": None,
        "notification_topic": None,
        "target_requests_per_minute": None,
        "node_metrics": None,
    }

    def build(self, scope: Construct, id: str, props: dict[str, Any]) -> InferenceFleetBase:
        from cdk_neuron.serving.sagemaker_fleet import SageMakerInferenceFleet

        kept = {
            name: value
            for name, value in props.items()
            if name not in self._EC2_ONLY_DEFAULTS or value is not self._EC2_ONLY_DEFAULTS[name]
        }
        return SageMakerInferenceFleet(scope, id, **kept, **self.options)


def InferenceFleet(
    scope: Construct, id: str, *, backend: FleetBackend | None = None, **props: Any
) -> InferenceFleetBase:
    """Deprecated: build :class:`~cdk_neuron.serving.Ec2InferenceFleet` (the default ``backend``) or
    :class:`~cdk_neuron.serving.SageMakerInferenceFleet` directly.

    :param backend: ``FleetBackend.ec2()`` or ``FleetBackend.sagemaker()``. Default: ``FleetBackend.ec2()``.
    :param props: the fleet class's keyword props.
    """
    warnings.warn(_DEPRECATED.format(old="InferenceFleet"), DeprecationWarning, stacklevel=2)
    if backend is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            backend = FleetBackend.ec2()
    return backend.build(scope, id, props)


__all__ = ["FleetBackend", "InferenceFleet"]
