#!/usr/bin/env python3
"""cdk-neuron Slurm order: the nodes of a HyperPod job step agree on a node order from Slurm's topology.

Standard library only; it runs on the HyperPod nodes (Ubuntu, python3) and in the tests. It is the
Slurm counterpart of ``training/rank_order.py``: the same ordering (:func:`rank_order.order_nodes`:
nodes under one top-level switch, then one leaf, are neighbours in rank), fed from Slurm instead of
EC2. A HyperPod node cannot ask EC2 for its own topology: the instances are not in the cluster
owner's account, and HyperPod's node description (``DescribeClusterNode``) carries no network nodes.
What Slurm knows is the topology HyperPod configures for the cluster (``scontrol show topology``:
``SwitchName``/``BlockName`` lines with ``Level``, ``Nodes`` and ``Switches``, topology.conf(5),
https://slurm.schedmd.com/topology.conf.html, read 2026-12-02; "Using topology-aware scheduling in
Amazon SageMaker HyperPod", Amazon SageMaker AI Developer Guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-topology.html, read 2026-12-02).

Every task of the step computes the same answer from the same inputs (the step's node list and the
topology text), so no exchange between nodes is needed. A cluster without a topology (the default
``topology/flat``) keeps the step's node-list order, which is every node's common knowledge.

Output, one ``KEY=value`` per line: ``NODE_RANK`` (this node's place), ``MASTER_ADDR`` (the name of
rank 0), ``NNODES``, ``RANK_ORDER`` (the names in rank order) and ``ORDERED_BY`` (``slurm-topology``, or
``node-list`` when Slurm places not every node under a switch or block); exit 3 when the nodes cannot hold the
plan (a refusal from :func:`rank_order.order_nodes`) or the input is malformed.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import rank_order  # type: ignore[import-not-found]  # the bundle's training/rank_order.py, beside this directory

_BRACKET = re.compile(r"\[([^\]]*)\]")
_PAIR = re.compile(r"(\w+)=(\S*)")
MAX_HOSTS = 100_000


class SlurmInputError(ValueError):
    """A host list or topology line that does not parse."""


def _split_top_level(expression: str) -> list[str]:
    """Split ``a[1-2],b`` at the commas outside brackets."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in expression:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise SlurmInputError(f"unbalanced ']' in host list {expression!r}")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise SlurmInputError(f"unbalanced '[' in host list {expression!r}")
    parts.append(current)
    return [p for p in (part.strip() for part in parts) if p]


def _range_values(body: str, expression: str) -> list[str]:
    values: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise SlurmInputError(f"empty range in host list {expression!r}")
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise SlurmInputError(f"bad range {item!r} in host list {expression!r}")
        if not dash:
            values.append(low)
            continue
        width = len(low) if low.startswith("0") else 0
        if int(high) < int(low):
            raise SlurmInputError(f"descending range {item!r} in host list {expression!r}")
        values.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
        if len(values) > MAX_HOSTS:
            raise SlurmInputError(f"host list {expression!r} names more than {MAX_HOSTS} hosts")
    return values


def expand_hostlist(expression: str) -> list[str]:
    """Slurm's host-list expression (``ip-10-1-[2-3]-7,login``) as names, in order, like
    ``scontrol show hostnames``: comma-separated terms, each with bracketed ranges (``[1-3,7]``,
    zero-padded ``[01-10]``) anywhere in the name; several brackets multiply."""
    hosts: list[str] = []
    for term in _split_top_level(expression.strip()):
        pieces = _BRACKET.split(term)  # text, range, text, range, ..., text
        choices = [
            [piece] if i % 2 == 0 else _range_values(piece, expression) for i, piece in enumerate(pieces)
        ]
        hosts.extend("".join(combo) for combo in itertools.product(*choices))
        if len(hosts) > MAX_HOSTS:
            raise SlurmInputError(f"host list {expression!r} names more than {MAX_HOSTS} hosts")
    return hosts


