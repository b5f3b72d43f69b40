"""The serving classes' public API: attributes, metrics, grants, user data and imports.

One stack holds an EC2 fleet (with node metrics) and a SageMaker fleet; the imports get stacks of
their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.monitoring import NodeMetrics
from cdk_neuron.serving import (
    Ec2InferenceFleet,
    IEc2InferenceFleet,
    ISageMakerInferenceFleet,
    ModelSpec,
    SageMakerInferenceFleet,
)
from cdk_neuron.serving.fleet import InferenceFleetBase
from cdk_support import flatten_user_data, make_app, template_of

AZS = ["us-east-1a", "us-east-1b"]
MODEL = ModelSpec(
    model_id="meta-llama/Llama-3.1-8B-Instruct",
    artifact_uri="s3://my-models/llama-3.1-8b/neuron",
    parameters=8_000_000_000,
    batch_size=4,
)
LB_FULL_NAME = "app/serving-lb/0123456789abcdef"
TG_FULL_NAME = "targetgroup/serving-tg/fedcba9876543210"
FLEET_ID = "c8" + "0" * 40
ROLE_ARN = "arn:aws:iam::111111111111:role/serving-instances"


class PinnedStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return AZS


def _stack(app: cdk.App, name: str) -> tuple[cdk.Stack, ec2.Vpc]:
    stack = PinnedStack(app, name, env=cdk.Environment(account="111111111111", region="us-east-1"))
    cdk.Validations.of(stack).acknowledge(
        cdk.Acknowledgment(
            id="CloudFormation-Validate::W3010", reason="test stacks pin AZ names (no lookups)"
        )
    )
    return stack, ec2.Vpc(stack, "Vpc", availability_zones=AZS)


@dataclass
class Built:
    stack: cdk.Stack
    ec2: Ec2InferenceFleet
    sagemaker: SageMakerInferenceFleet
    template: dict[str, Any]


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    stack, vpc = _stack(make_app(), "Api")
    fleet = Ec2InferenceFleet(
        stack,
        "Fleet",
        vpc=vpc,
        model=MODEL,
        instance_type="inf2.8xlarge",
        node_metrics=NodeMetrics(environment="prod"),
    )
    fleet.add_user_data("echo extra-one", "echo extra-two")
    endpoint = SageMakerInferenceFleet(stack, "Endpoint", vpc=vpc, model=MODEL, instance_type="inf2.8xlarge")
    data = s3.Bucket(stack, "Data")
    data.grant_read(fleet)
    data.grant_read(endpoint)
    yield Built(stack, fleet, endpoint, template_of(stack))


def _public_values(obj: object) -> dict[str, object]:
    values = {}
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name)
        if not callable(value) or isinstance(value, (cdk.Resource, ec2.Connections)):
            values[name] = value
    return values


# ---------------------------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["ec2", "sagemaker"])
def test_no_public_attribute_is_none(built: Built, which: str) -> None:
    fleet = built.ec2 if which == "ec2" else built.sagemaker
    values = _public_values(fleet)
    shared = {
        "model",
        "engine",
        "plan",
        "instance_type",
        "availability_zones",
        "kms_key",
        "target_concurrency",
    }
    assert shared | {"connections", "grant_principal"} <= set(values)
    assert [name for name, value in values.items() if value is None] == []


def test_each_backend_has_only_its_own_attributes(built: Built) -> None:
    ec2_only = {
        "load_balancer",
        "listener",
        "target_group",
        "auto_scaling_group",
        "launch_template",
        "instance_role",
        "access_log_bucket",
        "url",
        "startup_timeout_seconds",
        "node_metrics",
        "fleet_id",
        "add_user_data",
    }
    sagemaker_only = {
        "endpoint",
        "endpoint_config",
        "sagemaker_model",
        "execution_role",
        "endpoint_name",
        "variant_name",
        "container_startup_timeout_seconds",
        "grant_invoke",
    }
    assert all(hasattr(built.ec2, name) for name in ec2_only)
    assert not any(hasattr(built.ec2, name) for name in sagemaker_only)
    assert all(hasattr(built.sagemaker, name) for name in sagemaker_only)
    assert not any(hasattr(built.sagemaker, name) for name in ec2_only)
    for removed in ("key", "backend"):
        assert not hasattr(built.ec2, removed) and not hasattr(built.sagemaker, removed)


def test_the_fleets_hold_their_resources_as_attributes_not_forwarding_properties(built: Built) -> None:
    """As the training clusters do: what a fleet built is an attribute of it, set once; the only
    properties left are the interface's connections and grant_principal (on the metrics bases)."""
    from cdk_neuron.serving.ec2_fleet import Ec2FleetMetrics, Ec2InferenceFleet
    from cdk_neuron.serving.sagemaker_fleet import SageMakerFleetMetrics, SageMakerInferenceFleet

    for fleet_class in (Ec2InferenceFleet, SageMakerInferenceFleet):
        assert [n for n, v in vars(fleet_class).items() if isinstance(v, property)] == [], fleet_class
    for base in (Ec2FleetMetrics, SageMakerFleetMetrics):
        assert sorted(n for n, v in vars(base).items() if isinstance(v, property)) == [
            "connections",
            "grant_principal",
        ]
    for fleet in (built.ec2, built.sagemaker):
        assert not any(hasattr(fleet, name) for name in ("_ec2", "_sagemaker")), "no private backend object"
    assert vars(built.ec2)["load_balancer"] is built.ec2.load_balancer
    assert built.ec2.load_balancer_full_name == built.ec2.load_balancer.load_balancer_full_name
    assert built.sagemaker.endpoint_arn == built.sagemaker.endpoint.ref


