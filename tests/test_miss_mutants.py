"""Checks of registry/checks/miss.py that a mutation audit found no test for.

Each test kills at least one hand-made mutant of miss.py that the rest of the suite let live (named
in its docstring). The suite checks bfloat16 adapters through validate; these pin what only a
float16 adapter, several bad values or the writer's own checks reach.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from rwkv_registry.checks.miss import build_manifest, scan_values, write_miss_file


def _f16(*bits: int) -> bytes:
    return struct.pack(f"<{len(bits)}H", *bits)


def test_float16_infinities_and_nans_are_all_counted_and_65504_is_not() -> None:
    """M28: (u & 0x7E00) == 0x7E00 took only the quiet NaNs for bad: an fp16 ±Inf passed MIS010.
    M32: the count of bad values reported as 1 whatever it was."""
    data = _f16(0x3C00, 0x7BFF, 0xFBFF, 0x7C00, 0x0001, 0xFC00, 0x7C01, 0x7E00)  # 1, ±65504, +Inf, tiny, -Inf, NaNs
    count, first = scan_values(data, "float16")
    assert count == 4
    assert first == math.inf
    assert scan_values(_f16(0x3C00, 0x7BFF, 0xFBFF, 0x0001, 0x8000), "float16") == (0, None)


def test_bfloat16_bad_values_are_counted_one_by_one() -> None:
    """M32 for bfloat16: three bad values (65536, -Inf, NaN) are three, the first one named."""
    data = _f16(0x3F80, 0x4780, 0x477F, 0xFF80, 0x7FC0)  # 1, 65536, 65280, -Inf, NaN
    assert scan_values(data, "bfloat16") == (3, 65536.0)


def test_the_writer_refuses_a_d_tensor_whose_second_size_is_not_the_rank() -> None:
    """M33: build_manifest checked the D shape's length only: a [out, 8] tensor went into a rank-4 manifest."""
    name = "blocks.0.att.key.weight.D"
    with pytest.raises(ValueError, match=r"is not \[out, 4\]"):
        build_manifest({name: (16, 8)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})
    manifest = build_manifest({name: (16, 4)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})
    assert manifest["targets"][0]["shape"] == [16, 4] and manifest["scale"] == 2.0


def test_the_writer_refuses_a_tensor_of_another_dtype_than_the_package(tmp_path: Path) -> None:
    """M36: without write_miss_file's dtype check, float16 D bytes were written in a package whose manifest
    says bfloat16 (another content, the same content_version rules): nothing is written."""
    from rwkv_registry.formats.pthwrite import RawTensor

    name = "blocks.0.att.key.weight.D"
    dest = tmp_path / "adapter-final.pth"
    with pytest.raises(ValueError, match="dtype float16 differs from package dtype bfloat16"):
        write_miss_file(
            dest,
            {name: RawTensor("float16", (16, 4), bytes(128))},
            rank=4,
            alpha=8.0,
            base_fingerprint="0" * 64,
            in_features={name: 16},
        )
    assert not dest.exists()


@pytest.mark.parametrize("name", ["blocks.0.att.gate.weight.D", "blocks.0.ln1.weight.D", "blocks.x.att.key.weight.D"])
def test_the_writer_refuses_a_tensor_that_is_no_miss_target(name: str) -> None:
    """M37: build_manifest checked the name's form only: a D tensor of a layer MiSS never targets (att.gate,
    which the server refuses as MIS016) went into the manifest."""
    with pytest.raises(ValueError, match="is not a MiSS tensor name"):
        build_manifest({name: (16, 4)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})


def test_a_value_of_80_characters_is_quoted_whole_and_a_longer_one_cut() -> None:
    """M38: _short cut a repr of exactly its limit (80 characters) too."""
    from rwkv_registry.checks.miss import check_manifest

    def message(target: str) -> str:
        findings, _ = check_manifest({"targets": [{"layer": 0, "target": target}]}, "a.pth")
        return next(f.message for f in findings if f.code == "MIS016")

    assert message("x" * 78).endswith("target is '" + "x" * 78 + "'")
    assert message("x" * 79).endswith("target is '" + "x" * 78 + "…")
