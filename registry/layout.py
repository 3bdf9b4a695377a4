"""Names the registry's directory layout is made of (FORMATS §1): ``<base>/<method>/<data-version>/<file>``.

A leaf module (no imports), so that ``validate`` and the pre-commit hook can use it without loading the
catalogue.
"""

from __future__ import annotations

METHODS = ("state", "miss")  # the method directories under a base, in the order they are listed
