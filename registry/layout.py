"""Names the registry's directory layout is made of (FORMATS §1): ``<base>/<method>/<data-version>/<file>``.

A leaf module (no imports of the project), so that ``validate`` and the pre-commit hook can use it without loading
the catalogue.
"""

from __future__ import annotations

METHODS = ("state", "miss")  # the method directories under a base, in the order they are listed


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
