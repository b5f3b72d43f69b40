"""The compile task exports for the trn1 target (``--instance_type inf2``): a request for a fleet that
cannot load it (Trn2, NeuronCore-v3) is refused before anything runs, naming the fix."""

from __future__ import annotations

import pytest

from cdk_neuron.compilation import CompileRequest, ModelSource
from cdk_neuron.compilation.job import EXPORT_TARGET_FAMILIES
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import ModelSpec, ServingEngine

ARTIFACT = "s3://models-bucket/compiled/llama-3.2-1b/run-7/"


def _request(instance_type: str) -> CompileRequest:
    model = ModelSpec(
        model_id="meta-llama/Llama-3.2-1B-Instruct", artifact_uri=ARTIFACT, parameters=1_240_000_000
    )
    return CompileRequest(
        source=ModelSource.hub("meta-llama/Llama-3.2-1B-Instruct"),
        artifact_uri=ARTIFACT,
        model=model,
        plan=model.plan(instance_type),
        engine=ServingEngine.optimum_neuron(),
    )


@pytest.mark.parametrize("instance_type", ["inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge"])
def test_fleets_that_load_the_trn1_target_are_compiled_for(instance_type: str) -> None:
    assert _request(instance_type).plan.instance_type == instance_type


def test_a_trn2_fleet_is_refused_before_compiling_with_the_way_to_export_for_it() -> None:
    with pytest.raises(NeuronConfigError) as caught:
        _request("trn2.48xlarge")
    error = caught.value
    assert (error.field, error.value) == ("instance_type", "trn2.48xlarge")
    assert "--instance_type inf2, the trn1 target" in error.fix
    assert "export by hand on a trn2 instance with --instance_type trn2" in error.fix


def test_the_families_are_the_neuroncore_v2_ones() -> None:
    assert EXPORT_TARGET_FAMILIES == ("inf2", "trn1", "trn1n")
