"""A chunked, differentiable WKV-7 in plain PyTorch, to train the demo's tiny weights quickly on a CPU.

Same contract as the reference :func:`rwkv_registry.kernels.wkv7.wkv7_naive` (inputs ``[B, T, H, N]``, state
``[B, H, V, K]`` fp32; returns ``(y [B, T, H, V], final state)``), the same recurrence::

    S_t = S_{t-1} · diag(d_t) + (S_{t-1} · a_t) · b_t^T + v_t · k_t^T,   d_t = exp(-exp(w_t))
    y_t = S_t · r_t

but computed per chunk of ``C`` tokens. With ``L_t`` the cumulative log-decay inside a chunk and
``u_t = S_{t-1} a_t``, the chunk is a unit lower-triangular system in ``u`` that does not depend
on the incoming state, so every chunk's matrices are built at once and only two matrix products
per chunk run in sequence::

    (I - Mb) U = A S0^T + Mk V      Mb[t, j] = (a_t e^{L_{t-1}}) · (b_j e^{-L_j}),  j < t
    Y = A1 S0^T + A2                 S_C = S0 Tm + Cst

The reference loop costs about four tensor operations per token under autograd; this costs a
few dozen per sequence plus four per chunk, which is what makes a few hundred training steps
fit in seconds. ``e^{-L_j}`` stays finite because RWKV-7's decay is ``w <= -0.5``, so one token
multiplies the state by at least ``exp(-exp(-0.5)) ≈ 0.545`` and a 16-token chunk by at least
``e^{-9.7}``; larger chunks would risk overflow in fp32. Tests compare it with the reference.
"""

from __future__ import annotations

import torch

CHUNK = 16
MIN_LOG_DECAY = -0.6066  # -exp(-0.5): the smallest per-token log-decay RWKV-7's formula allows


def wkv7_chunked(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
    state_out: torch.Tensor | None = None,
    chunk: int = CHUNK,
) -> tuple[torch.Tensor, torch.Tensor]:
    """WKV-7 over ``[B, T, H, N]`` inputs from ``state`` ``[B, H, V, K]``; fp32, differentiable.
    ``state_out`` receives a copy of the final state when given (the model's in-place calls)."""
    B, T, H, N = r.shape
    pad = (-T) % chunk
    n = (T + pad) // chunk

    def prep(t: torch.Tensor) -> torch.Tensor:
        t = t.float()
        if pad:
            t = torch.cat((t, t.new_zeros(B, pad, H, N)), dim=1)  # zero r, k, v, a, b: nothing changes
        return t.view(B, n, chunk, H, N).permute(0, 3, 1, 2, 4)  # (B, H, n, C, N)

    ld = -torch.exp(w.float())  # log-decay per token, >= MIN_LOG_DECAY for RWKV-7
    if pad:
        ld = torch.cat((ld, ld.new_zeros(B, pad, H, N)), dim=1)  # decay 1 on padding
    ld = ld.view(B, n, chunk, H, N).permute(0, 3, 1, 2, 4)  # (B, H, n, C, K)
    r, k, v, a, b = (prep(t) for t in (r, k, v, a, b))

    L = torch.cumsum(ld, dim=-2)  # (B, H, n, C, K), inclusive
    L_prev = L - ld  # exclusive
    L_end = L[..., -1:, :]  # (B, H, n, 1, K)
    a_dec = a * torch.exp(L_prev)
    r_dec = r * torch.exp(L)
    b_inv = b * torch.exp(-L)
    k_inv = k * torch.exp(-L)
    b_end = b * torch.exp(L_end - L)  # decayed to the chunk's end
    k_end = k * torch.exp(L_end - L)

    strict = torch.ones(chunk, chunk, dtype=torch.bool, device=r.device).tril(-1)
    incl = torch.ones(chunk, chunk, dtype=torch.bool, device=r.device).tril(0)
    Mb = (a_dec @ b_inv.transpose(-1, -2)).masked_fill(~strict, 0.0)  # (B, H, n, C, C)
    Mk = (a_dec @ k_inv.transpose(-1, -2)).masked_fill(~strict, 0.0)
    Pb = (r_dec @ b_inv.transpose(-1, -2)).masked_fill(~incl, 0.0)
    Pk = (r_dec @ k_inv.transpose(-1, -2)).masked_fill(~incl, 0.0)
    eye = torch.eye(chunk, dtype=r.dtype, device=r.device)
    system = eye - Mb  # unit lower triangular
    W1 = torch.linalg.solve_triangular(system, a_dec, upper=False, unitriangular=True)  # (.., C, K)
    W2 = torch.linalg.solve_triangular(system, Mk @ v, upper=False, unitriangular=True)  # (.., C, V)
    A1 = r_dec + Pb @ W1  # (.., C, K):  Y = A1 S0^T + A2
    A2 = Pb @ W2 + Pk @ v  # (.., C, V)
    Tm = torch.diag_embed(torch.exp(L_end.squeeze(-2))) + W1.transpose(-1, -2) @ b_end  # (.., K, K)
    Cst = W2.transpose(-1, -2) @ b_end + v.transpose(-1, -2) @ k_end  # (.., V, K)

    S = state.float()  # (B, H, V, K)
    ys = []
    for i in range(n):
        ys.append(S @ A1[:, :, i].transpose(-1, -2) + A2[:, :, i].transpose(-1, -2))  # (B, H, V, C)
        S = S @ Tm[:, :, i] + Cst[:, :, i]
    y = torch.stack(ys, dim=2)  # (B, H, n, V, C)
    y = y.permute(0, 2, 4, 1, 3).reshape(B, n * chunk, H, N)[:, :T]  # (B, T, H, V)
    if state_out is not None:
        S = state_out.copy_(S)
    return y, S