def test_both_extend_the_abstract_base(built: Built) -> None:
    assert isinstance(built.ec2, InferenceFleetBase) and isinstance(built.sagemaker, InferenceFleetBase)
    with pytest.raises(TypeError, match="abstract"):
        InferenceFleetBase(built.stack, "Abstract")  # type: ignore[abstract]


def test_the_shared_attributes(built: Built) -> None:
    for fleet in (built.ec2, built.sagemaker):
        assert fleet.model is MODEL
        assert fleet.engine.name == "optimum-neuron"
        assert (fleet.instance_type, fleet.plan.tensor_parallel) == ("inf2.8xlarge", 2)
        assert fleet.availability_zones == ("us-east-1a", "us-east-1b")
        assert fleet.kms_key.node.path.endswith("/Key")
    # Concurrency per instance (EC2: every replica's batch) or per model copy (SageMaker).
    assert built.ec2.target_concurrency == 4.0 == built.sagemaker.target_concurrency
    assert built.ec2.url.startswith("http://")
    # 120 boot + 360 pull (AWS's published figure) + 12 transfer (RAM, 64 % of the network) + 955 load
    assert built.ec2.startup_timeout_seconds == 1447
    assert built.sagemaker.container_startup_timeout_seconds == 955


def _policies_on(template: dict[str, Any], role_logical_id: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_logical_id} in r["Properties"]["Roles"]
    ]


@pytest.mark.parametrize("which", ["ec2", "sagemaker"])
def test_grant_principal_is_the_role_the_model_runs_as(built: Built, which: str) -> None:
    fleet = built.ec2 if which == "ec2" else built.sagemaker
    role = fleet.instance_role if isinstance(fleet, Ec2InferenceFleet) else fleet.execution_role
    assert fleet.grant_principal is role
    logical_id = built.stack.resolve(built.stack.get_logical_id(role.node.default_child))
    statements = [
        s for p in _policies_on(built.template, logical_id) for s in p["PolicyDocument"]["Statement"]
    ]
    assert any("s3:GetObject*" in s["Action"] for s in statements)


