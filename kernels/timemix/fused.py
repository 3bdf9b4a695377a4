"""Triton kernels for the element-wise work of an RWKV-7 block (see ``reference.py`` for the maths).

Each kernel reads its inputs once, computes in fp32 and writes its outputs once, in place of the
10-20 separate PyTorch kernels of the reference; on a decode step, where every kernel is tiny, that
is most of the launches of a layer. The launcher is ``launch.py``; this module only holds kernels.

- ``token_mix_kernel``: grid ``(B*T, cdiv(C, BLOCK_C))``. The program of row ``t == 0`` of a
  sequence reads the old shift and also writes the new one (``x[b, T-1]``), so the shift may be
  updated in place without a race between programs.
- ``tm_gates_kernel`` and ``tm_output_kernel``: grid ``(B*T, H // HB)``, a ``[HB, N]`` tile of
  heads per program (the per-head L2 norm and GroupNorm are row reductions of the tile).
"""

# Triton kernels take untyped pointers and scalars, so the annotation rules are off for this file.
# No `from __future__ import annotations`: Triton 3.6's interpreter only sees a constexpr parameter
# when its annotation is the object tl.constexpr. Only Triton builtins and this file's own jit
# functions are called (the launcher may load an interpreted copy; see docs/kernels.md).
# ruff: noqa: ANN001, ANN201, ANN202
import triton
import triton.language as tl

__all__ = ["tm_gates_kernel", "tm_output_kernel", "token_mix_kernel"]


@triton.jit
def _add(x, y):
    return x + y


@triton.jit
def _max(x, y):
    return tl.maximum(x, y)


