"""Topology-aware placement under bash: the host records its topology, the launchers agree on ranks.

- ``training/node-setup.sh`` in the sandbox (tests/node_sandbox.py) with ``aws`` stubbed to answer
  DescribeInstanceTopology from the recorded-shape fixtures: what it asks, what it writes, how it
  waits for an UltraServer's CapacityBlockId and that a failure does not stop the boot.
- ``training/launcher.sh`` as N processes, one per node, each with its own host's topology file,
  exchanging over loopback (127.0.0.1-127.0.0.N): NODE_RANK and MASTER_ADDR follow the UltraServers,
  and a layout the nodes cannot hold stops every node with exit code 3 before the command runs.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from node_sandbox import NEURON, Sandbox

from cdk_neuron import timeouts
from cdk_neuron.node_programs import FILES_DIR, program

FIXTURES = Path(__file__).parent / "fixtures" / "topology"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def _instances(fixture: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / fixture).read_text())["Instances"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# The host: node-setup.sh records its own topology
# ---------------------------------------------------------------------------------------------

IMDS = """case "$*" in
  *api/token*) echo TOKEN ;;
  *meta-data/instance-id*) echo i-0abc ;;
  *) exit 7 ;;
esac"""


@pytest.fixture
def host(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path)
    box.stub("curl", IMDS)
    box.write("/dev/neuron0", "")  # the one Neuron device NEURON settings expect
    return box


def _answer(entry: dict[str, Any]) -> str:
    return json.dumps({"Instances": [{**entry, "InstanceId": "i-0abc"}]}, indent=4)


def test_node_setup_records_its_own_topology(host: Sandbox) -> None:
    entry = _instances("trn1-4-nodes.json")[0]
    host.write("/tmp/answer.json", _answer(entry))
    host.stub("aws", f"cat {host.file('/tmp/answer.json')}")
    host.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "batch",
            "REGION": "us-east-1",
            "TOPOLOGY_FILE": "/var/lib/cdk-neuron/topology.json",
            "TOPOLOGY_ATTEMPTS": timeouts.TOPOLOGY_ATTEMPTS,
            "TOPOLOGY_STEP": timeouts.TOPOLOGY_STEP,
            "ULTRASERVER": 0,
        },
    )
    result = host.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    assert host.calls("aws") == [
        "aws ec2 describe-instance-topology --region us-east-1 --instance-ids i-0abc --output json"
    ]
    written = json.loads(host.file("/var/lib/cdk-neuron/topology.json").read_text())
    assert written["Instances"][0]["NetworkNodes"] == entry["NetworkNodes"]
    assert oct(host.file("/var/lib/cdk-neuron/topology.json").stat().st_mode & 0o777) == "0o644"


def test_ultraserver_node_waits_for_its_capacity_block_id(host: Sandbox) -> None:
    entry = _instances("trn2u-2-ultraservers.json")[0]
    pending = {k: v for k, v in entry.items() if k != "CapacityBlockId"}
    host.write("/tmp/pending.json", _answer(pending))
    host.write("/tmp/ready.json", _answer(entry))
    count = host.root / "count"
    # EC2 fills CapacityBlockId in eventually: the first two answers lack it.
    host.stub(
        "aws",
        f"n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}\n"
        f"if [ $n -lt 3 ]; then cat {host.file('/tmp/pending.json')}; else cat {host.file('/tmp/ready.json')}; fi",
    )
    host.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "batch",
            "REGION": "us-east-2",
            "TOPOLOGY_FILE": "/var/lib/cdk-neuron/topology.json",
            "TOPOLOGY_ATTEMPTS": timeouts.TOPOLOGY_ATTEMPTS,
            "TOPOLOGY_STEP": timeouts.TOPOLOGY_STEP,
            "ULTRASERVER": 1,
        },
    )
    result = host.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    assert len(host.calls("aws ec2 describe-instance-topology")) == 3
    assert host.calls("sleep") == ["sleep 5", "sleep 10"]
    written = json.loads(host.file("/var/lib/cdk-neuron/topology.json").read_text())
    assert written["Instances"][0]["CapacityBlockId"] == entry["CapacityBlockId"]


def test_a_failed_topology_call_does_not_stop_the_boot(host: Sandbox) -> None:
    host.stub("aws", "echo 'An error occurred (UnauthorizedOperation)' >&2; exit 254")
    host.settings(
        "training.env",
        {
            **NEURON,
            "ENGINE": "batch",
            "REGION": "us-east-1",
            "TOPOLOGY_FILE": "/var/lib/cdk-neuron/topology.json",
            "TOPOLOGY_ATTEMPTS": timeouts.TOPOLOGY_ATTEMPTS,
            "TOPOLOGY_STEP": timeouts.TOPOLOGY_STEP,
            "ULTRASERVER": 0,
        },
    )
    result = host.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    # Retried as cdk_neuron.timeouts schedules it, then given up.
    assert len(host.calls("aws ec2 describe-instance-topology")) == timeouts.TOPOLOGY_ATTEMPTS
    assert not host.file("/var/lib/cdk-neuron/topology.json").exists()
    assert "plans whose groups span instances will be refused at job start" in result.stderr
    assert "training node ready" in result.stderr


def test_without_efa_no_topology_is_asked(host: Sandbox) -> None:
    host.settings("training.env", {**NEURON, "ENGINE": "batch"})
    result = host.run("training/node-setup.sh")
    assert result.returncode == 0, result.stderr
    assert host.calls("aws") == []


# ---------------------------------------------------------------------------------------------
# The job: launcher.sh on every node
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fake_ip(directory: Path) -> Path:
    """`ip` that reports $FAKE_IP on eth0, as a node container's task interface would."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "ip"
    script.write_text(
        '#!/bin/sh\ncase "$*" in *"dev eth0"*) echo "2: eth0    inet ${FAKE_IP}/8 scope global eth0";; esac\n'
    )
    script.chmod(0o755)
    return directory


