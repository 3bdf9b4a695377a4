"""Edge cases of the WKV7 kernels against the plain reference, on fresh random inputs through
Triton's interpreter: T = 1, T around and off the chunk size, packed batches with empty and
one-token sequences, batch 1 and an odd batch, zero and random initial states, values near the
bf16 range, decays at both ends of the kernels' range, non-contiguous views (inputs, state,
``cu_seqlens``), and outputs that would overlap an input (refused). The fused element-wise ops:
arguments that the reference and the kernel must refuse alike (their numerical edges are in
``test_fused_stress.py``)."""

from __future__ import annotations

import itertools

import pytest
import torch

from rwkv_registry.kernels.norm_units import in_norm_units

pytest.importorskip("triton")

from wkv7_helpers import (
    TOL,
    assert_close,
    nan_like,
    nan_state,
    new_seed,
    random_state,
    reference,
    rwkv_inputs,
)

from rwkv_registry.kernels.add_norm import add_layer_norm, add_layer_norm_mix
from rwkv_registry.kernels.timemix import tm_gates, tm_output
from rwkv_registry.kernels.wkv7 import CHUNK_SIZE, wkv7

KERNELS = ("chunk", "step")
C = CHUNK_SIZE


def _check(backend: str, ins: dict[str, torch.Tensor], s0: torch.Tensor | None, seed: int, **kw: object) -> None:
    """The kernel (outputs preallocated full of NaN) against the fp64 reference on the same values."""
    dtype = ins["r"].dtype
    b, _, h, n = ins["r"].shape
    cu = kw.get("cu_seqlens")
    num_seqs = b if cu is None else len(cu) - 1  # type: ignore[arg-type]
    out = nan_like(torch.empty(ins["r"].shape, dtype=dtype))
    y, st = wkv7(*ins.values(), s0, backend=backend, out=out, state_out=nan_state(num_seqs, h, n), **kw)  # type: ignore[arg-type]
    y_ref, st_ref = reference(ins, s0, cu)  # type: ignore[arg-type]
    assert y is out and y.shape == y_ref.shape
    if y.numel():  # (all sequences empty: nothing to compare but the states)
        assert_close("y", y, y_ref, TOL[dtype], seed)
    assert_close("final state", st, st_ref, TOL[dtype] if dtype == torch.float32 else 1e-4, seed)


@pytest.mark.parametrize("T", [1, 2, C - 1, C, C + 1, 2 * C - 1, 2 * C + 1, 3 * C + 5], ids=lambda t: f"T{t}")
@pytest.mark.parametrize("backend", KERNELS)
def test_lengths_around_the_chunk(backend: str, T: int) -> None:
    seed = new_seed()
    ins = rwkv_inputs(1, T, 2, 16, torch.float32, seed)
    _check(backend, ins, random_state(1, 2, 16, seed), seed)


