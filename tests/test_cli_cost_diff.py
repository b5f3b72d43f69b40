"""``cost --diff OLD NEW``: what a change to the app adds per hour and per month, offline.

Two hand-written cloud assemblies of one app: the new one doubles the training cluster's
max_nodes and adds a NAT gateway, so a pull request would show exactly those lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from assembly_writer import serving_record, training_record, write_manifest, write_stack

from cdk_neuron import catalog
from cdk_neuron.cli.main import main

TRN = catalog.ON_DEMAND_PRICES["trn1.32xlarge"].usd_per_hour
NAT = (
    catalog.SERVICE_PRICES["nat_gateway_hour"].usd_per_hour
    + catalog.SERVICE_PRICES["public_ipv4_hour"].usd_per_hour
)


def app(folder: Path, *, max_nodes: int, nat_gateways: int, fleet: bool = True) -> str:
    resources = {f"Nat{i}": {"Type": "AWS::EC2::NatGateway", "Properties": {}} for i in range(nat_gateways)}
    records: dict[str, Any] = {"/Ml/Cluster": training_record(max_nodes=max_nodes)}
    if fleet:
        records["/Ml/Fleet"] = serving_record()
    write_manifest(folder, {"Ml": write_stack(folder, "Ml", resources=resources, records=records)})
    return str(folder)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["cost", "--diff", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_change_per_line_and_in_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = app(tmp_path / "old", max_nodes=2, nat_gateways=1)
    new = app(tmp_path / "new", max_nodes=4, nat_gateways=2)
    code, doc = run(capsys, old, new)
    assert code == 0 and doc["command"] == "cost-diff"
    (env,) = doc["environments"]
    assert (env["name"], env["status"]) == ("us-east-1", "changed")
    full = {line["item"]: line for line in env["full_scale"]["lines"]}
    assert set(full) == {"training nodes (max_nodes)", "NAT gateways", "public IPv4 addresses"}
    training = full["training nodes (max_nodes)"]
    assert (training["old_quantity"], training["new_quantity"]) == ("2 x trn1.32xlarge", "4 x trn1.32xlarge")
    assert training["change_usd_per_hour"] == pytest.approx(2 * TRN)
    assert training["change_usd_per_month"] == pytest.approx(2 * TRN * 730)
    idle = {line["item"] for line in env["idle"]["lines"]}
    assert idle == {"NAT gateways", "public IPv4 addresses"}  # training scales to zero when idle
    assert doc["total"]["idle"]["change_usd_per_hour"] == pytest.approx(NAT)
    assert doc["total"]["full_scale"]["change_usd_per_hour"] == pytest.approx(2 * TRN + NAT)
    assert doc["summary"].startswith("Cost change: idle +$0.05/hour")

    assert main(["cost", "--diff", old, new, "-o", "text"]) == 0
    out = capsys.readouterr().out
    assert "us-east-1: full scale" in out and "+$43.00" in out
    assert out.rstrip().splitlines()[-1] == doc["summary"]


def test_added_removed_and_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = app(tmp_path / "old", max_nodes=2, nat_gateways=1, fleet=False)
    new = app(tmp_path / "new", max_nodes=2, nat_gateways=1)
    _, doc = run(capsys, old, new)
    items = [line["item"] for line in doc["environments"][0]["full_scale"]["lines"]]
    assert items == ["serving instances (max_capacity)"]
    _, doc = run(capsys, new, new)
    assert (
        doc["environments"][0]["status"] == "unchanged" and doc["total"]["idle"]["change_usd_per_hour"] == 0
    )
    assert main(["cost", "--diff", new, new]) == 0
    assert "Unchanged: us-east-1" in capsys.readouterr().out


def test_diff_is_offline_and_needs_two_assemblies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = app(tmp_path / "new", max_nodes=2, nat_gateways=1)
    assert main(["cost", "--diff", new, new, "--live-prices"]) == 2
    assert "cost --diff compares two cloud assemblies offline" in capsys.readouterr().err
    assert main(["cost", "--diff", new, str(tmp_path / "missing")]) == 2
    assert "holds no manifest.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["cost", "--diff", new])


def test_an_assembly_with_fewer_environments_removes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rough edge 6: main's cdk.out holds two environments; a pull request synthesized only one.
    The other is in one assembly only: listed, not priced as removed (a false saving)."""

    def stacks(folder: Path, *regions: str, max_nodes: int) -> str:
        artifacts = {
            f"Ml{i}": write_stack(
                folder,
                f"Ml{i}",
                environment=f"aws://111111111111/{region}",
                records={f"/Ml{i}/Cluster": training_record(max_nodes=max_nodes)},
            )
            for i, region in enumerate(regions)
        }
        write_manifest(folder, artifacts)
        return str(folder)

    old = stacks(tmp_path / "old", "us-east-1", "us-east-2", max_nodes=2)
    new = stacks(tmp_path / "new", "us-east-1", max_nodes=4)
    code, doc = run(capsys, old, new)
    assert code == 0
    assert {env["name"]: env["status"] for env in doc["environments"]} == {
        "us-east-1": "changed",
        "us-east-2": "only-in-old",
    }
    assert doc["total"]["full_scale"]["change_usd_per_hour"] == pytest.approx(2 * TRN)  # us-east-1's change
    assert main(["cost", "--diff", old, new, "-o", "text"]) == 0
    assert (
        "In one assembly only, not compared and not in the total: us-east-2 (old)" in capsys.readouterr().out
    )
    # Named, it is compared: removed, and its cost leaves the total.
    _, doc = run(capsys, old, new, "--env", "us-east-2")
    (gone,) = doc["environments"]
    assert gone["status"] == "removed" and doc["total"]["full_scale"]["change_usd_per_hour"] < 0


def test_a_bad_diff_folder_is_named_as_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rough edge 6: the error names --diff, the option the user gave, not --app."""
    new = app(tmp_path / "new", max_nodes=2, nat_gateways=1)
    assert main(["cost", "--diff", new, str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"cdk-neuron: --diff='{tmp_path / 'missing'}': holds no manifest.json")
        and "--app" not in err
    )


def test_two_bad_diff_folders_are_both_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_manifest(tmp_path / "empty", {})  # an assembly without a cdk-neuron workload
    assert main(["cost", "--diff", str(tmp_path / "missing"), str(tmp_path / "empty")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"cdk-neuron: --diff='{tmp_path / 'missing'}': holds no manifest.json")
    assert lines[1].startswith(f"--diff='{tmp_path / 'empty'}': records no cdk-neuron training cluster")
    assert len(lines) == 2
