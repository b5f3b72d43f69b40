"""The compile task exports for the fleet's own family (``--instance_type inf2|trn1|trn1n|trn2``, what
optimum-cli 0.4.5 takes): a fleet outside those (Trn3) is refused before anything runs, naming why."""

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


@pytest.mark.parametrize(
    ("instance_type", "flag", "target"),
    [
        ("inf2.xlarge", "inf2", "trn1"),
        ("inf2.48xlarge", "inf2", "trn1"),
        ("trn1.2xlarge", "trn1", "trn1"),
        ("trn1.32xlarge", "trn1", "trn1"),
        ("trn2.48xlarge", "trn2", "trn2"),
    ],
)
def test_each_fleet_is_compiled_for_its_own_family_and_target(
    instance_type: str, flag: str, target: str
) -> None:
    env = _request(instance_type).export_environment("us-east-1")
    assert (env["EXPORT_INSTANCE_TYPE"], env["EXPORT_TARGET"]) == (flag, target)


def test_a_trn3_fleet_is_refused_before_compiling_naming_the_families_optimum_neuron_targets() -> None:
    with pytest.raises(NeuronConfigError) as caught:
        _request("trn3.48xlarge")
    error = caught.value
    assert (error.field, error.value) == ("instance_type", "trn3.48xlarge")
    assert "compiles for inf2, trn1, trn1n, trn2 only" in error.fix and "no trn3 target" in error.fix


def test_the_families_are_optimum_clis_instance_types() -> None:
    assert EXPORT_TARGET_FAMILIES == ("inf2", "trn1", "trn1n", "trn2")