REPORT = 'printf "%s\\n" "NODE_RANK=$NODE_RANK" "MASTER_ADDR=$MASTER_ADDR" "ROOT=$NEURON_RT_ROOT_COMM_ID" "TORCHRUN_ARGS=$TORCHRUN_ARGS"'


def _launch_job(
    tmp_path: Path,
    entries: list[dict[str, Any] | None],
    *,
    group: int,
    ultraserver: bool,
    command: str = REPORT,
) -> list[subprocess.CompletedProcess[str]]:
    """Start one launcher per entry (node index = position) and wait for all of them."""
    assert BASH is not None
    tools = _fake_ip(tmp_path / "bin")
    port = _free_port()
    peer_port = _free_port()
    processes = []
    for index, entry in enumerate(entries):
        topology = tmp_path / f"node{index}" / "topology.json"
        topology.parent.mkdir(parents=True)
        if entry is not None:
            topology.write_text(json.dumps({"Instances": [entry]}))
        env = {
            "PATH": f"{tools}:{os.environ['PATH']}",
            "FAKE_IP": f"127.0.0.{index + 1}",
            "AWS_BATCH_JOB_NODE_INDEX": str(index),
            "AWS_BATCH_JOB_NUM_NODES": str(len(entries)),
            "NPROC_PER_NODE": "64",
            "NEURON_TP_DEGREE": str(64 * group),
            "NEURON_PP_DEGREE": "1",
            "MASTER_PORT": "29500",
            "ROOT_COMM_PORT": "29600",
            "RANK_ORDER_PORT": str(port),
            "CDK_NEURON_HOME": str(FILES_DIR),
            "CDK_NEURON_RANK_ORDER": "topology",
            "CDK_NEURON_TOPOLOGY_FILE": str(topology),
            "CDK_NEURON_DOMAIN_GROUP_INSTANCES": str(group),
            "CDK_NEURON_ULTRASERVER": "1" if ultraserver else "0",
            "CDK_NEURON_PEER_PORT": str(peer_port),
            "CDK_NEURON_PEER_JOIN_TIMEOUT": "30",
            "CDK_NEURON_PEER_INTERVAL": "0.2",
            "CDK_NEURON_PEER_SILENCE": "20",
            "CDK_NEURON_STOP_GRACE": "1",
        }
        if index > 0:  # Batch sets the main node's address on child nodes only
            env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
        processes.append(
            subprocess.Popen(
                [BASH, str(program("training/launcher.sh")), command],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=90)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def _parsed(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in result.stdout.strip().splitlines())


def test_launchers_order_two_interleaved_ultraservers(tmp_path: Path) -> None:
    # Batch hands out the 8 trn2u.48xlarge of two UltraServers interleaved; TP 256 spans 4 of them.
    entries = _instances("trn2u-2-ultraservers.json")
    results = _launch_job(tmp_path, list(entries), group=4, ultraserver=True)
    outputs = [_parsed(r) for r in results]
    ranks = [int(o["NODE_RANK"]) for o in outputs]
    assert sorted(ranks) == list(range(8))
    # Every run of 4 ranks is one UltraServer.
    by_rank = {rank: entries[index]["CapacityBlockId"] for index, rank in enumerate(ranks)}
    for start in (0, 4):
        assert len({by_rank[r] for r in range(start, start + 4)}) == 1
    # Everyone agrees on rank 0's address, which hosts torch's store and the Neuron root communicator.
    rank0_address = f"127.0.0.{ranks.index(0) + 1}"
    assert {o["MASTER_ADDR"] for o in outputs} == {rank0_address}
    assert {o["ROOT"] for o in outputs} == {f"{rank0_address}:29600"}
    for index, output in enumerate(outputs):
        assert f"--node_rank={ranks[index]} " in output["TORCHRUN_ARGS"]
        assert f"--master_addr={rank0_address} " in output["TORCHRUN_ARGS"]
    assert "topology order (scheduler indexes by rank)" in results[0].stderr


def test_launchers_refuse_nodes_split_across_ultraservers_before_any_step(tmp_path: Path) -> None:
    # Four nodes, two in each UltraServer, for a plan whose TP groups need four of one UltraServer.
    entries = _instances("trn2u-2-ultraservers.json")[:4]
    results = _launch_job(tmp_path, list(entries), group=4, ultraserver=True, command="echo TRAINING-STEP")
    for result in results:
        assert result.returncode == 3
        assert "TRAINING-STEP" not in result.stdout
        assert "REFUSED" in result.stderr and "needs 4 instances of one UltraServer" in result.stderr


def test_launchers_without_topology_keep_the_scheduler_order_when_groups_stay_in_a_node(
    tmp_path: Path,
) -> None:
    results = _launch_job(tmp_path, [None, None, None], group=1, ultraserver=False)
    assert [int(_parsed(r)["NODE_RANK"]) for r in results] == [0, 1, 2]
    assert {_parsed(r)["MASTER_ADDR"] for r in results} == {"127.0.0.1"}


def test_trn1_launchers_put_nodes_under_one_spine_together(tmp_path: Path) -> None:
    entries = _instances("trn1-4-nodes.json")
    results = _launch_job(tmp_path, list(entries), group=1, ultraserver=False)
    ranks = [int(_parsed(r)["NODE_RANK"]) for r in results]
    spines = [entries[ranks.index(rank)]["NetworkNodes"][0] for rank in range(4)]
    assert sum(1 for a, b in itertools.pairwise(spines) if a != b) == 1
