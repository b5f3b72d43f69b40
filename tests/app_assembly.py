"""The whole app, every environment in cdk.json, built and synthesized ONCE per test process.

Synthesis with the built-in validator costs seconds, so the app tests share one assembly:
``synthesized_app()`` is cached, and each test module wraps it in a session fixture.

``CDK_DEFAULT_ACCOUNT`` is removed while the app is built, so the stacks take the documented
placeholder account: what a machine without credentials synthesizes, and stable snapshots.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdk_support import REPO_ROOT, make_app


def shipped_environments() -> dict[str, Any]:
    """The raw ``environments`` block of cdk.json."""
    return json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["environments"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SynthesizedApp:
    app: Any
    stages: dict[str, Any]  # environment name -> EnvironmentStage

    @property
    def outdir(self) -> Path:
        return Path(self.app.outdir)

    def stack(self, env: str, stack_id: str) -> Any:
        return self.stages[env].node.find_child(stack_id)

    def template_path(self, env: str, stack_id: str) -> Path:
        stage = self.stages[env]
        return Path(stage.outdir) / self.stack(env, stack_id).template_file

    def template(self, env: str, stack_id: str) -> dict[str, Any]:
        return _read_json(self.template_path(env, stack_id))

    def environment(self, env: str) -> dict[str, dict[str, Any]]:
        """Every template of one environment, by the stack name CloudFormation knows it by."""
        return {
            self.stack(env, stack_id).stack_name: self.template(env, stack_id)
            for stack_id in ("Network", "Training", "Serving", "Monitoring")
        }

    def manifests(self) -> list[dict[str, Any]]:
        """The cloud assembly manifest and every nested (per-stage) manifest."""
        return [_read_json(path) for path in sorted(self.outdir.rglob("manifest.json"))]


@functools.cache
def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


@functools.cache
def synthesized_app() -> SynthesizedApp:
    from stacks.app_builder import build_app

    saved = os.environ.pop("CDK_DEFAULT_ACCOUNT", None)
    try:
        app = make_app(environments=shipped_environments())
        stages = build_app(app)
        app.synth()
    finally:
        if saved is not None:
            os.environ["CDK_DEFAULT_ACCOUNT"] = saved
    return SynthesizedApp(app=app, stages={stage.stage_name: stage for stage in stages})
