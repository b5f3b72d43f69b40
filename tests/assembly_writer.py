"""Small hand-written cloud assemblies, in the shapes ``cdk synth`` writes, for the CLI's tests.

A stack artifact in ``manifest.json``, its template, and its metadata (in its own
``<id>.metadata.json`` like CDK >= 2.170, or inline like older CDKs), with ``cdk-neuron:workload``
records as the constructs write them (:mod:`cdk_neuron._manifest`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"


def training_record(**overrides: Any) -> dict[str, Any]:
    return {
        "kind": "training",
        "version": 1,
        "engine": "batch",
        "instance_type": "trn1.32xlarge",
        "max_nodes": 4,
        "plan": {"nodes": 2, "tensor_parallel": 32},
        "capacity": {"kind": "on-demand"},
        "availability_zone_id": "use1-az6",
        "job_image": IMAGE,
        "job_queue_logical_id": "ClusterJobQueueD5A6EAB0",
        "job_definition_logical_id": "ClusterJobDefinitionCBE67E67",
        **overrides,
    }


def serving_record(**overrides: Any) -> dict[str, Any]:
    return {
        "kind": "serving",
        "version": 1,
        "backend": "sagemaker",
        "engine": "optimum-neuron",
        "model": {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "parameters": 8_000_000_000},
        "instance_type": "inf2.8xlarge",
        "tensor_parallel": 2,
        "min_capacity": 1,
        "max_capacity": 2,
        "availability_zones": ["us-east-1a", "us-east-1b"],
        "warm_pool": False,
        **overrides,
    }


def write_stack(
    folder: Path,
    artifact_id: str,
    *,
    environment: str = "aws://111111111111/us-east-1",
    records: dict[str, dict[str, Any]] | None = None,
    resources: dict[str, Any] | None = None,
    inline: bool = False,
    stack_name: str | None = None,
    display: str | None = None,
) -> dict[str, Any]:
    """One stack artifact (its template and metadata written to ``folder``), for a manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{artifact_id}.template.json").write_text(json.dumps({"Resources": resources or {}}))
    metadata = {
        path: [{"type": "aws:cdk:logicalId", "data": "X"}, {"type": "cdk-neuron:workload", "data": data}]
        for path, data in (records or {}).items()
    }
    properties: dict[str, Any] = {
        "templateFile": f"{artifact_id}.template.json",
        "bootstrapStackVersionSsmParameter": "/cdk-bootstrap/custom1/version",
    }
    if stack_name:
        properties["stackName"] = stack_name
    artifact: dict[str, Any] = {
        "type": "aws:cloudformation:stack",
        "environment": environment,
        "properties": properties,
        "displayName": display or artifact_id,
    }
    if inline:
        artifact["metadata"] = metadata
    else:
        (folder / f"{artifact_id}.metadata.json").write_text(json.dumps(metadata))
        artifact["additionalMetadataFile"] = f"{artifact_id}.metadata.json"
    return artifact


def write_manifest(folder: Path, artifacts: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts}))
    return folder


def nat_and_endpoints() -> dict[str, Any]:
    return {
        "Nat1": {
            "Type": "AWS::EC2::Instance",
            "Properties": {"SourceDestCheck": False, "InstanceType": "t4g.nano"},
        },
        "Bastion": {"Type": "AWS::EC2::Instance", "Properties": {"InstanceType": "t3.micro"}},
        "Ecr": {
            "Type": "AWS::EC2::VPCEndpoint",
            "Properties": {
                "VpcEndpointType": "Interface",
                "ServiceName": "com.amazonaws.us-east-1.ecr.api",
                "SubnetIds": ["a", "b"],
            },
        },
        "Logs": {
            "Type": "AWS::EC2::VPCEndpoint",
            "Properties": {
                "VpcEndpointType": "Interface",
                "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".logs"]]},
                "SubnetIds": ["a", "b"],
            },
        },
        "S3": {
            "Type": "AWS::EC2::VPCEndpoint",
            "Properties": {"VpcEndpointType": "Gateway", "ServiceName": "com.amazonaws.us-east-1.s3"},
        },
        "Key": {"Type": "AWS::KMS::Key", "Properties": {"Description": "training volumes"}},
        "Key2": {"Type": "AWS::KMS::Key", "Properties": {}},
        "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
        "Logs1": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
        "Flow": {"Type": "AWS::EC2::FlowLog", "Properties": {}},
    }
