"""Triton chunked WKV7 forward for prefill: takes the WKV state in and returns the final state.

The recurrence (see ``naive.py``) per head, S [V, K]:
``S_t = S_{t-1} (D_t + a_t b_t^T) + v_t k_t^T``, ``y_t = S_t r_t``, ``D_t = diag(exp(-exp(w_t)))``.

Chunked form. Split time into chunks of C tokens; inside a chunk with incoming state S_0 let
``g_t = sum_{i<=t} log d_i`` (inclusive cumulative log-decay, fp32, <= 0) and ``g'_t = g_t - log d_t``
(exclusive). The rank-one "removal" term ``u_t = S_{t-1} a_t`` unrolls to

    u_t = S_0 (a_t ⊙ e^{g'_t}) + sum_{s<t} [ u_s Aab[t,s] + v_s Aak[t,s] ]
    Aab[t,s] = sum_k a_t[k] b_s[k] e^{g'_t[k] - g_s[k]},  Aak likewise with k_s      (s < t)

so, with rows = time, ``U = T (ã S_0^T + Aak V)`` where ``T = (I - Aab)^{-1}`` is a C×C
unit-lower-triangular inverse (the UT/WY trick; computed as a product of log2(C) factors) and
``ã = a ⊙ e^{g'}``. Then

    Y   = (r ⊙ e^{g}) S_0^T + Qb U + Qk V
    Qb[t,s] = sum_k r_t[k] b_s[k] e^{g_t[k] - g_s[k]},  Qk likewise with k_s         (s <= t)
    S_C = S_0 diag(e^{g_C}) + U^T (b ⊙ e^{g_C - g}) + V^T (k ⊙ e^{g_C - g})

Every step is a small matmul (``tl.dot``). Precision: when keys repeat inside a chunk (RWKV-7's
``a = -kk``, ``b = kk · gate``, gate near 1), every ``Aab[t,s]`` is near -1 and the entries of
``T = (I - Aab)^{-1}`` grow like ``2^(t-s-1)``, up to 2^15 at C = 16, while the outputs stay of
order one: the products that build and apply ``T`` (``Aab``, ``Aak``, ``T``, ``U``) run at about fp32
precision (``PRECISION_INV``: ``tf32x3`` on CUDA, chosen by the launcher; in plain tf32 the state
came out wrong by 40 % on such input), and C stays 16 (at 32 even fp32 does not suffice).
Numerics of the decays: the log-decays are summed in fp32 and only
relative decays are exponentiated. The C×C matrices are factored around a reference point in the
middle of the chunk, ``e^{g_t - g_s} = e^{g_t - g_ref} · e^{g_ref - g_s}``, so each factor stays
below ``e^{(C/2)·|log d|max}``; a per-token log-decay is clamped at ``LOG_DECAY_MIN`` (= -64/(C/2),
-8 for C = 16) so no factor overflows fp32. RWKV-7's ``w <= -0.5`` gives ``|log d| <= 0.61``, far
inside the clamp; only a decay below e^-8 per token (w > 2.08) is rounded up to e^-8.

One program handles one (sequence, head, block of BV value rows) and walks the chunks in order,
carrying its [BV, K] slice of the state in registers. Variable-length batches come as packed
sequences with ``cu_seqlens``. The launcher is ``launch.py``; this module only holds the kernel.
"""

# Triton kernels take untyped pointers and scalars (an annotation would change how Triton
# specialises an argument), so the annotation rules are off for this file only; an if-block
# on a constexpr stays an if-block (SIM108).
# No `from __future__ import annotations` here: Triton 3.6's interpreter only sees a constexpr
# parameter when its annotation is the object tl.constexpr, not the string.
# ruff: noqa: ANN001, ANN201, ANN202, SIM108
import triton
import triton.language as tl

__all__ = ["log_decay_min", "wkv7_chunk_fwd_kernel"]


