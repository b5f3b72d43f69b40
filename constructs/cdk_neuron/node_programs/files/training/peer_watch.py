#!/usr/bin/env python3
"""cdk-neuron peer watch: run a multi-node job's training command, and end the attempt when a node is lost.

Standard library only: it runs inside the job container (the Neuron DLCs have python3). The launcher
(``training/launcher.sh``) execs it on every node of a job with more than one node:

- ``serve`` (the main node, Batch node index 0): waits until every child node has joined (TCP, one
  JSON line each), starts the training command, then listens to the children's heartbeats. A child
  that stops beating for ``--silence`` seconds, or whose connection drops before it reported its
  exit, is **lost**: the training processes are stopped and the main node exits with
  ``--lost-exit-code`` (75), which the job definition's retry rules retry on fresh nodes. AWS Batch
  retries a multi-node job only when its *main* node fails ("If you specify job retries, main node
  failures cause another attempt to occur. Child node failures don't cause more attempts to occur",
  AWS Batch User Guide, "Multi-node parallel jobs",
  https://docs.aws.amazon.com/batch/latest/userguide/multi-node-parallel-jobs.html, read 2026-12-01),
  so without this a lost child left the main node hanging in its collectives until the job
  timeout, every node billing. A child whose training exited non-zero ends the attempt with that
  code (the training's own failure, not retried unless it is 75). If the main node's own training
  fails, the watch waits up to one silence for the children's word, so a failure caused by a lost
  peer (a collective that timed out) is still retried.
- ``join`` (every child node): connects to the main node (retrying until ``--join-timeout``), runs
  the training command, beats every ``--interval`` seconds, and reports the command's exit code.

The training command runs in its own process group; SIGTERM or SIGINT to the watch is passed to the
whole group, SIGKILL follows after ``--stop-grace`` seconds. Timings come from
:mod:`cdk_neuron.timeouts` through the job environment.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "cdk-neuron-peer-watch/1"
MAX_LINE = 65536


def log(message: str) -> None:
    print(f"cdk-neuron-peer-watch: {message}", file=sys.stderr, flush=True)


def _send(sock: socket.socket, payload: dict[str, Any]) -> None:
    sock.sendall((json.dumps(payload, sort_keys=True) + "\n").encode())


class Training:
    """The training command, in its own process group, stopped as a whole."""

    def __init__(self, command: Sequence[str], stop_grace: float) -> None:
        self.process = subprocess.Popen(list(command), start_new_session=True)
        self.stop_grace = stop_grace
        self.stop_requested: int | None = None

    def poll(self) -> int | None:
        return self.process.poll()

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Signal the whole group now and SIGKILL it after ``stop_grace`` seconds; does not wait."""
        if self.process.poll() is not None:
            return
        self._signal(sig)
        killer = threading.Timer(self.stop_grace, self._signal, args=(signal.SIGKILL,))
        killer.daemon = True
        killer.start()

    def stop(self) -> int:
        """:meth:`terminate`, then wait for the group's leader; its exit code."""
        self.terminate()
        return self.process.wait()


