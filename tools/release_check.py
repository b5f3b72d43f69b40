"""Refuse a release whose tag, version, changelog or wheel disagree.

Run by .github/workflows/release.yml before anything is uploaded::

    python -m tools.release_check --tag v0.2.0 dist/

Checks, each printed as one line ``release: <what>: <why>; <fix>``:
- the version (``cdk_neuron.__version__``, which pyproject.toml reads) is a release number, not the development version main carries
  between releases (``0.2.0.dev0``), and the tag is ``v`` + that version;
- CHANGELOG.md has a ``## [<version>] - YYYY-MM-DD`` section (Keep a Changelog), not only Unreleased;
- dist/ holds exactly one wheel and one sdist of that version;
- the wheel ships what the constructs read at synthesis: ``py.typed``, the node programs, and each
  construct package's README.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# What main carries between releases (PEP 440 developmental release of the next version).
DEV_VERSION = re.compile(r"^\d+\.\d+\.\d+\.dev\d+$")
REQUIRED_IN_WHEEL = (
    "cdk_neuron/py.typed",
    "cdk_neuron/node_programs/files/",
    "cdk_neuron/training/README.md",
    "cdk_neuron/serving/README.md",
    "cdk_neuron/storage/README.md",
    "cdk_neuron/monitoring/README.md",
)


INIT = Path("constructs", "cdk_neuron", "__init__.py")
_VERSION_LINE = re.compile(r'^__version__ = "(?P<version>[^"]+)"$', re.M)


def project_version(root: Path = ROOT) -> str:
    """``cdk_neuron.__version__`` as ``root``'s source states it: the one version source (pyproject.toml
    declares the version dynamic and reads it from there)."""
    match = _VERSION_LINE.search((root / INIT).read_text())
    if match is None:
        raise SystemExit(f'release: {INIT}: no __version__ = "..." line')
    return match["version"]


def problems(tag: str, dist: Path, root: Path = ROOT) -> list[str]:
    version = project_version(root)
    found: list[str] = []
    if DEV_VERSION.match(version):
        release = version.rsplit(".dev", 1)[0]
        found.append(
            f"cdk_neuron.__version__ {version!r}: a development version; set the release number "
            f"({release}) in {INIT.as_posix()} before tagging"
        )
    elif not VERSION.match(version):
        found.append(f"cdk_neuron.__version__ {version!r}: not a release number; set major.minor.patch")
    if tag != f"v{version}":
        found.append(
            f"tag {tag!r}: cdk_neuron.__version__ is {version}; tag v{version}, or bump the version first"
        )
    changelog = (root / "CHANGELOG.md").read_text()
    if not re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M):
        found.append(
            f"CHANGELOG.md has no '## [{version}] - YYYY-MM-DD' section; move the Unreleased entries under it"
        )
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    expected_wheel = f"cdk_neuron-{version}-py3-none-any.whl"
    if [w.name for w in wheels] != [expected_wheel]:
        found.append(
            f"{dist}: wheels {[w.name for w in wheels]}; expected exactly {expected_wheel} (clean dist/ first)"
        )
    if [s.name for s in sdists] != [f"cdk_neuron-{version}.tar.gz"]:
        found.append(
            f"{dist}: sdists {[s.name for s in sdists]}; expected exactly cdk_neuron-{version}.tar.gz"
        )
    for wheel in wheels:
        names = zipfile.ZipFile(wheel).namelist()
        for required in REQUIRED_IN_WHEEL:
            if not any(name.startswith(required) for name in names):
                found.append(f"{wheel.name}: missing {required}; check [tool.setuptools.package-data]")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.release_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--tag", required=True, help="the pushed tag, e.g. v0.2.0 ($GITHUB_REF_NAME)")
    parser.add_argument("dist", type=Path, help="directory holding the built wheel and sdist")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    found = problems(args.tag, args.dist, args.root)
    for line in found:
        print(f"release: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
