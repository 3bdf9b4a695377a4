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


def test_a_value_of_many_chunks_is_written_whole_and_in_order() -> None:
    entries = [
        {"id": f"e{i}", "scores": [{"benchmark": "b", "value": i / 7, "ok": i % 2 == 0}], "tags": ["x", None, i]}
        for i in range(3000)
    ]
    value = {"registry": {"title": "t"}, "entries": entries, "bases": [[{"deep": [entries[0]]}]] * 40}
    assert ops.dump_json(value) == _reference(value)


def test_an_int_subclass_key_is_written_as_its_number() -> None:
    """json converts an int key with int.__repr__: an IntEnum key is "1", not its repr."""
    import enum

    class Level(enum.IntEnum):
        ONE = 1

    value = {Level.ONE: "x", 2: [1]}
    assert ops.dump_json(value) == _reference(value)
    assert b'"1": "x"' in ops.dump_json(value)


def test_a_float_subclass_key_is_written_as_its_float() -> None:
    """json converts a float key with float.__repr__, whatever the subclass's own repr says."""

    class Weight(float):
        def __repr__(self) -> str:
            return "Weight(?)"

    value = {Weight(0.5): 1}
    assert ops.dump_json(value) == _reference(value)
    assert b'"0.5": 1' in ops.dump_json(value)


def test_a_value_left_to_json_keeps_its_non_ascii_text() -> None:
    """A tuple goes to json itself (ensure_ascii=False there too): "é", not "\\u00e9"."""
    value = {"t": ("é", "😀")}
    assert ops.dump_json(value) == _reference(value)
    assert "é".encode() in ops.dump_json(value)
