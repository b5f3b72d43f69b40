"""Reproduction of the vLLM Neuron DLC's entrypoint: ENTRYPOINT ["python", "/usr/local/bin/vllm_entrypoint.py"]
(aws-neuron/deep-learning-containers @b08f346, tag 2.25.0, docker/common/vllm_entrypoint.py): the
arguments are run as a command, unchanged, and its exit status is the container's."""

import subprocess
import sys

sys.exit(subprocess.run(sys.argv[1:], check=False).returncode)
