"""NeuronConfigError names the field, the value, the fix and, from a construct, the construct."""

from __future__ import annotations

import pytest

from cdk_neuron.errors import NeuronConfigError, NeuronConfigErrors


def test_message_without_a_construct() -> None:
    assert str(NeuronConfigError("max_nodes", 0, "use 1 or more")) == "max_nodes=0: use 1 or more"


def test_at_adds_the_construct_path_once() -> None:
    error = NeuronConfigError("max_nodes", 0, "use 1 or more").at("dev/Training/Cluster")
    assert str(error) == "dev/Training/Cluster: max_nodes=0: use 1 or more"
    assert (error.field, error.value, error.construct) == ("max_nodes", 0, "dev/Training/Cluster")


def test_reported_by_names_the_innermost_construct() -> None:
    from aws_cdk import App, Stack
    from constructs import Construct

    from cdk_neuron._scope import reported_by

    stack = Stack(App(), "Stack")
    outer = Construct(stack, "Outer")
    inner = Construct(outer, "Inner")
    with (
        pytest.raises(NeuronConfigError, match=r"^Stack/Outer/Inner: f=1: fix$"),
        reported_by(outer),
        reported_by(inner),
    ):
        raise NeuronConfigError("f", 1, "fix")


def test_several_errors_raised_inside_a_construct_all_take_its_path() -> None:
    errors = NeuronConfigErrors(
        [NeuronConfigError("a", 1, "fix a"), NeuronConfigError("b", 2, "fix b", construct="Stack/Inner")]
    )
    moved = errors.at("Stack/Fleet")
    assert isinstance(moved, NeuronConfigErrors)
    assert str(moved) == "Stack/Fleet: a=1: fix a\nStack/Inner: b=2: fix b"
