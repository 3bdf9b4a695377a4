"""The fused kernels (add_norm, timemix, miss, lora) on adversarial but realistic inputs, against fp64
truths computed from the very values the kernels see, through Triton's interpreter on the CPU.

The kernels' own tests draw random inputs, on which the norms' rows have unit variance, sums do not
cancel and no value is far from one. Here: constant and near-constant rows into the norms (whose
``1/sqrt(var + eps)`` turns an ulp of the mean into a large error of ``y``; a constant fp32 row of
1000.1 once gave y off by 40%), large common offsets, a massive channel, sums that cancel, widths
that are no multiple of the tiles (odd, 4096 + 64), one token of one sequence, strided, offset and
transposed views, the three dtypes, and the LoRA kernel with the ``tl.dot`` operands it gets on
CUDA (bf16 tiles as they are, which the interpreter cannot multiply unaided; fp32 at IEEE precision,
with tf32 emulated so that a product at the default precision would show). Every tensor a launcher
allocates starts full of NaN; a NaN or inf never passes (``rel_rms``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, FUSED_TOL, check_vs_truth, nan_new_tensors, new_seed, rel_rms, tf32

pytest.importorskip("triton")

from rwkv_registry.kernels.add_norm import add_layer_norm, add_layer_norm_mix, add_layer_norm_ref
from rwkv_registry.kernels.lora import launch as lora_launch
from rwkv_registry.kernels.lora import lora_down, lora_up
from rwkv_registry.kernels.miss import miss_term_, miss_term_ref, miss_terms_, relu_square_
from rwkv_registry.kernels.timemix import tm_gates, tm_output, token_mix

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
IDS = [DTYPE_NAMES[d] for d in DTYPES]
F64 = torch.float64


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every floating tensor the launchers allocate starts full of NaN."""
    nan_new_tensors(monkeypatch)


def within(name: str, got: torch.Tensor, truth: torch.Tensor, tol: float, seed: int) -> None:
    err = rel_rms(got, truth)
    assert err <= tol, f"{name}: rel. RMS {err:.3g} > {tol:g} (replay with WKV7_TEST_SEED={seed})"


