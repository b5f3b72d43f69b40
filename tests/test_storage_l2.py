"""CheckpointStore and CompileCache as aws-cdk-lib L2s: imports, metrics, interfaces, error paths."""

from __future__ import annotations

import warnings
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_batch as batch
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.storage import CheckpointStore, CompileCache, ICheckpointStore, ICompileCache
from cdk_support import TEST_ACCOUNT, make_app

ENV = cdk.Environment(account=TEST_ACCOUNT, region="us-east-1")
AZ_CONTEXT = {f"availability-zones:account={TEST_ACCOUNT}:region=us-east-1": ["us-east-1a", "us-east-1b"]}
FS_ID = "fs-0123456789abcdef0"
AP_ID = "fsap-0123456789abcdef0"
SG_ID = "sg-0123456789abcdef0"
KEY_ARN = "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _stack() -> tuple[cdk.Stack, ec2.Vpc]:
    stack = cdk.Stack(make_app(**AZ_CONTEXT), "Stack", env=ENV)
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        availability_zones=["us-east-1a", "us-east-1b"],
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Training", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        ],
    )
    return stack, vpc


def _statements(stack: cdk.Stack, role: iam.Role) -> list[dict[str, Any]]:
    policy = role.node.find_child("DefaultPolicy")
    assert isinstance(policy, iam.Policy)
    return stack.resolve(policy.document.to_json())["Statement"]  # type: ignore[no-any-return]


def _metric(stack: cdk.Stack, metric: cw.Metric) -> dict[str, Any]:
    config = metric.to_metric_config().metric_stat
    assert config is not None
    return {
        "namespace": config.namespace,
        "name": config.metric_name,
        "dimensions": {d.name: stack.resolve(d.value) for d in config.dimensions or []},
        "statistic": config.statistic,
        "period": config.period.to_seconds(),
        "label": metric.label,
    }


# -- CheckpointStore metrics -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def store() -> tuple[cdk.Stack, CheckpointStore]:
    stack, vpc = _stack()
    return stack, CheckpointStore(stack, "Store", vpc=vpc)


@pytest.mark.parametrize(
    ("method", "name", "statistic"),
    [
        ("metric_client_connections", "ClientConnections", "Sum"),
        ("metric_data_read_io_bytes", "DataReadIOBytes", "Sum"),
        ("metric_data_write_io_bytes", "DataWriteIOBytes", "Sum"),
        ("metric_metered_io_bytes", "MeteredIOBytes", "Sum"),
        ("metric_permitted_throughput", "PermittedThroughput", "Average"),
    ],
)
def test_store_metrics_name_the_file_system(
    store: tuple[cdk.Stack, CheckpointStore], method: str, name: str, statistic: str
) -> None:
    stack, checkpoints = store
    fs_ref = {"Ref": stack.resolve(stack.get_logical_id(checkpoints.file_system.node.default_child))}
    assert _metric(stack, getattr(checkpoints, method)()) == {
        "namespace": "AWS/EFS",
        "name": name,
        "dimensions": {"FileSystemId": fs_ref},
        "statistic": statistic,
        "period": 300,
        "label": f"{name} ({statistic})",
    }


def test_store_metric_overrides_apply_like_aws_cdk_lib_metrics(
    store: tuple[cdk.Stack, CheckpointStore],
) -> None:
    stack, checkpoints = store
    metric = checkpoints.metric_client_connections(
        period=cdk.Duration.minutes(1), statistic="Maximum", label="clients", color="#ff0000"
    )
    seen = _metric(stack, metric)
    assert (seen["statistic"], seen["period"], seen["label"], metric.color) == (
        "Maximum",
        60,
        "clients",
        "#ff0000",
    )
    # The generic metric: any AWS/EFS name, Average unless told otherwise.
    assert _metric(stack, checkpoints.metric("PercentIOLimit"))["statistic"] == "Average"
    assert (
        _metric(stack, checkpoints.metric("PercentIOLimit", statistic="p99"))["label"]
        == "PercentIOLimit (p99)"
    )


def test_storage_bytes_carry_the_storage_class(store: tuple[cdk.Stack, CheckpointStore]) -> None:
    stack, checkpoints = store
    total = _metric(stack, checkpoints.metric_storage_bytes())
    assert (total["name"], total["statistic"], total["dimensions"]["StorageClass"]) == (
        "StorageBytes",
        "Average",
        "Total",
    )
    assert set(total["dimensions"]) == {"FileSystemId", "StorageClass"}
    assert _metric(stack, checkpoints.metric_storage_bytes("IA"))["dimensions"]["StorageClass"] == "IA"
    with pytest.raises(NeuronConfigError, match=r"^storage_class='Glacier': must be one of"):
        checkpoints.metric_storage_bytes("Glacier")  # type: ignore[arg-type]


