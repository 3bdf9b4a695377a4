# The WKV7 recurrence (RWKV-7 "Goose", FORMATS §2), per batch row and head, one token at a time:
#
#     decay_t = exp(-exp(w_t))                                  elementwise, [K]
#     S_t     = S_{t-1} · diag(decay_t) + (S_{t-1} · a_t) · b_t^T + v_t · k_t^T
#     y_t     = S_t · r_t
#
# S is [V, K] = [N, N] (V rows, K columns), kept in fp32 (or fp64); r, w, k, a, b are [K] and v is
# [V]. RWKV-7 passes a = -kk and b = kk * a_gate, and w = -softplus(-(w0 + lora)) - 0.5 <= -0.5.
# This file is the slow, obvious reference every kernel is tested against.
"""Plain PyTorch reference of the WKV7 recurrence (one Python step per token)."""

from __future__ import annotations

import torch


def _run(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrence on [B, T, H, N] inputs already in the compute dtype; state [B, H, V, K]."""
    _, seq_len, _, _ = r.shape
    decay = torch.exp(-torch.exp(w))  # (B, T, H, K)
    ys = []
    for t in range(seq_len):
        sa = torch.einsum("bhvk,bhk->bhv", state, a[:, t])  # (B, H, V): S · a
        state = (
            state * decay[:, t, :, None, :]
            + sa[..., :, None] * b[:, t, :, None, :]
            + v[:, t, :, :, None] * k[:, t, :, None, :]
        )  # (B, H, V, K)
        ys.append(torch.einsum("bhvk,bhk->bhv", state, r[:, t]))  # (B, H, V)
    y = torch.stack(ys, dim=1) if ys else r.new_zeros(r.shape)  # (B, T, H, V)
    return y, state


def wkv7_naive(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor | None = None,
    *,
    cu_seqlens: torch.Tensor | None = None,
    compute_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference WKV7: ``y, final_state = wkv7_naive(r, w, k, v, a, b, state)``.

    Args:
        r, w, k, v, a, b: ``[B, T, H, N]`` tensors of one floating dtype (any, fp64 included).
        state: ``[B, H, N, N]`` (V rows, K columns) or ``None`` for zeros. With ``cu_seqlens``
            it is ``[num_seqs, H, N, N]``.
        cu_seqlens: optional ``[num_seqs + 1]`` integer offsets of packed sequences (``B == 1``).
        compute_dtype: dtype of the arithmetic; default fp64 for fp64 inputs, else fp32.

    Returns:
        ``y`` ``[B, T, H, N]`` in the dtype of ``r``, and the final state in ``compute_dtype``.

    Shapes are not checked here beyond what the arithmetic needs: :func:`wkv7` validates them.
    """
    if compute_dtype is None:
        compute_dtype = torch.float64 if r.dtype == torch.float64 else torch.float32
    r_, w_, k_, v_, a_, b_ = (x.to(compute_dtype) for x in (r, w, k, v, a, b))
    batch, _, heads, n = r.shape
    if cu_seqlens is None:
        s0 = (
            torch.zeros(batch, heads, n, n, dtype=compute_dtype, device=r.device)
            if state is None
            else state.to(compute_dtype)
        )
        y, s = _run(r_, w_, k_, v_, a_, b_, s0)
        return y.to(r.dtype), s
    offsets = [int(x) for x in cu_seqlens.tolist()]
    num_seqs = len(offsets) - 1
    ys, finals = [], []
    for i in range(num_seqs):
        lo, hi = offsets[i], offsets[i + 1]
        s0 = (
            torch.zeros(1, heads, n, n, dtype=compute_dtype, device=r.device)
            if state is None
            else state[i : i + 1].to(compute_dtype)
        )
        y, s = _run(*(x[:, lo:hi] for x in (r_, w_, k_, v_, a_, b_)), s0)  # type: ignore[call-arg]  # six tensors
        ys.append(y)
        finals.append(s)
    y = torch.cat(ys, dim=1) if ys else r_.new_zeros(r.shape)
    final = torch.cat(finals, dim=0) if finals else r_.new_zeros(0, heads, n, n)
    return y.to(r.dtype), final
