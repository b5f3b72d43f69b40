"""cfn-lint every template in a synthesized cloud assembly, for its environment's own region.

Usage: python -m tools.lint_templates [cdk.out]   (after `make synth`; `make lint-templates` does both)

Each environment is a Stage, so its templates sit in ``cdk.out/assembly-<env>/``; the region comes
from cdk.json through the same parser the app uses. Exits non-zero on any error or warning.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stacks.config import load_cdk_json


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    assembly = Path(args[0] if args else "cdk.out")
    failures = 0
    for name, env in load_cdk_json("cdk.json").items():
        templates = sorted((assembly / f"assembly-{name}").glob("*.template.json"))
        if not templates:
            print(f"{name}: no templates under {assembly}/assembly-{name} (run make synth)", file=sys.stderr)
            failures += 1
            continue
        result = subprocess.run(["cfn-lint", "--regions", env.region, "--", *map(str, templates)])
        print(f"{name} ({env.region}): {len(templates)} templates, cfn-lint exit {result.returncode}")
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
