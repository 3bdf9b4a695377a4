"""The JsonCpp-compatible serializer behind MiSS content_version (FORMATS §4)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rwkv_registry.formats.jsoncpp import dumps


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1.0"),
        (0.1, "0.10000000000000001"),
        (16, "16"),
        (16.0, "16.0"),
        (2e-5, "2.0000000000000002e-05"),
        (1e20, "1e+20"),
        (1.5e300, "1.5000000000000001e+300"),
        (-0.0, "-0.0"),
        (float("nan"), "null"),
        (float("inf"), "1e+9999"),
        (float("-inf"), "-1e+9999"),
        (2**64 - 1, "18446744073709551615"),
        (2**64, "1.8446744073709552e+19"),
        (-(2**63), "-9223372036854775808"),
        (True, "true"),
        (None, "null"),
        ("a/b", '"a/b"'),
        ('q"\\', '"q\\"\\\\"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x01\x1f\x7f", '"\\u0001\\u001f\x7f"'),
        ("é中", '"\\u00e9\\u4e2d"'),
        ("😀", '"\\ud83d\\ude00"'),
        ([], "[]"),
        ({}, "{}"),
        ([1, [2, {"a": None}]], '[1,[2,{"a":null}]]'),
    ],
)
def test_tricky_values(value: object, expected: str) -> None:
    assert dumps(value) == expected


def test_keys_sorted_by_utf8_bytes() -> None:
    # 'Z' < 'a' < 'é' (0xC3 0xA9) < '中' (0xE4 ...) in byte order
    assert dumps({"中": 1, "a": 2, "é": 3, "Z": 4}) == '{"Z":4,"a":2,"\\u00e9":3,"\\u4e2d":1}'


def test_int_versus_real_follows_the_parsed_text() -> None:
    assert dumps(json.loads('{"rank": 16, "alpha": 16.0}')) == '{"alpha":16.0,"rank":16}'


def test_deep_nesting_does_not_recurse() -> None:
    value: object = 0
    for _ in range(20000):
        value = [value]
    text = dumps(value)
    assert text.startswith("[[[") and text.count("[") == 20000


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_against_python_json(value: object) -> None:
    """Output is valid JSON, pure ASCII, without whitespace outside strings, and parses back equal."""
    text = dumps(value)
    assert text.isascii()
    back = json.loads(text)

    def same(a: object, b: object) -> bool:
        if isinstance(a, float) and isinstance(b, float):
            return a == b or (math.isnan(a) and math.isnan(b))
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        if isinstance(a, int) and isinstance(b, (int, float)):
            return a == b
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return a == b

    assert same(value, back)
    assert text == dumps(back)


def _string_by_code_point(s: str) -> str:
    """JsonCpp's string escaping, one code point at a time (what jsoncpp.dumps did to a string before its fast
    path)."""
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if ch in '"\\\b\f\n\r\t':
            out.append({'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif cp < 0x20 or 0x7F < cp <= 0xFFFF:
            out.append(f"\\u{cp:04x}")
        elif cp > 0xFFFF:
            cp -= 0x10000
            out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def test_strings_escape_as_code_point_by_code_point() -> None:
    """Plain printable ASCII is written as it is (the fast path); every other string code point by code point: each
    code point below U+0800, samples above, alone and inside printable ASCII, give what the per-code-point walk
    gives."""
    points = [*range(0x800), 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF]
    texts = ["", "r16-lr2e-5-e2", "a b~", "0" * 64]
    texts += [chr(cp) for cp in points] + [f"ab{chr(cp)}cd" for cp in points]
    assert [dumps(t) for t in texts] == [_string_by_code_point(t) for t in texts]
    assert [dumps({t: 0}) for t in texts] == ["{" + _string_by_code_point(t) + ":0}" for t in texts]  # keys too


@given(st.text())
def test_any_string_escapes_as_code_point_by_code_point(s: str) -> None:
    quoted = _string_by_code_point(s)
    assert dumps(s) == quoted
    assert dumps([s, {s: s}]) == f"[{quoted},{{{quoted}:{quoted}}}]"  # an element, a key and a value alike
