"""The documents' Python examples run against the current code, so they cannot go stale.

Every ```python block of every Markdown document in the repository (the README, docs/, each
construct package's README, the examples') is either executed by the test :data:`EXECUTED` names
for its document, or listed in :data:`NOT_RUNNABLE` with the reason. The README's example runs as
`cdk synth` runs an ``app.py``, and the snapshot-test recipe of docs/testing.md runs as pytest runs
it in a user's project (rough edge 10: it used to fail with ``ModuleNotFoundError: app``, then
``KeyError: 'context'``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from cdk_support import REPO_ROOT, make_app, nag_violations, template_of

pytest_plugins = ["pytester"]

PACKAGE = REPO_ROOT / "constructs" / "cdk_neuron"
CONSTRUCT_READMES = {
    "training": PACKAGE / "training" / "README.md",
    "serving": PACKAGE / "serving" / "README.md",
    "storage": PACKAGE / "storage" / "README.md",
    "monitoring": PACKAGE / "monitoring" / "README.md",
}
README_LINES = 450  # issue 26: what a newcomer needs; later work adds docs pages, not README sections

# Document -> the test that executes each of its blocks (all but NOT_RUNNABLE's).
EXECUTED = {
    "README.md": "test_the_readme_example_synthesizes_without_credentials",
    "docs/security.md": "test_the_acknowledgment_example_runs_on_the_readme_vpc",
    "docs/testing.md": "test_the_snapshot_test_recipe_passes_when_pasted",
    "docs/lifecycle.md": "test_the_lifecycle_example_runs_on_the_readme_stack",
    "docs/catalog-and-planner.md": "test_catalog_and_planner_example_runs",
    "docs/cost-of-a-result.md": "test_cost_of_a_result_examples_run",
    "docs/cli.md": "test_cli_framework.py::test_the_guides_recipe_for_a_command_runs",
    "docs/compile.md": "test_the_compile_examples_run",
    **{
        str(path.relative_to(REPO_ROOT)): f"test_{name}_readme_examples_run"
        for name, path in CONSTRUCT_READMES.items()
    },
}
# (document, 1-based block number) -> why it cannot run on its own.
NOT_RUNNABLE = {
    ("docs/acknowledgments.md", 1): "the shape of a call: `construct` and the reason are placeholders",
    ("docs/integ.md", 1): "`Ec2InferenceFleet(...)` stands for a fleet's other props",
    ("docs/cli.md", 1): "a training script's checkpoint code: needs torch-neuronx on a Neuron device",
    ("docs/compile.md", 5): "a training script's save step: needs neuronx-distributed on a Neuron device",
}

# Build output, dependencies and make mutate's copy of the sources (mutants/), none of them ours to check.
IGNORED_DIRS = {"node_modules", "cdk.out", "build", ".venv", "dist", "mutants"}


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


def runnable_blocks(document: str) -> list[str]:
    """The blocks of ``document`` (relative to the repository) that :data:`EXECUTED` promises to run."""
    blocks = python_blocks(REPO_ROOT / document)
    return [block for number, block in enumerate(blocks, 1) if (document, number) not in NOT_RUNNABLE]


def _documents() -> set[str]:
    return {
        str(path.relative_to(REPO_ROOT))
        for path in REPO_ROOT.rglob("*.md")
        if not IGNORED_DIRS & set(path.relative_to(REPO_ROOT).parts)
        and not any(part.startswith(".") for part in path.relative_to(REPO_ROOT).parts)
    }


def test_every_python_block_of_every_document_is_run_or_excused() -> None:
    """A document with Python blocks that this module does not know would go unexecuted."""
    with_python = {doc for doc in _documents() if python_blocks(REPO_ROOT / doc)}
    assert with_python == set(EXECUTED) | {doc for doc, _ in NOT_RUNNABLE}
    for (doc, number), reason in NOT_RUNNABLE.items():
        assert number <= len(python_blocks(REPO_ROOT / doc)) and reason, (doc, number)
    for doc, test in EXECUTED.items():
        assert runnable_blocks(doc), doc
        module, _, name = test.rpartition("::")
        source = (REPO_ROOT / "tests" / module).read_text() if module else Path(__file__).read_text()
        assert f"def {name}(" in source, (doc, test)


def test_the_readme_is_what_a_newcomer_needs() -> None:
    """What, why, quick start, one example, links: at most 450 lines; subjects live in docs/."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_LINES
    for heading in (
        "## Quick start",
        "## How the pieces connect",
        "### An environment in one stack",
        "## Documentation",
    ):
        assert f"\n{heading}\n" in readme, heading
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", readme))
    assert linked == {doc for doc in _documents() if doc.startswith("docs/")}, "every docs/ page is linked"


