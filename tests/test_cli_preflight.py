"""`cdk-neuron preflight` against moto (EC2 offerings, SSM, STS, resource groups) and botocore's
Stubber where moto has no support: Service Quotas (`get_service_quota` and `list_service_quotas` are
not implemented for these codes) and `describe_capacity_reservations` (not implemented)."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ssm.models import ssm_backends
from test_artifact_manifest import manifest_data

from cdk_neuron import ami, catalog
from cdk_neuron.cli import preflight
from cdk_neuron.cli.aws import REJECTED_CREDENTIALS
from cdk_neuron.cli.main import main
from cdk_neuron.serving import ServingEngine
from cdk_neuron.serving.artifact_manifest import MANIFEST_NAME
from cdk_support import use_fake_aws_credentials

REGION = "us-east-1"
RESERVATION = "cr-0123456789abcdef0"
GROUP_ARN = f"arn:aws:resource-groups:{REGION}:{DEFAULT_ACCOUNT_ID}:group/trn-capacity"
IMAGE = f"763104351884.dkr.ecr.{REGION}.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
TRN, INF = preflight.EC2_VCPU_QUOTAS["trn"], preflight.EC2_VCPU_QUOTAS["inf"]


def environment(
    *,
    capacity: dict[str, Any] | None = None,
    backend: str = "ec2",
    account: str | None = None,
    artifact_uri: str | None = "s3://models-bucket/llama3-8b/",
    compilation: bool = False,
) -> dict[str, Any]:
    """A dev environment; ``compilation``: with a compile task (the fargate quota check then runs)."""
    training: dict[str, Any] = {
        "instance_type": "trn1.32xlarge",
        "max_nodes": 4,
        "plan": {"nodes": 2, "tensor_parallel": 32},
        "capacity": capacity or {"type": "on-demand"},
        "job_image": IMAGE,
    }
    if training["capacity"]["type"] == "capacity-block":
        # AWS Batch cannot use a Capacity Block (it ignores the market type): the Auto Scaling group can.
        training["engine"] = "auto-scaling-group"
        del training["job_image"]
    return {
        "account": account,
        "region": REGION,
        "az_ids": ["use1-az6", "use1-az4"],
        "removal_policy": "destroy",
        "training": training,
        "compilation": {"enabled": compilation},
        "serving": {
            "backend": backend,
            "instance_type": "inf2.xlarge",
            "min_capacity": 1,
            "max_capacity": 3,
            "model": {
                "model_id": "meta-llama/Llama-3.2-3B-Instruct",
                "parameters": 3_210_000_000,
                "tensor_parallel": 2,  # one replica on both cores
                "artifact_uri": artifact_uri,
            },
        },
    }


def write_config(tmp_path: Path, **envs: dict[str, Any]) -> str:
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps({"context": {"cdk-neuron:deployments": "stacks.config:deployments", "environments": envs}})
    )
    return str(path)


# A self-contained export of Llama-3-8B at TP 2 (the plan for inf2.xlarge), laid out as
# optimum-neuron v0.4.5 saves it from a local checkpoint: graphs, configs, tokenizer, and the weights
# sharded per rank under checkpoint/weights/ (README "Precompiled artifacts").
EXPORT = (
    "config.json",
    "generation_config.json",
    "neuron_config.json",
    "model.pt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "checkpoint/weights/tp0_sharded_checkpoint.safetensors",
    "checkpoint/weights/tp1_sharded_checkpoint.safetensors",
)
HF_CHECKPOINT = (
    "config.json",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
)
ARTIFACTS: dict[str, tuple[str, ...]] = {
    "llama3-8b": EXPORT,
    # optimum-cli export neuron --model <hub id>: graphs and configs, no weights.
    "hub-export": tuple(k for k in EXPORT if not k.endswith(".safetensors")),
    # A plain Hugging Face checkpoint: nothing compiled.
    "checkpoint-only": HF_CHECKPOINT,
    # optimum-neuron's transformers-neuronx layout (TGI 3.2.3): compiled/*.neff and checkpoint/.
    "legacy": ("config.json", "compiled/3f9a.neff", "checkpoint/config.json", "checkpoint/model.safetensors", "tokenizer.json"),
    # Exported at TP 8: shards for ranks 0-7.
    "tp8": tuple(k for k in EXPORT if "sharded" not in k)
    + tuple(f"checkpoint/weights/tp{r}_sharded_checkpoint.safetensors" for r in range(8)),
    "graph-without-config": tuple(k for k in EXPORT if k != "neuron_config.json"),
    "tokenizer-only": ("tokenizer.json",),
}  # fmt: skip


def export_manifest(prefix: str = "llama3-8b", **replace: Any) -> dict[str, Any]:
    """The cdk-neuron-artifact.json of ARTIFACTS[prefix], compiled for environment()'s fleet: Llama-3.2-3B
    at batch 1 x 4096, TP 2, bf16, by the default optimum-neuron image (SDK 2.26.1); every file 1 byte."""
    data = manifest_data(
        artifact_uri=f"s3://models-bucket/{prefix}/",
        model={"id": "meta-llama/Llama-3.2-3B-Instruct", "revision": None},
        files=[{"path": k, "bytes": 1, "sha256": "d" * 64} for k in ARTIFACTS[prefix]],
    )
    for key, value in replace.items():
        section, _, leaf = key.partition("__")
        data[section] = value if not leaf else {**data[section], leaf: value}
    return data


def seed_artifacts(s3: Any) -> None:
    s3.create_bucket(Bucket="models-bucket")
    for prefix, keys in ARTIFACTS.items():
        for key in keys:
            s3.put_object(Bucket="models-bucket", Key=f"{prefix}/{key}", Body=b"x")
    s3.put_object(
        Bucket="models-bucket", Key=f"llama3-8b/{MANIFEST_NAME}", Body=json.dumps(export_manifest())
    )
    s3.put_object(Bucket="models-bucket", Key="hub-export-and-more/config.json", Body=b"x")


BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
SERVING_IMAGE = ServingEngine.optimum_neuron().image.uri(REGION)
# The service-linked roles a first deploy relies on, as IAM names them (moto's own
# CreateServiceLinkedRole names some of them differently, so they are created as plain roles).
SERVICE_LINKED_ROLES = {
    "AWSServiceRoleForAutoScaling": "autoscaling.amazonaws.com",
    "AWSServiceRoleForBatch": "batch.amazonaws.com",
    "AWSServiceRoleForECS": "ecs.amazonaws.com",
    "AWSServiceRoleForElasticLoadBalancing": "elasticloadbalancing.amazonaws.com",
    "AWSServiceRoleForAmazonElasticFileSystem": "elasticfilesystem.amazonaws.com",
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint": "sagemaker.application-autoscaling.amazonaws.com",
}


# The pinned Neuron AMI release the nodes boot (moto knows only the "recommended" one).
PINNED_AMI = ami.release_parameter()


def seed_deploy_prerequisites(clients: dict[str, Any]) -> None:
    """A bootstrapped account (version 21), the pinned AMI release, the images, and every service-linked role."""
    clients["ssm"].put_parameter(Name=BOOTSTRAP_PARAMETER, Value="21", Type="String")
    # AWS's own parameters are reserved names, which PutParameter refuses: copy moto's "recommended".
    parameters = ssm_backends[DEFAULT_ACCOUNT_ID][clients["ssm"].meta.region_name]._parameters
    pinned = copy.copy(parameters[catalog.ECS_NEURON_AMI_PARAMETER][-1])
    pinned.name = PINNED_AMI
    parameters[PINNED_AMI] = [pinned]
    toolkit = {
        "Resources": {
            "Marker": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Name": "/cdk-neuron-test/toolkit", "Type": "String", "Value": "x"},
            }
        }
    }
    clients["cloudformation"].create_stack(StackName="CDKToolkit", TemplateBody=json.dumps(toolkit))
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "digest": "sha256:" + "a" * 64,
                "size": 1,
                "mediaType": "application/vnd.docker.container.image.v1+json",
            },
            "layers": [],
        }
    )
    for image in (IMAGE, SERVING_IMAGE):
        registry, _, rest = image.partition("/")
        repository, _, tag = rest.partition(":")
        account = registry.split(".")[0]
        ecr = clients["ecr"]
        if not ecr.describe_repositories(registryId=account)["repositories"] or repository not in {
            r["repositoryName"] for r in ecr.describe_repositories(registryId=account)["repositories"]
        }:
            ecr.create_repository(repositoryName=repository, registryId=account)
        ecr.put_image(registryId=account, repositoryName=repository, imageManifest=manifest, imageTag=tag)
    for name, service in SERVICE_LINKED_ROLES.items():
        clients["iam"].create_role(
            RoleName=name, Path=f"/aws-service-role/{service}/", AssumeRolePolicyDocument="{}"
        )


@pytest.fixture(scope="module")
def moto_clients() -> Iterator[dict[str, Any]]:
    """One moto account for the module (its data loads slowly); tests only read from it."""
    with pytest.MonkeyPatch.context() as patch:
        use_fake_aws_credentials(patch, REGION)
        with mock_aws():
            services = (
                "ec2", "ssm", "sts", "resource-groups", "s3", "cloudformation", "ecr", "iam", "acm",
                "secretsmanager", "kms",
            )  # fmt: skip
            clients = {s: boto3.client(s, region_name=REGION) for s in services}
            seed_artifacts(clients["s3"])
            seed_deploy_prerequisites(clients)
            yield clients


@pytest.fixture
def without_ami_parameter(moto_clients: dict[str, Any]) -> Iterator[None]:
    parameters = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]._parameters
    saved = parameters.pop(PINNED_AMI)
    yield
    parameters[PINNED_AMI] = saved


class Routed:
    """A moto client whose named operations are answered by a Stubber-backed client instead."""

    def __init__(self, default: Any, operations: dict[str, Callable[..., Any]]) -> None:
        self._default = default
        self._operations = operations

    def __getattr__(self, name: str) -> Any:
        return self._operations.get(name) or getattr(self._default, name)


_STUB_CLIENTS: dict[str, Any] = {}


def stubbed(service: str) -> tuple[Any, Stubber]:
    """A client answered only by a fresh Stubber (clients are reused: creating one is slow)."""
    if service not in _STUB_CLIENTS:
        _STUB_CLIENTS[service] = boto3.client(
            service, region_name=REGION, aws_access_key_id="stub", aws_secret_access_key="stub"
        )
    return _STUB_CLIENTS[service], Stubber(_STUB_CLIENTS[service])


def factory(
    replace: dict[str, Any] | None = None, operations: dict[str, dict[str, Callable[..., Any]]] | None = None
) -> Callable[[str, str], Any]:
    def clients(service: str, region: str) -> Any:
        assert region == REGION
        if replace and service in replace:
            return replace[service]
        client = MOTO[service]
        ops = (operations or {}).get(service)
        return Routed(client, ops) if ops else client

    return clients


MOTO: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _moto_registry(moto_clients: dict[str, Any]) -> None:
    MOTO.update(moto_clients)


def quota(spec: preflight.QuotaSpec, value: float, name: str | None = None) -> dict[str, Any]:
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "QuotaCode": spec.code,
            "QuotaName": name or spec.name,
            "Value": value,
        }
    }


def ec2_quotas(inf: float = 64, trn: float = 512, **names: str) -> tuple[Any, Stubber]:
    """dev needs Inf 3 x 4 = 12 vCPUs and Trn 4 x 128 = 512 vCPUs; families are checked inf, then trn."""
    client, stub = stubbed("service-quotas")
    for spec, value, key in ((INF, inf, "inf"), (TRN, trn, "trn")):
        stub.add_response(
            "get_service_quota",
            quota(spec, value, names.get(key)),
            {"ServiceCode": "ec2", "QuotaCode": spec.code},
        )
    return client, stub


def reservation(**overrides: Any) -> dict[str, Any]:
    return {
        "CapacityReservationId": RESERVATION,
        "InstanceType": "trn1.32xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1a",
        "AvailabilityZoneId": "use1-az6",
        "State": "active",
        "ReservationType": "default",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 4,
        "EndDate": datetime(2030, 1, 1, tzinfo=timezone.utc),
        **overrides,
    }


def capacity_stub(
    reservations: list[dict[str, Any]] | None = None, error: str | None = None
) -> tuple[Any, Stubber]:
    client, stub = stubbed("ec2")
    if error:
        stub.add_client_error(
            "describe_capacity_reservations", service_error_code=error, http_status_code=400
        )
    else:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": reservations or []},
            {"CapacityReservationIds": [RESERVATION]},
        )
    return client, stub


def run(
    capsys: pytest.CaptureFixture[str], config: str, clients: Callable[[str, str], Any]
) -> tuple[int, dict[str, Any]]:
    code = main(["preflight", "--config", config, "--json"], clients=clients)
    return code, json.loads(capsys.readouterr().out)


def rows(doc: dict[str, Any], check: str) -> list[dict[str, str]]:
    return [c for c in doc["checks"] if c["check"] == check]


def only_failures(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["check"], c["subject"]) for c in doc["checks"] if c["status"] == "FAIL"]


# --------------------------------------------------------------------------------------------
# Everything passes
# --------------------------------------------------------------------------------------------


def test_all_checks_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, stub = ec2_quotas()
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    stub.assert_no_pending_responses()
    assert code == 0, only_failures(doc)
    assert doc["command"] == "preflight" and doc["ok"] is True and doc["failures"] == 0
    for check in doc["checks"]:
        assert set(check) == {"environment", "check", "subject", "status", "detail", "command"}
        assert check["status"] in ("PASS", "INFO"), check
    assert [c["subject"] for c in rows(doc, "offering")] == [
        "trn1.32xlarge @ use1-az6",
        "inf2.xlarge @ use1-az6",
        "inf2.xlarge @ use1-az4",
    ]
    trn_row = next(c for c in rows(doc, "quota") if TRN.code in c["subject"])
    assert "512 vCPUs >= 512 needed" in trn_row["detail"]
    amis = {c["subject"]: c for c in rows(doc, "AMI parameter")}
    # Training and EC2 serving boot the same ECS-optimized Neuron AMI: one row names both.
    assert list(amis) == [PINNED_AMI]
    assert amis[PINNED_AMI]["detail"].startswith("training and serving: ami-")
    assert rows(doc, "capacity")[0]["status"] == "INFO"  # on-demand: nothing to verify, said so
    artifacts = {
        c["check"]: c["detail"] for c in doc["checks"] if c["subject"] == "s3://models-bucket/llama3-8b/"
    }
    assert artifacts == {
        "artifacts": "10 object(s)",
        "artifact graph": "model.pt + neuron_config.json",
        "artifact weights": "TP 2 shards in checkpoint/weights/",
        "artifact config": "config.json and tokenizer files",
        "artifact manifest": "optimum-neuron 0.4.5, batch 1 x 4096, TP 2, bf16, SDK 2.26.1, compiled in 25.2 min",
        "artifact files": "9 file(s), 0.0 GiB, sizes as compiled",
    }

    quotas, stub = ec2_quotas()
    with stub:
        assert (
            main(
                ["preflight", "--config", write_config(tmp_path, dev=environment())],
                clients=factory({"service-quotas": quotas}),
            )
            == 0
        )
    out = capsys.readouterr().out
    assert "All checks passed." in out and "PASS" in out


# --------------------------------------------------------------------------------------------
# Every failure row
# --------------------------------------------------------------------------------------------


def test_az_not_offering_the_instance_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The live account's offerings can differ from the catalog snapshot: here inf2.xlarge is missing in use1-az4."""
    ec2, offerings = stubbed("ec2")
    offerings.add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {
                    "InstanceType": "trn1.32xlarge",
                    "LocationType": "availability-zone-id",
                    "Location": "use1-az6",
                },
                {
                    "InstanceType": "inf2.xlarge",
                    "LocationType": "availability-zone-id",
                    "Location": "use1-az6",
                },
            ]
        },
        {
            "LocationType": "availability-zone-id",
            "Filters": [
                {"Name": "instance-type", "Values": ["inf2.xlarge", "trn1.32xlarge"]},
                {"Name": "location", "Values": ["use1-az4", "use1-az6"]},
            ],
        },
    )
    quotas, stub = ec2_quotas()
    clients = factory(
        {"service-quotas": quotas},
        {"ec2": {"describe_instance_type_offerings": ec2.describe_instance_type_offerings}},
    )
    with stub, offerings:
        code, doc = run(capsys, write_config(tmp_path, dev=environment()), clients)
    assert code == 1 and doc["ok"] is False and doc["failures"] == 1
    assert only_failures(doc) == [("offering", "inf2.xlarge @ use1-az4")]
    failed = next(c for c in doc["checks"] if c["status"] == "FAIL")
    assert "offered in use1-az6" in failed["detail"]


