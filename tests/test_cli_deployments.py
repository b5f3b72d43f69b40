"""How the CLI finds an app's Deployments: the loader its cdk.json names, and the errors around it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdk_neuron.cli import deployments
from cdk_neuron.errors import NeuronConfigError

REPO = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, context: dict[str, Any], module: str | None = None) -> Path:
    if module is not None:
        (tmp_path / "my_loader.py").write_text(module)
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"app": "python3 app.py", "context": context}))
    return path


def test_this_app_names_its_loader_and_every_environment_loads() -> None:
    loaded = deployments.load(REPO / "cdk.json")
    assert list(loaded) == ["dev", "staging", "prod"]
    assert loaded["dev"].training.jobs is not None
    assert loaded["dev"].training.jobs.stack_name == "dev-Training"


def test_no_loader_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NeuronConfigError, match=r"context\.cdk-neuron:deployments=None: .* names no loader"):
        deployments.load(_write(tmp_path, {"environments": {}}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "module:function"),
        ("missing_module_xyz:load", "cannot import missing_module_xyz"),
        ("my_loader:absent", "my_loader has no function absent"),
        ("my_loader:wrong_type", "returned dict for dev"),
        ("my_loader:empty", "returned no deployment"),
    ],
)
def test_bad_loaders_are_refused(tmp_path: Path, spec: str, message: str) -> None:
    module = "def wrong_type(context):\n    return {'dev': {}}\n\ndef empty(context):\n    return {}\n"
    path = _write(tmp_path, {deployments.LOADER_KEY: spec}, module)
    with pytest.raises(NeuronConfigError, match=message):
        deployments.load(path)


def test_a_loader_in_the_app_folder_is_found(tmp_path: Path) -> None:
    """Any app: the loader module sits next to its cdk.json and returns library Deployments."""
    module = (
        "from cdk_neuron.deployment import Deployment, ServingDeployment, TrainingDeployment\n"
        "from cdk_neuron.planner import plan_training\n"
        "from cdk_neuron.serving import ModelSpec, ServingEngine\n"
        "def load(context):\n"
        "    model = ModelSpec(model_id='org/m', parameters=1_000_000_000)\n"
        "    return {'only': Deployment(name='only', region='us-east-1', az_ids=('use1-az6',),\n"
        "        training=TrainingDeployment(instance_type='trn1.32xlarge', max_nodes=1,\n"
        "            plan=plan_training('trn1.32xlarge', 1, 32)),\n"
        "        serving=ServingDeployment(backend='ec2', engine=ServingEngine.optimum_neuron(), model=model,\n"
        "            plan=model.plan('inf2.xlarge'), min_capacity=0, max_capacity=1))}\n"
    )
    path = _write(tmp_path, {deployments.LOADER_KEY: "my_loader_ok:load"})
    (tmp_path / "my_loader_ok.py").write_text(module)
    loaded = deployments.load(path)
    assert [d.name for d in deployments.select(loaded, None)] == ["only"]
    with pytest.raises(NeuronConfigError, match=r"^--env='other': unknown environment; defined: only"):
        deployments.select(loaded, "other")