@pytest.mark.parametrize("B", [1, 3, 5])
@pytest.mark.parametrize("backend", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_batch_one_and_odd_batches(dtype: torch.dtype, backend: str, B: int) -> None:
    seed = new_seed()
    ins = rwkv_inputs(B, 19, 3, 16, dtype, seed)
    _check(backend, ins, random_state(B, 3, 16, seed), seed)


@pytest.mark.parametrize("state", ["none", "zeros", "random"])
@pytest.mark.parametrize("backend", KERNELS)
def test_initial_state_none_zero_or_random(backend: str, state: str) -> None:
    """``None`` and an explicit zero state give the same result (two kernel paths)."""
    seed = new_seed()
    ins = rwkv_inputs(2, 21, 2, 32, torch.float32, seed)
    s0 = {"none": None, "zeros": torch.zeros(2, 2, 32, 32), "random": random_state(2, 2, 32, seed)}[state]
    _check(backend, ins, s0, seed)


@pytest.mark.parametrize("lengths", [[0, 1, 17], [1, 0, 0, 16, 1], [0], [1], [0, 0]], ids=str)
@pytest.mark.parametrize("backend", KERNELS)
def test_packed_batches_with_empty_and_one_token_sequences(backend: str, lengths: list[int]) -> None:
    """An empty sequence's state passes through; every sequence is checked on its own."""
    seed = new_seed()
    offsets = [0, *itertools.accumulate(lengths)]
    ins = rwkv_inputs(1, offsets[-1], 2, 16, torch.float32, seed)
    s0 = random_state(len(lengths), 2, 16, seed)
    _check(backend, ins, s0, seed, cu_seqlens=torch.tensor(offsets, dtype=torch.int32))


@pytest.mark.parametrize("backend", KERNELS)
def test_cu_seqlens_given_as_a_strided_view(backend: str) -> None:
    """``cu_seqlens`` is read by its values, not as a flat array from its first element: the view
    ``[0, 5, 9, 12, 18][::2]`` is ``[0, 9, 18]`` (the kernels once read ``[0, 5, 9]``)."""
    seed = new_seed()
    ins = rwkv_inputs(1, 18, 2, 16, torch.float32, seed)
    cu = torch.tensor([0, 5, 9, 12, 18], dtype=torch.int64)[::2]
    assert not cu.is_contiguous() and cu.tolist() == [0, 9, 18]
    _check(backend, ins, random_state(2, 2, 16, seed), seed, cu_seqlens=cu)


@pytest.mark.parametrize("view", ["transposed", "strided", "offset"])
@pytest.mark.parametrize("backend", KERNELS)
def test_non_contiguous_inputs_and_state(backend: str, view: str) -> None:
    seed = new_seed()
    ins = rwkv_inputs(3, 18, 2, 16, torch.float32, seed)
    s0 = random_state(3, 2, 16, seed)
    if view == "transposed":  # [T, B, ...] storage seen as [B, T, ...]; the state V/K-transposed
        ins = {k: t.transpose(0, 1).contiguous().transpose(0, 1) for k, t in ins.items()}
        s0 = s0.transpose(-1, -2).contiguous().transpose(-1, -2)
    elif view == "strided":  # every other element of a wider last dimension
        ins = {k: torch.stack((t, t.neg()), dim=-1).flatten(-2)[..., ::2] for k, t in ins.items()}
        s0 = torch.stack((s0, s0), dim=1)[:, 0]
    else:  # a slice that starts inside a bigger tensor
        ins = {k: torch.cat((t[:, :3], t), dim=1)[:, 3:] for k, t in ins.items()}
        s0 = torch.cat((s0[:1], s0))[1:]
    assert all(not t.is_contiguous() or t.storage_offset() for t in ins.values())
    _check(backend, ins, s0, seed)


@pytest.mark.parametrize("backend", KERNELS)
def test_values_near_the_bf16_range(backend: str) -> None:
    """Values of 1e34 (bf16 holds up to 3.4e38) and of 1e-30: the fp32 state and y stay finite
    and exact relative to their size (the recurrence is linear in v)."""
    seed = new_seed()
    ins = rwkv_inputs(1, 20, 2, 16, torch.float32, seed)
    ins["v"] = ins["v"] * 1e34
    ins["r"] = ins["r"] * 1e-3
    big = {k: t.to(torch.bfloat16) for k, t in ins.items()}
    _check(backend, big, None, seed)
    tiny = {**ins, "v": ins["v"] * 1e-64}
    _check(backend, tiny, None, seed)


@pytest.mark.filterwarnings("ignore:overflow encountered in matmul:RuntimeWarning")  # masked-out entries
@pytest.mark.parametrize("w", [-float("inf"), -30.0, -0.5, 0.0, 2.0], ids=lambda w: f"w{w:g}")
@pytest.mark.parametrize("backend", KERNELS)
def test_decays_at_the_ends_of_the_range(backend: str, w: float) -> None:
    """Decay ``exp(-exp(w))`` → 1 (w → -inf: no decay at all; RWKV-7's ``w <= -0.5``) and → 0
    (w = 2.0: e^-7.4 per token, inside the chunk kernel's exact range, which ends at e^-8)."""
    seed = new_seed()
    ins = rwkv_inputs(1, 37, 2, 16, torch.float32, seed)
    gen = torch.Generator().manual_seed(seed + 3)
    jitter = torch.rand(ins["w"].shape, generator=gen) * 0.05
    ins["w"] = torch.full_like(ins["w"], w) - (0 if w == -float("inf") else jitter)
    _check(backend, ins, random_state(1, 2, 16, seed), seed)


@pytest.mark.filterwarnings("ignore:overflow encountered in matmul:RuntimeWarning")  # masked-out entries
@pytest.mark.parametrize("backend", KERNELS)
def test_decay_past_the_clamp_is_bounded(backend: str) -> None:
    """w = 30 (decay 0): exact in the step kernel; the chunk kernel floors the decay at e^-8 per
    token (docs/kernels.md), an error that stays below 1e-3 and never a NaN."""
    seed = new_seed()
    ins = rwkv_inputs(1, 37, 2, 16, torch.float32, seed)
    ins["w"] = torch.full_like(ins["w"], 30.0)
    s0 = random_state(1, 2, 16, seed)
    y, st = wkv7(*ins.values(), s0, backend=backend)
    y_ref, st_ref = reference(ins, s0)
    tol = 1e-3 if backend == "chunk" else TOL[torch.float32]
    assert_close("y", y, y_ref, tol, seed)
    assert_close("final state", st, st_ref, tol, seed)


@pytest.mark.parametrize("target", ["r", "k", "v", "state"])
@pytest.mark.parametrize("backend", ["naive", *KERNELS])
def test_out_over_an_input_is_refused(backend: str, target: str) -> None:
    """``out=r`` (or any input) would be a race between the programs of one head on the GPU,
    where each writes its value rows while the others still read the whole row of r and k."""
    ins = rwkv_inputs(1, 16, 1, 16, torch.float32, 0)
    s0 = torch.zeros(1, 1, 16, 16)
    buf = s0.reshape(1, 16, 1, 16) if target == "state" else ins[target]
    with pytest.raises(ValueError, match=rf"wkv7: out shares memory with {target}; give out a tensor of its own"):
        wkv7(*ins.values(), s0, backend=backend, out=buf)


@pytest.mark.parametrize("backend", KERNELS)
def test_state_out_over_an_input_is_refused_but_state_itself_is_allowed(backend: str) -> None:
    seed = new_seed()
    ins = rwkv_inputs(1, 16, 1, 16, torch.float32, seed)
    bad = ins["k"].reshape(1, 1, 16, 16)
    with pytest.raises(ValueError, match=r"wkv7: state_out shares memory with k"):
        wkv7(*ins.values(), None, backend=backend, state_out=bad)
    s0 = random_state(1, 1, 16, seed)
    y_ref, st_ref = reference(ins, s0)
    y, st = wkv7(*ins.values(), s0, backend=backend, state_out=s0)
    assert st is s0
    assert_close("y", y, y_ref, TOL[torch.float32], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32], seed)


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ("w-fp64", "w"),
        ("b-fp16", "b"),
        ("v-meta", "v"),
        ("state-meta", "state"),
        ("state-int", "state"),
        ("out-shape", "out"),
        ("state_out-bf16", "state_out"),
        ("cu-float", "cu_seqlens"),
    ],
)
@pytest.mark.parametrize("backend", KERNELS)
def test_mismatched_arguments_name_the_argument(backend: str, change: str, names: str) -> None:
    ins = rwkv_inputs(1, 8, 1, 16, torch.float32, 0)
    kw: dict[str, object] = {}
    s0: torch.Tensor | None = None
    if change == "w-fp64":
        ins["w"] = ins["w"].double()
    elif change == "b-fp16":
        ins["b"] = ins["b"].half()
    elif change == "v-meta":
        ins["v"] = ins["v"].to("meta")
    elif change == "state-meta":
        s0 = torch.zeros(1, 1, 16, 16, device="meta")
    elif change == "state-int":
        s0 = torch.zeros(1, 1, 16, 16, dtype=torch.int32)
    elif change == "out-shape":
        kw["out"] = torch.zeros(1, 8, 1, 32)
    elif change == "state_out-bf16":
        kw["state_out"] = torch.zeros(1, 1, 16, 16, dtype=torch.bfloat16)
    else:
        kw["cu_seqlens"] = torch.tensor([0.0, 8.0])
    with pytest.raises(ValueError, match=rf"^wkv7: .*\b{names}\b"):
        wkv7(*ins.values(), s0, backend=backend, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------- fused ops: bad arguments

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


@pytest.mark.parametrize(
    ("x_dtype", "param_dtype", "message"),
    [
        (BF16, FP16, r"weight must be torch.bfloat16 \(or float32 for bf16/fp16 x\); got torch.float16"),
        (FP32, BF16, r"weight must be torch.float32 \(or float32 for bf16/fp16 x\); got torch.bfloat16"),
        (BF16, torch.int64, r"weight must be torch.bfloat16 .*; got torch.int64"),
        (torch.int32, FP32, r"x and dx must be floating point; got torch.int32"),
    ],
    ids=["bf16-fp16", "fp32-bf16", "bf16-int", "int-x"],
)
@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_add_layer_norm_refuses_mismatched_dtypes_alike(
    backend: str, x_dtype: torch.dtype, param_dtype: torch.dtype, message: str
) -> None:
    """The kernel upcast any weight silently while the reference raised PyTorch's RuntimeError
    ("mixed dtype (CPU)"): both now give the same ValueError naming the argument."""
    x = torch.randn(2, 1, 64).to(x_dtype)
    w = torch.ones(64, dtype=param_dtype)
    with pytest.raises(ValueError, match=rf"^add_layer_norm: {message}"):
        add_layer_norm(x, x.clone(), w, torch.zeros(64, dtype=param_dtype), 1e-5, backend=backend)


@pytest.mark.parametrize("backend", ["reference", "triton"])
@pytest.mark.parametrize(("x_dtype", "param_dtype"), [(BF16, FP32), (FP16, FP16), (FP32, FP32)], ids=str)
def test_add_layer_norm_takes_what_layer_norm_takes(
    backend: str, x_dtype: torch.dtype, param_dtype: torch.dtype
) -> None:
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    x, dx = (torch.randn(2, 1, 64, generator=gen).to(x_dtype) for _ in range(2))
    w, b = (torch.randn(64, generator=gen).to(param_dtype) for _ in range(2))
    s, y = add_layer_norm(x, dx, w, b, 1e-5, backend=backend)
    want = torch.nn.functional.layer_norm(s.double(), (64,), w.double(), b.double(), 1e-5)
    assert y.dtype == x_dtype
    assert_close("y", y, want, 1e-2, seed)


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_tm_output_refuses_y_of_another_dtype_alike(backend: str) -> None:
    """y fp32 with bf16 r: the kernel ran, the reference's group_norm raised a RuntimeError."""
    B, T, H, N = 1, 2, 2, 16
    r, k, v, g = (torch.randn(B, T, H * N).to(BF16) for _ in range(4))
    y = torch.randn(B, T, H * N)
    ln = torch.ones(H * N, dtype=BF16)
    with pytest.raises(ValueError, match=r"^tm_output: y \(the WKV7 output\) must have r's dtype torch.bfloat16"):
        tm_output(y, r, k, v, g, ln, ln, torch.ones(H, N, dtype=BF16), 1e-5, backend=backend)
    with pytest.raises(ValueError, match=r"^tm_output: ln_weight must be torch.bfloat16 .*; got torch.float16"):
        tm_output(y.to(BF16), r, k, v, g, ln.half(), ln, torch.ones(H, N, dtype=BF16), 1e-5, backend=backend)


# ------------------------------------------------------- norms of values whose squares overflow

F64 = torch.float64


def _big_rows(
    kind: str, shape: tuple[int, ...], scale: float, dtype: torch.dtype, gen: torch.Generator
) -> torch.Tensor:
    """Rows of magnitude ``scale``: random, constant, or alternating +-scale (every square at its
    largest), in ``dtype`` (values as stored are what the truth is computed from)."""
    if kind == "random":
        # clamped at 4 sigma: a draw beyond it would pass fp32/bf16 max at 3e38 and make the input itself inf
        x = torch.randn(*shape, generator=gen).clamp(-4, 4) * (scale / 4)
    elif kind == "constant":
        x = torch.full(shape, scale)
    else:
        x = torch.ones(*shape)
        x[..., 1::2] = -1
        x = x * scale
    return x.to(dtype)


SCALES = [1e15, 3e19, 1e30, 3.0e38]  # 1e15: just below the kernels' scaling threshold (2**50)
KINDS = ["random", "constant", "alternating"]


def _norm64(x: torch.Tensor, eps: float) -> torch.Tensor:
    """fp64 norm over the last dimension, centred first (PyTorch's own group_norm, even in fp64,
    loses a constant row of 1e15 to E[x^2] - E[x]^2 cancellation)."""
    x = x.to(F64)
    d = x - x.mean(-1, keepdim=True)
    d = d - d.mean(-1, keepdim=True)
    return d / (d.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def _check_big(name: str, got: torch.Tensor, truth: torch.Tensor, seed: int) -> None:
    assert torch.isfinite(got).all(), f"{name}: not finite (WKV7_TEST_SEED={seed})"
    tol = 1e-5 if got.dtype == FP32 else 1e-2
    assert_close(name, got, truth.to(F64), tol, seed)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy, in the interpreter
@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"{s:g}")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=["bf16", "fp32"])
def test_add_layer_norm_beyond_the_square_range(dtype: torch.dtype, kind: str, scale: float) -> None:
    """Squares in fp32 overflow above ~1.8e19 / sqrt(C): the kernel gave y = b (var = inf) or NaN.
    It now norms such a row in units of its largest value; a constant row gives exactly b."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    C = 1000
    x = _big_rows(kind, (3, 1, C), scale, dtype, gen)
    w = (1 + 0.3 * torch.randn(C, generator=gen)).to(dtype)
    b = (0.1 * torch.randn(C, generator=gen)).to(dtype)
    s, y = add_layer_norm(x, torch.zeros_like(x), w, b, 1e-5, backend="triton")
    assert torch.equal(s, x)
    truth = _norm64(x, 1e-5) * w.to(F64) + b.to(F64)
    _check_big("y", y, truth, seed)
    # the decode path: the same kernel with the next token mix after it
    shift = torch.randn(3, C, generator=gen).to(dtype)
    mu = torch.rand(C, generator=gen).to(dtype)
    _, mixed, new_shift = add_layer_norm_mix(x, torch.zeros_like(x), w, b, 1e-5, shift, [mu], backend="triton")
    _check_big("new shift", new_shift, truth[:, 0], seed)
    mix_truth = y.to(F64) + (shift.to(F64)[:, None] - y.to(F64)) * mu.to(F64)
    _check_big("mix", mixed[0], mix_truth, seed)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"{s:g}")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=["bf16", "fp32"])
def test_tm_output_group_norm_beyond_the_square_range(dtype: torch.dtype, kind: str, scale: float) -> None:
    """One head of huge values beside a head of ordinary ones (each head keeps its own unit)."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    B, T, H, N = 2, 1, 4, 64
    y = torch.randn(B, T, H, N, generator=gen)
    y[:, :, 1] = _big_rows(kind, (B, T, N), scale, FP32, gen)
    y = y.reshape(B, T, H * N).to(dtype)
    r, k, v = (torch.randn(B, T, H * N, generator=gen).to(dtype) for _ in range(3))
    g = torch.rand(B, T, H * N, generator=gen).to(dtype)
    ln_w, ln_b = (torch.randn(H * N, generator=gen).to(dtype) for _ in range(2))
    r_k = torch.randn(H, N, generator=gen).to(dtype)
    got = tm_output(y, r, k, v, g, ln_w, ln_b, r_k, 64e-5, backend="triton")
    y64, r64, k64, v64, g64 = (t.to(F64).reshape(B, T, H, N) for t in (y, r, k, v, g))
    normed = _norm64(y64, 64e-5).reshape(B, T, H * N) * ln_w.to(F64) + ln_b.to(F64)
    bonus = (r64 * k64 * r_k.to(F64)).sum(-1, keepdim=True) * v64
    truth = (normed + bonus.reshape(B, T, H * N)) * g64.reshape(B, T, H * N)
    _check_big("out", got, truth, seed)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"{s:g}")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=["bf16", "fp32"])
