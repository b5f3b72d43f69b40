"""Download benchmark: the serving node's artifact download path against a local S3 endpoint.

A moto S3 server on 127.0.0.1 holds a model-shaped prefix (a few large weight shards and small
config files). Between the client and the server sits a small proxy that holds every TCP connection
to ``--per-connection-mibps`` (default 16 MiB/s): a scaled-down stand-in for what makes one stream
slow against S3 (EC2 holds a single flow to 5 Gbps; S3 serves one connection at a fraction of an
instance's network). Each strategy downloads the whole prefix into a fresh directory, and its rate
is set against a single stream (one GET per object, one object at a time) in the same run:

- ``single-stream``: one request at a time, no ranged parts (the baseline);
- ``classic-10``: boto3's transfer manager as ``aws s3 sync`` runs it by default (10 concurrent
  requests, 8 MiB parts);
- ``parallel-N``: the same manager with N concurrent ranged GETs across all objects at once;
- ``crt``: the AWS Common Runtime transfer client (``awscrt``) where it installs, at a 10 Gb/s target;
- ``node-model.sh``: the node's own download path, run by bash: ``serving/model.sh``'s ``fetch_model``
  with ``lib/common.sh`` (the CRT settings file it writes, ``aws s3 sync`` under ``retry`` and the
  start-up deadline, the phase it records), against the same endpoint (``AWS_ENDPOINT_URL_S3``), with
  the AWS CLI found on PATH. The node runs AWS CLI v2 from the Amazon Linux repositories, which reads
  ``preferred_transfer_client = crt``; the CLI that installs here from PyPI is v1, which has no CRT
  transfer client and ignores that setting (it runs the classic transfer manager, 10 requests). The
  bench prints which CLI ran: the row measures the node's script around that client, not CRT.

What it measures: **on loopback this is the downloader's concurrency, not S3's speed.** The server is
a Python process on the same two cores; no claim about S3 or about an instance's network is made from
these numbers. They show that the client side of the node's fast path parallelizes (the ratio), which
is the property the CRT transfer client's design rests on (docs/fast-start.md).

    python bench/download_bench.py [--size-mib 256] [--per-connection-mibps 16] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig

BUCKET = "bench-models"
PREFIX = "llama/neuron-tp2/"
MIB = 2**20
NODE_FILES = Path(__file__).resolve().parent.parent / "constructs" / "cdk_neuron" / "node_programs" / "files"
"""The node programs, as the bundle ships them (cdk_neuron/node_programs/files)."""
NODE_FETCH = (
    # As boot.sh and ready.sh set up before they source model.sh (ROOT: the node's paths' prefix).
    'set -Eeuo pipefail; ROOT="${CDK_NEURON_ROOT:-}"; . "$1/lib/common.sh"; . "$1/serving/model.sh"; fetch_model'
)


@dataclass(frozen=True)
class Result:
    strategy: str
    median_seconds: float
    mib_per_second: float
    ratio_to_single_stream: float
    note: str = ""


class ThrottlingProxy:
    """Forward 127.0.0.1:<port> to the server, each connection's downloads held to ``rate`` bytes/s."""

    def __init__(self, upstream_port: int, rate: float) -> None:
        self.upstream_port, self.rate = upstream_port, rate
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.stopped = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump, args=(downstream, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream, self.rate), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, rate: float | None) -> None:
        started, sent = time.perf_counter(), 0
        try:
            while chunk := source.recv(64 * 1024):
                sink.sendall(chunk)
                sent += len(chunk)
                if rate is not None:
                    ahead = sent / rate - (time.perf_counter() - started)
                    if ahead > 0:
                        time.sleep(ahead)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


