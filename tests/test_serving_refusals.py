"""Ec2InferenceFleet and SageMakerInferenceFleet refuse bad configurations in their constructors,
naming the construct, the field and the fix, before they create any resource."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_support import make_app

AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]
_ids = itertools.count()


@pytest.fixture(scope="module")
def scope() -> Iterator[tuple[Any, Any]]:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    class PinnedAzStack(cdk.Stack):
        @property
        def availability_zones(self) -> list[str]:
            return AZS

    app = make_app()
    stack = PinnedAzStack(app, "Refusals", env=cdk.Environment(account="111111111111", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", availability_zones=AZS)
    yield stack, vpc


def _fleet(scope: tuple[Any, Any], **overrides: Any) -> Any:
    from cdk_neuron.serving import Ec2InferenceFleet

    return _build(Ec2InferenceFleet, scope, overrides)


def _endpoint(scope: tuple[Any, Any], **overrides: Any) -> Any:
    from cdk_neuron.serving import SageMakerInferenceFleet

    return _build(SageMakerInferenceFleet, scope, overrides)


def _build(fleet_class: Any, scope: tuple[Any, Any], overrides: dict[str, Any]) -> Any:
    from cdk_neuron.serving import ModelSpec

    stack, vpc = scope
    props: dict[str, Any] = {
        "vpc": vpc,
        "model": ModelSpec(
            model_id="meta-llama/Llama-3.1-8B-Instruct",
            artifact_uri="s3://my-models/llama-3.1-8b/neuron",
            parameters=8_000_000_000,
        ),
    }
    props.update(overrides)
    return fleet_class(stack, f"Fleet{next(_ids)}", **props)


def test_a_model_that_does_not_fit_names_an_instance_that_would(scope: tuple[Any, Any]) -> None:
    from cdk_neuron.serving import ModelSpec

    big = ModelSpec(model_id="meta-llama/Llama-3.1-70B-Instruct", parameters=70_000_000_000)
    with pytest.raises(
        NeuronConfigError, match=r"instance_type='inf2.24xlarge': model needs .* inf2.48xlarge with TP 24"
    ):
        _fleet(scope, model=big, instance_type="inf2.24xlarge")
    # On inf2.xlarge its 130 GiB of weights do not even fit the host memory that loads them.
    with pytest.raises(
        NeuronConfigError,
        match=r"instance_type='inf2.xlarge': 130.4 GiB of weights .*host memory.* inf2.48xlarge",
    ):
        _fleet(scope, model=big, instance_type="inf2.xlarge")


def test_tp_above_the_neuron_cores_is_refused(scope: tuple[Any, Any]) -> None:
    from cdk_neuron.serving import ModelSpec

    spec = ModelSpec(model_id="org/model", parameters=8_000_000_000, tensor_parallel=8)
    with pytest.raises(NeuronConfigError, match=r"tensor_parallel=8: inf2.8xlarge has 2 NeuronCores"):
        _fleet(scope, model=spec, instance_type="inf2.8xlarge")


@pytest.mark.parametrize("instance_type", ["g5.xlarge", "p4d.24xlarge", "m7i.large"])
def test_non_neuron_instances_are_refused(scope: tuple[Any, Any], instance_type: str) -> None:
    with pytest.raises(
        NeuronConfigError, match=rf"instance_type='{instance_type}': not a Neuron instance type"
    ):
        _fleet(scope, instance_type=instance_type)


def test_zones_only_the_az_snapshot_omits_are_built_with_a_warning(scope: tuple[Any, Any]) -> None:
    """Review-24 finding 5: use1-az1 and use1-az3 are not in the AZ snapshot for inf2, the only AZ-level
    source: the fleet is built in them, each with a warning, instead of refused. (The refusal where both
    sources rule out the Region, and too few zones, are tested in test_serving_placement.)"""
    from cdk_neuron.serving.fleet import OFFERING_UNKNOWN_WARNING_ID

    ids = {"us-east-1a": "use1-az1", "us-east-1b": "use1-az3", "us-east-1c": "use1-az1"}
    fleet = _fleet(scope, availability_zone_ids=ids)
    warnings = [str(e.data) for e in fleet.node.metadata if e.type == "aws:cdk:warning"]
    unknown = [w for w in warnings if OFFERING_UNKNOWN_WARNING_ID in w]
    assert len(unknown) == 3 and all("it is the only AZ-level source" in w for w in unknown)


def test_production_needs_two_instances_to_spread_over_two_zones(scope: tuple[Any, Any]) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"min_capacity=1: spreading over 2 availability zones needs at least 2"
    ):
        _fleet(scope, min_availability_zones=2)


def test_warm_pool_with_spot_is_refused(scope: tuple[Any, Any]) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"warm_pool=True: EC2 Auto Scaling warm pools cannot be combined with Spot"
    ):
        _fleet(scope, warm_pool=True, spot=True)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"warm_pool_size": 1}, r"warm_pool_size=1: a pool size needs a warm pool: set warm_pool"),
        # The default bounds (min 1, max 2) leave room for one stopped instance.
        ({"warm_pool": True, "warm_pool_size": 2}, r"warm_pool_size=2: must be a whole number between 1 and "
         r"max_capacity - min_capacity \(1\)"),
        ({"warm_pool": True, "warm_pool_size": 0}, r"warm_pool_size=0: must be a whole number between 1"),
        ({"warm_pool": True, "warm_pool_size": True}, r"warm_pool_size=True: must be a whole number"),
        ({"warm_pool": True, "warm_pool_size": 1.0}, r"warm_pool_size=1.0: must be a whole number"),
        ({"warm_pool": True, "warm_pool_size": 1, "min_capacity": 2, "max_capacity": 2},
         r"warm_pool_size=1: .*\(0\).*; raise max_capacity first"),
    ],
)  # fmt: skip
def test_a_warm_pool_size_outside_what_the_fleet_may_add_is_refused(
    scope: tuple[Any, Any], props: dict[str, Any], message: str
) -> None:
    with pytest.raises(NeuronConfigError, match=message):
        _fleet(scope, **props)


def test_sagemaker_timeouts_beyond_the_limit_are_refused(scope: tuple[Any, Any]) -> None:
    with pytest.raises(
        NeuronConfigError,
        match=r"container_startup_health_check_timeout_seconds=5400: SageMaker allows at most 3600",
    ):
        _endpoint(scope, container_startup_health_check_timeout_seconds=5400)


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("warm_pool", True),
        ("warm_pool_size", 1),
        ("spot", True),
        ("target_requests_per_minute", 60),
        ("min_healthy_percentage", 50),
        ("node_metrics", None),
        ("certificate", None),
    ],
)
def test_ec2_only_options_do_not_exist_on_sagemaker(scope: tuple[Any, Any], prop: str, value: Any) -> None:
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{prop}'"):
        _endpoint(scope, **{prop: value})


def test_a_hub_token_does_not_exist_on_sagemaker(scope: tuple[Any, Any]) -> None:
    """SageMaker has no secret injection for model containers: the token would sit in plain text."""
    from aws_cdk import aws_secretsmanager as secretsmanager

    secret = secretsmanager.Secret.from_secret_name_v2(scope[0], "HubToken", "hf-token")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'hugging_face_token'"):
        _endpoint(scope, hugging_face_token=secret)


def test_engines_without_sagemaker_support_are_refused_there(scope: tuple[Any, Any]) -> None:
    from cdk_neuron.serving import ServingEngine

    with pytest.raises(
        NeuronConfigError, match=r"engine='vllm-neuron': this engine has no SageMaker serving"
    ):
        _endpoint(scope, engine=ServingEngine.vllm_neuron())


def test_trn2_ultraserver_is_not_a_sagemaker_type(scope: tuple[Any, Any]) -> None:
    with pytest.raises(NeuronConfigError, match=r"instance_type='trn2u.48xlarge': SageMaker hosting offers"):
        _endpoint(scope, instance_type="trn2u.48xlarge")


def test_capacity_bounds(scope: tuple[Any, Any]) -> None:
    # An EC2 fleet may idle at zero; a SageMaker endpoint always keeps one instance.
    with pytest.raises(NeuronConfigError, match=r"min_capacity=-1: must be a whole number >= 0"):
        _fleet(scope, min_capacity=-1)
    with pytest.raises(NeuronConfigError, match=r"min_capacity=0: must be a whole number >= 1"):
        _endpoint(scope, min_capacity=0)
    with pytest.raises(NeuronConfigError, match=r"max_capacity=1: must be a whole number >= 2"):
        _fleet(scope, min_capacity=2, max_capacity=1)
    with pytest.raises(NeuronConfigError, match=r"target_concurrency=0: must be greater than 0"):
        _fleet(scope, target_concurrency=0)


def test_a_load_balancer_needs_two_zones(scope: tuple[Any, Any]) -> None:
    from aws_cdk import aws_ec2 as ec2

    single = ec2.SubnetSelection(
        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, availability_zones=["us-east-1a"]
    )
    with pytest.raises(NeuronConfigError, match=r"vpc_subnets=.*at least two availability zones"):
        _fleet(scope, vpc_subnets=single)


def test_wrong_types_are_refused(scope: tuple[Any, Any]) -> None:
    with pytest.raises(NeuronConfigError, match=r"model='llama': pass a cdk_neuron.ModelSpec"):
        _fleet(scope, model="llama")
    with pytest.raises(NeuronConfigError, match=r"engine='vllm': use ServingEngine"):
        _fleet(scope, engine="vllm")


@pytest.mark.parametrize("which", ["ec2", "sagemaker"])
@pytest.mark.parametrize(
    ("props", "field"),
    [
        ({"max_capacity": 0}, "max_capacity"),
        ({"instance_type": "g5.xlarge"}, "instance_type"),
        ({"target_concurrency": -1}, "target_concurrency"),
        ({"measured_startup": {"boot_seconds": 60}}, "measured_startup"),
    ],
)
def test_an_error_names_the_construct_and_comes_before_any_resource(
    scope: tuple[Any, Any], which: str, props: dict[str, Any], field: str
) -> None:
    stack, _ = scope
    build = _fleet if which == "ec2" else _endpoint
    with pytest.raises(NeuronConfigError, match=rf"^Refusals/Fleet(\d+): {field}=") as raised:
        build(scope, **props)
    assert raised.value.construct is not None and raised.value.field == field
    refused = stack.node.find_child(raised.value.construct.split("/")[-1])
    assert refused.node.children == []  # nothing was created


@pytest.mark.parametrize(
    ("props", "field"),
    [
        # Heartbeats hold a launch up to the hook's global timeout (issue 25); CloudFormation's 12 h
        # creation wait is the lower limit: 43,200 s (timeouts.STARTUP_MAX).
        ({"startup_timeout_seconds": 43_201}, "startup_timeout_seconds"),
        ({"startup_timeout_seconds": 0}, "startup_timeout_seconds"),
        ({"data_volume_gib": 0}, "data_volume_gib"),
        ({"data_volume_gib": 20_000}, "data_volume_gib"),
        ({"min_healthy_percentage": 101}, "min_healthy_percentage"),
        ({"target_requests_per_minute": 0}, "target_requests_per_minute"),
        ({"node_metrics": "prod"}, "node_metrics"),
    ],
)
def test_ec2_options_are_validated(scope: tuple[Any, Any], props: dict[str, Any], field: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^Refusals/Fleet\d+: {field}="):
        _fleet(scope, **props)


@pytest.mark.parametrize(
    ("props", "field"),
    [
        ({"variant_name": "all traffic"}, "variant_name"),
        ({"model_data_download_timeout_seconds": 0}, "model_data_download_timeout_seconds"),
        (
            {"container_startup_health_check_timeout_seconds": 1.5},
            "container_startup_health_check_timeout_seconds",
        ),
        ({"volume_size_gb": 600}, "volume_size_gb"),
    ],
)
def test_sagemaker_options_are_validated(scope: tuple[Any, Any], props: dict[str, Any], field: str) -> None:
    with pytest.raises(NeuronConfigError, match=rf"^Refusals/Fleet\d+: {field}="):
        _endpoint(scope, **props)


def test_an_environment_agnostic_stack_is_refused_clearly() -> None:
    """Not jsii's RuntimeError RegionRequiredEnableBvAccess from deep inside the load balancer."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from cdk_neuron.serving import Ec2InferenceFleet, ModelSpec

    stack = cdk.Stack(cdk.App(), "Agnostic")
    with pytest.raises(
        NeuronConfigError, match=r"^Agnostic/Fleet: region='unresolved': .*env=cdk.Environment"
    ):
        Ec2InferenceFleet(
            stack,
            "Fleet",
            vpc=ec2.Vpc(stack, "Vpc"),
            model=ModelSpec(model_id="org/m", artifact_uri="s3://my-models/llama/", parameters=8e9),
        )