def test_tm_gates_key_norm_beyond_the_square_range(dtype: torch.dtype, kind: str, scale: float) -> None:
    """``kk = normalize(k * k_k)`` per head: a head of huge keys normalises like any other."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    B, T, H, N = 2, 1, 4, 64
    k = torch.randn(B, T, H, N, generator=gen)
    k[:, :, 2] = _big_rows(kind, (B, T, N), scale, FP32, gen)
    k = k.reshape(B, T, H * N).to(dtype)
    z = torch.zeros_like(k)
    zc = torch.zeros(H * N, dtype=dtype)
    k_k = torch.ones(H * N, dtype=dtype)
    got = tm_gates(k, z, z, z, zc, zc, k_k, zc, H, backend="triton")
    truth = tm_gates(*(t.to(F64) for t in (k, z, z, z, zc, zc, k_k, zc)), H, backend="reference")
    for name, a, want in zip(("-kk", "kk * a"), got[3:], truth[3:], strict=True):
        _check_big(name, a, want, seed)


# ------------------------------------------- the PyTorch references at the same huge values


def _huge_rows(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Values of magnitude 1e20 to 1e30 (log-uniform), random signs: every fp32 square overflows."""
    mag = 10 ** (20 + 10 * torch.rand(*shape, generator=gen, dtype=F64))
    return mag * torch.where(torch.rand(*shape, generator=gen) < 0.5, -1.0, 1.0).to(F64)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=["bf16", "fp32"])
