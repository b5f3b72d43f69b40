"""What people read: at 80 columns, and as plain text, no identifier or command line is split.

Every command's output is rendered from its real document in both human modes: an ARN, a URI, an
image, an instance type or a command line that the document holds must appear whole on one line
of the output (in its table cell, or as a ``[n]`` note below the table). And ``cost`` for this
repository's three environments fits one screen.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron.cli import cost, jobs, plan, preflight
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.output import Report, render_table, render_text
from cdk_neuron.cli.preflight import PreflightResult, Row
from cdk_neuron.cli.submit import Submitted, render_submit
from cdk_neuron.deployment import Deployment
from stacks.config import deployments

REPO = Path(__file__).resolve().parents[1]
CONTEXT = json.loads((REPO / "cdk.json").read_text())["context"]
ENVS: dict[str, Deployment] = deployments(CONTEXT)
DEV = ENVS["dev"]
ACCOUNT = "123456789012"
JOB = "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
QUEUE = f"arn:aws:batch:us-east-1:{ACCOUNT}:job-queue/ClusterJobQueueD5A6EAB0-a1B2c3D4e5F6g7H8"
DEFINITION = f"arn:aws:batch:us-east-1:{ACCOUNT}:job-definition/ClusterJobDefinitionCBE67E67-9aBcDeF01234:7"
LOG_GROUP = "dev-Training-ClusterJobLogs9F2CD2D0-AbCdEf123456"
IMAGE = DEV.training.job_image

IDENTIFIERS = (
    re.compile(r"arn:aws[\w-]*:[^\s,;()\[\]]+"),
    re.compile(r"(?:s3|https?)://[^\s,;()\[\]]+"),
    re.compile(r"[\w.-]+\.dkr\.ecr\.[\w.-]+/[^\s,;()\[\]]+"),
    re.compile(r"\b(?:ml\.)?(?:trn|inf|p|g)\d[a-z]*\.\d*x?large\b"),
)
COMMAND_KEYS = re.compile(r"(^|_)command$")
NOT_SHOWN = {"job_arn"}  # the job id stands for it


def identifiers(doc: Any, key: str = "") -> Iterator[str]:
    """Every identifier in the document's strings, and every command line it holds whole."""
    if isinstance(doc, dict):
        for k, value in doc.items():
            yield from identifiers(value, k)
    elif isinstance(doc, list):
        for value in doc:
            yield from identifiers(value, key)
    elif isinstance(doc, str) and key not in NOT_SHOWN:
        if (COMMAND_KEYS.search(key) and key != "command") or (key == "command" and " " in doc):
            yield doc
        for pattern in IDENTIFIERS:
            yield from (match.rstrip(".:") for match in pattern.findall(doc))


_LAYOUT = re.compile(r"[\s\u2500-\u257f]+")  # whitespace and box-drawing characters


def _squash(value: str) -> str:
    return _LAYOUT.sub("", value)


def rendered(report: Report, mode: str) -> str:
    out = io.StringIO()
    (render_table if mode == "table" else render_text)(report, out)
    return out.getvalue()


