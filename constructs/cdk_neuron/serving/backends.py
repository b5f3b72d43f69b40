"""Where a fleet runs: :class:`FleetBackend` (plain Python, no ``aws_cdk``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving.timing import MeasuredStartup

BackendKind = Literal["ec2", "sagemaker"]

_VARIANT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def _optional_seconds(field: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NeuronConfigError(field, value, "must be whole seconds >= 1, or None to derive it")
    return value


def _measured(value: object) -> MeasuredStartup | None:
    if value is not None and not isinstance(value, MeasuredStartup):
        raise NeuronConfigError(
            "measured_startup", value, "pass a cdk_neuron.serving.MeasuredStartup (or None to estimate)"
        )
    return value


@dataclass(frozen=True)
class FleetBackend:
    """The platform an :class:`~cdk_neuron.serving.InferenceFleet` runs on.

    Build it with :meth:`ec2` (the default) or :meth:`sagemaker`; the fields are their options.
    """

    kind: BackendKind
    startup_timeout_seconds: int | None = None
    data_volume_gib: int | None = None
    variant_name: str = "AllTraffic"
    model_data_download_timeout_seconds: int | None = None
    container_startup_health_check_timeout_seconds: int | None = None
    volume_size_gb: int | None = None
    measured_startup: MeasuredStartup | None = None

    @staticmethod
    def ec2(
        *,
        startup_timeout_seconds: int | None = None,
        data_volume_gib: int | None = None,
        measured_startup: MeasuredStartup | None = None,
    ) -> FleetBackend:
        """An Auto Scaling group of Neuron instances behind an internal Application Load Balancer.

        :param startup_timeout_seconds: how long an instance may take from launch until every replica
            is healthy (lifecycle-hook heartbeat, CloudFormation signal timeout and ELB health-check
            grace). Default: derived from the model size (:func:`cdk_neuron.serving.timing.ec2_startup`).
        :param data_volume_gib: size of the encrypted gp3 data volume holding images, weights and
            compiled artifacts. Default: 40 GiB + 3 x weights + 20 GiB, rounded up to 10 GiB.
        :param measured_startup: start-up phases timed on a real deployment; they replace the
            estimates (each still x 1.5). Default: None - estimated from published load times.
        """
        timeout = _optional_seconds("startup_timeout_seconds", startup_timeout_seconds)
        if timeout is not None and timeout > 7200:
            raise NeuronConfigError(
                "startup_timeout_seconds", timeout, "a lifecycle hook waits at most 7200 s; use <= 7200"
            )
        if data_volume_gib is not None and (
            isinstance(data_volume_gib, bool)
            or not isinstance(data_volume_gib, int)
            or not 1 <= data_volume_gib <= 16384
        ):
            raise NeuronConfigError("data_volume_gib", data_volume_gib, "gp3 volumes are 1 to 16,384 GiB")
        return FleetBackend(
            kind="ec2",
            startup_timeout_seconds=timeout,
            data_volume_gib=data_volume_gib,
            measured_startup=_measured(measured_startup),
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
        """A SageMaker real-time endpoint on ``ml.<instance_type>``.

        Model and endpoint-config changes (a new image, new artifacts) update the endpoint in place and
        keep the instance count auto scaling reached. SageMaker refuses to change the *instance type*
        of a variant registered with auto scaling: to move to another instance type, create a new fleet
        (a new construct id), shift clients, then remove the old one.

        :param variant_name: production variant name (the auto-scaling resource id uses it). Default:
            ``"AllTraffic"``.
        :param model_data_download_timeout_seconds: Default: derived from the weights (60-3,600 s).
        :param container_startup_health_check_timeout_seconds: Default: derived from the weights
            (60-3,600 s).
        :param volume_size_gb: ML storage volume per instance. Default: 2 x weights + 20 GiB, in GB.
            Refused on trn1, trn1n and trn2, which serve from their local NVMe (SageMaker accepts no
            VolumeSizeInGB for them).
        :param measured_startup: start-up phases timed on a real deployment (the S3 download and the
            container becoming ready); they replace the estimates (each still x 1.5). Explicit
            timeouts above win over them. Default: None - estimated from published load times.
        """
        if not isinstance(variant_name, str) or not _VARIANT_NAME.match(variant_name):
            raise NeuronConfigError(
                "variant_name",
                variant_name,
                "use 1-63 letters, digits and hyphens, starting with a letter or digit",
            )
        return FleetBackend(
            kind="sagemaker",
            variant_name=variant_name,
            model_data_download_timeout_seconds=_optional_seconds(
                "model_data_download_timeout_seconds", model_data_download_timeout_seconds
            ),
            container_startup_health_check_timeout_seconds=_optional_seconds(
                "container_startup_health_check_timeout_seconds",
                container_startup_health_check_timeout_seconds,
            ),
            volume_size_gb=volume_size_gb,
            measured_startup=_measured(measured_startup),
        )

    @property
    def is_ec2(self) -> bool:
        return self.kind == "ec2"

    @property
    def is_sagemaker(self) -> bool:
        return self.kind == "sagemaker"


__all__ = ["BackendKind", "FleetBackend"]
