"""HyperPod jobs in the job image: the image reference Enroot takes, the profile, and the sbatch script
rehearsed end to end, its step run in the Neuron training DLC the way Pyxis runs it.

Pyxis runs the srun command as the container's process and does not run the image's ENTRYPOINT unless
asked (NVIDIA/pyxis ``config.c`` @v0.19.0, ``execute_entrypoint`` default false); the script also says
``--no-container-entrypoint``. The step is run both ways here: as Pyxis runs it, and through the DLC's
``eval`` entrypoint (``tests/image_entrypoints/neuron_training_dlc.sh``), in case a site turns the
entrypoint on: the command must reach torchrun whole either way. The image has no Slurm client, so
the rehearsal container has no ``scontrol``.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from image_rehearsal import Container
from node_sandbox import Sandbox

from cdk_neuron.catalog import get_instance
from cdk_neuron.errors import NeuronConfigError
from cdk_neuron.node_programs import render_settings
from cdk_neuron.planner import plan_training
from cdk_neuron.training import hyperpod_containers, hyperpod_jobs

DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
HOSTS = ["ip-10-1-0-1", "ip-10-1-0-2"]
TREE = "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=ip-10-1-0-[1-2]\n"
PLAN = plan_training("trn1.32xlarge", 2, 32)


def _profile() -> dict[str, str]:
    profile = hyperpod_jobs.hyperpod_environment(
        get_instance("trn1.32xlarge"), PLAN, compile_cache_url=None, checkpoint_dir="/checkpoints"
    )
    profile.update(hyperpod_containers.container_profile(DLC, list(profile), checkpoint_dir="/checkpoints"))
    return profile


# -- the image reference ------------------------------------------------------------------------------


def test_an_ecr_image_becomes_enroots_registry_hash_form() -> None:
    assert hyperpod_containers.pyxis_image("job_image", DLC) == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com#pytorch-training-neuronx:"
        "2.9.0-neuronx-py312-sdk2.28.0-ubuntu24.04"
    )


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (DLC.split(":")[0] + "@sha256:" + "a" * 64, r"Enroot 3\.4\.1, which takes docker://\[USER@\]\[REGISTRY#\]IMAGE\[:TAG\] and no digest: pin the image by tag"),
        ("pytorch:2.1", r"give registry/repository:tag"),
        (DLC.split(":")[0] + ":latest", r"job_image="),
        ("", r"job_image=''"),
    ],
)  # fmt: skip
def test_what_enroot_cannot_import_is_refused(uri: str, message: str) -> None:
    with pytest.raises(NeuronConfigError, match=message):
        hyperpod_containers.pyxis_image("job_image", uri)


def test_ecr_images_get_enroot_credentials_and_others_none() -> None:
    assert hyperpod_containers.registry_credentials(DLC) == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com",
        "us-east-1",
    )
    assert hyperpod_containers.registry_credentials("public.ecr.aws/neuron/x:1") is None
    settings = hyperpod_containers.lifecycle_settings("public.ecr.aws/neuron/x:1")
    assert settings["ECR_REGISTRY"] == "" and settings["CONTAINERS"] == "1"


def test_the_profile_names_every_variable_whose_host_value_must_win_in_the_image() -> None:
    profile = _profile()
    names = profile[hyperpod_containers.CONTAINER_ENV_VARIABLE].split(",")
    assert set(names) == (set(profile) - {
        hyperpod_containers.IMAGE_VARIABLE,
        hyperpod_containers.MOUNTS_VARIABLE,
        hyperpod_containers.CONTAINER_ENV_VARIABLE,
    }) | {hyperpod_containers.TOPOLOGY_VARIABLE}  # fmt: skip
    assert (
        profile[hyperpod_containers.MOUNTS_VARIABLE]
        == "/opt/cdk-neuron:/opt/cdk-neuron:ro,/checkpoints:/checkpoints"
    )
    assert hyperpod_containers.container_mounts(None) == "/opt/cdk-neuron:/opt/cdk-neuron:ro"


# -- the sbatch script, rehearsed -----------------------------------------------------------------------

# srun as the batch step calls it: record the arguments and the exported environment, then return.
SRUN = """python3 - "$@" <<'PY'
import json, os, sys
with open(os.environ["SRUN_LOG"], "w") as out:
    json.dump({"argv": sys.argv[1:], "env": dict(os.environ)}, out)