def gen_of(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale


def big(dtype: torch.dtype) -> float:
    """A large activation the dtype holds with room for sums of a few (fp16 stops at 65504)."""
    return 3e3 if dtype == torch.float16 else 3e4


# --------------------------------------------------------------------------------- add + LayerNorm


def norm_truth(s: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """fp64 LayerNorm of the stream as stored (the kernel norms its rounded ``s``)."""
    return add_layer_norm_ref(s.to(F64), torch.zeros_like(s, dtype=F64), w.to(F64), b.to(F64), eps)[1]


def norm_params(gen: torch.Generator, C: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return (1 + 0.3 * randn(gen, C)).to(dtype), (0.1 * randn(gen, C)).to(dtype)


@pytest.mark.parametrize("C", [33, 1000, 4160])  # 4160 = 4096 + 64: two chunks of block_c
@pytest.mark.parametrize("value", [1000.1, 0.3, -7.7])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_add_norm_of_constant_rows_is_the_bias(dtype: torch.dtype, value: float, C: int) -> None:
    """A constant row normalises to 0, so ``y == b``: the fp32 sum of the mean rounds (by ulps of
    1000.1), and ``1/sqrt(eps)`` made that ulp 42% of y (2e-4 for 0.3) before the centred sum
    corrected the mean. Constant rows: a run of padding, a dead channel mix, the fp32 stream of a
    tiny model."""
    seed = new_seed()
    gen = gen_of(seed)
    w, b = norm_params(gen, C, dtype)
    x = torch.full((2, 1, C), value).to(dtype)
    dx = torch.zeros_like(x)
    dx[1] = 0.25  # the second row: x + dx rounds once, still one value per row
    s, y = add_layer_norm(x, dx, w, b, 1e-5, backend="triton")
    s_ref = add_layer_norm_ref(x, dx, w, b, 1e-5)[0]
    assert torch.equal(s, s_ref), f"seed {seed}"
    assert bool((s == s[..., :1]).all()), "the stream must be constant along each row"
    truth = norm_truth(s, w, b, 1e-5)
    assert torch.equal(truth, b.to(F64).expand_as(truth))
    within("y", y, truth, FUSED_TOL[dtype], seed)
    assert torch.equal(y, b.expand_as(y)), f"y must be b itself (seed {seed})"


def stress_rows(
    kind: str, gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype
) -> tuple[torch.Tensor, ...]:
    """``(x, dx)`` of one kind of row."""
    C = shape[-1]
    x, dx = randn(gen, *shape), randn(gen, *shape, scale=0.1)
    if kind == "offset":  # the whole row far from zero, of unit spread
        x = x + 300.0
    elif kind == "near-constant":  # a spread of 1e-3 on 0.3: var far below eps
        x = 0.3 + 1e-3 * torch.sign(x)
        dx = torch.zeros_like(dx)
    elif kind == "massive":  # one channel of residual-stream outliers, as in large models
        x[..., C // 3] = big(dtype)
        x[..., (2 * C) // 3] = -big(dtype) / 2
    elif kind == "cancel":  # dx nearly undoes x: the sum is small against its terms
        x = x * 1e3
        dx = -x.to(dtype).float() + randn(gen, *shape)
    elif kind == "huge":  # far above fp32's sqrt(max) is out of reach, but squares of 1e15 are not
        x = x * (1e15 if dtype != torch.float16 else 1e4)
    return x.to(dtype), dx.to(dtype)


ROW_KINDS = ["offset", "near-constant", "massive", "cancel", "huge"]


@pytest.mark.parametrize("shape", [(1, 1, 33), (2, 3, 1000), (1, 1, 4160)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", ROW_KINDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_add_norm_on_hard_rows(dtype: torch.dtype, kind: str, shape: tuple[int, ...]) -> None:
    """The stream bit for bit; the norm within the dtype's tolerance of the fp64 truth and no
    further than PyTorch's LayerNorm in the same dtype (an fp32 row at 300 +- 1 gave 1.3e-5
    before the mean's correction, against 6e-8 now)."""
    seed = new_seed()
    gen = gen_of(seed)
    x, dx = stress_rows(kind, gen, shape, dtype)
    w, b = norm_params(gen, shape[-1], dtype)
    s, y = add_layer_norm(x, dx, w, b, 1e-5, backend="triton")
    s_ref, y_ref = add_layer_norm_ref(x, dx, w, b, 1e-5)
    assert torch.equal(s, s_ref), f"seed {seed}"
    check_vs_truth("y", y, norm_truth(s, w, b, 1e-5), y_ref, seed)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_add_norm_reads_views_and_a_miss_term_of_odd_shapes(dtype: torch.dtype) -> None:
    """x a column slice at an offset, dx a transpose, the MiSS input a strided slice; rank 80 (no
    power of two: BLOCK_R 128), K = 300 (a partial last block), C = 100; the term nearly cancels
    x + dx, so the stream is the small difference of larger terms."""
    seed = new_seed()
    gen = gen_of(seed)
    B, T, C, K, r = 2, 3, 100, 300, 80
    wide = randn(gen, B, T, C + 9).to(dtype)
    x = wide[..., 5 : 5 + C]
    dx = randn(gen, B, T, C)
    xm = randn(gen, B, T, 2 * K).to(dtype)[..., 3 : 3 + K]
    D = (randn(gen, C, r) * (r / K) ** 0.5).to(dtype)
    w, b = norm_params(gen, C, dtype)
    P = torch.zeros(r, K, dtype=F64)
    P[torch.arange(K) % r, torch.arange(K)] = 1.0
    term = 0.5 * (xm.to(F64) @ P.t()) @ D.to(F64).t()
    dx = (0.1 * dx - 0.95 * (x.float() + term.float())).to(dtype)  # x + dx + term: 5% of x + term
    dx = dx.transpose(0, 1).contiguous().transpose(0, 1)  # the same values, as a transposed view
    assert not dx.is_contiguous() and not x.is_contiguous() and x.storage_offset() == 5
    with torch.no_grad():
        s, y = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.5), backend="triton")
        s_ref, y_ref = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.5), backend="reference")
    s_true = x.to(F64) + dx.to(F64) + term
    check_vs_truth("s", s, s_true, s_ref, seed)
    # y against the truth of the kernel's own stream, and no further from it than the reference's y
    # from its stream
    within("y", y, norm_truth(s, w, b, 1e-5), FUSED_TOL[dtype], seed)
    assert rel_rms(y, norm_truth(s, w, b, 1e-5)) <= 1.5 * rel_rms(y_ref, norm_truth(s_ref, w, b, 1e-5)) + 1e-6


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_add_norm_mix_of_constant_and_hard_rows_one_token(dtype: torch.dtype) -> None:
    """The decode launch (T == 1, B rows) on a constant row, an offset row and a massive channel,
    the shift updated in place: y, the mixes and the new shift against fp64."""
    seed = new_seed()
    gen = gen_of(seed)
    C = 260
    x = torch.stack([torch.full((C,), 1000.1), randn(gen, C) + 300.0, randn(gen, C)])[:, None]
    x[2, 0, 7] = big(dtype)
    x, dx = x.to(dtype), (0.01 * randn(gen, 3, 1, C)).to(dtype)
    dx[0] = 0
    w, b = norm_params(gen, C, dtype)
    shift = randn(gen, 3, C).to(dtype)
    mus = [torch.rand(1, 1, C, generator=gen).to(dtype) for _ in range(2)]
    state = shift.clone()
    s, mixed, new_shift = add_layer_norm_mix(x, dx, w, b, 1e-5, state, mus, shift_out=state, backend="triton")
    assert new_shift is state
    y_true = norm_truth(s, w, b, 1e-5)
    within("new shift (y)", new_shift, y_true[:, 0], FUSED_TOL[dtype], seed)
    assert torch.equal(new_shift[0], b), f"the constant row's y must be b (seed {seed})"
    for i, (got, mu) in enumerate(zip(mixed, mus, strict=True)):
        want = y_true + (shift.to(F64)[:, None] - y_true) * mu.to(F64)
        within(f"mix {i}", got, want, 2 * FUSED_TOL[dtype], seed)  # y rounds, then the mix


# -------------------------------------------------------------------------------------- timemix


def output_inputs(gen: torch.Generator, y: torch.Tensor, H: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    B, T, C = y.shape
    r, k, v, g = (randn(gen, B, T, C).to(dtype) for _ in range(4))
    ln_w, ln_b = randn(gen, C).to(dtype), randn(gen, C, scale=0.1).to(dtype)
    r_k = randn(gen, H, C // H, scale=0.3).to(dtype)
    return (y.to(dtype), r, k, v, g, ln_w, ln_b, r_k)


def head_rows(kind: str, gen: torch.Generator, B: int, T: int, C: int, dtype: torch.dtype) -> torch.Tensor:
    if kind == "constant-1000.1":
        return torch.full((B, T, C), 1000.1)
    if kind == "constant-0.3":
        return torch.full((B, T, C), 0.3)
    if kind == "near-constant":
        return 0.3 + 1e-3 * torch.sign(randn(gen, B, T, C))
    if kind == "offset":
        return randn(gen, B, T, C) + 200.0
    if kind == "massive":
        y = randn(gen, B, T, C)
        y[..., 5] = big(dtype)
        return y
    return randn(gen, B, T, C) * (1e15 if dtype != torch.float16 else 1e4)  # huge


@pytest.mark.parametrize("heads", [(4, 64), (3, 16), (5, 4)], ids=lambda h: f"H{h[0]}N{h[1]}")
@pytest.mark.parametrize("kind", ["constant-1000.1", "constant-0.3", "near-constant", "offset", "massive", "huge"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_tm_output_groupnorm_on_hard_heads(dtype: torch.dtype, kind: str, heads: tuple[int, int]) -> None:
    """GroupNorm per head (eps 64e-5, as ln_x) then the bonus and the gate: a constant fp32 head of
    1000.1 gave 1e-3 before the mean's correction (PyTorch's group_norm: 5e-4), now 7e-8."""
    H, N = heads
    seed = new_seed()
    gen = gen_of(seed)
    args = output_inputs(gen, head_rows(kind, gen, 1, 2, H * N, dtype), H, dtype)
    got = tm_output(*args, 64e-5, backend="triton")
    ref = tm_output(*args, 64e-5, backend="reference")
    truth = tm_output(*[t.to(F64) for t in args], 64e-5, backend="reference")
    check_vs_truth("out", got, truth, ref, seed)


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # sigmoid(-100) = 1/(1+inf)
@pytest.mark.parametrize("kind", ["saturated", "tiny-keys", "large-keys", "zero-head"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_tm_gates_at_the_edges(dtype: torch.dtype, kind: str) -> None:
    """Decay and gates far into saturation (|z| ~ 30), keys of 1e-8 (1e-4 in fp16) and 1e4 (100)
    into the per-head L2 norm, a head of zero keys; 3 heads of 16 (one per program), a transposed
    k. w stays at or below -0.5 and every output within the dtype's tolerance."""
    seed = new_seed()
    gen = gen_of(seed)
    B, T, H, N = 2, 1, 3, 16
    C = H * N
    ks = {"tiny-keys": 1e-8 if dtype != torch.float16 else 1e-4, "large-keys": 1e4 if dtype != torch.float16 else 100}
    zs = 30.0 if kind == "saturated" else 1.0
    k = (randn(gen, T, B, C) * ks.get(kind, 1.0)).to(dtype).transpose(0, 1)
    if kind == "zero-head":
        k[..., N : 2 * N] = 0
    v, wz, az = randn(gen, B, T, C).to(dtype), randn(gen, B, T, C, scale=zs).to(dtype), randn(gen, B, T, C, scale=zs)
    w0, a0 = (randn(gen, 1, 1, C, scale=2.0) - 1).to(dtype), randn(gen, 1, 1, C).to(dtype)
    k_k, k_a = torch.rand(1, 1, C, generator=gen).to(dtype), torch.rand(1, 1, C, generator=gen).to(dtype)
    args = (k, v, wz, az.to(dtype), w0, a0, k_k, k_a)
    extra = {
        "v_first": randn(gen, B, T, C).to(dtype),
        "vz": randn(gen, B, T, C, scale=zs).to(dtype),
        "v0": randn(gen, 1, 1, C).to(dtype),
    }
    got = tm_gates(*args, H, **extra, backend="triton")
    ref = tm_gates(*args, H, **extra, backend="reference")
    truth = tm_gates(*[t.to(F64) for t in args], H, **{n: t.to(F64) for n, t in extra.items()}, backend="reference")
    for name, g, t, r in zip(("w", "k", "v", "a", "b"), got, truth, ref, strict=True):
        if bool(torch.isfinite(r).all()):
            check_vs_truth(name, g, t, r, seed)
        else:  # fp16's reference: normalize's eps 1e-12 is 0 in fp16, so a zero head is 0/0 there
            within(name, g, t, FUSED_TOL[dtype], seed)
    assert bool((got[0] <= -0.5).all()), "the decay must stay at or below -0.5 (-0.5 - e^-30 rounds to -0.5)"


@pytest.mark.parametrize("C", [33, 1030])  # 1030: two blocks of 1024, the second of 6
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_token_mix_of_opposite_extremes(dtype: torch.dtype, C: int) -> None:
    """Tokens alternating near the dtype's largest values (+-6e4 in fp16, +-1e38 in bf16 and fp32):
    ``prev - x`` overflows in the dtype (the reference's fp16 output is inf there), not in the
    kernel's fp32 and not in the mix itself, which lies between the two tokens. B = 1, T = 3, x an
    offset slice, the shift updated in place."""
    seed = new_seed()
    gen = gen_of(seed)
    top = 6e4 if dtype == torch.float16 else 1e38
    sign = torch.tensor([1.0, -1.0, 1.0])[None, :, None]
    wide = (sign * top * (0.5 + 0.5 * torch.rand(1, 3, C + 4, generator=gen))).to(dtype)
    x = wide[..., 4:]
    shift = (-top * torch.rand(1, C, generator=gen)).to(dtype)
    mus = [torch.rand(C, generator=gen).to(dtype) for _ in range(3)]
    state = shift.clone()
    outs, new_shift = token_mix(x, state, mus, shift_out=state, backend="triton")
    assert new_shift is state and torch.equal(state, x[:, -1])
    x64 = x.to(F64)
    prev = torch.cat((shift.to(F64)[:, None], x64[:, :-1]), dim=1)
    for i, (got, mu) in enumerate(zip(outs, mus, strict=True)):
        within(f"mix {i}", got, x64 + (prev - x64) * mu.to(F64), FUSED_TOL[dtype], seed)


# ----------------------------------------------------------------------------------------- MiSS


def miss_truth(base: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """fp64, with the block-sum matrix written out."""
    K, r = x.shape[-1], D.shape[1]
    P = torch.zeros(r, K, dtype=F64)
    P[torch.arange(K) % r, torch.arange(K)] = 1.0
    return base.to(F64) + scale * (x.to(F64) @ P.t()) @ D.to(F64).t()


def miss_case(kind: str, gen: torch.Generator, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(base out, x, D)`` of one kind; the term is of order one like the base output."""
    lead, K, n_out, r = (2,), 4160, 100, 80  # two rank steps of 64 (the second partial), K % r = 0
    x = randn(gen, *lead, K)
    d_scale = (r / K) ** 0.5
    if kind == "cancel-in-S":  # blocks that cancel in pairs (same j): S is a small sum of large terms
        x[:, r : 2 * r] = -x[:, :r]
        x[:, : 2 * r] *= big(dtype)
    elif kind == "massive":
        x[:, 5] = big(dtype)
        d_scale /= 30
    elif kind == "partial-block":  # K % r != 0 and a rank above BLOCK_R that is no power of two
        K, r = 333, 100
        x, d_scale = randn(gen, *lead, K), (r / K) ** 0.5
    elif kind == "r1-K1":
        K, r, n_out, lead = 1, 1, 5, (1,)
        x, d_scale = randn(gen, *lead, K), 1.0
    elif kind == "r-above-K":
        K, r, n_out = 3, 70, 9
        x, d_scale = randn(gen, *lead, K), 1.0
    elif kind == "views":  # x an offset slice of a [B, T, 2K] tensor, D a transpose
        lead = (2, 3)
        x = randn(gen, 2, 3, 2 * K)[..., 7 : 7 + K]
        D = (randn(gen, r, n_out) * d_scale).to(dtype).t()
        return randn(gen, *lead, n_out).to(dtype), x.to(dtype), D
    return randn(gen, *lead, n_out).to(dtype), x.to(dtype), (randn(gen, n_out, r) * d_scale).to(dtype)


MISS_KINDS = ["plain", "cancel-in-S", "massive", "partial-block", "r1-K1", "r-above-K", "views"]


@pytest.mark.parametrize("kind", MISS_KINDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@torch.no_grad()
def test_miss_term_and_relu_square_on_hard_inputs(dtype: torch.dtype, kind: str) -> None:
    """``out += scale * S(x) @ D^T`` and ``relu(h + term) ** 2`` against fp64; the kernel rounds
    once, so it must be no further from the truth than the reference (which rounds S and the
    product; on blocks that cancel, fp32's reference was 1e-4 off, the kernel 2e-7)."""
    seed = new_seed()
    base, x, D = miss_case(kind, gen_of(seed), dtype)
    truth = miss_truth(base, x, D, 0.5)
    out = base.clone()
    assert miss_term_(out, x, D, 0.5, backend="triton") is out
    ref = miss_term_ref(base.clone(), x, D, 0.5)
    check_vs_truth("out", out, truth, ref, seed)
    h = base.clone()
    assert relu_square_(h, (x, D, 0.5), backend="triton") is h
    within("relu^2", h, torch.relu(truth) ** 2, FUSED_TOL[dtype], seed)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@torch.no_grad()
def test_miss_terms_three_segments_of_hard_kinds(dtype: torch.dtype) -> None:
    """One launch for three segments of different kinds, widths and ranks (as a time-mix layer's r,
    k, v): cancelling blocks, a massive channel, a partial last block of rank 100; scales of both
    signs."""
    seed = new_seed()
    gen = gen_of(seed)
    cases = [miss_case(kind, gen, dtype) for kind in ("cancel-in-S", "massive", "partial-block")]
    outs = [base.clone() for base, _, _ in cases]
    miss_terms_(outs, [x for _, x, _ in cases], [D for _, _, D in cases], [0.5, -1.0, 2.0], backend="triton")
    for i, ((base, x, D), out, scale) in enumerate(zip(cases, outs, [0.5, -1.0, 2.0], strict=True)):
        check_vs_truth(
            f"segment {i}", out, miss_truth(base, x, D, scale), miss_term_ref(base.clone(), x, D, scale), seed
        )


# ----------------------------------------------------------------------------------------- LoRA


@pytest.fixture
def cuda_dots(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The LoRA kernel's ``tl.dot`` as on CUDA: the launcher's CUDA operands (``DOT_F32`` only for
    fp32: bf16 and fp16 tiles go to ``tl.dot`` as they are, where the interpreter would multiply
    bf16's raw bit patterns, so the launcher sends them through fp32 under the interpreter), the
    interpreter's dot reading bf16 as a tensor core does and rounding fp32 operands to tf32 at the
    TF32 precisions. Yields the precisions the kernel's products asked for (with their operands'
    type)."""
    interpreter = pytest.importorskip("triton.runtime.interpreter")
    import triton.language as tl

    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle is None or not hasattr(builder, "create_dot"):
        pytest.skip("this Triton's interpreter has no InterpreterBuilder.create_dot to emulate CUDA's dot in")
    real_dot = builder.create_dot
    seen: list[str] = []

    def operand(t: object) -> np.ndarray:
        data = t.data  # type: ignore[attr-defined]
        if t.dtype.scalar == tl.bfloat16:  # type: ignore[attr-defined]
            return (data.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return data.astype(np.float32)

    def create_dot(self: object, a: object, b: object, d: object, precision: object, max_imprecise: object) -> object:
        name = getattr(precision, "name", str(precision)).upper()
        kind = str(a.dtype.scalar)  # type: ignore[attr-defined]
        seen.append(f"{kind}:{name}")
        if kind not in ("bf16", "fp16", "fp32"):
            return real_dot(self, a, b, d, precision, max_imprecise)
        x, y = operand(a), operand(b)
        if kind == "fp32" and name in ("TF32", "TF32X3"):
            xh, yh = tf32(x), tf32(y)
            acc = np.matmul(xh, yh, dtype=np.float32)
            if name == "TF32X3":
                acc = acc + np.matmul(xh, tf32(y - yh)) + np.matmul(tf32(x - xh), yh)
            x, y = xh, yh
        else:
            acc = np.matmul(x, y, dtype=np.float32)
        return handle(acc + d.data, d.dtype.scalar)  # type: ignore[attr-defined]

    real_kernels = lora_launch._kernels

    def kernels(interpret: bool) -> object:
        kernel = real_kernels(interpret).lora_kernel

        class Launcher:
            def __getitem__(self, grid: object) -> Callable[..., object]:
                def launch(*args: torch.Tensor, **kwargs: object) -> object:
                    dtype = args[0].dtype
                    assert kwargs["DOT_F32"] == lora_launch.dot_in_fp32(dtype, "cpu")  # its choice here
                    return kernel[grid](*args, **{**kwargs, "DOT_F32": lora_launch.dot_in_fp32(dtype, "cuda")})

                return launch

        return SimpleNamespace(lora_kernel=Launcher())

    monkeypatch.setattr(builder, "create_dot", create_dot)
    monkeypatch.setattr(lora_launch, "_kernels", kernels)
    yield seen


def lora_inputs(
    gen: torch.Generator, M: int, dtype: torch.dtype
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Down: a plain x, one with a massive channel, an offset row-strided slice (K = 1040, no multiple
    of block_k), W transposed; up: D = 33 and 100 (no multiple of block_n)."""
    K = 1040
    x0 = randn(gen, M, K)
    x1 = randn(gen, M, K)
    x1[:, 3] = big(dtype)
    x2 = randn(gen, M, 2 * K + 8)[:, 8 : 8 + K]
    ws = [randn(gen, K, 33, scale=K**-0.5), randn(gen, K, 100, scale=K**-0.5 / 10), randn(gen, 33, K, scale=K**-0.5)]
    hs = [randn(gen, M, 33), randn(gen, M, 100)]
    ups = [randn(gen, 33, K, scale=33**-0.5), randn(gen, K, 100, scale=100**-0.5).t()]
    xs = [x0.to(dtype), x1.to(dtype), x2.to(dtype)]
    return xs, [ws[0].to(dtype), ws[1].to(dtype), ws[2].to(dtype).t()], hs, ups


@pytest.mark.parametrize("M", [1, 3, 9, 17])  # the row path below dot_rows = 8; tl.dot with BLOCK_M 16 and 32
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@torch.no_grad()
def test_lora_at_the_cuda_dot_precisions(cuda_dots: list[str], dtype: torch.dtype, M: int) -> None:
    """Down-projections through tanh, none and sigmoid, and up-projections, against fp64 and no
    further than PyTorch's matmul in the dtype. fp32 products must be IEEE (tf32 would be ~1e-3)."""
    seed = new_seed()
    xs, ws, hs, ups = lora_inputs(gen_of(seed), M, dtype)
    acts = ["tanh", "none", "sigmoid"]
    got = lora_down(xs, ws, acts, backend="triton")
    truth = lora_down([t.to(F64) for t in xs], [t.to(F64) for t in ws], acts, backend="reference")
    ref = lora_down(xs, ws, acts, backend="reference")
    for i, (g, t, r) in enumerate(zip(got, truth, ref, strict=True)):
        check_vs_truth(f"down[{i}] {acts[i]}", g, t, r, seed)
    hs, ups = [h.to(dtype) for h in hs], [u.to(dtype) for u in ups]
    got = lora_up(hs, ups, backend="triton")
    truth = lora_up([t.to(F64) for t in hs], [t.to(F64) for t in ups], backend="reference")
    ref = lora_up(hs, ups, backend="reference")
    for i, (g, t, r) in enumerate(zip(got, truth, ref, strict=True)):
        check_vs_truth(f"up[{i}]", g, t, r, seed)
    if M < 8:
        assert cuda_dots == [], "decode rows take the broadcast product, not tl.dot"
    else:
        kinds = {s.split(":")[0] for s in cuda_dots}
        assert kinds == {DTYPE_NAMES[dtype]}, f"the dots' operands: {sorted(set(cuda_dots))}"
        if dtype == torch.float32:
            assert set(cuda_dots) == {"fp32:IEEE"}, f"fp32 products must be IEEE: {sorted(set(cuda_dots))}"
