"""HyperPod jobs on Slurm: the node order from Slurm's topology (hyperpod/slurm_order.py), the step
program under bash with scontrol and srun stubbed, and the sbatch script end to end through the shared
launcher."""

from __future__ import annotations

import base64
import importlib.util
import itertools
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from node_sandbox import Sandbox

from cdk_neuron import timeouts
from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import FILES_DIR, render_settings
from cdk_neuron.planner import plan_training
from cdk_neuron.training import hyperpod_jobs


def _load() -> ModuleType:
    sys.path.insert(0, str(FILES_DIR / "training"))
    spec = importlib.util.spec_from_file_location("slurm_order", FILES_DIR / "hyperpod" / "slurm_order.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["slurm_order"] = module
    spec.loader.exec_module(module)
    return module


so = _load()

# topology/tree as `scontrol show topology` prints it: a spine over two leaves; node b1 under leaf2
# although its name sorts with the a-nodes' neighbours.
TREE = """\
SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=ip-10-1-0-[1,3] Switches=(null)
SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=ip-10-1-0-2,ip-10-1-0-4 Switches=(null)
SwitchName=spine Level=1 LinkSpeed=1 Nodes=ip-10-1-0-[1-4] Switches=leaf[1-2]
"""
HOSTS = ["ip-10-1-0-1", "ip-10-1-0-2", "ip-10-1-0-3", "ip-10-1-0-4"]


# -- host lists -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "hosts"),
    [
        ("ip-10-1-0-[1-3]", ["ip-10-1-0-1", "ip-10-1-0-2", "ip-10-1-0-3"]),
        ("n[08-10],login", ["n08", "n09", "n10", "login"]),
        ("r[1-2]n[1,3]", ["r1n1", "r1n3", "r2n1", "r2n3"]),
        ("solo", ["solo"]),
        ("a[1-2],b[3],c", ["a1", "a2", "b3", "c"]),
    ],
)
def test_host_lists_expand_like_scontrol(expression: str, hosts: list[str]) -> None:
    assert so.expand_hostlist(expression) == hosts


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("n[1-2", "unbalanced '\\['"),
        ("n1-2]", "unbalanced '\\]'"),
        ("n[3-1]", "descending range"),
        ("n[a-b]", "bad range"),
        ("n[1,,2]", "empty range"),
    ],
)
def test_bad_host_lists_are_refused(expression: str, message: str) -> None:
    with pytest.raises(so.SlurmInputError, match=message):
        so.expand_hostlist(expression)


# -- the order --------------------------------------------------------------------------------------


def test_tree_paths_run_from_the_top_switch_to_the_leaf() -> None:
    paths = so.switch_paths(TREE)
    assert paths["ip-10-1-0-1"] == ("spine", "leaf1")
    assert paths["ip-10-1-0-4"] == ("spine", "leaf2")


def test_nodes_under_one_leaf_are_neighbours_whatever_the_node_list_order() -> None:
    expected = ["ip-10-1-0-1", "ip-10-1-0-3", "ip-10-1-0-2", "ip-10-1-0-4"]
    for hosts in itertools.permutations(HOSTS):
        order, located = so.order_step(list(hosts), TREE)
        assert located and order == expected


def test_blocks_group_their_nodes() -> None:
    blocks = "BlockName=b2 BlockIndex=1 Nodes=n[1,3]\nBlockName=b1 BlockIndex=0 Nodes=n[2,4]\n"
    order, located = so.order_step(["n1", "n2", "n3", "n4"], blocks)
    assert located and order == ["n2", "n4", "n1", "n3"]


@pytest.mark.parametrize(
    "topology",
    ["", "No switches found\n", "SwitchName=leaf1 Level=0 Nodes=ip-10-1-0-[1-2] Switches=(null)\n"],
)
def test_without_a_topology_for_every_node_the_node_list_order_stands(topology: str) -> None:
    order, located = so.order_step(list(reversed(HOSTS)), topology)
    assert not located and order == list(reversed(HOSTS))


def test_a_repeated_host_is_refused() -> None:
    with pytest.raises(so.SlurmInputError, match="repeats a host"):
        so.order_step(["a", "a"], "")


def test_groups_across_instances_are_refused_on_types_that_are_no_ultraserver() -> None:
    with pytest.raises(so.rank_order.TopologyError, match="no NeuronLink domain spans instances"):
        so.order_step(HOSTS, TREE, group_instances=2)


