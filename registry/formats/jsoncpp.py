"""A byte-exact imitation of JsonCpp's ``StreamWriterBuilder`` with ``indentation = ""``.

The MiSS ``content_version`` hashes the manifest as the rwkv_lightning_cuda server serializes it
(FORMATS §4). What that writer emits (open-source-parsers/jsoncpp ``src/lib_json/json_writer.cpp``,
``BuiltStyledStreamWriter``, default settings):

- no whitespace or newline anywhere: ``{"a":1,"b":[1,2]}``;
- object keys in byte order of their UTF-8 encoding (``std::map`` of C strings);
- integers as plain decimal (values that JsonCpp parses as Int64/UInt64);
- reals as C ``%.17g``, with ``.0`` appended when the text has neither ``.`` nor ``e``
  (``1.0`` -> ``1.0``, ``0.1`` -> ``0.10000000000000001``); NaN -> ``null``,
  -Inf -> ``-1e+9999``, +Inf -> ``1e+9999``;
- strings escape ``"`` ``\\`` ``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t``; every other code point
  below 0x20 and every code point above 0x7F as ``\\uXXXX`` with lower-case hex (UTF-16 surrogate
  pairs above U+FFFF); ``/`` is not escaped;
- integer versus real follows the JSON text the value was parsed from, which Python's ``json``
  preserves (``16`` -> ``int``, ``16.0`` -> ``float``). Integers outside the 64-bit range are
  reals to JsonCpp, and so they are here.

Examples::

    >>> dumps({"b": 1.0, "a": [1, "é/"]})
    '{"a":[1,"\\\\u00e9/"],"b":1.0}'
    >>> dumps(0.1)
    '0.10000000000000001'
"""

from __future__ import annotations

import math
from typing import Any

_INT_MIN = -(2**63)
_UINT_MAX = 2**64 - 1

_SIMPLE_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _real(x: float) -> str:
    if math.isnan(x):
        return "null"
    if math.isinf(x):
        return "1e+9999" if x > 0 else "-1e+9999"
    text = "%.17g" % x
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _string(s: str) -> str:
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'  # U+0020-U+007E but the two escaped: as they are (the usual key, name, digest)
    out = ['"']
    for ch in s:
        esc = _SIMPLE_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
            continue
        cp = ord(ch)
        if cp < 0x20 or 0x7F < cp <= 0xFFFF:
            out.append(f"\\u{cp:04x}")
        elif cp > 0xFFFF:
            cp -= 0x10000
            out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def dumps(value: Any) -> str:
    """Serialize ``value`` (as returned by ``json.loads``) exactly as JsonCpp's compact writer."""
    parts: list[str] = []
    _emit(value, parts)
    return "".join(parts)


def dumps_bytes(value: Any) -> bytes:
    """:func:`dumps` encoded as the server hashes it (the text is pure ASCII)."""
    return dumps(value).encode("ascii")


def _emit(value: Any, out: list[str]) -> None:
    # Iterative walk: a manifest nested 10,000 deep must not exhaust the Python stack.
    stack: list[Any] = [("v", value)]
    while stack:
        kind, item = stack.pop()
        if kind == "s":  # a literal separator or bracket
            out.append(item)
            continue
        if item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, int):
            out.append(str(item) if _INT_MIN <= item <= _UINT_MAX else _real(float(item)))
        elif isinstance(item, float):
            out.append(_real(item))
        elif isinstance(item, str):
            out.append(_string(item))
        elif isinstance(item, dict):
            keys = sorted(item, key=lambda k: str(k).encode("utf-8", "surrogatepass"))
            todo: list[Any] = [("s", "{")]
            for i, key in enumerate(keys):
                if i:
                    todo.append(("s", ","))
                todo.append(("s", _string(str(key)) + ":"))
                todo.append(("v", item[key]))
            todo.append(("s", "}"))
            stack.extend(reversed(todo))
        elif isinstance(item, (list, tuple)):
            todo = [("s", "[")]
            for i, element in enumerate(item):
                if i:
                    todo.append(("s", ","))
                todo.append(("v", element))
            todo.append(("s", "]"))
            stack.extend(reversed(todo))
        else:
            raise TypeError(f"JsonCpp cannot serialize a value of type {type(item).__name__}")
