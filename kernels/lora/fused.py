"""The Triton kernel of the grouped LoRA matmuls (see ``reference.py`` for the maths).

``lora_kernel`` computes, for up to four segments ``s`` at once, ``out_s[m, n] = act_s(sum_k
x_s[m, k] * W_s[k, n])`` with ``x_s`` ``[M, K_s]`` (row stride given, unit column stride), ``W_s``
``[K_s, N_s]`` and ``out_s`` ``[M, N_s]`` contiguous. The same kernel serves both halves of a LoRA:
the down-projections (tanh/none/sigmoid) and the up-projections (no activation). The launcher is
``launch.py``; this module only holds the kernel.

Grid ``(cdiv(M, BLOCK_M), sum_s cdiv(N_s, BLOCK_N))``: axis 1 runs over the output blocks of every
segment in turn, and a program finds its segment by comparing its id with the running block counts
``B1 <= B2 <= B3`` (segment 0 owns ids ``[0, B1)``, segment 1 ``[B1, B2)``, ...). It walks ``K_s``
in ``BLOCK_K`` steps, accumulating in fp32, then applies the activation and stores in the output
dtype once. ``BLOCK_M == 1`` (a decode row): one row per program, a broadcast product reduced over
K (``tl.dot`` needs 16 rows). ``BLOCK_M >= 16``: a block of rows per program through ``tl.dot``
(tensor cores, the weight tile read once per row block). ``DOT_F32`` multiplies in fp32 with IEEE
precision: for fp32 inputs (no tf32), and for bf16 under the interpreter, whose ``tl.dot`` (Triton
3.9) would multiply the raw 16-bit patterns of bf16 tiles (exact either way: bf16 products fit fp32).
"""

# Triton kernels take untyped pointers and scalars, so the annotation rules are off for this file.
# No `from __future__ import annotations`: Triton 3.6's interpreter only sees a constexpr parameter
# when its annotation is the object tl.constexpr. Only Triton builtins and this file's own jit
# functions are called (the launcher may load an interpreted copy; see docs/kernels.md).
# ruff: noqa: ANN001, ANN201, ANN202
import triton
import triton.language as tl

__all__ = ["ACT_NONE", "ACT_SIGMOID", "ACT_TANH", "lora_kernel"]

ACT_NONE = 0
ACT_TANH = 1
ACT_SIGMOID = 2


@triton.jit
def _add(x, y):
    return x + y


_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def _activate(y, ACT: tl.constexpr):
    """``y`` (fp32) through activation ``ACT`` (0 none, 1 tanh, 2 sigmoid)."""
    if ACT == 1:
        # tanh(y) = sign(y) (1 - e) / (1 + e), e = exp(-2|y|) in (0, 1]: no overflow; below
        # |y| = 1/8, where 1 - e cancels, the Taylor series (next term < 2e-10)
        a = tl.abs(y)
        e = tl.exp(-2.0 * a)
        t = (1.0 - e) / (1.0 + e)
        t = tl.where(y < 0.0, -t, t)
        y2 = y * y
        series = y * (1.0 - y2 * (0.3333333333333333 - y2 * (0.13333333333333333 - y2 * 0.05396825396825397)))
        y = tl.where(a < 0.125, series, t)
    if ACT == 2:
        # e = exp(-|y|) in (0, 1]: no overflow; 1 / (1 + e) for y >= 0, e / (1 + e) below
        e = tl.exp(-tl.abs(y))
        y = tl.where(y >= 0.0, 1.0, e) / (1.0 + e)
    return y


