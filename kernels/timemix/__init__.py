"""The element-wise work around an RWKV-7 block's matmuls, fused: a reference and Triton kernels.

Usage::

    from rwkv_registry.kernels.timemix import token_mix, tm_gates, tm_output

    (xr, xw, xk, xv, xa, xg), shift = token_mix(x, shift, (x_r, x_w, x_k, x_v, x_a, x_g))
    w, k, v, a, b = tm_gates(k, v, wz, az, w0, a0, k_k, k_a, heads, v_first, vz, v0)
    out = tm_output(y, r, k, v, g, ln_x.weight, ln_x.bias, r_k, eps)

Modules: ``reference`` (plain PyTorch, the maths in its header), ``fused`` (Triton kernels,
imported lazily), ``launch`` (checks, backend choice, launches). See docs/kernels.md.
"""

from __future__ import annotations

from .._triton import BACKENDS
from .launch import TUNING, tm_gates, tm_output, token_mix
from .reference import tm_gates_ref, tm_output_ref, token_mix_ref

__all__ = ["BACKENDS", "TUNING", "tm_gates", "tm_gates_ref", "tm_output", "tm_output_ref", "token_mix", "token_mix_ref"]
