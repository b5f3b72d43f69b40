"""Errors raised while a construct validates its props name that construct."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from constructs import Construct

from cdk_neuron.errors import NeuronConfigError


@contextmanager
def reported_by(scope: Construct) -> Iterator[None]:
    """Re-raise a :class:`NeuronConfigError` from inside the block with ``scope``'s path.

    Constructors wrap their prop validation in it, so ``Ec2InferenceFleet(stack, "Fleet", ...)``
    fails with ``MyStack/Fleet: max_capacity=0: ...`` rather than a bare field name. An error
    that already names a construct (a nested construct's) keeps its own, more precise, path.
    """
    try:
        yield
    except NeuronConfigError as error:
        if error.construct is not None:
            raise
        raise error.at(scope.node.path) from None
