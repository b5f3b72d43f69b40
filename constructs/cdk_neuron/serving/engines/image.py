"""Container images of the serving engines: :class:`ContainerImage` (plain Python, no ``aws_cdk``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.validation import ECR_REGISTRY, pinned_tag

# AWS Deep Learning Containers registry (Hugging Face DLCs are published there) for the commercial
# regions; other partitions use other accounts, so pass a ContainerImage with their registry.
DLC_REGISTRY = "763104351884.dkr.ecr.{region}.amazonaws.com"

_SDK_IN_TAG = re.compile(r"sdk(\d+)\.(\d+)")
# The Hugging Face vLLM DLC names the optimum-neuron release in its tag ("...-optimum0.4.5-...").
_OPTIMUM_IN_TAG = re.compile(r"optimum(\d+)\.(\d+)\.(\d+)")
# The neuronx-cc each optimum-neuron release pins (its pyproject.toml ``neuronx`` extra). optimum-neuron
# loads an export only under the very optimum-neuron and neuronx-cc versions recorded in its
# neuron_config.json (NeuronConfig.from_dict, optimum/neuron/configuration_utils.py), so a fleet's tag
# names the compiler its artifacts must come from.
OPTIMUM_NEURON_COMPILERS: dict[tuple[int, int, int], str] = {
    # huggingface/optimum-neuron tag v0.4.5 @abf59858 (2026-02-11), pyproject.toml: neuronx-cc==2.21.33363.0
    (0, 4, 5): "2.21.33363.0",
}
# A regional registry ("...ecr.{region}.amazonaws.com") is matched against the shared ECR pattern with
# this stand-in for its region; no AWS region has this name.
_REGION_PLACEHOLDER = "cdk-neuron-region-0"


@dataclass(frozen=True)
class ContainerImage:
    """A pinned container image: ``registry/repository:tag``.

    ``registry`` may contain ``{region}``, filled in with the stack's region (DLC registries are
    regional). Tags must be explicit versions: ``latest`` and empty tags are refused.

    :param registry: registry host, e.g. ``"763104351884.dkr.ecr.{region}.amazonaws.com"``. Required.
    :param repository: repository in the registry. Required.
    :param tag: pinned tag, e.g. a version string. Required.
    """

    registry: str
    repository: str
    tag: str

    def __post_init__(self) -> None:
        pinned_tag("image_tag", self.tag)
        for name in ("registry", "repository"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or any(c.isspace() for c in value):
                raise NeuronConfigError(name, value, "must be a non-empty string without spaces")

    def uri(self, region: str) -> str:
        """The full image reference for ``region`` (a CDK token is fine)."""
        return f"{self.registry_host(region)}/{self.repository}:{self.tag}"

    def registry_host(self, region: str) -> str:
        return self.registry.replace("{region}", region)

    def _ecr_match(self) -> re.Match[str] | None:
        return ECR_REGISTRY.match(self.registry.replace("{region}", _REGION_PLACEHOLDER))

    @property
    def is_private_ecr(self) -> bool:
        """Whether the image lives in a private Amazon ECR registry (needs IAM and ``docker login``)."""
        return self._ecr_match() is not None

    @property
    def ecr_account(self) -> str | None:
        match = self._ecr_match()
        return match["account"] if match else None

    def ecr_region(self, default_region: str) -> str:
        """The ECR region of the registry (the stack's region when the registry is regional)."""
        match = self._ecr_match()
        if match is None or match["region"] == _REGION_PLACEHOLDER:
            return default_region
        return match["region"]

    @property
    def neuron_sdk(self) -> tuple[int, int] | None:
        """The Neuron SDK (major, minor) the tag names, e.g. ``sdk2.25.0`` -> (2, 25); None if absent."""
        match = _SDK_IN_TAG.search(self.tag)
        return (int(match[1]), int(match[2])) if match else None

    @property
    def optimum_neuron_version(self) -> tuple[int, int, int] | None:
        """The optimum-neuron release a Hugging Face vLLM DLC tag names (``optimum0.4.5`` -> (0, 4, 5))."""
        match = _OPTIMUM_IN_TAG.search(self.tag)
        return (int(match[1]), int(match[2]), int(match[3])) if match else None

    @property
    def neuronx_cc_version(self) -> str | None:
        """The neuronx-cc the image's optimum-neuron pins (:data:`OPTIMUM_NEURON_COMPILERS`), or None."""
        optimum = self.optimum_neuron_version
        return OPTIMUM_NEURON_COMPILERS.get(optimum) if optimum else None


def resolve_image(image: ContainerImage | None, tag: str | None, default: ContainerImage) -> ContainerImage:
    """``image`` if given, else ``default`` with ``tag`` if given; refuses both together."""
    if image is not None and tag is not None:
        raise NeuronConfigError(
            "image_tag", tag, "give either image_tag (for the default repository) or image, not both"
        )
    if image is not None:
        if not isinstance(image, ContainerImage):
            raise NeuronConfigError("image", image, "pass a cdk_neuron.serving.ContainerImage")
        return image
    return default if tag is None else ContainerImage(default.registry, default.repository, tag)


__all__ = ["DLC_REGISTRY", "OPTIMUM_NEURON_COMPILERS", "ContainerImage", "resolve_image"]
