"""``cdk-neuron impact`` and ``cdk-neuron ami``: two cloud assemblies offline, the deployed templates
through botocore's Stubber, and the AMI release look-up and ``--take``."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from app_assembly import shipped_environments
from botocore.stub import Stubber

from cdk_neuron import ami
from cdk_neuron.cli.context import Context
from cdk_neuron.cli.main import main
from cdk_neuron.cli.status import ExitStatus
from cdk_support import REPO_ROOT, cdk_json_context
from stacks.change_matrix import CHANGES, synthesize_environment

STACKS = ("staging-Network", "staging-Training", "staging-Serving", "staging-Monitoring")


@dataclass(frozen=True)
class Assemblies:
    old: str
    new: str
    old_templates: dict[str, Any]


@pytest.fixture(scope="module")
def one_zone(tmp_path_factory: pytest.TempPathFactory) -> Assemblies:
    """staging before and after storage.one_zone: the change that must replace the file system."""
    change = next(c for c in CHANGES if c.name == "storage.one_zone")
    environments, context = shipped_environments(), cdk_json_context()
    old, new = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    templates = synthesize_environment(environments, "staging", context, outdir=str(old))
    synthesize_environment(change.apply(environments), "staging", context, outdir=str(new))
    return Assemblies(str(old), str(new), templates)


def _run(args: list[str], clients: Any = None, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(args, context=Context(clients=clients, stdout=out, stderr=err, cwd=cwd))
    return status, out.getvalue(), err.getvalue()


def test_two_assemblies_show_what_is_replaced_and_what_data_is_at_risk(one_zone: Assemblies) -> None:
    status, out, _ = _run(["impact", one_zone.old, one_zone.new, "--json"])
    assert status == ExitStatus.OK
    doc = json.loads(out)
    assert doc["command"] == "impact"
    (env,) = doc["environments"]
    assert env["name"] == "staging"
    assert {s["stack"]: s["status"] for s in env["stacks"]} == {
        "staging-Network": "unchanged",
        "staging-Training": "changed",
        "staging-Serving": "unchanged",
        "staging-Monitoring": "changed",
    }
    (at_risk,) = env["data_at_risk"]
    assert at_risk["logical_id"].startswith("CheckpointsFileSystem")
    assert at_risk["data_at_risk"].endswith(
        "the old one and its files stay in the account, outside the stack"
    )
    assert any(r["logical_id"].startswith("CheckpointsFileSystemEfsMountTarget") for r in env["replaced"])
    assert env["refused"] == [] and env["blocked"] == []
    assert env["cost"] == "no change"  # One Zone is priced per GB stored: nothing is stored yet
    assert doc["summary"].startswith("Impact: ") and "1 with data at risk" in doc["summary"]


def test_the_cost_line_is_cost_diffs(one_zone: Assemblies, monkeypatch: pytest.MonkeyPatch) -> None:
    from cdk_neuron.cli import cost

    real = cost.diff

    def dearer(old: Any, new: Any, **options: Any) -> Any:
        found = real(old, new, **options)
        (env,) = found.environments
        scale = replace(env.idle, change_usd_per_hour=0.05)
        return replace(found, environments=[replace(env, idle=scale, full_scale=scale)])

    monkeypatch.setattr(cost, "diff", dearer)
    doc = json.loads(_run(["impact", one_zone.old, one_zone.new, "--json"])[1])
    assert doc["environments"][0]["cost"] == "idle +$0.05/hour, full scale +$0.05/hour"


def test_fail_on_risk_makes_it_a_gate(one_zone: Assemblies) -> None:
    assert (
        _run(["impact", one_zone.old, one_zone.new, "--fail-on-risk", "-o", "text"])[0] == ExitStatus.FAILED
    )
    status, out, _ = _run(["impact", one_zone.old, one_zone.old, "--fail-on-risk", "-o", "text"])
    assert status == ExitStatus.OK
    assert "Impact: 0 resource(s) replaced, 0 with data at risk" in out
    assert "no change" in out  # the cost line


def test_the_report_fits_one_screen_in_text(one_zone: Assemblies) -> None:
    _, out, _ = _run(["impact", one_zone.old, one_zone.new, "-o", "text"])
    assert "staging: data at risk" in out and "staging: replaced" in out
    assert len(out.splitlines()) < 60


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["impact", "only-one"], "give OLD and NEW cloud assemblies, or --deployed"),
        (["impact", "a", "b", "--unblock"], "it needs --deployed"),
        (["impact", "--deployed", "a"], "--deployed compares with one new synthesis"),
        (["impact", "--deployed", "--config", "cdk.json"], "impact compares templates"),
    ],
)
def test_usage_errors_say_how_to_run_it(args: list[str], message: str) -> None:
    status, _, err = _run(args)
    assert status == ExitStatus.USAGE
    assert message in err


def test_bad_assembly_folders_are_named_as_given_and_all_reported(tmp_path: Path) -> None:
    """Rough edge 6 in impact: OLD and NEW are positional, so an error names them, never --app; and
    two bad folders are both reported in one run."""
    missing, other = tmp_path / "missing", tmp_path / "other"
    other.mkdir()
    status, _, err = _run(["impact", str(missing), str(other)])
    assert status == ExitStatus.USAGE
    assert err.splitlines() == [
        f"cdk-neuron: OLD='{missing}': holds no manifest.json: give the cloud assembly folder cdk synth "
        "writes (cdk.out)",
        f"NEW='{other}': holds no manifest.json: give the cloud assembly folder cdk synth writes (cdk.out)",
    ]
    assert "--app" not in err


def _cloudformation(
    templates: dict[str, Any], overrides: dict[str, dict[str, Any]] | None = None
) -> tuple[Any, Stubber]:
    client = boto3.client(
        "cloudformation", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    for name in STACKS:
        stack = {
            "StackName": name,
            "StackStatus": "UPDATE_COMPLETE",
            "CreationTime": "2026-11-01T00:00:00Z",
            "EnableTerminationProtection": True,
            **(overrides or {}).get(name, {}),
        }
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": name})
        if stack["StackStatus"] == "UPDATE_COMPLETE":
            stub.add_response(
                "get_template",
                {"TemplateBody": json.dumps(templates[name])},
                {"StackName": name, "TemplateStage": "Original"},
            )
    return client, stub


def test_against_the_deployed_templates_it_sees_the_same_change(one_zone: Assemblies) -> None:
    client, stub = _cloudformation(one_zone.old_templates)
    with stub:
        status, out, _ = _run(
            ["impact", "--deployed", "--app", one_zone.new, "--json"], clients=lambda service, region: client
        )
        stub.assert_no_pending_responses()
    assert status == ExitStatus.OK
    (env,) = json.loads(out)["environments"]
    assert [r["logical_id"][: len("CheckpointsFileSystem")] for r in env["data_at_risk"]] == [
        "CheckpointsFileSystem"
    ]
    # The deployed templates carry their workload records: priced as cost --diff prices two assemblies.
    assert env["cost"] == "no change"


def _deployed(args: list[str], templates: dict[str, Any], missing: tuple[str, ...] = ()) -> dict[str, Any]:
    """``impact --deployed --json`` against ``templates`` as deployed; ``missing`` stacks do not exist."""
    client = boto3.client(
        "cloudformation", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    for name in STACKS:
        if name in missing:
            stub.add_client_error(
                "describe_stacks", "ValidationError", f"Stack with id {name} does not exist", 400
            )
            continue
        stack = {"StackName": name, "StackStatus": "UPDATE_COMPLETE", "CreationTime": "2026-11-01T00:00:00Z"}
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": name})
        stub.add_response(
            "get_template",
            {"TemplateBody": json.dumps(templates[name])},
            {"StackName": name, "TemplateStage": "Original"},
        )
    with stub:
        status, out, err = _run(
            ["impact", "--deployed", *args, "--json"], clients=lambda service, region: client
        )
        stub.assert_no_pending_responses()
    assert status == ExitStatus.OK, err
    (env,) = json.loads(out)["environments"]
    return dict(env)


def test_the_deployed_cost_is_priced_from_the_records_the_deployed_templates_carry(
    one_zone: Assemblies,
) -> None:
    """make deploy shows the cost change: the deployed side is what GetTemplate returns, records and all."""
    import copy

    deployed = copy.deepcopy(one_zone.old_templates)
    records = deployed["staging-Training"]["Metadata"]["cdk-neuron:workloads"]
    (training,) = [r for r in records.values() if r["kind"] == "training"]
    training["max_nodes"] //= 2  # what is deployed runs half the nodes at full scale
    env = _deployed(["--app", one_zone.new], deployed)
    assert env["cost"].startswith("idle $0.00/hour, full scale +$"), env["cost"]


def test_a_first_deploy_prices_the_whole_environment(one_zone: Assemblies) -> None:
    env = _deployed(["--app", one_zone.new], one_zone.old_templates, missing=STACKS)
    assert {s["status"] for s in env["stacks"]} == {"created"}
    assert env["cost"].startswith("idle +$") and ", full scale +$" in env["cost"], env["cost"]


def test_deployed_templates_without_records_say_the_cost_is_unknown(one_zone: Assemblies) -> None:
    from cdk_neuron.cli.impact import UNPRICED_DEPLOYED

    older = {
        name: {k: v for k, v in t.items() if k != "Metadata"} for name, t in one_zone.old_templates.items()
    }
    env = _deployed(["--app", one_zone.new], older)
    assert env["cost"] == UNPRICED_DEPLOYED


def test_a_failed_first_create_is_found_and_unblocked(one_zone: Assemblies) -> None:
    """ROLLBACK_COMPLETE with termination protection: the CDK CLI cannot delete it to retry."""
    failed = {
        "staging-Serving": {"StackStatus": "ROLLBACK_COMPLETE"},
        "staging-Monitoring": {"StackStatus": "ROLLBACK_COMPLETE"},
    }
    client, stub = _cloudformation(one_zone.old_templates, failed)
    with stub:
        status, out, _ = _run(
            ["impact", "--deployed", "--app", one_zone.new, "--json", "--fail-on-risk"],
            clients=lambda service, region: client,
        )
        stub.assert_no_pending_responses()
    assert status == ExitStatus.FAILED
    (env,) = json.loads(out)["environments"]
    assert env["blocked"] == ["staging-Serving", "staging-Monitoring"]
    statuses = {s["stack"]: s["status"] for s in env["stacks"]}
    assert statuses["staging-Serving"] == "created"  # nothing of it exists: all of it is created again

    client, stub = _cloudformation(one_zone.old_templates, failed)
    for name in ("staging-Serving", "staging-Monitoring"):
        stub.add_response(
            "update_termination_protection",
            {"StackId": f"arn:aws:cloudformation:us-west-2:111111111111:stack/{name}/x"},
            {"EnableTerminationProtection": False, "StackName": name},
        )
    with stub:
        status, out, _ = _run(
            ["impact", "--deployed", "--app", one_zone.new, "--json", "--unblock"],
            clients=lambda service, region: client,
        )
    (env,) = json.loads(out)["environments"]
    assert (env["blocked"], env["unblocked"]) == ([], ["staging-Serving", "staging-Monitoring"])


def test_a_stack_in_review_is_not_deployed_and_nothing_of_it_is_compared(one_zone: Assemblies) -> None:
    """A change set of type CREATE that was never executed (REVIEW_IN_PROGRESS) deployed nothing: its
    stack is created in full, and no GetTemplate reads the unexecuted change set's template as if deployed."""
    client, stub = _cloudformation(
        one_zone.old_templates, {"staging-Serving": {"StackStatus": "REVIEW_IN_PROGRESS"}}
    )
    with stub:
        _, out, _ = _run(
            ["impact", "--deployed", "--app", one_zone.new, "--json", "--fail-on-risk"],
            clients=lambda service, region: client,
        )
        stub.assert_no_pending_responses()  # no GetTemplate for the stack in review
    (env,) = json.loads(out)["environments"]
    assert {s["stack"]: s["status"] for s in env["stacks"]}["staging-Serving"] == "created"
    assert env["blocked"] == []  # the CDK CLI creates over it: nothing to unblock


