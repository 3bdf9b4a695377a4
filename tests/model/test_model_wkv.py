"""The WKV-7 reference loop and its swap for the kernels package."""

from __future__ import annotations

import pytest
import torch
from model_helpers import rel_err

from rwkv_registry.model import RWKV7, wkv7_reference


def inputs(B: int = 2, T: int = 5, H: int = 2, N: int = 8, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    r, k, v = (torch.randn(B, T, H, N, generator=g) for _ in range(3))
    w = -torch.nn.functional.softplus(torch.randn(B, T, H, N, generator=g)) - 0.5
    kk = torch.nn.functional.normalize(torch.randn(B, T, H, N, generator=g), dim=-1)
    gate = torch.rand(B, T, H, N, generator=g)
    state = torch.randn(B, H, N, N, generator=g)
    return r, w, k, v, -kk, kk * gate, state


def test_reference_is_the_recurrence_of_formats() -> None:
    r, w, k, v, a, b, s0 = inputs()
    y, s = wkv7_reference(r, w, k, v, a, b, s0)
    B, T, H, _ = r.shape
    for bi in range(B):
        for h in range(H):
            S = s0[bi, h].double()  # [V, K]
            for t in range(T):
                d = torch.exp(-torch.exp(w[bi, t, h].double()))
                S = (
                    S @ torch.diag(d)
                    + torch.outer(S @ a[bi, t, h].double(), b[bi, t, h].double())
                    + torch.outer(v[bi, t, h].double(), k[bi, t, h].double())
                )
                assert torch.allclose(y[bi, t, h].double(), S @ r[bi, t, h].double(), atol=1e-5)
            assert torch.allclose(s[bi, h].double(), S, atol=1e-5)


def test_reference_equals_the_kernels_naive() -> None:
    kernels = pytest.importorskip("rwkv_registry.kernels.wkv7")
    args = inputs(T=7, N=64, H=3)
    y1, s1 = wkv7_reference(*args)
    y2, s2 = kernels.wkv7_naive(*args)
    assert rel_err(y1, y2) < 1e-6 and rel_err(s1, s2) < 1e-6


def test_model_with_the_kernels_entry_point_gives_the_same_logits(model: RWKV7, monkeypatch) -> None:
    kernels = pytest.importorskip("rwkv_registry.kernels.wkv7")
    tokens = torch.tensor([[1, 99, 65000, 4, 261]])
    with torch.no_grad():
        ref, _ = model.forward(tokens)
        import rwkv_registry.model.time_mix as tm

        monkeypatch.setattr(tm, "wkv7", lambda *a: kernels.wkv7(*a, backend="naive"))
        swapped, _ = model.forward(tokens)
    assert rel_err(swapped, ref) < 1e-5