def test_main_prints_the_assignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topology = tmp_path / "topology.txt"
    topology.write_text(TREE)
    code = so.main(["--host", "ip-10-1-0-2", "--nodes", "ip-10-1-0-[1-4]", "--topology", str(topology)])
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "NODE_RANK=2",
        "MASTER_ADDR=ip-10-1-0-1",
        "NNODES=4",
        "RANK_ORDER=ip-10-1-0-1,ip-10-1-0-3,ip-10-1-0-2,ip-10-1-0-4",
        "ORDERED_BY=slurm-topology",
    ]
    code = so.main(["--host", "other", "--nodes", "ip-10-1-0-[1-4]", "--topology", str(topology)])
    assert code == 3
    assert "REFUSED: this node 'other' is not in the step's node list" in capsys.readouterr().err


# -- the step and the sbatch script under bash --------------------------------------------------------

PLAN = plan_training("trn1.32xlarge", 4, 32)
PROFILE = hyperpod_jobs.hyperpod_environment(
    get_instance("trn1.32xlarge"), PLAN, compile_cache_url=None, checkpoint_dir="/checkpoints"
)
# What each node's command records: the launcher's variables, one file per node.
RECORD = 'printf "%s\\n" "$NODE_RANK" "$MASTER_ADDR" "$NNODES" "$WORLD_SIZE" "$TORCHRUN_ARGS" > "$OUT/$SLURMD_NODENAME"'


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path)
    real = shutil.which("base64")  # coreutils, on every Ubuntu image: the launcher decodes the command
    assert real is not None
    (box.bin / "base64").symlink_to(real)
    box.stub("scontrol", f'[ "$1 $2" = "show topology" ] || exit 2\ncat <<"EOF"\n{TREE}EOF')
    (tmp_path / "out").mkdir()
    return box


def _step_env(
    sandbox: Sandbox, tmp_path: Path, host: str, nodelist: str = "ip-10-1-0-[1-4]"
) -> dict[str, str]:
    return {
        **PROFILE,
        "CDK_NEURON_HOME": str(sandbox.home),
        "CDK_NEURON_PEER_WATCH": "off",  # the peer watch opens sockets; test_peer_watch covers it
        "SLURM_STEP_NODELIST": nodelist,
        "SLURMD_NODENAME": host,
        "OUT": str(tmp_path / "out"),
    }


def _records(tmp_path: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted((tmp_path / "out").iterdir())}


def _step_args(command: str) -> list[str]:
    return hyperpod_jobs.step_command(command)[2:]  # after /bin/bash <step>


def test_every_node_of_a_step_agrees_on_ranks_from_slurms_topology(sandbox: Sandbox, tmp_path: Path) -> None:
    for host in HOSTS:
        result = sandbox.run(
            "hyperpod/slurm-step.sh", *_step_args(RECORD), env=_step_env(sandbox, tmp_path, host)
        )
        assert result.returncode == 0, result.stderr
        assert "(by slurm-topology)" in result.stderr
    records = _records(tmp_path)
    ranks = {host: int(lines[0]) for host, lines in records.items()}
    assert ranks == {"ip-10-1-0-1": 0, "ip-10-1-0-3": 1, "ip-10-1-0-2": 2, "ip-10-1-0-4": 3}
    for host, (rank, master, nnodes, world, torchrun) in records.items():
        assert master == "ip-10-1-0-1" and nnodes == "4"
        assert world == str(4 * PLAN.ranks_per_node)
        assert torchrun == (
            f"--nnodes=4 --node_rank={rank} --nproc_per_node={PLAN.ranks_per_node} "
            "--master_addr=ip-10-1-0-1 --master_port=29500"
        ), host