def test_add_user_data_runs_after_the_boot_program(built: Built) -> None:
    (template,) = [r for r in built.template["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    text = flatten_user_data(template["Properties"]["LaunchTemplateData"]["UserData"])
    boot = text.index("cdk_neuron_bootstrap serving/boot.sh")
    assert boot < text.index("echo extra-one") < text.index("echo extra-two")


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


def _described(stack: cdk.Stack, metric: cw.Metric) -> tuple[str, str, dict[str, Any], str, int]:
    dimensions = stack.resolve(metric.dimensions)
    return metric.namespace, metric.metric_name, dimensions, metric.statistic, int(metric.period.to_seconds())


def _ec2_dimensions(stack: cdk.Stack, fleet: Ec2InferenceFleet) -> dict[str, dict[str, Any]]:
    def get_att(construct: Any, attribute: str) -> dict[str, Any]:
        return {"Fn::GetAtt": [stack.resolve(stack.get_logical_id(construct.node.default_child)), attribute]}

    load_balancer = {"LoadBalancer": get_att(fleet.load_balancer, "LoadBalancerFullName")}
    return {
        "target_group": {"TargetGroup": get_att(fleet.target_group, "TargetGroupFullName"), **load_balancer},
        "load_balancer": load_balancer,
    }


EC2_METRICS: list[tuple[str, str, str, str, str]] = [
    # method, namespace, metric name, dimensions, statistic
    ("metric_request_count", "AWS/ApplicationELB", "RequestCount", "target_group", "Sum"),
    ("metric_http_code_target_5xx", "AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", "target_group", "Sum"),
    ("metric_http_code_elb_5xx", "AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count", "load_balancer", "Sum"),
    ("metric_http_code_elb_503", "AWS/ApplicationELB", "HTTPCode_ELB_503_Count", "load_balancer", "Sum"),
    ("metric_target_response_time", "AWS/ApplicationELB", "TargetResponseTime", "target_group", "Average"),
    ("metric_healthy_host_count", "AWS/ApplicationELB", "HealthyHostCount", "target_group", "Average"),
    ("metric_unhealthy_host_count", "AWS/ApplicationELB", "UnHealthyHostCount", "target_group", "Average"),
    ("metric_concurrent_requests", "CdkNeuron/Serving", "ConcurrentRequests", "fleet", "Average"),
    ("metric_neuron_core_utilization", "CdkNeuron", "NeuronCoreUtilization", "neuron", "Average"),
    ("metric_neuron_device_memory_used", "CdkNeuron", "NeuronDeviceMemoryUsed", "neuron", "Maximum"),
    (
        "metric_neuron_device_memory_utilization",
        "CdkNeuron",
        "NeuronDeviceMemoryUtilization",
        "neuron",
        "Maximum",
    ),
    ("metric_neuron_ecc_corrected", "CdkNeuron", "EccCorrected", "neuron", "Sum"),
    ("metric_neuron_ecc_uncorrected", "CdkNeuron", "EccUncorrected", "neuron", "Sum"),
]


@pytest.mark.parametrize(("method", "namespace", "name", "dimensions", "statistic"), EC2_METRICS)
def test_ec2_metric(
    built: Built, method: str, namespace: str, name: str, dimensions: str, statistic: str
) -> None:
    fleet = built.ec2
    expected = {
        **_ec2_dimensions(built.stack, fleet),
        "fleet": {"Fleet": fleet.node.addr},
        "neuron": {"Environment": "prod", "Workload": "serving"},
    }[dimensions]
    metric = getattr(fleet, method)()
    assert _described(built.stack, metric) == (namespace, name, expected, statistic, 300)
    # aws_cloudwatch.MetricOptions override the defaults.
    overridden = getattr(fleet, method)(statistic="p99", period=cdk.Duration.minutes(1), label="mine")
    assert (overridden.statistic, overridden.period.to_seconds(), overridden.label) == ("p99", 60, "mine")


SAGEMAKER_METRICS: list[tuple[str, str, str, str]] = [
    ("metric_invocations", "AWS/SageMaker", "Invocations", "Sum"),
    ("metric_invocation_4xx_errors", "AWS/SageMaker", "Invocation4XXErrors", "Sum"),
    ("metric_invocation_5xx_errors", "AWS/SageMaker", "Invocation5XXErrors", "Sum"),
    ("metric_model_latency", "AWS/SageMaker", "ModelLatency", "Average"),
    ("metric_overhead_latency", "AWS/SageMaker", "OverheadLatency", "Average"),
    ("metric_concurrent_requests_per_model", "AWS/SageMaker", "ConcurrentRequestsPerModel", "Average"),
    ("metric_cpu_utilization", "/aws/sagemaker/Endpoints", "CPUUtilization", "Average"),
    ("metric_memory_utilization", "/aws/sagemaker/Endpoints", "MemoryUtilization", "Average"),
]


@pytest.mark.parametrize(("method", "namespace", "name", "statistic"), SAGEMAKER_METRICS)
def test_sagemaker_metric(built: Built, method: str, namespace: str, name: str, statistic: str) -> None:
    fleet = built.sagemaker
    endpoint = built.stack.resolve(built.stack.get_logical_id(fleet.endpoint))
    expected = {"EndpointName": {"Fn::GetAtt": [endpoint, "EndpointName"]}, "VariantName": "AllTraffic"}
    metric = getattr(fleet, method)()
    assert _described(built.stack, metric) == (namespace, name, expected, statistic, 300)
    overridden = getattr(fleet, method)(statistic="p90", period=cdk.Duration.minutes(1))
    assert (overridden.statistic, overridden.period.to_seconds()) == ("p90", 60)


def test_a_generic_sagemaker_metric_and_replaced_dimensions(built: Built) -> None:
    metric = built.sagemaker.metric("ModelSetupTime", dimensions_map={"EndpointName": "other"})
    assert (metric.metric_name, metric.dimensions) == ("ModelSetupTime", {"EndpointName": "other"})


def test_metrics_only_read(built: Built) -> None:
    """Calling every metric method adds nothing to the construct tree."""
    before = len(built.stack.node.find_all())
    for method, *_ in EC2_METRICS:
        getattr(built.ec2, method)()
    for method, *_ in SAGEMAKER_METRICS:
        getattr(built.sagemaker, method)()
    assert len(built.stack.node.find_all()) == before


def test_neuron_metrics_need_node_metrics() -> None:
    stack, vpc = _stack(make_app(), "Quiet")
    fleet = Ec2InferenceFleet(stack, "Fleet", vpc=vpc, model=MODEL, instance_type="inf2.8xlarge")
    assert fleet.node_metrics is None  # not published: None by configuration, on EC2 only
    with pytest.raises(NeuronConfigError, match=r"node_metrics=None: Quiet/Fleet publishes no Neuron node"):
        fleet.metric_neuron_core_utilization()


# ---------------------------------------------------------------------------------------------
# Imports
# ---------------------------------------------------------------------------------------------


def _import_ec2(stack: cdk.Stack, id: str = "Imported", **overrides: Any) -> IEc2InferenceFleet:
    props: dict[str, Any] = {
        "load_balancer_full_name": LB_FULL_NAME,
        "target_group_full_name": TG_FULL_NAME,
        "fleet_id": FLEET_ID,
        "security_group_id": "sg-0123456789abcdef0",
        "instance_role_arn": ROLE_ARN,
        "node_metrics": NodeMetrics(environment="prod"),
        **overrides,
    }
    return Ec2InferenceFleet.from_ec2_inference_fleet_attributes(stack, id, **props)


def test_an_imported_ec2_fleet_has_every_metric() -> None:
    stack, _ = _stack(make_app(), "Importer")
    fleet = _import_ec2(stack)
    expected = {
        "target_group": {"TargetGroup": TG_FULL_NAME, "LoadBalancer": LB_FULL_NAME},
        "load_balancer": {"LoadBalancer": LB_FULL_NAME},
        "fleet": {"Fleet": FLEET_ID},
        "neuron": {"Environment": "prod", "Workload": "serving"},
    }
    for method, namespace, name, dimensions, statistic in EC2_METRICS:
        metric = getattr(fleet, method)()
        assert _described(stack, metric) == (namespace, name, expected[dimensions], statistic, 300), method
    assert (fleet.fleet_id, fleet.load_balancer_full_name, fleet.target_group_full_name) == (
        FLEET_ID,
        LB_FULL_NAME,
        TG_FULL_NAME,
    )


def test_an_imported_ec2_fleet_admits_clients_and_takes_grants() -> None:
    stack, vpc = _stack(make_app(), "Clients")
    fleet = _import_ec2(stack, port=443)
    client = ec2.SecurityGroup(stack, "Client", vpc=vpc)
    fleet.connections.allow_default_port_from(client)
    s3.Bucket(stack, "Data").grant_read(fleet)
    template = template_of(stack)
    (ingress,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress"
    ]
    assert (ingress["GroupId"], ingress["FromPort"], ingress["ToPort"]) == ("sg-0123456789abcdef0", 443, 443)
    (policy,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    assert policy["Roles"] == ["serving-instances"]


def test_an_import_without_a_role_has_an_unknown_principal() -> None:
    stack, _ = _stack(make_app(), "NoRole")
    fleet = _import_ec2(stack, instance_role_arn=None)
    assert isinstance(fleet.grant_principal, iam.UnknownPrincipal)


def test_an_import_exposes_the_replica_log_group_only_when_named() -> None:
    stack, _ = _stack(make_app(), "Logs")
    assert _import_ec2(stack).log_group is None
    fleet = _import_ec2(stack, "Named", log_group_name="prod-Serving-FleetReplicaLogs1A2B3C4D-AbCdEf")
    assert fleet.log_group is not None
    reader = iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal())
    fleet.log_group.grant_read(reader)
    (policy,) = [
        r["Properties"] for r in template_of(stack)["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
    ]
    resources = {json.dumps(s["Resource"]) for s in policy["PolicyDocument"]["Statement"]}
    assert any("log-group:prod-Serving-FleetReplicaLogs1A2B3C4D-AbCdEf:*" in r for r in resources)


def test_fleets_are_connectables_to_aws_cdk_lib() -> None:
    """jsii takes a built or imported fleet wherever aws-cdk-lib wants an ec2.IConnectable."""
    stack, vpc = _stack(make_app(), "Peers")
    fleet = Ec2InferenceFleet(stack, "Fleet", vpc=vpc, model=MODEL, instance_type="inf2.8xlarge")
    imported = _import_ec2(stack)
    client = ec2.SecurityGroup(stack, "Client", vpc=vpc, allow_all_outbound=False)
    client.connections.allow_to_default_port(fleet)
    client.connections.allow_to_default_port(imported)
    egress = [
        (r["Properties"]["DestinationSecurityGroupId"], r["Properties"]["FromPort"])
        for k, r in template_of(stack)["Resources"].items()
        if r["Type"] == "AWS::EC2::SecurityGroupEgress" and k.startswith("Client")
    ]
    lb_group = stack.resolve(
        stack.get_logical_id(fleet.load_balancer.connections.security_groups[0].node.default_child)
    )
    assert sorted(egress, key=str) == sorted(
        [({"Fn::GetAtt": [lb_group, "GroupId"]}, 80), ("sg-0123456789abcdef0", 80)], key=str
    )


def test_an_import_accepts_tokens() -> None:
    stack, _ = _stack(make_app(), "Tokens")
    fleet = _import_ec2(
        stack,
        load_balancer_full_name=cdk.Fn.import_value("LoadBalancerFullName"),
        target_group_full_name=cdk.Fn.import_value("TargetGroupFullName"),
        fleet_id=cdk.Fn.import_value("FleetId"),
    )
    assert stack.resolve(fleet.metric_request_count().dimensions) == {
        "TargetGroup": {"Fn::ImportValue": "TargetGroupFullName"},
        "LoadBalancer": {"Fn::ImportValue": "LoadBalancerFullName"},
    }


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"load_balancer_full_name": "my-alb"}, "load_balancer_full_name"),
        ({"target_group_full_name": "arn:aws:elasticloadbalancing:x"}, "target_group_full_name"),
        ({"fleet_id": "Fleet"}, "fleet_id"),
        ({"security_group_id": "default"}, "security_group_id"),
        ({"port": 0}, "port"),
        ({"instance_role_arn": "serving-instances"}, "instance_role_arn"),
        ({"node_metrics": "prod"}, "node_metrics"),
        ({"log_group_name": "replica logs"}, "log_group_name"),
    ],
)
def test_bad_ec2_attributes_are_refused_naming_the_import(overrides: dict[str, Any], field: str) -> None:
    stack, _ = _stack(make_app(), "Refused")
    with pytest.raises(NeuronConfigError, match=rf"^Refused/Imported: {field}="):
        _import_ec2(stack, **overrides)


