"""The architecture picture is generated from the synthesized app, and `make diagram` runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from app_assembly import SynthesizedApp, synthesized_app

from cdk_support import REPO_ROOT


@pytest.fixture(scope="session")
def built() -> SynthesizedApp:
    return synthesized_app()


def test_make_diagram_draws_every_stack_of_the_environment(built: SynthesizedApp, tmp_path: Path) -> None:
    out = tmp_path / "architecture.svg"
    subprocess.run(
        ["make", "--no-print-directory", "diagram", f"DIAGRAM={out}", f"DIAGRAM_ASSEMBLY={built.outdir}"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    svg = out.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for stack in ("Network", "Training", "Serving", "Monitoring"):
        assert f">{stack}</text>" in svg
    for label in (
        "Batch compute environment",
        "cluster placement group",
        "EFS checkpoint file system",
        "internal ALB",
    ):
        assert label in svg


def test_committed_picture_matches_the_code(built: SynthesizedApp, tmp_path: Path) -> None:
    """docs/architecture.svg must be what `make diagram` draws today (refresh it when this fails)."""
    from tools.diagram import load_stacks, render_svg

    drawn = render_svg("dev", load_stacks(built.outdir, "dev"))
    assert drawn == (REPO_ROOT / "docs" / "architecture.svg").read_text()
