"""What the integration suites (``tests/integ/integ_*.py``) share.

- :mod:`.settings`: the Region, AZ IDs, images and model the suites deploy, and their names.
- :mod:`.stacks`: the app, the suites' stacks (pinned to AZ IDs, everything destroyed on deletion)
  and their network.
- :mod:`.programs`: the programs the training jobs run, shipped inside the job definition.
- :mod:`.probe`: the Lambda function that calls a fleet from inside the VPC.
- :mod:`.compiled` and :mod:`.steps`: steps a suite runs during its deploy, before the fleet: a
  ModelCompilation task (its manifest checked) and, in train_compile_serve, the training job.
- :mod:`.registry`: every suite, what it proves and what it runs (for the cost estimate).
- :mod:`.estimate`: the cost of a run, from ``cdk_neuron``'s own price tables.
- :mod:`.snapshots`: offline verification of the committed snapshots (``make test``).
- :mod:`.collect`: the timing report a live run writes (``cdk_neuron.measurements`` format).

The suites import only this package, ``aws_cdk`` and ``cdk_neuron``; nothing here calls AWS except
:mod:`.collect`, the compile step's function (in the account, during a deploy) and the runner (``tests/integ/run.py``), and only on a confirmed live run.
"""
