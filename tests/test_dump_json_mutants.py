"""Mutation audit of ops.dump_json / _indented beyond test_dump_json's small values: an index.json large enough
that the pieces are joined into chunks (after a list item, once 4,096 are held) is still json's text exactly."""

from __future__ import annotations

import json
from typing import Any

from rwkv_registry.store import ops


def _reference(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


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
