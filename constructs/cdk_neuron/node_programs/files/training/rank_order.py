#!/usr/bin/env python3
"""cdk-neuron rank order: the nodes of a multi-node job agree on a node order from the EC2 topology.

Standard library only: it runs inside the job container (Neuron DLC images have python3, not
necessarily boto3 or instance credentials) and in the tests. The host wrote its own
DescribeInstanceTopology answer at boot (``training/node-setup.sh``, with the instance role); the
job definition mounts that file read-only into the container.

Order (:func:`order_nodes`): nodes are grouped by NeuronLink domain first (the UltraServer's
``CapacityBlockId`` on UltraServer types, else the instance itself), the domains and the nodes in
each are sorted by the network nodes above them (``NetworkNodes``, top of the tree first), so nodes
under one spine, then one leaf, are neighbours in rank. With ranks laid out ``[PP, DP, TP]`` and
``NPROC_PER_NODE`` ranks per node, every run of ``group_instances`` consecutive nodes then carries
whole TP x EP groups, and each of them lies inside one domain; when the nodes Batch gave the job do
not allow that (an UltraServer holding a number of the job's nodes that is not a multiple of
``group_instances``), :func:`order_nodes` refuses with :class:`TopologyError`.

Agreement (:func:`coordinate`): every node sends ``{"index", "address", "topology"}`` to the main
node (Batch node index 0) over TCP, one JSON line; the main node orders all of them once it has
``nnodes`` and answers each with the whole order (or the refusal). Every node prints its
``NODE_RANK`` and the ``MASTER_ADDR`` of rank 0 for the launcher (``training/launcher.sh``). A node
that does not report within ``--timeout`` (the peer-join budget of :mod:`cdk_neuron.timeouts`: child
nodes start after the main node, on instances that may still be booting and pulling the image) ends
the attempt with ``--lost-exit-code`` (75), which the job's retry rules retry; a refusal exits 3.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import socket
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

PROTOCOL = "cdk-neuron-rank-order/1"
MAX_LINE = 1 << 20


class TopologyError(Exception):
    """The nodes cannot be ordered so that the plan's groups fit their NeuronLink domains."""


class PeersMissing(TopologyError):
    """Not every node reported in time (a node was lost or never started): retryable, unlike a refusal."""


@dataclass(frozen=True)
class Node:
    """One node of the job: its Batch node index, address and EC2 topology (None when unknown)."""

    index: int
    address: str
    instance_id: str | None = None
    instance_type: str | None = None
    capacity_block_id: str | None = None
    network_nodes: tuple[str, ...] = ()

    @property
    def located(self) -> bool:
        return self.instance_id is not None

    def as_record(self) -> dict[str, Any]:
        topology = None
        if self.instance_id is not None:
            topology = {
                "InstanceId": self.instance_id,
                "InstanceType": self.instance_type,
                "CapacityBlockId": self.capacity_block_id,
                "NetworkNodes": list(self.network_nodes),
            }
        return {"index": self.index, "address": self.address, "topology": topology}


def instance_topology(document: Any, instance_id: str | None = None) -> dict[str, Any] | None:
    """The one instance entry of a DescribeInstanceTopology answer (``{"Instances": [...]}``).

    ``instance_id`` picks it when the answer holds several; None when the answer names no instance.
    """
    if not isinstance(document, dict):
        return None
    instances = document.get("Instances")
    if not isinstance(instances, list):
        return None
    entries = [e for e in instances if isinstance(e, dict) and isinstance(e.get("InstanceId"), str)]
    if instance_id is not None:
        entries = [e for e in entries if e["InstanceId"] == instance_id]
    return entries[0] if len(entries) == 1 else None


def node_from_record(record: Any) -> Node:
    """A :class:`Node` from what a node sends (:meth:`Node.as_record`); ValueError when malformed."""
    if not isinstance(record, dict):
        raise ValueError(f"a node record must be an object, got {record!r}")
    index, address, topology = record.get("index"), record.get("address"), record.get("topology")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"bad node index {index!r}")
    if not isinstance(address, str) or not address:
        raise ValueError(f"node {index}: bad address {address!r}")
    if topology is None:
        return Node(index, address)
    if not isinstance(topology, dict) or not isinstance(topology.get("InstanceId"), str):
        raise ValueError(f"node {index}: bad topology {topology!r}")
    nodes = topology.get("NetworkNodes") or []
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise ValueError(f"node {index}: bad NetworkNodes {nodes!r}")
    block = topology.get("CapacityBlockId")
    kind = topology.get("InstanceType")
    return Node(
        index=index,
        address=address,
        instance_id=topology["InstanceId"],
        instance_type=kind if isinstance(kind, str) else None,
        capacity_block_id=block if isinstance(block, str) and block else None,
        network_nodes=tuple(nodes),
    )


