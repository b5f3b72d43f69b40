"""training_hyperpod: a few training steps on every NeuronCore of the job, then a checkpoint in the store.

Run by torchrun (the cluster's launcher gives ``$TORCHRUN_ARGS``) inside the job image, the Neuron
training DLC, on every NeuronCore of every node. Each rank trains the same small MLP, data parallel
over all ranks, on its own shard of a fixed regression problem (y = x @ w_true, seeded): gradients are
all-reduced across ranks every step (``xm.optimizer_step``), so the replicas stay equal, and the loss
must fall. Rank 0 then saves the model (``xm.save``, which moves it to the CPU first) under
``$CHECKPOINT_DIR``, fsyncs it and prints ``checkpoint_ok <path> <sha256>`` and ``train_ok
steps=<n> first_loss=<x> last_loss=<y>`` lines, which the controller's check reads from the job output
(``hyperpod_check.sh``). Any failure exits non-zero, so the Slurm job fails.

Only the standard library is imported at module level, so the file can be imported and tested
without torch (:func:`loss_fell`, :func:`checkpoint_path`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

STEPS = 8
FEATURES = 64
BATCH = 32
LEARNING_RATE = 0.05
# The last loss must be at most this fraction of the first: SGD on a well-conditioned least-squares
# problem falls fast; a loss that does not fall means the steps did not train.
MAX_LOSS_RATIO = 0.9


def loss_fell(losses: list[float], ratio: float = MAX_LOSS_RATIO) -> bool:
    """True when there are at least two finite losses and the last is at most ``ratio`` x the first."""
    if len(losses) < 2 or any(loss != loss or loss in (float("inf"), float("-inf")) for loss in losses):
        return False
    return losses[-1] <= losses[0] * ratio


def checkpoint_path(checkpoint_dir: str, job_id: str) -> Path:
    """Where rank 0 saves: ``<CHECKPOINT_DIR>/integ/steps-<job id>.pt``."""
    if not checkpoint_dir:
        raise ValueError("CHECKPOINT_DIR is not set: the cluster mounts the store there")
    return Path(checkpoint_dir) / "integ" / f"steps-{job_id or 'local'}.pt"


def main() -> None:
    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend  # noqa: F401 - registers the "xla" process-group backend

    dist.init_process_group("xla")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = xm.xla_device()
    torch.manual_seed(0)  # the same initial model on every rank
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, FEATURES), torch.nn.ReLU(), torch.nn.Linear(FEATURES, 1)
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator().manual_seed(1234 + rank)  # each rank its own shard
    w_true = torch.linspace(-1.0, 1.0, FEATURES).unsqueeze(1)
    x = torch.randn(BATCH, FEATURES, generator=generator)
    y = x @ w_true
    x, y = x.to(device), y.to(device)
    losses: list[float] = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)  # all-reduces the gradients across the ranks, then steps
        # The mean loss over all ranks, so every rank sees the same number.
        mean = xm.all_reduce(xm.REDUCE_SUM, loss.detach()) / world
        xm.mark_step()
        losses.append(float(mean.cpu()))
    if not loss_fell(losses):
        print(f"train_failed losses={losses}", flush=True)
        sys.exit(1)
    path = checkpoint_path(os.environ.get("CHECKPOINT_DIR", ""), os.environ.get("SLURM_JOB_ID", ""))
    if rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
    xm.save(model.state_dict(), str(path), global_master=True)  # rank 0 writes; every rank waits for it
    if rank == 0:
        with path.open("rb") as saved:
            os.fsync(saved.fileno())
            digest = hashlib.sha256(saved.read()).hexdigest()
        print(f"train_ok steps={STEPS} world={world} first_loss={losses[0]:.6f} last_loss={losses[-1]:.6f}")
        print(f"checkpoint_ok {path} {digest}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