def test_quota_too_low_fails_with_the_increase_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = ec2_quotas(trn=256)
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    assert code == 1
    assert only_failures(doc) == [("quota", f"{TRN.name} ({TRN.code})")]
    failed = next(c for c in doc["checks"] if c["status"] == "FAIL")
    detail = failed["detail"]
    assert "256 vCPUs < 512 needed" in detail and "dev training 4 x trn1.32xlarge (512)" in detail
    # The fix is a command of its own, printed whole below the tables.
    assert failed["command"] == (
        "aws service-quotas request-service-quota-increase --service-code ec2 "
        f"--quota-code {TRN.code} --desired-value 512 --region {REGION}"
    )


def test_quota_need_adds_environments_sharing_account_and_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = ec2_quotas(trn=768)
    config = write_config(tmp_path, dev=environment(), other=environment())
    with stub:
        code = main(
            ["preflight", "--config", config, "--env", "dev", "--json"],
            clients=factory({"service-quotas": quotas}),
        )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    detail = next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]
    assert "768 vCPUs < 1024 needed" in detail and "other training" in detail


def test_a_compile_on_the_training_cluster_needs_one_more_node_of_trn_quota(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_cluster = environment(compilation=True)
    on_cluster["compilation"]["runs_on"] = "training-cluster"
    quotas, stub = ec2_quotas(trn=512)  # the 4 training nodes' 512 vCPUs, and not one more
    with stub:
        code, doc = run(capsys, write_config(tmp_path, dev=on_cluster), factory({"service-quotas": quotas}))
    assert code == 1
    detail = next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]
    assert "512 vCPUs < 640 needed" in detail and "dev compile 1 x trn1.32xlarge (128)" in detail


