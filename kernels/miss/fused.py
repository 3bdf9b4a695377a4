"""Triton kernels for the MiSS on-the-fly term and the squared ReLU (see ``reference.py`` for the maths).

``_miss_acc`` is the MiSS arithmetic, shared by both kernels: for one row of ``x`` and a block of
``BLOCK_O`` output features it walks the rank in chunks of ``BLOCK_R`` columns; for each chunk it
sums the matching columns of every rank-wide block of the row (a ``[BLOCK_N, BLOCK_R]`` tile of
blocks per step, fp32, masked past ``K`` and ``r``: the zero padding), then multiplies that slice
of ``S`` with the ``[BLOCK_O, BLOCK_R]`` slice of ``D``; it returns ``D @ S`` for the block, fp32.

``miss_term_kernel``: ``out_s += scale_s * S(x_s) @ D_s^T`` for 1 to 3 segments at once (a time-mix
layer's receptance, key and value). Grid ``(M, sum_s cdiv(O_s, BLOCK_O))``: axis 1 runs over the
output blocks of every segment in turn, and a program finds its segment by comparing its id with
the running block counts ``B1 <= B2`` (segment 0 owns ids ``[0, B1)``, 1 ``[B1, B2)``, 2 the rest).
It reads its ``BLOCK_O`` outputs, adds ``scale * D @ S`` in fp32 and stores them in ``out``'s
dtype: one rounding, ``S`` never leaves registers.

``relu_square_kernel``: ``h = relu(h + scale * S(x) @ D^T) ** 2`` in place (``HAS_MISS``), or
``h = relu(h) ** 2``; grid ``(M, cdiv(F, BLOCK_O))``. fp32 inside, one rounding at the store;
``relu`` keeps NaN (as ``torch.relu``). Without MiSS it is element-wise (any number of rows).

(``kernels/add_norm``'s kernel adds the term of an attention output or FFN value map itself.)

Each MiSS program re-reads its row of ``x`` (from L2 after the first), which costs less than a
second launch at decode sizes. The launcher is ``launch.py``; this module only holds the kernels.
"""

# Triton kernels take untyped pointers and scalars, so the annotation rules are off for this file.
# No `from __future__ import annotations`: Triton 3.6's interpreter only sees a constexpr parameter
# when its annotation is the object tl.constexpr. Only Triton builtins and this file's own jit
# functions are called (the launcher may load an interpreted copy; see docs/kernels.md).
# ruff: noqa: ANN001, ANN201, ANN202
import triton
import triton.language as tl

__all__ = ["miss_term_kernel", "relu_square_kernel"]


@triton.jit
def _add(x, y):
    return x + y