PY"""
RECORD = 'printf "%s\\n" "$NODE_RANK" "$MASTER_ADDR" "$WORLD_SIZE" "$FI_EFA_USE_DEVICE_RDMA" > "$OUT/$SLURMD_NODENAME"'
COMMAND = "torchrun $TORCHRUN_ARGS train.py --name 'a b' --lr=\"$LR\""


def _submit(tmp_path: Path, profile: dict[str, str], scontrol: str, command: str) -> dict[str, Any]:
    """Run the sbatch script's batch step on a host (sandbox) and return what reached srun."""
    sandbox = Sandbox(tmp_path / "host")
    sandbox.stub("scontrol", scontrol)
    sandbox.stub("srun", SRUN)
    base64 = shutil.which("base64")  # coreutils: the batch step encodes the topology
    assert base64 is not None
    (sandbox.bin / "base64").symlink_to(base64)
    script = hyperpod_jobs.sbatch_script(nodes=2, partition="train", command=command, job_name="t")
    written = sandbox.write(
        "/etc/profile.d/cdk-neuron-training.sh", "set -a\n" + render_settings(profile) + "set +a\n"
    )
    job = sandbox.write("/home/ubuntu/job.sh", script.replace(hyperpod_jobs.PROFILE_PATH, str(written)))
    log = tmp_path / "srun.json"
    result = sandbox.run_script(str(job), env={"SRUN_LOG": str(log)})
    assert result.returncode == 0, result.stderr
    recorded: dict[str, Any] = json.loads(log.read_text())
    return recorded


