"""Strict, bounded JSON loading.

Every JSON file the registry reads (index.json, train.json, miss.json, reports) goes through
:func:`load_json_bytes` or :func:`load_json_file`, which accept a little less than :func:`json.loads`:

- UTF-8 only; a byte order mark, UTF-16/32 and invalid UTF-8 are refused;
- a key repeated in one object is refused (``json`` silently keeps the last one);
- ``NaN``, ``Infinity`` and ``-Infinity`` are refused (they are not JSON);
- a ``\\uD800``-style escape that leaves a lone surrogate is refused (it cannot be written back as UTF-8);
- a number beyond the range of a double (an integer of 309 digits, ``1e400``) is refused: JsonCpp
  and most readers cannot represent it (``json`` makes the second ``inf``);
- nesting deeper than ``max_depth`` is refused after a linear scan of the text, before parsing, so a
  10,000-deep document costs microseconds instead of a ``RecursionError``;
- input larger than ``max_bytes`` is refused before it is read in full.

Integers stay ``int`` and numbers with a fraction or exponent become ``float``, as with ``json``.
Each refusal is a :class:`JsonLoadError` naming the file, the line and column when known, and the fix.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from array import array
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeGuard

from rwkv_registry.core.errors import RegistryError
from rwkv_registry.core.fsio import open_regular, read_at_most

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "JsonLoadError",
    "JsonTooLargeError",
    "big_number_possible",
    "depth_surely_within",
    "is_finite_number",
    "is_integer",
    "load_json_bytes",
    "load_json_file",
    "read_at_most",
    "read_json_bytes",
]

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_BYTES = 64 * 2**20

# SCH001's fix (checks/json_files.py gives it to the rule): one text for an unparseable JSON file, wherever reported
UNPARSEABLE_JSON_HINT = (
    "Write UTF-8 JSON without duplicate keys, at most 64 levels deep; `python -m json.tool FILE` shows where it breaks."
)
_BIG_NUMBER_HINT = "Write numbers within ±1.7e308; JsonCpp (the server) and most JSON readers cannot hold more."

# A JSON string, matched possessively (no backtracking); an unterminated one runs to the end.
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\Z)'
# Skip everything that is not a bracket (strings included) and capture the next bracket.
_BRACKET_RE = re.compile(rf'(?:[^"\[\]{{}}]++|{_STRING})*+([\[\]{{}}])', re.DOTALL)
# Tokens that matter for locating a duplicate key: strings and structural characters.
_TOKEN_RE = re.compile(rf"{_STRING}|[\[\]{{}}:,]", re.DOTALL)
# Strings or the non-standard constants json accepts.
_CONSTANT_RE = re.compile(rf"{_STRING}|-?Infinity|NaN", re.DOTALL)
# A \u escape of a surrogate; only then can a lone surrogate appear in the parsed value.
_SURROGATE_ESCAPE_RE = re.compile(r"\\u[dD][89a-fA-F]")
# An integer too long for a double (309 digits or more); only then, or when a number with a fraction or an
# exponent parsed to an infinity, is the parsed value walked. (A regex on exponents alone missed
# ``1000…000e9``, 300 digits times 1e9, which json makes ``inf``; and it matched the ``e123`` of most SHA-256
# strings, walking nearly every registry file for nothing.)
_BIG_NUMBER_RUN = b"0" * 309
# bytes.translate tables for the prefilters below: whole-buffer passes in C instead of a regex tried at each
# position (which cost a third of the strict load of a 5 MB index.json).
_DIGITS_TO_0 = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # digit -> "0", else " "
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')  # deleted: all but brackets and quotes
_BRACKET_SIGN = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: +1 open, -1 close


class JsonLoadError(RegistryError, ValueError):
    """A JSON file or buffer was refused.

    ``path`` is the display name of the input (may be empty), ``message`` the full one-line text
    (``"<path>: line L column C: <what>"``), ``reason`` the *what* alone, ``line`` and ``col``
    1-based positions when known, ``hint`` how to fix it. Errors reading the file (missing,
    unreadable) are chained as ``__cause__``.
    """

    def __init__(
        self,
        path: str,
        reason: str,
        *,
        line: int | None = None,
        col: int | None = None,
        hint: str = UNPARSEABLE_JSON_HINT,
    ) -> None:
        where = f"line {line} column {col}: " if line is not None and col is not None else ""
        prefix = f"{path}: " if path else ""
        super().__init__(f"{prefix}{where}{reason}", hint=hint, path=path)
        self.reason = reason
        self.line = line
        self.col = col


class JsonTooLargeError(JsonLoadError, OSError):
    """A JSON file larger than the limit, refused by ``stat`` before it is read.

    Also an :class:`OSError` (``strerror`` is the reason), so code that reads a file and reports
    ``OSError`` as "cannot read" reports this too, without the file ever being in memory.
    """

    def __init__(self, path: str, size: int, max_bytes: int) -> None:
        reason = f"is {size:,} bytes, over the limit of {max_bytes:,}"
        super().__init__(path, reason, hint="JSON files of the registry are small; check that this is the right file.")
        self.strerror = f"the file is {size:,} bytes, over the {max_bytes:,}-byte limit of registry JSON files"
        self.size = size


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _BadConstant(Exception):
    pass


def is_integer(x: Any) -> TypeGuard[int]:
    """A JSON integer as loaded: an ``int`` that is not a ``bool`` (``true`` is no count)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_finite_number(x: Any) -> TypeGuard[int | float]:
    """A JSON number as loaded (``int`` or ``float``, not ``bool``) that is finite."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of character offset ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _refuse_constant(name: str) -> Any:
    raise _BadConstant(name)


def depth_surely_within(data: bytes, max_depth: int) -> bool:
    """Whether the nesting of ``data`` (UTF-8 JSON) is at most ``max_depth``, decided in a few C passes: with no
    backslash in the text, quotes strictly alternate between opening and closing a string, so the brackets
    outside strings are those between an even and the next odd quote. False when a backslash is present (an
    escape could hide a quote) or the depth is over: :func:`load_json_bytes` then scans the text, and names the
    place."""
    if b"\\" in data:
        return False
    # dropping two adjacent quotes keeps every other character on its side of a string boundary; nearly every
    # string holds no bracket, so few quotes are left to split on (no list of one piece per string)
    outside = b"".join(data.translate(None, _NOT_STRUCTURE).replace(b'""', b"").split(b'"')[0::2])
    return max(accumulate(array("b", outside.translate(_BRACKET_SIGN))), default=0) <= max_depth


def big_number_possible(data: bytes, chunk: int = 1 << 20) -> bool:
    """Whether ``data`` holds a run of 309 ASCII digits, as ``re.search(r"[0-9]{309}", text)`` on its text would
    say (the prefilter of :func:`load_json_bytes`: only then, or when a number parsed to an infinity, is the parsed
    value walked); translated ``chunk`` bytes at a time (overlapping by 308), so that no copy of a large file is
    made."""
    overlap = len(_BIG_NUMBER_RUN) - 1
    return any(
        _BIG_NUMBER_RUN in data[start : start + chunk + overlap].translate(_DIGITS_TO_0)
        for start in range(0, len(data), chunk)
    )


def _check_depth(text: str, max_depth: int, path: str) -> None:
    """Refuse nesting deeper than ``max_depth``; a linear scan that skips strings, no recursion."""
    depth = 0
    pos = 0
    while (m := _BRACKET_RE.match(text, pos)) is not None:  # anchored: never restarts inside a string
        pos = m.end()
        if m.group(1) in "[{":
            depth += 1
            if depth > max_depth:
                line, col = _line_col(text, m.start(1))
                raise JsonLoadError(
                    path,
                    f"nested deeper than {max_depth} levels",
                    line=line,
                    col=col,
                    hint=f"Keep JSON at most {max_depth} arrays/objects deep.",
                )
        else:
            depth -= 1


def _locate_duplicate(text: str, key: str) -> int | None:
    """Offset of the second occurrence of ``key`` in one object, or None when not found."""
    stack: list[set[str] | None] = []  # a key set per open object, None per open array
    expect_key = False
    for m in _TOKEN_RE.finditer(text):
        c = text[m.start()]
        if c == "{":
            stack.append(set())
            expect_key = True
        elif c == "[":
            stack.append(None)
            expect_key = False
        elif c in "]}":
            if stack:
                stack.pop()
            expect_key = False
        elif c == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif c == ":":
            expect_key = False
        elif expect_key and stack and stack[-1] is not None:
            try:
                name = json.loads(m.group())
            except ValueError:
                return None
            if name in stack[-1] and name == key:
                return m.start()
            stack[-1].add(name)
            expect_key = False
    return None


def _locate_constant(text: str) -> int | None:
    for m in _CONSTANT_RE.finditer(text):
        if text[m.start()] != '"':
            return m.start()
    return None


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _out_of_range_number(value: Any) -> int | float | None:
    """The first number in ``value`` that a double cannot hold (a huge int, an overflowed float)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and math.isinf(v):
            return v
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > sys.float_info.max:
            return v
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _decode(data: bytes, path: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        raise JsonLoadError(
            path,
            "starts with a UTF-8 byte order mark (BOM)",
            hint="Save the file as UTF-8 without a byte order mark.",
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) >= 2 and (data[0] == 0 or data[1] == 0)):
        raise JsonLoadError(path, "is UTF-16 or UTF-32 encoded, not UTF-8", hint="Save the file as UTF-8.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = data[: exc.start].decode("utf-8")
        line, col = _line_col(head, len(head))
        raise JsonLoadError(
            path,
            f"invalid UTF-8 byte 0x{data[exc.start]:02x}",
            line=line,
            col=col,
            hint="Save the file as UTF-8.",
        ) from None


def load_json_bytes(
    data: bytes, *, path: str = "", max_depth: int = DEFAULT_MAX_DEPTH, max_bytes: int = DEFAULT_MAX_BYTES
) -> Any:
    """Parse UTF-8 JSON strictly (see the module docstring) and return the value.

    ``path`` only names the input in messages. Raises :class:`JsonLoadError`.

    >>> load_json_bytes(b'{"a": [1, 2.0]}')
    {'a': [1, 2.0]}
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"load_json_bytes needs bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) > max_bytes:
        raise JsonLoadError(
            path,
            f"is {len(data):,} bytes, over the limit of {max_bytes:,}",
            hint="JSON files of the registry are small; check that this is the right file.",
        )
    text = _decode(data, path)
    if not text.strip():
        raise JsonLoadError(path, "is empty", hint="Write a JSON value into the file, e.g. {}.")
    if not depth_surely_within(data, max_depth):
        _check_depth(text, max_depth, path)
    overflowed: list[float] = []

    def parse_float(literal: str) -> float:
        x = float(literal)  # what json does with a number that has a fraction or an exponent
        if math.isinf(x):
            overflowed.append(x)
        return x

    try:
        value = json.loads(
            text, object_pairs_hook=_pairs_to_dict, parse_constant=_refuse_constant, parse_float=parse_float
        )
    except json.JSONDecodeError as exc:
        raise JsonLoadError(path, exc.msg, line=exc.lineno, col=exc.colno, hint=UNPARSEABLE_JSON_HINT) from None
    except _DuplicateKey as exc:
        pos = _locate_duplicate(text, exc.key)
        line, col = _line_col(text, pos) if pos is not None else (None, None)
        raise JsonLoadError(
            path,
            f"duplicate key {json.dumps(exc.key, ensure_ascii=False)} in one object",
            line=line,
            col=col,
            hint="Keep one of the two values; JSON readers disagree on which one wins.",
        ) from None
    except _BadConstant as exc:
        pos = _locate_constant(text)
        line, col = _line_col(text, pos) if pos is not None else (None, None)
        raise JsonLoadError(
            path,
            f"{exc.args[0]} is not a JSON number",
            line=line,
            col=col,
            hint="Write null or a finite number instead.",
        ) from None
    except RecursionError:
        raise JsonLoadError(
            path,
            "nested too deeply to parse",
            hint=f"Keep JSON at most {DEFAULT_MAX_DEPTH} arrays/objects deep.",
        ) from None
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        too_long = "integer string conversion" in str(exc)  # not Python's limit to raise: beyond a double anyway
        raise JsonLoadError(path, str(exc), hint=_BIG_NUMBER_HINT if too_long else UNPARSEABLE_JSON_HINT) from None
    if overflowed or big_number_possible(data):
        big = _out_of_range_number(value)
        if big is not None:
            shown = f"an integer of {len(str(abs(big)))} digits" if isinstance(big, int) else "a number"
            raise JsonLoadError(
                path,
                f"{shown} is beyond the range of a double",
                hint=_BIG_NUMBER_HINT,
            )
    if _SURROGATE_ESCAPE_RE.search(text) and _has_lone_surrogate(value):
        raise JsonLoadError(
            path,
            "a \\u escape leaves a lone UTF-16 surrogate",
            hint="Escape characters above U+FFFF as a surrogate pair, or write them as UTF-8.",
        )
    return value


def read_json_bytes(
    path: str | os.PathLike[str], *, display: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes:
    """The bytes of a JSON file, refusing one over ``max_bytes`` by ``stat`` before reading it.

    Raises :class:`JsonTooLargeError` (an ``OSError`` too) for an oversize file, and ``OSError``
    when it cannot be read; at most ``max_bytes + 1`` bytes are ever read, even if the file grows.
    """
    name = display if display is not None else str(path)
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise JsonTooLargeError(name, size, max_bytes)
        data = read_at_most(fh, size, max_bytes + 1)
    if len(data) > max_bytes:
        raise JsonTooLargeError(name, len(data), max_bytes)
    return data


def load_json_file(path: str | os.PathLike[str], *, display: str | None = None, **kw: Any) -> Any:
    """Read and parse the JSON file at ``path`` strictly; ``display`` names it in messages.

    The size is checked with ``stat`` before reading. Keyword arguments go to
    :func:`load_json_bytes` (``max_depth``, ``max_bytes``). Raises :class:`JsonLoadError`, also
    for a missing or unreadable file (the ``OSError`` is chained as ``__cause__``).
    """
    p = Path(path)
    name = display if display is not None else str(path)
    max_bytes = kw.get("max_bytes", DEFAULT_MAX_BYTES)
    try:
        st = p.stat()
        if not p.is_file():
            raise JsonLoadError(name, "is not a regular file", hint="Point to a JSON file.")
        if st.st_size > max_bytes:
            raise JsonLoadError(
                name,
                f"is {st.st_size:,} bytes, over the limit of {max_bytes:,}",
                hint="JSON files of the registry are small; check that this is the right file.",
            )
        with p.open("rb") as fh:
            data = read_at_most(fh, st.st_size, max_bytes + 1)  # the file may have grown since stat
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise JsonLoadError(
            name, f"cannot be read: {reason}", hint="Check that the file exists and is readable."
        ) from exc
    return load_json_bytes(data, path=name, **kw)
