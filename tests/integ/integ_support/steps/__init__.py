"""The functions of the suites' deploy-time steps (CDK provider framework), shipped as one Lambda asset.

- ``compile_task.py``: run a ModelCompilation task, wait, check the manifest it uploaded.
- ``training_job.py``: submit a Batch training job, wait until it SUCCEEDED.
"""
