"""ops.dump_json writes index.json and train.json itself (json's indented encoder is pure Python): the bytes of
``json.dumps(value, indent=2, ensure_ascii=False)`` plus a newline, for every value."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rwkv_registry.store import ops


def _reference(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_keys = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_json_values_are_written_as_json_writes_them(value: Any) -> None:
    assert ops.dump_json(value) == _reference(value)


class _Level(enum.IntEnum):
    ONE = 1


class _Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        {"a": {}, "b": [], "c": [[], {}], "d": [{}]},
        {"nan": math.nan, "inf": [math.inf, -math.inf], "zero": -0.0, "tiny": 5e-324, "big": 1e308},
        {'\u2028\x00\x1f"\\é😀': '\u2028\x00\x1f"\\é😀'},
        {3: "int", 2.5: "float", True: "t", False: "f", None: "n"},
        [True, False, None, 0, -1, 10**40],
        ("a", ["tuple"]),  # json writes a tuple as a list: left to json
        {"k": _Level.ONE, "s": _Text("sub")},  # subclasses: left to json
        {_Text("key"): 1},
    ],
)
def test_edge_values_are_written_as_json_writes_them(value: Any) -> None:
    assert ops.dump_json(value) == _reference(value)


def test_what_json_refuses_is_refused_as_json_refuses_it() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    for bad in ({"s": {1, 2}}, {(1, 2): 3}, cycle, {"b": b"x"}):
        with pytest.raises((TypeError, ValueError)) as want:
            _reference(bad)
        with pytest.raises(type(want.value)):
            ops.dump_json(bad)