def test_unapplied_quota_falls_back_to_the_default_and_a_renamed_code_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = stubbed("service-quotas")
    stub.add_client_error("get_service_quota", service_error_code="NoSuchResourceException")
    stub.add_response(
        "get_aws_default_service_quota", quota(INF, 64), {"ServiceCode": "ec2", "QuotaCode": INF.code}
    )
    stub.add_response(
        "get_service_quota", quota(TRN, 512, "Something else"), {"ServiceCode": "ec2", "QuotaCode": TRN.code}
    )
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    stub.assert_no_pending_responses()
    assert code == 0
    statuses = [(c["subject"], c["status"]) for c in rows(doc, "quota")]
    assert (f"{INF.name} ({INF.code})", "PASS") in statuses
    assert (f"{TRN.name} ({TRN.code})", "WARN") in statuses


def test_access_denied_is_a_failure_not_a_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, stub = stubbed("service-quotas")
    stub.add_client_error(
        "get_service_quota", service_error_code="AccessDeniedException", service_message="no"
    )
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    assert code == 1
    failed = [c for c in doc["checks"] if c["status"] == "FAIL"]
    assert [(c["check"], c["detail"]) for c in failed] == [
        ("quota", "could not check: AccessDeniedException: no")
    ]


@pytest.mark.parametrize(
    ("capacity_type", "found", "error", "failing_check", "needle"),
    [
        (
            "reservation",
            None,
            "InvalidCapacityReservationId.NotFound",
            "capacity exists",
            "no capacity reservation",
        ),
        ("reservation", [], None, "capacity exists", "no capacity reservation"),
        ("reservation", [reservation(State="expired")], None, "capacity state", "expired"),
        ("reservation", [reservation(State="cancelled")], None, "capacity state", "cancelled"),
        (
            "reservation",
            [reservation(ReservationType="capacity-block")],
            None,
            "capacity type",
            "capacity-block",
        ),
        ("capacity-block", [reservation()], None, "capacity type", "says type capacity-block"),
        (
            "reservation",
            [reservation(InstanceType="trn1n.32xlarge")],
            None,
            "capacity instance type",
            "trn1n.32xlarge",
        ),
        ("reservation", [reservation(AvailabilityZoneId="use1-az4")], None, "capacity AZ", "use1-az4"),
    ],
)
def test_capacity_reservation_failures(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    capacity_type: str,
    found: list[dict[str, Any]] | None,
    error: str | None,
    failing_check: str,
    needle: str,
) -> None:
    quotas, quota_stub = ec2_quotas()
    if capacity_type == "capacity-block":  # Capacity Block nodes are left out of the On-Demand quota sum
        quotas, quota_stub = stubbed("service-quotas")
        quota_stub.add_response(
            "get_service_quota", quota(INF, 64), {"ServiceCode": "ec2", "QuotaCode": INF.code}
        )
    ec2, capacity = capacity_stub(found, error)
    clients = factory(
        {"service-quotas": quotas},
        {"ec2": {"describe_capacity_reservations": ec2.describe_capacity_reservations}},
    )
    env = environment(capacity={"type": capacity_type, "reservation_id": RESERVATION})
    with quota_stub, capacity:
        code, doc = run(capsys, write_config(tmp_path, dev=env), clients)
    capacity.assert_no_pending_responses()
    assert code == 1
    assert only_failures(doc) == [(failing_check, RESERVATION)]
    assert needle in next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]


def test_active_reservation_passes_and_a_small_one_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, quota_stub = ec2_quotas()
    ec2, capacity = capacity_stub([reservation(TotalInstanceCount=2)])
    clients = factory(
        {"service-quotas": quotas},
        {"ec2": {"describe_capacity_reservations": ec2.describe_capacity_reservations}},
    )
    env = environment(capacity={"type": "reservation", "reservation_id": RESERVATION})
    with quota_stub, capacity:
        code, doc = run(capsys, write_config(tmp_path, dev=env), clients)
    assert code == 0
    statuses = {c["check"]: c["status"] for c in doc["checks"] if c["check"].startswith("capacity")}
    assert statuses == {
        "capacity exists": "PASS",
        "capacity state": "PASS",
        "capacity type": "PASS",
        "capacity instance type": "PASS",
        "capacity AZ": "PASS",
        "capacity size": "WARN",
    }


def _pg_arn(name: str) -> str:
    return f"arn:aws:ec2:{REGION}:{DEFAULT_ACCOUNT_ID}:placement-group/{name}"


