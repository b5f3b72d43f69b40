#!/usr/bin/env python3
"""Synthesizes every environment in cdk.json (or one, with `-c env=NAME`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk

from cdk_neuron.errors import NeuronConfigError
from stacks.app_builder import build_app, report


def main() -> int:
    # `cdk synth` hands the app cdk.json's context itself; reading it here as well makes a bare
    # `python app.py` synthesize the same thing. Context from the CLI (-c env=prod) still wins.
    context = json.loads((Path(__file__).resolve().parent / "cdk.json").read_text())["context"]
    app = cdk.App(context=context)
    try:
        build_app(app)
    except NeuronConfigError as error:
        return report(error)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
