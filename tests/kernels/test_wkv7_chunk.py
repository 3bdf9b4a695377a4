"""The chunked Triton kernel against the fp64 reference, on the CPU through Triton's interpreter.

Small shapes with a partial last chunk; outputs are preallocated full of NaN so any element the
kernel fails to write shows up as an error.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

from wkv7_helpers import (
    TOL,
    assert_close,
    case_id,
    nan_like,
    nan_state,
    new_seed,
    random_state,
    reference,
    rwkv_inputs,
)

from rwkv_registry.kernels.wkv7 import wkv7

CASES = [
    (1, 1, 1, 16, torch.float32),
    (2, 37, 2, 16, torch.float32),
    (1, 70, 2, 32, torch.float32),
    (2, 33, 1, 64, torch.float32),
    (1, 16, 2, 32, torch.bfloat16),
    (2, 45, 2, 32, torch.bfloat16),
    (1, 64, 1, 64, torch.bfloat16),
    (1, 50, 2, 16, torch.float16),
]


def _run(ins: dict[str, torch.Tensor], state: torch.Tensor | None, **kw: object) -> tuple[torch.Tensor, torch.Tensor]:
    b, _, h, n = ins["r"].shape
    out, state_out = nan_like(ins["r"]), nan_state(b, h, n)
    y, st = wkv7(*ins.values(), state, backend="chunk", out=out, state_out=state_out, **kw)
    assert y is out and st is state_out
    return y, st


@pytest.mark.parametrize(("B", "T", "H", "N", "dtype"), CASES, ids=[case_id(*c) for c in CASES])
def test_chunk_matches_reference(B: int, T: int, H: int, N: int, dtype: torch.dtype) -> None:
    seed = new_seed()
    ins = rwkv_inputs(B, T, H, N, dtype, seed)
    s0 = random_state(B, H, N, seed)
    y, st = _run(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert y.dtype == dtype and st.dtype == torch.float32
    assert_close("y", y, y_ref, TOL[dtype], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32] if dtype == torch.float32 else TOL[dtype], seed)


def test_chunk_without_initial_state() -> None:
    seed = new_seed()
    ins = rwkv_inputs(2, 23, 2, 32, torch.float32, seed)
    y, st = _run(ins, None)
    y_ref, st_ref = reference(ins, None)
    assert_close("y", y, y_ref, TOL[torch.float32], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32], seed)


def test_state_carries_across_calls() -> None:
    """Prefill in two calls (split inside a chunk) equals one call: the state in and out is exact."""
    seed = new_seed()
    ins = rwkv_inputs(1, 41, 2, 16, torch.float32, seed)
    s0 = random_state(1, 2, 16, seed)
    first = {k: t[:, :19] for k, t in ins.items()}
    second = {k: t[:, 19:] for k, t in ins.items()}
    y1, s1 = _run(first, s0)
    y2, s2 = _run(second, s1)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", torch.cat([y1, y2], dim=1), y_ref, TOL[torch.float32], seed)
    assert_close("final state", s2, st_ref, TOL[torch.float32], seed)


def test_in_place_state_update() -> None:
    seed = new_seed()
    ins = rwkv_inputs(2, 20, 1, 32, torch.float32, seed)
    s0 = random_state(2, 1, 32, seed)
    state = s0.clone()
    y, st = wkv7(*ins.values(), state, backend="chunk", state_out=state)
    assert st is state
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, TOL[torch.float32], seed)
    assert_close("state updated in place", state, st_ref, TOL[torch.float32], seed)


def test_fp32_decay_with_bf16_inputs() -> None:
    seed = new_seed()
    ins = rwkv_inputs(1, 30, 2, 32, torch.bfloat16, seed, w_fp32=True)
    assert ins["w"].dtype == torch.float32
    s0 = random_state(1, 2, 32, seed)
    y, st = _run(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", st, st_ref, 1e-5, seed)


def test_fast_decay_is_clamped_not_nan() -> None:
    """Decays far faster than RWKV-7's (w up to +6) stay finite; the per-token decay is floored at
    e^-8 for chunk 16, so the error stays small but no longer at fp32 precision."""
    seed = new_seed()
    ins = rwkv_inputs(1, 40, 2, 16, torch.float32, seed)
    gen = torch.Generator().manual_seed(seed + 7)
    ins["w"] = torch.rand(ins["w"].shape, generator=gen) * 12 - 6  # w in [-6, 6]
    s0 = random_state(1, 2, 16, seed)
    y, st = _run(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, 2e-3, seed)
    assert_close("final state", st, st_ref, 2e-3, seed)
