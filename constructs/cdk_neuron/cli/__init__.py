"""The ``cdk-neuron`` console script: plan, cost, preflight, submit and status.

Plain Python: nothing here imports ``aws_cdk``, so the commands start fast and run offline.
``boto3`` is imported only inside the commands that call AWS (preflight, submit, status and
``cost --live-prices``).
"""