_SUM = getattr(tl.standard, "_sum_combine", _add)
_MAX = getattr(tl.standard, "_elementwise_max", _max)  # Triton's own (the interpreter's numpy max)
# heads whose largest |value| exceeds this are normed in units of that value (their squares would
# overflow fp32 above about 1.8e19 / sqrt(N)); below it the unit is exactly 1 (nothing changes)
BIG = tl.constexpr(1125899906842624.0)  # 2**50: C * (2 * BIG)^2 stays far below fp32's 3.4e38 for any row width


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _mix(xv, xx, mu_ptr, out_ptr, row, offs, mask):
    mu = tl.load(mu_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row + offs, (xv + xx * mu).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def token_mix_kernel(
    x_ptr,
    shift_ptr,
    shift_out_ptr,
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
    T,
    C,
    N_MIX: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """``out_i[b, t] = x[b, t] + (prev - x[b, t]) * mu_i`` with ``prev`` = ``x[b, t-1]``, or
    ``shift[b]`` at ``t == 0``; ``shift_out[b] = x[b, T-1]``. ``x`` [B, T, C] contiguous."""
    m = tl.program_id(0)
    i_c = tl.program_id(1)
    t = m % T
    b = m // T
    offs = i_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = offs < C
    row = m.to(tl.int64) * C
    t_vec = offs * 0 + t  # t as a block: a scalar condition in a mask trips the interpreter
    first = t_vec == 0
    xv = tl.load(x_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
    from_shift = tl.load(shift_ptr + b.to(tl.int64) * C + offs, mask=mask & first, other=0.0).to(tl.float32)
    from_x = tl.load(x_ptr + row - C + offs, mask=mask & (t_vec > 0), other=0.0).to(tl.float32)
    xx = from_shift + from_x - xv
    # the one program that read shift[b] writes the new shift: no other program touches it
    last = tl.load(x_ptr + (row + (T - 1 - t).to(tl.int64) * C) + offs, mask=mask & first, other=0.0)
    tl.store(shift_out_ptr + b.to(tl.int64) * C + offs, last, mask=mask & first)
    _mix(xv, xx, mu0_ptr, out0_ptr, row, offs, mask)
    if N_MIX > 1:
        _mix(xv, xx, mu1_ptr, out1_ptr, row, offs, mask)
    if N_MIX > 2:
        _mix(xv, xx, mu2_ptr, out2_ptr, row, offs, mask)
    if N_MIX > 3:
        _mix(xv, xx, mu3_ptr, out3_ptr, row, offs, mask)
    if N_MIX > 4:
        _mix(xv, xx, mu4_ptr, out4_ptr, row, offs, mask)
    if N_MIX > 5:
        _mix(xv, xx, mu5_ptr, out5_ptr, row, offs, mask)


@triton.jit
def tm_gates_kernel(
    k_ptr,
    v_ptr,
    wz_ptr,
    az_ptr,
    vz_ptr,
    v_first_ptr,
    w0_ptr,
    a0_ptr,
    v0_ptr,
    k_k_ptr,
    k_a_ptr,
    w_out_ptr,
    k_out_ptr,
    v_out_ptr,
    a_out_ptr,
    b_out_ptr,
    C,
    N: tl.constexpr,
    HB: tl.constexpr,
    HAS_V: tl.constexpr,
):
    """The WKV7 inputs from the matmul outputs of one row and ``HB`` heads (``reference.tm_gates_ref``)."""
    m = tl.program_id(0)
    i_h = tl.program_id(1)
    ch = (i_h * HB + tl.arange(0, HB))[:, None] * N + tl.arange(0, N)[None, :]  # [HB, N] channels
    at = m.to(tl.int64) * C + ch
    k = tl.load(k_ptr + at).to(tl.float32)
    z = tl.load(w0_ptr + ch).to(tl.float32) + tl.load(wz_ptr + at).to(tl.float32)
    # w = -softplus(-z) - 0.5, with softplus(u) = max(u, 0) + log(1 + exp(-|u|))
    w = -(tl.maximum(-z, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(z)))) - 0.5
    tl.store(w_out_ptr + at, w.to(w_out_ptr.dtype.element_ty))
    a = _sigmoid(tl.load(a0_ptr + ch).to(tl.float32) + tl.load(az_ptr + at).to(tl.float32))
    kk = k * tl.load(k_k_ptr + ch).to(tl.float32)
    # a head whose largest |kk| exceeds BIG is normalised in units of it (kk / |kk| is the same
    # in any unit, as long as no square overflows); a tile without one takes the plain code
    top = tl.reduce(tl.abs(kk), 1, _MAX)  # [HB]
    if tl.reduce(top, 0, _MAX) > BIG:
        unit = 1.0 / tl.where(top > BIG, top, 1.0)
        kk = kk * unit[:, None]
        kk = kk / tl.maximum(tl.sqrt(tl.reduce(kk * kk, 1, _SUM)), 1e-12 * unit)[:, None]
    else:
        kk = kk / tl.maximum(tl.sqrt(tl.reduce(kk * kk, 1, _SUM)), 1e-12)[:, None]
    k_new = k * (1.0 + (a - 1.0) * tl.load(k_a_ptr + ch).to(tl.float32))
    tl.store(k_out_ptr + at, k_new.to(k_out_ptr.dtype.element_ty))
    tl.store(a_out_ptr + at, (-kk).to(a_out_ptr.dtype.element_ty))
    tl.store(b_out_ptr + at, (kk * a).to(b_out_ptr.dtype.element_ty))
    v = tl.load(v_ptr + at).to(tl.float32)
    if HAS_V:
        mix = _sigmoid(tl.load(v0_ptr + ch).to(tl.float32) + tl.load(vz_ptr + at).to(tl.float32))
        v = v + (tl.load(v_first_ptr + at).to(tl.float32) - v) * mix
    tl.store(v_out_ptr + at, v.to(v_out_ptr.dtype.element_ty))


@triton.jit
def tm_output_kernel(
    y_ptr,
    r_ptr,
    k_ptr,
    v_ptr,
    g_ptr,
    ln_w_ptr,
    ln_b_ptr,
    r_k_ptr,
    out_ptr,
    C,
    eps,
    N: tl.constexpr,
    HB: tl.constexpr,
):
    """``(GroupNorm(y) + sum(r * k * r_k) * v) * g`` for one row and ``HB`` heads."""
    m = tl.program_id(0)
    i_h = tl.program_id(1)
    ch = (i_h * HB + tl.arange(0, HB))[:, None] * N + tl.arange(0, N)[None, :]  # [HB, N]
    at = m.to(tl.int64) * C + ch
    y = tl.load(y_ptr + at).to(tl.float32)
    # a head whose largest |y| exceeds BIG is normed in units of it, so that no square overflows
    # (eps in the same units; the floor keeps a constant head of huge values at ln_b, where eps *
    # unit^2 underflows to 0, instead of 0 * inf); a tile without one takes the plain code
    top = tl.reduce(tl.abs(y), 1, _MAX)  # [HB]
    if tl.reduce(top, 0, _MAX) > BIG:
        unit = 1.0 / tl.where(top > BIG, top, 1.0)
        y = y * unit[:, None]
        eps_u = tl.maximum(eps * unit * unit, 1e-37)
    else:
        eps_u = top * 0.0 + eps
    mean = tl.reduce(y, 1, _SUM) / N
    d = y - mean[:, None]
    # the mean corrected by the centred sum (the first rounds: a constant fp32 head was off by ulps)
    delta = tl.reduce(d, 1, _SUM) / N
    var = tl.maximum(tl.reduce(d * d, 1, _SUM) / N - delta * delta, 0.0)
    y = (d - delta[:, None]) / tl.sqrt(var + eps_u)[:, None]
    y = y * tl.load(ln_w_ptr + ch).to(tl.float32) + tl.load(ln_b_ptr + ch).to(tl.float32)
    r = tl.load(r_ptr + at).to(tl.float32)
    k = tl.load(k_ptr + at).to(tl.float32)
    rk = tl.reduce(r * k * tl.load(r_k_ptr + ch).to(tl.float32), 1, _SUM)  # [HB]
    v = tl.load(v_ptr + at).to(tl.float32)
    g = tl.load(g_ptr + at).to(tl.float32)
    tl.store(out_ptr + at, ((y + rk[:, None] * v) * g).to(out_ptr.dtype.element_ty))
