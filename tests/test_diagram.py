"""The architecture picture is generated from the synthesized app and shows how the pieces connect
(rough edge 13): the AZs by ID, the training nodes in their placement group in the training AZ, the
request path through the load balancer, the data paths, EFA, and where alarms go."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from app_assembly import SynthesizedApp, shipped_environments, synthesized_app

from cdk_neuron import catalog
from cdk_support import REPO_ROOT
from tools.diagram import Topology, load_stacks, render_svg, topology


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


@pytest.fixture(scope="module")
def dev(built: SynthesizedApp) -> Topology:
    return topology(load_stacks(built.outdir, "dev"))


def test_the_topology_is_read_from_the_templates(dev: Topology) -> None:
    shipped = shipped_environments()["dev"]
    assert (dev.region, dev.zones, dev.vpc_cidr) == (
        shipped["region"],
        shipped["az_ids"],
        shipped["network"]["cidr"],
    )
    training = dev.training
    assert training is not None
    instance = catalog.get_instance(shipped["training"]["instance_type"])
    assert (training.engine, training.instance_type, training.max_nodes) == (
        "Batch", instance.name, shipped["training"]["max_nodes"],
    )  # fmt: skip
    assert training.zones == shipped["az_ids"][:1] and training.placement_group
    assert training.efa_per_node == instance.efa_interfaces
    # Checkpoints: One Zone, in the training AZ, backed up; dev's one NAT instance sits in the first AZ.
    assert (dev.checkpoint_zones, dev.one_zone, dev.backup) == (shipped["az_ids"][:1], True, True)
    assert dev.nat == {shipped["az_ids"][0]: f"NAT instance {shipped['network']['nat_instance_type']}"}
    assert (dev.s3_gateway, dev.interface_endpoints, dev.compile_cache) == (True, 0, True)
    serving = dev.serving
    assert serving is not None
    assert (serving.kind, serving.zones, serving.min_capacity, serving.max_capacity) == (
        "ec2", shipped["az_ids"], shipped["serving"]["min_capacity"], shipped["serving"]["max_capacity"],
    )  # fmt: skip
    assert (serving.front, serving.target_port, serving.clients) == (
        "internal ALB, HTTP :80", 8080, shipped["network"]["cidr"],
    )  # fmt: skip
    assert dev.model_source == shipped["serving"]["model"]["artifact_uri"]
    assert dev.alarms >= 11 and dev.topic and dev.dashboard


def test_a_sagemaker_environment_is_read_too(built: SynthesizedApp) -> None:
    staging = topology(load_stacks(built.outdir, "staging"))
    assert staging.serving is not None and staging.serving.kind == "sagemaker"
    assert staging.serving.instance_type.startswith("ml.inf2.") and staging.serving.isolated
    assert staging.checkpoint_zones == staging.zones and not staging.one_zone  # regional EFS
    assert "SageMaker endpoint (InvokeEndpoint)" in render_svg(staging)


def test_the_picture_draws_the_paths_between_the_pieces(dev: Topology) -> None:
    svg = render_svg(dev)
    paths = re.findall(r'marker-end="url\(#(\w+)\)"', svg)
    legend = 1  # each path's sample line in the legend
    # Requests: clients -> load balancer, and the load balancer -> the instances in each AZ.
    assert paths.count("request") == legend + 1 + len(dev.zones)
    # Data: nodes -> EFS, nodes -> endpoint -> cache, instances -> endpoint -> artifacts, EFS -> backup.
    assert paths.count("data") == legend + 6
    assert paths.count("efa") == legend + 1 and paths.count("signal") == legend + 1
    for zone in dev.zones:
        assert f">AZ {zone}" in svg
    assert f">AZ {dev.zones[0]} - training AZ<" in svg and ">cluster placement group<" in svg


def test_make_diagram_writes_the_picture(built: SynthesizedApp, tmp_path: Path) -> None:
    out = tmp_path / "architecture.svg"
    subprocess.run(
        ["make", "--no-print-directory", "diagram", f"DIAGRAM={out}", f"DIAGRAM_ASSEMBLY={built.outdir}"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    assert out.read_text() == (REPO_ROOT / "docs" / "architecture.svg").read_text()


def test_committed_picture_matches_the_code(dev: Topology) -> None:
    """docs/architecture.svg must be what `make diagram` draws today (refresh it when this fails)."""
    assert render_svg(dev) == (REPO_ROOT / "docs" / "architecture.svg").read_text()
