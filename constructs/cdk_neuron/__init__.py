"""cdk-neuron: AWS CDK constructs for Trainium training and Inferentia2 serving.

Importing ``cdk_neuron`` (or ``cdk_neuron.catalog`` / ``cdk_neuron.planner``) does not import
``aws_cdk``: the catalog and planner are plain Python and reusable outside CDK. The
constructs are loaded lazily, on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports
from cdk_neuron.errors import NeuronConfigError

__version__ = "0.2.0.dev0"

# public name -> module that defines it. Construct modules import aws_cdk, so they are
# only imported when one of their names is first used.
_LAZY: dict[str, str] = {
    # pure Python
    "catalog": "cdk_neuron.catalog",
    "planner": "cdk_neuron.planner",
    "deployment": "cdk_neuron.deployment",
    "validation": "cdk_neuron.validation",
    "Deployment": "cdk_neuron.deployment",
    "TrainingPlan": "cdk_neuron.planner",
    "ServingPlan": "cdk_neuron.planner",
    "CheckpointEstimate": "cdk_neuron.checkpoint_advisor",
    "plan_training": "cdk_neuron.planner",
    "size_model": "cdk_neuron.planner",
    "estimate_checkpoint": "cdk_neuron.checkpoint_advisor",
    "NeuronInstance": "cdk_neuron.catalog",
    "get_instance": "cdk_neuron.catalog",
    "NodeMetrics": "cdk_neuron.metrics",
    # constructs (import aws_cdk), each beside the interface built and imported ones provide
    "BatchTrainingCluster": "cdk_neuron.training",
    "AutoScalingTrainingCluster": "cdk_neuron.training",
    "HyperPodTrainingCluster": "cdk_neuron.training",
    "ITrainingCluster": "cdk_neuron.training",
    "IBatchTrainingCluster": "cdk_neuron.training",
    "IHyperPodTrainingCluster": "cdk_neuron.training",
    "NodeOptions": "cdk_neuron.training",
    "Capacity": "cdk_neuron.training",
    "CheckpointStore": "cdk_neuron.storage",
    "ICheckpointStore": "cdk_neuron.storage",
    "CompileCache": "cdk_neuron.storage",
    "ICompileCache": "cdk_neuron.storage",
    "Ec2InferenceFleet": "cdk_neuron.serving",
    "IEc2InferenceFleet": "cdk_neuron.serving",
    "SageMakerInferenceFleet": "cdk_neuron.serving",
    "ISageMakerInferenceFleet": "cdk_neuron.serving",
    "IInferenceFleet": "cdk_neuron.serving",
    "ModelSpec": "cdk_neuron.serving",
    "ServingEngine": "cdk_neuron.serving",
    "NeuronMonitoring": "cdk_neuron.monitoring",
    "MonitoringThresholds": "cdk_neuron.monitoring",
}

__all__ = [
    "AutoScalingTrainingCluster",
    "BatchTrainingCluster",
    "Capacity",
    "CheckpointEstimate",
    "CheckpointStore",
    "CompileCache",
    "Deployment",
    "Ec2InferenceFleet",
    "HyperPodTrainingCluster",
    "IBatchTrainingCluster",
    "ICheckpointStore",
    "ICompileCache",
    "IEc2InferenceFleet",
    "IHyperPodTrainingCluster",
    "IInferenceFleet",
    "ISageMakerInferenceFleet",
    "ITrainingCluster",
    "ModelSpec",
    "MonitoringThresholds",
    "NeuronConfigError",
    "NeuronInstance",
    "NeuronMonitoring",
    "NodeMetrics",
    "NodeOptions",
    "SageMakerInferenceFleet",
    "ServingEngine",
    "ServingPlan",
    "TrainingPlan",
    "__version__",
    "catalog",
    "deployment",
    "estimate_checkpoint",
    "get_instance",
    "plan_training",
    "planner",
    "size_model",
    "validation",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)


if TYPE_CHECKING:  # static names for type checkers and IDEs; at run time they load lazily
    from cdk_neuron import catalog, deployment, planner, validation
    from cdk_neuron.catalog import NeuronInstance, get_instance
    from cdk_neuron.checkpoint_advisor import CheckpointEstimate, estimate_checkpoint
    from cdk_neuron.deployment import Deployment
    from cdk_neuron.metrics import NodeMetrics
    from cdk_neuron.monitoring import MonitoringThresholds, NeuronMonitoring
    from cdk_neuron.planner import ServingPlan, TrainingPlan, plan_training, size_model
    from cdk_neuron.serving import (
        Ec2InferenceFleet,
        IEc2InferenceFleet,
        IInferenceFleet,
        ISageMakerInferenceFleet,
        ModelSpec,
        SageMakerInferenceFleet,
        ServingEngine,
    )
    from cdk_neuron.storage import CheckpointStore, CompileCache, ICheckpointStore, ICompileCache
    from cdk_neuron.training import (
        AutoScalingTrainingCluster,
        BatchTrainingCluster,
        Capacity,
        HyperPodTrainingCluster,
        IBatchTrainingCluster,
        IHyperPodTrainingCluster,
        ITrainingCluster,
        NodeOptions,
    )
