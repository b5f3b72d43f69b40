"""Inferentia2 serving: :class:`InferenceFleet` and the value objects that configure it.

``ModelSpec``, ``ServingEngine``, ``FleetBackend`` and the timing and user-data helpers are plain
Python; only :class:`InferenceFleet` imports ``aws_cdk``. Names are loaded lazily, so
``from cdk_neuron.serving import ModelSpec`` does not start the jsii runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.serving.backends import FleetBackend
    from cdk_neuron.serving.engines import ContainerImage, ServingEngine
    from cdk_neuron.serving.fleet import InferenceFleet
    from cdk_neuron.serving.model_spec import ModelSpec, S3Location
    from cdk_neuron.serving.placement import Placement
    from cdk_neuron.serving.timing import Ec2Startup, MeasuredStartup, SageMakerTimeouts

_LAZY: dict[str, str] = {
    "InferenceFleet": "cdk_neuron.serving.fleet",
    "ModelSpec": "cdk_neuron.serving.model_spec",
    "S3Location": "cdk_neuron.serving.model_spec",
    "ServingEngine": "cdk_neuron.serving.engines",
    "ContainerImage": "cdk_neuron.serving.engines",
    "FleetBackend": "cdk_neuron.serving.backends",
    "Placement": "cdk_neuron.serving.placement",
    "Ec2Startup": "cdk_neuron.serving.timing",
    "SageMakerTimeouts": "cdk_neuron.serving.timing",
    "MeasuredStartup": "cdk_neuron.serving.timing",
}

__all__ = [
    "ContainerImage",
    "Ec2Startup",
    "FleetBackend",
    "InferenceFleet",
    "MeasuredStartup",
    "ModelSpec",
    "Placement",
    "S3Location",
    "SageMakerTimeouts",
    "ServingEngine",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
