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
from pathlib import Path

SUMS_NAME = "SHA256SUMS"
_LINE = re.compile(r"^(\\?)([0-9a-fA-F]{64}) ([ *])(.+)$")


@dataclass(frozen=True)
class SumsLine:
    """One parsed line."""

    lineno: int
    sha256: str
    path: str


def _escape(path: str) -> tuple[str, bool]:
    if "\\" in path or "\n" in path or "\r" in path:
        return path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r"), True
    return path, False


def _unescape(path: str) -> str:
    out, i = [], 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            nxt = path[i + 1]
            out.append({"\\": "\\", "n": "\n", "r": "\r"}.get(nxt, "\\" + nxt))
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
    """Parse SHA256SUMS; return the lines and the malformed ones as (line number, text)."""
    good: list[SumsLine] = []
    bad: list[tuple[int, str]] = []
    text = data.decode("utf-8", "surrogateescape")
    for i, line in enumerate(text.split("\n"), 1):
        if line == "" or line.startswith("#"):
            continue
        if line.endswith("\r"):
            bad.append((i, line[:80] + " (CR line end)"))
            continue
        m = _LINE.match(line)
        if not m:
            bad.append((i, line[:80]))
            continue
        path = _unescape(m.group(4)) if m.group(1) else m.group(4)
        if path.startswith("./"):
            path = path[2:]
        good.append(SumsLine(i, m.group(2).lower(), path))
    return good, bad


def index_mismatches(root: Path, sums: bytes) -> list[str]:
    """Why SHA256SUMS content ``sums`` must not be written over the registry at ``root``.

    One line per problem: index.json cannot be parsed, or a registered file is missing or differs
    (size, sha256) from what index.json records for it. ``sums`` supplies the files' hashes, so
    nothing is hashed twice. Empty when SHA256SUMS may be written. The full diagnosis is
    ``rwkv-registry validate``'s; this only keeps ``sums`` from blessing a damaged registry.
    """
    from .jsonload import JsonLoadError, load_json_file

    index_path = root / "index.json"
    try:
        index = load_json_file(index_path, display=str(index_path))
    except JsonLoadError as e:
        return [e.message]
    if not isinstance(index, dict):
        return [f"{index_path}: the top level is a {type(index).__name__}, not an object"]
    hashes = {line.path: line.sha256 for line in parse_sums(sums)[0]}
    entries = index.get("entries")
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        rel = entry.get("path") if isinstance(entry, dict) else None
        rec = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(rel, str) or not isinstance(rec, dict):
            continue  # a schema problem: validate reports it
        shown = root / rel
        want_sha, want_size = rec.get("sha256"), rec.get("size")
        if rel not in hashes:
            out.append(f"{shown}: the file of entry {entry.get('id')!r} is missing")
            continue
        try:
            size: int | None = (root / rel).stat().st_size
        except OSError:
            size = None
        if isinstance(want_size, int) and size != want_size:
            out.append(f"{shown}: {size} bytes, but index.json records {want_size}")
        elif isinstance(want_sha, str) and hashes[rel] != want_sha.lower():
            out.append(f"{shown}: sha256 {hashes[rel][:12]}… differs from index.json's {want_sha[:12]}…")
    return out
