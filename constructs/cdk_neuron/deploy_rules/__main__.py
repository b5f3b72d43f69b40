"""``python -m cdk_neuron.deploy_rules``: lint CloudFormation templates with the deploy rules.

    python -m cdk_neuron.deploy_rules TEMPLATE...           cfn-lint's own rules plus the deploy rules
                                                            (other options go to cfn-lint; write them as --option=value)
    python -m cdk_neuron.deploy_rules --only TEMPLATE...    the deploy rules only (fast, in-process)
    python -m cdk_neuron.deploy_rules --rules-dir           print the directory for cfn-lint --append-rules

Exit status follows cfn-lint in both modes: 0 clean, 2 errors (a file that cannot be read or is not a
template is one, as cfn-lint's E0003 is), 4 warnings (bits combine), 1 on usage errors and a missing
cfn-lint (argparse's own usage exit, 2, would read as "errors found").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from cdk_neuron.deploy_rules import RULES_DIR

_CFN_LINT = "import sys; sys.argv[0] = 'cfn-lint'; from cfnlint.runner import main; sys.exit(main())"


# pyproject.toml's lint extra (tests/deploy_rules/test_deploy_rules.py checks they agree). cdk-neuron
# is not on PyPI yet: the fix names cfn-lint itself, never the unpublished cdk-neuron[lint].
CFN_LINT_REQUIREMENT = "cfn-lint>=1.58,<2"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A usage error exits 1, as cfn-lint's do (2 means errors found)."""
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m cdk_neuron.deploy_rules", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "templates", nargs="*", type=Path, help="CloudFormation template files (JSON or YAML)"
    )
    parser.add_argument("--rules-dir", action="store_true", help="print the rules directory and exit")
    parser.add_argument("--only", action="store_true", help="run only the deploy rules, not cfn-lint's own")
    parser.add_argument(
        "--region", default="us-east-1", help="region the templates deploy to (default us-east-1)"
    )
    # Options we do not know are cfn-lint's (--format=json, ...): passed through, written with "=" so that
    # their values are not taken for templates.
    args, passthrough = parser.parse_known_args(argv)
    if args.rules_dir:
        print(RULES_DIR)
        return 0
    if not args.templates:
        parser.error("give at least one template (or --rules-dir)")
    try:
        import cfnlint  # noqa: F401
    except ImportError:
        print(f"cfn-lint is not installed: pip install '{CFN_LINT_REQUIREMENT}'", file=sys.stderr)
        return 1
    if not args.only:
        # cfnlint has no __main__; run its console-script entry point in this interpreter.
        command = [
            sys.executable,
            "-c",
            _CFN_LINT,
            "--regions",
            args.region,
            "--append-rules",
            str(RULES_DIR),
        ]
        command += [*passthrough, "--"]
        return subprocess.run([*command, *map(str, args.templates)], check=False).returncode
    if passthrough:
        parser.error(f"--only runs without cfn-lint's options: {' '.join(passthrough)}")
    return _only(args.templates, args.region)


def _only(templates: list[Path], region: str) -> int:
    """The deploy rules on each template. A file that cannot be read is an error (2, as cfn-lint's
    E0003 is without ``--only``), and so is one that is not a template (empty, no ``Resources``
    object), never "clean": nothing was checked."""
    from cfnlint.decode import decode_str

    from cdk_neuron.deploy_rules import lint_template

    status = 0
    for path in templates:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as error:
            print(f"python -m cdk_neuron.deploy_rules: {path}: cannot read it ({error})", file=sys.stderr)
            status |= 2
            continue
        template, problems = decode_str(text)
        if not problems and not (isinstance(template, dict) and isinstance(template.get("Resources"), dict)):
            print(f"{path}: not a CloudFormation template (no Resources object): nothing was checked\n")
            status |= 2
            continue
        for match in lint_template(text, region=region):
            print(f"{match.rule.id} {match.message}\n{path}:{match.linenumber}:{match.columnnumber}\n")
            status |= 2 if match.rule.id.startswith("E") else 4
    return status


if __name__ == "__main__":
    raise SystemExit(main())
