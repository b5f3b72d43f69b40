"""The ``cdk-neuron`` console script: plan, cost, preflight, submit and status.

A table of commands (:mod:`cdk_neuron.cli.commands`), each declaring its name, arguments and
``run(args, ctx) -> ExitStatus``; a :class:`~cdk_neuron.cli.context.Context` that tests replace; typed
results (:mod:`cdk_neuron.cli.result`) whose ``to_json()`` is the ``--json`` document. docs/cli.md,
"Adding a command", is the recipe.

Plain Python: nothing here imports ``aws_cdk``, so the commands start fast and run offline.
``boto3`` is imported only inside the commands that call AWS (preflight, submit, status and
``cost --live-prices``); ``rich`` and ``shtab`` (the ``cli`` extra) only for table output and
completion scripts.
"""
