"""Serving engines: how our settings become each Neuron serving container's flags and environment.

Plain Python (no ``aws_cdk``). :class:`ServingEngine` (:mod:`.base`) is the abstract engine; each
engine is one module with its subclass, its pinned images and the sources they come from:

- :mod:`.optimum_neuron` (default): Hugging Face's vLLM DLC with the optimum-neuron platform plugin,
  actively developed, the maintained LLM path for Inferentia2.
- :mod:`.vllm_neuron`: AWS's vLLM Neuron DLC on NxD Inference, in maintenance and frozen at Neuron SDK
  2.31 for Inf2 and Trn1.
- :mod:`.tgi`: Text Generation Inference with its Neuron backend, in maintenance mode upstream.

Image tags are pinned (never ``latest``) and must be given explicitly to change. Adding an engine is
adding a module with a :class:`ServingEngine` subclass.
"""

from __future__ import annotations

from cdk_neuron.serving.engines.base import EngineStatus, ServingEngine
from cdk_neuron.serving.engines.image import DLC_REGISTRY, ContainerImage
from cdk_neuron.serving.engines.optimum_neuron import (
    OPTIMUM_NEURON_REPOSITORY,
    OPTIMUM_NEURON_TAG,
    OPTIMUM_SERVED_MODEL_NAME_SINCE,
    OptimumNeuronEngine,
)
from cdk_neuron.serving.engines.tgi import (
    TGI_REGISTRY,
    TGI_REPOSITORY,
    TGI_SAGEMAKER_REPOSITORY,
    TGI_SAGEMAKER_TAG,
    TGI_TAG,
    TgiEngine,
)
from cdk_neuron.serving.engines.vllm_neuron import (
    VLLM_NEURON_REGISTRY,
    VLLM_NEURON_REPOSITORY,
    VLLM_NEURON_TAG,
    VllmNeuronEngine,
)

__all__ = [
    "DLC_REGISTRY",
    "OPTIMUM_NEURON_REPOSITORY",
    "OPTIMUM_NEURON_TAG",
    "OPTIMUM_SERVED_MODEL_NAME_SINCE",
    "TGI_REGISTRY",
    "TGI_REPOSITORY",
    "TGI_SAGEMAKER_REPOSITORY",
    "TGI_SAGEMAKER_TAG",
    "TGI_TAG",
    "VLLM_NEURON_REGISTRY",
    "VLLM_NEURON_REPOSITORY",
    "VLLM_NEURON_TAG",
    "ContainerImage",
    "EngineStatus",
    "OptimumNeuronEngine",
    "ServingEngine",
    "TgiEngine",
    "VllmNeuronEngine",
]
