"""Triton kernel: residual add and LayerNorm in one pass (see ``reference.py``).

Grid ``(rows,)``: one program per row of C channels (``BLOCK_C`` the next power of two). The sum
is rounded to the stream's dtype and stored, and the norm is taken of that stored value, so the
kernel's residual stream is the reference's bit for bit up to the one rounding of ``x + dx``.
"""

# Triton kernels take untyped pointers and scalars, so the annotation rules are off for this file.
# No `from __future__ import annotations` (Triton 3.6's interpreter needs the tl.constexpr object);
# only Triton builtins and this file's jit functions (an interpreted copy may be loaded).
# ruff: noqa: ANN001, ANN201, ANN202
import triton
import triton.language as tl

__all__ = ["add_layer_norm_kernel"]


@triton.jit
def _add(x, y):
    return x + y


_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def add_layer_norm_kernel(x_ptr, dx_ptr, w_ptr, b_ptr, s_ptr, y_ptr, C, eps, BLOCK_C: tl.constexpr):
    """``s = x + dx`` (stored in s's dtype), ``y = (s - mean) / sqrt(var + eps) * w + b``."""
    row = tl.program_id(0).to(tl.int64) * C
    offs = tl.arange(0, BLOCK_C)
    mask = offs < C
    s = tl.load(x_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
    s += tl.load(dx_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
    s = s.to(s_ptr.dtype.element_ty)
    tl.store(s_ptr + row + offs, s, mask=mask)
    s = s.to(tl.float32)
    mean = tl.reduce(s, 0, _SUM) / C
    d = tl.where(mask, s - mean, 0.0)
    var = tl.reduce(d * d, 0, _SUM) / C
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = d / tl.sqrt(var + eps) * w + b
    tl.store(y_ptr + row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
