"""Tests of rwkv_registry.formats.jsonload: strict, bounded JSON loading."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rwkv_registry.core.errors import RegistryError
from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes, load_json_file


def refused(data: bytes, **kw) -> JsonLoadError:
    with pytest.raises(JsonLoadError) as info:
        load_json_bytes(data, path="f.json", **kw)
    return info.value


def test_plain_values_and_number_types():
    value = load_json_bytes(b'{"a": [1, 1.0, 1e2, -0, 0.5, true, null, "x"], "b": {}}')
    assert value == {"a": [1, 1.0, 100.0, 0, 0.5, True, None, "x"], "b": {}}
    assert [type(v) for v in value["a"][:5]] == [int, float, float, int, float]


def test_error_type_and_attributes():
    err = refused(b'{"a": 1,\n  "a": 2}')
    assert isinstance(err, ValueError)
    assert isinstance(err, RegistryError)
    assert err.path == "f.json"
    assert (err.line, err.col) == (2, 3)
    assert err.reason == 'duplicate key "a" in one object'
    assert err.message == str(err) == 'f.json: line 2 column 3: duplicate key "a" in one object'
    assert err.hint


def test_bom_refused():
    err = refused(b'\xef\xbb\xbf{"a": 1}')
    assert str(err) == "f.json: starts with a UTF-8 byte order mark (BOM)"
    assert "without a byte order mark" in err.hint


@pytest.mark.parametrize(
    "data", ['{"a": 1}'.encode("utf-16"), '{"a": 1}'.encode("utf-16-be"), '{"a": 1}'.encode("utf-32-le")]
)
def test_utf16_and_utf32_refused(data):
    assert "UTF-16 or UTF-32" in str(refused(data))


def test_invalid_utf8_refused_with_position():
    err = refused(b'{\n  "a": "\xff"}')
    assert str(err) == "f.json: line 2 column 9: invalid UTF-8 byte 0xff"


@pytest.mark.parametrize("data", [b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xe2\x82"'])
def test_surrogates_overlongs_and_truncated_sequences_refused(data):
    assert "invalid UTF-8" in str(refused(data))


def test_utf8_text_accepted():
    assert load_json_bytes('{"名": "基模 ✓ 😀"}'.encode()) == {"名": "基模 ✓ 😀"}


def test_duplicate_key_position_in_nested_object():
    err = refused(b'{"a": 1, "x": [{"b": 1}, {"c": 1, "c": 2}], "a": 3}')
    # the inner object closes first, so its duplicate is the one reported
    assert (err.line, err.col, err.reason) == (1, 35, 'duplicate key "c" in one object')


def test_duplicate_key_written_with_escapes():
    err = refused(b'{"a": 1, "\\u0061": 2}')
    assert (err.line, err.col) == (1, 10)
    assert err.reason == 'duplicate key "a" in one object'


def test_same_key_in_different_objects_accepted():
    assert load_json_bytes(b'[{"a": 1}, {"a": 2}, {"b": {"a": 3}, "a": 4}]')[2] == {"b": {"a": 3}, "a": 4}


@pytest.mark.parametrize(
    ("data", "name", "col"),
    [
        (b"[1, NaN]", "NaN", 5),
        (b'{"x": Infinity}', "Infinity", 7),
        (b'{"NaN": "Infinity", "y": -Infinity}', "-Infinity", 26),
    ],
)
def test_nan_and_infinity_refused(data, name, col):
    err = refused(data)
    assert err.reason == f"{name} is not a JSON number"
    assert (err.line, err.col) == (1, col)


def test_nan_inside_strings_is_text():
    assert load_json_bytes(b'["NaN", "-Infinity"]') == ["NaN", "-Infinity"]


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_ten_thousand_deep_nesting_refused_without_recursion(opener):
    closer = b"]" if opener == b"[" else b"}"
    err = refused(opener * 10_000 + b"1" + closer * 10_000)
    assert err.reason == "nested deeper than 64 levels"
    assert err.line == 1


def test_deep_nesting_refused_even_when_unbalanced():
    assert "nested deeper" in str(refused(b"[" * 1_000_000))


def test_depth_limit_is_exact():
    assert load_json_bytes(b"[" * 64 + b"]" * 64) is not None
    assert refused(b"[" * 65 + b"]" * 65).col == 65
    assert load_json_bytes(b"[[[]]]", max_depth=3) == [[[]]]
    assert "deeper than 2" in str(refused(b"[[[]]]", max_depth=2))


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"a": "[" * 500 + '{"\\"' + "\\" * 3, "b": ['\\"[[[']})
    assert load_json_bytes(text.encode()) == json.loads(text)


def test_top_level_string_of_brackets_is_not_nesting():
    assert load_json_bytes(b'"' + b"[" * 1000 + b'"') == "[" * 1000


def test_oversize_bytes_refused():
    assert load_json_bytes(b"[1]", max_bytes=3) == [1]
    err = refused(b"[1] ", max_bytes=3)
    assert err.reason == "is 4 bytes, over the limit of 3"


def test_oversize_file_refused_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.json"
    with p.open("wb") as f:
        f.truncate(2**30)  # sparse: 1 GiB by stat, nothing written

    def no_open(*a, **k):
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", no_open)
    with pytest.raises(JsonLoadError) as info:
        load_json_file(p, display="big.json")
    assert str(info.value) == "big.json: is 1,073,741,824 bytes, over the limit of 67,108,864"


def test_file_that_grows_after_stat_is_still_bounded(tmp_path, monkeypatch):
    p = tmp_path / "x.json"
    p.write_bytes(b"[" + b"1," * 50 + b"1]")
    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda self, **k: os.stat_result((*real_stat(self)[:6], 0, 0, 0, 0)))
    with pytest.raises(JsonLoadError, match="over the limit of 10"):
        load_json_file(p, max_bytes=10)


def test_load_json_file_ok_and_display(tmp_path):
    p = tmp_path / "index.json"
    p.write_bytes(b'{"schema_version": 1}')
    assert load_json_file(p) == {"schema_version": 1}
    assert load_json_file(str(p), display="index.json") == {"schema_version": 1}
    p.write_bytes(b'{"a": 1,}')
    with pytest.raises(JsonLoadError) as info:
        load_json_file(p, display="reg/index.json")
    assert str(info.value) == "reg/index.json: line 1 column 9: Expecting property name enclosed in double quotes"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(JsonLoadError) as info:
        load_json_file(tmp_path / "nope.json", display="nope.json")
    assert str(info.value) == "nope.json: cannot be read: No such file or directory"
    assert isinstance(info.value.__cause__, FileNotFoundError)
    with pytest.raises(JsonLoadError, match="is not a regular file"):
        load_json_file(tmp_path)


def test_empty_and_whitespace_input():
    assert refused(b"").reason == "is empty"
    assert refused(b" \n\t").reason == "is empty"


def test_syntax_error_position():
    err = refused(b'{\n  "a": [1, 2\n}')
    assert (err.line, err.col) == (3, 1)


def test_unterminated_string():
    assert "Unterminated string" in str(refused(b'{"a": "[[[['))


def test_lone_surrogate_escape_refused_but_pairs_accepted():
    assert "lone UTF-16 surrogate" in str(refused(b'["\\ud800"]'))
    assert "lone UTF-16 surrogate" in str(refused(b'{"\\uDC00": 1}'))
    assert load_json_bytes(b'"\\ud83d\\ude00"') == "😀"
    assert load_json_bytes(b'"\\\\ud800"') == "\\ud800"  # an escaped backslash, not an escape


def test_huge_integer_refused_cleanly():
    assert "digits" in str(refused(b"1" * 5000))


def test_raw_control_character_in_string_refused():
    assert "Invalid control character" in str(refused(b'"a\tb"'))


def test_non_bytes_input():
    assert load_json_bytes(bytearray(b"[1]")) == [1]
    assert load_json_bytes(memoryview(b"[2]")) == [2]
    with pytest.raises(TypeError, match="needs bytes"):
        load_json_bytes('{"a": 1}')  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# round trips

_text = st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from('[]{}"\\:,'), max_size=12)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=30,
)


def _same(a, b) -> bool:
    """Equal with the same JSON types (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def _depth(v) -> int:
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(value=_json_values, ascii_only=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_round_trip(value, ascii_only, indent):
    data = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()
    assert _same(load_json_bytes(data), value)


@settings(max_examples=200, deadline=None)
@given(value=_json_values)
def test_depth_scan_matches_real_depth(value):
    data = json.dumps(value).encode()
    d = _depth(value)
    assert _same(load_json_bytes(data, max_depth=d), value)
    if d > 0:
        with pytest.raises(JsonLoadError, match=f"nested deeper than {d - 1} levels"):
            load_json_bytes(data, max_depth=d - 1)


# --------------------------------------------------------------------------------------------------
# the prefilters (C passes over the bytes) against the scans they spare


def _too_deep_at(text: str, max_depth: int) -> int | None:
    """Where the nesting of ``text`` first goes deeper than ``max_depth`` (the offset of that bracket), or None: a
    walk one character at a time, brackets inside strings (a backslash escaping the next character) not counted;
    the reference the depth scan and its prefilter are held to."""
    depth = 0
    in_string = escaped = False
    for pos, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return pos
        elif ch in "]}":
            depth -= 1
    return None


def _depth_refusal_at(text: str, max_depth: int) -> int | None:
    """The column (1-based; the texts below have one line) at which load_json_bytes refuses ``text`` for its depth,
    or None when it does not (it parses it, or refuses it for another reason)."""
    try:
        load_json_bytes(text.encode(), path="f.json", max_depth=max_depth)
    except JsonLoadError as e:
        if e.reason == f"nested deeper than {max_depth} levels":
            assert e.line == 1 and e.col is not None
            return e.col
    return None


@settings(max_examples=500, deadline=None)
@given(text=st.text(st.sampled_from('[]{}"\\ a0é:,'), max_size=60), max_depth=st.integers(0, 6))
def test_depth_prefilter_never_passes_what_the_scan_refuses(text, max_depth):
    """load_json_bytes refuses a text nested too deep, at the bracket the reference walk names, whether its prefilter
    or its scan decides; the prefilter never passes a text the walk refuses, and without a backslash it decides
    alone (no scan of a text it could have passed)."""
    from rwkv_registry.formats.jsonload import depth_surely_within

    at = _too_deep_at(text, max_depth)
    assert _depth_refusal_at(text, max_depth) == (None if at is None else at + 1)
    surely = depth_surely_within(text.encode(), max_depth)
    assert not (surely and at is not None)
    if "\\" not in text:  # without a backslash the prefilter decides alone: it must agree with the scan
        assert surely == (at is None)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["1" * 300, "2" * 9, "3" * 8, "a", " ", "٣" * 309, "-", "0" * 309, "\n"]), max_size=6
    )
)
def test_big_number_prefilter_is_the_regex(parts):
    """big_number_possible says what a search for 309 ASCII digits in a row says (an Arabic-Indic digit is none),
    also for a run across the boundary of the chunks it translates."""
    import re

    from rwkv_registry.formats.jsonload import big_number_possible

    text = "".join(parts)
    run = bool(re.search(r"[0-9]{309}", text))
    assert big_number_possible(text.encode()) == run
    for chunk in (1, 7, 300, 500):  # a run across chunk boundaries is still found
        assert big_number_possible(text.encode(), chunk) == run