def test_a_cluster_without_topology_keeps_the_node_list_order_and_says_so(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.stub("scontrol", "echo 'topology/flat has no switches' >&2; exit 1")
    result = sandbox.run(
        "hyperpod/slurm-step.sh", *_step_args(RECORD), env=_step_env(sandbox, tmp_path, "ip-10-1-0-3")
    )
    assert result.returncode == 0, result.stderr
    assert "Slurm reports no topology (topology/flat): ranks follow the step's node list" in result.stderr
    assert _records(tmp_path)["ip-10-1-0-3"][:2] == ["2", "ip-10-1-0-1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SLURMD_NODENAME": "ip-10-9-9-9"}, "this node 'ip-10-9-9-9' is not in the step's node list"),
        ({"SLURM_STEP_NODELIST": ""}, "SLURM_STEP_NODELIST is not set"),
        ({"SLURMD_NODENAME": ""}, "SLURMD_NODENAME is not set"),
        ({"SLURM_STEP_NODELIST": "ip-10-1-0-[1-4"}, "unbalanced"),
    ],
)
def test_a_step_that_cannot_be_ordered_runs_no_command(
    sandbox: Sandbox, tmp_path: Path, change: dict[str, str], message: str
) -> None:
    env = {**_step_env(sandbox, tmp_path, "ip-10-1-0-1"), **change}
    result = sandbox.run("hyperpod/slurm-step.sh", *_step_args(RECORD), env=env)
    assert result.returncode == 3
    assert message in result.stderr and "no training step ran" in result.stderr
    assert _records(tmp_path) == {}


def test_the_sbatch_script_runs_every_node_through_the_step_and_the_launcher(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The script as users submit it, with srun stubbed as Slurm runs a step: once per node, with the
    node's name and the step's node list, the job's environment passed on (--export=ALL)."""
    script = hyperpod_jobs.sbatch_script(nodes=4, partition="train", command=RECORD, job_name="t")
    profile = sandbox.write(
        "/etc/profile.d/cdk-neuron-training.sh", "set -a\n" + render_settings(PROFILE) + "set +a\n"
    )
    rebased = script.replace(hyperpod_jobs.PROFILE_PATH, str(profile)).replace(
        "/opt/cdk-neuron", str(sandbox.home)
    )
    job = sandbox.write("/home/ubuntu/job.sh", rebased)
    sandbox.stub(
        "srun",
        '[ "$1" = --auto-resume=1 ] || { echo "srun: expected --auto-resume=1 first" >&2; exit 2; }\n'
        "shift\n"
        f"for host in {' '.join(reversed(HOSTS))}; do\n"
        '  SLURMD_NODENAME=$host SLURM_STEP_NODELIST="ip-10-1-0-[1-4]" "$@" || exit $?\n'
        "done",
    )
    env = {"CDK_NEURON_HOME": str(sandbox.home), "CDK_NEURON_PEER_WATCH": "off", "OUT": str(tmp_path / "out")}
    result = sandbox.run_script(str(job), env=env)
    assert result.returncode == 0, result.stderr
    records = _records(tmp_path)
    assert sorted(int(lines[0]) for lines in records.values()) == [0, 1, 2, 3]
    assert {lines[1] for lines in records.values()} == {"ip-10-1-0-1"}


# -- the script's text and refusals -----------------------------------------------------------------


def test_the_script_maps_the_plan_to_slurm() -> None:
    command = "torchrun $TORCHRUN_ARGS train.py --name 'a b'\necho done"
    script = hyperpod_jobs.sbatch_script(nodes=16, partition="trn", command=command, job_name="llama")
    lines = script.splitlines()
    assert lines[:7] == [
        "#!/bin/bash",
        "#SBATCH --job-name=llama",
        "#SBATCH --partition=trn",
        "#SBATCH --nodes=16",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
    ]
    encoded = lines[-1].rsplit(" ", 1)[1]
    assert base64.b64decode(encoded).decode() == command  # carried whole, quotes and newline included


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, r"^nodes=0"),
        ({"partition": "a b"}, r"^partition='a b'"),
        ({"job_name": "-x"}, r"^job_name='-x'"),
        ({"command": ""}, r"^command=''"),
    ],
)
def test_bad_script_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"nodes": 2, "partition": "train", "command": "train", "job_name": "t"}
    args.update(kwargs)
    with pytest.raises(NeuronConfigError, match=message):
        hyperpod_jobs.sbatch_script(**args)  # type: ignore[arg-type]


def test_the_profile_carries_the_launchers_peer_timings_from_one_source() -> None:
    for name, value in timeouts.peer_settings().items():
        assert PROFILE[name] == value
    assert PROFILE["CDK_NEURON_RANK_ORDER"] == "slurm-topology"
    assert "CDK_NEURON_TOPOLOGY_FILE" not in PROFILE