def test_an_imported_sagemaker_fleet_has_every_metric_and_the_invoke_grant() -> None:
    stack, vpc = _stack(make_app(), "Caller")
    fleet: ISageMakerInferenceFleet = SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes(
        stack,
        "Imported",
        endpoint_name="Llama-Endpoint",
        security_group_id="sg-0123456789abcdef0",
        execution_role_arn=ROLE_ARN,
    )
    expected = {"EndpointName": "Llama-Endpoint", "VariantName": "AllTraffic"}
    for method, namespace, name, statistic in SAGEMAKER_METRICS:
        assert _described(stack, getattr(fleet, method)()) == (namespace, name, expected, statistic, 300), (
            method
        )
    caller = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    fleet.grant_invoke(caller)
    s3.Bucket(stack, "Data").grant_read(fleet)
    client = ec2.SecurityGroup(stack, "Client", vpc=vpc)
    fleet.connections.allow_to(client, ec2.Port.tcp(443))
    template = template_of(stack)
    policies = {
        k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Policy"
    }
    (policy,) = [p for k, p in policies.items() if k.startswith("Caller")]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]
    # SageMaker's ARNs spell the endpoint name in lower case.
    assert statement["Resource"] == "arn:aws:sagemaker:us-east-1:111111111111:endpoint/llama-endpoint"
    # The execution role takes grants as an imported role: a policy in this stack.
    assert [p["Roles"] for k, p in policies.items() if k.startswith("Imported")] == [["serving-instances"]]
    (ingress,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress"
    ]
    assert (ingress["SourceSecurityGroupId"], ingress["FromPort"]) == ("sg-0123456789abcdef0", 443)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"endpoint_name": "my endpoint"}, "endpoint_name"),
        ({"variant_name": "-AllTraffic"}, "variant_name"),
        ({"security_group_id": "sg-x"}, "security_group_id"),
        ({"execution_role_arn": "role"}, "execution_role_arn"),
    ],
)
def test_bad_sagemaker_attributes_are_refused_naming_the_import(
    overrides: dict[str, Any], field: str
) -> None:
    stack, _ = _stack(make_app(), "Refused")
    props: dict[str, Any] = {"endpoint_name": "llama", **overrides}
    with pytest.raises(NeuronConfigError, match=rf"^Refused/Imported: {field}="):
        SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes(stack, "Imported", **props)


