"""training_smoke: the NeuronCores answer, a collective runs on them, the checkpoint store works.

Run by torchrun on every NeuronCore of one node (trn1.2xlarge: two ranks). Rank 0 also lists the
Neuron devices (neuron-ls) and writes a file to the checkpoint store, reads it back and compares it.
Every check that fails exits non-zero, so the Batch job fails. Self-contained: it travels inside the
job definition (see programs/__init__.py), and only the standard library is imported at module level,
so it can be imported and tested without torch.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MARKER = "CDK_NEURON_INTEG"
CHECKPOINT_BYTES = 256 * 2**20
CHUNK = 8 * 2**20


def emit(event: str, **fields: Any) -> None:
    print(f"{MARKER} {json.dumps({'event': event, **fields}, sort_keys=True)}", flush=True)


def fail(event: str, **fields: Any) -> None:
    emit(event, ok=False, **fields)
    sys.exit(1)


def expected_sum(world_size: int) -> float:
    """Every rank contributes rank + 1: the all-reduced value is 1 + 2 + ... + world_size."""
    return world_size * (world_size + 1) / 2


def mounted_filesystem(path: str, mounts: str) -> str | None:
    """The file-system type mounted at ``path`` in /proc/mounts text, or None."""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] == path.rstrip("/"):
            return fields[2]
    return None


def write_and_read_back(directory: Path, size: int = CHECKPOINT_BYTES) -> dict[str, Any]:
    """Write ``size`` random bytes with fsync, read them back, compare digests; the write's MiB/s."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "probe.bin"
    digest = hashlib.sha256()
    start = time.monotonic()
    with path.open("wb") as out:
        written = 0
        while written < size:
            block = os.urandom(min(CHUNK, size - written))
            digest.update(block)
            out.write(block)
            written += len(block)
        out.flush()
        os.fsync(out.fileno())
    seconds = time.monotonic() - start
    check = hashlib.sha256()
    with path.open("rb") as back:
        for block in iter(lambda: back.read(CHUNK), b""):
            check.update(block)
    path.unlink()
    return {
        "bytes": size,
        "write_seconds": round(seconds, 3),
        "write_mib_per_second": round(size / 2**20 / seconds, 1) if seconds > 0 else None,
        "read_back_matches": check.hexdigest() == digest.hexdigest(),
    }


def node_checks() -> None:
    listing = subprocess.run(["neuron-ls"], capture_output=True, text=True, check=False)
    devices = sorted(glob.glob("/dev/neuron*"))
    if listing.returncode != 0 or not devices:
        fail("neuron_ls", returncode=listing.returncode, devices=devices, stderr=listing.stderr[-500:])
    emit("neuron_ls", ok=True, devices=devices, output=listing.stdout[-1500:])

    directory = os.environ.get("CHECKPOINT_DIR", "")
    fs_type = mounted_filesystem(directory, Path("/proc/mounts").read_text()) if directory else None
    if not directory or fs_type is None or not fs_type.startswith("nfs"):
        fail(
            "checkpoint", directory=directory, filesystem=fs_type, reason="CHECKPOINT_DIR is not an NFS mount"
        )
    job = os.environ.get("AWS_BATCH_JOB_ID", "local").replace(":", "-").replace("#", "-")
    result = write_and_read_back(Path(directory) / "integ" / job)
    if not result["read_back_matches"]:
        fail("checkpoint", filesystem=fs_type, **result)
    emit("checkpoint", ok=True, filesystem=fs_type, **result)


def collective() -> None:
    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend  # noqa: F401 - registers the "xla" process-group backend

    dist.init_process_group("xla")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = xm.xla_device()
    value = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(value)
    xm.mark_step()
    got = float(value.cpu()[0])
    if got != expected_sum(world):
        fail("all_reduce", rank=rank, world_size=world, got=got, expected=expected_sum(world))
    if rank == 0:
        emit("all_reduce", ok=True, world_size=world, value=got)
    dist.destroy_process_group()


def main() -> None:
    first = os.environ.get("RANK", "0") == "0"
    if first:
        node_checks()
    collective()
    if first:
        emit("smoke_ok", ok=True)


if __name__ == "__main__":
    main()
