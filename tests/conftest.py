"""Pytest fixtures shared by every test module; helpers live in cdk_support.py."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

import cdk_support  # noqa: F401  (sets the jsii environment before any aws_cdk import)


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A syrupy snapshot stored as one JSON file per test."""
    return snapshot.use_extension(JSONSnapshotExtension)