class FakeBatch:
    """DescribeJobs and ListJobs of a two-node job whose node 1 failed."""

    def __init__(self) -> None:
        config = {"logDriver": "awslogs", "options": {"awslogs-group": LOG_GROUP}}
        self.parent = {
            "jobId": JOB, "jobName": "dev-train-20261201T000000Z", "jobQueue": QUEUE, "status": "FAILED",
            "statusReason": "Essential container in task exited", "jobDefinition": DEFINITION,
            "createdAt": 1_796_000_000_000, "startedAt": 1_796_000_100_000, "stoppedAt": 1_796_000_900_000,
            "nodeProperties": {"numNodes": 2, "mainNode": 0,
                               "nodeRangeProperties": [{"targetNodes": "0:1", "container": {"logConfiguration": config}}]},
            "attempts": [{"startedAt": 1_796_000_100_000, "stoppedAt": 1_796_000_900_000,
                          "statusReason": "Essential container in task exited",
                          "container": {"exitCode": 1, "logStreamName": f"training/default/{JOB}-0"}}],
        }  # fmt: skip
        self.children = [
            {"jobId": f"{JOB}#{i}", "status": "SUCCEEDED" if i == 0 else "FAILED",
             "statusReason": None if i == 0 else "Essential container in task exited",
             "nodeDetails": {"nodeIndex": i, "isMainNode": i == 0},
             "container": {"exitCode": i, "logStreamName": f"training/default/{JOB}-{i}-a1b2c3d4e5f6a7b8c9d0"}}
            for i in range(2)
        ]  # fmt: skip

    def describe_jobs(self, jobs: list[str]) -> dict[str, Any]:
        found = [self.parent, *self.children]
        return {"jobs": [j for j in found if j["jobId"] in jobs]}

    def list_jobs(self, **kwargs: Any) -> dict[str, Any]:
        return {"jobSummaryList": [
            {"jobId": f"{i:08x}-4e5f-6789-abcd-ef0123456789", "jobName": f"dev-train-2026120{i}T000000Z-llama-8b",
             "status": kwargs["jobStatus"], "createdAt": 1_796_000_000_000 + i, "nodeProperties": {"numNodes": 2}}
            for i in range(3)
        ]}  # fmt: skip


