#!/usr/bin/env python3
"""Synthesizes every environment in cdk.json (or one, with `-c env=NAME`)."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk

from stacks.app_builder import build_app


def main() -> cdk.App:
    # `cdk synth` hands the app cdk.json's context itself; reading it here as well makes a bare
    # `python app.py` synthesize the same thing. Context from the CLI (-c env=prod) still wins.
    context = json.loads((Path(__file__).resolve().parent / "cdk.json").read_text())["context"]
    app = cdk.App(context=context)
    build_app(app)
    app.synth()
    return app


if __name__ == "__main__":
    main()
