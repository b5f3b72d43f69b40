"""Inferentia2 serving: :class:`Ec2InferenceFleet`, :class:`SageMakerInferenceFleet` and the value
objects that configure them.

``ModelSpec``, ``ServingEngine`` and the timing helpers are plain Python; only the fleets import
``aws_cdk``. Names are loaded lazily, so ``from cdk_neuron.serving import ModelSpec`` does not start
the jsii runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.metrics.options import MetricOptions
    from cdk_neuron.serving.artifact_manifest import ArtifactManifest, ArtifactShape, ArtifactSource
    from cdk_neuron.serving.ec2_fleet import Ec2InferenceFleet, IEc2InferenceFleet
    from cdk_neuron.serving.engines import ContainerImage, ServingEngine
    from cdk_neuron.serving.fleet import IInferenceFleet, InferenceFleetBase
    from cdk_neuron.serving.model_spec import ModelSpec, S3Location
    from cdk_neuron.serving.placement import Placement
    from cdk_neuron.serving.sagemaker_fleet import ISageMakerInferenceFleet, SageMakerInferenceFleet
    from cdk_neuron.serving.timing import Ec2Startup, MeasuredStartup, SageMakerTimeouts

_LAZY: dict[str, str] = {
    "ArtifactManifest": "cdk_neuron.serving.artifact_manifest",
    "ArtifactShape": "cdk_neuron.serving.artifact_manifest",
    "ArtifactSource": "cdk_neuron.serving.artifact_manifest",
    "Ec2InferenceFleet": "cdk_neuron.serving.ec2_fleet",
    "IEc2InferenceFleet": "cdk_neuron.serving.ec2_fleet",
    "SageMakerInferenceFleet": "cdk_neuron.serving.sagemaker_fleet",
    "ISageMakerInferenceFleet": "cdk_neuron.serving.sagemaker_fleet",
    "InferenceFleetBase": "cdk_neuron.serving.fleet",
    "IInferenceFleet": "cdk_neuron.serving.fleet",
    "MetricOptions": "cdk_neuron.metrics.options",
    "ModelSpec": "cdk_neuron.serving.model_spec",
    "S3Location": "cdk_neuron.serving.model_spec",
    "ServingEngine": "cdk_neuron.serving.engines",
    "ContainerImage": "cdk_neuron.serving.engines",
    "Placement": "cdk_neuron.serving.placement",
    "Ec2Startup": "cdk_neuron.serving.timing",
    "SageMakerTimeouts": "cdk_neuron.serving.timing",
    "MeasuredStartup": "cdk_neuron.serving.timing",
}

__all__ = [
    "ArtifactManifest",
    "ArtifactShape",
    "ArtifactSource",
    "ContainerImage",
    "Ec2InferenceFleet",
    "Ec2Startup",
    "IEc2InferenceFleet",
    "IInferenceFleet",
    "ISageMakerInferenceFleet",
    "InferenceFleetBase",
    "MeasuredStartup",
    "MetricOptions",
    "ModelSpec",
    "Placement",
    "S3Location",
    "SageMakerInferenceFleet",
    "SageMakerTimeouts",
    "ServingEngine",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