class FakeCloudFormation:
    def describe_stacks(self, StackName: str) -> dict[str, Any]:
        outputs = {"JobQueueArn": QUEUE, "JobDefinitionArn": DEFINITION}
        return {"Stacks": [{"Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()]}]}


def clients(service: str, region: str) -> Any:
    return {"batch": FakeBatch(), "cloudformation": FakeCloudFormation()}[service]


def preflight_doc() -> PreflightResult:
    """Rows as preflight writes them, with the longest subjects and commands it prints."""
    certificate = f"arn:aws:acm:us-east-1:{ACCOUNT}:certificate/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    secret = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:cdk-neuron/dev/hugging-face-token-AbCdEf"
    group = f"arn:aws:resource-groups:us-east-1:{ACCOUNT}:group/trn1-capacity-reservations-for-training"
    rows = [
        Row("dev", "account", ACCOUNT, "PASS", f"calling as arn:aws:sts::{ACCOUNT}:assumed-role/Admin/alice@example.com"),
        Row("dev", "quota", "Running On-Demand Trn instances (L-2C3B7624)", "FAIL",
            "256 vCPUs < 512 needed: dev training 4 x trn1.32xlarge (512). Request an increase (command below)",
            "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-2C3B7624 "
            "--desired-value 512 --region us-east-1"),
        Row("dev", "capacity exists", group, "PASS", "resource group found"),
        Row("dev", "certificate", certificate, "FAIL", "PENDING_VALIDATION: validate it before the load balancer can use it",
            f"aws acm describe-certificate --certificate-arn {certificate} --region us-east-1"),
        Row("dev", "secret", secret, "PASS", "exists, encrypted with aws/secretsmanager"),
        Row("dev", "image", IMAGE or "", "PASS", "tag resolves to sha256:" + "0123456789abcdef" * 4),
        Row("dev", "artifacts", "s3://cdk-neuron-dev-models/meta-llama/Llama-3.2-3B-Instruct/neuron-bs1-seq4096/",
            "PASS", "9 object(s)"),
        Row("staging", "service-linked role", "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint", "INFO",
            "missing: Application Auto Scaling creates it when the endpoint's scalable target is registered"),
    ]  # fmt: skip
    return preflight.build(rows)


def submit_doc() -> Submitted:
    command = "torchrun $TORCHRUN_ARGS examples/train_llama.py --model meta-llama/Llama-3.1-8B --resume-from latest --steps 10000"
    return Submitted(
        environment="dev", region="us-east-1", stack="dev-Training", job_id=JOB,
        job_name="dev-train-20261201T000000Z", job_arn=f"arn:aws:batch:us-east-1:{ACCOUNT}:job/{JOB}",
        job_queue=QUEUE, job_definition=DEFINITION, definition_action="registered revision 8 with image "
        f"{IMAGE} (container overrides cannot change the image)", image=IMAGE, nodes=2,
        training_command=command, environment_overrides={"NEURON_CC_FLAGS": "--model-type=transformer"},
        watch_command=f"cdk-neuron status --watch {JOB} --env dev",
        logs_command=f"cdk-neuron logs --follow {JOB} --env dev",
    )  # fmt: skip


def cases() -> Iterator[tuple[str, dict[str, Any], Report]]:
    envs = list(ENVS.values())
    ctx = Context(clients=clients)
    planned = plan.build(envs)
    yield "plan", planned.to_json(), plan.render(planned)
    costed = cost.build(envs)
    yield "cost", costed.to_json(), cost.render(costed)
    yield "cost --details", costed.to_json(), cost.render(costed, details=True)
    checked = preflight_doc()
    yield "preflight", checked.to_json(), preflight.render(checked)
    submitted = submit_doc()
    yield "submit", submitted.to_json(), render_submit(submitted)
    job = jobs.status(ctx, DEV, JOB)
    yield "status", job.to_json(), jobs.render_status(job)
    listed = jobs.list_jobs(ctx, DEV, states=jobs.ACTIVE_STATES, limit=3)
    yield "list", listed.to_json(), jobs.render_list(listed)
    stopped = jobs.stop(ctx, DEV, JOB, action="terminate", reason=None)
    yield "terminate", stopped.to_json(), jobs.render_stop(stopped)


CASES = list(cases())


@pytest.mark.parametrize("mode", ["table", "text"])
@pytest.mark.parametrize(("name", "doc", "report"), CASES, ids=[c[0] for c in CASES])
def test_no_identifier_or_command_is_split(
    monkeypatch: pytest.MonkeyPatch, name: str, doc: dict[str, Any], report: Report, mode: str
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = rendered(report, mode)
    lines = out.splitlines()
    wanted = set(identifiers(doc))
    assert wanted, "the document holds identifiers to check"
    shown = {value for value in wanted if _squash(value) in _squash(out)}
    if name != "cost":  # the summary shows totals, not the lines that name instance types
        assert shown == wanted, f"{name} ({mode}) does not show: {sorted(wanted - shown)}"
    split = sorted(value for value in shown if not any(value in line for line in lines))
    assert split == [], f"{name} ({mode}) splits:\n" + "\n".join(split) + "\n---\n" + out
    if mode == "table":
        # Lines run past 80 columns only to keep one value (a note or a command) whole.
        for line in lines:
            if len(line.rstrip()) > 80:
                assert line.startswith(("[", "  ")) or " " not in line.strip(), line


def test_the_checks_see_a_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the test above: rich's own folding (what the CLI used to do) is caught."""
    from rich.console import Console
    from rich.table import Table

    table = Table()
    table.add_column("queue", overflow="fold")
    table.add_row(QUEUE)
    out = io.StringIO()
    Console(file=out, width=40).print(table)
    assert not any(QUEUE in line for line in out.getvalue().splitlines())


def test_cost_summary_for_this_repository_fits_one_screen(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["cost", "--config", str(REPO / "cdk.json")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 60, out
    for env in ("dev", "staging", "prod"):
        assert re.search(rf"│ {env} +│", out), env
    assert "cdk-neuron cost --details" in out
    assert main(["cost", "--config", str(REPO / "cdk.json"), "--details"]) == 0
    details = capsys.readouterr().out
    assert details.startswith(out.split("\n", 1)[0]) and "GPU" in details and len(details.splitlines()) > 60