@pytest.mark.parametrize(
    ("in_group", "configured", "create", "status", "needle"),
    [
        ("pg-held", "pg-held", ("pg-held", "cluster"), "PASS", "cluster, available; holds cr-"),
        ("pg-other", None, None, "FAIL", "set placement_group_name to pg-other"),
        (None, "pg-named", None, "FAIL", "in no placement group, but placement_group_name is pg-named"),
        ("pg-wrong", "pg-named", None, "FAIL", "set placement_group_name to pg-wrong"),
        ("pg-missing", "pg-missing", None, "FAIL", "no placement group pg-missing in us-east-1"),
        ("pg-spread", "pg-spread", ("pg-spread", "spread"), "FAIL", "strategy spread, state available"),
    ],
)
def test_a_reservation_in_a_placement_group_needs_that_group_named_and_usable(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    in_group: str | None,
    configured: str | None,
    create: tuple[str, str] | None,
    status: str,
    needle: str,
) -> None:
    """EC2 uses a reservation made in a cluster placement group only for launches into that group.
    (moto 5.2.5 does not implement DescribePlacementGroups: Stubber answers it.)"""
    quotas, quota_stub = ec2_quotas()
    held = reservation(**({"PlacementGroupArn": _pg_arn(in_group)} if in_group else {}))
    ec2, capacity = capacity_stub([held])
    if configured is not None and configured == in_group:
        if create is None:
            capacity.add_client_error(
                "describe_placement_groups",
                service_error_code="InvalidPlacementGroup.Unknown",
                http_status_code=400,
                expected_params={"GroupNames": [configured]},
            )
        else:
            name, strategy = create
            group = {"GroupName": name, "Strategy": strategy, "State": "available", "GroupArn": _pg_arn(name)}
            capacity.add_response(
                "describe_placement_groups", {"PlacementGroups": [group]}, {"GroupNames": [configured]}
            )
    clients = factory(
        {"service-quotas": quotas},
        {
            "ec2": {
                "describe_capacity_reservations": ec2.describe_capacity_reservations,
                "describe_placement_groups": ec2.describe_placement_groups,
            }
        },
    )
    spec: dict[str, Any] = {"type": "reservation", "reservation_id": RESERVATION}
    if configured is not None:
        spec["placement_group_name"] = configured
    with quota_stub, capacity:
        code, doc = run(capsys, write_config(tmp_path, dev=environment(capacity=spec)), clients)
    capacity.assert_no_pending_responses()
    (row,) = rows(doc, "capacity placement group")
    assert row["status"] == status and needle in row["detail"], row
    assert code == (0 if status == "PASS" else 1)


def test_a_reservation_outside_any_placement_group_adds_no_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, quota_stub = ec2_quotas()
    ec2, capacity = capacity_stub([reservation()])
    clients = factory(
        {"service-quotas": quotas},
        {"ec2": {"describe_capacity_reservations": ec2.describe_capacity_reservations}},
    )
    env = environment(capacity={"type": "reservation", "reservation_id": RESERVATION})
    with quota_stub, capacity:
        _, doc = run(capsys, write_config(tmp_path, dev=env), clients)
    assert rows(doc, "capacity placement group") == []


def test_future_capacity_block_is_reported_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, quota_stub = stubbed("service-quotas")
    quota_stub.add_response(
        "get_service_quota", quota(INF, 64), {"ServiceCode": "ec2", "QuotaCode": INF.code}
    )
    start = datetime(2030, 1, 1, 11, 30, tzinfo=timezone.utc)
    ec2, capacity = capacity_stub(
        [reservation(State="scheduled", ReservationType="capacity-block", StartDate=start)]
    )
    clients = factory(
        {"service-quotas": quotas},
        {"ec2": {"describe_capacity_reservations": ec2.describe_capacity_reservations}},
    )
    env = environment(capacity={"type": "capacity-block", "reservation_id": RESERVATION})
    with quota_stub, capacity:
        code, doc = run(capsys, write_config(tmp_path, dev=env), clients)
    assert code == 0
    state = rows(doc, "capacity state")[0]
    assert state["status"] == "WARN" and "scheduled" in state["detail"] and "2030-01-01" in state["detail"]
    assert any(
        c["subject"] == "training (Capacity Block)" and c["status"] == "INFO" for c in rows(doc, "quota")
    )


def test_missing_resource_group_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """moto's resource-groups answers NotFound for a group that does not exist."""
    quotas, stub = ec2_quotas()
    env = environment(capacity={"type": "reservation-group", "resource_group_arn": GROUP_ARN})
    with stub:
        code, doc = run(capsys, write_config(tmp_path, dev=env), factory({"service-quotas": quotas}))
    assert code == 1
    assert only_failures(doc) == [("capacity exists", GROUP_ARN)]


def test_resource_group_members_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, quota_stub = ec2_quotas()
    groups, group_stub = stubbed("resource-groups")
    group_stub.add_response(
        "get_group", {"Group": {"GroupArn": GROUP_ARN, "Name": "trn-capacity"}}, {"Group": GROUP_ARN}
    )
    member_arn = f"arn:aws:ec2:{REGION}:{DEFAULT_ACCOUNT_ID}:capacity-reservation/{RESERVATION}"
    group_stub.add_response(
        "list_group_resources",
        {
            "Resources": [
                {"Identifier": {"ResourceArn": member_arn, "ResourceType": "AWS::EC2::CapacityReservation"}}
            ]
        },
        {
            "Group": GROUP_ARN,
            "Filters": [{"Name": "resource-type", "Values": ["AWS::EC2::CapacityReservation"]}],
        },
    )
    ec2, capacity = capacity_stub([reservation(AvailabilityZoneId="use1-az4")])
    clients = factory(
        {"service-quotas": quotas, "resource-groups": groups},
        {"ec2": {"describe_capacity_reservations": ec2.describe_capacity_reservations}},
    )
    env = environment(capacity={"type": "reservation-group", "resource_group_arn": GROUP_ARN})
    with quota_stub, group_stub, capacity:
        code, doc = run(capsys, write_config(tmp_path, dev=env), clients)
    assert code == 1
    assert only_failures(doc) == [("capacity group members", GROUP_ARN)]