def _forward_signals(training: list[Training]) -> None:
    """SIGTERM/SIGINT to the watch stop the training group (Batch stopping the job).

    The handler only signals (never waits: the main thread may be inside ``Popen.wait``); the
    supervisor then sees the training exit and returns its status.
    """

    def handler(signum: int, _frame: Any) -> None:
        log(f"received signal {signum}: stopping the training processes")
        if not training:
            sys.exit(128 + signum)
        training[0].stop_requested = signum
        training[0].terminate(signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _status(code: int | None) -> int:
    """A Popen return code as a shell exit status (a signal -N becomes 128 + N)."""
    if code is None:
        return 1
    return code if code >= 0 else 128 - code


@dataclass
class Peer:
    index: int
    sock: socket.socket
    last_heard: float
    buffer: bytes = b""
    exit_code: int | None = None
    lost: str | None = None


@dataclass
class Watch:
    """The main node's view of its children."""

    nnodes: int
    silence: float
    peers: dict[int, Peer] = field(default_factory=dict)
    selector: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)

    def add(self, peer: Peer) -> None:
        self.peers[peer.index] = peer
        self.selector.register(peer.sock, selectors.EVENT_READ, peer)
        # A quick child's exit report may have arrived with its hello, before it was accepted.
        self._consume(peer)

    def _drop(self, peer: Peer, why: str | None) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(peer.sock)
        peer.sock.close()
        if why is not None and peer.exit_code is None and peer.lost is None:
            peer.lost = why
            log(f"node {peer.index} is lost: {why}")

    def _consume(self, peer: Peer) -> None:
        """Act on every whole line received: beats only refresh ``last_heard``; an exit report settles the peer."""
        while b"\n" in peer.buffer and peer.exit_code is None:
            line, peer.buffer = peer.buffer.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict) and isinstance(message.get("exit"), int):
                    peer.exit_code = message["exit"]
                    log(f"node {peer.index} finished its training command with exit code {peer.exit_code}")
                    self._drop(peer, None)

    def _read(self, peer: Peer) -> None:
        try:
            chunk = peer.sock.recv(4096)
        except OSError as error:
            self._drop(peer, f"its connection failed ({error})")
            return
        if chunk:
            peer.buffer += chunk
            peer.last_heard = time.monotonic()
            if len(peer.buffer) > MAX_LINE:
                self._drop(peer, "it sent a message that is too long")
                return
        # Lines first: the exit report and the close can arrive in one read.
        self._consume(peer)
        if not chunk and peer.exit_code is None:
            self._drop(peer, "its connection closed before it reported an exit code")

    def pump(self, timeout: float) -> None:
        """Read what arrived within ``timeout`` seconds and mark silent peers lost."""
        for key, _ in self.selector.select(timeout=max(timeout, 0.0)):
            self._read(key.data)
        now = time.monotonic()
        for peer in self.peers.values():
            if peer.exit_code is None and peer.lost is None and now - peer.last_heard > self.silence:
                self._drop(peer, f"nothing heard from it for {self.silence:.0f} s (host or network lost)")

    def lost(self) -> list[Peer]:
        return [p for p in self.peers.values() if p.lost is not None]

    def failed(self) -> list[Peer]:
        return [p for p in self.peers.values() if p.exit_code not in (None, 0)]

    def settled(self) -> bool:
        return all(p.exit_code is not None or p.lost is not None for p in self.peers.values())

    def close(self) -> None:
        for peer in self.peers.values():
            with contextlib.suppress(OSError):
                peer.sock.close()
        self.selector.close()


def accept_children(server: socket.socket, watch: Watch, join_timeout: float) -> list[int]:
    """Accept every child's hello within ``join_timeout``; the indexes still missing."""
    expected = set(range(1, watch.nnodes))
    deadline = time.monotonic() + join_timeout
    while expected - set(watch.peers):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        server.settimeout(left)
        try:
            conn, _ = server.accept()
        except TimeoutError:
            break
        conn.settimeout(5)
        data = b""
        try:
            while b"\n" not in data and len(data) < MAX_LINE:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            line, _, rest = data.partition(b"\n")
            hello = json.loads(line.decode() or "null")
            index = hello["index"] if isinstance(hello, dict) and hello.get("protocol") == PROTOCOL else None
        except (OSError, ValueError, KeyError):
            index, rest = None, b""
        if not isinstance(index, int) or index not in expected or index in watch.peers:
            conn.close()
            continue
        conn.setblocking(False)
        watch.add(Peer(index=index, sock=conn, last_heard=time.monotonic(), buffer=rest))
        log(f"node {index} joined ({len(watch.peers)}/{watch.nnodes - 1} children)")
    return sorted(expected - set(watch.peers))


