"""The VPC probe: asks a fleet's internal load balancer for a chat completion, from inside the VPC.

Invoked by the assertions (``AwsApiCall`` Lambda ``Invoke``). Standard library only (it runs on the
Lambda Python runtime as it is). Events:

- ``{"action": "chat", "url", "model", "prompt", "max_tokens"}``: one streamed chat completion.
  Returns the HTTP status, the model name the server answered with, the time to the first token and
  to the whole answer, and ``verdict``: ``"ok"`` when the status is 200, the model is the one asked
  for and some text came back, else what was wrong (the assertions check ``verdict`` and ``model``).
- ``{"action": "wake", ...}``: the same request to a fleet scaled to zero (it answers 503 and the
  fleet starts an instance); returns ``t0_ms``, when the request was sent.
- ``{"action": "poll", "t0_ms", "budget_seconds", ...}``: the chat request again; ``elapsed_seconds``
  from ``t0_ms`` to the first token, and ``verdict`` ``"ok"`` (answered within the budget), ``"slow"``
  (answered, too late) or ``"waiting"`` (not answered yet).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

REQUEST_TIMEOUT_SECONDS = 60


def _now_ms() -> int:
    return int(time.time() * 1000)


def chat(url: str, model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    """One streamed chat completion; status, model, first-token and total milliseconds, text."""
    body = json.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "stream": True,
        }
    ).encode()
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    start = time.monotonic()
    result: dict[str, Any] = {"status": 0, "model": "", "first_token_ms": None, "total_ms": None, "text": ""}
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
            result["status"] = response.status
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data:") :])
                result["model"] = chunk.get("model", result["model"])
                for choice in chunk.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece and result["first_token_ms"] is None:
                        result["first_token_ms"] = round((time.monotonic() - start) * 1000)
                    result["text"] += piece
    except urllib.error.HTTPError as error:
        result["status"] = error.code
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        result["error"] = str(error)[:200]
    result["total_ms"] = round((time.monotonic() - start) * 1000)
    result["text"] = result["text"][:200]
    return result


def verdict(result: dict[str, Any], model: str) -> str:
    if result["status"] != 200:
        return f"status={result['status']}"
    if result["model"] != model:
        return f"model={result['model']}"
    if not result["text"]:
        return "empty answer"
    return "ok"


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    action = event.get("action", "chat")
    url, model = event["url"], event["model"]
    prompt = event.get("prompt", "Say hello.")
    max_tokens = int(event.get("max_tokens", 16))
    if action == "wake":
        t0 = _now_ms()
        result = chat(url, model, prompt, max_tokens)
        return {"t0_ms": t0, "status": result["status"], "verdict": "sent"}
    result = chat(url, model, prompt, max_tokens)
    result["verdict"] = verdict(result, model)
    if action == "poll":
        answered = result["verdict"] == "ok"
        t0 = int(event["t0_ms"])
        first_token = result["first_token_ms"] or 0
        elapsed = (_now_ms() - t0 - result["total_ms"] + first_token) / 1000
        result["elapsed_seconds"] = round(elapsed, 1)
        if not answered:
            result["verdict"] = "waiting"
        elif elapsed > float(event["budget_seconds"]):
            result["verdict"] = "slow"
    return result
