"""Packed variable-length batches (``cu_seqlens``) equal separate runs, for every backend."""

from __future__ import annotations

import itertools

import pytest
import torch

pytest.importorskip("triton")

from wkv7_helpers import TOL, assert_close, nan_like, nan_state, new_seed, random_state, reference, rwkv_inputs

from rwkv_registry.kernels.wkv7 import wkv7

# lengths: an empty sequence, single tokens, partial and whole chunks of 16
LENGTHS = [7, 0, 16, 1, 29]


@pytest.mark.parametrize("backend", ["chunk", "step", "naive"])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64], ids=["int32", "int64"])
def test_packed_equals_separate_runs(backend: str, offsets_dtype: torch.dtype) -> None:
    seed = new_seed()
    total, heads, n = sum(LENGTHS), 2, 16
    ins = rwkv_inputs(1, total, heads, n, torch.float32, seed)
    s0 = random_state(len(LENGTHS), heads, n, seed)
    offsets = [0]
    for length in LENGTHS:
        offsets.append(offsets[-1] + length)
    cu = torch.tensor(offsets, dtype=offsets_dtype)
    out, state_out = nan_like(ins["r"]), nan_state(len(LENGTHS), heads, n)
    y, st = wkv7(*ins.values(), s0, cu_seqlens=cu, backend=backend, out=out, state_out=state_out)
    for i, (lo, hi) in enumerate(itertools.pairwise(offsets)):
        part = {k: t[:, lo:hi] for k, t in ins.items()}
        y_ref, st_ref = reference(part, s0[i : i + 1])
        if hi > lo:
            assert_close(f"y of sequence {i}", y[:, lo:hi], y_ref, TOL[torch.float32], seed)
        assert_close(f"final state of sequence {i}", st[i : i + 1], st_ref, TOL[torch.float32], seed)


def test_packed_without_initial_state_matches_batched() -> None:
    """Two equal-length sequences packed with cu_seqlens equal the same two as a [2, T] batch."""
    seed = new_seed()
    ins = rwkv_inputs(2, 21, 1, 32, torch.bfloat16, seed)
    packed = {k: t.reshape(1, 42, 1, 32) for k, t in ins.items()}
    cu = torch.tensor([0, 21, 42], dtype=torch.int32)
    y_packed, st_packed = wkv7(*packed.values(), None, cu_seqlens=cu, backend="chunk")
    y_ref, st_ref = reference(ins, None)
    assert_close("y", y_packed.reshape(2, 21, 1, 32), y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", st_packed, st_ref, TOL[torch.bfloat16], seed)
