"""Training clusters as aws-cdk-lib L2s: one class per engine, imports, metrics, grants, user data.

One app holds a Batch and an Auto Scaling trn1.32xlarge cluster with every optional part (EFA,
checkpoints, compile cache, node metrics, an AZ ID), so no attribute is None for want of config.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from test_training_support import PUBLIC_IMAGE, PinnedStack, first_zone, network

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring import NeuronMonitoring, NodeMetrics
from cdk_neuron.storage import CheckpointStore, CompileCache
from cdk_neuron.training import (
    AutoScalingTrainingCluster,
    BatchTrainingCluster,
    IBatchTrainingCluster,
    ITrainingCluster,
    NodeOptions,
    TrainingClusterBase,
)
from cdk_support import flatten_user_data, make_app, nag_violations

QUEUE_ARN = "arn:aws:batch:us-east-1:111111111111:job-queue/training"
DEFINITION_ARN = "arn:aws:batch:us-east-1:111111111111:job-definition/training:3"
SG_ID = "sg-0123456789abcdef0"
TASK_SG_ID = "sg-0fedcba9876543210"
METRICS = NodeMetrics(environment="prod")


@dataclass
class Clusters:
    stack: PinnedStack
    batch: BatchTrainingCluster
    group: AutoScalingTrainingCluster
    store: CheckpointStore
    cache: CompileCache

    def resolve(self, value: Any) -> Any:
        return self.stack.resolve(value)


def _props(stack: PinnedStack, vpc: ec2.Vpc, store: CheckpointStore, cache: CompileCache) -> dict[str, Any]:
    return {
        "vpc": vpc,
        "instance_type": "trn1.32xlarge",
        "max_nodes": 2,
        "vpc_subnets": first_zone(stack),
        "availability_zone_id": "use1-az6",
        "checkpoints": store,
        "compile_cache": cache,
        "node_metrics": METRICS,
    }


@pytest.fixture(scope="module")
def clusters() -> Clusters:
    stack = PinnedStack(make_app(), "L2", region="us-east-1")
    vpc = network(stack)
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    cache = CompileCache(stack, "CompileCache")
    props = _props(stack, vpc, store, cache)
    batch = BatchTrainingCluster(stack, "Batch", job_image=PUBLIC_IMAGE, **props)
    group = AutoScalingTrainingCluster(stack, "Group", **props)
    return Clusters(stack=stack, batch=batch, group=group, store=store, cache=cache)


def _public_attributes(obj: object) -> dict[str, Any]:
    """Every public, non-method attribute of a construct (jsii's own ``node`` excluded)."""
    found = {}
    for name in dir(obj):
        if name.startswith("_") or name == "node":
            continue
        value = getattr(obj, name)
        if not inspect.ismethod(value) and not inspect.isfunction(value):
            found[name] = value
    return found


# -- one class per engine ---------------------------------------------------------------------------


def test_no_attribute_is_none_because_of_the_engine(clusters: Clusters) -> None:
    # placement_group and availability_zone may be None by configuration (a Capacity Block, a
    # token AZ); with this configuration they are set too.
    for cluster in (clusters.batch, clusters.group):
        attributes = _public_attributes(cluster)
        assert {n for n, v in attributes.items() if v is None} == set(), type(cluster).__name__
    shared = {
        "plan", "instance", "launch_template", "user_data", "machine_image", "placement_group",
        "security_group", "connections", "role", "kms_key", "availability_zone", "node_metrics",
        "grant_principal", "checkpoints", "compile_cache", "efa_installer_mirror", "max_nodes",
        "capacity", "availability_zone_id", "cluster_id", "boot_failure_alarm", "vpc", "vpc_subnets",
    }  # fmt: skip
    batch_only = {
        "compute_environment", "job_queue", "job_queue_arn", "job_definition", "job_definitions",
        "task_security_group", "job_role", "execution_role", "log_group", "boot_failure_rule",
    }  # fmt: skip
    assert set(_public_attributes(clusters.batch)) == shared | batch_only
    assert set(_public_attributes(clusters.group)) == shared | {"auto_scaling_group"}
    for method in ("add_job_definition", "grant_submit_jobs"):
        assert callable(getattr(clusters.batch, method)) and not hasattr(clusters.group, method)
    for method in ("add_user_data", "metric", "metric_neuron_core_utilization"):
        assert callable(getattr(clusters.batch, method)) and callable(getattr(clusters.group, method))


def test_both_engines_extend_the_abstract_base(clusters: Clusters) -> None:
    assert isinstance(clusters.batch, TrainingClusterBase) and isinstance(clusters.group, TrainingClusterBase)
    with pytest.raises(TypeError, match="abstract"):
        TrainingClusterBase(clusters.stack, "Abstract")  # type: ignore[abstract]
    typed: list[ITrainingCluster] = [clusters.batch, clusters.group]
    batch: IBatchTrainingCluster = clusters.batch
    assert typed and batch.job_queue_arn == clusters.batch.job_queue.job_queue_arn


def test_grant_principal_is_the_role_the_training_code_runs_as() -> None:
    stack = PinnedStack(make_app(), "Grants", region="us-east-1")
    vpc = network(stack)
    props: dict[str, Any] = {"vpc": vpc, "instance_type": "trn1.32xlarge", "max_nodes": 2,
                             "vpc_subnets": first_zone(stack)}  # fmt: skip
    batch = BatchTrainingCluster(stack, "Batch", job_image=PUBLIC_IMAGE, **props)
    group = AutoScalingTrainingCluster(stack, "Group", **props)
    assert batch.grant_principal is batch.job_role
    assert group.grant_principal is group.role
    # A cluster is IGrantable: grant it like a Lambda function or an instance.
    data = s3.Bucket(stack, "Data")
    data.grant_read(batch)
    data.grant_read(group)
    bucket_arn = {"Fn::GetAtt": [stack.resolve(stack.get_logical_id(data.node.default_child)), "Arn"]}

    def granted(role: iam.IRole) -> bool:
        policy = role.node.try_find_child("DefaultPolicy")
        assert isinstance(policy, iam.Policy)
        for statement in stack.resolve(policy.document.to_json())["Statement"]:
            resources = (
                statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            )
            if bucket_arn in resources:
                return True
        return False

    assert granted(batch.job_role) and granted(group.role)
    assert not granted(batch.role)  # the ECS agent's instance role: jobs never run as it


def test_add_user_data_appends_a_shell_part_after_the_node_setup() -> None:
    stack = PinnedStack(make_app(), "UserData", region="us-east-1")
    vpc = network(stack)
    for cls, extra in ((BatchTrainingCluster, {"job_image": PUBLIC_IMAGE}), (AutoScalingTrainingCluster, {})):
        cluster = cls(stack, cls.__name__, vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
                      vpc_subnets=first_zone(stack), **extra)  # fmt: skip
        cluster.add_user_data("echo first > /tmp/mine")
        cluster.add_user_data("echo second >> /tmp/mine", "systemctl start my-agent")
    template = Template.from_stack(stack)
    for data in template.find_resources("AWS::EC2::LaunchTemplate").values():
        text = flatten_user_data(data["Properties"]["LaunchTemplateData"]["UserData"])
        setup = text.index("cdk_neuron_bootstrap training/node-setup.sh")
        mine = text.index(
            "#!/bin/bash\necho first > /tmp/mine\necho second >> /tmp/mine\nsystemctl start my-agent"
        )
        assert setup < mine
        assert text.count('Content-Type: text/x-shellscript; charset="utf-8"') == 2
    with pytest.raises(NeuronConfigError, match=r"^UserData/BatchTrainingCluster: commands=7"):
        cluster = stack.node.find_child("BatchTrainingCluster")
        assert isinstance(cluster, BatchTrainingCluster)
        cluster.add_user_data(7)  # type: ignore[arg-type]


def test_errors_name_the_construct_path() -> None:
    stack = PinnedStack(make_app(), "Paths", region="us-east-1")
    vpc = network(stack)
    with pytest.raises(NeuronConfigError) as raised:
        BatchTrainingCluster(
            stack, "Cluster", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=0, job_image=PUBLIC_IMAGE
        )
    assert (raised.value.construct, raised.value.field) == ("Paths/Cluster", "max_nodes")
    assert str(raised.value).startswith("Paths/Cluster: max_nodes=0:")
    with pytest.raises(
        NeuronConfigError, match=r"^Paths/Group: desired_capacity=3: must be a whole number between 0 and 2"
    ):
        AutoScalingTrainingCluster(stack, "Group", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
                                   vpc_subnets=first_zone(stack), desired_capacity=3)  # fmt: skip
    # Refused before any resource: only the empty cluster nodes exist.
    assert not stack.node.find_child("Cluster").node.children
    assert not stack.node.find_child("Group").node.children


@pytest.mark.parametrize("cluster", [BatchTrainingCluster, AutoScalingTrainingCluster])
def test_both_clusters_take_the_node_props_as_one_typed_options_bag(
    cluster: type[TrainingClusterBase],
) -> None:
    """The node props are NodeOptions, spelled once: ``**options: Unpack[NodeOptions]`` on both."""
    (bag,) = [p for p in inspect.signature(cluster.__init__).parameters.values() if p.kind is p.VAR_KEYWORD]
    assert bag.annotation == "Unpack[NodeOptions]"
    assert NodeOptions.__optional_keys__ == set(NodeOptions.__annotations__) == {
        "plan", "vpc_subnets", "availability_zone_id", "checkpoints", "compile_cache", "capacity",
        "placement_group", "machine_image", "efa_layout", "root_volume_size", "kms_key", "removal_policy",
        "environment", "efa_installer", "node_metrics",
    }  # fmt: skip
    own = set(inspect.signature(cluster.__init__).parameters)
    assert not own & NodeOptions.__optional_keys__, "a node prop is spelled out again"


def test_an_unknown_node_prop_is_a_type_error_with_the_closest_name() -> None:
    stack = PinnedStack(make_app(), "Unknown", region="us-east-1")
    vpc = network(stack)
    with pytest.raises(
        TypeError,
        match=r"^AutoScalingTrainingCluster\(\) got an unexpected keyword argument 'checkpoint' "
        r"\(did you mean 'checkpoints'\?\)$",
    ):
        AutoScalingTrainingCluster(stack, "Group", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
                                   checkpoint=None)  # type: ignore[call-arg]  # fmt: skip
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour'$"):
        AutoScalingTrainingCluster(stack, "Other", vpc=vpc, instance_type="trn1.32xlarge", max_nodes=2,
                                   colour="blue")  # type: ignore[call-arg]  # fmt: skip


@pytest.mark.parametrize("package", ["cdk_neuron", "cdk_neuron.training"])
@pytest.mark.parametrize("name", ["TrainingCluster", "Engine", "EngineKind"])
def test_the_0_1_training_names_are_gone(package: str, name: str) -> None:
    """0.x breaking change: BatchTrainingCluster / AutoScalingTrainingCluster replace them."""
    import importlib

    module = importlib.import_module(package)
    assert name not in module.__all__
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(module, name)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cdk_neuron.training.engine")


# -- metrics ------------------------------------------------------------------------------------------


def _stat(cluster: Any, metric: cw.Metric) -> dict[str, Any]:
    config = metric.to_metric_config().metric_stat
    assert config is not None
    return {
        "namespace": config.namespace,
        "name": config.metric_name,
        "dimensions": {d.name: d.value for d in config.dimensions or []},
        "statistic": config.statistic,
        "period": config.period.to_seconds(),
    }


@pytest.mark.parametrize(
    ("method", "name", "statistic"),
    [
        ("metric_neuron_core_utilization", "NeuronCoreUtilization", "Average"),
        ("metric_neuron_device_memory_utilization", "NeuronDeviceMemoryUtilization", "Maximum"),
        ("metric_ecc_uncorrected", "EccUncorrected", "Sum"),
    ],
)
@pytest.mark.parametrize("engine", ["batch", "group"])
def test_node_metrics_are_the_training_workload_series(
    clusters: Clusters, engine: str, method: str, name: str, statistic: str
) -> None:
    cluster = getattr(clusters, engine)
    assert _stat(cluster, getattr(cluster, method)()) == {
        "namespace": "CdkNeuron",
        "name": name,
        "dimensions": {"Environment": "prod", "Workload": "training"},
        "statistic": statistic,
        "period": 300,
    }


def test_node_metric_overrides_and_the_generic_metric(clusters: Clusters) -> None:
    cluster = clusters.batch
    metric = cluster.metric_neuron_core_utilization(statistic="Minimum", period=cdk.Duration.minutes(1))
    assert (_stat(cluster, metric)["statistic"], _stat(cluster, metric)["period"]) == ("Minimum", 60)
    assert metric.label == "training NeuronCoreUtilization (Minimum)"
    assert cluster.metric_ecc_uncorrected(label="ECC").label == "ECC"
    errors = cluster.metric("ExecutionErrors")
    assert (_stat(cluster, errors)["name"], _stat(cluster, errors)["statistic"]) == ("ExecutionErrors", "Sum")
    with pytest.raises(NeuronConfigError, match=r"^L2/Batch: metric_name='Nope': the nodes publish"):
        cluster.metric("Nope")


def test_a_cluster_without_node_metrics_refuses_to_invent_them() -> None:
    stack = PinnedStack(make_app(), "Silent", region="us-east-1")
    cluster = AutoScalingTrainingCluster(stack, "Cluster", vpc=network(stack), instance_type="trn1.32xlarge",
                                         max_nodes=2, vpc_subnets=first_zone(stack))  # fmt: skip
    with pytest.raises(NeuronConfigError, match=r"^Silent/Cluster: node_metrics=None: the nodes publish no"):
        cluster.metric_neuron_core_utilization()


# -- imports ------------------------------------------------------------------------------------------


def test_an_imported_batch_cluster_grants_submission_connects_and_measures() -> None:
    stack = PinnedStack(make_app(), "Consumer", region="us-east-1")
    vpc = network(stack)
    cluster = BatchTrainingCluster.from_batch_training_cluster_attributes(
        stack,
        "Training",
        job_queue_arn=QUEUE_ARN,
        job_definition_arn=DEFINITION_ARN,
        security_group_id=SG_ID,
        task_security_group_id=TASK_SG_ID,
        node_metrics=METRICS,
    )
    assert cluster.job_queue_arn == QUEUE_ARN
    submitter = iam.Role(stack, "Submitter", assumed_by=iam.AccountRootPrincipal())
    cluster.grant_submit_jobs(submitter)
    document = stack.resolve(submitter.node.find_child("DefaultPolicy").document.to_json())  # type: ignore[attr-defined]
    assert document["Statement"] == [
        {"Action": "batch:SubmitJob", "Effect": "Allow", "Resource": [QUEUE_ARN, DEFINITION_ARN]},
        {"Action": ["batch:DescribeJobs", "batch:ListJobs"], "Effect": "Allow", "Resource": "*"},
    ]
    assert [g.security_group_id for g in cluster.connections.security_groups] == [SG_ID, TASK_SG_ID]
    store = CheckpointStore(stack, "Checkpoints", vpc=vpc, vpc_subnets=first_zone(stack))
    store.connections.allow_default_port_from(cluster)
    ingress = Template.from_stack(stack).find_resources("AWS::EC2::SecurityGroupIngress")
    assert sorted(r["Properties"]["SourceSecurityGroupId"] for r in ingress.values()) == [SG_ID, TASK_SG_ID]
    assert _stat(cluster, cluster.metric_neuron_device_memory_utilization())["dimensions"] == {
        "Environment": "prod",
        "Workload": "training",
    }
    # NeuronMonitoring watches an import like a built cluster: the Batch rules use its queue.
    monitoring = NeuronMonitoring(stack, "Monitoring", environment="prod", cluster=cluster)
    assert {"TrainingCoresIdle", "TrainingEccUncorrected"} <= set(monitoring.alarms)
    assert "BatchJobFailed" in monitoring.rules


@pytest.mark.parametrize(
    ("attrs", "field"),
    [
        ({"job_queue_arn": "training"}, "job_queue_arn"),
        (
            {"job_definition_arn": "arn:aws:batch:us-east-1:111111111111:job-definition/training"},
            "job_definition_arn",
        ),
        ({"security_group_id": "default"}, "security_group_id"),
        ({"task_security_group_id": "sg-1"}, "task_security_group_id"),
        ({"node_metrics": "prod"}, "node_metrics"),
    ],
)
def test_an_import_refuses_malformed_attributes(attrs: dict[str, Any], field: str) -> None:
    stack = PinnedStack(make_app(), "Consumer", region="us-east-1")
    props: dict[str, Any] = {
        "job_queue_arn": QUEUE_ARN,
        "job_definition_arn": DEFINITION_ARN,
        "security_group_id": SG_ID,
        **attrs,
    }
    with pytest.raises(NeuronConfigError, match=rf"^Consumer/Training: {field}="):
        BatchTrainingCluster.from_batch_training_cluster_attributes(stack, "Training", **props)


def test_an_import_takes_tokens() -> None:
    stack = PinnedStack(make_app(), "Consumer", region="us-east-1")
    queue = cdk.Fn.import_value("JobQueueArn")
    cluster = BatchTrainingCluster.from_batch_training_cluster_attributes(
        stack,
        "Training",
        job_queue_arn=queue,
        job_definition_arn=cdk.Fn.import_value("JobDefinitionArn"),
        security_group_id=cdk.Fn.import_value("NodeSecurityGroupId"),
    )
    assert cluster.job_queue_arn == queue and cluster.node_metrics is None


def test_a_cluster_mounts_an_imported_store_and_uses_an_imported_cache() -> None:
    stack = PinnedStack(make_app(), "Imports", region="us-east-1")
    store = CheckpointStore.from_checkpoint_store_attributes(
        stack,
        "Checkpoints",
        file_system_id="fs-0123456789abcdef0",
        access_point_id="fsap-0123456789abcdef0",
        security_group_id=SG_ID,
    )
    cache = CompileCache.from_compile_cache_attributes(stack, "Cache", bucket_name="team-neuron-cache")
    cluster = BatchTrainingCluster(stack, "Cluster", vpc=network(stack), instance_type="trn1.32xlarge",
                                   max_nodes=2, vpc_subnets=first_zone(stack), job_image=PUBLIC_IMAGE,
                                   checkpoints=store, compile_cache=cache)  # fmt: skip
    template = Template.from_stack(stack).to_json()
    (definition,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Batch::JobDefinition"]
    container = definition["Properties"]["NodeProperties"]["NodeRangeProperties"][0]["Container"]
    (efs,) = [v for v in container["Volumes"] if "EfsVolumeConfiguration" in v]
    assert efs["EfsVolumeConfiguration"]["FileSystemId"] == "fs-0123456789abcdef0"
    env = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert env["NEURON_COMPILE_CACHE_URL"] == "s3://team-neuron-cache/neuron-compile-cache/"
    assert env["CHECKPOINT_DIR"] == "/checkpoints"
    ingress = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress"
    ]
    assert any(r["GroupId"] == SG_ID and r["FromPort"] == 2049 for r in ingress)
    assert cluster.checkpoints is store and cluster.compile_cache is cache
    assert nag_violations(stack) == []


# -- the former Engine options, now props of their class ------------------------------------------------


def test_batch_update_policy_defaults_and_overrides() -> None:
    stack = PinnedStack(make_app(), "Updates", region="us-east-1")
    vpc = network(stack)
    props: dict[str, Any] = {"vpc": vpc, "instance_type": "trn1.32xlarge", "max_nodes": 2,
                             "vpc_subnets": first_zone(stack), "job_image": PUBLIC_IMAGE}  # fmt: skip
    BatchTrainingCluster(stack, "Gentle", **props)
    BatchTrainingCluster(
        stack, "Abrupt", update_timeout=cdk.Duration.minutes(30), terminate_on_update=True, **props
    )
    # The current API reference and botocore 1.44.8 accept up to 7200 minutes (older copies say 360).
    BatchTrainingCluster(stack, "Longest", update_timeout=cdk.Duration.minutes(7200), **props)
    policies = {
        key.split("ComputeEnvironment")[0]: resource["Properties"]["UpdatePolicy"]
        for key, resource in Template.from_stack(stack)
        .find_resources("AWS::Batch::ComputeEnvironment")
        .items()
    }
    assert policies == {
        "Gentle": {"JobExecutionTimeoutMinutes": 360, "TerminateJobsOnUpdate": False},
        "Abrupt": {"JobExecutionTimeoutMinutes": 30, "TerminateJobsOnUpdate": True},
        "Longest": {"JobExecutionTimeoutMinutes": 7200, "TerminateJobsOnUpdate": False},
    }


def test_the_update_timeout_limit_is_botocores() -> None:
    """The limit we accept is the one the SDK's service model ships (botocore's batch 2016-08-10)."""
    from botocore.loaders import Loader

    from cdk_neuron.training.batch_cluster import MAX_UPDATE_TIMEOUT_MINUTES

    shapes = Loader().load_service_model("batch", "service-2")["shapes"]
    limit = shapes[shapes["UpdatePolicy"]["members"]["jobExecutionTimeoutMinutes"]["shape"]]
    assert (limit["min"], limit["max"]) == (1, MAX_UPDATE_TIMEOUT_MINUTES)


@pytest.mark.parametrize("bad", [-1, True, 1.5, 3])
def test_bad_desired_capacity_is_refused(bad: object) -> None:
    stack = PinnedStack(make_app(), "Desired", region="us-east-1")
    with pytest.raises(NeuronConfigError, match=r"^Desired/Group: desired_capacity=") as raised:
        AutoScalingTrainingCluster(stack, "Group", vpc=network(stack), instance_type="trn1.32xlarge", max_nodes=2,
                                   vpc_subnets=first_zone(stack), desired_capacity=bad)  # type: ignore[arg-type]  # fmt: skip
    assert raised.value.field == "desired_capacity"
