"""The integ compile step: run a ModelCompilation task during the deploy, before the fleet exists.

A CloudFormation custom resource of CDK's provider framework (``custom_resources.Provider``): the
``on_event`` function starts the task, the framework calls ``is_complete`` every 30 s until it
returns ``IsComplete`` (or raises, which fails the resource and with it the deploy). The fleet
depends on the resource, so CloudFormation creates the fleet only once the artifact and its
manifest are in S3, the order a user follows by hand with ``cdk-neuron compile`` and ``aws ecs
wait tasks-stopped``.

Properties (written by ``integ_support.compiled``):

- ``Cluster``, ``TaskDefinition``, ``Subnets``, ``SecurityGroups``: where the task runs, as
  ``cdk-neuron compile`` finds them in the ModelCompilation's stack.
- ``Overrides``: JSON of the ``ecs:RunTask`` overrides, exactly
  ``cdk_neuron.compilation.CompileRequest.task_overrides`` (the same settings the CLI sends).
- ``ArtifactUri``: ``s3://bucket/prefix/`` the task writes; ``Shape``: JSON of the manifest's
  ``shape`` the fleet needs (``batch_size``, ``sequence_length``, ``tensor_parallel``, ``dtype``);
  ``Source``: JSON of the manifest's ``source`` fields the request set (``kind``, ``uri``, ``step``).

``is_complete`` requires every container to have exited 0, then reads the manifest the upload
wrote last and requires the format, version, prefix and shape the fleet was built for: a fleet is
never created over an artifact it cannot serve. Delete stops a task still running (a create that
timed out), so nothing bills after the stack is gone. Runs on the Lambda Python runtime as it is
(boto3 is part of it).
"""

from __future__ import annotations

import json
from typing import Any

MANIFEST_NAME = "cdk-neuron-artifact.json"
MANIFEST_FORMAT = "cdk-neuron-artifact"
MANIFEST_VERSION = 2
CONTAINERS = ("fetch", "export", "upload")
STARTED_BY = "cdk-neuron-integ"


class CompileFailed(Exception):
    """The task or its manifest says the artifact cannot be served: fails the custom resource."""


def _clients() -> tuple[Any, Any]:
    import boto3

    return boto3.client("ecs"), boto3.client("s3")


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``("bucket", "prefix/")`` of ``s3://bucket/prefix/``."""
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise CompileFailed(f"ArtifactUri {uri!r} is not s3://bucket/prefix/")
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix.rstrip("/") + "/"


def start(properties: dict[str, Any], ecs: Any) -> str:
    """Start the compile task; its ARN is the resource's physical id."""
    response = ecs.run_task(
        cluster=properties["Cluster"],
        taskDefinition=properties["TaskDefinition"],
        launchType="FARGATE",
        count=1,
        startedBy=STARTED_BY,
        networkConfiguration={
            "awsvpcConfiguration": {
                "subnets": list(properties["Subnets"]),
                "securityGroups": list(properties["SecurityGroups"]),
                "assignPublicIp": "DISABLED",
            }
        },
        overrides=json.loads(properties["Overrides"]),
    )
    failures = response.get("failures") or []
    tasks = response.get("tasks") or []
    if failures or not tasks:
        reasons = "; ".join(f"{f.get('arn', '')} {f.get('reason', '')}".strip() for f in failures)
        raise CompileFailed(f"ecs:RunTask started no compile task: {reasons or 'no task'}")
    return str(tasks[0]["taskArn"])


def container_failures(task: dict[str, Any]) -> list[str]:
    """Why a stopped task did not compile: every step that did not exit 0 (empty when all did)."""
    exits = {c.get("name"): c for c in task.get("containers", [])}
    found = []
    for name in CONTAINERS:
        container = exits.get(name, {})
        if container.get("exitCode") != 0:
            detail = container.get("reason") or f"exit code {container.get('exitCode')}"
            found.append(f"{name}: {detail}")
    if found and task.get("stoppedReason"):
        found.append(f"task: {task['stoppedReason']}")
    return found


