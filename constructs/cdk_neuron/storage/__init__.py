"""Storage for Trainium training: checkpoints on EFS and the Neuron compile cache on S3.

- :class:`CheckpointStore` (:class:`ICheckpointStore`): encrypted, backed-up EFS reachable only over
  TLS with IAM, through one access point, from granted clients; warns when a checkpoint save would
  exceed its time budget (estimate: ``cdk_neuron.checkpoint_advisor``); ``metric_*()`` for its EFS
  metrics; ``CheckpointStore.from_checkpoint_store_attributes`` imports one.
- :class:`CompileCache` (:class:`ICompileCache`): the S3 bucket behind ``NEURON_COMPILE_CACHE_URL``
  (why not NFS: see ``compile_cache``); ``CompileCache.from_compile_cache_attributes`` imports one.

Names are loaded lazily: importing the package does not start the jsii runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdk_neuron._lazy import lazy_exports

if TYPE_CHECKING:
    from cdk_neuron.storage.checkpoint_store import (
        CHECKPOINT_PATH,
        SAVE_TIME_WARNING_ID,
        STORAGE_CLASSES,
        CheckpointStore,
        ICheckpointStore,
        StorageClass,
    )
    from cdk_neuron.storage.compile_cache import COMPILE_CACHE_ENV, CompileCache, ICompileCache

_LAZY: dict[str, str] = {
    "CHECKPOINT_PATH": "cdk_neuron.storage.checkpoint_store",
    "SAVE_TIME_WARNING_ID": "cdk_neuron.storage.checkpoint_store",
    "STORAGE_CLASSES": "cdk_neuron.storage.checkpoint_store",
    "CheckpointStore": "cdk_neuron.storage.checkpoint_store",
    "ICheckpointStore": "cdk_neuron.storage.checkpoint_store",
    "StorageClass": "cdk_neuron.storage.checkpoint_store",
    "COMPILE_CACHE_ENV": "cdk_neuron.storage.compile_cache",
    "CompileCache": "cdk_neuron.storage.compile_cache",
    "ICompileCache": "cdk_neuron.storage.compile_cache",
}

__all__ = [
    "CHECKPOINT_PATH",
    "COMPILE_CACHE_ENV",
    "SAVE_TIME_WARNING_ID",
    "STORAGE_CLASSES",
    "CheckpointStore",
    "CompileCache",
    "ICheckpointStore",
    "ICompileCache",
    "StorageClass",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
