"""The catalog and planner are plain Python: importing them must not pull in aws_cdk.

Each check runs in a fresh interpreter (the venv's python, i.e. ``sys.executable``) because other
test modules import aws_cdk into this process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
{imports}
print(json.dumps(sorted(m for m in sys.modules if m == "{banned}" or m.startswith("{banned}."))))
"""


def _loaded(imports: str, banned: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(imports=imports, banned=banned)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "imports",
    [
        "import cdk_neuron.catalog, cdk_neuron.planner, cdk_neuron.economics",
        "import cdk_neuron.validation, cdk_neuron.node_programs.reach",
        "from cdk_neuron import catalog, planner, NeuronConfigError, plan_training, size_model, get_instance",
        # Using them must not import aws_cdk lazily either.
        "from cdk_neuron.planner import plan_training, size_model\n"
        "plan_training('trn1.32xlarge', 2, 32); size_model(8e9)",
    ],
)
def test_catalog_and_planner_do_not_import_aws_cdk(imports: str) -> None:
    assert _loaded(imports, "aws_cdk") == []
    assert _loaded(imports, "constructs") == []
    assert _loaded(imports, "jsii") == []


def test_probe_detects_aws_cdk_when_it_is_imported() -> None:
    # Guards the test above against passing vacuously (e.g. a probe that never sees sys.modules).
    assert "aws_cdk" in _loaded("import aws_cdk", "aws_cdk")
