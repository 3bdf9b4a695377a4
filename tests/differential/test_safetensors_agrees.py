"""safetensors files: the tool accepts a header exactly when ``safetensors.safe_open`` reads it the same.

Regressions the differential campaign (bench/fuzz_differential.py, classes ``st-*``) found: a shape
holding no byte but a dimension of 2**64 or more (``[0, 2**64]``), or one that overflows 64 bits on
the way (``[2**40, 2**40, 0]``), or a dimension torch cannot hold (``[2**63, 0]``), was accepted by
the tool (0 elements, 0 bytes) and refused by safetensors (serde's ``usize``, ``Metadata::validate``'s
checked multiplication, torch's int64 sizes).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import diffcheck
import pytest

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.formats.ckpt import open_checkpoint


def _file(shape: list[int], dtype: str = "F32", data: bytes = b"") -> bytes:
    header = json.dumps({"w": {"dtype": dtype, "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize(
    "shape",
    [[0, 2**64], [2**64, 0], [0, 2**70], [2**63, 0], [0, 2**63], [2**40, 2**40, 0], [2**32, 2**32, 0]],
    ids=["0,2^64", "2^64,0", "0,2^70", "2^63,0", "0,2^63", "2^40,2^40,0", "2^32,2^32,0"],
)
def test_a_shape_safetensors_cannot_hold_is_refused(shape: list[int], tmp_path: Path) -> None:
    data = _file(shape)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(data)
    assert info.value.code == "PTH012"
    assert "overflows 64 bits" in info.value.message
    outcome = diffcheck.check_bytes(data, tmp_path / "w.safetensors")
    assert not outcome.accepted and outcome.ok


@pytest.mark.parametrize("shape", [[2**62, 0], [2**32, 2**31, 0], [0, 2**62, 2**62], [0], []])
def test_a_shape_both_read_is_accepted_and_read_the_same(shape: list[int], tmp_path: Path) -> None:
    data = _file(shape, data=b"\0\0\x80?" if shape == [] else b"")
    outcome = diffcheck.check_bytes(data, tmp_path / "w.safetensors")
    assert outcome.accepted, outcome.message
    assert outcome.ok, outcome.disagreements
    assert list(open_checkpoint(data).tensors["w"].shape) == shape
