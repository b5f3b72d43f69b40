"""The store reader: the checkpoint store's integ report, read from inside the VPC.

training_hyperpod's check runs on the cluster's controller and writes ``report.json`` into the
checkpoint store (``programs/hyperpod_check.sh``); this Lambda mounts the same store through its
access point (TLS and IAM, as the store requires) and returns the report, or ``{"ok": false,
"stage": "pending"}`` until it exists, so a waiting assertion retries. Standard library only.
"""

from __future__ import annotations

import json
import os
from typing import Any

MOUNT = "/mnt/store"


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    relative = str(event.get("path", "integ/report.json")).lstrip("/")
    path = os.path.normpath(os.path.join(MOUNT, relative))
    if not path.startswith(MOUNT + "/"):
        return {"ok": False, "stage": "refused", "detail": f"{relative} is outside the store"}
    try:
        with open(path, encoding="utf-8") as report:
            body = json.load(report)
    except FileNotFoundError:
        return {"ok": False, "stage": "pending", "detail": f"no {relative} yet"}
    except (OSError, ValueError) as error:
        return {"ok": False, "stage": "unreadable", "detail": f"{relative}: {error}"}
    if not isinstance(body, dict):
        return {"ok": False, "stage": "unreadable", "detail": f"{relative} is not an object"}
    return {"ok": body.get("ok") is True, **{k: v for k, v in body.items() if k != "ok"}}