def _domain(node: Node, ultraserver: bool) -> str:
    if ultraserver and node.capacity_block_id is not None:
        return f"ultraserver {node.capacity_block_id}"
    return f"instance {node.instance_id}"


def order_nodes(nodes: Sequence[Node], *, group_instances: int = 1, ultraserver: bool = False) -> list[Node]:
    """The nodes in rank order (see the module docstring), or :class:`TopologyError`.

    ``group_instances``: instances one TP x EP group spans (``TrainingPlan.domain_group_instances``);
    above 1 every node needs its topology, and on UltraServer types its ``CapacityBlockId``.
    ``ultraserver``: the instance type is a server of an UltraServer (domains are Capacity Blocks).
    The answer does not depend on the order of ``nodes``.
    """
    if group_instances < 1:
        raise ValueError("group_instances must be at least 1")
    if not nodes:
        raise TopologyError("no nodes to order")
    indexes = Counter(n.index for n in nodes)
    repeated = sorted(i for i, count in indexes.items() if count > 1)
    if repeated:
        raise TopologyError(f"node index(es) {repeated} reported more than once")
    instances = Counter(n.instance_id for n in nodes if n.instance_id is not None)
    shared = sorted(i for i, count in instances.items() if count > 1)
    if shared:
        raise TopologyError(f"instance(s) {shared} reported by more than one node")
    blind = sorted(n.index for n in nodes if not n.located)
    if blind:
        if group_instances > 1:
            raise TopologyError(
                f"node(s) {blind} have no EC2 topology (DescribeInstanceTopology at boot failed or the type is "
                f"not supported), but the plan's groups span {group_instances} instances of one UltraServer: "
                "refusing to start rather than guess where they are"
            )
        # Nothing to order by: keep the scheduler's order, which is all any node knows.
        return sorted(nodes, key=lambda n: n.index)
    if group_instances > 1 and not ultraserver:
        raise TopologyError(
            f"the plan's groups span {group_instances} instances, but these instances are no UltraServer "
            "servers: no NeuronLink domain spans instances"
        )
    if group_instances > 1:
        missing = sorted(n.index for n in nodes if n.capacity_block_id is None)
        if missing:
            raise TopologyError(
                f"node(s) {missing} report no CapacityBlockId, so nothing says which UltraServer they are in; "
                f"the plan's groups span {group_instances} instances of one UltraServer (launch into an "
                "UltraServer Capacity Block, and retry if the instances have only just started: EC2 fills "
                "CapacityBlockId in eventually)"
            )
    domains: dict[str, list[Node]] = {}
    for node in nodes:
        domains.setdefault(_domain(node, ultraserver), []).append(node)
    for members in domains.values():
        members.sort(key=lambda n: (n.network_nodes, n.instance_id or "", n.index))
    if group_instances > 1:
        short = {d: len(m) for d, m in domains.items() if len(m) % group_instances}
        if short:
            described = ", ".join(f"{d} holds {count}" for d, count in sorted(short.items()))
            raise TopologyError(
                f"each TP x EP group needs {group_instances} instances of one UltraServer, but {described} of "
                f"the job's {len(nodes)} nodes (not a multiple of {group_instances}); refusing to start before "
                "any training step: resubmit so that the nodes fill whole groups (e.g. as many nodes as the "
                "UltraServer Capacity Blocks hold)"
            )
    # Domains under the same network nodes are neighbours: sort them by their members' smallest path.
    ordered = sorted(domains.items(), key=lambda item: (item[1][0].network_nodes, item[0]))
    return [node for _, members in ordered for node in members]


def spine_changes(nodes: Iterable[Node]) -> int:
    """How often consecutive nodes sit under different top-level network nodes (for the tests)."""
    tops = [n.network_nodes[0] if n.network_nodes else "" for n in nodes]
    return sum(1 for a, b in itertools.pairwise(tops) if a != b)


# ----------------------------------------------------------------------------------------------
# Agreement over TCP: the main node orders, every node learns its rank
# ----------------------------------------------------------------------------------------------


def _send(sock: socket.socket, payload: dict[str, Any]) -> None:
    sock.sendall((json.dumps(payload, sort_keys=True) + "\n").encode())


def _receive(sock: socket.socket) -> Any:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_LINE:
            raise ValueError("message too long")
    return json.loads(data.decode() or "null")


