"""Names the registry's directory layout is made of (FORMATS §1): ``<base>/<method>/<data-version>/<file>``.

A leaf module (no imports of the project), so that ``validate`` and the pre-commit hook can use it without loading
the catalogue.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

METHODS = ("state", "miss")  # the method directories under a base, in the order they are listed
WEIGHT_SUFFIXES = (".pth", ".safetensors")  # the weight files a data version holds
VERSION_DIR = re.compile(r"^v[0-9][0-9A-Za-z._-]*$")  # a data version: v1, v2.1-rc
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a base, a State file's name, a MiSS group


def name_key(name: str) -> str:
    """What ``name`` is to a file system that ignores letter case and Unicode normalization (macOS's APFS and HFS+
    by default, Windows' NTFS and FAT for case): Unicode's canonical caseless match, ``NFD(casefold(NFD(name)))``.
    Two names of one directory with the same key (``s1.pth`` and ``S1.pth``; ``é`` as one code point, NFC, and as
    ``e`` plus a combining accent, NFD) are one file in a clone there: git checks out one over the other, and the
    registry's hashes no longer describe what is on disk (LAY017). The key is a little wider than any one file
    system's rule (NTFS folds case with a simpler table and keeps NFC and NFD apart), so it errs on the side of
    calling two names twins."""
    if name.isascii():  # nearly every name: casefold is lower, and NFD changes nothing
        return name.lower()
    import unicodedata

    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def layout_ok(parts: list[str]) -> bool:
    """Is a file at registry-relative ``parts`` (under a base directory) in an allowed place?"""
    n = len(parts)
    if parts[-1] == ".gitkeep":
        return n == 2 or (n == 3 and parts[1] in METHODS)
    if n == 4 and parts[1] in METHODS and VERSION_DIR.match(parts[2]):
        if parts[3] == "train.json":
            return True
        return parts[1] == "state" and parts[3].endswith(WEIGHT_SUFFIXES) and bool(NAME.match(parts[3]))
    return (
        n == 5
        and parts[1] == "miss"
        and bool(VERSION_DIR.match(parts[2]))
        and bool(NAME.match(parts[3]))
        and parts[4] == "adapter-final.pth"
    )


def misplaced(parts: list[str]) -> str:
    """Why a file is not part of the layout: a bad name in the right place, or the wrong place."""
    name = parts[-1]
    if len(parts) == 4 and parts[1] == "state" and VERSION_DIR.match(parts[2]) and name.endswith(WEIGHT_SUFFIXES):
        return f"file name {name!r} is not usable: letters, digits, '.', '_' and '-', starting with a letter or digit"
    if len(parts) == 5 and parts[1] == "miss" and name == "adapter-final.pth" and not NAME.match(parts[3]):
        return f"group folder {parts[3]!r} is not usable: letters, digits, '.', '_' and '-'"
    return "this place is not part of the layout"


def safe_rel(path: Any) -> TypeGuard[str]:
    """A non-empty relative POSIX path without a backslash, an empty (``//``, leading or trailing ``/``), ``.`` or
    ``..`` component. Decided on ``/path/``: a component is empty, ``.`` or ``..`` exactly when ``//``, ``/./`` or
    ``/../`` occurs there (no split: 8,000 paths a run at 4,000 entries)."""
    if not isinstance(path, str) or not path or "\\" in path:
        return False
    framed = f"/{path}/"
    return "//" not in framed and "/./" not in framed and "/../" not in framed