def _populate(client: Any, size_mib: int) -> list[tuple[str, int]]:
    """Four weight shards sharing ``size_mib`` and three small files, like a Neuron export."""
    client.create_bucket(Bucket=BUCKET)
    shard = size_mib // 4 * MIB
    objects = [(f"{PREFIX}model-{i:05d}-of-00004.safetensors", shard) for i in range(1, 5)]
    objects += [(f"{PREFIX}{name}", 4096) for name in ("config.json", "tokenizer.json", "neuron_config.json")]
    block = os.urandom(MIB)
    for key, size in objects:
        body = (block * (size // MIB + 1))[:size]
        client.put_object(Bucket=BUCKET, Key=key, Body=body)
    return objects


def _single_stream(client: Any, objects: list[tuple[str, int]], target: Path) -> None:
    config = TransferConfig(use_threads=False, multipart_threshold=2**40)
    for key, _ in objects:
        client.download_file(BUCKET, key, str(target / Path(key).name), Config=config)


def _managed(concurrency: int) -> Callable[[Any, list[tuple[str, int]], Path], None]:
    def run(client: Any, objects: list[tuple[str, int]], target: Path) -> None:
        config = TransferConfig(
            max_concurrency=concurrency, multipart_chunksize=8 * MIB, multipart_threshold=8 * MIB
        )
        # Objects in parallel as well as parts, as `aws s3 sync` does.
        with ThreadPoolExecutor(max_workers=min(len(objects), concurrency)) as pool:
            list(
                pool.map(
                    lambda item: client.download_file(
                        BUCKET, item[0], str(target / Path(item[0]).name), Config=config
                    ),
                    objects,
                )
            )

    return run


def _crt(endpoint: str) -> Callable[[Any, list[tuple[str, int]], Path], None] | str:
    """The CRT transfer manager against the local endpoint, or why it cannot run here."""
    try:
        import awscrt  # type: ignore[import-untyped]  # noqa: F401
        from awscrt.auth import AwsCredentialsProvider  # type: ignore[import-untyped]
        from s3transfer.crt import (  # type: ignore[import-untyped]
            BotocoreCRTRequestSerializer,
            CRTTransferManager,
            create_s3_crt_client,
        )
    except ImportError as error:
        return f"awscrt is not installed ({error})"
    session = boto3.session.Session()

    def run(client: Any, objects: list[tuple[str, int]], target: Path) -> None:
        crt_client = create_s3_crt_client(
            "us-east-1",
            crt_credentials_provider=AwsCredentialsProvider.new_static("bench", "bench"),
            target_throughput=10e9 / 8,
            use_ssl=False,
        )
        serializer = BotocoreCRTRequestSerializer(
            session._session,
            client_kwargs={
                "region_name": "us-east-1",
                "endpoint_url": endpoint,
                "aws_access_key_id": "bench",
                "aws_secret_access_key": "bench",
            },
        )
        with CRTTransferManager(crt_client, serializer) as manager:
            futures = [manager.download(BUCKET, key, str(target / Path(key).name)) for key, _ in objects]
            for future in futures:
                future.result()

    return run


def _node_path(endpoint: str) -> tuple[Callable[[Any, list[tuple[str, int]], Path], None] | str, str]:
    """The node's ``fetch_model`` under bash against the local endpoint, and the AWS CLI that runs it;
    or why it cannot run here."""
    aws, bash = shutil.which("aws"), shutil.which("bash")
    if aws is None or bash is None:
        return (
            "no aws CLI or bash on PATH (the node installs awscli-2 from the Amazon Linux repositories)",
            "",
        )
    version = subprocess.run([aws, "--version"], capture_output=True, text=True, check=False)
    cli = (version.stdout or version.stderr).split(" ", 1)[0].strip()

    def run(client: Any, objects: list[tuple[str, int]], target: Path) -> None:
        root = Path(tempfile.mkdtemp(prefix="cdk-neuron-node-"))
        try:
            # The node's paths under CDK_NEURON_ROOT, as the node-program tests run them.
            (root / "proc").mkdir()
            (root / "proc" / "uptime").write_text("1.00 1.00\n")
            (root / "etc" / "cdk-neuron").mkdir(parents=True)
            env = {
                **os.environ,
                "CDK_NEURON_ROOT": str(root),
                "CDK_NEURON_PROGRAM": "bench",
                "ARTIFACT_URI": f"s3://{BUCKET}/{PREFIX}",
                "REGION": "us-east-1",
                "DATA_DIR": "/data",
                "MODEL_TMPFS_GIB": "0",
                "S3_TARGET_BANDWIDTH": str(round(10e9 / 8)),
                "STARTUP_DEADLINE_SECONDS": "86400",
                "AWS_ENDPOINT_URL_S3": endpoint,
                "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench",
            }
            done = subprocess.run(
                [bash, "-c", NODE_FETCH, "_", str(NODE_FILES)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"fetch_model exited {done.returncode}: {done.stderr.strip()[-400:]}")
            for item in (root / "data" / "model").iterdir():
                item.rename(target / item.name)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    return run, cli


def _time(
    run: Callable[[Any, list[tuple[str, int]], Path], None],
    client: Any,
    objects: list[tuple[str, int]],
    rounds: int,
) -> float:
    samples = []
    for _ in range(rounds):
        target = Path(tempfile.mkdtemp(prefix="cdk-neuron-bench-"))
        try:
            started = time.perf_counter()
            run(client, objects, target)
            samples.append(time.perf_counter() - started)
            expected = {Path(key).name: size for key, size in objects}
            got = {p.name: p.stat().st_size for p in target.iterdir()}
            if got != expected:
                raise SystemExit(f"download incomplete: {got} != {expected}")
        finally:
            shutil.rmtree(target, ignore_errors=True)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=256, help="total size of the weight shards")
    parser.add_argument(
        "--per-connection-mibps", type=float, default=16.0, help="the proxy's cap on each connection"
    )
    parser.add_argument("--rounds", type=int, default=3, help="samples per strategy (median)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    proxy = ThrottlingProxy(port, args.per_connection_mibps * MIB)
    proxy.start()
    endpoint = f"http://127.0.0.1:{proxy.port}"
    try:
        objects = _populate(_client(f"http://127.0.0.1:{port}"), args.size_mib)
        client = _client(endpoint)
        total_mib = sum(size for _, size in objects) / MIB
        strategies: list[tuple[str, Callable[[Any, list[tuple[str, int]], Path], None] | str]] = [
            ("single-stream", _single_stream),
            ("classic-10", _managed(10)),
            ("parallel-32", _managed(32)),
            ("parallel-64", _managed(64)),
            ("crt", _crt(endpoint)),
        ]
        node_run, node_cli = _node_path(endpoint)
        strategies.append(("node-model.sh", node_run))
        results: list[Result] = []
        baseline = 0.0
        for name, run in strategies:
            if isinstance(run, str):
                results.append(Result(name, 0.0, 0.0, 0.0, f"not run: {run}"))
                continue
            try:
                seconds = _time(run, client, objects, args.rounds)
            except Exception as error:  # a strategy that cannot run here is reported, not fatal
                results.append(Result(name, 0.0, 0.0, 0.0, f"not run: {type(error).__name__}: {error}"))
                continue
            if name == "single-stream":
                baseline = seconds
            note = f"ran with {node_cli}" if name == "node-model.sh" else ""
            results.append(
                Result(
                    name, round(seconds, 3), round(total_mib / seconds, 1), round(baseline / seconds, 2), note
                )
            )
    finally:
        proxy.stop()
        server.stop()
    if args.json:
        print(
            json.dumps(
                {
                    "total_mib": total_mib,
                    "per_connection_mibps": args.per_connection_mibps,
                    "results": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
    else:
        print(
            f"{total_mib:.0f} MiB from moto's S3 server on 127.0.0.1, each connection held to "
            f"{args.per_connection_mibps:g} MiB/s, median of {args.rounds} rounds"
        )
        print("loopback: this measures the downloader's concurrency, not S3's speed")
        for r in results:
            if not r.median_seconds:
                print(f"  {r.strategy:14} {r.note}")
            else:
                print(
                    f"  {r.strategy:14} {r.median_seconds:7.2f} s  {r.mib_per_second:8.1f} MiB/s  "
                    f"x{r.ratio_to_single_stream:.2f} vs single stream" + (f"  ({r.note})" if r.note else "")
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
