"""Triton kernel for the MiSS on-the-fly term (see ``reference.py`` for the maths).

``miss_term_kernel``: grid ``(M, cdiv(N_OUT, BLOCK_O))``, one program per (row of ``x``, block of
``BLOCK_O`` output features). The program walks the rank in chunks of ``BLOCK_R`` columns; for each
chunk it sums the matching columns of every rank-wide block of its row of ``x`` (a
``[BLOCK_N, BLOCK_R]`` tile of blocks per step, fp32, masked past ``K`` and ``r``: the zero
padding), then multiplies that slice of ``S`` with the ``[BLOCK_O, BLOCK_R]`` slice of ``D``.
Finally it reads its ``BLOCK_O`` outputs, adds ``scale * D @ S`` in fp32 and stores them in
``out``'s dtype: one launch, ``S`` never leaves registers. Each program re-reads its row of ``x``
(from L2 after the first), which costs less than a second launch at decode sizes. The launcher is
``launch.py``; this module only holds the kernel.
"""

# Triton kernels take untyped pointers and scalars, so the annotation rules are off for this file.
# No `from __future__ import annotations`: Triton 3.6's interpreter only sees a constexpr parameter
# when its annotation is the object tl.constexpr. Only Triton builtins and this file's own jit
# functions are called (the launcher may load an interpreted copy; see docs/kernels.md).
# ruff: noqa: ANN001, ANN201, ANN202
import triton
import triton.language as tl

__all__ = ["miss_term_kernel"]


@triton.jit
def _add(x, y):
    return x + y


_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def miss_term_kernel(
    x_ptr,
    d_ptr,
    out_ptr,
    K,
    N_OUT,
    R,
    scale,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """``out[m, o] += scale * sum_j D[o, j] * S[m, j]``, ``S[m, j] = sum_{k % R == j} x[m, k]``.
    ``x`` [M, K], ``D`` [N_OUT, R] and ``out`` [M, N_OUT] contiguous."""
    m = tl.program_id(0)
    i_o = tl.program_id(1)
    offs_o = i_o * BLOCK_O + tl.arange(0, BLOCK_O)
    mask_o = offs_o < N_OUT
    x_row = x_ptr + m.to(tl.int64) * K
    d_rows = offs_o.to(tl.int64) * R
    n_blocks = (K + R - 1) // R  # rank-wide blocks of x, the last one possibly partial
    acc = tl.full([BLOCK_O], 0.0, dtype=tl.float32)
    for j0 in range(0, R, BLOCK_R):
        offs_j = j0 + tl.arange(0, BLOCK_R)
        mask_j = offs_j < R
        s = tl.full([BLOCK_R], 0.0, dtype=tl.float32)  # S[m, j0:j0 + BLOCK_R]
        for i0 in range(0, n_blocks, BLOCK_N):
            k = (i0 + tl.arange(0, BLOCK_N))[:, None] * R + offs_j[None, :]  # [BLOCK_N, BLOCK_R]
            xv = tl.load(x_row + k, mask=mask_j[None, :] & (k < K), other=0.0).to(tl.float32)
            s += tl.reduce(xv, 0, _SUM)
        d = tl.load(d_ptr + d_rows[:, None] + offs_j[None, :], mask=mask_o[:, None] & mask_j[None, :], other=0.0).to(
            tl.float32
        )  # [BLOCK_O, BLOCK_R]
        acc += tl.reduce(d * s[None, :], 1, _SUM)
    o_ptrs = out_ptr + m.to(tl.int64) * N_OUT + offs_o
    prev = tl.load(o_ptrs, mask=mask_o, other=0.0).to(tl.float32)
    tl.store(o_ptrs, (prev + scale * acc).to(out_ptr.dtype.element_ty), mask=mask_o)