def test_monitoring_watches_an_imported_fleet() -> None:
    from cdk_neuron.monitoring import NeuronMonitoring

    stack, _ = _stack(make_app(), "Watcher")
    monitoring = NeuronMonitoring(stack, "Monitoring", environment="prod", fleet=_import_ec2(stack))
    assert {"Serving5xxRate", "ServingP99Latency", "ServingUnhealthyHosts", "ServingCoresIdle"} <= set(
        monitoring.alarms
    )
    endpoint = SageMakerInferenceFleet.from_sagemaker_inference_fleet_attributes(
        stack, "Endpoint", endpoint_name="llama"
    )
    # A second NeuronMonitoring in the stack names its own alarms (the same names would replace the
    # first one's alarms in CloudWatch).
    watched = NeuronMonitoring(
        stack, "EndpointMonitoring", environment="prod", fleet=endpoint, alarm_name_prefix="Watcher-llama"
    )
    assert set(watched.alarms) == {"Serving5xxRate", "ServingP99Latency"}
    template = template_of(stack)
    body = json.dumps(template)
    assert TG_FULL_NAME in body and LB_FULL_NAME in body
    names = [
        r["Properties"]["AlarmName"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    assert len(names) == len(set(names)) and "Watcher-llama-Serving5xxRate" in names


# ---------------------------------------------------------------------------------------------
# The 0.1 names are gone (0.x breaking change; CHANGELOG.md maps each to its replacement)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("package", ["cdk_neuron", "cdk_neuron.serving"])
@pytest.mark.parametrize("name", ["InferenceFleet", "FleetBackend"])
def test_the_0_1_serving_names_are_gone(package: str, name: str) -> None:
    import importlib

    module = importlib.import_module(package)
    assert name not in module.__all__
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(module, name)


@pytest.mark.parametrize("module", ["cdk_neuron.serving.deprecated", "cdk_neuron.serving.backends"])
def test_the_0_1_serving_modules_are_gone(module: str) -> None:
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)