def manifest_problems(
    manifest: Any, artifact_uri: str, shape: dict[str, Any], source: dict[str, Any] | None = None
) -> list[str]:
    """What in the manifest says the fleet cannot serve the artifact (empty when it can)."""
    if not isinstance(manifest, dict):
        return ["the manifest is not a JSON object"]
    problems = []
    expected = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "artifact_uri": artifact_uri}
    for key, value in expected.items():
        if manifest.get(key) != value:
            problems.append(f"{key}={manifest.get(key)!r}, expected {value!r}")
    shape_written = manifest.get("shape")
    written: dict[str, Any] = shape_written if isinstance(shape_written, dict) else {}
    for key, value in shape.items():
        if written.get(key) != value:
            problems.append(f"shape.{key}={written.get(key)!r}, the fleet serves {value!r}")
    source_written = manifest.get("source")
    read: dict[str, Any] = source_written if isinstance(source_written, dict) else {}
    for key, value in (source or {}).items():
        if read.get(key) != value:
            problems.append(f"source.{key}={read.get(key)!r}, the compile was asked for {value!r}")
    if not manifest.get("files"):
        problems.append("files: the artifact lists no file")
    return problems


def check(properties: dict[str, Any], task_arn: str, ecs: Any, s3: Any) -> dict[str, Any]:
    """``IsComplete`` false while the task runs; true with the manifest's facts once it compiled."""
    described = ecs.describe_tasks(cluster=properties["Cluster"], tasks=[task_arn])
    tasks = described.get("tasks") or []
    if not tasks:
        raise CompileFailed(f"the compile task {task_arn} is gone: {described.get('failures')}")
    task = tasks[0]
    if task.get("lastStatus") != "STOPPED":
        return {"IsComplete": False}
    failed = container_failures(task)
    if failed:
        raise CompileFailed(f"the compile task {task_arn} failed: " + "; ".join(failed))
    artifact_uri = properties["ArtifactUri"]
    bucket, prefix = split_s3_uri(artifact_uri)
    try:
        body = s3.get_object(Bucket=bucket, Key=prefix + MANIFEST_NAME)["Body"].read()
        manifest = json.loads(body)
    except Exception as error:  # any read or parse failure fails the compile step
        raise CompileFailed(f"no readable {artifact_uri}{MANIFEST_NAME}: {error}") from error
    problems = manifest_problems(
        manifest, artifact_uri, json.loads(properties["Shape"]), json.loads(properties.get("Source") or "{}")
    )
    if problems:
        raise CompileFailed(f"{artifact_uri}{MANIFEST_NAME} cannot be served: " + "; ".join(problems))
    return {
        "IsComplete": True,
        "Data": {
            "ManifestUri": f"{artifact_uri}{MANIFEST_NAME}",
            "CompileSeconds": str(manifest.get("compile_seconds")),
            "Files": str(len(manifest["files"])),
            "Compiler": str((manifest.get("neuron") or {}).get("compiler")),
            "SourceSha256": str((manifest.get("source") or {}).get("sha256")),
        },
    }


def stop(properties: dict[str, Any], task_arn: str, ecs: Any) -> None:
    """Stop a compile task that is still running; a task already stopped (or never started) is fine."""
    if ":task/" not in task_arn:
        return
    try:
        ecs.stop_task(cluster=properties["Cluster"], task=task_arn, reason="integ stack deleted")
    except Exception as error:  # stopped, expired or never started: nothing to stop
        print(f"stop {task_arn}: {error}")


def on_event(
    event: dict[str, Any], _context: Any = None, clients: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    ecs, _ = clients or _clients()
    properties = event["ResourceProperties"]
    kind = event["RequestType"]
    if kind == "Create":
        return {"PhysicalResourceId": start(properties, ecs)}
    if kind == "Delete":
        stop(properties, event["PhysicalResourceId"], ecs)
    # Update: an integ stack is created and destroyed by each run; the artifact stays what it was.
    return {"PhysicalResourceId": event["PhysicalResourceId"]}


def is_complete(
    event: dict[str, Any], _context: Any = None, clients: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    if event["RequestType"] != "Create":
        return {"IsComplete": True}
    ecs, s3 = clients or _clients()
    return check(event["ResourceProperties"], event["PhysicalResourceId"], ecs, s3)