(README_APP,) = runnable_blocks("README.md")
(ACKNOWLEDGMENT,) = runnable_blocks("docs/security.md")
(USER_TEST,) = runnable_blocks("docs/testing.md")


@pytest.fixture(scope="module")
def readme_app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The README's example, run once as `cdk synth` runs an app.py (``__main__``, ``CDK_OUTDIR``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDK_OUTDIR", str(tmp_path_factory.mktemp("cdk.out")))
        namespace: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(README_APP, "README.md (an environment in one stack)", "exec"), namespace)
    return namespace


def test_the_readme_example_synthesizes_without_credentials(readme_app: dict[str, Any]) -> None:
    """Saved as app.py, ``cdk synth`` needs no AWS call: the assembly lists no missing context."""
    outdir = Path(readme_app["app"].outdir)
    assert "missing" not in json.loads((outdir / "manifest.json").read_text())
    types = {
        r["Type"] for r in template_of(readme_app["app"].node.find_child("Neuron"))["Resources"].values()
    }
    assert {"AWS::Batch::JobQueue", "AWS::EFS::FileSystem", "AWS::AutoScaling::AutoScalingGroup"} <= types
    assert "AWS::CloudWatch::Dashboard" in types


def test_the_readme_stack_has_nag_findings_only_on_the_plain_vpc(readme_app: dict[str, Any]) -> None:
    """What the README says after the example: the cdk-neuron constructs report no finding."""
    findings = nag_violations(readme_app["app"].node.find_child("Neuron"))
    assert findings
    for finding in findings:
        paths = finding.split(": ", 1)[1].split(", ")
        assert all(path.startswith("Neuron/Vpc") for path in paths), finding


def test_the_acknowledgment_example_runs_on_the_readme_vpc(readme_app: dict[str, Any]) -> None:
    import aws_cdk as cdk

    vpc = readme_app["build"](cdk.App()).node.find_child("Vpc")
    assert [f for f in nag_violations(vpc) if f.startswith("AwsSolutions-VPC7:")]
    exec(compile(ACKNOWLEDGMENT, "docs/security.md (cdk-nag acknowledgments)", "exec"), {"vpc": vpc})
    assert not [f for f in nag_violations(vpc) if f.startswith("AwsSolutions-VPC7:")]


def test_the_lifecycle_example_runs_on_the_readme_stack(readme_app: dict[str, Any]) -> None:
    """docs/lifecycle.md's check of one stack: the README's stack retries cleanly and an unchanged
    template loses nothing."""
    (block,) = runnable_blocks("docs/lifecycle.md")
    stack = readme_app["app"].node.find_child("Neuron")
    template = template_of(stack)
    namespace = {"stack": stack, "template": template, "before": template, "after": template}
    exec(compile(block, "docs/lifecycle.md (in your own tests)", "exec"), namespace)


