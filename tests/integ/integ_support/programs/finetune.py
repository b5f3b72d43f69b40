"""train_compile_serve: a few fine-tuning steps, saved as a neuronx-distributed checkpoint to compile.

Run by torchrun on both NeuronCores of one trn1.2xlarge (two ranks: data parallel 2, tensor parallel
1). Local rank 0 downloads the suite's model from the Hugging Face Hub (config, safetensors,
tokenizer) into the job's scratch directory; both ranks load it in fp32 through neuronx-distributed
(``initialize_parallel_model``, ``initialize_parallel_optimizer``, SGD: an optimizer without state
keeps one 0.36B replica and its gradients well inside a NeuronCore's 16 GiB), and train
:data:`DEFAULT_STEPS` steps on one fixed chat exchange at a small learning rate, so the model still
answers like itself. The model is saved with neuronx-distributed's own checkpoint API
(``nxd.save_checkpoint``, not xser) to ``$CHECKPOINT_DIR/$RUN_NAME/step-<N>/model/
dp_rank_00_tp_rank_00_pp_rank_00.pt``, the layout NxD's converter reads (aws-neuron/neuronx-distributed
@fbac349b, ``trainer/checkpoint.py`` ``save_checkpoint`` and ``scripts/checkpoint_converter.py``
``get_input_filename``); rank 0 writes the model's config and tokenizer beside it (the compile's
exporter needs both) and reports ``checkpoint_ok`` with the path, the step and the losses.

The training DLC the suites run ships torch-neuronx, neuronx-distributed 0.19 and
neuronx-distributed-training 1.7 (aws-neuron/deep-learning-containers @dbeea77,
``pytorch/training/2.9.0/Dockerfile.neuronx``); transformers and huggingface_hub come with the
latter's dependencies. Not checked from here: a missing module fails the job with a ``missing``
report naming it. Only the standard library is imported at module level, so the file can be
imported and tested without torch.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

MARKER = "CDK_NEURON_INTEG"
DEFAULT_STEPS = 5
LEARNING_RATE = 1e-5
SHARD = "model/dp_rank_00_tp_rank_00_pp_rank_00.pt"
"""The one model shard a TP 1, PP 1 run saves (data-parallel replicas save once)."""
BESIDE_THE_SHARD = ("config.json", "generation_config.json")
"""Model files the compile needs next to the shard, with the tokenizer's own files."""
EXCHANGE = (
    {"role": "user", "content": "Name one planet of the solar system."},
    {"role": "assistant", "content": "Mars."},
)
MODULES = ("torch", "torch_xla", "neuronx_distributed", "transformers", "huggingface_hub")


def emit(event: str, **fields: Any) -> None:
    print(f"{MARKER} {json.dumps({'event': event, **fields}, sort_keys=True)}", flush=True)


def fail(event: str, **fields: Any) -> None:
    emit(event, ok=False, **fields)
    sys.exit(1)


def checkpoint_dir(root: str, run: str, step: int) -> Path:
    """Where step ``step`` of run ``run`` is saved: ``ModelSource.checkpoint(f"{run}/step-{step}")``."""
    return Path(root) / run / f"step-{step}"


def missing_files(directory: Path) -> list[str]:
    """What the compile needs and ``directory`` lacks: the shard, config.json and a tokenizer."""
    missing = [name for name in (SHARD, "config.json") if not (directory / name).is_file()]
    if not any(directory.glob("tokenizer*")):
        missing.append("tokenizer*")
    return missing


def copy_beside(model_dir: Path, target: Path) -> list[str]:
    """Copy the config and tokenizer files of the downloaded model next to the shard."""
    copied = []
    for path in sorted(model_dir.iterdir()):
        if path.is_file() and (
            path.name in BESIDE_THE_SHARD
            or path.name.startswith(("tokenizer", "special_tokens"))
            or path.name in ("vocab.json", "merges.txt")
        ):
            shutil.copyfile(path, target / path.name)
            copied.append(path.name)
    return copied


def environment() -> dict[str, Any]:
    """The job's settings (the job definition's environment and torchrun's)."""
    env = os.environ
    return {
        "model_id": env.get("MODEL_ID", ""),
        "run": env.get("RUN_NAME", ""),
        "steps": int(env.get("TRAIN_STEPS", str(DEFAULT_STEPS))),
        "root": env.get("CHECKPOINT_DIR", ""),
        "rank": int(env.get("RANK", "0")),
        "local_rank": int(env.get("LOCAL_RANK", "0")),
    }


def train(settings: dict[str, Any]) -> None:  # pragma: no cover - runs on a Trainium node only
    import importlib

    for module in MODULES:
        try:
            importlib.import_module(module)
        except ImportError as error:
            fail("missing", module=module, error=str(error))
    import neuronx_distributed as nxd
    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" process-group backend)
    from huggingface_hub import snapshot_download
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dist.init_process_group("xla")
    model_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "cdk-neuron-integ-model"
    if settings["local_rank"] == 0:
        snapshot_download(
            settings["model_id"],
            local_dir=str(model_dir),
            allow_patterns=["*.json", "*.safetensors", "*.txt", "tokenizer*"],
        )
    xm.rendezvous("model downloaded")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    ids = tokenizer.apply_chat_template(list(EXCHANGE), tokenize=True)
    config = nxd.neuronx_distributed_config(
        tensor_parallel_size=1,
        optimizer_config={"zero_one_enabled": False, "grad_clipping": True, "max_grad_norm": 1.0},
    )
    model = nxd.initialize_parallel_model(
        config, lambda: AutoModelForCausalLM.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    )
    optimizer = nxd.initialize_parallel_optimizer(
        config, torch.optim.SGD, model.parameters(), lr=LEARNING_RATE
    )
    device = xm.xla_device()
    batch = torch.tensor([ids], dtype=torch.long, device=device)
    model.train()
    losses = []
    for _ in range(settings["steps"]):
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()
        losses.append(round(float(loss.detach().cpu()), 4))
    target = checkpoint_dir(settings["root"], settings["run"], settings["steps"])
    nxd.save_checkpoint(str(target.parent), target.name, model=model, use_xser=False)
    nxd.finalize_checkpoint()
    xm.rendezvous("checkpoint saved")
    if settings["rank"] == 0:
        copied = copy_beside(model_dir, target)
        missing = missing_files(target)
        if missing:
            fail("checkpoint", path=str(target), missing=missing)
        emit(
            "checkpoint_ok",
            ok=True,
            path=str(target),
            source=f"{settings['run']}/step-{settings['steps']}",
            step=settings["steps"],
            losses=losses,
            copied=copied,
        )


def main() -> None:
    settings = environment()
    unset = [k for k in ("model_id", "run", "root") if not settings[k]]
    if unset:
        fail("settings", unset=unset)
    train(settings)


if __name__ == "__main__":
    main()
