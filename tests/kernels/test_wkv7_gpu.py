"""The compiled Triton kernels on a CUDA device at RWKV-7 7.2B shapes (H = 64, N = 64).

Skipped without CUDA. The reference runs on the same device in fp64. bf16 inputs run their matmuls
in tf32, so their tolerance is the bf16 one; fp32 inputs use tf32x3.
"""

from __future__ import annotations

import pytest
import torch
from wkv7_helpers import TOL, assert_close, new_seed, random_state, reference, rwkv_inputs

from rwkv_registry.kernels.wkv7 import wkv7

pytest.importorskip("triton")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

H, N = 64, 64


def _cuda(ins: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: t.cuda() for k, t in ins.items()}


@pytest.mark.parametrize(
    ("T", "dtype"),
    [(2048, torch.bfloat16), (1000, torch.float32), (4099, torch.bfloat16)],
    ids=["T2048-bf16", "T1000-fp32", "T4099-bf16"],
)
def test_chunk_prefill_at_7b_shape(T: int, dtype: torch.dtype) -> None:
    seed = new_seed()
    ins = _cuda(rwkv_inputs(1, T, H, N, dtype, seed))
    s0 = random_state(1, H, N, seed).cuda()
    out = torch.full_like(ins["r"], float("nan"))
    y, st = wkv7(*ins.values(), s0, out=out)  # auto -> chunk
    y_ref, st_ref = reference(ins, s0)
    tol = TOL[dtype]
    assert_close("y", y, y_ref, tol, seed)
    assert_close("final state", st, st_ref, tol, seed)


@pytest.mark.parametrize("B", [1, 64])
def test_step_decode_at_7b_shape(B: int) -> None:
    seed = new_seed()
    ins = _cuda(rwkv_inputs(B, 1, H, N, torch.bfloat16, seed))
    s0 = random_state(B, H, N, seed).cuda()
    y, st = wkv7(*ins.values(), s0)  # auto -> step
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", st, st_ref, 1e-5, seed)


def test_varlen_prefill_on_gpu() -> None:
    seed = new_seed()
    lengths = [300, 1, 0, 517]
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    ins = _cuda(rwkv_inputs(1, offsets[-1], H, N, torch.bfloat16, seed))
    s0 = random_state(len(lengths), H, N, seed).cuda()
    cu = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    y, st = wkv7(*ins.values(), s0, cu_seqlens=cu)
    y_ref, st_ref = reference(ins, s0, cu)
    assert_close("y", y, y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", st, st_ref, TOL[torch.bfloat16], seed)


def test_step_inside_a_cuda_graph() -> None:
    """The decode step captured in a CUDA graph, updating the state in place, matches the reference."""
    seed = new_seed()
    steps, B = 5, 4
    ins = _cuda(rwkv_inputs(B, steps, H, N, torch.bfloat16, seed))
    s0 = random_state(B, H, N, seed).cuda()
    static_in = {k: t[:, :1].clone() for k, t in ins.items()}
    state = s0.clone()
    wkv7(*static_in.values(), state.clone(), backend="step")  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_static, _ = wkv7(*static_in.values(), state, backend="step", state_out=state)
    ys = []
    for t in range(steps):
        for k, buf in static_in.items():
            buf.copy_(ins[k][:, t : t + 1])
        graph.replay()
        ys.append(y_static.clone())
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", torch.cat(ys, dim=1), y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", state, st_ref, 1e-5, seed)
