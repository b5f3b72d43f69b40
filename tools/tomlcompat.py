"""``tomllib`` on Python 3.11+, its backport ``tomli`` on 3.10, the oldest Python the package claims.

The tools read pyproject.toml and mutmut's TOML; ``from tools.tomlcompat import tomllib`` keeps them
running on every Python the CI matrix tests (requirements-dev.txt installs tomli only on 3.10).
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 job of the CI matrix
    import tomli as tomllib

__all__ = ["tomllib"]
