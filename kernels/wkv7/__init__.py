"""WKV7, the RWKV-7 time-mix recurrence, as a plain reference and two Triton kernels.

Usage::

    from rwkv_registry.kernels.wkv7 import wkv7, wkv7_naive

    y, state = wkv7(r, w, k, v, a, b, state)              # [B, T, H, N] inputs, [B, H, N, N] fp32 state
    y, state = wkv7(r, w, k, v, a, b, state, cu_seqlens=offsets)   # packed variable-length batch

``backend="auto"`` runs the chunked Triton kernel for prefill (T > 1) and the fused-recurrent step
kernel for decode (T == 1) on CUDA, and the reference on a plain CPU. Modules: ``naive`` (the
reference, recurrence in its header), ``chunk`` and ``fused_recurrent`` (Triton kernels, imported
lazily), ``validate`` (argument checks), ``launch`` (``wkv7`` itself). See docs/kernels.md.
"""

from __future__ import annotations

from .launch import CHUNK_SIZE, pick_backend, triton_available, wkv7
from .naive import wkv7_naive
from .validate import BACKENDS

__all__ = ["BACKENDS", "CHUNK_SIZE", "pick_backend", "triton_available", "wkv7", "wkv7_naive"]
