"""The AMI contract (cdk_neuron.contracts.ami) holds: every command a host node program may call is on
the ECS-optimized AL2023 Neuron AMI or installed over the route before use, and none calls a tool the
AMI lacks.

The node-program rehearsals run with a PATH of exactly the contract's commands (tests/node_sandbox.py),
so a program that calls anything else fails its rehearsal with "command not found".
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from node_sandbox import REAL_TOOLS, STUBBED

from cdk_neuron.contracts import ami
from cdk_neuron.node_programs import FILES_DIR

# training/launcher.sh, peer_watch.py and rank_order.py run inside the job container: the training
# image contract (cdk_neuron.contracts.images) lists what they need there. compile/ runs in the
# compile task's containers (their image contracts) and hyperpod/ on HyperPod's Ubuntu Slurm image,
# not on the ECS AMI this contract describes.
OTHER_HOSTS = ("compile", "hyperpod")
HOST_PROGRAMS = sorted(
    p
    for p in (*FILES_DIR.rglob("*.sh"), *FILES_DIR.rglob("*.service"))
    if p.name != "launcher.sh" and p.relative_to(FILES_DIR).parts[0] not in OTHER_HOSTS
)


def _code_lines(path: Path) -> list[tuple[int, str]]:
    return [
        (number, line)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _runs(command: str, line: str) -> bool:
    """Whether ``line`` runs ``command`` (as a statement, a unit's Exec line, or after a pipe or ``&&``)."""
    name = re.escape(command)
    return bool(
        re.search(rf"(^\s*|^Exec\w*=\S*?/?|[|;&]\s*|\$\(\s*|\b(?:then|do|retry \d+)\s+){name}(\s|$)", line)
    )


def test_the_rehearsal_path_is_exactly_the_contract() -> None:
    assert sorted({*REAL_TOOLS, *STUBBED}) == sorted(t.command for t in ami.AMI_TOOLS)
    assert len({t.command for t in ami.AMI_TOOLS}) == len(ami.AMI_TOOLS)


@pytest.mark.parametrize("command", sorted(ami.ROUTE_PACKAGES))
def test_a_tool_the_ami_lacks_is_installed_over_the_route_before_it_runs(command: str) -> None:
    package = ami.ROUTE_PACKAGES[command]
    if command == "aws":
        # The bootstrap installs the AWS CLI before it fetches the bundle, so before any program runs.
        bootstrap = (FILES_DIR / "bootstrap.sh").read_text()
        assert bootstrap.index(f"dnf install -y -q {package}") < bootstrap.index("aws s3 cp")
        return
    ensure = f"ensure_command {command} {package}"
    if command == "unpigz":
        # dockerd runs it (to decompress layers while it pulls), not a program: the serving boot
        # ensures it before it restarts Docker, which is before the pull.
        boot = (FILES_DIR / "serving" / "boot.sh").read_text()
        assert boot.index(ensure) < boot.index("systemctl restart docker.service") < boot.index("docker pull")
        return
    users = 0
    for path in HOST_PROGRAMS:
        lines = _code_lines(path)
        runs = [n for n, line in lines if _runs(command, line) and ensure not in line]
        if not runs:
            continue
        users += 1
        if path.suffix == ".service":
            # A unit runs what the program that installs the units ensured first (serving/boot.sh).
            installer = (FILES_DIR / "serving" / "boot.sh").read_text()
            assert installer.index(ensure) < installer.index("install_units\n"), path.name
            continue
        ensured = [n for n, line in lines if ensure in line]
        assert ensured and min(ensured) < min(runs), (
            f"{path.relative_to(FILES_DIR)} runs {command} before {ensure}"
        )
    assert users, f"no host program runs {command}: drop it from the contract"


@pytest.mark.parametrize("command", sorted(ami.NEVER))
def test_no_host_program_calls_a_tool_the_ami_does_not_have(command: str) -> None:
    calls = [
        f"{path.relative_to(FILES_DIR)}:{n}"
        for path in HOST_PROGRAMS
        for n, line in _code_lines(path)
        if re.search(rf"(?<![\w.-]){re.escape(command)}(?![\w.-])", line)
    ]
    assert calls == [], f"{command}: {ami.tool(command).evidence}"


def test_the_neuron_tools_are_where_the_ami_puts_them() -> None:
    # aws-neuronx-tools installs into /opt/aws/neuron/bin, which is not on cloud-init's PATH.
    assert "/opt/aws/neuron/bin/neuron-ls" in (FILES_DIR / "lib" / "common.sh").read_text()
    assert ami.tool("neuron-ls").provided == "ami"
