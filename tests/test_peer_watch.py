"""The peer watch (node_programs/files/training/peer_watch.py): real processes, real sockets, short timings.

A lost child node must end the attempt with exit 75 (retried by the job definition) within one
silence, whatever the training code is doing; a training failure keeps its own code.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdk_neuron.node_programs import FILES_DIR

WATCH = FILES_DIR / "training" / "peer_watch.py"
# Fast timings for the tests (the real ones come from cdk_neuron.timeouts). The silence is long
# enough that a loaded test machine never loses a live peer; only the test of a silent peer shortens it.
INTERVAL, SILENCE = "0.1", "5"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(
    role: str,
    index: int,
    nnodes: int,
    port: int,
    command: str,
    join_timeout: float = 10,
    silence: str = SILENCE,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, str(WATCH), role, "--index", str(index), "--nnodes", str(nnodes),
            "--main-address", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(port),
            "--join-timeout", str(join_timeout), "--interval", INTERVAL, "--silence", silence,
            "--stop-grace", "1", "--", "bash", "-c", command,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for(marker: Path, timeout: float = 20) -> None:
    """Until ``marker`` exists: the command runs only once every node joined."""
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert time.monotonic() < deadline, f"{marker} never appeared"
        time.sleep(0.05)


def finish(process: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str]:
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err


def test_every_node_succeeds(tmp_path: Path) -> None:
    port = free_port()
    marker = tmp_path / "main-ran"
    main = start("serve", 0, 3, port, f"sleep 0.5; touch {marker}")
    children = [start("join", i, 3, port, "sleep 0.5") for i in (1, 2)]
    assert [finish(c)[0] for c in children] == [0, 0]
    code, err = finish(main)
    assert code == 0, err
    assert marker.exists()
    assert "every node joined" in err


def test_a_child_that_never_joins_ends_the_attempt_for_a_retry_before_training(tmp_path: Path) -> None:
    marker = tmp_path / "trained"
    main = start("serve", 0, 2, free_port(), f"touch {marker}", join_timeout=1)
    code, err = finish(main)
    assert code == 75
    assert "node(s) [1] did not join within 1 s" in err
    assert not marker.exists()  # no training step ran


def test_a_child_lost_mid_run_stops_the_main_training_and_exits_75(tmp_path: Path) -> None:
    port = free_port()
    stopped = tmp_path / "stopped"
    # The main node's training would hang in a collective forever; it traps SIGTERM to prove it is told.
    main = start("serve", 0, 2, port, f"trap 'touch {stopped}; exit 143' TERM; while :; do sleep 0.1; done")
    child = start("join", 1, 2, port, f"touch {tmp_path / 'joined'}; sleep 60")
    wait_for(tmp_path / "joined")
    child.kill()  # the child's container (and so its connection) disappears
    child.wait()
    began = time.monotonic()
    code, err = finish(main)
    assert code == 75, err
    assert "node 1 is lost" in err
    assert stopped.exists()  # SIGTERM reached the training's process group
    assert time.monotonic() - began < 10


def test_a_silent_child_is_lost_after_the_silence_limit(tmp_path: Path) -> None:
    """A host that dies sends no FIN: the connection stays open, the beats stop."""
    port = free_port()
    main = start("serve", 0, 2, port, "sleep 60", silence="0.8")
    child = start("join", 1, 2, port, f"touch {tmp_path / 'joined'}; sleep 60", silence="0.8")
    wait_for(tmp_path / "joined")
    os.kill(child.pid, signal.SIGSTOP)  # frozen: no beat, no close
    try:
        code, err = finish(main)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert code == 75, err
    assert "nothing heard from it for 1 s" in err


def test_the_main_training_failure_keeps_its_code_when_every_peer_is_alive() -> None:
    port = free_port()
    main = start("serve", 0, 2, port, "sleep 0.5; exit 3")
    child = start("join", 1, 2, port, "sleep 1")
    code, err = finish(main)
    finish(child)
    assert code == 3, err


def test_a_child_training_failure_ends_the_attempt_with_its_code(tmp_path: Path) -> None:
    port = free_port()
    main = start("serve", 0, 2, port, "sleep 60")
    child = start("join", 1, 2, port, "sleep 0.5; exit 4")
    assert finish(child)[0] == 4
    code, err = finish(main)
    assert code == 4, err
    assert "node 1's training failed (exit 4)" in err


def test_sigterm_to_a_node_reaches_its_training_processes(tmp_path: Path) -> None:
    port = free_port()
    stopped = tmp_path / "stopped"
    main = start("serve", 0, 2, port, "sleep 60")
    joined = tmp_path / "joined"
    child = start(
        "join",
        1,
        2,
        port,
        f"trap 'touch {stopped}; exit 143' TERM; touch {joined}; while :; do sleep 0.1; done",
    )
    wait_for(joined)
    child.send_signal(signal.SIGTERM)  # Batch stopping the container
    code, _ = finish(child)
    assert code == 143
    assert stopped.exists()
    main.kill()
    main.wait()


def test_the_child_gives_up_when_the_main_node_never_listens() -> None:
    child = start("join", 1, 2, free_port(), "true", join_timeout=1)
    code, err = finish(child)
    assert code == 75
    assert "could not reach the main node" in err


@pytest.mark.parametrize("arguments", [["--silence", "0.1", "--", "true"], []])
def test_bad_arguments_are_refused(arguments: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, str(WATCH), "serve", "--index", "0", "--nnodes", "2", "--main-address", "x", "--port", "1",
         "--join-timeout", "1", "--interval", "0.2", "--silence", "1", "--stop-grace", "1", *arguments],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2


def test_an_exit_report_that_came_with_the_hello_is_not_taken_for_a_lost_peer() -> None:
    """A child whose command ends at once sends hello, exit and close before the main node accepts it;
    the exit line then sits in the buffer the hello left (it did, under load: node 7 of 8 'lost')."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("peer_watch", WATCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["peer_watch"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    ours, theirs = socket.socketpair()
    theirs.close()  # the child is gone
    watch = module.Watch(nnodes=2, silence=5.0)
    watch.add(module.Peer(index=1, sock=ours, last_heard=time.monotonic(), buffer=b'{"exit": 0}\n'))
    watch.pump(0.1)
    assert watch.lost() == [] and watch.settled()
    assert watch.peers[1].exit_code == 0
    watch.close()
