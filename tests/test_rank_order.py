"""The topology-aware rank order (node_programs/files/training/rank_order.py), as pure Python.

Fixtures under ``tests/fixtures/topology`` have the shape of DescribeInstanceTopology answers
(``Instances[].InstanceId, InstanceType, NetworkNodes, CapacityBlockId``, API reference
"InstanceTopology"): trn1 nodes under two spines, two Trn2 UltraServers handed out interleaved, one
Trn3 Gen1 UltraServer, and a Trn3 Gen2 UltraServer whose CapacityBlockId is still propagating. The
properties are checked with hypothesis over generated topologies and adversarial input orders.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdk_neuron.node_programs import FILES_DIR

FIXTURES = Path(__file__).parent / "fixtures" / "topology"
PROPERTIES = settings(max_examples=300, deadline=None)


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rank_order", FILES_DIR / "training" / "rank_order.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rank_order"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ro = _load()


def nodes_of(fixture: str, order: Callable[[list[Any]], list[Any]] = list) -> list[Any]:
    entries = json.loads((FIXTURES / fixture).read_text())["Instances"]
    return [
        ro.node_from_record({"index": i, "address": f"10.0.0.{i + 1}", "topology": entry})
        for i, entry in enumerate(order(entries))
    ]


def groups(order: list[Any], size: int) -> list[list[Any]]:
    return [order[i : i + size] for i in range(0, len(order), size)]


# ---------------------------------------------------------------------------------------------
# Recorded shapes
# ---------------------------------------------------------------------------------------------


def test_trn1_nodes_under_one_spine_are_neighbours() -> None:
    order = ro.order_nodes(nodes_of("trn1-4-nodes.json"))
    # Node 1 sits under the other spine: it goes to one end, the three under the first spine stay together.
    assert 1 in (order[0].index, order[-1].index)
    assert ro.spine_changes(order) == 1
    # Within the spine, the two on the same leaf (nodes 0 and 3 of the fixture) are adjacent.
    positions = [n.index for n in order]
    assert abs(positions.index(0) - positions.index(3)) == 1


def test_trn2u_two_ultraservers_interleaved_by_batch_are_regrouped() -> None:
    nodes = nodes_of("trn2u-2-ultraservers.json")
    assert [n.capacity_block_id for n in nodes][:2] != [nodes[0].capacity_block_id] * 2  # interleaved
    order = ro.order_nodes(nodes, group_instances=4, ultraserver=True)
    for group in groups(order, 4):
        assert len({n.capacity_block_id for n in group}) == 1
    # TP 128 (2 instances) fits too.
    for group in groups(ro.order_nodes(nodes, group_instances=2, ultraserver=True), 2):
        assert len({n.capacity_block_id for n in group}) == 1


def test_trn2u_a_group_wider_than_the_ultraservers_allow_is_refused() -> None:
    # Six of the eight nodes: 3 in each UltraServer, but each TP group needs 2 of one UltraServer.
    nodes = nodes_of("trn2u-2-ultraservers.json")[:6]
    with pytest.raises(
        ro.TopologyError, match=r"each TP x EP group needs 2 instances of one UltraServer.*holds 3"
    ):
        ro.order_nodes(nodes, group_instances=2, ultraserver=True)


def test_trn3_gen1_one_ultraserver_without_network_nodes() -> None:
    order = ro.order_nodes(nodes_of("trn3-gen1-1-ultraserver.json"), group_instances=4, ultraserver=True)
    assert len({n.capacity_block_id for n in order}) == 1
    assert sorted(n.index for n in order) == [0, 1, 2, 3]


def test_trn3_gen2_missing_capacity_block_ids_refuse_a_spanning_plan() -> None:
    nodes = nodes_of("trn3-gen2-propagating.json")
    with pytest.raises(ro.TopologyError, match=r"report no CapacityBlockId.*eventually"):
        ro.order_nodes(nodes, group_instances=36, ultraserver=True)
    # A plan whose groups stay inside one server needs no UltraServer id: it orders what it knows.
    assert len(ro.order_nodes(nodes, group_instances=1, ultraserver=True)) == 36


def test_nodes_without_topology() -> None:
    blind = [ro.Node(index=i, address=f"10.0.0.{i}") for i in (2, 0, 1)]
    assert [n.index for n in ro.order_nodes(blind)] == [0, 1, 2]  # the scheduler's order
    with pytest.raises(ro.TopologyError, match=r"have no EC2 topology.*refusing to start"):
        ro.order_nodes(blind, group_instances=2, ultraserver=True)


def test_groups_spanning_instances_need_ultraserver_servers() -> None:
    with pytest.raises(ro.TopologyError, match=r"no UltraServer servers"):
        ro.order_nodes(nodes_of("trn1-4-nodes.json"), group_instances=2)


def test_duplicates_are_refused() -> None:
    node = nodes_of("trn1-4-nodes.json")[0]
    with pytest.raises(ro.TopologyError, match=r"index\(es\) \[0\]"):
        ro.order_nodes([node, node])
    twin = ro.Node(index=9, address="10.0.0.9", instance_id=node.instance_id)
    with pytest.raises(ro.TopologyError, match=r"reported by more than one node"):
        ro.order_nodes([node, twin])


def test_instance_topology_picks_the_instance() -> None:
    document = json.loads((FIXTURES / "trn1-4-nodes.json").read_text())
    first = document["Instances"][0]["InstanceId"]
    assert ro.instance_topology(document, first)["InstanceId"] == first
    assert ro.instance_topology(document) is None  # four entries and no id: ambiguous
    assert ro.instance_topology({"Instances": [document["Instances"][1]]})["InstanceId"] != first
    assert ro.instance_topology("garbage") is None


@pytest.mark.parametrize(
    "record",
    [None, {"index": -1, "address": "a"}, {"index": True, "address": "a"}, {"index": 0, "address": ""},
     {"index": 0, "address": "a", "topology": {"InstanceId": 5}},
     {"index": 0, "address": "a", "topology": {"InstanceId": "i-1", "NetworkNodes": [1]}}],
)  # fmt: skip
def test_malformed_records_are_refused(record: Any) -> None:
    with pytest.raises(ValueError):
        ro.node_from_record(record)


# ---------------------------------------------------------------------------------------------
# Properties over generated topologies
# ---------------------------------------------------------------------------------------------


@st.composite
def topologies(draw: st.DrawFn) -> tuple[list[Any], int]:
    """UltraServers of 4 servers spread over spines and leaves, a job on some of their servers, and
    the group width of a plan; the nodes come in an arbitrary (adversarial) order."""
    group = draw(st.sampled_from([1, 2, 4]))
    servers = draw(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=6))
    spines = draw(st.integers(min_value=1, max_value=3))
    nodes = []
    for u, count in enumerate(servers):
        spine = draw(st.integers(min_value=0, max_value=spines - 1))
        for s in range(count):
            leaf = draw(st.integers(min_value=0, max_value=1))
            nodes.append(
                {
                    "InstanceId": f"i-{u:02d}{s:02d}",
                    "InstanceType": "trn2u.48xlarge",
                    "CapacityBlockId": f"cb-{u:04d}",
                    "NetworkNodes": [f"nn-spine{spine}", f"nn-mid{spine}", f"nn-leaf{spine}{leaf}"],
                }
            )
    shuffled = draw(st.permutations(nodes))
    records = [
        ro.node_from_record({"index": i, "address": f"10.0.{i // 250}.{i % 250}", "topology": t})
        for i, t in enumerate(shuffled)
    ]
    return records, group


def _allowed(nodes: list[Any], group: int) -> bool:
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.capacity_block_id] = counts.get(n.capacity_block_id, 0) + 1
    return all(c % group == 0 for c in counts.values())


@PROPERTIES
@given(topologies())
def test_every_group_lies_in_one_domain_whenever_the_topology_allows_it(case: tuple[list[Any], int]) -> None:
    nodes, group = case
    if not _allowed(nodes, group):
        with pytest.raises(ro.TopologyError, match="refusing to start"):
            ro.order_nodes(nodes, group_instances=group, ultraserver=True)
        return
    order = ro.order_nodes(nodes, group_instances=group, ultraserver=True)
    assert sorted(n.index for n in order) == sorted(n.index for n in nodes)  # a permutation
    for chunk in groups(order, group):
        assert len({n.capacity_block_id for n in chunk}) == 1


@PROPERTIES
@given(topologies(), st.randoms(use_true_random=False))
def test_order_does_not_depend_on_the_order_nodes_report_in(case: tuple[list[Any], int], rnd: Any) -> None:
    nodes, _ = case
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    first = ro.order_nodes(nodes, ultraserver=True)
    assert [n.instance_id for n in ro.order_nodes(shuffled, ultraserver=True)] == [
        n.instance_id for n in first
    ]


@PROPERTIES
@given(topologies())
def test_domains_are_contiguous_and_spines_are_crossed_as_rarely_as_possible(
    case: tuple[list[Any], int],
) -> None:
    nodes, _ = case
    order = ro.order_nodes(nodes, ultraserver=True)
    # Each UltraServer's nodes are one run: neighbours in rank are neighbours in hardware.
    runs = [
        n.capacity_block_id
        for i, n in enumerate(order)
        if i == 0 or order[i - 1].capacity_block_id != n.capacity_block_id
    ]
    assert len(runs) == len(set(runs))
    # Every UltraServer sits under one spine here, so each spine is one run too: a DP ring crosses
    # the fewest spines it can (one change per additional spine).
    spines = {n.network_nodes[0] for n in nodes}
    assert ro.spine_changes(order) == len(spines) - 1


# ---------------------------------------------------------------------------------------------
# Agreement over loopback
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_nodes_agree_on_one_order_through_the_main_node() -> None:
    nodes = nodes_of("trn2u-2-ultraservers.json")
    nodes = [ro.Node(**{**n.__dict__, "address": "127.0.0.1"}) for n in nodes]
    port = _free_port()
    answers: dict[int, Any] = {}

    def run(node: Any) -> None:
        if node.index == 0:
            answers[0] = ro.serve(
                node, nnodes=8, bind="127.0.0.1", port=port, timeout=30, group_instances=4, ultraserver=True
            )
        else:
            answers[node.index] = ro.join(node, main_address="127.0.0.1", port=port, timeout=30)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(answers) == list(range(8))
    orders = {tuple(n.index for n in order) for order in answers.values()}
    assert len(orders) == 1  # everyone got the same order
    for chunk in groups(answers[0], 4):
        assert len({n.capacity_block_id for n in chunk}) == 1


def test_a_refusal_reaches_every_node() -> None:
    nodes = [
        ro.Node(**{**n.__dict__, "address": "127.0.0.1"}) for n in nodes_of("trn2u-2-ultraservers.json")[:6]
    ]
    port = _free_port()
    errors: dict[int, str] = {}

    def run(node: Any) -> None:
        try:
            if node.index == 0:
                ro.serve(
                    node,
                    nnodes=6,
                    bind="127.0.0.1",
                    port=port,
                    timeout=30,
                    group_instances=4,
                    ultraserver=True,
                )
            else:
                ro.join(node, main_address="127.0.0.1", port=port, timeout=30)
        except ro.TopologyError as error:
            errors[node.index] = str(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(errors) == list(range(6))
    assert all("needs 4 instances of one UltraServer" in e for e in errors.values())


def test_main_node_gives_up_when_nodes_do_not_report() -> None:
    node = ro.Node(index=0, address="127.0.0.1")
    with pytest.raises(ro.TopologyError, match=r"only node\(s\) \[0\] of 2 reported"):
        ro.serve(
            node,
            nnodes=2,
            bind="127.0.0.1",
            port=_free_port(),
            timeout=1,
            group_instances=1,
            ultraserver=False,
        )
