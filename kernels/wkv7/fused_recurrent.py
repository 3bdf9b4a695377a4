"""Triton fused-recurrent WKV7 forward: the decode step (T == 1), or any T one token at a time.

Per head, S [V, K] in fp32 registers (see ``naive.py``):
``S_t = S_{t-1} diag(exp(-exp(w_t))) + (S_{t-1} a_t) b_t^T + v_t k_t^T``, ``y_t = S_t r_t``.
One program handles one (sequence, head, block of BV value rows); the state slice is read once,
updated token by token and written once, so the kernel may update the state in place. The
launcher is ``launch.py``; this module only holds the kernel.
"""

# Triton kernels take untyped pointers and scalars (an annotation would change how Triton
# specialises an argument), so the annotation rules are off for this file only; an if-block
# on a constexpr stays an if-block (SIM108).
# No `from __future__ import annotations` here: Triton 3.6's interpreter only sees a constexpr
# parameter when its annotation is the object tl.constexpr, not the string.
# ruff: noqa: ANN001, ANN201, ANN202, SIM108
import triton
import triton.language as tl

__all__ = ["wkv7_fused_recurrent_fwd_kernel"]


@triton.jit
def _add(x, y):
    return x + y


# Builtins only (tl.reduce, not tl.sum): see the note in chunk.py.
_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def wkv7_fused_recurrent_fwd_kernel(
    r_ptr,
    w_ptr,
    k_ptr,
    v_ptr,
    a_ptr,
    b_ptr,
    y_ptr,
    s0_ptr,
    st_ptr,
    cu_seqlens_ptr,
    seq_len,
    H: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BV: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
    IS_VARLEN: tl.constexpr,
):
    """Grid ``(V // BV, num_seqs * H)``. Inputs ``[B, T, H, K]`` contiguous; state ``[num_seqs, H, V, K]``."""
    i_v = tl.program_id(0)
    i_nh = tl.program_id(1)
    i_n = i_nh // H
    i_h = i_nh % H
    if IS_VARLEN:
        bos = tl.load(cu_seqlens_ptr + i_n).to(tl.int64)
        eos = tl.load(cu_seqlens_ptr + i_n + 1).to(tl.int64)
        T = (eos - bos).to(tl.int32)
    else:
        bos = i_n.to(tl.int64) * seq_len
        T = seq_len

    o_k = tl.arange(0, K)
    o_v = i_v * BV + tl.arange(0, BV)
    state_off = i_nh.to(tl.int64) * V * K + o_v[:, None] * K + o_k[None, :]  # (BV, K)
    if USE_INITIAL_STATE:
        state = tl.load(s0_ptr + state_off).to(tl.float32)
    else:
        state = tl.full([BV, K], 0.0, dtype=tl.float32)

    for t in range(0, T):
        row = (bos + t) * (H * K) + i_h * K
        r = tl.load(r_ptr + row + o_k).to(tl.float32)  # (K,)
        w = tl.load(w_ptr + row + o_k).to(tl.float32)
        k = tl.load(k_ptr + row + o_k).to(tl.float32)
        a = tl.load(a_ptr + row + o_k).to(tl.float32)
        b = tl.load(b_ptr + row + o_k).to(tl.float32)
        v = tl.load(v_ptr + row + o_v).to(tl.float32)  # (BV,)
        decay = tl.exp(-tl.exp(w))
        sa = tl.reduce(state * a[None, :], 1, _SUM)  # (BV,) S · a
        state = state * decay[None, :] + sa[:, None] * b[None, :] + v[:, None] * k[None, :]
        y = tl.reduce(state * r[None, :], 1, _SUM)  # (BV,) S · r
        tl.store(y_ptr + row + o_v, y.to(y_ptr.dtype.element_ty))

    tl.store(st_ptr + state_off, state)
