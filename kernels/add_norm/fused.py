"""Triton kernel: residual add and LayerNorm in one pass (see ``reference.py``), optionally with the
MiSS term of the map that made ``dx`` and with the token mixes of the next half-block.

Grid ``(rows,)``: one program per row of C channels (the norm needs the whole row), walked in
``BLOCK_C`` chunks three times: the sum (``s`` rounded to the stream's dtype and stored: the norm
is of the stream as stored, so the residual is the reference's up to the one rounding of the
sum), the centred squares, the norm. With ``HAS_MISS`` the program first sums ``S`` over its row
of ``xm`` for the whole rank (``BLOCK_R`` >= R) and adds ``scale * D @ S`` chunk by chunk, ``D``'s
rows read whole. With ``N_MIX`` > 0 (rows of one token each: decode) it also does
``kernels/timemix``'s token mix on the normed row: ``out_i = y + (shift - y) * mu_i`` with the
row's previous token ``shift``, and stores ``y`` as the new shift (``y_ptr`` may be ``shift_ptr``:
each chunk of the shift is read before it is overwritten, by the same program).
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


@triton.jit
def _max(x, y):
    return tl.maximum(x, y)


_SUM = getattr(tl.standard, "_sum_combine", _add)
# Triton's own max combine (what tl.max uses; the interpreter runs it as a numpy max), or _max
_MAX = getattr(tl.standard, "_elementwise_max", _max)
# rows whose largest |value| exceeds this are normed in units of that value: their squares would
# overflow fp32 (a row of C values of 1.8e19 / sqrt(C) does); below it the unit is exactly 1
BIG = tl.constexpr(1125899906842624.0)  # 2**50: C * (2 * BIG)^2 stays far below fp32's 3.4e38 for any row width


@triton.jit
def _mix(y, xx, mu_ptr, out_ptr, at, offs, mask):
    mu = tl.load(mu_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + at, (y + xx * mu).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_layer_norm_kernel(
    x_ptr,
    dx_ptr,
    w_ptr,
    b_ptr,
    s_ptr,
    y_ptr,
    xm_ptr,
    d_ptr,
    shift_ptr,
    mu0_ptr,
    mu1_ptr,
    mu2_ptr,
    mu3_ptr,
    mu4_ptr,
    mu5_ptr,
    out0_ptr,
    out1_ptr,
    out2_ptr,
    out3_ptr,
    out4_ptr,
    out5_ptr,
    C,
    K,
    R,
    SX,
    scale,
    eps,
    BLOCK_C: tl.constexpr,
    HAS_MISS: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
    N_MIX: tl.constexpr,
):
    """``s = x + dx (+ scale * S(xm) @ D^T)``, ``y = (s - mean) / sqrt(var + eps) * w + b``, and
    with ``N_MIX`` the mixes of ``y`` with ``shift``. x, dx, s, y, shift, out_i [M, C]
    contiguous; ``xm`` [M, K] with row stride ``SX``; ``D`` [C, R]. Unused pointers: any."""
    m = tl.program_id(0)
    row = m.to(tl.int64) * C
    if HAS_MISS:
        xm_row = xm_ptr + m.to(tl.int64) * SX
        offs_r = tl.arange(0, BLOCK_R)
        mask_r = offs_r < R
        S = tl.full([BLOCK_R], 0.0, dtype=tl.float32)  # S[j] = sum over k % R == j of xm[k]
        for i0 in range(0, (K + R - 1) // R, BLOCK_N):
            k = (i0 + tl.arange(0, BLOCK_N))[:, None] * R + offs_r[None, :]  # [BLOCK_N, BLOCK_R]
            S += tl.reduce(tl.load(xm_row + k, mask=mask_r[None, :] & (k < K), other=0.0).to(tl.float32), 0, _SUM)
    inv_c = 1.0 / C
    total = tl.full([BLOCK_C], 0.0, dtype=tl.float32)
    biggest = tl.full([BLOCK_C], 0.0, dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        offs = c0 + tl.arange(0, BLOCK_C)
        mask = offs < C
        v = tl.load(x_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
        v += tl.load(dx_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_MISS:
            d = tl.load(
                d_ptr + offs.to(tl.int64)[:, None] * R + offs_r[None, :],
                mask=mask[:, None] & mask_r[None, :],
                other=0.0,
            ).to(tl.float32)  # [BLOCK_C, BLOCK_R]
            v += scale * tl.reduce(d * S[None, :], 1, _SUM)
        s = v.to(s_ptr.dtype.element_ty)
        tl.store(s_ptr + row + offs, s, mask=mask)
        sf = tl.where(mask, s.to(tl.float32), 0.0)
        total += sf * inv_c  # summed as s / C: no overflow however large the row
        biggest = tl.maximum(biggest, tl.abs(sf))
    mean = tl.reduce(total, 0, _SUM)
    # a row beyond BIG is normed in units of its largest |value| (exactly 1 otherwise): every
    # difference and square below is of scaled values, so none overflows up to the dtype's range
    top = tl.reduce(biggest, 0, _MAX)
    unit = 1.0 / tl.where(top > BIG, top, 1.0)
    mean_u = mean * unit
    # the centred sums; the first corrects the mean, whose sum above rounds (a constant fp32 row of
    # 1000.1 was off by ulps, which 1/sqrt(eps) made 40% of y): s - mean - delta, the correction
    # applied to the small differences
    squares = tl.full([BLOCK_C], 0.0, dtype=tl.float32)
    shifts = tl.full([BLOCK_C], 0.0, dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        offs = c0 + tl.arange(0, BLOCK_C)
        mask = offs < C
        d = tl.where(mask, tl.load(s_ptr + row + offs, mask=mask, other=0.0).to(tl.float32) * unit - mean_u, 0.0)
        shifts += d
        squares += d * d
    delta = tl.reduce(shifts, 0, _SUM) / C
    # eps in the same units; the floor keeps an exactly constant row of huge values at y = b (its
    # eps * unit^2 underflows to 0) instead of 0 * inf; it never binds otherwise (eps >= 1e-37)
    var = tl.maximum(tl.reduce(squares, 0, _SUM) / C - delta * delta, 0.0)
    rstd = 1.0 / tl.sqrt(tl.maximum(var + eps * unit * unit, 1e-37))
    for c0 in range(0, C, BLOCK_C):
        offs = c0 + tl.arange(0, BLOCK_C)
        mask = offs < C
        v = tl.load(s_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = ((v * unit - mean_u - delta) * rstd * w + b).to(y_ptr.dtype.element_ty)
        if N_MIX > 0:
            prev = tl.load(shift_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)  # before y overwrites it
        tl.store(y_ptr + row + offs, y, mask=mask)
        if N_MIX > 0:
            yf = y.to(tl.float32)  # the mixes are of the normed row as stored
            xx = prev - yf
            _mix(yf, xx, mu0_ptr, out0_ptr, row + offs, offs, mask)
            if N_MIX > 1:
                _mix(yf, xx, mu1_ptr, out1_ptr, row + offs, offs, mask)
            if N_MIX > 2:
                _mix(yf, xx, mu2_ptr, out2_ptr, row + offs, offs, mask)
            if N_MIX > 3:
                _mix(yf, xx, mu3_ptr, out3_ptr, row + offs, offs, mask)
            if N_MIX > 4:
                _mix(yf, xx, mu4_ptr, out4_ptr, row + offs, offs, mask)
            if N_MIX > 5:
                _mix(yf, xx, mu5_ptr, out5_ptr, row + offs, offs, mask)