def test_throughput_utilization_is_metered_over_permitted(store: tuple[cdk.Stack, CheckpointStore]) -> None:
    stack, checkpoints = store
    expression = checkpoints.metric_throughput_utilization(period=cdk.Duration.minutes(1))
    assert isinstance(expression, cw.MathExpression)
    assert expression.expression == "100 * (metered / PERIOD(metered)) / permitted"
    assert expression.period.to_seconds() == 60
    metered, permitted = (expression.using_metrics[k] for k in ("metered", "permitted"))
    assert isinstance(metered, cw.Metric) and isinstance(permitted, cw.Metric)
    assert (_metric(stack, metered)["name"], _metric(stack, metered)["statistic"]) == (
        "MeteredIOBytes",
        "Sum",
    )
    assert _metric(stack, permitted)["period"] == 60
    assert checkpoints.metric_throughput_utilization(label="x").label == "x"


# -- CheckpointStore.from_checkpoint_store_attributes ------------------------------------------------


def test_an_imported_store_grants_mounts_and_measures() -> None:
    stack, vpc = _stack()
    store = CheckpointStore.from_checkpoint_store_attributes(
        stack, "Imported", file_system_id=FS_ID, access_point_id=AP_ID, security_group_id=SG_ID
    )
    assert (store.file_system_id, store.access_point_id, store.mount_path) == (FS_ID, AP_ID, "/checkpoints")
    assert store.availability_zone is None
    assert [stack.resolve(g.security_group_id) for g in store.connections.security_groups] == [SG_ID]

    role = iam.Role(stack, "JobRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    client = ec2.SecurityGroup(stack, "Client", vpc=vpc)
    store.grant_read_write(role, peer=client)
    (statement,) = _statements(stack, role)
    assert statement["Action"] == ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    assert FS_ID in str(statement["Resource"])
    assert AP_ID in str(statement["Condition"]["StringEquals"]["elasticfilesystem:AccessPointArn"])

    batch.EcsJobDefinition(
        stack,
        "Job",
        container=batch.EcsEc2ContainerDefinition(
            stack,
            "Container",
            image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37"),
            cpu=1,
            memory=cdk.Size.gibibytes(1),
            job_role=role,
            volumes=[store.batch_volume()],
        ),
    )
    template = Template.from_stack(stack)
    (rule,) = template.find_resources("AWS::EC2::SecurityGroupIngress").values()
    assert (rule["Properties"]["GroupId"], rule["Properties"]["FromPort"]) == (SG_ID, 2049)
    (definition,) = template.find_resources("AWS::Batch::JobDefinition").values()
    (volume,) = definition["Properties"]["ContainerProperties"]["Volumes"]
    assert volume["EfsVolumeConfiguration"] == {
        "FileSystemId": FS_ID,
        "TransitEncryption": "ENABLED",
        "AuthorizationConfig": {"AccessPointId": AP_ID, "Iam": "ENABLED"},
    }
    commands = store.mount_commands()
    assert f"mount -t efs -o tls,iam,accesspoint={AP_ID} {FS_ID}:/ /checkpoints" in commands
    assert _metric(stack, store.metric_client_connections())["dimensions"] == {"FileSystemId": FS_ID}
    assert _metric(stack, store.metric_storage_bytes())["dimensions"] == {
        "FileSystemId": FS_ID,
        "StorageClass": "Total",
    }
    # An import creates nothing.
    assert not template.find_resources("AWS::EFS::FileSystem")


def test_an_import_takes_tokens_and_refuses_malformed_ids() -> None:
    stack, _ = _stack()
    token = cdk.Fn.import_value("CheckpointFileSystemId")
    store = CheckpointStore.from_checkpoint_store_attributes(
        stack, "FromExports", file_system_id=token, access_point_id=AP_ID, security_group_id=SG_ID
    )
    assert store.file_system_id == token
    for field, attrs in (
        ("file_system_id", {"file_system_id": "fs-xyz"}),
        ("access_point_id", {"access_point_id": "ap-0123456789abcdef0"}),
        ("security_group_id", {"security_group_id": "default"}),
        ("mount_path", {"mount_path": "checkpoints"}),
    ):
        props: dict[str, Any] = {
            "file_system_id": FS_ID,
            "access_point_id": AP_ID,
            "security_group_id": SG_ID,
            **attrs,
        }
        with pytest.raises(NeuronConfigError, match=rf"^Stack/Bad{field}: {field}=") as raised:
            CheckpointStore.from_checkpoint_store_attributes(stack, f"Bad{field}", **props)
        assert raised.value.construct == f"Stack/Bad{field}"


def test_stores_built_and_imported_are_icheckpoint_stores(store: tuple[cdk.Stack, CheckpointStore]) -> None:
    stack, built = store
    imported: ICheckpointStore = CheckpointStore.from_checkpoint_store_attributes(
        stack, "Typed", file_system_id=FS_ID, access_point_id=AP_ID, security_group_id=SG_ID
    )
    as_interface: ICheckpointStore = built
    for candidate in (as_interface, imported):
        for member in ("grant_read", "grant_read_write", "batch_volume", "mount_commands", "metric"):
            assert callable(getattr(candidate, member))


def test_subnets_is_no_longer_a_prop() -> None:
    """0.x breaking change: the 0.1 prop ``subnets`` is ``vpc_subnets``, as in aws-cdk-lib."""
    stack, vpc = _stack()
    selection = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
    with pytest.raises(TypeError, match="subnets"):
        CheckpointStore(stack, "Old", vpc=vpc, subnets=selection)  # type: ignore[call-arg]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CheckpointStore(stack, "New", vpc=vpc, vpc_subnets=selection)


def test_vpc_subnets_defaults_to_the_vpcs_private_subnets() -> None:
    stack, vpc = _stack()
    CheckpointStore(stack, "Store", vpc=vpc)
    assert len(Template.from_stack(stack).find_resources("AWS::EFS::MountTarget")) == 2


# -- CompileCache ---------------------------------------------------------------------------------------


def test_an_imported_cache_has_its_url_environment_and_grants() -> None:
    stack, _ = _stack()
    cache = CompileCache.from_compile_cache_attributes(
        stack, "Cache", bucket_name="my-cache-bucket", prefix="cache/", kms_key_arn=KEY_ARN
    )
    assert cache.url == "s3://my-cache-bucket/cache/"
    assert cache.environment == {"NEURON_COMPILE_CACHE_URL": "s3://my-cache-bucket/cache/"}
    writer = iam.Role(stack, "Writer", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    cache.grant_read_write(writer)
    actions = {
        a
        for s in _statements(stack, writer)
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListBucket",
        "kms:Decrypt",
        "kms:GenerateDataKey",
    }
    key_statement = next(s for s in _statements(stack, writer) if "kms:Decrypt" in str(s["Action"]))
    assert key_statement["Resource"] == KEY_ARN
    objects = next(s for s in _statements(stack, writer) if "s3:GetObject" in str(s["Action"]))
    assert "my-cache-bucket/cache/*" in str(objects["Resource"])


def test_an_imported_cache_without_a_key_grants_no_key() -> None:
    stack, _ = _stack()
    cache: ICompileCache = CompileCache.from_compile_cache_attributes(
        stack, "Cache", bucket_name="my-cache-bucket"
    )
    assert cache.prefix == "neuron-compile-cache/" and cache.kms_key is None
    reader = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    cache.grant_read(reader)
    assert not any("kms:" in str(s["Action"]) for s in _statements(stack, reader))


@pytest.mark.parametrize(
    ("attrs", "field"),
    [
        ({"bucket_name": "My_Bucket"}, "bucket_name"),
        ({"bucket_name": "ok-bucket", "prefix": "no-slash"}, "prefix"),
        ({"bucket_name": "ok-bucket", "kms_key_arn": "alias/cache"}, "kms_key_arn"),
    ],
)
def test_an_imported_cache_refuses_malformed_attributes(attrs: dict[str, Any], field: str) -> None:
    stack, _ = _stack()
    with pytest.raises(NeuronConfigError, match=rf"^Stack/Cache: {field}="):
        CompileCache.from_compile_cache_attributes(stack, "Cache", **attrs)


def test_a_built_cache_is_an_icompile_cache() -> None:
    stack, _ = _stack()
    cache: ICompileCache = CompileCache(stack, "Cache")
    assert cache.kms_key is not None
    assert cache.url.startswith("s3://")