@triton.jit
def _segment(
    x_ptr,
    w_ptr,
    out_ptr,
    M,
    K,
    N,
    stride_x,
    pid_m,
    blk,
    ACT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """Output block ``blk`` of one segment for row ``pid_m`` (``BLOCK_M == 1``) or rows
    ``[pid_m * BLOCK_M, ...)``."""
    offs_n = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    ks = tl.arange(0, BLOCK_K)
    if BLOCK_M == 1:
        row = pid_m.to(tl.int64)
        acc = tl.full([BLOCK_N], 0.0, tl.float32)
        for k0 in range(0, K, BLOCK_K):
            offs_k = k0 + ks
            k_mask = offs_k < K
            x = tl.load(x_ptr + row * stride_x + offs_k, mask=k_mask, other=0.0).to(tl.float32)
            w_at = w_ptr + offs_k.to(tl.int64)[:, None] * N + offs_n[None, :]
            w = tl.load(w_at, mask=k_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
            acc += tl.reduce(x[:, None] * w, 0, _SUM)  # [BLOCK_N]
        y = _activate(acc, ACT)
        tl.store(out_ptr + row * N + offs_n, y.to(out_ptr.dtype.element_ty), mask=n_mask)
    else:
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        m_mask = offs_m < M
        rows = offs_m.to(tl.int64)
        acc = tl.full([BLOCK_M, BLOCK_N], 0.0, tl.float32)
        for k0 in range(0, K, BLOCK_K):
            offs_k = k0 + ks
            k_mask = offs_k < K
            x_at = x_ptr + rows[:, None] * stride_x + offs_k[None, :]
            x = tl.load(x_at, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
            w_at = w_ptr + offs_k.to(tl.int64)[:, None] * N + offs_n[None, :]
            w = tl.load(w_at, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
            if DOT_F32:
                acc = tl.dot(x.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
            else:
                acc = tl.dot(x, w, acc)
        y = _activate(acc, ACT)
        out_at = out_ptr + rows[:, None] * N + offs_n[None, :]
        tl.store(out_at, y.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def lora_kernel(
    x0_ptr,
    x1_ptr,
    x2_ptr,
    x3_ptr,
    w0_ptr,
    w1_ptr,
    w2_ptr,
    w3_ptr,
    out0_ptr,
    out1_ptr,
    out2_ptr,
    out3_ptr,
    M,
    K0,
    K1,
    K2,
    K3,
    N0,
    N1,
    N2,
    N3,
    SX0,
    SX1,
    SX2,
    SX3,
    B1,
    B2,
    B3,
    N_SEG: tl.constexpr,
    ACT0: tl.constexpr,
    ACT1: tl.constexpr,
    ACT2: tl.constexpr,
    ACT3: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """``out_s = act_s(x_s @ W_s)`` for the ``N_SEG`` segments; ``B1, B2, B3``: the output blocks of
    the segments before segments 1, 2, 3 (the unused ones: any value)."""
    pid_m = tl.program_id(0)
    j = tl.program_id(1)
    if j < B1:
        _segment(x0_ptr, w0_ptr, out0_ptr, M, K0, N0, SX0, pid_m, j, ACT0, BLOCK_M, BLOCK_N, BLOCK_K, DOT_F32)
    # nested ifs: the constexpr test prunes the segments a launch does not have at compile time
    if N_SEG > 1:  # noqa: SIM102
        if (j >= B1) & (j < B2):
            _segment(x1_ptr, w1_ptr, out1_ptr, M, K1, N1, SX1, pid_m, j - B1, ACT1, BLOCK_M, BLOCK_N, BLOCK_K, DOT_F32)
    if N_SEG > 2:  # noqa: SIM102
        if (j >= B2) & (j < B3):
            _segment(x2_ptr, w2_ptr, out2_ptr, M, K2, N2, SX2, pid_m, j - B2, ACT2, BLOCK_M, BLOCK_N, BLOCK_K, DOT_F32)
    if N_SEG > 3:  # noqa: SIM102
        if j >= B3:
            _segment(x3_ptr, w3_ptr, out3_ptr, M, K3, N3, SX3, pid_m, j - B3, ACT3, BLOCK_M, BLOCK_N, BLOCK_K, DOT_F32)
