"""training_efa: an all-reduce across every NeuronCore of every node, over EFA, with its bus bandwidth.

Run by torchrun on 2 x trn1.32xlarge (64 ranks). Each rank all-reduces ``--bytes`` of fp32 a number of
times after a warm-up; rank 0 reports the bus bandwidth and exits non-zero when it is under
``--floor`` (GiB/s), so the Batch job fails; above it, it reports ``allreduce_ok``. Bus bandwidth is nccom-test's and nccl-tests' measure:
algorithm bandwidth (bytes / time) x 2 (n - 1) / n for an all-reduce over n ranks, comparable across
rank counts. Self-contained (it travels inside the job definition); torch is imported in main() only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

MARKER = "CDK_NEURON_INTEG"
GIB = 2**30


def emit(event: str, **fields: Any) -> None:
    print(f"{MARKER} {json.dumps({'event': event, **fields}, sort_keys=True)}", flush=True)


def bus_bandwidth_gib_per_second(size_bytes: int, seconds: float, ranks: int) -> float:
    """All-reduce bus bandwidth: (size / time) x 2 (ranks - 1) / ranks, in GiB/s."""
    if seconds <= 0 or ranks < 1:
        raise ValueError("need a positive time and at least one rank")
    return size_bytes / seconds / GIB * 2 * (ranks - 1) / ranks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=256 * 2**20)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--floor", type=float, required=True, help="bus bandwidth floor, GiB/s")
    args = parser.parse_args(argv)

    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend  # noqa: F401 - registers the "xla" process-group backend

    dist.init_process_group("xla")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = xm.xla_device()
    tensor = torch.ones(args.bytes // 4, dtype=torch.float32, device=device)

    def run(times: int) -> float:
        xm.wait_device_ops()
        start = time.monotonic()
        for _ in range(times):
            dist.all_reduce(tensor)
            xm.mark_step()
        xm.wait_device_ops()
        return (time.monotonic() - start) / times

    run(args.warmup)
    seconds = run(args.iterations)
    busbw = bus_bandwidth_gib_per_second(args.bytes, seconds, world)
    if rank == 0:
        ok = busbw >= args.floor
        emit(
            "allreduce",
            ok=ok,
            world_size=world,
            bytes=args.bytes,
            iterations=args.iterations,
            seconds_per_iteration=round(seconds, 6),
            busbw_gib_per_second=round(busbw, 2),
            floor_gib_per_second=args.floor,
        )
        if not ok:
            sys.exit(1)
        emit("allreduce_ok", ok=True, busbw_gib_per_second=round(busbw, 2))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
