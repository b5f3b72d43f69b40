"""Storage for Trainium training: checkpoints on EFS and the Neuron compile cache on S3.

- ``CheckpointStore``: encrypted, backed-up EFS reachable only over TLS with IAM, through one
  access point, from granted clients; warns when a checkpoint save would exceed its time budget
  (estimate: ``cdk_neuron.checkpoint_advisor``).
- ``CompileCache``: the S3 bucket behind ``NEURON_COMPILE_CACHE_URL`` (why not NFS: see
  ``compile_cache``).
"""

from __future__ import annotations

from cdk_neuron.storage.checkpoint_store import CHECKPOINT_PATH, SAVE_TIME_WARNING_ID, CheckpointStore
from cdk_neuron.storage.compile_cache import COMPILE_CACHE_ENV, CompileCache

__all__ = ["CHECKPOINT_PATH", "COMPILE_CACHE_ENV", "SAVE_TIME_WARNING_ID", "CheckpointStore", "CompileCache"]