def test_references_norm_huge_rows_as_the_kernels_do(dtype: torch.dtype) -> None:
    """The references of add_layer_norm, tm_output's GroupNorm and tm_gates' key norm summed fp32
    squares (F.layer_norm, F.group_norm, F.normalize) and gave y = b, NaN or 0 for rows of 1e20 to
    1e30, where the kernels are right: they now scale such rows as the kernels do, and the two
    agree with each other and with fp64 (one row or head of ordinary values beside the huge ones)."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    B, T, H, N = 2, 3, 3, 32
    C = H * N
    x = _huge_rows((B, T, C), gen)
    x[0, 0] = torch.randn(C, generator=gen, dtype=F64)
    x = x.to(dtype)
    w = (1 + 0.3 * torch.randn(C, generator=gen)).to(dtype)
    b = (0.1 * torch.randn(C, generator=gen)).to(dtype)
    truth = _norm64(x, 1e-5) * w.to(F64) + b.to(F64)
    outs = {be: add_layer_norm(x, torch.zeros_like(x), w, b, 1e-5, backend=be)[1] for be in ("reference", "triton")}
    for be, y in outs.items():
        _check_big(f"add_layer_norm ({be})", y, truth, seed)
    _check_big("add_layer_norm: reference vs kernel", outs["reference"], outs["triton"].to(F64), seed)

    y = _huge_rows((B, T, H, N), gen)
    y[:, :, 1] = torch.randn(B, T, N, generator=gen, dtype=F64)  # a head of ordinary values
    y = y.reshape(B, T, C).to(dtype)
    r, k, v = (torch.randn(B, T, C, generator=gen).to(dtype) for _ in range(3))
    g = torch.rand(B, T, C, generator=gen).to(dtype)
    r_k = torch.randn(H, N, generator=gen).to(dtype)
    y64, r64, k64, v64 = (t.to(F64).reshape(B, T, H, N) for t in (y, r, k, v))
    normed = _norm64(y64, 64e-5).reshape(B, T, C) * w.to(F64) + b.to(F64)
    bonus = ((r64 * k64 * r_k.to(F64)).sum(-1, keepdim=True) * v64).reshape(B, T, C)
    truth = (normed + bonus) * g.to(F64)
    outs = {be: tm_output(y, r, k, v, g, w, b, r_k, 64e-5, backend=be) for be in ("reference", "triton")}
    for be, out in outs.items():
        _check_big(f"tm_output ({be})", out, truth, seed)
    _check_big("tm_output: reference vs kernel", outs["reference"], outs["triton"].to(F64), seed)

    k = _huge_rows((B, T, H, N), gen)
    k[:, :, 2] = torch.randn(B, T, N, generator=gen, dtype=F64)
    k = k.reshape(B, T, C).to(dtype)
    z, zc, ones = torch.zeros_like(k), torch.zeros(C, dtype=dtype), torch.ones(C, dtype=dtype)
    k64 = k.to(F64).reshape(B, T, H, N)
    kk = (k64 / k64.pow(2).sum(-1, keepdim=True).sqrt()).reshape(B, T, C)
    outs = {be: tm_gates(k, z, z, z, zc, zc, ones, zc, H, backend=be) for be in ("reference", "triton")}
    for be, got in outs.items():
        _check_big(f"tm_gates -kk ({be})", got[3], -kk, seed)
        _check_big(f"tm_gates kk * a ({be})", got[4], kk * 0.5, seed)  # a = sigmoid(0)
    _check_big("tm_gates: reference vs kernel", outs["reference"][3], outs["triton"][3].to(F64), seed)


@pytest.mark.parametrize("dtype", [BF16, FP32, F64], ids=["bf16", "fp32", "fp64"])
def test_references_are_unchanged_below_the_kernels_threshold(dtype: torch.dtype) -> None:
    """Below 2^50 the references' unit is exactly 1: bit for bit PyTorch's own norms (the model's
    arithmetic on the CPU does not move), rows of 1e14 included."""
    import torch.nn.functional as F

    from rwkv_registry.kernels.add_norm import add_layer_norm_ref
    from rwkv_registry.kernels.timemix.reference import tm_gates_ref, tm_output_ref

    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    B, T, H, N = 2, 3, 2, 16
    C = H * N
    x = torch.randn(B, T, C, generator=gen, dtype=F64)
    x[1, 2] *= 1e14  # up to ~5e14, below 2^50 = 1.1e15
    x = x.to(dtype)
    w, b = (torch.randn(C, generator=gen).to(dtype) for _ in range(2))
    assert torch.equal(add_layer_norm_ref(x, torch.zeros_like(x), w, b, 1e-5)[1], F.layer_norm(x, (C,), w, b, 1e-5))
    ones, zeros = torch.ones(H, N, dtype=dtype), torch.zeros(B, T, C, dtype=dtype)
    want = F.group_norm(x.reshape(B * T, C), H, w, b, 64e-5).view(B, T, C)
    assert torch.equal(tm_output_ref(x, zeros, zeros, zeros, zeros + 1, w, b, ones, 64e-5), want)
    zc = torch.zeros(C, dtype=dtype)
    kk = F.normalize(x.view(B, T, H, N), dim=-1).view(B, T, C)
    assert torch.equal(tm_gates_ref(x, zeros, zeros, zeros, zc, zc, zc + 1, zc, H)[3], -kk)


def test_references_at_huge_rows_keep_finite_gradients() -> None:
    """The references run with gradients (training): the unit is detached, so a huge row gives
    the norm's gradient (fp64's, where no square overflows), and an ordinary row exactly the plain
    gradient."""
    import torch.nn.functional as F

    from rwkv_registry.kernels.add_norm import add_layer_norm_ref

    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    C = 24
    x = torch.randn(2, 1, C, generator=gen)
    x[1] *= 1e25
    x.requires_grad_(True)
    w, b = torch.randn(C, generator=gen), torch.randn(C, generator=gen)
    gy = torch.randn(2, 1, C, generator=gen)
    (grad,) = torch.autograd.grad((add_layer_norm_ref(x, torch.zeros_like(x), w, b, 1e-5)[1] * gy).sum(), x)
    x64 = x.detach().double().requires_grad_(True)
    (grad64,) = torch.autograd.grad((F.layer_norm(x64, (C,), w.double(), b.double(), 1e-5) * gy).sum(), x64)
    assert torch.isfinite(grad).all()
    assert_close("gradient of the huge row", grad[1], grad64[1], 1e-5, seed)
    plain = x.detach()[:1].clone().requires_grad_(True)
    (want,) = torch.autograd.grad((F.layer_norm(plain, (C,), w, b, 1e-5) * gy[:1]).sum(), plain)
    assert torch.equal(grad[:1], want)


@pytest.mark.parametrize("dtype", [BF16, FP32, F64], ids=["bf16", "fp32", "fp64"])
def test_norm_units_without_a_branch_as_on_cuda_and_under_compile(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CUDA and under torch.compile the units take no branch on the data (the CPU's shortcut
    reads a maximum back): ordinary rows times exactly 1, each huge row by a power of two that
    brings its largest |value| to [2^49, 2^51)."""
    from rwkv_registry.kernels.norm_units import in_norm_units

    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 40, generator=gen, dtype=F64)
    x[1] *= 1e14  # below 2^50
    x[2] = _huge_rows((40,), gen)
    x[3] *= 1e37
    x = x.to(dtype)
    got = in_norm_units(x)
    assert torch.equal(got[:2], x[:2])
    top = got[2:].abs().amax(-1).to(F64)
    assert ((top >= 2.0**49) & (top < 2.0**51)).all(), top
    factor = got[2:].to(F64) / x[2:].to(F64)
    assert torch.equal(factor, factor[:, :1].expand_as(factor))  # one exact factor per row
    assert torch.equal(torch.frexp(factor)[0], torch.full_like(factor, 0.5))  # a power of two


@pytest.mark.parametrize("compiling", [False, True], ids=["cpu-shortcut", "no-branch"])
def test_the_units_are_per_slice_along_dim(compiling: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """N03: ``dim`` picks the slices: along dim 0 only the column holding huge values is scaled, by a power of two
    that brings its largest |value| to [2^49, 2^51); the ordinary columns are unchanged (times exactly 1)."""
    if compiling:
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(40, 4, generator=gen, dtype=F64)
    x[:, 2] *= 1e25
    got = in_norm_units(x, dim=0)
    assert torch.equal(got[:, [0, 1, 3]], x[:, [0, 1, 3]])
    top = float(got[:, 2].abs().max())
    assert 2.0**49 <= top < 2.0**51
    factor = got[:, 2] / x[:, 2]
    assert torch.equal(factor, factor[:1].expand_as(factor))
    assert float(torch.frexp(factor[:1])[0]) == 0.5  # a power of two