def _pyxis(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Pyxis's options (``--name=value`` or flags) and the command after them."""
    assert argv[0] == "--auto-resume=1", argv
    options: dict[str, str] = {}
    position = 1
    while argv[position].startswith("--container") or argv[position].startswith("--no-container"):
        name, _, value = argv[position].partition("=")
        options[name] = value
        position += 1
    return options, argv[position:]


def _in_image(
    container: Container, srun: dict[str, Any], options: dict[str, str], host: str, image_env: dict[str, str]
) -> dict[str, str]:
    """The task's environment in the container, as Pyxis builds it: the image's own values win over
    the host's, except for the names given with --container-env."""
    host_env = {k: v for k, v in srun["env"].items() if not k.startswith(("PATH", "HOME"))}
    env = {**host_env, **image_env}
    for name in options["--container-env"].split(","):
        if name in host_env:
            env[name] = host_env[name]
    env.update(SLURMD_NODENAME=host, SLURM_STEP_NODELIST="ip-10-1-0-[1-2]", CDK_NEURON_PEER_WATCH="off")
    env["CDK_NEURON_HOME"] = str(container.bundle)
    return env


@pytest.mark.parametrize("entrypoint", ["pyxis (no entrypoint)", "the DLC's eval entrypoint"])
def test_every_node_runs_its_step_in_the_image_with_the_command_whole(
    tmp_path: Path, entrypoint: str
) -> None:
    profile = _profile()
    srun = _submit(
        tmp_path, profile, f'[ "$1 $2" = "show topology" ] || exit 2\nprintf "%s" "{TREE}"', COMMAND
    )
    options, command = _pyxis(srun["argv"])
    assert options == {
        "--container-image": hyperpod_containers.pyxis_image("job_image", DLC),
        "--container-mounts": "/opt/cdk-neuron:/opt/cdk-neuron:ro,/checkpoints:/checkpoints",
        "--container-env": profile[hyperpod_containers.CONTAINER_ENV_VARIABLE],
        "--no-container-entrypoint": "",
    }
    assert command == hyperpod_jobs.step_command(COMMAND)
    calls = []
    for host in HOSTS:
        container = Container(tmp_path / host)
        container.record("torchrun")
        words = container.mounted(command)
        # The image sets its own value of a profile variable: the host's must still win.
        env = _in_image(container, srun, options, host, {"FI_EFA_USE_DEVICE_RDMA": "0", "LR": "0.1"})
        if entrypoint.startswith("pyxis"):
            result = container.exec(words, env)
        else:
            result = container.run("training-dlc", words, env)
        assert result.returncode == 0, result.stderr
        assert "(by slurm-topology)" in result.stderr  # the batch step's topology reached the image
        (call,) = container.calls("torchrun")
        calls.append(call)
    ranks = sorted(int(c.env["NODE_RANK"]) for c in calls)
    assert ranks == [0, 1]
    for call in calls:
        assert call.argv == [*shlex.split(call.env["TORCHRUN_ARGS"]), "train.py", "--name", "a b", "--lr=0.1"]
        assert call.env["FI_EFA_USE_DEVICE_RDMA"] == profile["FI_EFA_USE_DEVICE_RDMA"]
        assert call.env["MASTER_ADDR"] == "ip-10-1-0-1"


def test_without_a_slurm_topology_the_image_keeps_the_node_list_order_and_says_so(tmp_path: Path) -> None:
    srun = _submit(tmp_path, _profile(), "echo 'topology/flat' >&2; exit 1", RECORD)
    options, command = _pyxis(srun["argv"])
    assert srun["env"][hyperpod_containers.TOPOLOGY_VARIABLE] == ""
    container = Container(tmp_path / "node")
    (tmp_path / "out").mkdir()
    env = _in_image(container, srun, options, "ip-10-1-0-2", {})
    result = container.exec(container.mounted(command), {**env, "OUT": str(tmp_path / "out")})
    assert result.returncode == 0, result.stderr
    assert "the batch step found no Slurm topology (topology/flat)" in result.stderr
    assert (tmp_path / "out" / "ip-10-1-0-2").read_text().splitlines()[:2] == ["1", "ip-10-1-0-1"]


def test_a_cluster_without_a_job_image_runs_the_step_on_the_host(tmp_path: Path) -> None:
    profile = hyperpod_jobs.hyperpod_environment(
        get_instance("trn1.32xlarge"), PLAN, compile_cache_url=None, checkpoint_dir=None
    )
    srun = _submit(tmp_path, profile, "exit 1", RECORD)
    assert srun["argv"] == ["--auto-resume=1", *hyperpod_jobs.step_command(RECORD)]
    assert hyperpod_containers.TOPOLOGY_VARIABLE not in srun["env"]


# -- the lifecycle script installs Enroot and Pyxis ----------------------------------------------------

REGISTRY = "763104351884.dkr.ecr.us-east-1.amazonaws.com"
ENROOT = "https://github.com/NVIDIA/enroot/releases/download"
PYXIS = "https://github.com/NVIDIA/pyxis/archive/refs/tags"
ENROOT_DEBS = ("enroot_3.4.1-1_amd64.deb", "enroot+caps_3.4.1-1_amd64.deb")


@pytest.fixture
def node(tmp_path: Path) -> tuple[Sandbox, Path]:
    """A HyperPod node (sandbox) with the image's Slurm headers, and the cluster's lifecycle prefix
    with a job image; curl 'downloads' stand-in files, the Pyxis tarball a real one."""
    from test_hyperpod_lifecycle import _lifecycle_dir

    box = Sandbox(tmp_path)
    box.write("/opt/slurm/include/slurm/spank.h", "/* Slurm's SPANK header */\n")
    box.write("/opt/slurm/etc/plugstack.conf", "")
    box.stub("dpkg", '[ "$1" = --print-architecture ] && echo amd64')
    box.stub("enroot", "exit 127")  # not installed yet
    box.stub("make", 'printf "%s\\n" "make CPPFLAGS=${CPPFLAGS:-}" >> ' + str(box.log) + "\n"
             '[ "${2##*/}" = "pyxis-0.19.0" ] || exit 2\n'
             'if [ "${3:-}" = install ]; then mkdir -p "$CDK_NEURON_ROOT/usr/local/share/pyxis"; '
             'echo "required /usr/local/lib/slurm/spank_pyxis.so" > "$CDK_NEURON_ROOT/usr/local/share/pyxis/pyxis.conf"; fi')  # fmt: skip
    source = tmp_path / "pyxis-src" / "pyxis-0.19.0"
    source.mkdir(parents=True)
    (source / "Makefile").write_text("all:\n")
    tarball = tmp_path / "pyxis.tar.gz"
    shutil.make_archive(str(tarball).removesuffix(".tar.gz"), "gztar", source.parent, "pyxis-0.19.0")
    box.stub("curl", 'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
             f'case "$out" in *.tar.gz) cp {tarball} "$out" ;; *) echo deb > "$out" ;; esac')  # fmt: skip
    box.stub("mountpoint", '[ "${2:-}" = "$CDK_NEURON_ROOT/opt/dlami/nvme" ]')
    box.stub("systemctl", 'if [ "$1" = is-active ]; then [ "$3" = slurmd ]; fi')
    where = _lifecycle_dir(
        box, tmp_path, {"CLUSTER_NAME": "dev-training", **hyperpod_containers.lifecycle_settings(DLC)}
    )
    return box, where


def test_a_node_installs_enroot_and_pyxis_and_logs_in_to_ecr(node: tuple[Sandbox, Path]) -> None:
    box, where = node
    result = box.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    packages = " ".join(hyperpod_containers.APT_PACKAGES)
    steps = [
        c.replace(str(box.root), "")
        for c in box.calls()
        if c.startswith(("apt-get", "make", "systemctl restart")) or c.startswith("curl")
    ]
    steps = [" ".join(w.rsplit("/", 1)[-1] if w.startswith("/tmp") else w for w in c.split()) for c in steps]
    assert steps == [
        "apt-get -o DPkg::Lock::Timeout=300 update",
        f"apt-get -o DPkg::Lock::Timeout=300 install -y {packages}",
        *[f"curl -fsSL --proto =https -o {deb} {ENROOT}/v3.4.1/{deb}" for deb in ENROOT_DEBS],
        "apt-get -o DPkg::Lock::Timeout=300 install -y " + " ".join(ENROOT_DEBS),
        f"curl -fsSL --proto =https -o pyxis.tar.gz {PYXIS}/v0.19.0.tar.gz",
        # Pyxis's Makefile appends CPPFLAGS from the environment to its own: this image's Slurm headers.
        "make -C pyxis-0.19.0",
        "make CPPFLAGS=-I /opt/slurm/include",
        "make -C pyxis-0.19.0 install",
        "make CPPFLAGS=",
        "systemctl restart slurmd",
    ]
    downloads = [c.split()[-1] for c in box.calls("curl")]
    assert downloads == [
        "https://github.com/NVIDIA/enroot/releases/download/v3.4.1/enroot_3.4.1-1_amd64.deb",
        "https://github.com/NVIDIA/enroot/releases/download/v3.4.1/enroot+caps_3.4.1-1_amd64.deb",
        "https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.19.0.tar.gz",
    ]
    assert box.file("/opt/slurm/etc/plugstack.conf").read_text() == (
        "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf\n"
    )
    conf = box.file("/etc/enroot/enroot.conf").read_text()
    assert "ENROOT_DATA_PATH           /opt/dlami/nvme/enroot/data/user-$(id -u)\n" in conf
    assert "ENROOT_RESTRICT_DEV        no\n" in conf  # /dev/neuron* and the EFA devices in the container
    assert "ENROOT_CONFIG_PATH         /etc/enroot/cdk-neuron\n" in conf
    assert box.file("/etc/enroot/cdk-neuron/.credentials").read_text() == (
        f"machine {REGISTRY} login AWS password $(aws ecr get-login-password --region us-east-1)\n"
    )
    assert box.calls("systemctl restart slurmctld") == []  # a worker: slurmd only


def test_a_rerun_installs_nothing_twice_and_keeps_one_plugstack_line(node: tuple[Sandbox, Path]) -> None:
    box, where = node
    assert box.run_script(str(where / "on-init-complete.sh")).returncode == 0
    box.stub("enroot", '[ "$1" = version ] && echo 3.4.1')
    box.log.write_text("")
    result = box.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode == 0, result.stderr
    assert box.calls("curl") == [] and box.calls("make") == []
    assert box.file("/opt/slurm/etc/plugstack.conf").read_text().count("pyxis.conf") == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda box: box.file("/opt/slurm/include/slurm/spank.h").unlink(), "spank.h is missing: Pyxis is built against the image's Slurm headers"),
        (lambda box: box.stub("apt-get", '[ "$3" = update ] && exit 100; exit 0'), "apt-get update failed: the node needs a route to the Ubuntu archive (a NAT)"),
        (lambda box: box.stub("curl", "exit 7"), "cannot download enroot_3.4.1-1_amd64.deb from https://github.com/NVIDIA/enroot/releases/download (a NAT must route github.com)"),
        (lambda box: (box.bin / "aws").unlink(), "the aws CLI is missing: Enroot logs in to 763104351884.dkr.ecr.us-east-1.amazonaws.com with it"),
    ],
)  # fmt: skip
def test_what_stops_the_install_fails_the_node_by_name(
    node: tuple[Sandbox, Path], change: Any, message: str
) -> None:
    box, where = node
    box.stub("sleep")
    change(box)
    result = box.run_script(str(where / "on-init-complete.sh"))
    assert result.returncode != 0
    assert message in result.stderr
    assert not box.file("/etc/enroot/cdk-neuron/.credentials").exists()
