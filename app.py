#!/usr/bin/env python3
"""Synthesizes every environment in cdk.json (or one, with `-c env=NAME`)."""

from __future__ import annotations

import aws_cdk as cdk

from stacks.app_builder import build_app


def main() -> cdk.App:
    app = cdk.App()
    build_app(app)
    app.synth()
    return app


if __name__ == "__main__":
    main()