def test_a_failed_rollback_is_reported_but_left_alone(one_zone: Assemblies) -> None:
    client, stub = _cloudformation(
        one_zone.old_templates, {"staging-Serving": {"StackStatus": "ROLLBACK_FAILED"}}
    )
    with stub:
        _, out, _ = _run(
            ["impact", "--deployed", "--app", one_zone.new, "--json", "--unblock"],
            clients=lambda service, region: client,
        )
        stub.assert_no_pending_responses()  # no UpdateTerminationProtection
    (env,) = json.loads(out)["environments"]
    assert (env["blocked"], env["unblocked"]) == (["staging-Serving"], [])


# -- ami ------------------------------------------------------------------------------------------------

NEWER = "al2023-ami-ecs-neuron-hvm-2023.0.20261020-kernel-6.1-x86_64"


def _ssm(region: str, newest: str, pinned_published: bool = True) -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name=region, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    value = json.dumps({"image_name": newest, "image_id": "ami-0newest"})
    stub.add_response(
        "get_parameter", {"Parameter": {"Name": ami.RECOMMENDED, "Value": value}}, {"Name": ami.RECOMMENDED}
    )
    if pinned_published:
        stub.add_response(
            "get_parameter",
            {"Parameter": {"Name": ami.release_parameter(), "Value": "ami-0pinned"}},
            {"Name": ami.release_parameter()},
        )
    else:
        stub.add_client_error("get_parameter", "ParameterNotFound", "no")
    return client, stub