# --------------------------------------------------------------------------------------------
# An artifact compiled for something else (its cdk-neuron-artifact.json)
# --------------------------------------------------------------------------------------------

_MANIFEST_FIELDS = [
    ({"shape__batch_size": 4}, "artifact_manifest.shape.batch_size", r"=1: the artifact was compiled for batch_size 4"),
    ({"shape__sequence_length": 2048}, "artifact_manifest.shape.sequence_length", r"=4096: the artifact was compiled for sequence_length 2048"),
    ({"shape__tensor_parallel": 8}, "artifact_manifest.shape.tensor_parallel", r"=2: the artifact is sharded for TP 8"),
    ({"shape__dtype": "fp16"}, "artifact_manifest.shape.dtype", r"='bf16': the artifact was compiled in fp16"),
    ({"engine__name": "vllm-neuron"}, "artifact_manifest.engine", r"='optimum-neuron': the artifact was exported for vllm-neuron"),
    ({"engine__version": "0.4.4"}, "artifact_manifest.engine.version", r"='0.4.5': the artifact was exported by optimum-neuron 0.4.4"),
    ({"artifact_uri": "s3://my-models/other/"}, "artifact_manifest.model.artifact_uri", r"=.s3://my-models/llama-3.1-8b/neuron.: the manifest describes another artifact"),
]  # fmt: skip