def test_missing_ami_parameter_fails(
    without_ami_parameter: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Region without the ECS Neuron AMI parameter cannot launch training or serving nodes."""
    quotas, stub = ec2_quotas()
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    assert code == 1
    assert only_failures(doc) == [("AMI parameter", PINNED_AMI)]
    assert (
        "training and serving: parameter not found in us-east-1"
        in next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]
    )


def test_wrong_account_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, stub = ec2_quotas()
    with stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=environment(account="111122223333")),
            factory({"service-quotas": quotas}),
        )
    assert code == 1
    assert only_failures(doc) == [("account", "111122223333")]
    assert DEFAULT_ACCOUNT_ID in next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]


@pytest.mark.parametrize(("value", "status"), [(3, "PASS"), (1, "FAIL"), (None, "INFO")])
def test_sagemaker_endpoint_quota_is_found_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float | None, status: str
) -> None:
    quotas, stub = stubbed("service-quotas")
    stub.add_response("get_service_quota", quota(TRN, 512), {"ServiceCode": "ec2", "QuotaCode": TRN.code})
    other = {
        "ServiceCode": "sagemaker",
        "QuotaCode": "L-00000001",
        "QuotaName": "ml.g5.xlarge for endpoint usage",
        "Value": 9.0,
    }
    stub.add_response(
        "list_service_quotas", {"Quotas": [other], "NextToken": "page-2"}, {"ServiceCode": "sagemaker"}
    )
    page_two = [] if value is None else [
        {"ServiceCode": "sagemaker", "QuotaCode": "L-00000002", "QuotaName": "ml.inf2.xlarge for endpoint usage", "Value": value}
    ]  # fmt: skip
    stub.add_response(
        "list_service_quotas", {"Quotas": page_two}, {"ServiceCode": "sagemaker", "NextToken": "page-2"}
    )
    with stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=environment(backend="sagemaker")),
            factory({"service-quotas": quotas}),
        )
    stub.assert_no_pending_responses()
    sagemaker = next(c for c in rows(doc, "quota") if "endpoint usage" in c["subject"])
    assert sagemaker["status"] == status
    assert code == (1 if status == "FAIL" else 0)
    # The SageMaker backend boots no EC2 serving instance: no serving AMI and no EC2 offering to check.
    assert [c["subject"] for c in rows(doc, "AMI parameter")] == [PINNED_AMI]
    assert any(c["subject"] == "ml.inf2.xlarge" and c["status"] == "INFO" for c in rows(doc, "offering"))


def test_rejected_credentials_exit_3_with_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sts, stub = stubbed("sts")
    stub.add_client_error("get_caller_identity", service_error_code="ExpiredToken", http_status_code=403)
    with stub:
        code = main(
            ["preflight", "--config", write_config(tmp_path, dev=environment())],
            clients=factory({"sts": sts}),
        )
    captured = capsys.readouterr()
    assert code == 3
    assert captured.out == ""
    assert captured.err == REJECTED_CREDENTIALS.format(code="ExpiredToken") + "\n"


def test_table_marks_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, stub = ec2_quotas(inf=4)
    with stub:
        code = main(
            ["preflight", "--config", write_config(tmp_path, dev=environment())],
            clients=factory({"service-quotas": quotas}),
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "1 check(s) failed." in out  # the Inf quota: 4 vCPUs < 12


# --------------------------------------------------------------------------------------------
# Precompiled artifacts
# --------------------------------------------------------------------------------------------


def _artifact_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], artifact_uri: str | None
) -> tuple[int, dict[str, Any]]:
    quotas, stub = ec2_quotas()
    with stub:
        return run(
            capsys,
            write_config(tmp_path, dev=environment(artifact_uri=artifact_uri)),
            factory({"service-quotas": quotas}),
        )


@pytest.mark.parametrize(
    ("prefix", "failing", "needle"),
    [
        (
            "hub-export",
            ["artifact weights"],
            "no weights (*.safetensors): an export from a Hub id stores only",
        ),
        (
            "checkpoint-only",
            ["artifact graph"],
            "no compiled graph (model.pt with neuron_config.json, or compiled/",
        ),
        ("graph-without-config", ["artifact graph"], "model.pt without neuron_config.json"),
        (
            "tp8",
            ["artifact weights"],
            "holds shards for ranks [0, 1, 2, 3, 4, 5, 6, 7], but the plan serves TP 2",
        ),
        (
            "tokenizer-only",
            ["artifact graph", "artifact weights", "artifact config"],
            "no compiled graph",
        ),
        ("nothing-here", ["artifacts"], "nothing under the prefix"),
    ],
)
def test_an_artifact_missing_a_part_fails_once_per_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str, failing: list[str], needle: str
) -> None:
    uri = f"s3://models-bucket/{prefix}/"
    code, doc = _artifact_failures(tmp_path, capsys, uri)
    assert code == 1
    assert only_failures(doc) == [(check, uri) for check in failing]
    assert needle in next(c for c in doc["checks"] if c["status"] == "FAIL")["detail"]


def test_a_prefix_is_not_matched_by_a_longer_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """hub-export-and-more/ exists too; hub-export/ must be listed on its own."""
    _, doc = _artifact_failures(tmp_path, capsys, "s3://models-bucket/hub-export/")
    assert rows(doc, "artifacts")[0]["detail"] == "7 object(s)"


def test_the_transformers_neuronx_layout_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _artifact_failures(tmp_path, capsys, "s3://models-bucket/legacy/")
    assert code == 0, only_failures(doc)
    assert rows(doc, "artifact graph")[0]["detail"] == "1 NEFF file(s) under compiled/"
    assert rows(doc, "artifact weights")[0]["detail"] == "1 safetensors file(s) (unsharded checkpoint)"


def test_a_missing_bucket_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _artifact_failures(tmp_path, capsys, "s3://no-such-models/llama3-8b/")
    assert code == 1
    assert only_failures(doc) == [("artifacts", "s3://no-such-models/llama3-8b/")]
    assert rows(doc, "artifacts")[0]["detail"] == "bucket no-such-models does not exist"


def test_an_environment_without_artifacts_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = environment(artifact_uri=None)
    env["network"] = {"nat_gateways": 1}  # the Hub needs a way out
    quotas, stub = ec2_quotas()
    with stub:
        code, doc = run(capsys, write_config(tmp_path, dev=env), factory({"service-quotas": quotas}))
    assert code == 0, only_failures(doc)
    assert not [c for c in doc["checks"] if c["check"].startswith("artifact")]


def test_listing_the_artifacts_needs_s3_list_bucket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s3, stub = stubbed("s3")
    stub.add_client_error("list_objects_v2", service_error_code="AccessDenied", service_message="denied")
    quotas, quota_stub = ec2_quotas()
    with stub, quota_stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=environment()),
            factory({"service-quotas": quotas, "s3": s3}),
        )
    assert code == 1
    assert [(c["check"], c["detail"]) for c in doc["checks"] if c["status"] == "FAIL"] == [
        ("artifacts", "could not check: AccessDenied: denied")
    ]


def test_artifact_listings_are_followed_across_pages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s3, stub = stubbed("s3")
    first, rest = EXPORT[:4], EXPORT[4:]
    stub.add_response(
        "list_objects_v2",
        {
            "IsTruncated": True,
            "NextContinuationToken": "more",
            "Contents": [{"Key": f"llama3-8b/{k}"} for k in first],
        },
        {"Bucket": "models-bucket", "Prefix": "llama3-8b/"},
    )
    stub.add_response(
        "list_objects_v2",
        {"IsTruncated": False, "Contents": [{"Key": f"llama3-8b/{k}"} for k in rest]},
        {"Bucket": "models-bucket", "Prefix": "llama3-8b/", "ContinuationToken": "more"},
    )
    quotas, quota_stub = ec2_quotas()
    with stub, quota_stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas, "s3": s3})
        )
    stub.assert_no_pending_responses()
    assert code == 0, only_failures(doc)
    assert rows(doc, "artifacts")[0]["detail"] == "9 object(s)"


@pytest.mark.parametrize(("bucket_region", "fails"), [("eu-west-1", True), (REGION, False), (None, False)])
def test_artifacts_in_another_region_fail_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bucket_region: str | None, fails: bool
) -> None:
    # Review (issue 25, S4): the node's CRT client does not follow S3's Region redirect, and the
    # gateway endpoint serves only the fleet's Region; S3 names the bucket's Region on the listing.
    s3, stub = stubbed("s3")
    headers = {} if bucket_region is None else {"x-amz-bucket-region": bucket_region}
    stub.add_response(
        "list_objects_v2",
        {
            "IsTruncated": False,
            "Contents": [{"Key": f"llama3-8b/{k}"} for k in EXPORT],
            "ResponseMetadata": {"HTTPHeaders": headers},
        },
        {"Bucket": "models-bucket", "Prefix": "llama3-8b/"},
    )
    quotas, quota_stub = ec2_quotas()
    with stub, quota_stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas, "s3": s3})
        )
    region_rows = rows(doc, "artifact region")
    if not fails:
        assert code == 0 and region_rows == [], only_failures(doc)
        return
    assert code == 1
    [row] = region_rows
    assert row["status"] == "FAIL"
    assert row["detail"].startswith(f"the bucket is in eu-west-1, the fleet in {REGION}: the node's CRT")
    assert f"copy the artifacts to a bucket in {REGION}" in row["detail"]


_MANIFEST_PREFIXES = itertools.count()


def _with_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: object, **model_changes: Any
) -> tuple[int, dict[str, Any]]:
    """Preflight against a fresh copy of the llama3-8b export at its own prefix, beside ``manifest``
    (a dict, raw text, or None for none); the module's seeded objects are only read, never changed."""
    prefix = f"manifest-{next(_MANIFEST_PREFIXES)}"
    for key in EXPORT:
        MOTO["s3"].put_object(Bucket="models-bucket", Key=f"{prefix}/{key}", Body=b"x")
    if manifest is not None:
        if isinstance(manifest, dict):
            manifest = json.dumps({**manifest, "artifact_uri": f"s3://models-bucket/{prefix}/"})
        MOTO["s3"].put_object(Bucket="models-bucket", Key=f"{prefix}/{MANIFEST_NAME}", Body=manifest)
    env = environment(artifact_uri=f"s3://models-bucket/{prefix}/")
    env["serving"]["model"].update(model_changes)
    quotas, stub = ec2_quotas()
    with stub:
        code, doc = run(capsys, write_config(tmp_path, dev=env), factory({"service-quotas": quotas}))
    # The rows name the copy's prefix; the tests read them as the llama3-8b export's.
    text = json.dumps(doc).replace(f"s3://models-bucket/{prefix}/", "s3://models-bucket/llama3-8b/")
    return code, json.loads(text)


def test_an_artifact_without_a_manifest_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _with_manifest(tmp_path, capsys, None)
    assert code == 0, only_failures(doc)
    [row] = rows(doc, "artifact manifest")
    assert row["status"] == "WARN" and row["detail"].startswith("no cdk-neuron-artifact.json: the batch")
    assert "cdk-neuron compile" in row["detail"] and not rows(doc, "artifact files")


def test_a_manifest_for_another_shape_fails_naming_each_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = export_manifest(shape__batch_size=4, shape__dtype="fp16", engine__version="0.4.4")
    code, doc = _with_manifest(tmp_path, capsys, manifest)
    assert code == 1
    assert only_failures(doc) == [("artifact manifest", "s3://models-bucket/llama3-8b/")]
    detail = rows(doc, "artifact manifest")[0]["detail"]
    assert [part.split("=")[0] for part in detail.split("; ") if "=" in part.split(":")[0]] == [
        "shape.batch_size",
        "shape.dtype",
        "engine.version",
    ]


def test_a_manifest_is_compared_with_the_served_sequence_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _with_manifest(tmp_path, capsys, export_manifest(), sequence_length=8192)
    assert code == 1
    assert rows(doc, "artifact manifest")[0]["detail"].startswith(
        "shape.sequence_length=8192: the artifact was compiled for sequence_length 4096"
    )


def test_an_invalid_manifest_fails_with_its_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _with_manifest(tmp_path, capsys, export_manifest(version=9))
    assert code == 1
    assert rows(doc, "artifact manifest")[0]["detail"] == (
        "s3://models-bucket/llama3-8b/cdk-neuron-artifact.json:version=9: this cdk-neuron reads manifest "
        "versions 1 to 2; upgrade cdk-neuron to read it"
    )
    code, doc = _with_manifest(tmp_path, capsys, "{")
    assert code == 1 and "is not JSON" in rows(doc, "artifact manifest")[0]["detail"]


def test_files_changed_since_the_compile_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = export_manifest()
    manifest["files"][0]["bytes"] = 2
    manifest["files"].append({"path": "model_extra.pt", "bytes": 1, "sha256": "d" * 64})
    code, doc = _with_manifest(tmp_path, capsys, manifest)
    assert code == 1
    assert only_failures(doc) == [("artifact files", "s3://models-bucket/llama3-8b/")]
    assert rows(doc, "artifact files")[0]["detail"].startswith(
        "2 file(s) differ in size from the manifest or are missing: config.json, model_extra.pt (missing); "
    )


# --------------------------------------------------------------------------------------------
# What breaks first deploys: bootstrap, images, certificate and secret, service-linked roles
# --------------------------------------------------------------------------------------------


def passing_quotas(
    capsys: pytest.CaptureFixture[str], config: str, **replace: Any
) -> tuple[int, dict[str, Any]]:
    quotas, stub = ec2_quotas()
    with stub:
        return run(capsys, config, factory({"service-quotas": quotas, **replace}))


@pytest.fixture
def bootstrap_version(moto_clients: dict[str, Any]) -> Iterator[Callable[[str | None], None]]:
    ssm = moto_clients["ssm"]

    def set_version(value: str | None) -> None:
        if value is None:
            ssm.delete_parameter(Name=BOOTSTRAP_PARAMETER)
        else:
            ssm.put_parameter(Name=BOOTSTRAP_PARAMETER, Value=value, Type="String", Overwrite=True)

    yield set_version
    ssm.put_parameter(Name=BOOTSTRAP_PARAMETER, Value="21", Type="String", Overwrite=True)


@pytest.mark.parametrize(
    ("version", "status"),
    [(None, "FAIL"), ("5", "FAIL"), ("6", "WARN"), ("7", "WARN"), ("8", "PASS"), ("21", "PASS")],
)
def test_bootstrap_version_is_the_one_the_templates_require(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bootstrap_version: Callable[[str | None], None],
    version: str | None,
    status: str,
) -> None:
    bootstrap_version(version)
    code, doc = passing_quotas(capsys, write_config(tmp_path, dev=environment()))
    (row,) = [c for c in rows(doc, "bootstrap") if c["subject"] == BOOTSTRAP_PARAMETER]
    assert row["status"] == status, row
    assert code == (1 if status == "FAIL" else 0)
    if status != "PASS":
        assert row["command"] == f"cdk bootstrap aws://{DEFAULT_ACCOUNT_ID}/{REGION}"
    if version is None:
        assert "is not bootstrapped" in row["detail"]
    elif status == "FAIL":
        assert f"version {version} in {DEFAULT_ACCOUNT_ID}/{REGION}; the templates require 6" in row["detail"]
    toolkit = [(c["status"], c["detail"]) for c in rows(doc, "bootstrap") if c["subject"] == "CDKToolkit"]
    assert toolkit == ([] if version is None else [("PASS", "CREATE_COMPLETE")])


def test_required_bootstrap_version_is_what_the_synthesized_templates_assert() -> None:
    """Every template's CheckBootstrapVersion rule refuses exactly the versions below REQUIRED_BOOTSTRAP_VERSION."""
    from app_assembly import synthesized_app

    built = synthesized_app()
    refused = [str(v) for v in range(1, preflight.REQUIRED_BOOTSTRAP_VERSION)]
    templates = [p for p in built.outdir.rglob("*.template.json")]
    assert templates
    for path in templates:
        rule = json.loads(path.read_text())["Rules"]["CheckBootstrapVersion"]["Assertions"][0]
        assert rule["Assert"] == {"Fn::Not": [{"Fn::Contains": [refused, {"Ref": "BootstrapVersion"}]}]}, path
    for manifest in built.manifests():
        for artifact in manifest.get("artifacts", {}).values():
            required = artifact.get("properties", {}).get("requiresBootstrapStackVersion")
            assert required in (None, preflight.REQUIRED_BOOTSTRAP_VERSION)


def test_a_custom_qualifier_is_read_from_cdk_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(write_config(tmp_path, dev=environment()))
    document = json.loads(path.read_text())
    document["context"]["@aws-cdk/core:bootstrapQualifier"] = "team1"
    path.write_text(json.dumps(document))
    code, doc = passing_quotas(capsys, str(path))
    assert code == 1
    (row,) = rows(doc, "bootstrap")
    assert (row["subject"], row["status"]) == ("/cdk-bootstrap/team1/version", "FAIL")
    assert row["command"] == f"cdk bootstrap aws://{DEFAULT_ACCOUNT_ID}/{REGION} --qualifier team1"


def test_a_broken_toolkit_stack_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cloudformation, stub = stubbed("cloudformation")
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "CDKToolkit",
                    "CreationTime": datetime(2026, 1, 1),
                    "StackStatus": "UPDATE_ROLLBACK_FAILED",
                }
            ]
        },
        {"StackName": "CDKToolkit"},
    )
    quotas, quota_stub = ec2_quotas()
    clients = factory(
        {"service-quotas": quotas},
        {"cloudformation": {"describe_stacks": cloudformation.describe_stacks}},
    )
    with stub, quota_stub:
        code, doc = run(capsys, write_config(tmp_path, dev=environment()), clients)
    assert code == 1
    assert only_failures(doc) == [("bootstrap", "CDKToolkit")]


