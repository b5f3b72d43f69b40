"""cdk_neuron.validation: the one place each identifier pattern and number check lives."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from botocore.loaders import create_loader

from cdk_neuron import catalog
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


def test_known_regions_come_from_botocores_partition_data() -> None:
    partitions = create_loader().load_data("partitions")["partitions"]
    listed = {region for partition in partitions for region in partition["regions"]}
    assert v.known_regions() == listed
    # Every partition's Regions, not only aws's; and every Region the catalog offers a type in.
    assert {"us-east-1", "us-gov-west-1", "cn-north-1", "eu-central-1"} <= v.known_regions()
    assert catalog.REGION_OFFERINGS_REGIONS.issubset(v.known_regions())


def test_known_region_refuses_a_region_that_does_not_exist() -> None:
    assert v.known_region("region", "us-gov-west-1") == "us-gov-west-1"
    # us-east-9 has a Region's shape (REGION matches it), and there is no such Region.
    assert v.REGION.match("us-east-9")
    with pytest.raises(
        NeuronConfigError,
        match=r"^region='us-east-9': no such AWS Region; did you mean us-east-1, .*pip install -U boto3\)$",
    ):
        v.known_region("region", "us-east-9")
    with pytest.raises(
        NeuronConfigError, match=r"^region='US East': must be an AWS Region name such as us-east-1$"
    ):
        v.known_region("region", "US East")


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


# --------------------------------------------------------------------------------------------
# Every check: the value it refuses is the value in the error, and the limits are inclusive
# exactly where the message says so
# --------------------------------------------------------------------------------------------


def refused(check: Any, field: str, value: object, fix: str) -> NeuronConfigError:
    """The error ``check()`` raises, asserted to be the whole one-line message for ``value``."""
    with pytest.raises(
        NeuronConfigError, match=rf"^{re.escape(field)}={re.escape(repr(value))}: {fix}$"
    ) as raised:
        check()
    assert raised.value.field == field
    assert raised.value.value is value or raised.value.value == value
    return raised.value


def test_whole_number_limits_are_inclusive() -> None:
    assert v.whole_number("n", 1) == 1
    assert v.whole_number("n", 3, minimum=3, maximum=7) == 3
    assert v.whole_number("n", 7, minimum=3, maximum=7) == 7
    refused(
        lambda: v.whole_number("n", 2, minimum=3, maximum=7), "n", 2, "must be a whole number between 3 and 7"
    )
    refused(
        lambda: v.whole_number("n", 8, minimum=3, maximum=7), "n", 8, "must be a whole number between 3 and 7"
    )
    refused(lambda: v.whole_number("n", None), "n", None, "must be a whole number >= 1")
    refused(
        lambda: v.whole_number("t", 0, unit="seconds", maximum=9),
        "t",
        0,
        "must be whole seconds between 1 and 9",
    )


def test_parameter_count_limits() -> None:
    assert v.parameter_count("parameters", 1) == 1
    assert v.parameter_count("parameters", 1.0) == 1
    refused(lambda: v.parameter_count("p", 0), "p", 0, "must be a positive whole number, e.g. 70e9")
    refused(lambda: v.parameter_count("p", -1e9), "p", -1e9, "must be a positive whole number, e.g. 70e9")
    refused(
        lambda: v.parameter_count("p", 1e9 + 0.5),
        "p",
        1e9 + 0.5,
        "must be a positive whole number, e.g. 70e9",
    )
    for bad in (True, "8e9", None, math.inf):
        refused(
            lambda bad=bad: v.parameter_count("p", bad),
            "p",
            bad,
            "give the model's parameter count, e.g. 70e9",
        )


@pytest.mark.parametrize(
    ("value", "bounds", "fix"),
    [
        ("1", {}, "must be a number"),
        (None, {}, "must be a number"),
        (True, {"at_least": 0}, "must be a number"),
        (-math.inf, {}, "must be a finite number"),
        (0, {"above": 0}, "must be greater than 0"),
        (-0.5, {"at_least": -0.25}, "must be at least -0.25"),
        (1.5, {"at_most": 1.25}, "must be at most 1.25"),
        (1, {"below": 1}, "must be below 1"),
    ],
)
def test_number_refusals_carry_the_value(value: object, bounds: dict[str, float], fix: str) -> None:
    refused(lambda: v.number("x", value, **bounds), "x", value, fix)


def test_number_limits_are_inclusive_only_for_at_least_and_at_most() -> None:
    assert v.number("x", 0.001, above=0) == 0.001
    assert v.number("x", 0, at_least=0) == 0.0
    assert v.number("x", 1, at_most=1) == 1.0
    assert v.number("x", 0.999, below=1) == 0.999
    assert v.number("x", -5) == -5.0  # no bound given: any finite number
    assert isinstance(v.number("x", 3), float)


def test_nan_is_refused_with_the_nan_given() -> None:
    with pytest.raises(NeuronConfigError, match=r"^x=nan: must be a number$") as raised:
        v.number("x", math.nan)
    assert math.isnan(raised.value.value)


def test_percentage_limits() -> None:
    assert v.percentage("p", 100) == 100.0
    assert v.percentage("p", 0.5) == 0.5
    refused(lambda: v.percentage("p", 0), "p", 0, r"must be a percentage in \(0, 100\]")
    refused(lambda: v.percentage("p", 100.5), "p", 100.5, r"must be a percentage in \(0, 100\]")
    refused(lambda: v.percentage("p", "50"), "p", "50", "must be a number")


def test_matching_says_what_or_the_fix_verbatim_and_never_both() -> None:
    assert v.matching("sg", "sg-0123abcd", v.SECURITY_GROUP_ID, "a security group id") == "sg-0123abcd"
    refused(lambda: v.matching("sg", "sg-x", v.SECURITY_GROUP_ID, "a security group id"), "sg", "sg-x",
            "must be a security group id")  # fmt: skip
    refused(lambda: v.matching("sg", 7, v.SECURITY_GROUP_ID, fix="give sg-..."), "sg", 7, "give sg-...")
    refused(lambda: v.matching("sg", None, v.SECURITY_GROUP_ID, "an id"), "sg", None, "must be an id")
    # A programming error, not a configuration error: the message is for the caller's author.
    exactly_one = r"^matching\(\) takes what= or fix=, exactly one of them$"
    with pytest.raises(TypeError, match=exactly_one):
        v.matching("sg", "sg-0123abcd", v.SECURITY_GROUP_ID, "an id", fix="give one")
    with pytest.raises(TypeError, match=exactly_one):
        v.matching("sg", "sg-0123abcd", v.SECURITY_GROUP_ID)


def test_choice_lists_the_options_sorted() -> None:
    assert v.choice("dtype", "bf16", ["fp32", "bf16"]) == "bf16"
    refused(lambda: v.choice("dtype", "fp4", ["fp32", "bf16"]), "dtype", "fp4", "must be one of bf16, fp32")
    refused(lambda: v.choice("dtype", None, ("fp32",)), "dtype", None, "must be one of fp32")


REGION_FIX = (
    r"give a concrete region code such as us-east-2 \(an unresolved token cannot be checked at synth time; "
    r"`cdk-neuron preflight` checks the live account\)"
)
AZ_FIX = r"give an AZ ID such as use1-az4; AZ names \(us-east-1a\) map to different AZs in each account"


@pytest.mark.parametrize("value", ["us-east-1a", "use1", None, 4, ["use1-az4"]])
def test_az_id_refusals_carry_the_value(value: object) -> None:
    # A non-string AZ ID (a number, a list from a cdk.json typo) is a config error, not a TypeError.
    refused(lambda: v.az_id("az_ids[0]", value), "az_ids[0]", value, AZ_FIX)


@pytest.mark.parametrize("value", ["US-EAST-1", "us-east", "", None, 1])
def test_region_refusals_carry_the_value(value: object) -> None:
    refused(lambda: v.region("region", value), "region", value, REGION_FIX)


# --------------------------------------------------------------------------------------------
# Image pinning
# --------------------------------------------------------------------------------------------

DIGEST = "sha256:" + "0123456789abcdef" * 4
PIN_FIX = re.escape(v.IMAGE_PINNING_FIX)


@pytest.mark.parametrize(
    "image",
    [
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0",
        f"763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx@{DIGEST}",
        "ubuntu:22.04",  # a Docker Hub short name: one path segment
        "registry.example.com:5000/neuron/train:2.9",  # a registry port is not a tag
        "ghcr.io/huggingface/text-generation-inference:3.3.6-neuron",
    ],
)
def test_pinned_images_are_accepted_as_given(image: str) -> None:
    assert v.pinned_image("job_image", image) == image


@pytest.mark.parametrize(
    ("image", "fix"),
    [
        ("", "give an image URI: " + PIN_FIX),
        ("   ", "give an image URI: " + PIN_FIX),
        ("repo/a b:1.0", "give an image URI: " + PIN_FIX),
        ("repo:1.0 ", "give an image URI: " + PIN_FIX),
        (None, "give an image URI: " + PIN_FIX),
        (["ubuntu:22.04"], "give an image URI: " + PIN_FIX),
        ("ubuntu", PIN_FIX),
        ("registry.example.com:5000/neuron/train", PIN_FIX),
        ("ubuntu:latest", PIN_FIX),
        ("ubuntu:LATEST", PIN_FIX),
        ("ubuntu:1.0:2", PIN_FIX),
        ("registry.example.com/team:1/repo:2", PIN_FIX),  # a colon inside the repository path
        ("ubuntu:", PIN_FIX),
        (f"@{DIGEST}", PIN_FIX),
        ("ubuntu@sha256:0123", PIN_FIX),
        ("ubuntu@" + "0123456789abcdef" * 4, PIN_FIX),
        ("ubuntu@md5:" + "0123456789abcdef" * 4, PIN_FIX),
        ("ubuntu@sha256:" + "0123456789ABCDEF" * 4, PIN_FIX),
    ],
)
def test_unpinned_or_malformed_images_are_refused_naming_the_image(image: object, fix: str) -> None:
    refused(lambda: v.pinned_image("job_image", image), "job_image", image, fix)


@pytest.mark.parametrize("tag", ["latest", "Latest", "", "1.0 ", "-1", "a" * 129, None])
def test_pinned_tag_refusals_name_the_tag(tag: object) -> None:
    refused(lambda: v.pinned_tag("image_tag", tag), "image_tag", tag, PIN_FIX)


def test_pinned_tag_accepts_an_explicit_version_up_to_128_characters() -> None:
    assert v.pinned_tag("image_tag", "2.9.0-neuronx-py312-sdk2.28.0") == "2.9.0-neuronx-py312-sdk2.28.0"
    assert v.pinned_tag("image_tag", "a" * 128) == "a" * 128
    assert v.pinned_tag("image_tag", "latest-2") == "latest-2"


def test_ecr_region_of_a_china_registry() -> None:
    assert v.ecr_region("763104351884.dkr.ecr.cn-north-1.amazonaws.com.cn") == "cn-north-1"
    assert v.ecr_region("public.ecr.aws") is None
