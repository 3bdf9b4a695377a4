"""SHA256SUMS, byte-compatible with GNU ``sha256sum -c`` run in the registry root.

Format of each line: ``<64 hex><space><space><path>``. A path holding a backslash or a
newline is written the way GNU coreutils does: the line starts with ``\\`` and the path has
``\\\\`` and ``\\n`` escapes. Lines in the other forms ``sha256sum -c`` reads (binary mode ``<hex> *<path>``,
the BSD tag form ``SHA256 (<path>) = <hex>``, looser spacing) are read as it reads them and checked alike, but
are not canonical. The canonical form is sorted by the path's UTF-8 bytes, LF line ends, lower-case hex,
and lists every file of the registry except SHA256SUMS itself, its signature and the transient
files of a write in progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SUMS_NAME = "SHA256SUMS"
SIG_NAME = "SHA256SUMS.sig"  # its Ed25519 signature (rwkv_registry.store.signing)


@dataclass(frozen=True)
class SumsLine:
    """One parsed line."""

    lineno: int
    sha256: str
    path: str
    crlf: bool = False  # the line ended in CR LF (accepted, as GNU sha256sum -c does; not canonical)
    # "" for the canonical spelling ``<hex>  <path>``; else the other one GNU ``sha256sum -c`` accepts (checked alike,
    # not canonical): "binary" (``<hex> *<path>``), "tagged" (BSD ``SHA256 (<path>) = <hex>``, ``sha256sum --tag``)
    # or "loose" (white space before the hash, a tab or one space after it, upper-case hex)
    form: str = ""


FORMS = {
    "binary": "in binary mode `<hex> *<path>`",
    "tagged": "in BSD tag form `SHA256 (<path>) = <hex>`",
    "loose": "spelt loosely (white space before the hash, a tab or one space after it, or upper-case hex)",
}


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


_WHITE = " \t"
_HEX = frozenset("0123456789abcdefABCDEF")


def _is_hex64(text: str) -> bool:
    return len(text) == 64 and _HEX.issuperset(text)


class _Reader:
    """GNU coreutils' ``split_3`` (md5sum.c, sha256sum), line by line: what ``sha256sum -c`` takes from each line.

    ``reversed`` (coreutils' ``bsd_reversed``): a line with one white-space character between hash and name (the
    reversed BSD form ``md5 -r`` writes; also a name of one character after a space) is accepted only when no line
    of the usual form came before it; once one was, every later line is read that way (a second space or a ``*``
    is then part of the name), so that a renamed file with a leading space cannot pass for another."""

    def __init__(self) -> None:
        self.reversed: bool | None = None

    def split(self, line: str) -> tuple[str, str, str] | None:
        """(hex, path, form) of one line (CR and LF dropped), or None where sha256sum calls it improperly
        formatted."""
        i = 0
        while i < len(line) and line[i] in _WHITE:
            i += 1
        escaped = line[i : i + 1] == "\\"
        if escaped:
            i += 1
        if line.startswith("SHA256", i):
            i += 6
            if line[i : i + 1] == " ":
                i += 1
            if line[i : i + 1] != "(":
                return None
            rest = line[i + 1 :]
            close = rest.rfind(")")
            if close < 0:
                return None
            name = rest[:close]
            tail = rest[close + 1 :].lstrip(_WHITE)
            if not tail.startswith("="):
                return None
            digest = tail[1:].lstrip(_WHITE)
            if escaped:
                unescaped = _unescape(name)
                if unescaped is None:
                    return None
                name = unescaped
            return (digest, name, "tagged") if _is_hex64(digest) else None
        if len(line) - i < 66 + (line[i : i + 1] == "\\"):
            return None
        digest = line[i : i + 64]
        if line[i + 64] not in _WHITE or not _is_hex64(digest):
            return None
        loose = i > (1 if escaped else 0) or line[i + 64] != " " or digest != digest.lower()
        i += 65
        if len(line) - i == 1 or line[i] not in " *":
            if self.reversed is False:
                return None  # not after a line of the usual form (an attacker's leading space)
            self.reversed = True
            form = "loose"
        elif not self.reversed:
            self.reversed = False
            form = "binary" if line[i] == "*" else "loose" if loose else ""
            i += 1
        else:
            form = "loose"
        name = line[i:]
        if escaped:
            unescaped = _unescape(name)
            if unescaped is None:
                return None
            name = unescaped
        return digest, name, form


def parse_sums(data: bytes) -> tuple[list[SumsLine], list[tuple[int, str]]]:
    """Parse SHA256SUMS; return the lines and the malformed ones as (line number, text).

    Every line GNU ``sha256sum -c`` accepts is read as it reads it (:class:`_Reader`), each marked with its form
    when not canonical (:attr:`SumsLine.form`). A CR before the LF is dropped, as GNU ``sha256sum -c`` does (a file
    saved on Windows checks there); such lines are marked ``crlf`` so that the caller can say the form is not
    canonical."""
    good: list[SumsLine] = []
    bad: list[tuple[int, str]] = []
    reader = _Reader()
    text = data.decode("utf-8", "surrogateescape")
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            continue
        crlf = line.endswith("\r")
        if crlf:
            line = line[:-1]
        if line == "":
            continue
        split = reader.split(line)
        if split is None:
            bad.append((i, line[:80]))
            continue
        digest, path, form = split
        if path.startswith("./"):
            path = path[2:]
        good.append(SumsLine(i, digest.lower(), path, crlf, form))
    return good, bad
