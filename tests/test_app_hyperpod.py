"""The app's third training engine: cdk.json ``training.engine: "hyperpod"``."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
from app_assembly import shipped_environments
from aws_cdk.assertions import Template
from test_config import minimal_env

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors
from cdk_support import make_app, nag_violations
from stacks.app_builder import build_app
from stacks.config import load_environments

PLAN_ARN = "arn:aws:sagemaker:us-east-1:111111111111:training-plan/trn1-week"


def _hyperpod(env: dict[str, Any], package: str, **training: Any) -> dict[str, Any]:
    """``env`` on engine hyperpod, with a NAT (the lifecycle script installs Enroot and Pyxis)."""
    env = copy.deepcopy(env)
    env["training"]["engine"] = "hyperpod"
    network = env.setdefault("network", {})
    network["nat_gateways"] = max(1, network.get("nat_gateways", 0))
    env["training"]["efs_utils_package"] = package
    env["training"].update(training)
    return env


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("efs") / "amazon-efs-utils_2.3.1_amd64.deb"
    path.write_bytes(b"stand-in for the package")
    return str(path)


def test_dev_builds_a_hyperpod_cluster_with_no_workers_running(package: str) -> None:
    environments = shipped_environments()
    environments["dev"] = _hyperpod(environments["dev"], package)
    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    try:
        app = make_app(environments=environments, env="dev")
        (stage,) = build_app(app)
    finally:
        if saved is not None:
            os.environ["CDK_DEFAULT_ACCOUNT"] = saved
    template = Template.from_stack(stage.training).to_json()
    clusters = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster"]
    assert len(clusters) == 1
    groups = {g["InstanceGroupName"]: g for g in clusters[0]["Properties"]["InstanceGroups"]}
    assert groups["trn"]["InstanceCount"] == 0  # dev: only the controller bills
    assert groups["controller"]["InstanceCount"] == 1
    assert not [r for r in template["Resources"].values() if r["Type"].startswith("AWS::Batch::")]
    outputs = set(template.get("Outputs", {}))
    assert {"HyperPodClusterArn", "HyperPodClusterName", "CheckpointFileSystemId"} <= outputs
    monitoring = Template.from_stack(stage.monitoring).to_json()
    assert "AWS::CloudWatch::Dashboard" in {r["Type"] for r in monitoring["Resources"].values()}
    assert nag_violations(stage.training) == []


def test_other_environments_run_max_nodes_workers_and_take_a_training_plan(package: str) -> None:
    env = _hyperpod(minimal_env(), package, capacity={"type": "training-plan", "training_plan_arn": PLAN_ARN})
    config = load_environments({"qa": env})["qa"]
    assert config.training.worker_count == 2
    assert config.training.capacity.training_plan_arn == PLAN_ARN
    assert config.training.efs_utils_release == "22.04"  # the HyperPod Slurm image's (hyperpod_facts)
    # The job image means what it means on Batch: every job step runs in it.
    assert config.training.job_image == minimal_env()["training"]["job_image"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"job_image": None}, r"training.job_image"),
        ({"efs_utils_release": "22.04.5"}, r"training.efs_utils_release='22.04.5': give the Ubuntu release efs_utils_package was built on, as /etc/os-release's VERSION_ID, e.g. '22.04'"),
        ({"job_image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/x@sha256:" + "a" * 64}, r"training.job_image='763104351884.dkr.ecr.us-east-1.amazonaws.com/x@sha256:a+': HyperPod runs the image with Enroot 3.5.0.*no digest: pin the image by tag"),
        ({"efs_utils_package": None}, r"training.efs_utils_package=None: required with engine hyperpod.*build-deb.sh"),
        ({"capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}}, r"capacity.type='capacity-block'.*no capacity-reservation field"),
        ({"worker_count": 3}, r"training.worker_count=3: use 0 to max_nodes \(2\)"),
        ({"instance_type": "trn1.2xlarge", "max_nodes": 1, "worker_count": 1, "plan": {"nodes": 1, "tensor_parallel": 2}}, r"instance_type='trn1.2xlarge': HyperPod runs"),
    ],
)  # fmt: skip
def test_hyperpod_refusals(package: str, change: dict[str, Any], message: str) -> None:
    env = _hyperpod(minimal_env(), package)
    for key, value in change.items():
        if value is None:
            env["training"].pop(key)
        else:
            env["training"][key] = value
    with pytest.raises((NeuronConfigError, NeuronConfigErrors), match=message):
        load_environments({"qa": env})


def test_hyperpod_without_a_nat_is_refused_naming_the_engine_and_the_fix(package: str) -> None:
    env = _hyperpod(minimal_env(), package)
    env["network"]["nat_gateways"] = 0
    with pytest.raises(
        (NeuronConfigError, NeuronConfigErrors),
        match=r"training.engine='hyperpod': with network.nat_gateways 0 the HyperPod nodes cannot install what "
        r"runs the job image: .*github.com.*Ubuntu archive.*Set network.nat_gateways to 1",
    ):
        load_environments({"qa": env})


def test_other_engines_refuse_hyperpod_keys_and_training_plans(tmp_path: Path) -> None:
    env = minimal_env()
    env["training"]["worker_count"] = 0
    env["training"]["capacity"] = {"type": "training-plan", "training_plan_arn": PLAN_ARN}
    with pytest.raises(NeuronConfigErrors) as raised:
        load_environments({"qa": env})
    text = str(raised.value)
    assert "training.worker_count=0: only the hyperpod engine takes it" in text
    env["training"].pop("worker_count")
    env["training"]["efs_utils_release"] = "22.04"
    with pytest.raises(
        (NeuronConfigError, NeuronConfigErrors),
        match=r"training.efs_utils_release='22.04': only the hyperpod engine takes it",
    ):
        load_environments({"qa": env})
    assert "a SageMaker training plan serves only HyperPod" in text


def test_cost_shows_the_standing_cluster_instead_of_scaling_to_zero(package: str) -> None:
    from cdk_neuron.cli.cost import idle
    from cdk_neuron.cli.pricing import PriceBook

    environments = shipped_environments()
    environments["dev"] = _hyperpod(environments["dev"], package)
    config = load_environments({"dev": environments["dev"]})["dev"]
    from stacks.config import deployment

    lines = idle(deployment(config), PriceBook())
    (cluster,) = [line for line in lines if line.item == "HyperPod cluster (standing)"]
    assert cluster.quantity == "1 x ml.m5.xlarge (controller) + 0 x ml.trn1.32xlarge, always on"
    assert cluster.usd_per_hour is None
    assert "does not scale to zero" in cluster.basis
    assert not any("scales to zero" in line.basis and "training" in line.item for line in lines)


def test_hyperpod_nodes_reach_what_their_programs_call_and_ssm(package: str) -> None:
    from stacks.config import node_destinations, unreachable

    environments = shipped_environments()
    environments["dev"] = _hyperpod(environments["dev"], package)
    env = load_environments(environments)["dev"]
    destinations = node_destinations(env)["training node"]
    services = {d.service for d in destinations}
    # The EC2 engines' node set-up (topology, lifecycle hooks, signals) and publisher do not run there.
    assert not services & {"ec2", "autoscaling", "cloudformation", "monitoring", "ecs"}
    assert {"ssm", "ssmmessages", "ec2messages"} <= services
    # The job image: Enroot and Pyxis from the internet, the image from ECR (its login in the script).
    internet = {d.service for d in destinations if d.route == "internet"}
    # github.com and where it redirects downloads; the Ubuntu archive and the image's other apt source.
    assert internet == {
        "github.com",
        "codeload.github.com",
        "release-assets.githubusercontent.com",
        "objects.githubusercontent.com",
        "ec2.archive.ubuntu.com",
        "security.ubuntu.com",
    }
    assert {"ecr.api", "ecr.dkr", "s3"} <= services
    assert any(
        "on-init-complete.sh" in d.caller and "aws ecr get-login-password" in d.caller for d in destinations
    )
    assert unreachable(env) == []
