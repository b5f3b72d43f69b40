"""One rule pins every container image, and the security table (docs/security.md) states that rule.

The rule lives in ``cdk_neuron.validation.pinned_image``/``pinned_tag``. Each place a user gives an
image (cdk.json ``training.job_image``, ``BatchTrainingCluster(job_image=)``, a serving engine's
``ContainerImage``) must refuse and accept the same references, and docs/security.md must say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import aws_cdk as cdk
import pytest
from test_config import minimal_env

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.serving import ContainerImage
from cdk_neuron.training import batch_engine
from cdk_neuron.validation import pinned_image
from cdk_support import REPO_ROOT
from stacks.config import load_environments

REGISTRY = "763104351884.dkr.ecr.us-east-1.amazonaws.com"
DIGEST = "sha256:" + "0123456789abcdef" * 4
# (repository, tag or None for "no tag", digest or None)
UNPINNED = [
    ("pytorch-training-neuronx", None, None),
    ("pytorch-training-neuronx", "latest", None),
    ("pytorch-training-neuronx", "LATEST", None),
    ("pytorch-training-neuronx", "Latest", None),
]
PINNED = [
    ("pytorch-training-neuronx", "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04", None),
    ("pytorch-training-neuronx", "latest-2.9", None),  # a tag that only starts with "latest" names a version
    ("pytorch-training-neuronx", None, DIGEST),
]


def reference(repository: str, tag: str | None, digest: str | None) -> str:
    uri = f"{REGISTRY}/{repository}"
    return uri + (f"@{digest}" if digest else f":{tag}" if tag is not None else "")


def via_cdk_json(repository: str, tag: str | None, digest: str | None) -> None:
    env = minimal_env()
    env["training"]["job_image"] = reference(repository, tag, digest)
    load_environments({"qa": env})


def via_construct(repository: str, tag: str | None, digest: str | None) -> None:
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111111111111", region="us-east-1"))
    batch_engine.job_image(stack, reference(repository, tag, digest))


def via_serving_engine(repository: str, tag: str | None, digest: str | None) -> None:
    assert digest is None, "ContainerImage takes a tag: engines are pinned by version tag"
    ContainerImage(registry=REGISTRY, repository=repository, tag=tag or "")


ENTRY_POINTS: dict[str, Callable[[str, str | None, str | None], None]] = {
    "cdk.json training.job_image": via_cdk_json,
    "BatchTrainingCluster(job_image=)": via_construct,
    "ContainerImage(tag=)": via_serving_engine,
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("image", UNPINNED, ids=lambda i: str(i[1]))
def test_every_entry_point_refuses_an_unpinned_image(entry: str, image: tuple[str, str | None, None]) -> None:
    repository, tag, digest = image
    with pytest.raises(
        NeuronConfigError, match=r"pin the image by an explicit version tag \(never 'latest'\)"
    ) as raised:
        ENTRY_POINTS[entry](repository, tag, digest)
    assert (tag or repository) in str(raised.value)


@pytest.mark.parametrize(
    ("entry", "image"),
    [
        (entry, image)
        for entry in ENTRY_POINTS
        for image in PINNED
        if not (entry == "ContainerImage(tag=)" and image[2] is not None)
    ],
    ids=lambda v: v if isinstance(v, str) else str(v[1] or v[2])[:20],
)
def test_every_entry_point_accepts_a_pinned_image(
    entry: str, image: tuple[str, str | None, str | None]
) -> None:
    ENTRY_POINTS[entry](*image)


def test_the_readme_security_table_states_the_rule_for_every_entry_point() -> None:
    row = next(
        line
        for line in (REPO_ROOT / "docs" / "security.md").read_text().splitlines()
        if line.startswith("| Images pinned")
    )
    for name in (
        "`job_image`",
        "`BatchTrainingCluster(job_image=...)`",
        "`ContainerImage`",
        "`cdk_neuron.validation.pinned_image`",
    ):
        assert name in row
    assert "`latest`" in row and "tag or digest" in row
    assert not re.search(r"pin it yourself|takes the URI you give it", row)


@pytest.mark.parametrize(
    "value",
    [
        None,
        3,
        "",
        "   ",
        f"{REGISTRY}/repo:1.0 ",
        f"{REGISTRY}/repo@sha256:abc",
        f"{REGISTRY}/repo@md5:" + "0" * 64,
        f"@{DIGEST}",
        f"{REGISTRY}/repo:",
        f"{REGISTRY}:5000/repo",  # the port is not a tag
    ],
)
def test_pinned_image_refuses(value: object) -> None:
    with pytest.raises(NeuronConfigError, match=r"^image=.*(pin the image|give an image URI)"):
        pinned_image("image", value)


@pytest.mark.parametrize("value", ["pytorch/pytorch:2.1.0", f"{REGISTRY}:5000/repo:1.0", f"repo@{DIGEST}"])
def test_pinned_image_accepts_registries_ports_and_short_names(value: str) -> None:
    assert pinned_image("image", value) == value
