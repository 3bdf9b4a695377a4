"""SHA256SUMS, byte-compatible with GNU ``sha256sum -c`` run in the registry root.

Format of each line: ``<64 hex><space><space or *><path>``. A path holding a backslash or a
newline is written the way GNU coreutils does: the line starts with ``\\`` and the path has
``\\\\`` and ``\\n`` escapes. The canonical form is sorted by the path's UTF-8 bytes, LF line ends,
and lists every file of the registry except SHA256SUMS itself, its signature and the transient
files of a write in progress.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SUMS_NAME = "SHA256SUMS"
SIG_NAME = "SHA256SUMS.sig"  # its Ed25519 signature (rwkv_registry.signing)
_LINE = re.compile(r"^(\\?)([0-9a-fA-F]{64}) ([ *])(.+)$")


@dataclass(frozen=True)
class SumsLine:
    """One parsed line."""

    lineno: int
    sha256: str
    path: str
    crlf: bool = False  # the line ended in CR LF (accepted, as GNU sha256sum -c does; not canonical)


def _escape(path: str) -> tuple[str, bool]:
    if "\\" in path or "\n" in path or "\r" in path:
        return path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r"), True
    return path, False


_UNESCAPES = {"\\": "\\", "n": "\n", "r": "\r"}


def _unescape(path: str) -> str | None:
    """The name of a line that starts with a backslash, as GNU ``sha256sum -c`` reads it: only
    ``\\\\``, ``\\n`` and ``\\r`` are escapes; any other, or a backslash at the end, makes the line
    improperly formatted (None), as it does there."""
    out, i = [], 0
    while i < len(path):
        ch = path[i]
        if ch == "\\":
            nxt = _UNESCAPES.get(path[i + 1 : i + 2])
            if nxt is None:
                return None
            out.append(nxt)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def format_sums(hashes: Mapping[str, str]) -> bytes:
    """Canonical SHA256SUMS for ``{relative POSIX path: sha256}``."""
    lines = []
    for path in sorted(hashes, key=lambda p: p.encode("utf-8", "surrogateescape")):
        escaped, flag = _escape(path)
        prefix = "\\" if flag else ""
        lines.append(f"{prefix}{hashes[path].lower()}  {escaped}\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


def parse_sums(data: bytes) -> tuple[list[SumsLine], list[tuple[int, str]]]:
    """Parse SHA256SUMS; return the lines and the malformed ones as (line number, text).

    A CR before the LF is dropped, as GNU ``sha256sum -c`` does (a file saved on Windows checks
    there); such lines are marked ``crlf`` so that the caller can say the form is not canonical."""
    good: list[SumsLine] = []
    bad: list[tuple[int, str]] = []
    text = data.decode("utf-8", "surrogateescape")
    for i, line in enumerate(text.split("\n"), 1):
        crlf = line.endswith("\r")
        if crlf:
            line = line[:-1]
        if line == "" or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            bad.append((i, line[:80]))
            continue
        path = _unescape(m.group(4)) if m.group(1) else m.group(4)
        if path is None:
            bad.append((i, line[:80]))
            continue
        if path.startswith("./"):
            path = path[2:]
        good.append(SumsLine(i, m.group(2).lower(), path, crlf))
    return good, bad