def test_ami_shows_the_pinned_and_the_newest_and_takes_it_into_cdk_json(tmp_path: Path) -> None:
    config = tmp_path / "cdk.json"
    shutil.copy(REPO_ROOT / "cdk.json", config)
    client, stub = _ssm("us-east-1", NEWER)
    with stub:
        status, out, _ = _run(
            ["ami", "--config", str(config), "--env", "dev", "--json"], clients=lambda s, r: client
        )
    assert status == ExitStatus.OK
    (env,) = json.loads(out)["environments"]
    assert (env["pinned"], env["pinned_image_id"], env["newest"], env["taken"]) == (
        ami.RELEASE,
        "ami-0pinned",
        NEWER,
        False,
    )
    assert config.read_text() == (REPO_ROOT / "cdk.json").read_text()

    client, stub = _ssm("us-east-1", NEWER)
    with stub:
        status, out, _ = _run(
            ["ami", "--config", str(config), "--env", "dev", "--take", "--json"], clients=lambda s, r: client
        )
    assert json.loads(out)["environments"][0]["taken"] is True
    environments = json.loads(config.read_text())["context"]["environments"]
    assert environments["dev"]["ami_release"] == NEWER
    assert environments["prod"]["ami_release"] == ami.RELEASE == environments["staging"]["ami_release"]
    # Only that one value changed: the file stays as reviewable as it was.
    before = (REPO_ROOT / "cdk.json").read_text().splitlines()
    after = config.read_text().splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [
        next(i for i, line in enumerate(before) if '"ami_release"' in line)
    ]


def test_ami_fails_when_the_pinned_release_is_not_published_in_the_region() -> None:
    client, stub = _ssm("us-east-1", ami.RELEASE, pinned_published=False)
    with stub:
        status, out, _ = _run(
            ["ami", "--config", str(REPO_ROOT / "cdk.json"), "--env", "dev", "-o", "text"],
            clients=lambda s, r: client,
        )
    assert status == ExitStatus.FAILED
    assert "not published in this Region" in out
