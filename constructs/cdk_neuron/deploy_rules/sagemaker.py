"""Amazon SageMaker real-time inference: models and endpoint configurations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cdk_neuron.deploy_rules import _base
from cdk_neuron.deploy_rules._base import Finding

ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"

# Hosting instance families with local NVMe instance storage (the "d" variants and the accelerated families
# that ship NVMe). Families not listed are EBS-only or unknown, and are not flagged.
_LOCAL_STORAGE_FAMILIES = frozenset(
    {
        "c5d",
        "c6id",
        "m5d",
        "m6id",
        "r5d",
        "r6id",
        "g4dn",
        "g5",
        "g6",
        "g6e",
        "p3dn",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "trn1",
        "trn1n",
        "trn2",
    }
)
_NEURON_FAMILIES = ("inf1", "inf2", "trn1", "trn1n", "trn2")
_GPU_FAMILIES = ("g4dn", "g5", "g6", "g6e", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en")


def _family(instance_type: Any) -> str | None:
    if not isinstance(instance_type, str):
        return None
    match = re.match(r"^ml\.([a-z0-9-]+)\.", instance_type)
    return match.group(1) if match else None


def _variants(properties: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    for key in ("ProductionVariants", "ShadowProductionVariants"):
        for index, variant in enumerate(_base.as_list(properties.get(key)) or []):
            variant = _base.as_dict(variant)
            if variant is not None:
                yield ("Properties", key, index), variant


class VariantTimeoutsAndVolume(_base.DeployRule):
    id = "E9601"
    shortdesc = "Production variant timeouts 60-3600 s and VolumeSizeInGB 1-512"
    description = (
        "ModelDataDownloadTimeoutInSeconds and ContainerStartupHealthCheckTimeoutInSeconds range from 60 to 3600 "
        "seconds; VolumeSizeInGB from 1 to 512 GB."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html"
    source_title = "Amazon SageMaker API Reference: ProductionVariant"
    resource_types = (ENDPOINT_CONFIG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        limits = {
            "ModelDataDownloadTimeoutInSeconds": (60, 3600),
            "ContainerStartupHealthCheckTimeoutInSeconds": (60, 3600),
            "VolumeSizeInGB": (1, 512),
        }
        for path, variant in _variants(_base.props(resource)):
            for key, (low, high) in limits.items():
                value = _base.as_int(variant.get(key))
                if value is not None and not low <= value <= high:
                    yield Finding(
                        (*path, key),
                        f"{name}: {path[1]}[{path[2]}].{key} is {value}; SageMaker accepts {low}-{high}. Fix: use a "
                        "value in range (size the model download and start-up to fit).",
                    )


class KmsKeyWithLocalStorage(_base.DeployRule):
    id = "E9602"
    shortdesc = "No endpoint config KmsKeyId with instance types that have local storage"
    description = (
        "Instance types with local (instance-store) storage encrypt it with a hardware module; if any production "
        "variant uses such an instance type (e.g. ml.trn1.32xlarge, ml.g5.*), CreateEndpointConfig fails when "
        "KmsKeyId is set."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html"
    source_title = "Amazon SageMaker API Reference: CreateEndpointConfig (KmsKeyId)"
    resource_types = (ENDPOINT_CONFIG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        if properties.get("KmsKeyId") is None:
            return
        for path, variant in _variants(properties):
            instance_type = variant.get("InstanceType")
            if _family(instance_type) in _LOCAL_STORAGE_FAMILIES:
                yield Finding(
                    ("Properties", "KmsKeyId"),
                    f"{name}: KmsKeyId is set but {path[1]}[{path[2]}] uses {instance_type}, which has local "
                    "instance storage; CreateEndpointConfig fails. Fix: remove KmsKeyId (local volumes are "
                    "hardware-encrypted) or use an EBS-backed instance type.",
                )


class InferenceAmiVersion(_base.DeployRule):
    id = "W9603"
    shortdesc = "InferenceAmiVersion must match the instance family (Neuron vs GPU)"
    description = (
        "The al2-ami-sagemaker-inference-neuron-* images are for Inferentia/Trainium (ml.inf*, ml.trn*) instances and "
        "the al2-ami-sagemaker-inference-gpu-* images for NVIDIA GPU instances; an image for another accelerator has no driver for the instance's devices."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html"
    source_title = "Amazon SageMaker API Reference: ProductionVariant (InferenceAmiVersion)"
    resource_types = (ENDPOINT_CONFIG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, variant in _variants(_base.props(resource)):
            ami = variant.get("InferenceAmiVersion")
            family = _family(variant.get("InstanceType"))
            if not isinstance(ami, str) or family is None:
                continue
            wrong = ("-neuron-" in ami and family not in _NEURON_FAMILIES) or (
                "-gpu-" in ami and family not in _GPU_FAMILIES
            )
            if wrong:
                yield Finding(
                    (*path, "InferenceAmiVersion"),
                    f"{name}: {path[1]}[{path[2]}] uses InferenceAmiVersion {ami!r} on {variant.get('InstanceType')}; "
                    "that image is for another accelerator family. Fix: pick the AMI version for the instance type.",
                )


class UncompressedModelData(_base.DeployRule):
    id = "E9604"
    shortdesc = "S3Prefix model data is uncompressed and its S3Uri ends with '/'"
    description = (
        "With S3DataType S3Prefix the model is a key prefix of uncompressed files: CompressionType must be None and "
        "the S3Uri must end with a slash."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html"
    source_title = "Amazon SageMaker API Reference: S3ModelDataSource"
    resource_types = ("AWS::SageMaker::Model",)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        properties = _base.props(resource)
        containers: list[tuple[tuple[str | int, ...], Any]] = [
            (("Properties", "PrimaryContainer"), properties.get("PrimaryContainer"))
        ]
        for index, container in enumerate(_base.as_list(properties.get("Containers")) or []):
            containers.append((("Properties", "Containers", index), container))
        for path, container in containers:
            container = _base.as_dict(container) or {}
            source = _base.as_dict(
                (_base.as_dict(container.get("ModelDataSource")) or {}).get("S3DataSource")
            )
            if source is None or source.get("S3DataType") != "S3Prefix":
                continue
            where = (*path, "ModelDataSource", "S3DataSource")
            compression = source.get("CompressionType")
            if isinstance(compression, str) and compression != "None":
                yield Finding(
                    (*where, "CompressionType"),
                    f"{name}: S3DataType S3Prefix with CompressionType {compression!r}; a prefix is a set of "
                    "uncompressed files. Fix: set CompressionType 'None' (or S3Object for a tarball).",
                )
            uri = _base.text(source.get("S3Uri"))
            if uri is not None and not uri.endswith("/"):
                yield Finding(
                    (*where, "S3Uri"),
                    f"{name}: S3Uri {uri!r} is an S3Prefix without a trailing '/'. Fix: end the S3Uri with '/'.",
                )


class VolumeSizeOnLocalStorage(_base.DeployRule):
    id = "E9605"
    shortdesc = "No VolumeSizeInGB for production variants on instance types with local storage"
    description = (
        "Hosting instance types with NVMe instance storage (ml.trn1, ml.trn1n, ml.trn2, ml.g5, ml.p4d, ...) keep "
        "the model on that storage; SageMaker attaches no ML storage volume to them and CreateEndpointConfig "
        "refuses a VolumeSizeInGB for such a variant."
    )
    source_url = "https://docs.aws.amazon.com/sagemaker/latest/dg/host-instance-storage.html"
    source_title = "Amazon SageMaker Developer Guide: Host instance storage volumes"
    resource_types = (ENDPOINT_CONFIG,)

    def check(self, template: _base.Template, name: str, resource: dict[str, Any]) -> Iterator[Finding]:
        for path, variant in _variants(_base.props(resource)):
            instance_type = variant.get("InstanceType")
            if (
                variant.get("VolumeSizeInGB") is not None
                and _family(instance_type) in _LOCAL_STORAGE_FAMILIES
            ):
                yield Finding(
                    (*path, "VolumeSizeInGB"),
                    f"{name}: {path[1]}[{path[2]}] sets VolumeSizeInGB on {instance_type}, which hosts from its "
                    "local instance storage; CreateEndpointConfig fails. Fix: remove VolumeSizeInGB.",
                )