def test_an_image_tag_that_does_not_exist_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = environment()
    missing = IMAGE.rsplit(":", 1)[0] + ":2.99.0-does-not-exist"
    env["training"]["job_image"] = missing
    code, doc = passing_quotas(capsys, write_config(tmp_path, dev=env))
    assert code == 1
    assert only_failures(doc) == [("image", missing)]
    row = rows(doc, "image")[0]
    assert "tag 2.99.0-does-not-exist not found in pytorch-training-neuronx" in row["detail"]
    assert row["command"].startswith(
        "aws ecr describe-images --registry-id 763104351884 --repository-name pytorch-training-neuronx"
    )
    serving = rows(doc, "image")[1]
    assert (serving["subject"], serving["status"]) == (SERVING_IMAGE, "PASS")
    assert serving["detail"].startswith("serving: tag ") and "resolves to sha256:" in serving["detail"]


def test_a_pull_only_registry_is_checked_with_batch_get_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The AWS Deep Learning Containers let any account pull, not describe."""
    ecr, stub = stubbed("ecr")
    _, _, rest = IMAGE.partition("/")
    repository, _, tag = rest.partition(":")
    request = {"registryId": "763104351884", "repositoryName": repository, "imageIds": [{"imageTag": tag}]}
    stub.add_client_error(
        "describe_images", service_error_code="AccessDeniedException", expected_params=request
    )
    digest = "sha256:" + "b" * 64
    stub.add_response(
        "batch_get_image",
        {
            "images": [{"imageId": {"imageTag": tag, "imageDigest": digest}, "repositoryName": repository}],
            "failures": [],
        },
        request,
    )
    quotas, quota_stub = ec2_quotas()
    env = environment(artifact_uri=None)  # the seeded export was compiled for optimum-neuron
    env["serving"]["engine"] = "vllm-neuron"
    env["serving"]["backend"] = "ec2"
    env["network"] = {"nat_gateways": 1}
    with stub, quota_stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=env),
            factory(
                {"service-quotas": quotas},
                {"ecr": {"describe_images": ecr.describe_images, "batch_get_image": ecr.batch_get_image}},
            ),
        )
    stub.assert_no_pending_responses()
    assert code == 0, only_failures(doc)
    training, serving = rows(doc, "image")
    assert training["status"] == "PASS" and training["detail"].endswith(
        f"resolves to {digest} (BatchGetImage)"
    )
    # vllm-neuron's image is on public.ecr.aws: not resolvable here, so INFO (never PASS), with the command.
    assert serving["status"] == "INFO" and "is not Amazon ECR" in serving["detail"]
    assert serving["command"] == f"docker manifest inspect {serving['subject']}"


def _certificate_env(arn: str) -> dict[str, Any]:
    env = environment()
    env["serving"]["certificate_arn"] = arn
    return env


def test_a_certificate_pending_validation_fails_and_shows_the_records(
    moto_clients: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arn = moto_clients["acm"].request_certificate(DomainName="llm.internal.example.com")["CertificateArn"]
    code, doc = passing_quotas(capsys, write_config(tmp_path, dev=_certificate_env(arn)))
    assert code == 1
    assert only_failures(doc) == [("certificate", arn)]
    row = rows(doc, "certificate")[0]
    assert "llm.internal.example.com is PENDING_VALIDATION" in row["detail"]
    assert row["command"] == (
        f"aws acm describe-certificate --certificate-arn {arn} --region {REGION} "
        "--query Certificate.DomainValidationOptions"
    )


@pytest.mark.parametrize(("days", "status"), [(400, "PASS"), (10, "WARN")])
def test_an_issued_certificate_passes_unless_it_expires_soon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], days: int, status: str
) -> None:
    arn = f"arn:aws:acm:{REGION}:{DEFAULT_ACCOUNT_ID}:certificate/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    acm, stub = stubbed("acm")
    stub.add_response(
        "describe_certificate",
        {
            "Certificate": {
                "CertificateArn": arn,
                "DomainName": "llm.example.com",
                "Status": "ISSUED",
                "Type": "AMAZON_ISSUED",
                "NotAfter": datetime.now(timezone.utc) + timedelta(days=days),
            }
        },
        {"CertificateArn": arn},
    )
    with stub:
        code, doc = passing_quotas(capsys, write_config(tmp_path, dev=_certificate_env(arn)), acm=acm)
    assert code == 0
    assert rows(doc, "certificate")[0]["status"] == status


def _secret_env(secret: str) -> dict[str, Any]:
    env = environment()
    env["serving"]["hugging_face_token_secret"] = secret
    return env


def test_the_token_secret(
    moto_clients: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets, kms = moto_clients["secretsmanager"], moto_clients["kms"]
    secrets.create_secret(Name="hf/token-ok", SecretString="hf_x")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    secrets.create_secret(Name="hf/token-cmk", SecretString="hf_x", KmsKeyId=key)
    secrets.create_secret(Name="hf/token-deleted", SecretString="hf_x")
    secrets.delete_secret(SecretId="hf/token-deleted", RecoveryWindowInDays=7)
    expected = {
        "hf/token-ok": ("PASS", None),
        "hf/token-cmk": ("WARN", None),
        "hf/token-deleted": ("FAIL", "aws secretsmanager restore-secret --secret-id arn:"),
        "hf/token-absent": (
            "FAIL",
            'aws secretsmanager create-secret --name hf/token-absent --secret-string "$HF_TOKEN"',
        ),
    }
    for secret, (status, command) in expected.items():
        _, doc = passing_quotas(capsys, write_config(tmp_path, dev=_secret_env(secret)))
        row = rows(doc, "secret")[0]
        assert row["status"] == status, row
        assert (row["command"] or "").startswith(command or ""), row
    _, doc = passing_quotas(capsys, write_config(tmp_path, dev=_secret_env("hf/token-cmk")))
    assert "no kms:Decrypt" in rows(doc, "secret")[0]["detail"]


@pytest.fixture
def without_auto_scaling_role(moto_clients: dict[str, Any]) -> Iterator[None]:
    iam = moto_clients["iam"]
    iam.delete_role(RoleName="AWSServiceRoleForAutoScaling")
    yield
    iam.create_role(
        RoleName="AWSServiceRoleForAutoScaling",
        Path="/aws-service-role/autoscaling.amazonaws.com/",
        AssumeRolePolicyDocument="{}",
    )


@pytest.mark.parametrize(("backend", "status"), [("ec2", "INFO"), ("sagemaker", "INFO")])
def test_a_missing_auto_scaling_role_is_created_by_the_first_group(
    without_auto_scaling_role: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    status: str,
) -> None:
    if backend == "sagemaker":
        quotas, stub = stubbed("service-quotas")
        stub.add_response("get_service_quota", quota(TRN, 512), {"ServiceCode": "ec2", "QuotaCode": TRN.code})
        stub.add_response(
            "list_service_quotas",
            {
                "Quotas": [
                    {"QuotaName": "ml.inf2.xlarge for endpoint usage", "Value": 9.0, "QuotaCode": "L-1"}
                ]
            },
            {"ServiceCode": "sagemaker"},
        )
        with stub:
            code, doc = run(
                capsys,
                write_config(tmp_path, dev=environment(backend=backend)),
                factory({"service-quotas": quotas}),
            )
    else:
        code, doc = passing_quotas(capsys, write_config(tmp_path, dev=environment(backend=backend)))
    row = next(c for c in rows(doc, "service-linked role") if c["subject"] == "AWSServiceRoleForAutoScaling")
    assert row["status"] == status
    assert row["command"] == "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com"
    assert code == (1 if status == "FAIL" else 0)
    names = {c["subject"] for c in rows(doc, "service-linked role")}
    # No key policy names the role as a principal (which KMS would refuse before the role exists).
    assert "aws:PrincipalArn condition" in row["detail"]
    if backend == "ec2":
        assert "AWSServiceRoleForElasticLoadBalancing" in names
    else:
        assert "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint" in names
        assert "AWSServiceRoleForElasticLoadBalancing" not in names


# --------------------------------------------------------------------------------------------
# Every AWS call a check makes is one it declares (docs/cli.md and the IAM policy come from them)
# --------------------------------------------------------------------------------------------

# IAM actions whose names are not the operation's (Service Authorization Reference, Amazon S3:
# ListObjectsV2 is authorized by s3:ListBucket).
_ACTION_OF = {"s3:ListObjectsV2": "s3:ListBucket"}


class _Recorded:
    """A client that records each API operation called on it as its IAM action."""

    def __init__(self, client: Any, calls: set[str]) -> None:
        self._client, self._calls = client, calls

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        meta = getattr(self._client, "meta", None)
        operation = meta.method_to_api_mapping.get(name) if meta is not None else None
        if operation is not None:
            action = f"{meta.service_model.signing_name}:{operation}"
            self._calls.add(_ACTION_OF.get(action, action))
        return attribute


def used_by(check: preflight.Check, envs: list[Any], clients: Callable[[str, str], Any]) -> set[str]:
    """The IAM actions ``check`` uses running against ``envs``."""
    calls: set[str] = set()
    preflight.run(envs, envs, lambda s, r: _Recorded(clients(s, r), calls), checks=[check])
    return calls


def test_every_check_declares_each_aws_call_it_makes(tmp_path: Path) -> None:
    from cdk_neuron.cli import deployments

    envs = list(deployments.load(write_config(tmp_path, dev=environment())).values())
    quotas, stub = ec2_quotas()
    used: set[str] = set()
    with stub:
        for check in preflight.CHECKS:
            calls = used_by(check, envs, factory({"service-quotas": quotas}))
            assert calls <= set(check.calls), (
                f"{check.name} does not declare {sorted(calls - set(check.calls))}"
            )
            used |= calls
    stub.assert_no_pending_responses()
    assert {
        "sts:GetCallerIdentity",
        "ssm:GetParameter",
        "ec2:DescribeInstanceTypeOfferings",
        "servicequotas:GetServiceQuota",
        "ecr:DescribeImages",
        "iam:GetRole",
        "s3:ListBucket",
    } <= used


def test_an_undeclared_call_is_caught(tmp_path: Path) -> None:
    """Guards the test above: a check that calls AWS without saying so is found out."""
    from cdk_neuron.cli import deployments

    def sneaky_run(ctx: preflight.CheckContext) -> list[preflight.Row]:
        account = ctx.client("sts").get_caller_identity()["Account"]
        return [ctx.row("sneaky", account, "PASS", "called STS")]

    sneaky = preflight.Check("sneaky", sneaky_run, passes_when="", calls=())
    envs = list(deployments.load(write_config(tmp_path, dev=environment())).values())
    assert used_by(sneaky, envs, factory()) - set(sneaky.calls) == {"sts:GetCallerIdentity"}


def test_every_check_module_is_registered() -> None:
    """A module of cli/preflight/ with a CHECK that CHECKS leaves out never runs, and its docs row is
    simply missing: each one must be in CHECKS, once."""
    import importlib
    import pkgutil

    modules = [
        importlib.import_module(f"{preflight.__name__}.{i.name}")
        for i in pkgutil.iter_modules(preflight.__path__)
    ]
    declared = {m.__name__: m.CHECK for m in modules if hasattr(m, "CHECK")}
    registered = [name for check in preflight.CHECKS for name, own in declared.items() if own is check]
    assert sorted(registered) == sorted(declared) and len(preflight.CHECKS) == len(declared)


# --------------------------------------------------------------------------------------------
# The compile task's Fargate vCPU quota (Stubber: moto has no Service Quotas for fargate)
# --------------------------------------------------------------------------------------------

FARGATE = preflight.fargate_quota.FARGATE_VCPU_QUOTA


def fargate_quota(value: float, name: str | None = None, *, missing: bool = False) -> tuple[Any, Stubber]:
    """dev's EC2 quotas (enough), then the Fargate vCPU quota at ``value``; ``missing``: never adjusted, so
    its applied value is absent and the default answers."""
    client, stub = ec2_quotas()
    answer = {
        "Quota": {
            "ServiceCode": "fargate",
            "QuotaCode": FARGATE.code,
            "QuotaName": name or FARGATE.name,
            "Value": value,
        }
    }
    params = {"ServiceCode": "fargate", "QuotaCode": FARGATE.code}
    if missing:
        stub.add_client_error(
            "get_service_quota", service_error_code="NoSuchResourceException", expected_params=params
        )
        stub.add_response("get_aws_default_service_quota", answer, params)
    else:
        stub.add_response("get_service_quota", answer, params)
    return client, stub


def test_a_fargate_quota_below_the_compile_tasks_16_vcpus_fails_with_the_increase_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = fargate_quota(6)
    with stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=environment(compilation=True)),
            factory({"service-quotas": quotas}),
        )
    stub.assert_no_pending_responses()
    assert code == 1 and only_failures(doc) == [("fargate quota", f"{FARGATE.name} ({FARGATE.code})")]
    [row] = rows(doc, "fargate quota")
    assert "6 vCPUs < 16 needed: dev compile task (16)" in row["detail"]
    assert row["command"] == (
        "aws service-quotas request-service-quota-increase --service-code fargate "
        f"--quota-code {FARGATE.code} --desired-value 16 --region {REGION}"
    )


def test_the_fargate_quota_counts_every_compile_task_sharing_the_account_and_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = fargate_quota(32, missing=True)
    config = write_config(tmp_path, dev=environment(compilation=True), other=environment(compilation=True))
    with stub:
        main(
            ["preflight", "--config", config, "--env", "dev", "--json"],
            clients=factory({"service-quotas": quotas}),
        )
    doc = json.loads(capsys.readouterr().out)
    stub.assert_no_pending_responses()
    [row] = rows(doc, "fargate quota")
    # Never adjusted: AWS's default answers, which is not what new accounts get, so it cannot pass.
    assert row["status"] == "WARN", only_failures(doc)
    assert "no applied value in this account (AWS's default is 32" in row["detail"]
    assert "allows 32 vCPUs: dev compile task (16) + other compile task (16)" in row["detail"]


def test_a_renamed_fargate_quota_code_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas, stub = fargate_quota(4000, "Something else")
    with stub:
        _, doc = run(
            capsys,
            write_config(tmp_path, dev=environment(compilation=True)),
            factory({"service-quotas": quotas}),
        )
    assert [r["status"] for r in rows(doc, "fargate quota")] == ["WARN", "PASS"]


def test_without_a_compile_task_the_fargate_quota_is_not_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = ec2_quotas()  # a Fargate call would find no answer queued and fail the check
    with stub:
        code, doc = run(
            capsys, write_config(tmp_path, dev=environment()), factory({"service-quotas": quotas})
        )
    assert code == 0 and rows(doc, "fargate quota") == []


def test_a_compile_on_the_training_cluster_asks_no_fargate_quota_and_counts_for_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_cluster = environment(compilation=True)
    on_cluster["compilation"]["runs_on"] = "training-cluster"
    # a Fargate call would find no answer queued and fail the check; the Trn quota holds the compile node
    quotas, stub = ec2_quotas(trn=640)
    with stub:
        code, doc = run(capsys, write_config(tmp_path, dev=on_cluster), factory({"service-quotas": quotas}))
    assert code == 0 and rows(doc, "fargate quota") == []
    # Beside a Fargate environment in the same account and Region, it adds nothing to that one's need.
    quotas, stub = fargate_quota(16)
    config = write_config(tmp_path, dev=environment(compilation=True), other=on_cluster)
    with stub:
        main(
            ["preflight", "--config", config, "--env", "dev", "--json"],
            clients=factory({"service-quotas": quotas}),
        )
    [row] = rows(json.loads(capsys.readouterr().out), "fargate quota")
    assert row["status"] == "PASS" and "other compile task" not in row["detail"]
    assert "needed: dev compile task (16)" in row["detail"]


def test_an_applied_fargate_quota_that_holds_every_compile_task_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quotas, stub = fargate_quota(16)
    with stub:
        code, doc = run(
            capsys,
            write_config(tmp_path, dev=environment(compilation=True)),
            factory({"service-quotas": quotas}),
        )
    [row] = rows(doc, "fargate quota")
    assert (
        code == 0
        and row["status"] == "PASS"
        and "16 vCPUs >= 16 needed: dev compile task (16)" in row["detail"]
    )
