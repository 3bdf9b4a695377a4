"""Git LFS pointer files: the small text files git leaves where weights should be.

A pointer (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md) is UTF-8 text under
1024 bytes, one ``key value`` per line, ``version`` first::

    version https://git-lfs.github.com/spec/v1
    oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393
    size 12345

A checkout made without ``git lfs pull`` has these in place of ``.pth`` files; the safe
reader refuses them with rule LFS001.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LFS_VERSION_LINE", "MAX_POINTER_SIZE", "LfsPointer", "looks_like_lfs_pointer", "parse_lfs_pointer"]

LFS_VERSION_LINE = b"version https://git-lfs.github.com/spec/v1"
MAX_POINTER_SIZE = 1024

_PREFIX = b"version https://git-lfs.github.com/spec/"
_KEY = re.compile(r"[a-z0-9.-]+\Z")
_OID = re.compile(r"sha256:([0-9a-f]{64})\Z")
_SIZE = re.compile(r"(0|[1-9][0-9]{0,19})\Z")


@dataclass(frozen=True)
class LfsPointer:
    """A parsed pointer: the sha256 (hex) and size in bytes of the content it stands for."""

    oid: str
    size: int


def looks_like_lfs_pointer(head: bytes) -> bool:
    """Cheap check on the first bytes of a file: does it start like a Git LFS pointer?

    True for any file starting ``version https://git-lfs.github.com/spec/``, even a malformed
    pointer; use :func:`parse_lfs_pointer` on the whole (small) file for the details.
    """
    return bytes(head[: len(_PREFIX)]) == _PREFIX


def parse_lfs_pointer(data: bytes) -> LfsPointer | None:
    """Parse a Git LFS pointer; ``None`` unless ``data`` is a well-formed one.

    Well-formed: fewer than 1024 bytes of UTF-8, lines ending in LF (CRLF tolerated), first line
    exactly ``version https://git-lfs.github.com/spec/v1``, every other line ``key value`` with a
    lower-case key used once, an ``oid sha256:<64 lower-case hex>`` and a ``size <decimal>``.

    >>> parse_lfs_pointer(b"version https://git-lfs.github.com/spec/v1\\noid sha256:" + b"ab" * 32
    ...                   + b"\\nsize 10\\n").size
    10
    >>> parse_lfs_pointer(b"PK\\x03\\x04") is None
    True
    """
    data = bytes(data)
    if len(data) >= MAX_POINTER_SIZE or not data.startswith(LFS_VERSION_LINE):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.endswith("\n"):
        text = text[:-1]
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    if lines[0] != LFS_VERSION_LINE.decode():
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(" ")
        if not sep or not _KEY.match(key) or key in fields or key == "version" or not value:
            return None
        fields[key] = value
    oid = _OID.match(fields.get("oid", ""))
    size = _SIZE.match(fields.get("size", ""))
    if oid is None or size is None:
        return None
    return LfsPointer(oid=oid.group(1), size=int(size.group(0)))
