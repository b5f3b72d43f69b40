"""The integ suites, offline: snapshots verified, safety checked, programs and probe exercised.

``make test`` never deploys. It synthesizes every suite in ``tests/integ`` (the integ runner's
snapshot mode, ``integ_support.snapshots``), so a construct change that changes what a suite would
deploy fails here until its snapshot is updated (``make integ-snapshots``) and reviewed. The other
tests hold each suite to what a live run relies on: everything is deleted with its stack, every
waiter stops before CloudFormation gives up on it, the programs and the probe do what the assertions
expect of them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cdk_support import REPO_ROOT
from integ_support import estimate, programs, snapshots
from integ_support.probe import handler as probe
from integ_support.programs import allreduce, smoke
from integ_support.registry import SUITES as INFO
from integ_support.settings import Settings, choose_az_ids

SUITES = {snapshots.suite_name(p): p for p in snapshots.suite_files()}
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def assemblies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {
        name: snapshots.synthesize(path, tmp_path_factory.mktemp(name) / "out")
        for name, path in SUITES.items()
    }


def _templates(assembly: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in assembly.glob("*.template.json")}


def test_every_suite_is_here() -> None:
    assert sorted(SUITES) == [
        "scale_from_zero",
        "serving_ec2",
        "serving_sagemaker",
        "training_efa",
        "training_hyperpod",
        "training_smoke",
    ]


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_snapshot_matches(assemblies: dict[str, Path], suite: str) -> None:
    diffs = snapshots.differences(snapshots.snapshot_dir(SUITES[suite]), assemblies[suite])
    assert not diffs, "\n".join([f"{suite} changed; review, then `make integ-snapshots`:", *diffs])


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_everything_is_deleted_with_its_stack(assemblies: dict[str, Path], suite: str) -> None:
    for name, template in _templates(assemblies[suite]).items():
        for logical_id, resource in template["Resources"].items():
            assert resource.get("DeletionPolicy", "Delete") == "Delete", f"{name} {logical_id}"
            assert resource.get("UpdateReplacePolicy", "Delete") == "Delete", f"{name} {logical_id}"
            if resource["Type"] == "AWS::KMS::Key":
                assert resource["Properties"]["PendingWindowInDays"] == 7, f"{name} {logical_id}"


# Buckets emptied otherwise: the EFA installer mirror's custom resource deletes the one object it put
# ("Delete removes the object so the bucket can be deleted with its stack", custom_resources/efa_mirror.py).
# The HyperPod lifecycle bucket is emptied by the custom resource that writes the scripts into it
# (lifecycle_scripts handler: Delete of the stack's last prefix empties the bucket).
EMPTIED_BY_THEIR_OWNER = ("ClusterEfaInstallerBucket", "ClusterLifecycleBucket")


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_buckets_are_emptied_before_deletion(assemblies: dict[str, Path], suite: str) -> None:
    for name, template in _templates(assemblies[suite]).items():
        resources = template["Resources"]
        emptied = {
            json.dumps(r["Properties"]["BucketName"])
            for r in resources.values()
            if r["Type"] == "Custom::S3AutoDeleteObjects"
        }
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::S3::Bucket" and not logical_id.startswith(EMPTIED_BY_THEIR_OWNER):
                assert json.dumps({"Ref": logical_id}) in emptied, f"{name} {logical_id} is not emptied"


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_assertions_exist_and_every_waiter_is_bounded(assemblies: dict[str, Path], suite: str) -> None:
    manifest = json.loads((assemblies[suite] / "integ.json").read_text())
    (case,) = manifest["testCases"].values()
    assertion_stack = json.loads((assemblies[suite] / f"{case['assertionStack']}.template.json").read_text())
    assert any(key.startswith("AssertionResults") for key in assertion_stack["Outputs"]), "no assertion"
    for resource in assertion_stack["Resources"].values():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        definition = json.loads(
            "".join(
                p for p in resource["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
            )
        )
        (retry,) = definition["States"]["framework-isComplete-task"]["Retry"]
        # A custom resource waits at most an hour for its provider.
        assert retry["IntervalSeconds"] * retry["MaxAttempts"] < 3600


def test_other_regions_get_az_ids_from_the_offerings() -> None:
    assert Settings().az_ids == ("use1-az6", "use1-az4")
    assert choose_az_ids("us-west-2")[0] in ("usw2-az1", "usw2-az4")
    with pytest.raises(SystemExit, match="no AZ ID offers"):
        choose_az_ids("eu-west-1")


# -- the programs the jobs run ---------------------------------------------------------------------


def test_programs_travel_in_the_job_environment_and_report_in_the_log() -> None:
    env = programs.environment("smoke")
    assert list(env) == [programs.PROGRAM_VARIABLE]
    assert "torchrun $TORCHRUN_ARGS" in programs.training_command("--floor", "10")
    lines = [
        "noise",
        f'{programs.LOG_MARKER} {{"event": "checkpoint", "ok": true}}',
        f"{programs.LOG_MARKER} {{bad",
    ]
    assert programs.events(lines) == [{"event": "checkpoint", "ok": True}]


def test_smoke_checks_the_mount_and_the_bytes(tmp_path: Path) -> None:
    mounts = "fs-1.efs.us-east-1.amazonaws.com:/ /checkpoints nfs4 rw 0 0\n/dev/root / ext4 rw 0 0\n"
    assert smoke.mounted_filesystem("/checkpoints/", mounts) == "nfs4"
    assert smoke.mounted_filesystem("/scratch", mounts) is None
    result = smoke.write_and_read_back(tmp_path, size=3 * smoke.CHUNK + 5)
    assert result["read_back_matches"] and result["bytes"] == 3 * smoke.CHUNK + 5
    assert not any(tmp_path.iterdir())
    assert smoke.expected_sum(2) == 3


def test_allreduce_bus_bandwidth_is_nccl_tests_definition() -> None:
    # 1 GiB in 1 s over 64 ranks: algbw 1 GiB/s, busbw x 2 x 63 / 64.
    assert allreduce.bus_bandwidth_gib_per_second(2**30, 1.0, 64) == pytest.approx(1.96875)
    with pytest.raises(ValueError):
        allreduce.bus_bandwidth_gib_per_second(1, 0, 2)


# -- the probe, against a fake server on loopback ----------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    status = 200
    model = "Qwen/Qwen2.5-0.5B-Instruct"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.status)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if self.status == 200:
            for piece in ("Mars", "."):
                chunk = {"model": self.model, "choices": [{"delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fleet() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        _Fake.status, _Fake.model = 200, "Qwen/Qwen2.5-0.5B-Instruct"


def test_probe_reads_a_streamed_answer(fleet: str) -> None:
    answer = probe.handler({"action": "chat", "url": fleet, "model": _Fake.model})
    assert answer["verdict"] == "ok" and answer["status"] == 200 and answer["text"] == "Mars."
    assert answer["first_token_ms"] is not None and answer["model"] == _Fake.model


def test_probe_names_what_is_wrong(fleet: str) -> None:
    assert probe.handler({"url": fleet, "model": "other/model"})["verdict"] == f"model={_Fake.model}"
    _Fake.status = 503
    assert probe.handler({"url": fleet, "model": _Fake.model})["verdict"] == "status=503"
    woken = probe.handler({"action": "wake", "url": fleet, "model": _Fake.model})
    assert woken["status"] == 503 and woken["t0_ms"] > 0


def test_probe_judges_the_wake_against_its_budget(fleet: str) -> None:
    now_ms = probe._now_ms()
    event = {"action": "poll", "url": fleet, "model": _Fake.model, "budget_seconds": 60}
    assert probe.handler({**event, "t0_ms": now_ms - 10_000})["verdict"] == "ok"
    assert probe.handler({**event, "t0_ms": now_ms - 120_000})["verdict"] == "slow"
    _Fake.status = 503
    assert probe.handler({**event, "t0_ms": now_ms})["verdict"] == "waiting"


# -- the runner: cost guard, estimate, assertion results (nothing here reaches AWS) ------------------


def test_run_refuses_without_confirmation_and_names_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    import run

    assert run.main(["run", "--confirm", "no"]) == 3
    captured = capsys.readouterr()
    assert "Refusing to deploy" in captured.err and "could cost up to $" in captured.err
    assert "trn1.2xlarge" in captured.out and "training_efa" not in captured.out  # opt-in only


def test_estimate_prices_every_line_from_the_catalog() -> None:
    text, expected, most = estimate.render([INFO["training_efa"]], "us-east-1")
    # Two trn1.32xlarge at the table's $21.50/h for 0.75 h (at most 1.5 h), plus the small lines.
    assert 32.25 < expected < 34 and 64.5 < most < 66
    assert "2 x trn1.32xlarge" in text


def test_assertion_results_are_read_as_integ_runner_reads_them() -> None:
    import run

    outputs = {
        "S-Assert": {
            "AssertionResultsA": json.dumps({"status": "success"}),
            "AssertionResultsB": '{"status": "fail", "message": "line\none"}',
            "JobId": "j",
        }
    }
    assert [(k, r["status"]) for k, r in run.assertion_results(outputs, "S-Assert")] == [
        ("AssertionResultsA", "success"),
        ("AssertionResultsB", "fail"),
    ]


@pytest.mark.parametrize("doc", ["docs/integ.md"])
def test_the_documented_costs_are_the_estimate(doc: str) -> None:
    """Each suite's expected and most cost, as docs/integ.md prints them, is what
    ``make integ`` computes from the price tables; a price or hours change must update it."""
    text = (REPO_ROOT / doc).read_text()
    for name, suite in INFO.items():
        mine = estimate.lines(suite)
        expected = f"~${sum(line.expected_usd for line in mine):.2f}"
        most = f"${sum(line.most_usd for line in mine):.2f}"
        row = next(
            line
            for line in text.splitlines()
            if line.startswith((f"| `{name}`", f"| {name}")) and "~$" in line
        )
        assert expected in row and most in row, (doc, row)
    default = [suite for suite in INFO.values() if not suite.opt_in]
    _, _, most_default = estimate.render(default, "us-east-1")
    assert f"${most_default:.2f}" in text
