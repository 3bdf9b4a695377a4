"""The MiSS adapter's on-the-fly term, ``out += scale * S @ D^T``: a reference and a Triton kernel.

Usage::

    from rwkv_registry.kernels.miss import miss_term_

    miss_term_(out, x, D, scale)   # x [..., K], D [O, r], out [..., O] (e.g. base(x)), in place

``S[..., j]`` sums ``x[..., k]`` over ``k % r == j`` (see rwkv_registry.model.miss). Modules:
``reference`` (plain PyTorch: block sum + ``addmm_``), ``fused`` (the Triton kernel, one launch,
imported lazily), ``launch`` (checks, backend choice, launch). See docs/kernels.md.
"""

from __future__ import annotations

from .._triton import BACKENDS
from .launch import TUNING, miss_term_
from .reference import miss_term_ref

__all__ = ["BACKENDS", "TUNING", "miss_term_", "miss_term_ref"]
