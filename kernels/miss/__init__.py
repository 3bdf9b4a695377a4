"""The MiSS adapter's on-the-fly term, ``out += scale * S @ D^T``, and the squared ReLU it feeds in
the channel mix: references and Triton kernels.

Usage::

    from rwkv_registry.kernels.miss import miss_term_, miss_terms_, relu_square_

    miss_term_(out, x, D, scale)   # x [..., K], D [O, r], out [..., O] (e.g. base(x)), in place
    miss_terms_([out_r, out_k, out_v], [xr, xk, xv], [D_r, D_k, D_v], [s, s, s])  # 1-3 maps, one launch
    h = relu_square_(h, (x, D, scale))   # h = relu(h + scale * S(x) @ D^T) ** 2, in place (no grad)
    h = relu_square_(h)                  # h = relu(h) ** 2, one launch for any number of rows

``S[..., j]`` sums ``x[..., k]`` over ``k % r == j`` (see rwkv_registry.model.miss). Modules:
``reference`` (plain PyTorch: block sum + ``addmm_``; ``relu_`` + ``square_``), ``fused`` (the
Triton kernels, imported lazily), ``launch`` (checks, backend choice, launches). See docs/kernels.md.
"""

from __future__ import annotations

from .._triton import BACKENDS
from .launch import MAX_SEGMENTS, TUNING, MissTerm, miss_term_, miss_terms_, relu_square_
from .reference import miss_term_ref, miss_terms_ref, relu_square_ref

__all__ = [
    "BACKENDS",
    "MAX_SEGMENTS",
    "TUNING",
    "MissTerm",
    "miss_term_",
    "miss_term_ref",
    "miss_terms_",
    "miss_terms_ref",
    "relu_square_",
    "relu_square_ref",
]