@pytest.mark.parametrize("backend", ["ec2", "sagemaker"])
@pytest.mark.parametrize(("replace", "field", "needle"), _MANIFEST_FIELDS)
def test_a_fleet_refuses_an_artifact_compiled_for_something_else(
    scope: tuple[Any, Any], backend: str, replace: dict[str, Any], field: str, needle: str
) -> None:
    from test_artifact_manifest import manifest_data, parse

    build = _fleet if backend == "ec2" else _endpoint
    manifest = parse(manifest_data(**replace))
    with pytest.raises(NeuronConfigError, match=rf"^Refusals/Fleet\d+: {field}{needle}") as raised:
        build(scope, artifact_manifest=manifest)
    assert not isinstance(raised.value, NeuronConfigErrors)  # one field differs: one error


@pytest.mark.parametrize("backend", ["ec2", "sagemaker"])
def test_a_fleet_serves_the_artifact_its_manifest_describes(scope: tuple[Any, Any], backend: str) -> None:
    from test_artifact_manifest import manifest_data, parse

    build = _fleet if backend == "ec2" else _endpoint
    fleet = build(scope, artifact_manifest=parse(manifest_data()))
    assert fleet.plan.tensor_parallel == 2


def test_a_fleet_names_every_mismatch_at_once(scope: tuple[Any, Any]) -> None:
    from test_artifact_manifest import manifest_data, parse

    manifest = parse(
        manifest_data(
            artifact_uri="s3://my-models/llama-3.1-8b/neuron",
            shape__batch_size=4,
            shape__dtype="fp16",
            engine__version="0.4.4",
        )
    )
    with pytest.raises(NeuronConfigErrors) as raised:
        _fleet(scope, artifact_manifest=manifest)
    assert [(e.construct is not None, e.field) for e in raised.value.errors] == [
        (True, "artifact_manifest.shape.batch_size"),
        (True, "artifact_manifest.shape.dtype"),
        (True, "artifact_manifest.engine.version"),
    ]


def test_the_sagemaker_fleet_compares_the_image_sagemaker_runs(scope: tuple[Any, Any]) -> None:
    """TGI on SageMaker runs the Hugging Face TGI DLC, not the EC2 image: an artifact compiled in the
    EC2 image is refused there (its tag names no SDK, so the image itself must match)."""
    from test_artifact_manifest import manifest_data, parse

    from cdk_neuron.serving import ServingEngine

    ec2_image = {"name": "tgi", "version": None, "image": "text-generation-inference:3.2.3-neuron"}
    manifest = parse(manifest_data(engine=ec2_image, neuron__sdk=None))
    _fleet(scope, engine=ServingEngine.tgi(), artifact_manifest=manifest)
    with pytest.raises(
        NeuronConfigError, match=r"artifact_manifest.image='huggingface-pytorch-tgi-inference:2.5.1-"
    ):
        _endpoint(scope, engine=ServingEngine.tgi(), artifact_manifest=manifest)


def test_a_manifest_must_be_an_artifact_manifest(scope: tuple[Any, Any]) -> None:
    with pytest.raises(
        NeuronConfigError, match=r"artifact_manifest='m.json': pass cdk_neuron.serving.ArtifactManifest"
    ):
        _fleet(scope, artifact_manifest="m.json")