def serve(
    own: Node, *, nnodes: int, bind: str, port: int, timeout: float, group_instances: int, ultraserver: bool
) -> list[Node]:
    """Main node: collect ``nnodes`` records (its own included), order them, answer every node."""
    deadline = time.monotonic() + timeout
    peers: list[tuple[socket.socket, Node]] = []
    nodes = [own]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((bind, port))
        server.listen(max(nnodes, 1))
        try:
            while len(nodes) < nnodes:
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = sorted(n.index for n in nodes)
                    raise PeersMissing(f"only node(s) {seen} of {nnodes} reported within {timeout:.0f} s")
                server.settimeout(left)
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                conn.settimeout(max(1.0, deadline - time.monotonic()))
                try:
                    message = _receive(conn)
                    if not isinstance(message, dict) or message.get("protocol") != PROTOCOL:
                        raise ValueError(f"not a {PROTOCOL} message")
                    node = node_from_record(message.get("node"))
                except (ValueError, OSError) as error:
                    _send(conn, {"protocol": PROTOCOL, "error": f"bad report: {error}"})
                    conn.close()
                    continue
                peers.append((conn, node))
                nodes.append(node)
            try:
                order = order_nodes(nodes, group_instances=group_instances, ultraserver=ultraserver)
                answer: dict[str, Any] = {"protocol": PROTOCOL, "order": [n.as_record() for n in order]}
            except TopologyError as error:
                answer = {"protocol": PROTOCOL, "error": str(error)}
            for conn, _ in peers:
                with contextlib.suppress(OSError):
                    _send(conn, answer)
        finally:
            for conn, _ in peers:
                conn.close()
    if "error" in answer:
        raise TopologyError(str(answer["error"]))
    return order


def join(own: Node, *, main_address: str, port: int, timeout: float) -> list[Node]:
    """Other nodes: report to the main node (retrying until it listens) and read the order."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((main_address, port), timeout=5) as sock:
                sock.settimeout(max(1.0, deadline - time.monotonic()))
                _send(sock, {"protocol": PROTOCOL, "node": own.as_record()})
                answer = _receive(sock)
        except OSError as error:
            last = error
            time.sleep(1)
            continue
        if not isinstance(answer, dict) or answer.get("protocol") != PROTOCOL:
            raise TopologyError(f"the main node answered {answer!r}")
        if "error" in answer:
            raise TopologyError(str(answer["error"]))
        return [node_from_record(r) for r in answer.get("order", [])]
    raise PeersMissing(f"could not reach the main node {main_address}:{port} within {timeout:.0f} s: {last}")


def _load_topology(path: str, instance_id: str | None) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as file:
            return instance_topology(json.load(file), instance_id)
    except (OSError, ValueError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--index", type=int, required=True, help="this node's scheduler index (0 = main)")
    parser.add_argument("--nnodes", type=int, required=True)
    parser.add_argument("--address", required=True, help="this node's address")
    parser.add_argument("--main-address", required=True, help="the main node's address")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--topology", required=True, help="DescribeInstanceTopology answer for this host")
    parser.add_argument("--group-instances", type=int, default=1)
    parser.add_argument("--ultraserver", type=int, choices=(0, 1), default=0)
    parser.add_argument("--timeout", type=float, required=True, help="how long to wait for every node (s)")
    parser.add_argument("--lost-exit-code", type=int, default=75, help="exit code when a node never reported")
    args = parser.parse_args(argv)
    entry = _load_topology(args.topology, None)
    record = {"index": args.index, "address": args.address, "topology": entry}
    try:
        own = node_from_record(record)
        if args.index == 0:
            order = serve(
                own, nnodes=args.nnodes, bind=args.address, port=args.port, timeout=args.timeout,
                group_instances=args.group_instances, ultraserver=bool(args.ultraserver),
            )  # fmt: skip
        else:
            order = join(own, main_address=args.main_address, port=args.port, timeout=args.timeout)
        rank = next(position for position, node in enumerate(order) if node.index == args.index)
    except PeersMissing as error:
        print(f"cdk-neuron-rank-order: LOST: {error}", file=sys.stderr)
        return int(args.lost_exit_code)
    except (TopologyError, ValueError, StopIteration) as error:
        print(f"cdk-neuron-rank-order: REFUSED: {error}", file=sys.stderr)
        return 3
    print(f"NODE_RANK={rank}")
    print(f"MASTER_ADDR={order[0].address}")
    print("RANK_ORDER=" + ",".join(str(n.index) for n in order))
    print("DOMAINS=" + ",".join(n.capacity_block_id or n.instance_id or "-" for n in order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