def log_decay_min(chunk_size: int) -> float:
    """Smallest per-token log-decay the chunk kernel keeps exact (see the module docstring)."""
    return -64.0 / (chunk_size // 2)


@triton.jit
def _add(x, y):
    return x + y


# The kernel calls only Triton builtins and this file's own @triton.jit functions (tl.reduce and
# tl.associative_scan rather than tl.sum and tl.cumsum, tl.full rather than tl.zeros, no tl.cdiv).
# The launcher may load an interpreted copy of this file after Triton itself was imported for
# compiling, and Triton's interpreter cannot call the standard library's compiled helpers. The
# combine function is Triton's own ``_sum_combine`` (what tl.sum uses; the interpreter runs it as
# a numpy sum without calling it), or _add if a Triton release renames it.
_SUM = getattr(tl.standard, "_sum_combine", _add)


@triton.jit
def _row_select(x, o_t, i):
    """Row ``i`` of the [BT, X] block ``x`` as an [X] vector."""
    return tl.reduce(tl.where((o_t == i)[:, None], x, 0.0), 0, _SUM)


@triton.jit
def _unit_lower_inverse(lower, o_t, LOG2_BT: tl.constexpr, PRECISION: tl.constexpr):
    """``(I - L)^{-1}`` for a strictly lower-triangular [BT, BT] block L.

    L is nilpotent (L^BT = 0), so ``(I - L)^{-1} = sum_j L^j = (I + L)(I + L^2)(I + L^4)...``:
    log2(BT) squarings and products, all on tensor cores, instead of BT sequential row updates.
    """
    x = lower + (o_t[:, None] == o_t[None, :]).to(tl.float32)  # I + L
    p = lower
    for _ in tl.static_range(LOG2_BT - 1):  # BT = 16: factors L^2, L^4, L^8
        p = tl.dot(p, p, input_precision=PRECISION)
        x = tl.dot(x, p, acc=x, input_precision=PRECISION)
    return x


@triton.jit
def wkv7_chunk_fwd_kernel(
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
    BT: tl.constexpr,
    LOG2_BT: tl.constexpr,
    BV: tl.constexpr,
    LOG_DECAY_MIN: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
    IS_VARLEN: tl.constexpr,
    PRECISION: tl.constexpr,
    PRECISION_INV: tl.constexpr,
):
    """Grid ``(V // BV, num_seqs * H)``. Inputs ``[B, T, H, K]`` contiguous; state ``[num_seqs, H, V, K]``.
    ``PRECISION_INV``: the ``tl.dot`` precision of ``Aab``, ``Aak``, ``T`` and ``U`` (where the large
    entries of ``T`` amplify rounding); ``PRECISION``: every other product."""
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

    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    o_v = i_v * BV + tl.arange(0, BV)
    strict = o_t[:, None] > o_t[None, :]  # s < t
    causal = o_t[:, None] >= o_t[None, :]  # s <= t

    state_off = i_nh.to(tl.int64) * V * K + o_v[:, None] * K + o_k[None, :]  # (BV, K)
    if USE_INITIAL_STATE:
        state = tl.load(s0_ptr + state_off).to(tl.float32)
    else:
        state = tl.full([BV, K], 0.0, dtype=tl.float32)

    for i_c in range(0, (T + BT - 1) // BT):
        t = i_c * BT + o_t
        m_t = t < T
        row = (bos + t).to(tl.int64) * (H * K) + i_h * K  # (BT,)
        off_k = row[:, None] + o_k[None, :]  # (BT, K)
        off_v = row[:, None] + o_v[None, :]  # (BT, BV)
        m_k = m_t[:, None]
        r = tl.load(r_ptr + off_k, mask=m_k, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + off_k, mask=m_k, other=0.0).to(tl.float32)
        k = tl.load(k_ptr + off_k, mask=m_k, other=0.0).to(tl.float32)
        a = tl.load(a_ptr + off_k, mask=m_k, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + off_k, mask=m_k, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + off_v, mask=m_k, other=0.0).to(tl.float32)

        # cumulative log-decay; padded rows decay by 1 (log 0) so g_last is the last real row's
        log_d = tl.where(m_k, tl.maximum(-tl.exp(w), LOG_DECAY_MIN), 0.0)  # (BT, K)
        g = tl.associative_scan(log_d, 0, _SUM)  # inclusive cumulative sum
        g_ex = g - log_d  # exclusive
        g_ref = _row_select(g, o_t, BT // 2 - 1)  # (K,) middle of the chunk
        g_last = _row_select(g, o_t, BT - 1)  # (K,)

        # intra-chunk matrices, factored around g_ref
        e_from_ref = tl.exp(g_ref[None, :] - g)  # (BT, K) e^{g_ref - g_s}
        a_ref = a * tl.exp(g_ex - g_ref[None, :])
        r_ref = r * tl.exp(g - g_ref[None, :])
        b_ref = b * e_from_ref
        k_ref = k * e_from_ref
        A_ab = tl.where(strict, tl.dot(a_ref, tl.trans(b_ref), input_precision=PRECISION_INV), 0.0)
        A_ak = tl.where(strict, tl.dot(a_ref, tl.trans(k_ref), input_precision=PRECISION_INV), 0.0)
        Q_b = tl.where(causal, tl.dot(r_ref, tl.trans(b_ref), input_precision=PRECISION), 0.0)
        Q_k = tl.where(causal, tl.dot(r_ref, tl.trans(k_ref), input_precision=PRECISION), 0.0)
        T_inv = _unit_lower_inverse(A_ab, o_t, LOG2_BT, PRECISION_INV)  # (BT, BT)

        # cross-chunk terms: every exponent here is <= 0
        a_0 = a * tl.exp(g_ex)  # (BT, K)
        r_0 = r * tl.exp(g)
        e_to_end = tl.exp(g_last[None, :] - g)
        b_end = b * e_to_end
        k_end = k * e_to_end

        # U = T (ã S0^T + Aak V); Y = r̃ S0^T + Qb U + Qk V
        u = tl.dot(a_0, tl.trans(state), input_precision=PRECISION_INV)  # (BT, BV)
        u = tl.dot(A_ak, v, acc=u, input_precision=PRECISION_INV)
        u = tl.dot(T_inv, u, input_precision=PRECISION_INV)
        y = tl.dot(r_0, tl.trans(state), input_precision=PRECISION)
        y = tl.dot(Q_b, u, acc=y, input_precision=PRECISION)
        y = tl.dot(Q_k, v, acc=y, input_precision=PRECISION)
        tl.store(y_ptr + off_v, y.to(y_ptr.dtype.element_ty), mask=m_k)

        # S_C = S0 diag(e^{g_C}) + U^T b̄ + V^T k̄
        state = state * tl.exp(g_last)[None, :]
        state = tl.dot(tl.trans(u), b_end, acc=state, input_precision=PRECISION)
        state = tl.dot(tl.trans(v), k_end, acc=state, input_precision=PRECISION)

    tl.store(st_ptr + state_off, state)