def switch_paths(topology: str) -> dict[str, tuple[str, ...]]:
    """Each node's switches, top level first, from ``scontrol show topology`` text.

    ``topology/tree``: ``SwitchName=<s> Level=<n> ... Nodes=<hostlist> Switches=<hostlist>`` per switch;
    a node's path is its leaf switch and the chain of switches above it. ``topology/block``:
    ``BlockName=<b> ... Nodes=<hostlist>``; a node's path is its block. Lines that are neither (a
    ``topology/flat`` cluster's message, headers) are ignored.
    """
    parents: dict[str, str] = {}
    leaves: dict[str, tuple[int, str]] = {}
    blocks: dict[str, str] = {}
    for line in topology.splitlines():
        fields = dict(_PAIR.findall(line))
        name = fields.get("SwitchName") or fields.get("BlockName")
        if not name:
            continue
        nodes = fields.get("Nodes", "")
        members = [] if nodes in ("", "(null)") else expand_hostlist(nodes)
        if "BlockName" in fields and "SwitchName" not in fields:
            for node in members:
                blocks.setdefault(node, name)
            continue
        level_text = fields.get("Level", "0")
        if not level_text.isdigit():
            raise SlurmInputError(f"bad Level {level_text!r} for switch {name}")
        for node in members:
            known = leaves.get(node)
            if known is None or (int(level_text), name) < known:
                leaves[node] = (int(level_text), name)
        children = fields.get("Switches", "")
        for child in [] if children in ("", "(null)") else expand_hostlist(children):
            parents.setdefault(child, name)
    paths: dict[str, tuple[str, ...]] = {}
    for node, (_, leaf) in leaves.items():
        chain = [leaf]
        while chain[-1] in parents and parents[chain[-1]] not in chain:
            chain.append(parents[chain[-1]])
        paths[node] = tuple(reversed(chain))
    for node, block in blocks.items():
        paths.setdefault(node, (block,))
    return paths


def order_step(
    hosts: Sequence[str], topology: str, *, group_instances: int = 1, ultraserver: bool = False
) -> tuple[list[str], bool]:
    """The step's hosts in rank order (see the module docstring), and whether Slurm's topology placed
    every one of them (False: the node-list order); :class:`rank_order.TopologyError` when they cannot
    hold the plan."""
    if len(set(hosts)) != len(hosts):
        raise SlurmInputError(f"the node list repeats a host: {list(hosts)}")
    paths = switch_paths(topology)
    located = all(host in paths for host in hosts)
    nodes = [
        rank_order.Node(
            index=index,
            address=host,
            instance_id=host if located else None,
            network_nodes=paths.get(host, ()) if located else (),
        )
        for index, host in enumerate(hosts)
    ]
    ordered = rank_order.order_nodes(nodes, group_instances=group_instances, ultraserver=ultraserver)
    return [node.address for node in ordered], located


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", required=True, help="this node's Slurm name (SLURMD_NODENAME)")
    parser.add_argument(
        "--nodes", required=True, help="the step's host-list expression (SLURM_STEP_NODELIST)"
    )
    parser.add_argument("--topology", required=True, help="a file with `scontrol show topology` output")
    parser.add_argument("--group-instances", type=int, default=1)
    parser.add_argument("--ultraserver", type=int, choices=(0, 1), default=0)
    args = parser.parse_args(argv)
    try:
        hosts = expand_hostlist(args.nodes)
        if not hosts:
            raise SlurmInputError("the step's node list is empty")
        topology = Path(args.topology).read_text(encoding="utf-8")
        order, located = order_step(
            hosts, topology, group_instances=args.group_instances, ultraserver=bool(args.ultraserver)
        )
        if args.host not in order:
            raise SlurmInputError(f"this node {args.host!r} is not in the step's node list {args.nodes!r}")
    except (rank_order.TopologyError, ValueError, OSError) as error:
        print(f"cdk-neuron-slurm-order: REFUSED: {error}", file=sys.stderr)
        return 3
    print(f"NODE_RANK={order.index(args.host)}")
    print(f"MASTER_ADDR={order[0]}")
    print(f"NNODES={len(order)}")
    print("RANK_ORDER=" + ",".join(order))
    print("ORDERED_BY=" + ("slurm-topology" if located else "node-list"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
