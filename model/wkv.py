"""The WKV-7 recurrence: one function that the model calls, and its fp32 reference.

Per head, with a state ``S`` of shape ``[V, K]`` (``N x N``, value rows, key columns)::

    S_t = S_{t-1} · diag(exp(-exp(w_t))) + (S_{t-1} · a_t) · b_t^T + v_t · k_t^T
    y_t = S_t · r_t

RWKV-7 calls it with ``a = -kk`` and ``b = kk * a_gate`` (``kk`` the normalised key, ``a_gate``
the in-context learning rate). Inputs are ``[B, T, H, N]``; the state is ``[B, H, N, N]`` fp32.
This is the same convention as ``rwkv_registry.kernels.wkv7.wkv7``: on CUDA, :func:`wkv7` uses
that kernel when it is importable, and this per-token loop everywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch

WkvFn = Callable[..., tuple[torch.Tensor, torch.Tensor]]

# "auto": the kernels package on CUDA when present, else the reference. "reference": always the loop.
_BACKEND = os.environ.get("RWKV_REGISTRY_WKV", "auto")


def set_wkv_backend(name: str) -> None:
    """Choose the WKV implementation: ``"auto"`` (default) or ``"reference"`` (the fp32 loop)."""
    global _BACKEND
    if name not in ("auto", "reference"):
        raise ValueError(f"unknown WKV backend {name!r}; use 'auto' or 'reference'")
    _BACKEND = name


def wkv7_reference(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain per-token WKV-7 in fp32. Inputs ``[B, T, H, N]``, ``state`` ``[B, H, N, N]``.

    Returns ``(y [B, T, H, N] fp32, final state [B, H, N, N] fp32)``. Differentiable; the input
    state is not modified.
    """
    T = r.shape[1]
    r, w, k, v, a, b = (t.float() for t in (r, w, k, v, a, b))
    decay = torch.exp(-torch.exp(w))  # [B, T, H, N], over the key index
    S = state.float()  # [B, H, V, K]
    ys = []
    for t in range(T):
        S = (
            S * decay[:, t, :, None, :]  # decay each key column
            + (S @ a[:, t, :, :, None]) @ b[:, t, :, None, :]  # [B,H,V,1] @ [B,H,1,K]
            + v[:, t, :, :, None] @ k[:, t, :, None, :]  # [B,H,V,1] @ [B,H,1,K]
        )
        ys.append((S @ r[:, t, :, :, None]).squeeze(-1))  # [B, H, V]
    y = torch.stack(ys, dim=1)  # [B, T, H, N]
    return y, S


def _fast_kernel() -> WkvFn | None:
    try:
        from rwkv_registry.kernels.wkv7 import wkv7 as kernel  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        return None
    return kernel


def wkv7(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The WKV-7 call of the model (see the module docstring). Same contract as the reference."""
    inputs = (r, w, k, v, a, b, state)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
    if _BACKEND == "auto" and r.is_cuda and not needs_grad:  # the kernels are forward-only
        kernel = _fast_kernel()
        if kernel is not None:
            return kernel(r, w, k, v, a, b, state)  # w fp32, the rest in the model dtype
    return wkv7_reference(r, w, k, v, a, b, state)
