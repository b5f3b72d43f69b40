"""The integ training step: run one Batch training job during the deploy, before what needs its output.

A CloudFormation custom resource of CDK's provider framework, as ``compile_task.py``: ``on_event``
submits the job (``batch:SubmitJob``, the cluster's queue and job definition), ``is_complete`` is
called every 30 s until the job has stopped; a job that did not SUCCEED fails the resource (and the
deploy) with Batch's reasons. In train_compile_serve the compile step depends on it, so the
checkpoint the job writes exists before anything compiles it. Delete terminates a job still queued
or running (a create that timed out), so nothing bills after the stack is gone.

Properties: ``JobName``, ``JobQueue``, ``JobDefinition``.
"""

from __future__ import annotations

from typing import Any

DONE = ("SUCCEEDED", "FAILED")


class TrainingFailed(Exception):
    """The job did not succeed: fails the custom resource."""


def _batch() -> Any:
    import boto3

    return boto3.client("batch")


def submit(properties: dict[str, Any], batch: Any) -> str:
    response = batch.submit_job(
        jobName=properties["JobName"],
        jobQueue=properties["JobQueue"],
        jobDefinition=properties["JobDefinition"],
    )
    return str(response["jobId"])


def why(job: dict[str, Any]) -> str:
    """Batch's reasons for a stopped job: its status reason and its container's exit."""
    container = job.get("container") or {}
    parts = [job.get("statusReason"), container.get("reason")]
    if container.get("exitCode") is not None:
        parts.append(f"exit code {container['exitCode']}")
    return "; ".join(str(p) for p in parts if p) or "no reason given"


def check(job_id: str, batch: Any) -> dict[str, Any]:
    jobs = batch.describe_jobs(jobs=[job_id]).get("jobs") or []
    if not jobs:
        raise TrainingFailed(f"the training job {job_id} is gone")
    job = jobs[0]
    status = job.get("status")
    if status not in DONE:
        return {"IsComplete": False}
    if status != "SUCCEEDED":
        raise TrainingFailed(f"the training job {job_id} {status}: {why(job)}")
    seconds = (job.get("stoppedAt", 0) - job.get("startedAt", 0)) / 1000
    return {"IsComplete": True, "Data": {"JobId": job_id, "RunningSeconds": f"{seconds:g}"}}


def terminate(job_id: str, batch: Any) -> None:
    """Terminate a job that has not stopped; a finished (or never submitted) job is left alone."""
    try:
        jobs = batch.describe_jobs(jobs=[job_id]).get("jobs") or []
        if jobs and jobs[0].get("status") not in DONE:
            batch.terminate_job(jobId=job_id, reason="integ stack deleted")
    except Exception as error:  # a job id that never existed: nothing to stop
        print(f"terminate {job_id}: {error}")


def on_event(event: dict[str, Any], _context: Any = None, batch: Any = None) -> dict[str, Any]:
    batch = batch or _batch()
    kind = event["RequestType"]
    if kind == "Create":
        return {"PhysicalResourceId": submit(event["ResourceProperties"], batch)}
    if kind == "Delete":
        terminate(event["PhysicalResourceId"], batch)
    return {"PhysicalResourceId": event["PhysicalResourceId"]}


def is_complete(event: dict[str, Any], _context: Any = None, batch: Any = None) -> dict[str, Any]:
    if event["RequestType"] != "Create":
        return {"IsComplete": True}
    return check(event["PhysicalResourceId"], batch or _batch())