def test_prefilters_still_refuse_depth_and_overflow_in_a_large_document():
    entries = [{"id": f"e{i}", "sha256": "e123" * 16, "n": [i, 1.5]} for i in range(2000)]
    deep = {"entries": [*entries, {"x": [[[[[[[[1]]]]]]]]}]}
    assert "nested deeper than 8 levels" in str(refused(json.dumps(deep).encode(), max_depth=8))
    big = {"entries": [*entries, {"x": int("9" * 309)}]}
    assert "integer of 309 digits" in str(refused(json.dumps(big).encode()))
    assert load_json_bytes(json.dumps({"entries": entries}).encode()) == {"entries": entries}


def test_read_at_most_is_read_of_the_limit_whatever_the_stat_said() -> None:
    """The size from fstat only sizes the first read: a file that grew or shrank since gives what read(limit) gives."""
    import io

    from rwkv_registry.formats.jsonload import read_at_most

    for actual in (0, 1, 2, 5, 9, 10, 11, 50):
        data = bytes(range(actual))
        for size in (0, 1, actual - 1, actual, actual + 1, 3 * actual):
            for limit in (1, 2, 5, 10, 11, 100):
                if size < 0:
                    continue
                got = read_at_most(io.BytesIO(data), size, limit)
                assert got == io.BytesIO(data).read(limit), (actual, size, limit)


def test_read_json_bytes_refuses_an_oversize_file_unread_naming_it(tmp_path: Path) -> None:
    """By its stat size (a sparse file: nothing is read), naming ``display`` or else the path."""
    from rwkv_registry.formats.jsonload import JsonTooLargeError, read_json_bytes

    p = tmp_path / "big.json"
    with open(p, "wb") as fh:
        fh.truncate(1001)
    with pytest.raises(JsonTooLargeError) as e:
        read_json_bytes(p, display="train.json", max_bytes=1000)
    assert "train.json" in str(e.value) and str(tmp_path) not in str(e.value)
    with pytest.raises(JsonTooLargeError) as e:
        read_json_bytes(p, max_bytes=1000)
    assert str(p) in str(e.value)
    assert len(read_json_bytes(p, max_bytes=1001)) == 1001
