"""Files that run outside this package (custom-resource handlers, node programs), loaded as modules.

:func:`load_file` imports a file without writing ``__pycache__`` beside it (the handler directory
and the node-program bundle are shipped as they are). :func:`load_handler` loads a custom-resource
handler with CloudFormation's response URL captured: every response the handler sends is appended
to ``responses``, and a download (``urlopen`` of a plain URL) is answered by ``download``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cdk_neuron._custom_resource import HANDLERS_DIR

RESPONSE_URL = "https://cloudformation.example/response"


def load_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = saved
    return module


def event(
    kind: str, properties: dict[str, Any], physical_id: str | None = None, logical_id: str = "Resource"
) -> dict[str, Any]:
    """A CloudFormation custom-resource request of ``kind`` (Create, Update, Delete)."""
    request = {
        "RequestType": kind,
        "ResponseURL": RESPONSE_URL,
        "StackId": "arn:aws:cloudformation:us-east-1:111111111111:stack/dev-Training/x",
        "RequestId": "req-1",
        "LogicalResourceId": logical_id,
        "ResourceProperties": properties,
    }
    if physical_id is not None:
        request["PhysicalResourceId"] = physical_id
    return request


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def load_handler(
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    responses: list[dict[str, Any]],
    download: Callable[[str], bytes] | None = None,
) -> ModuleType:
    """``custom_resources/<name>.py``, its CloudFormation responses captured into ``responses``."""
    monkeypatch.syspath_prepend(str(HANDLERS_DIR))  # handlers import cfn_response beside them
    module = load_file(HANDLERS_DIR / f"{name}.py", f"cr_{name}")

    def urlopen(request: Any, timeout: float) -> _Response:
        if isinstance(request, str):
            assert download is not None, f"{name} downloads {request}"
            return _Response(download(request))
        assert request.get_method() == "PUT" and request.full_url == RESPONSE_URL
        responses.append(json.loads(request.data))
        return _Response(b"")

    monkeypatch.setattr(module.cfn_response.urllib.request, "urlopen", urlopen)
    return module


__all__ = ["RESPONSE_URL", "event", "load_file", "load_handler"]
