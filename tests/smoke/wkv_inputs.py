"""Random RWKV-7 WKV inputs for the chunked-WKV tests of the demo's training (``model/smoke/chunked.py``)."""

from __future__ import annotations

import torch


def wkv_inputs(B: int, T: int, H: int, seed: int, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """``[r, w, k, v, a, b, state]`` for ``wkv7_naive``/``wkv7_chunked``: head size 64, RWKV-7's decay
    (w <= -0.5 in log space), a = -kk and b = kk * rand with kk unit-norm; the state in fp64 for fp64 inputs,
    fp32 otherwise."""
    g = torch.Generator().manual_seed(seed)
    N = 64

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    r, k, v = rnd(B, T, H, N), rnd(B, T, H, N) * 0.5, rnd(B, T, H, N)
    w = -torch.nn.functional.softplus(-rnd(B, T, H, N) * 2) - 0.5
    kk = torch.nn.functional.normalize(rnd(B, T, H, N), dim=-1)
    a, b = -kk, kk * torch.rand(B, T, H, N, generator=g, dtype=torch.float64)
    s = rnd(B, H, N, N)
    return [t.to(dtype) for t in (r, w, k, v, a, b)] + [s.float() if dtype != torch.float64 else s]
