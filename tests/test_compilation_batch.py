"""BatchModelCompilation: a 70B compiles on the Batch training cluster's trn1.32xlarge, through the images'
real entrypoints.

The job definition as CloudFormation receives it; its three containers run under bash exactly as AWS
Batch starts them (the image's ENTRYPOINT, which a job definition cannot replace, then the command),
through the reproductions of the Neuron training DLC's ``eval`` entrypoint and the serving image's
server-starting one (tests/image_entrypoints); the queue beside training's; the grants; the record the
CLI reads.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from image_rehearsal import ENTRYPOINT_COMMANDS, Container
from test_compilation import (
    _AWS_EMPTY_PREFIX,
    _EXPORT,
    _hf_checkpoint,
    _sandbox,
)

from cdk_neuron import catalog, timeouts
from cdk_neuron.compilation import BatchModelCompilation, CompileRequest, ModelCompilation, ModelSource
from cdk_neuron.compilation.batch import EXPORT_COMMAND, HOST_WORK_DIR, SERVING_ENTRY, TOOLS_IMAGE
from cdk_neuron.compilation.job import FARGATE_MAX_WEIGHTS_GIB, HostCompile
from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_neuron.node_programs import INSTALL_DIR
from cdk_neuron.serving import ModelSpec, ServingEngine
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME, ArtifactManifest
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import BatchTrainingCluster
from cdk_support import TEST_ACCOUNT, make_app, nag_violations

REGION = "us-west-2"
AZS = ["us-west-2a", "us-west-2b"]
ARTIFACT = "s3://prod-models/compiled/llama-3-70b/run-9-step-4000/"
SEVENTY_B = ModelSpec(
    model_id="meta-llama/Meta-Llama-3-70B-Instruct",
    artifact_uri=ARTIFACT,
    parameters=70_000_000_000,
    sequence_length=4096,
    batch_size=4,
    tensor_parallel=24,
)
TRN1 = catalog.get_instance("trn1.32xlarge")


def _stack(capacity: Any = None) -> tuple[cdk.Stack, ec2.Vpc, BatchTrainingCluster]:
    app = make_app(**{f"availability-zones:account={TEST_ACCOUNT}:region={REGION}": AZS})
    stack = cdk.Stack(app, "Training", env=cdk.Environment(account=TEST_ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS, nat_gateways=1)
    cluster = BatchTrainingCluster(
        stack,
        "Cluster",
        vpc=vpc,
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc_subnets=ec2.SubnetSelection(
            availability_zones=[AZS[0]], subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        ),
        availability_zone_id="usw2-az1",
        checkpoints=CheckpointStore(stack, "Checkpoints", vpc=vpc),
        compile_cache=CompileCache(stack, "Cache"),
        job_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
        **({"capacity": capacity} if capacity is not None else {}),
    )
    return stack, vpc, cluster


@pytest.fixture(scope="module")
def synthesized() -> tuple[BatchModelCompilation, dict[str, Any]]:
    stack, _, cluster = _stack()
    compilation = BatchModelCompilation(
        stack,
        "Compilation",
        training_cluster=cluster,
        artifact_bucket=s3.Bucket.from_bucket_name(stack, "Models", "prod-models"),
        hugging_face_token=secretsmanager.Secret.from_secret_name_v2(stack, "Token", "hf-token"),
    )
    return compilation, dict(cdk.assertions.Template.from_stack(stack).to_json())


def _definition(template: dict[str, Any]) -> dict[str, Any]:
    definitions: list[dict[str, Any]] = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Batch::JobDefinition" and "EcsProperties" in r["Properties"]
    ]
    [definition] = definitions
    return definition


def _containers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [task] = _definition(template)["EcsProperties"]["TaskProperties"]
    return {c["Name"]: c for c in task["Containers"]}


def _resources(container: dict[str, Any]) -> dict[str, int]:
    return {r["Type"]: int(r["Value"]) for r in container["ResourceRequirements"]}


def _request(model: ModelSpec = SEVENTY_B, **kwargs: Any) -> CompileRequest:
    return CompileRequest(
        source=kwargs.pop("source", ModelSource.checkpoint("run-9/step-4000", step=4000)),
        artifact_uri=model.artifact_uri or ARTIFACT,
        model=model,
        plan=model.plan(instance_type="inf2.48xlarge"),
        engine=ServingEngine.optimum_neuron(),
        **kwargs,
    )


# --------------------------------------------------------------------------------------------
# Where each model size compiles
# --------------------------------------------------------------------------------------------


def test_a_70b_does_not_fit_fargate_and_fits_a_trn1_host_by_the_catalogs_facts() -> None:
    host = HostCompile.on(TRN1)
    # trn1.32xlarge: 128 vCPUs, 512 GiB; a job may ask for 90 % of it; fetch and upload keep 1 vCPU, 2 GiB each.
    assert (TRN1.vcpus, TRN1.memory_gib) == (128, 512)
    assert (host.export_vcpus, host.export_memory_mib) == (126, int(512 * 1024 * 0.9) - 4096)
    weights = SEVENTY_B.plan(instance_type="inf2.48xlarge").weights_gib
    assert FARGATE_MAX_WEIGHTS_GIB < weights < host.max_weights_gib
    with pytest.raises(
        NeuronConfigError, match=r"a Fargate task has at most 120 GiB: compile it on the training"
    ):
        _request()
    assert _request(host=host).host == host


def test_a_model_no_compile_path_holds_is_refused_with_the_memory_it_needs() -> None:
    small_host = HostCompile.on(catalog.get_instance("trn1.2xlarge"))  # 32 GiB
    with pytest.raises(
        NeuronConfigError,
        match=r"^model.parameters=70000000000: 130 GiB of weights need about 391 GiB of host memory to export, "
        r"and a compile job on trn1.2xlarge gives its export 25 GiB .*no compile path here holds it; export by "
        r"hand on an instance with 430 GiB or more",
    ):
        _request(host=small_host)


# --------------------------------------------------------------------------------------------
# The job definition
# --------------------------------------------------------------------------------------------


def test_three_containers_run_in_order_on_ec2_and_the_upload_ends_the_job(synthesized: Any) -> None:
    _, template = synthesized
    definition = _definition(template)
    assert (definition["Type"], definition["PlatformCapabilities"]) == ("container", ["EC2"])
    containers = _containers(template)
    assert list(containers) == ["fetch", "export", "upload"]
    assert [c["Essential"] for c in containers.values()] == [False, False, True]
    assert "DependsOn" not in containers["fetch"]
    assert containers["export"]["DependsOn"] == [{"ContainerName": "fetch", "Condition": "COMPLETE"}]
    assert containers["upload"]["DependsOn"] == [{"ContainerName": "export", "Condition": "COMPLETE"}]


def test_the_export_gets_the_host_the_catalog_describes_and_the_steps_a_little(synthesized: Any) -> None:
    compilation, template = synthesized
    containers = _containers(template)
    host = HostCompile.on(TRN1)
    assert compilation.host == host
    assert _resources(containers["export"]) == {"VCPU": 126, "MEMORY": host.export_memory_mib}
    assert _resources(containers["fetch"]) == _resources(containers["upload"]) == {"VCPU": 1, "MEMORY": 2048}
    # Batch places the job by the sum: it must fit what ECS registers of one node (90 %).
    total = sum(_resources(c)["MEMORY"] for c in containers.values())
    assert total == int(512 * 1024 * 0.9)
    assert sum(_resources(c)["VCPU"] for c in containers.values()) == TRN1.vcpus


def test_fetch_and_upload_run_their_bundle_programs_in_the_training_dlc(synthesized: Any) -> None:
    _, template = synthesized
    containers = _containers(template)
    budgets = timeouts.compile_step_seconds(HostCompile.on(TRN1).max_weights_gib)
    for name in ("fetch", "upload"):
        assert containers[name]["Image"] == TOOLS_IMAGE.uri(REGION)
        assert containers[name]["Command"] == [
            "timeout", "--kill-after=30", str(budgets[name]), "bash", f"{INSTALL_DIR}/compile/{name}.sh",
        ]  # fmt: skip


def test_the_export_enters_the_serving_image_through_bash_env(synthesized: Any) -> None:
    _, template = synthesized
    export = _containers(template)["export"]
    assert export["Image"] == ServingEngine.optimum_neuron().image.uri(REGION)
    env = {e["Name"]: e["Value"] for e in export["Environment"]}
    budgets = timeouts.compile_step_seconds(HostCompile.on(TRN1).max_weights_gib)
    assert env["BASH_ENV"] == SERVING_ENTRY == f"{INSTALL_DIR}/compile/serving-entry.sh"
    assert (env["CDK_NEURON_STEP_SECONDS"], env["CDK_NEURON_KILL_AFTER"]) == (str(budgets["export"]), "30")
    assert export["Command"] == list(EXPORT_COMMAND)
    # The cluster's compile cache (s3://<bucket>/<prefix>), the token as a secret, never a value.
    assert "s3://" in json.dumps(env["NEURON_COMPILE_CACHE_URL"])
    [secret] = export["Secrets"]
    assert secret["Name"] == "HF_TOKEN" and "secret:hf-token" in json.dumps(secret["ValueFrom"])


def test_the_checkpoints_mount_read_only_with_iam_and_tls_and_the_work_is_on_scratch(
    synthesized: Any,
) -> None:
    _, template = synthesized
    [task] = _definition(template)["EcsProperties"]["TaskProperties"]
    volumes = {v["Name"]: v for v in task["Volumes"]}
    assert (
        volumes["work"]["Host"] == {"SourcePath": HOST_WORK_DIR}
        and HOST_WORK_DIR == "/scratch/cdk-neuron-compile"
    )
    assert volumes["cdk-neuron-programs"]["Host"] == {"SourcePath": INSTALL_DIR}
    efs = volumes["checkpoints"]["EfsVolumeConfiguration"]
    assert efs["TransitEncryption"] == "ENABLED" and efs["AuthorizationConfig"]["Iam"] == "ENABLED"
    mounts = {
        c: {m["SourceVolume"]: m["ReadOnly"] for m in spec["MountPoints"]}
        for c, spec in _containers(template).items()
    }
    assert mounts["export"] == {"work": False, "cdk-neuron-programs": True, "checkpoints": True}
    assert mounts["fetch"] == mounts["upload"] == {"work": False, "cdk-neuron-programs": True}


def test_only_a_lost_host_is_retried_and_an_attempt_is_bounded(synthesized: Any) -> None:
    _, template = synthesized
    definition = _definition(template)
    assert definition["RetryStrategy"] == {
        "Attempts": 2,
        "EvaluateOnExit": [
            {"Action": "RETRY", "OnStatusReason": "Host EC2*"},
            {"Action": "EXIT", "OnReason": "*"},
        ],
    }
    seconds = definition["Timeout"]["AttemptDurationSeconds"]
    budgets = timeouts.compile_step_seconds(HostCompile.on(TRN1).max_weights_gib)
    assert seconds == timeouts.compile_job_seconds(HostCompile.on(TRN1).max_weights_gib)
    assert seconds > sum(budgets.values()) + 3 * timeouts.COMPILE_KILL_AFTER


def test_compiles_run_on_nodes_of_their_own_from_the_clusters_launch_template(synthesized: Any) -> None:
    _, template = synthesized
    resources = template["Resources"]
    environments = {
        k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Batch::ComputeEnvironment"
    }
    assert len(environments) == 2
    [compile_key] = [k for k in environments if k.startswith("CompilationComputeEnvironment")]
    [training_key] = [k for k in environments if k != compile_key]
    mine, training = (
        environments[compile_key]["ComputeResources"],
        environments[training_key]["ComputeResources"],
    )
    # One trn1.32xlarge at most, none idle; the cluster's launch template (its pinned version), AMI and
    # subnets: the same nodes, never the same instances (training never lands where a compile ran).
    assert (mine["MinvCpus"], mine["MaxvCpus"], mine["InstanceTypes"]) == (0, 128, ["trn1.32xlarge"])
    assert mine["LaunchTemplate"] == training["LaunchTemplate"]
    assert mine["Subnets"] == training["Subnets"]
    # Each environment has an instance profile of its own, for the same node role.
    profiles = [
        resources[c["InstanceRole"]["Fn::GetAtt"][0]]["Properties"]["Roles"] for c in (mine, training)
    ]
    assert profiles[0] == profiles[1]
    # EFA interfaces in the launch template: a cluster placement group of its own, not the training nodes'.
    group = mine["PlacementGroup"]["Fn::GetAtt"][0]
    assert (
        group.startswith("CompilationPlacementGroup")
        and resources[group]["Properties"]["Strategy"] == "cluster"
    )
    assert training["PlacementGroup"] != mine["PlacementGroup"]
    # A new template version lets a running compile finish: the whole job budget.
    budget = timeouts.compile_job_seconds(HostCompile.on(TRN1).max_weights_gib)
    update = environments[compile_key]["UpdatePolicy"]
    assert update == {"JobExecutionTimeoutMinutes": -(-budget // 60), "TerminateJobsOnUpdate": False}
    queues = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Batch::JobQueue"}
    [compile_queue] = [q for k, q in queues.items() if k.startswith("CompilationJobQueue")]
    assert compile_queue["ComputeEnvironmentOrder"] == [
        {"ComputeEnvironment": {"Fn::GetAtt": [compile_key, "ComputeEnvironmentArn"]}, "Order": 1}
    ]
    [training_queue] = [q for k, q in queues.items() if not k.startswith("CompilationJobQueue")]
    assert {a["Reason"] for a in compile_queue["JobStateTimeLimitActions"]} == {
        a["Reason"] for a in training_queue["JobStateTimeLimitActions"]
    }
    assert compile_key not in json.dumps(training_queue)


def test_the_clusters_boot_failure_alarm_disables_the_compile_nodes_too(synthesized: Any) -> None:
    # verify-27 D1: compile nodes boot from the cluster's launch template, so their failed boots count as
    # the cluster's; the alarm's move to ALARM must stop the compile environment as well as training's,
    # or a recurring boot failure launches trn1.32xlarge nodes for a waiting compile without end.
    compilation, template = synthesized
    resources = template["Resources"]
    environments = {k for k, r in resources.items() if r["Type"] == "AWS::Batch::ComputeEnvironment"}
    [compile_key] = [k for k in environments if k.startswith("CompilationComputeEnvironment")]
    rules = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Events::Rule"}
    alarms = {json.dumps(r["EventPattern"]["resources"]) for r in rules.values()}
    assert len(rules) == 2 and len(alarms) == 1  # one alarm (the cluster's), two breakers
    disabled = set()
    for rule in rules.values():
        [target] = rule["Targets"]
        function = resources[target["Arn"]["Fn::GetAtt"][0]]["Properties"]
        disabled.add(function["Environment"]["Variables"]["COMPUTE_ENVIRONMENT"]["Fn::GetAtt"][0])
    assert disabled == environments and compile_key in disabled
    assert compilation.boot_failure_rule is not None


def test_a_cluster_on_reserved_capacity_warns_that_the_compile_node_draws_on_it() -> None:
    # verify-27 D2: the launch template targets the reservation, so a compile holds one of its nodes.
    from cdk_neuron.compilation.batch import SHARES_RESERVED_CAPACITY_WARNING_ID
    from cdk_neuron.training import Capacity

    def warnings(capacity: Capacity | None) -> list[str]:
        stack, _, cluster = _stack(capacity)
        BatchModelCompilation(
            stack,
            "Compilation",
            training_cluster=cluster,
            artifact_bucket=s3.Bucket.from_bucket_name(stack, "Models", "prod-models"),
        )
        found = cdk.assertions.Annotations.from_stack(stack).find_warning(
            "/Training/Compilation", cdk.assertions.Match.any_value()
        )
        return [str(w.entry.data) for w in found]

    assert not any(SHARES_RESERVED_CAPACITY_WARNING_ID in w for w in warnings(None))
    [warning] = warnings(Capacity.reservation("cr-0123456789abcdef0"))
    assert "reservation capacity" in warning and "holds one of those nodes" in warning
    assert SHARES_RESERVED_CAPACITY_WARNING_ID in warning


def test_the_job_role_writes_only_under_the_prefix_and_reads_the_store(synthesized: Any) -> None:
    _, template = synthesized
    policies = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::IAM::ManagedPolicy"
    ]
    [writes] = [p for p in policies if "write compiled artifacts" in p["Description"]]
    actions = {s["Sid"]: s["Action"] for s in writes["PolicyDocument"]["Statement"]}
    assert actions == {
        "ListArtifactPrefix": "s3:ListBucket",
        "WriteArtifacts": ["s3:AbortMultipartUpload", "s3:PutObject"],
    }
    inline = [
        r["Properties"] for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and any("CompilationJobRole" in str(x) for x in r["Properties"]["Roles"])
    ]  # fmt: skip
    granted = json.dumps(inline)
    assert "elasticfilesystem:ClientMount" in granted and "elasticfilesystem:ClientWrite" not in granted


def test_the_compilation_passes_the_nag_packs(synthesized: Any) -> None:
    compilation, _ = synthesized
    assert nag_violations(compilation) == [], "\n".join(nag_violations(compilation))


def test_the_job_is_recorded_for_the_cli(synthesized: Any) -> None:
    compilation, template = synthesized
    [record] = [
        e.data
        for e in compilation.node.metadata
        if e.type == "cdk-neuron:workload" and e.data["kind"] == "compilation"
    ]
    stack = cdk.Stack.of(compilation)
    assert record["runs_on"] == "training-cluster"
    assert record["instance_type"] == "trn1.32xlarge"
    assert stack.resolve(record["job_queue_logical_id"]) in template["Resources"]
    assert (
        template["Resources"][stack.resolve(record["job_definition_logical_id"])]["Type"]
        == "AWS::Batch::JobDefinition"
    )
    assert record["tools_image"] == TOOLS_IMAGE.uri(REGION)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"retry_attempts": 0}, r"retry_attempts=0: a whole number from 1 to 10"),
        ({"tools_image": "public.ecr.aws/x:1"}, r"tools_image='public.ecr.aws/x:1': pass a cdk_neuron"),
        ({"engine": ServingEngine.tgi()}, r"engine='tgi'"),
    ],
)
def test_bad_props_are_refused_by_name(kwargs: dict[str, Any], needle: str) -> None:
    stack, _, cluster = _stack()
    with pytest.raises(NeuronConfigError, match=needle):
        BatchModelCompilation(
            stack, "Compilation", training_cluster=cluster, artifact_bucket=s3.Bucket(stack, "B"), **kwargs
        )


def test_it_needs_a_batch_training_cluster() -> None:
    stack, vpc, _ = _stack()
    with pytest.raises(NeuronConfigError, match=r"training_cluster=.*pass the BatchTrainingCluster"):
        BatchModelCompilation(stack, "C", training_cluster=vpc, artifact_bucket=s3.Bucket(stack, "B"))  # type: ignore[arg-type]


def test_the_fargate_variant_keeps_its_name_and_both_share_the_base() -> None:
    from cdk_neuron.compilation import ModelCompilationBase

    assert issubclass(ModelCompilation, ModelCompilationBase) and issubclass(
        BatchModelCompilation, ModelCompilationBase
    )


# --------------------------------------------------------------------------------------------
# The programs, as AWS Batch starts them: the image's ENTRYPOINT, then the command
# --------------------------------------------------------------------------------------------


def _job_env(template: dict[str, Any], name: str) -> dict[str, str]:
    return {e["Name"]: e["Value"] for e in _containers(template)[name].get("Environment", [])}


def _batch_run(
    container: Container, template: dict[str, Any], name: str, contract: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """ENTRYPOINT (the contract's reproduction) + the job definition's command, with its environment,
    then the request's overrides (the bundle paths pointed at the container's copy)."""
    spec = _containers(template)[name]
    settings = {
        k: container.mounted([v])[0] for k, v in _job_env(template, name).items() if isinstance(v, str)
    }
    return subprocess.run(
        [*ENTRYPOINT_COMMANDS[contract], *container.mounted(spec["Command"])],
        env={**container._environment(None), **settings, **env},
        capture_output=True, text=True, timeout=120, check=False, cwd=str(container.root),
    )  # fmt: skip


def _overrides(request: CompileRequest, tmp_path: Path, name: str) -> dict[str, str]:
    [task] = request.job_overrides(REGION)["taskProperties"]
    [values] = [c["environment"] for c in task["containers"] if c["name"] == name]
    env = {v["name"]: v["value"] for v in values}
    static = {"ARTIFACT_PREFIX": "compiled/"} if name == "upload" else {}
    return {
        **env,
        **static,
        "WORK_DIR": str(tmp_path / "work"),
        "CHECKPOINT_MOUNT": str(tmp_path / "checkpoints"),
    }


def test_a_checkpoint_compiles_end_to_end_through_the_real_entrypoints(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    container, fakes = _sandbox(tmp_path)
    container.record("optimum-cli", then=_EXPORT)
    container.record("aws", then=_AWS_EMPTY_PREFIX)
    # An earlier job's leftovers on the host's scratch: the fetch step starts from nothing.
    (tmp_path / "work" / "export").mkdir(parents=True)
    (tmp_path / "work" / "export" / "stale.bin").write_text("old")
    (tmp_path / "work" / "status").mkdir()
    (tmp_path / "work" / "status" / "export.ok").touch()
    _hf_checkpoint(tmp_path / "checkpoints" / "run-9" / "step-4000")
    small = ModelSpec(
        model_id="meta-llama/Llama-3.2-1B-Instruct", artifact_uri=ARTIFACT, parameters=1_240_000_000
    )
    request = CompileRequest(
        source=ModelSource.checkpoint("run-9/step-4000", step=4000), artifact_uri=ARTIFACT, model=small,
        plan=small.plan(), engine=ServingEngine.optimum_neuron(), host=HostCompile.on(TRN1),
    )  # fmt: skip
    steps = (
        ("fetch", "training-dlc-compile"),
        ("export", "optimum-neuron-batch-compile"),
        ("upload", "training-dlc-compile"),
    )
    for name, contract in steps:
        env = _overrides(request, tmp_path, name)
        if name == "export":
            env["PYTHONPATH"] = str(fakes)
        done = _batch_run(container, template, name, contract, env)
        assert done.returncode == 0, (name, done.stderr)
    assert not (tmp_path / "work" / "export" / "stale.bin").exists()
    # The serving image's entrypoint never started the server: its bash read BASH_ENV and became the export.
    calls = container.calls("optimum-cli")
    assert [c.argv[:2] for c in calls] == [["export", "neuron"]]
    assert calls[0].argv[calls[0].argv.index("--instance_type") + 1] == "inf2"
    assert "BASH_ENV" not in calls[0].env  # unset before the export ran: no bash of it re-reads the file
    manifest = ArtifactManifest.from_file(tmp_path / "work" / "export" / MANIFEST_NAME)
    assert manifest.source.step == 4000
    uploads = [c.argv for c in container.calls("aws")]
    assert uploads[-1][:2] == ["s3api", "put-object"] and "--if-none-match" in uploads[-1]


def test_without_bash_env_the_serving_image_would_serve_so_the_command_makes_it_fail(
    synthesized: Any, tmp_path: Path
) -> None:
    _, template = synthesized
    container = Container(tmp_path)
    container.record("optimum-cli", then="sys.exit(2)")  # vLLM's parser refuses an unknown flag
    spec = _containers(template)["export"]
    done = subprocess.run(
        [*ENTRYPOINT_COMMANDS["optimum-neuron-batch-compile"], *spec["Command"]],
        env=container._environment(None), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    [served] = container.calls("optimum-cli")
    assert served.argv == ["neuron", "serve", "--port", "8080", *EXPORT_COMMAND]


def test_a_hung_export_is_stopped_by_its_budget_through_bash_env(synthesized: Any, tmp_path: Path) -> None:
    _, template = synthesized
    container, _ = _sandbox(tmp_path)
    (container.bundle / "compile" / "export.sh").write_text("#!/bin/bash\nsleep 30\n")
    env = {
        **{
            k: container.mounted([v])[0]
            for k, v in _job_env(template, "export").items()
            if isinstance(v, str)
        },
        "CDK_NEURON_STEP_SECONDS": "1",
        "CDK_NEURON_KILL_AFTER": "1",
    }
    done = subprocess.run(
        [*ENTRYPOINT_COMMANDS["optimum-neuron-batch-compile"], *EXPORT_COMMAND],
        env={**container._environment(None), **env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == timeouts.TIMED_OUT_EXIT_CODE
    assert container.calls("optimum-cli") == []


def test_the_request_carries_the_same_settings_to_batch_as_to_ecs() -> None:
    request = _request(host=HostCompile.on(TRN1))
    [task] = request.job_overrides(REGION)["taskProperties"]
    assert task["containers"] == request.task_overrides(REGION)["containerOverrides"]
    assert [c["name"] for c in task["containers"]] == ["fetch", "export", "upload"]


def test_a_refused_request_reports_every_problem_at_once_on_the_host_too() -> None:
    int8 = ModelSpec(
        model_id="x/y", artifact_uri=ARTIFACT, parameters=70_000_000_000, tensor_parallel=24, dtype="int8"
    )
    with pytest.raises(NeuronConfigErrors) as raised:
        _request(int8, host=HostCompile.on(catalog.get_instance("trn1.2xlarge")))
    assert {e.field for e in raised.value.errors} == {"dtype", "model.parameters"}


def test_operators_are_granted_submit_on_the_queue_and_definition_and_describe_on_everything() -> None:
    from aws_cdk import aws_iam as iam

    stack, _, cluster = _stack()
    compilation = BatchModelCompilation(
        stack, "Compilation", training_cluster=cluster, artifact_bucket=s3.Bucket(stack, "B")
    )
    operators = iam.Role(stack, "Operators", assumed_by=iam.AccountRootPrincipal())
    compilation.grant_submit_jobs(operators)
    template = cdk.assertions.Template.from_stack(stack).to_json()
    [policy] = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and "Operators" in json.dumps(r["Properties"]["Roles"])
    ]
    by_action = {
        " ".join(sorted(s["Action"] if isinstance(s["Action"], list) else [s["Action"]])): s["Resource"]
        for s in policy
    }
    submit = json.dumps(by_action["batch:SubmitJob"])
    assert "CompilationJobQueue" in submit and "CompilationJobDefinition" in submit
    assert by_action["batch:DescribeJobDefinitions batch:DescribeJobs batch:ListJobs"] == "*"
