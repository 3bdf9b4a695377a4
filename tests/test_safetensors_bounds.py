"""The safetensors reader's bounds
(registry/formats/ckpt.py ``_safetensors_header``): a header of up to 8 MiB and 16,384
tensors is read; one byte or one tensor more is PTH012, with a hint saying why (a State's header is a few KB; the
safetensors library itself allows 100 MB, which costs three times that in Python)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from ckpt_hostile import safetensors_bytes

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.formats.ckpt import MAX_SAFETENSORS_HEADER, MAX_SAFETENSORS_TENSORS, MemorySource, open_checkpoint


def _empty(n: int) -> bytes:
    return safetensors_bytes({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(n)}, b"")


def _padded(length: int) -> bytes:
    return struct.pack("<Q", length) + b"{}" + b" " * (length - 2)


def test_the_bounds_are_what_the_docs_say() -> None:
    assert MAX_SAFETENSORS_HEADER == 8 * 1024 * 1024 and MAX_SAFETENSORS_TENSORS == 16_384


def test_a_header_at_the_bound_is_read() -> None:
    assert open_checkpoint(MemorySource(_padded(MAX_SAFETENSORS_HEADER))).tensors == {}
    assert len(open_checkpoint(MemorySource(_empty(MAX_SAFETENSORS_TENSORS))).tensors) == MAX_SAFETENSORS_TENSORS


def test_a_header_past_the_bound_is_refused_with_the_reason() -> None:
    with pytest.raises(CheckpointError) as e:
        open_checkpoint(MemorySource(_padded(MAX_SAFETENSORS_HEADER + 8)))
    assert e.value.code == "PTH012"
    assert e.value.message == "header length 8,388,616 exceeds the 8,388,608-byte bound of a State's header"
    assert "up to 8 MiB and 16,384 tensors" in e.value.hint


def test_more_tensors_than_the_bound_are_refused_with_the_reason() -> None:
    with pytest.raises(CheckpointError) as e:
        open_checkpoint(MemorySource(_empty(MAX_SAFETENSORS_TENSORS + 1)))
    assert e.value.code == "PTH012" and e.value.message == "header holds more than 16,384 objects (tensors)"
    assert "up to 8 MiB and 16,384 tensors" in e.value.hint


def test_validate_reports_it_on_the_file(reg: Path) -> None:
    state = reg / "rwkv7-tiny-20260101-ctx4096/state/v1/s1.pth"
    state.write_bytes(_empty(20_000))
    found = [(f.code, f.message) for f in validate_registry(reg).findings if f.path.endswith("s1.pth")]
    assert ("PTH012", "header holds more than 16,384 objects (tensors)") in found
    assert json.dumps(found)  # plain data


def test_many_plain_keys_are_refused_before_they_are_parsed(tmp_path: Path) -> None:
    """700,000 keys of plain values fit in 8 MiB and cost 160 MB once parsed: counted (their ':') and refused
    first, in a few tens of MB."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "malicious"))
    from rss_probe import MB, probe

    body = ",".join(f'"a{i}":0' for i in range(700_000))
    raw = ("{" + body + "}").encode()
    bomb = tmp_path / "keys.safetensors"
    bomb.write_bytes(safetensors_bytes(None, b"", raw_header=raw))
    small = tmp_path / "small.safetensors"
    small.write_bytes(_empty(1))
    run = probe("open", str(bomb))
    assert run.json()["code"] == "PTH012"
    assert (
        run.json()["message"]
        == "header has 700,000 ':' (keys), more than 16,384 tensors and their metadata hold (131,072)"
    )
    assert run.max_rss - probe("open", str(small)).max_rss < 60 * MB
