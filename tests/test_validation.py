"""cdk_neuron.validation: the one place each identifier pattern and number check lives."""

from __future__ import annotations

import math

import pytest

from cdk_neuron import validation as v
from cdk_neuron.errors import NeuronConfigError


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "a whole number >= 1"),
        (True, "a whole number >= 1"),
        (1.0, "a whole number >= 1"),
        ("2", "a whole number >= 1"),
    ],
)
def test_whole_number_refuses_non_integers_and_small_values(value: object, message: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^nodes={value!r}: must be {message}"):
        v.whole_number("nodes", value)


def test_whole_number_bounds_and_units() -> None:
    assert v.whole_number("n", 5, minimum=0, maximum=5) == 5
    with pytest.raises(NeuronConfigError, match=r"n=6: must be a whole number between 0 and 5"):
        v.whole_number("n", 6, minimum=0, maximum=5)
    with pytest.raises(NeuronConfigError, match=r"t=0: must be whole seconds >= 1"):
        v.whole_number("t", 0, unit="seconds")


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (math.nan, {}, "must be a number"),
        ("1", {}, "must be a number"),
        (False, {}, "must be a number"),
        (math.inf, {"above": 0}, "must be a finite number"),
        (0, {"above": 0}, "must be greater than 0"),
        (-1, {"at_least": 0}, "must be at least 0"),
        (2, {"at_most": 1}, "must be at most 1"),
        (1, {"below": 1}, "must be below 1"),
    ],
)
def test_number(value: object, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(NeuronConfigError, match=message):
        v.number("x", value, **kwargs)


def test_number_and_percentage_accept_valid_values() -> None:
    assert v.number("x", 3, above=0, at_most=3) == 3.0
    assert v.percentage("p", 100) == 100.0
    with pytest.raises(NeuronConfigError, match=r"percentage in \(0, 100\]"):
        v.percentage("p", 0)


@pytest.mark.parametrize("good", ["use1-az6", "usw2-lax1-az1", "apne1-az4"])
def test_az_ids(good: str) -> None:
    assert v.az_id("az", good) == good


@pytest.mark.parametrize("bad", ["us-east-1a", "", None, "use1-az"])
def test_az_names_are_refused(bad: object) -> None:
    with pytest.raises(NeuronConfigError, match=r"AZ names \(us-east-1a\) map to different AZs"):
        v.az_id("az", bad)


def test_region_and_choice() -> None:
    assert v.region("region", "us-gov-west-1") == "us-gov-west-1"
    with pytest.raises(NeuronConfigError, match="concrete region code"):
        v.region("region", "${Token[AWS.Region.1]}")
    assert v.choice("engine", "batch", ("batch", "asg")) == "batch"
    with pytest.raises(NeuronConfigError, match=r"engine='k8s': must be one of asg, batch"):
        v.choice("engine", "k8s", ("batch", "asg"))


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (v.S3_PREFIX_URI, "s3://my-models/llama/", "s3://my-models"),
        (v.HF_MODEL_ID, "gpt2", "org/name/extra"),
        (v.IMAGE_URI, "763104351884.dkr.ecr.us-east-1.amazonaws.com/x:1", "ubuntu:22.04"),
        (v.RESERVATION_ID, "cr-0123456789abcdef0", "cr-123"),
        (v.SECURITY_GROUP_ID, "sg-0123456789abcdef0", "sg-xyz"),
    ],
)
def test_patterns(pattern: object, good: str, bad: str) -> None:
    assert v.matching("f", good, pattern, "valid") == good  # type: ignore[arg-type]
    with pytest.raises(NeuronConfigError, match="must be valid"):
        v.matching("f", bad, pattern, "valid")  # type: ignore[arg-type]


def test_ecr_region() -> None:
    assert v.ecr_region("763104351884.dkr.ecr.us-west-2.amazonaws.com") == "us-west-2"
    assert v.ecr_region("ghcr.io") is None


@pytest.mark.parametrize("value", [8e9, 8_000_000_000, 70e9])
def test_parameter_counts_are_whole_numbers_in_either_spelling(value: float) -> None:
    assert v.parameter_count("parameters", value) == int(value)


def test_one_parameter_rule_for_model_spec_size_model_and_the_advisor() -> None:
    from cdk_neuron.checkpoint_advisor import estimate_checkpoint
    from cdk_neuron.planner import size_model
    from cdk_neuron.serving.model_spec import ModelSpec

    assert ModelSpec(model_id="org/m", parameters=8e9).parameters == 8_000_000_000
    assert size_model(8e9, instance_type="inf2.8xlarge").weights_gib > 0
    assert estimate_checkpoint(8e9).size_gb > 0
    for check in (
        lambda: ModelSpec(model_id="org/m", parameters=8.5),
        lambda: size_model(8.5),
        lambda: estimate_checkpoint(8.5),
    ):
        with pytest.raises(NeuronConfigError, match=r"parameters=8\.5: must be a positive whole number"):
            check()
