"""The fused-recurrent (decode step) Triton kernel against the fp64 reference, through Triton's
interpreter on the CPU; outputs preallocated full of NaN."""

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
    (3, 1, 2, 32, torch.float32),
    (2, 1, 2, 64, torch.float32),
    (4, 1, 2, 32, torch.bfloat16),
    (2, 1, 1, 64, torch.bfloat16),
    (2, 1, 2, 16, torch.float16),
    (2, 9, 2, 16, torch.float32),
]


@pytest.mark.parametrize(("B", "T", "H", "N", "dtype"), CASES, ids=[case_id(*c) for c in CASES])
def test_step_matches_reference(B: int, T: int, H: int, N: int, dtype: torch.dtype) -> None:
    seed = new_seed()
    ins = rwkv_inputs(B, T, H, N, dtype, seed)
    s0 = random_state(B, H, N, seed)
    out, state_out = nan_like(ins["r"]), nan_state(B, H, N)
    y, st = wkv7(*ins.values(), s0, backend="step", out=out, state_out=state_out)
    y_ref, st_ref = reference(ins, s0)
    assert y is out and st is state_out
    assert_close("y", y, y_ref, TOL[dtype], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32] if dtype == torch.float32 else TOL[dtype], seed)


def test_decode_after_prefill_continues_the_sequence() -> None:
    """Chunked prefill of 21 tokens, then 4 in-place decode steps, equals the reference on all 25."""
    seed = new_seed()
    ins = rwkv_inputs(2, 25, 2, 32, torch.float32, seed)
    s0 = random_state(2, 2, 32, seed)
    y_pre, state = wkv7(*(t[:, :21] for t in ins.values()), s0, backend="chunk")
    ys = [y_pre]
    for t in range(21, 25):
        y_t, same = wkv7(*(x[:, t : t + 1] for x in ins.values()), state, backend="step", state_out=state)
        assert same is state
        ys.append(y_t)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", torch.cat(ys, dim=1), y_ref, TOL[torch.float32], seed)
    assert_close("final state", state, st_ref, TOL[torch.float32], seed)


def test_step_without_initial_state() -> None:
    seed = new_seed()
    ins = rwkv_inputs(3, 1, 1, 16, torch.float32, seed)
    y, st = wkv7(*ins.values(), None, backend="step")
    y_ref, st_ref = reference(ins, None)
    assert_close("y", y, y_ref, TOL[torch.float32], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32], seed)