def test_the_snapshot_test_recipe_passes_when_pasted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/testing.md's pieces, pasted into an app whose cdk.json has no "context" (the worked
    example's app.py, which ends the way the README's does), pass under the user's own pytest."""
    testing = (REPO_ROOT / "docs" / "testing.md").read_text()
    (ini,) = re.findall(r"^ *```ini\n(.*?)^ *```", testing, re.S | re.M)
    pytester.makefile(".ini", pytest="\n".join(line.strip() for line in ini.splitlines()))
    app = (REPO_ROOT / "examples" / "reserved-trn1n-sagemaker" / "app.py").read_text()
    assert "\ndef build(app: cdk.App)" in app and "\ndef build(app: cdk.App)" in README_APP
    (pytester.path / "app.py").write_text(app)
    (pytester.path / "cdk.json").write_text(json.dumps({"app": "python3 app.py"}))
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_stack.py").write_text(USER_TEST)
    monkeypatch.delitem(sys.modules, "app", raising=False)  # this repository's own app.py
    result = pytester.runpytest_inprocess("--snapshot-update", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert list((pytester.path / "tests" / "__snapshots__").rglob("*.json"))


def test_the_compile_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/compile.md: the construct on a stack with a VPC, cache, checkpoints and token, then the request,
    then the walkthrough's app: without an artifact (the fleet at zero), with the manifest of one compiled
    for its fleet (served, checked at synthesis), and with one compiled for another batch (refused)."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_secretsmanager as secretsmanager

    from cdk_neuron.errors import NeuronConfigError
    from cdk_neuron.serving import ModelSpec, ServingEngine
    from cdk_neuron.storage import CheckpointStore, CompileCache

    construct, on_cluster, request, app_py = runnable_blocks("docs/compile.md")
    app = make_app()
    stack = cdk.Stack(app, "Compile", env=cdk.Environment(account="111111111111", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc")
    namespace: dict[str, Any] = {
        "stack": stack,
        "vpc": vpc,
        "cache": CompileCache(stack, "Cache"),
        "checkpoints": CheckpointStore(stack, "Checkpoints", vpc=vpc),
        "token": secretsmanager.Secret.from_secret_name_v2(stack, "Token", "hf-token"),
    }
    exec(compile(construct, "docs/compile.md (construct)", "exec"), namespace)
    assert nag_violations(namespace["compilation"]) == []
    # BatchModelCompilation on a Batch training cluster of trn1.32xlarge, operators allowed to submit.
    from aws_cdk import aws_iam as iam

    from cdk_neuron.training import BatchTrainingCluster

    cluster_stack = cdk.Stack(
        app, "CompileOnCluster", env=cdk.Environment(account="111111111111", region="us-west-2")
    )
    cluster_vpc = ec2.Vpc(cluster_stack, "Vpc", availability_zones=["us-west-2a", "us-west-2b"])
    cluster = BatchTrainingCluster(
        cluster_stack, "Cluster", vpc=cluster_vpc, instance_type="trn1.32xlarge", max_nodes=2,
        vpc_subnets=ec2.SubnetSelection(availability_zones=["us-west-2a"], subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        availability_zone_id="usw2-az1", checkpoints=CheckpointStore(cluster_stack, "Checkpoints", vpc=cluster_vpc),
        compile_cache=CompileCache(cluster_stack, "Cache"),
        job_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
    )  # fmt: skip
    on_cluster_namespace: dict[str, Any] = {
        "stack": cluster_stack,
        "cluster": cluster,
        "token": secretsmanager.Secret.from_secret_name_v2(cluster_stack, "Token", "hf-token"),
        "operators": iam.Role(cluster_stack, "Operators", assumed_by=iam.AccountRootPrincipal()),
    }
    exec(compile(on_cluster, "docs/compile.md (BatchModelCompilation)", "exec"), on_cluster_namespace)
    assert nag_violations(on_cluster_namespace["compilation"]) == []
    exec(compile(request, "docs/compile.md (request)", "exec"), {})

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path / "cdk.out"))

    def synth() -> dict[str, Any]:
        scope: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(app_py, "docs/compile.md (app.py)", "exec"), scope)
        stack = scope["app"].node.find_child("TinyLlama")
        return template_of(stack)

    before = synth()
    groups = [r for r in before["Resources"].values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    assert [g["Properties"]["MinSize"] for g in groups] == ["0"]
    assert any(r["Type"] == "AWS::ECS::TaskDefinition" for r in before["Resources"].values())
    # The artifact `cdk-neuron compile` would write for that fleet: its shape, engine and image.
    spec = ModelSpec(
        model_id="TinyLlama/TinyLlama-1.1B-Chat-v1.0", parameters=1_100_048_384, sequence_length=2048
    )
    image = ServingEngine.optimum_neuron().image
    uri = "s3://my-models/compiled/tinyllama-sft-step-1000/"
    manifest = {
        "format": "cdk-neuron-artifact", "version": 1, "artifact_uri": uri,
        "model": {"id": spec.model_id, "revision": None},
        "source": {"kind": "checkpoint", "uri": "tinyllama-sft/step-1000", "step": 1000, "sha256": "a" * 64},
        "engine": {"name": "optimum-neuron", "version": "0.4.5", "image": f"{image.repository}:{image.tag}"},
        "neuron": {"sdk": "2.26.1", "compiler": None},
        "shape": {"batch_size": 1, "sequence_length": 2048,
                  "tensor_parallel": spec.plan("inf2.xlarge").tensor_parallel, "dtype": "bf16"},
        "files": [{"path": "model.pt", "bytes": 1, "sha256": "b" * 64}],
        "compile_seconds": 900.0, "created": "2026-12-02T04:00:00Z",
    }  # fmt: skip
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "tinyllama.json").write_text(json.dumps(manifest))
    after = synth()
    groups = [r for r in after["Resources"].values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    assert [g["Properties"]["MinSize"] for g in groups] == ["1"]
    assert uri.rstrip("/") in json.dumps(after)
    (tmp_path / "artifacts" / "tinyllama.json").write_text(
        json.dumps({**manifest, "shape": {**manifest["shape"], "batch_size": 4}})
    )
    with pytest.raises(
        NeuronConfigError,
        match=r"artifact_manifest.shape.batch_size=1: the artifact was compiled for batch_size 4",
    ):
        synth()


def test_every_cdk_neuron_command_of_the_walkthrough_parses() -> None:
    """docs/compile.md's commands are the CLI's: each `cdk-neuron ...` line parses with its own parser."""
    import shlex

    from cdk_neuron.cli.commands import build_parser
    from cdk_neuron.cli.main import _split_job_command

    text = (REPO_ROOT / "docs" / "compile.md").read_text()
    commands = [
        line
        for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)
        for line in block.splitlines()
        if line.startswith("cdk-neuron ")
    ]
    assert {shlex.split(c)[1] for c in commands} >= {"submit", "status", "compile", "preflight", "impact"}
    parser = build_parser()
    for command in commands:
        words, job = _split_job_command(shlex.split(command)[1:])  # as main() splits a job's command off
        try:
            parser.parse_args(words)
        except SystemExit as exited:  # argparse's way of refusing
            raise AssertionError(f"docs/compile.md: {command!r} does not parse") from exited
        assert bool(job) == (words[0] == "submit"), command
    assert "--source-kv-multiplier 2" in text and "use-artifact --env dev" in text


def test_catalog_and_planner_example_runs() -> None:
    (block,) = runnable_blocks("docs/catalog-and-planner.md")
    exec(compile(block, "docs/catalog-and-planner.md", "exec"), {"__name__": "readme"})


def test_cost_of_a_result_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    for number, block in enumerate(runnable_blocks("docs/cost-of-a-result.md"), 1):
        exec(compile(block, f"docs/cost-of-a-result.md (example {number})", "exec"), {"__name__": "readme"})
    assert "$" in capsys.readouterr().out


def _run_in_one_stack(name: str) -> tuple[Any, dict[str, Any]]:
    """Every block of a construct README, in order, inside the stack its text describes."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    stack = cdk.Stack(make_app(), "Readme", env=cdk.Environment(account="111111111111", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a", "us-east-1b"], nat_gateways=1)
    namespace: dict[str, Any] = {
        "__name__": "readme",
        "self": stack,
        "vpc": vpc,
        "training_subnets": ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1a"]
        ),
    }
    blocks = runnable_blocks(str(CONSTRUCT_READMES[name].relative_to(REPO_ROOT)))
    assert blocks, name
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{name}/README.md (example {number})", "exec"), namespace)
    return stack, namespace


def _resource_types(stack: Any) -> set[str]:
    return {r["Type"] for r in template_of(stack)["Resources"].values()}


def test_training_readme_examples_run() -> None:
    from cdk_neuron import AutoScalingTrainingCluster, BatchTrainingCluster

    stack, namespace = _run_in_one_stack("training")
    assert isinstance(namespace["cluster"], BatchTrainingCluster)
    # "a queue for 2-node jobs of 32 ranks each (TP 32 inside each node, data parallel across them)"
    plan = namespace["cluster"].plan
    assert (plan.nodes, plan.tensor_parallel, plan.ranks_per_node, plan.data_parallel) == (2, 32, 32, 2)
    assert isinstance(namespace["group"], AutoScalingTrainingCluster)
    assert namespace["prod"].plan.world_size == 512
    assert {"AWS::Batch::JobQueue", "AWS::AutoScaling::AutoScalingGroup", "AWS::CloudWatch::Alarm"} <= (
        _resource_types(stack)
    )


def test_serving_readme_examples_run() -> None:
    from cdk_neuron import Ec2InferenceFleet, SageMakerInferenceFleet

    stack, namespace = _run_in_one_stack("serving")
    assert isinstance(namespace["fleet"], Ec2InferenceFleet)
    assert isinstance(namespace["endpoint"], SageMakerInferenceFleet)
    assert namespace["fleet"].plan.instance_type == "inf2.48xlarge"
    assert {"AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::SageMaker::Endpoint"} <= _resource_types(stack)


def test_storage_readme_examples_run() -> None:
    stack, namespace = _run_in_one_stack("storage")
    assert namespace["checkpoints"].checkpoint_estimate is not None
    assert {"AWS::EFS::FileSystem", "AWS::S3::Bucket", "AWS::Backup::BackupPlan"} <= _resource_types(stack)


def test_monitoring_readme_examples_run() -> None:
    stack, namespace = _run_in_one_stack("monitoring")
    assert namespace["monitoring"].alarms
    assert {"AWS::CloudWatch::Dashboard", "AWS::SNS::Topic"} <= _resource_types(stack)