_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def _miss_acc(x_row, d_ptr, offs_o, mask_o, K, R, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """``sum_j D[o, j] * S[j]`` (fp32 ``[BLOCK_O]``) for the outputs ``offs_o``, ``S[j] = sum_{k % R
    == j} x_row[k]``; ``x_row`` points at a row of ``K`` contiguous elements, ``D`` is [*, R] contiguous."""
    d_rows = offs_o.to(tl.int64) * R
    n_blocks = (K + R - 1) // R  # rank-wide blocks of x, the last one possibly partial
    acc = tl.full([BLOCK_O], 0.0, dtype=tl.float32)
    for j0 in range(0, R, BLOCK_R):
        offs_j = j0 + tl.arange(0, BLOCK_R)
        mask_j = offs_j < R
        s = tl.full([BLOCK_R], 0.0, dtype=tl.float32)  # S[j0:j0 + BLOCK_R]
        for i0 in range(0, n_blocks, BLOCK_N):
            k = (i0 + tl.arange(0, BLOCK_N))[:, None] * R + offs_j[None, :]  # [BLOCK_N, BLOCK_R]
            xv = tl.load(x_row + k, mask=mask_j[None, :] & (k < K), other=0.0).to(tl.float32)
            s += tl.reduce(xv, 0, _SUM)
        d = tl.load(d_ptr + d_rows[:, None] + offs_j[None, :], mask=mask_o[:, None] & mask_j[None, :], other=0.0).to(
            tl.float32
        )  # [BLOCK_O, BLOCK_R]
        acc += tl.reduce(d * s[None, :], 1, _SUM)
    return acc


@triton.jit
def _miss_segment(
    x_ptr,
    d_ptr,
    out_ptr,
    m,
    blk,
    K,
    N_OUT,
    R,
    SX,
    scale,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Output block ``blk`` of one segment for row ``m``: ``out[m, o] += scale * (D @ S)[o]``."""
    offs_o = blk * BLOCK_O + tl.arange(0, BLOCK_O)
    mask_o = offs_o < N_OUT
    acc = _miss_acc(x_ptr + m.to(tl.int64) * SX, d_ptr, offs_o, mask_o, K, R, BLOCK_O, BLOCK_R, BLOCK_N)
    o_ptrs = out_ptr + m.to(tl.int64) * N_OUT + offs_o
    prev = tl.load(o_ptrs, mask=mask_o, other=0.0).to(tl.float32)
    tl.store(o_ptrs, (prev + scale * acc).to(out_ptr.dtype.element_ty), mask=mask_o)


@triton.jit
def miss_term_kernel(
    x0_ptr,
    x1_ptr,
    x2_ptr,
    d0_ptr,
    d1_ptr,
    d2_ptr,
    out0_ptr,
    out1_ptr,
    out2_ptr,
    K0,
    K1,
    K2,
    N0,
    N1,
    N2,
    R0,
    R1,
    R2,
    SX0,
    SX1,
    SX2,
    scale0,
    scale1,
    scale2,
    B1,
    B2,
    N_SEG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """``out_s[m, o] += scale_s * sum_j D_s[o, j] * S_s[m, j]`` for the ``N_SEG`` segments, ``S_s[m,
    j] = sum_{k % R_s == j} x_s[m, k]``. ``x_s`` [M, K_s] (row stride ``SX_s``, unit column
    stride), ``D_s`` [N_s, R_s] and ``out_s`` [M, N_s] contiguous; ``B1, B2``: the output blocks of
    the segments before segments 1 and 2 (the unused ones: any value)."""
    m = tl.program_id(0)
    j = tl.program_id(1)
    if j < B1:
        _miss_segment(x0_ptr, d0_ptr, out0_ptr, m, j, K0, N0, R0, SX0, scale0, BLOCK_O, BLOCK_R, BLOCK_N)
    # nested ifs: the constexpr test prunes the segments a launch does not have at compile time
    if N_SEG > 1:  # noqa: SIM102
        if (j >= B1) & (j < B2):
            _miss_segment(x1_ptr, d1_ptr, out1_ptr, m, j - B1, K1, N1, R1, SX1, scale1, BLOCK_O, BLOCK_R, BLOCK_N)
    if N_SEG > 2:  # noqa: SIM102
        if j >= B2:
            _miss_segment(x2_ptr, d2_ptr, out2_ptr, m, j - B2, K2, N2, R2, SX2, scale2, BLOCK_O, BLOCK_R, BLOCK_N)


@triton.jit
def relu_square_kernel(
    h_ptr,
    x_ptr,
    d_ptr,
    N_OUT,
    K,
    R,
    SX,
    scale,
    HAS_MISS: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """``h[m, o] = relu(h[m, o] + scale * sum_j D[o, j] * S[m, j]) ** 2`` (``HAS_MISS``; ``x``
    [M, K] with row stride ``SX``, ``D`` [N_OUT, R] contiguous), else ``h = relu(h) ** 2``; ``h``
    [M, N_OUT] contiguous. Without MiSS, ``x_ptr``, ``d_ptr``, ``K``, ``R``, ``SX``, ``scale``: any."""
    m = tl.program_id(0)
    offs_o = tl.program_id(1) * BLOCK_O + tl.arange(0, BLOCK_O)
    mask_o = offs_o < N_OUT
    h_ptrs = h_ptr + m.to(tl.int64) * N_OUT + offs_o
    y = tl.load(h_ptrs, mask=mask_o, other=0.0).to(tl.float32)
    if HAS_MISS:
        y += scale * _miss_acc(x_ptr + m.to(tl.int64) * SX, d_ptr, offs_o, mask_o, K, R, BLOCK_O, BLOCK_R, BLOCK_N)
    y = tl.where(y < 0.0, 0.0, y)  # relu that keeps NaN (a max would drop it on a GPU)
    tl.store(h_ptrs, (y * y).to(h_ptr.dtype.element_ty), mask=mask_o)
