"""The top-level names users import must all resolve, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cdk_neuron


@pytest.mark.parametrize("name", sorted(cdk_neuron.__all__))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(cdk_neuron, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        cdk_neuron.Nope  # noqa: B018


def test_pure_names_do_not_start_jsii() -> None:
    code = (
        "import sys, cdk_neuron\n"
        "cdk_neuron.plan_training, cdk_neuron.size_model, cdk_neuron.estimate_checkpoint, cdk_neuron.ModelSpec\n"
        "import cdk_neuron.training.launcher, cdk_neuron.deployment\n"
        "assert 'aws_cdk' not in sys.modules, sorted(m for m in sys.modules if m.startswith('aws_cdk'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_interface_stands_beside_its_classes_at_the_top() -> None:
    """``from cdk_neuron import ICheckpointStore``: each package's I* interfaces, as aws-cdk-lib exports
    ``IFileSystem`` beside ``FileSystem``."""
    import importlib

    interfaces = {
        name
        for package in ("training", "storage", "serving", "monitoring", "metrics")
        for name in importlib.import_module(f"cdk_neuron.{package}").__all__
        if name[0] == "I" and name[1].isupper()
    }
    assert interfaces == {
        "IBatchTrainingCluster",
        "ICheckpointStore",
        "ICompileCache",
        "IEc2InferenceFleet",
        "IHyperPodTrainingCluster",
        "IInferenceFleet",
        "ISageMakerInferenceFleet",
        "ITrainingCluster",
    }
    assert interfaces <= set(cdk_neuron.__all__)
    for name in interfaces:
        assert getattr(cdk_neuron, name).__name__ == name
