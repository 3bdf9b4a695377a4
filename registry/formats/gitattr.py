"""Git's attribute lookup (``git check-attr``), for the one question the registry asks: is a weight file's
``filter`` attribute ``lfs``?

What git does (gitattributes(5); git's ``attr.c`` ``read_attr_from_buf``, ``parse_attr_line``, ``parse_attr``,
``path_matches``, ``fill``, ``fill_one``, ``macroexpand_one``, ``determine_macros``; ``dir.c``
``parse_path_pattern``, ``match_basename``, ``match_pathname``; ``wildmatch.c``), and so what this module does:

- A file is split on LF only (a CR before it is white space); a NUL ends it; a UTF-8 byte order mark at its start
  is skipped. A line is skipped when blank or when it starts (after white space) with ``#``, and ignored whole when
  it is 2048 bytes or longer. A file of 100 MB or more is ignored (this module is given at most
  :data:`MAX_READ` bytes of one).
- A line is ``PATTERN ATTR...``: the pattern ends at the first blank (space, tab, CR), or is a C-quoted string
  (``"a b.pth"``; an escape it cannot read leaves the pattern unquoted). Each attribute is ``name`` (set),
  ``-name`` (unset), ``!name`` (unspecified again) or ``name=value``; a name outside ``[-._0-9A-Za-z]`` (or starting
  with ``-``) drops the whole line. A pattern starting with ``!`` (a negative pattern) drops the line too.
- ``[attr]NAME ATTR...`` defines a macro, only in the top-level file (elsewhere the line is dropped); the built-in
  ``binary`` is ``-diff -merge -text``. Of several definitions the last wins. A macro's attributes apply where the
  macro is *set* on a path.
- Later lines win over earlier ones, a deeper directory's ``.gitattributes`` over a shallower one's, and within a
  line a later attribute over an earlier one; each attribute is decided by the last line that mentions it.
- A pattern without a ``/`` (a trailing one aside) matches the file's name at any depth below its file's
  directory; one with a ``/`` is anchored there (a leading ``/`` is optional) and matched with ``*`` and ``?``
  not crossing ``/``, ``**/`` for any number of directories, ``/**`` for everything below; a trailing ``/`` matches
  directories only, never a file. Brackets (``[a-z]``, ``[!x]``, ``[[:digit:]]``) and ``\\`` escapes as in
  wildmatch. Case matters (``core.ignorecase`` false, as on Linux and on the Hub).

Not read: ``$GIT_DIR/info/attributes``, ``core.attributesFile`` and the system file: they are not part of the
repository, and a clone of it does not get them. ``tests/test_gitattributes.py`` runs this module against
``git check-attr`` on generated files.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MAX_LINE", "MAX_READ", "Decision", "Unset", "filter_of"]

MAX_LINE = 2048  # git's ATTR_MAX_LINE_LENGTH: a line this long or longer is ignored
MAX_READ = 1024 * 1024  # the most bytes of one .gitattributes this module reads (git reads up to 100 MB)
_BLANK = " \t\r\n"
_NAME = re.compile(r"[-._0-9A-Za-z]+\Z")
_MACRO = "[attr]"
_BUILTIN_BYTES = b"[attr]binary -diff -merge -text\n"  # git's built-in macro


class Unset:
    """The state of an attribute set to false (``-filter``)."""

    def __repr__(self) -> str:
        return "unset"


UNSET = Unset()
Value = str | bool | Unset | None
"""An attribute's state: a string (``filter=lfs``), True (``filter``, set), :data:`UNSET` (``-filter``) or None
(unspecified: no line mentions it, or ``!filter``)."""


@dataclass(frozen=True)
class Decision:
    """The ``filter`` of one path, and the line that decided it (None: no line did)."""

    value: Value
    source: str | None = None  # the .gitattributes (registry-relative) of the deciding line
    lineno: int = 0

    def shown(self) -> str:
        """As ``git check-attr`` prints it: the value, ``set``, ``unset`` or ``unspecified``."""
        v = self.value
        return "unspecified" if v is None else "set" if v is True else "unset" if isinstance(v, Unset) else str(v)


@dataclass(frozen=True)
class _Line:
    pattern: str  # for a macro: its name
    macro: bool
    attrs: tuple[tuple[str, Value], ...]
    lineno: int
    mustbedir: bool = False
    nodir: bool = False


def _unquote(text: str) -> tuple[str, int] | None:
    """git's ``unquote_c_style`` of the quoted string at the start of ``text`` (bytes as Latin-1 characters): (the
    string, characters used), or None when it is not one git reads."""
    simple = {'"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
    out: list[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt in simple and nxt:
            out.append(simple[nxt])
            i += 2
        elif nxt in ("0", "1", "2", "3") and re.match("[0-7]{2}", text[i + 2 : i + 4]):
            out.append(chr(int(text[i + 1 : i + 4], 8)))  # one byte
            i += 4
        else:
            return None
    return None


def _parse_attr(word: str) -> tuple[str, Value] | None:
    """One attribute of a line (git's ``parse_attr``); None when its name is not valid (the line is dropped)."""
    name, eq, value = word.partition("=")
    state: Value
    if name[:1] in ("-", "!"):
        state = UNSET if name[0] == "-" else None
        name = name[1:]
    else:
        state = value if eq else True
    if not _NAME.match(name) or name.startswith("-"):
        return None
    return name, state


def _parse_line(line: str, lineno: int, macro_ok: bool) -> _Line | None:
    """One line of a .gitattributes (git's ``parse_attr_line``); None for a line git skips or drops."""
    if len(line) >= MAX_LINE:  # bytes: the text is each byte as one Latin-1 character
        return None
    rest = line.lstrip(_BLANK)
    if not rest or rest.startswith("#"):
        return None
    quoted = _unquote(rest) if rest.startswith('"') else None
    if quoted is not None:
        name, used = quoted
        states = rest[used:]
    else:
        end = next((i for i, c in enumerate(rest) if c in _BLANK), len(rest))
        name, states = rest[:end], rest[end:]
    macro = len(name) > len(_MACRO) and name.startswith(_MACRO)
    if macro:
        if not macro_ok:
            return None
        name = name[len(_MACRO) :].lstrip(_BLANK)
        end = next((i for i, c in enumerate(name) if c in _BLANK), len(name))
        name = name[:end]
        if not _NAME.match(name) or name.startswith("-"):
            return None
    attrs = []
    for word in re.split(r"[ \t\r\n]+", states.strip(_BLANK)) if states.strip(_BLANK) else []:
        parsed = _parse_attr(word)
        if parsed is None:
            return None
        attrs.append(parsed)
    if macro:
        return _Line(name, True, tuple(attrs), lineno)
    if name.startswith("!"):  # a negative pattern: git warns and ignores the line
        return None
    mustbedir = name.endswith("/")
    if mustbedir:
        name = name[:-1]
    return _Line(name, False, tuple(attrs), lineno, mustbedir=mustbedir, nodir="/" not in name)


@functools.lru_cache(maxsize=64)
def _lines(data: bytes, macro_ok: bool) -> tuple[_Line, ...]:
    """The lines git keeps of one .gitattributes' bytes. git matches bytes, not characters (``?`` is one byte of a
    UTF-8 ``é``): the text is read as Latin-1, one character a byte, and so are the paths (:func:`_bytes_text`)."""
    data = data.split(b"\0", 1)[0]
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("latin-1")
    out = []
    for lineno, line in enumerate(text.split("\n"), 1):
        parsed = _parse_line(line, lineno, macro_ok)
        if parsed is not None:
            out.append(parsed)
    return tuple(out)


_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\x0b\\x0c",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


def _bracket(pattern: str, i: int, pathname: bool) -> tuple[str, int] | None:
    """The regular expression of the bracket expression at ``pattern[i]`` (``[``) and the index after it; None
    when it is not closed (wildmatch then matches nothing)."""
    j = i + 1
    negate = pattern[j : j + 1] in ("!", "^")
    if negate:
        j += 1
    parts: list[str] = []
    first = True
    while j < len(pattern):
        ch = pattern[j]
        if ch == "]" and not first:
            body = "".join(parts)
            if negate:
                return ("[^/" + body + "]" if pathname else "[^" + body + "]"), j + 1
            return ("(?!/)[" + body + "]" if pathname else "[" + body + "]") if body else "(?!)", j + 1
        first = False
        if ch == "[" and pattern[j + 1 : j + 2] == ":":
            close = pattern.find("]", j + 2)
            if close < 0:
                return None
            if pattern[close - 1] != ":" or close - 1 < j + 2:  # no ":]": the "[" is a plain character
                parts.append(re.escape("["))
                j += 1
                continue
            cls = pattern[j + 2 : close - 1]
            if cls not in _CLASSES:
                return None  # wildmatch: a malformed class matches nothing
            parts.append(_CLASSES[cls])
            j = close + 1
            continue
        if ch == "\\":
            j += 1
            if j >= len(pattern):
                return None
            ch = pattern[j]
        lo = ch
        if pattern[j + 1 : j + 2] == "-" and pattern[j + 2 : j + 3] not in ("", "]"):
            hi = pattern[j + 2]
            k = j + 3
            if hi == "\\":
                if k >= len(pattern):
                    return None
                hi = pattern[k]
                k += 1
            parts.append(re.escape(lo))  # wildmatch matches the first character on its own too
            if ord(hi) >= ord(lo):
                parts.append(re.escape(lo) + "-" + re.escape(hi))
            j = k
            continue
        parts.append(re.escape(lo))
        j += 1
    return None


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str, pathname: bool) -> re.Pattern[str] | None:
    """wildmatch's ``pattern`` (``WM_PATHNAME`` when ``pathname``) as a regular expression; None when it can match
    nothing (an unclosed bracket)."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            double = j - i >= 2
            at_start = i == 0 or pattern[i - 1] == "/"
            if not pathname:
                out.append(".*")
            elif double and at_start and j < n and pattern[j] == "/":
                out.append("(?:.*/)?")  # "**/": no directory, or any number of them
                j += 1
            elif double and at_start and j == n:
                out.append(".*")  # a trailing "/**" (or a pattern of "**"): everything below
            else:
                out.append("[^/]*")
            i = j
        elif ch == "?":
            out.append("[^/]" if pathname else ".")
            i += 1
        elif ch == "[":
            got = _bracket(pattern, i, pathname)
            if got is None:
                return None
            out.append(got[0])
            i = got[1]
        elif ch == "\\":
            if i + 1 >= n:
                return None  # a trailing backslash matches nothing
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _matches(line: _Line, path: str, base: str) -> bool:
    """Does ``line``'s pattern, read from the .gitattributes of directory ``base`` ("" for the top), match the file
    ``path`` (git's ``path_matches``)?"""
    if line.mustbedir:
        return False  # the paths asked about are files
    if line.nodir:
        name = path.rpartition("/")[2]
        rx = _regex(line.pattern, pathname=False)
        return rx is not None and rx.fullmatch(name) is not None
    pattern = line.pattern[1:] if line.pattern.startswith("/") else line.pattern
    if base:
        if not path.startswith(base + "/"):
            return False
        rest = path[len(base) + 1 :]
    else:
        rest = path
    rx = _regex(pattern, pathname=True)
    return rx is not None and rx.fullmatch(rest) is not None


def filter_of(files: Mapping[str, bytes], path: str) -> Decision:
    """The ``filter`` attribute git gives the file ``path`` (registry-relative, POSIX), from ``files``: the bytes of
    each ``.gitattributes`` by its directory ("" for the top one, ``"a/b"`` for ``a/b/.gitattributes``)."""
    parts = path.split("/")[:-1]
    dirs = [""] + ["/".join(parts[: k + 1]) for k in range(len(parts))]
    stack = tuple((d, files[d]) for d in dirs if d in files)  # the top one first
    by_name = all(line.nodir or line.macro for d, data in stack for line in _lines(data, macro_ok=d == ""))
    # patterns without a "/" see the file's name only: the decision is the same for every file of that name
    return _decide(stack, path.rpartition("/")[2] if by_name else path)


@functools.lru_cache(maxsize=4096)
def _decide(stack: tuple[tuple[str, bytes], ...], path: str) -> Decision:
    lines_of = [(d, _lines(data, macro_ok=d == "")) for d, data in stack]
    path = _bytes_text(path)
    macros: dict[str, tuple[str, _Line]] = {}
    for d, lines in [("[builtin]", _lines(_BUILTIN_BYTES, macro_ok=True)), *lines_of]:  # the last definition wins
        for line in lines:
            if line.macro:
                macros[line.pattern] = (d, line)
    # walk from the deepest file's last line up, as git's fill(): the first line to mention an attribute decides it
    decided: dict[str, Decision] = {}

    def fill(source: str, line: _Line) -> None:
        for name, state in reversed(line.attrs):
            if name in decided:
                continue
            if isinstance(state, str):  # its bytes, read as Latin-1, back to text
                state = state.encode("latin-1").decode("utf-8", "surrogateescape")
            decided[name] = Decision(state, None if source == "[builtin]" else _where(source), line.lineno)
            if state is True and name in macros:  # a macro set here: its attributes, where still undecided
                fill(*macros[name])

    for d, lines in reversed(lines_of):
        for line in reversed(lines):
            if not line.macro and _matches(line, path, _bytes_text(d)):
                fill(d, line)
    return decided.get("filter", Decision(None))


def _bytes_text(path: str) -> str:
    """``path``'s UTF-8 bytes, one Latin-1 character each (a name that is not UTF-8 keeps its own bytes)."""
    return path.encode("utf-8", "surrogateescape").decode("latin-1")


def _where(directory: str) -> str:
    return f"{directory}/.gitattributes" if directory else ".gitattributes"