def serve(args: argparse.Namespace, command: Sequence[str]) -> int:
    watch = Watch(nnodes=args.nnodes, silence=args.silence)
    training: list[Training] = []
    _forward_signals(training)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((args.bind, args.port))
        server.listen(max(args.nnodes, 1))
        missing = accept_children(server, watch, args.join_timeout)
    if missing:
        log(
            f"LOST: node(s) {missing} did not join within {args.join_timeout:.0f} s; no training step ran. "
            f"Exit {args.lost_exit_code}: the job's retry rules start a new attempt on fresh nodes"
        )
        watch.close()
        return int(args.lost_exit_code)
    log(f"every node joined; starting the training command (silence limit {args.silence:.0f} s)")
    training.append(Training(command, args.stop_grace))
    try:
        return _supervise(watch, training[0], args)
    finally:
        watch.close()


def _supervise(watch: Watch, training: Training, args: argparse.Namespace) -> int:
    step = min(1.0, args.interval)
    while True:
        watch.pump(step)
        code = training.poll()
        if watch.lost():
            training.stop()
            log(f"LOST: stopping this attempt with exit code {args.lost_exit_code} to be retried")
            return int(args.lost_exit_code)
        if watch.failed() and code is None:
            peer = watch.failed()[0]
            log(f"node {peer.index}'s training failed (exit {peer.exit_code}); stopping this node's")
            training.stop()
            return int(peer.exit_code or 1)
        if code is None:
            continue
        status = _status(code)
        if status == 0 or training.stop_requested is not None:
            return status
        # This node's training failed: wait up to one silence for the peers' word; a lost peer makes it
        # an infrastructure failure (retried), a peer's own failure or none keeps this node's code.
        deadline = time.monotonic() + args.silence + args.interval
        while not watch.settled() and not watch.lost() and time.monotonic() < deadline:
            watch.pump(step)
        if watch.lost():
            log(
                f"LOST: this node's training failed after a peer was lost; exit {args.lost_exit_code} to be retried"
            )
            return int(args.lost_exit_code)
        return status


def join(args: argparse.Namespace, command: Sequence[str]) -> int:
    deadline = time.monotonic() + args.join_timeout
    sock: socket.socket | None = None
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            sock = socket.create_connection((args.main_address, args.port), timeout=5)
            _send(sock, {"protocol": PROTOCOL, "index": args.index})
            break
        except OSError as error:
            last = error
            sock = None
            time.sleep(min(1.0, args.interval))
    if sock is None:
        log(
            f"could not reach the main node {args.main_address}:{args.port} within {args.join_timeout:.0f} s: {last}"
        )
        return int(args.lost_exit_code)
    training: list[Training] = [Training(command, args.stop_grace)]
    _forward_signals(training)
    stopped = threading.Event()
    lock = threading.Lock()

    def beat() -> None:
        while not stopped.wait(args.interval):
            with lock, contextlib.suppress(OSError):
                _send(sock, {"beat": time.time()})

    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    code = _status(training[0].process.wait())
    stopped.set()
    with lock, contextlib.suppress(OSError):
        _send(sock, {"exit": code})
        sock.close()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n", 1)[0], usage="%(prog)s {serve,join} [options] -- COMMAND..."
    )
    parser.add_argument("role", choices=("serve", "join"))
    parser.add_argument("--index", type=int, required=True, help="this node's Batch node index (0 = main)")
    parser.add_argument("--nnodes", type=int, required=True)
    parser.add_argument("--main-address", required=True)
    parser.add_argument("--bind", default="0.0.0.0", help="serve: the address to listen on")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--join-timeout", type=float, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--silence", type=float, required=True)
    parser.add_argument("--stop-grace", type=float, required=True)
    parser.add_argument("--lost-exit-code", type=int, default=75)
    words = list(sys.argv[1:] if argv is None else argv)
    split = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:split])
    command = words[split + 1 :]
    if not command:
        parser.error("give the training command after --")
    if args.silence <= args.interval:
        parser.error("--silence must be longer than --interval")
    return serve(args, command) if args.role == "serve" else join(args, command)


if __name__ == "__main__":
    sys.exit(main())
