"""The WKV-7 recurrence as the model calls it: the Triton kernels on CUDA, the reference elsewhere.

Per head, with a state ``S`` of shape ``[V, K]`` (``N x N``, value rows, key columns)::

    S_t = S_{t-1} · diag(exp(-exp(w_t))) + (S_{t-1} · a_t) · b_t^T + v_t · k_t^T
    y_t = S_t · r_t

RWKV-7 calls it with ``a = -kk`` and ``b = kk * a_gate`` (``kk`` the normalised key, ``a_gate``
the in-context learning rate). Inputs are ``[B, T, H, N]``; the state is ``[B, H, N, N]`` fp32.
Both implementations live in ``rwkv_registry.kernels.wkv7``: :func:`wkv7` picks the chunked /
step Triton kernels for CUDA tensors (forward only) and the plain per-token reference
(``wkv7_naive``, fp32, differentiable) for everything else. ``RWKV_REGISTRY_WKV=reference`` (or
:func:`set_wkv_backend`) forces the reference everywhere; ``kernels`` sends every device to the
kernels' own choice, so that on a CPU with ``TRITON_INTERPRET=1`` the model runs through the
interpreted Triton kernels (how the tests check the model's fast path without a GPU). The same
choice covers the fused element-wise kernels around the matmuls (:func:`elementwise_backend`).
"""

from __future__ import annotations

import os

import torch

from rwkv_registry.kernels.wkv7 import wkv7 as _kernel_wkv7
from rwkv_registry.kernels.wkv7 import wkv7_naive
from rwkv_registry.kernels.wkv7.op import wkv7_inplace

BACKENDS = ("auto", "reference", "kernels")
# "auto": the Triton kernels for CUDA tensors, else the reference. "reference": always the reference.
# "kernels": rwkv_registry.kernels.wkv7.wkv7(backend="auto") on every device (forward only).
_BACKEND = os.environ.get("RWKV_REGISTRY_WKV", "auto")


def set_wkv_backend(name: str) -> str:
    """Choose the WKV implementation (one of :data:`BACKENDS`); returns the previous one."""
    global _BACKEND
    if name not in BACKENDS:
        raise ValueError(f"unknown WKV backend {name!r}; use one of {', '.join(BACKENDS)}")
    previous, _BACKEND = _BACKEND, name
    return previous


_FUSED = os.environ.get("RWKV_REGISTRY_FUSED", "1") != "0"  # the fused element-wise kernels, where the WKV kernels run


def set_fused_ops(enabled: bool) -> bool:
    """Turn the fused element-wise kernels (:mod:`rwkv_registry.kernels.timemix`, ``lora``,
    ``add_norm``, ``miss``) on or off, the WKV kernels staying as chosen; returns the previous
    setting. Off, the model runs their PyTorch references (what ``RWKV_REGISTRY_FUSED=0`` does
    from the start): a fallback should one of them fail on some GPU."""
    global _FUSED
    previous, _FUSED = _FUSED, bool(enabled)
    return previous


def kernels_wanted(t: torch.Tensor) -> bool:
    """Whether the backend choice sends tensors like ``t`` to the Triton kernels ("kernels", or
    "auto" on CUDA); the kernels' own "auto" then still picks the reference where they cannot run
    (a CPU without ``TRITON_INTERPRET=1``, or inputs that need gradients)."""
    return _BACKEND == "kernels" or (_BACKEND == "auto" and t.is_cuda)


def elementwise_backend(x: torch.Tensor) -> str:
    """The backend of the fused element-wise ops (:mod:`rwkv_registry.kernels.timemix`) for the
    block input ``x``: "auto" where the kernels are wanted, else "reference". Under
    ``torch.compile`` always "reference": the compiler fuses that code itself; and "reference"
    when :func:`set_fused_ops` turned them off."""
    if torch.compiler.is_compiling() or not _FUSED or not kernels_wanted(x):
        return "reference"
    return "auto"


def wkv7(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
    state_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The WKV-7 call of the model: ``(y [B, T, H, N], final state [B, H, N, N] fp32)``.

    ``w`` may be fp32 with the others in the model dtype. ``state`` is not modified unless it is
    also ``state_out``, the contiguous fp32 tensor that receives the final state (written in
    place by the kernels, copied into by the reference); ``y`` comes back in the dtype of ``r``.
    """
    inputs = (r, w, k, v, a, b, state)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
    if kernels_wanted(r) and not needs_grad:  # forward-only
        if torch.compiler.is_compiling():  # one opaque custom op for torch.compile, state written in place
            if state_out is None:
                dst = state.to(torch.float32, copy=True, memory_format=torch.contiguous_format)
            else:
                dst = state_out if state_out is state else state_out.copy_(state)
            return wkv7_inplace(r, w, k, v, a, b, dst), dst
        return _kernel_wkv7(r, w, k, v, a, b, state, state_out=state_out)
    y, final = wkv7_naive(r, w, k, v, a, b, state)
    if state_out is not None:
        final = state_out.copy_(final)
    return y, final
