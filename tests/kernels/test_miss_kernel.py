"""The MiSS on-the-fly term's Triton kernel (one segment, ``miss_term_``, and up to three in one
launch, ``miss_terms_``) against its PyTorch reference, through Triton's interpreter on the CPU:
fresh random inputs every run (the seed is in every failure message), an fp64 truth, the dispatch
rules of ``backend`` and the argument checks. The squared ReLU: test_relu_square.py."""

from __future__ import annotations

import os

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, FUSED_TOL, check_vs_truth, compile_for_sm90, new_seed, rel_rms, spy_paths

pytest.importorskip("triton")

from rwkv_registry.kernels.launches import count_launches
from rwkv_registry.kernels.miss import TUNING, miss_term_, miss_term_ref, miss_terms_, miss_terms_ref
from rwkv_registry.kernels.miss import launch as miss_launch

# (leading shape of x and out, K, O, r, dtype)
CASES = [
    ((1,), 64, 32, 8, torch.float32),  # one decode row, K a multiple of r
    ((5,), 300, 200, 7, torch.float32),  # K % r != 0: a partial last block
    ((5,), 37, 20, 1, torch.float32),  # r = 1: S is the row sum
    ((3,), 10, 24, 16, torch.float32),  # r > K: S is x zero padded
    ((2,), 260, 70, 130, torch.float32),  # r above block_r: three rank steps
    ((2, 3), 128, 96, 4, torch.float32),  # a 3-D x [B, T, K]
    ((4,), 256, 130, 64, torch.bfloat16),
    ((1,), 299, 160, 32, torch.bfloat16),
    ((2, 2), 100, 60, 12, torch.float16),
]


def case_id(c: tuple[tuple[int, ...], int, int, int, torch.dtype]) -> str:
    lead, K, n_out, r, dtype = c
    return f"{'x'.join(map(str, lead))}-K{K}-O{n_out}-r{r}-{DTYPE_NAMES[dtype]}"


def inputs(
    lead: tuple[int, ...], K: int, n_out: int, r: int, dtype: torch.dtype, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(base out, x, D)``: D scaled so that the term and the base output are of one magnitude."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(*lead, n_out, generator=gen).to(dtype)
    x = torch.randn(*lead, K, generator=gen).to(dtype)
    D = (torch.randn(n_out, r, generator=gen) * (r / max(K, 1)) ** 0.5).to(dtype)
    return base, x, D


def truth(base: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """fp64 on the very values the kernel sees, with P written out (independent of the code under test)."""
    K, r = x.shape[-1], D.shape[1]
    P = torch.zeros(r, K, dtype=torch.float64)
    P[torch.arange(K) % r, torch.arange(K)] = 1.0
    return base.double() + scale * (x.double() @ P.t()) @ D.double().t()


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_kernel_matches_reference(case: tuple[tuple[int, ...], int, int, int, torch.dtype]) -> None:
    lead, K, n_out, r, dtype = case
    seed = new_seed()
    base, x, D = inputs(lead, K, n_out, r, dtype, seed)
    scale = 0.75
    out = base.clone()
    with torch.no_grad():
        assert miss_term_(out, x, D, scale, backend="triton") is out  # in place
        ref = miss_term_ref(base.clone(), x, D, scale)
    assert out.dtype == dtype and out.shape == base.shape
    if dtype == torch.float32:
        err = rel_rms(out, ref)
        assert err <= 1e-5, f"rel. RMS {err:.3g} vs the reference > 1e-5 (replay with WKV7_TEST_SEED={seed})"
        return
    exact = truth(base, x, D, scale)
    err, ref_err = rel_rms(out, exact), rel_rms(ref, exact)
    assert err <= FUSED_TOL[dtype], f"rel. RMS {err:.3g} > {FUSED_TOL[dtype]:g} (replay with WKV7_TEST_SEED={seed})"
    assert err <= 1.5 * ref_err + 1e-4, f"{err:.3g} vs the reference's {ref_err:.3g} (WKV7_TEST_SEED={seed})"


def test_many_blocks_of_every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small tiles: five output blocks (the last partial), three rank steps (the last partial) and
    several x steps per rank step; every output element gets its term exactly once."""
    monkeypatch.setitem(TUNING, "block_o", 16)
    monkeypatch.setitem(TUNING, "block_r", 4)
    monkeypatch.setitem(TUNING, "block_x", 16)
    seed = new_seed()
    base, x, D = inputs((3,), 97, 70, 10, torch.float32, seed)
    out = miss_term_(base.clone(), x, D, -1.25, backend="triton")
    err = rel_rms(out, truth(base, x, D, -1.25))
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_non_contiguous_x_and_D() -> None:
    seed = new_seed()
    base, x, D = inputs((2, 3), 50, 40, 6, torch.float32, seed)
    x_t = x.transpose(0, 1).contiguous().transpose(0, 1)  # [2, 3, 50], not contiguous
    D_t = D.t().contiguous().t()
    assert not x_t.is_contiguous() and not D_t.is_contiguous()
    out = miss_term_(base.clone(), x_t, D_t, 0.5, backend="triton")
    err = rel_rms(out, truth(base, x, D, 0.5))
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_nan_in_x_reaches_only_its_row() -> None:
    seed = new_seed()
    base, x, D = inputs((5,), 45, 30, 4, torch.float32, seed)
    x[2, 17] = float("nan")
    out = miss_term_(base.clone(), x, D, 0.5, backend="triton")
    assert torch.isnan(out[2]).all(), f"seed {seed}"
    others = [0, 1, 3, 4]
    assert torch.isfinite(out[others]).all(), f"seed {seed}"
    err = rel_rms(out[others], truth(base, x, D, 0.5)[others])
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_fp64_goes_to_the_reference() -> None:
    base, x, D = inputs((2,), 20, 8, 3, torch.float64, new_seed())
    got = miss_term_(base.clone(), x, D, 0.5, backend="triton")
    assert torch.equal(got, miss_term_ref(base.clone(), x, D, 0.5))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which path each call took: "kernel" (a Triton launch) or "reference"."""
    return spy_paths(monkeypatch, miss_launch, "miss_terms_ref")


def test_auto_sends_decode_rows_to_the_kernel_and_more_to_the_reference(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = new_seed()
    base, x, D = inputs((6,), 40, 24, 4, torch.float32, seed)
    want = truth(base, x, D, 0.5)
    miss_term_(base.clone(), x, D, 0.5)  # a plain CPU: the reference
    assert calls == ["reference"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(TUNING, "max_rows", 6)
    for expected, backend, rows in (
        ("kernel", "auto", 6),
        ("kernel", "auto", 1),
        ("reference", "auto", 7),  # above max_rows: cuBLAS's job
        ("kernel", "triton", 7),  # forced: any number of rows
        ("reference", "reference", 1),
    ):
        calls.clear()
        b, xs = (base, x) if rows <= 6 else (torch.cat((base, base[:1])), torch.cat((x, x[:1])))
        w = want if rows <= 6 else torch.cat((want, want[:1]))
        out = miss_term_(b[:rows].clone(), xs[:rows], D, 0.5, backend=backend)
        assert calls == [expected], (backend, rows)
        assert rel_rms(out, w[:rows]) <= 1e-5, f"{backend} rows={rows} (replay with WKV7_TEST_SEED={seed})"


def test_grad_takes_the_reference_and_triton_refuses(calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seed = new_seed()
    base, x, D = inputs((3,), 30, 12, 4, torch.float32, seed)
    x.requires_grad_(True)
    D.requires_grad_(True)
    out = miss_term_(base.clone(), x, D, 0.5)
    assert calls == ["reference"]
    out.pow(2).sum().backward()
    x64, D64 = x.detach().double().requires_grad_(True), D.detach().double().requires_grad_(True)
    truth(base, x64, D64, 0.5).pow(2).sum().backward()
    assert rel_rms(x.grad, x64.grad) <= 1e-5 and rel_rms(D.grad, D64.grad) <= 1e-5, f"seed {seed}"
    with pytest.raises(ValueError, match="forward-only"):
        miss_term_(base.clone(), x, D, 0.5, backend="triton")
    w = torch.randn(12, 12, requires_grad=True)  # out from a base map being trained: also refused
    with pytest.raises(ValueError, match="forward-only"):
        miss_term_(base @ w, x.detach(), D.detach(), 0.5, backend="triton")
    calls.clear()
    with torch.no_grad():  # no grad wanted: the kernel runs
        miss_term_(base.clone(), x, D, 0.5)
    assert calls == ["kernel"]


def _bad(**over: object) -> dict[str, object]:
    args: dict[str, object] = {"out": torch.zeros(3, 8), "x": torch.randn(3, 10), "D": torch.randn(8, 4), "scale": 0.5}
    args.update(over)
    return args


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (_bad(D=torch.randn(8)), r"D must be \[out_features, rank\].*D=\[8\]"),
        (_bad(D=torch.randn(8, 0)), r"rank >= 1"),
        (_bad(D=torch.randn(9, 4)), r"out's last dimension must be D.shape\[0\] = 9.*out=\[3, 8\]"),
        (_bad(x=torch.randn(4, 10)), r"leading dimensions.*x=\[4, 10\]"),
        (_bad(x=torch.randn(1, 3, 10)), r"leading dimensions"),
        (_bad(x=torch.randn(3, 10, dtype=torch.float64)), r"one floating dtype.*x torch.float64"),
        (_bad(D=torch.randn(8, 4, dtype=torch.bfloat16)), r"one floating dtype.*D torch.bfloat16"),
        (_bad(out=torch.zeros(8, 3).t()), r"out must be contiguous.*out=\[3, 8\]"),
        (_bad(x=[[0.0] * 10] * 3), r"x must be a torch.Tensor, got list"),
        (_bad(scale=torch.tensor(0.5)), r"scale must be a Python number"),
    ],
    ids=["D-1d", "rank-0", "D-rows", "x-rows", "x-dims", "x-dtype", "D-dtype", "out-strided", "x-list", "scale"],
)
@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_bad_arguments_are_value_errors(args: dict[str, object], match: str, backend: str) -> None:
    with pytest.raises(ValueError, match=match):
        miss_term_(**args, backend=backend)  # type: ignore[arg-type]


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown backend 'cuda'; use one of auto, reference, triton"):
        miss_term_(torch.zeros(2, 4), torch.randn(2, 6), torch.randn(4, 2), 1.0, backend="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("rows", [1, 64])
@pytest.mark.parametrize("K", [4096, 16384])
@torch.no_grad()
def test_7b_shape_on_cuda(K: int, rows: int) -> None:
    """The compiled kernel ("auto" on CUDA) at the 7.2B shapes (width 4096, FFN 16384), r = 64, bf16:
    within bf16's tolerance of the fp64 truth and no further from it than the cuBLAS reference."""
    seed = new_seed()
    base, x, D = (t.cuda() for t in inputs((rows,), K, 4096, 64, torch.bfloat16, seed))
    out = base.clone()
    assert miss_term_(out, x, D, 0.5) is out
    ref = miss_term_ref(base.clone(), x, D, 0.5)
    exact = truth(base.cpu(), x.cpu(), D.cpu(), 0.5)
    err, ref_err = rel_rms(out.cpu(), exact), rel_rms(ref.cpu(), exact)
    assert err <= FUSED_TOL[torch.bfloat16], f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
    assert err <= 1.5 * ref_err + 1e-4, f"{err:.3g} vs cuBLAS's {ref_err:.3g} (WKV7_TEST_SEED={seed})"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("rows", [1, 64])
@torch.no_grad()
def test_7b_three_segments_on_cuda(rows: int) -> None:
    """A 7.2B layer's receptance, key and value terms (C = 4096, r = 64, bf16) in one compiled launch."""
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(4096, 4096, 64)] * 3, (rows,), torch.bfloat16, seed)
    bases, xs, Ds = ([t.cuda() for t in ts] for ts in (bases, xs, Ds))
    got = miss_terms_([b.clone() for b in bases], xs, Ds, scales)
    refs = miss_terms_ref([b.clone() for b in bases], xs, Ds, scales)
    for i, (g, b, x, D, s, ref) in enumerate(zip(got, bases, xs, Ds, scales, refs, strict=True)):
        check_vs_truth(f"segment {i}", g.cpu(), truth(b.cpu(), x.cpu(), D.cpu(), s), ref.cpu(), seed)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy, in the interpreter
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=DTYPE_NAMES.get)
def test_stores_round_to_nearest_even(dtype: torch.dtype) -> None:
    """The sum is rounded once, to nearest even as on a GPU (on the CPU too: Triton's interpreter
    truncates fp32 -> bf16 unless ``kernels._triton`` fixes its cast): ties, near-ties, overflow."""
    big = torch.finfo(dtype).max
    base = torch.tensor([[1.0, 1.0, 1.0, 1.0, -1.0, big, 2.0]]).to(dtype)
    ulp = torch.finfo(dtype).eps  # at 1.0
    terms = torch.tensor([ulp / 2, 3 * ulp / 2, ulp / 2 + ulp / 16, -ulp / 4, -ulp / 2, big, float("inf")])
    D = terms.to(dtype)[:, None]  # x = [[1]], r = 1: the term is D itself
    x = torch.ones(1, 1, dtype=dtype)
    out = miss_term_(base.clone(), x, D, 1.0, backend="triton")
    want = (base.double() + D.double().t()).float().to(dtype)  # torch rounds to nearest even
    assert torch.equal(out, want), (out.tolist(), want.tolist())


# ------------------------------------------------------------------ several segments, one launch

# (segments [(K, O, r)], leading shape, dtype)
GROUP_CASES = [
    ([(64, 32, 8)], (1,), torch.float32),
    ([(300, 200, 7), (37, 20, 1)], (5,), torch.float32),  # K % r != 0; r = 1
    ([(300, 200, 7), (10, 24, 16), (260, 70, 130)], (5,), torch.float32),  # r > K; r > block_r
    ([(96, 40, 8), (50, 100, 12), (33, 64, 40)], (2, 3), torch.float32),  # x [B, T, K]
    ([(128, 96, 4), (100, 60, 12), (40, 130, 64)], (1,), torch.bfloat16),
    ([(256, 64, 16), (256, 64, 16), (256, 64, 16)], (5,), torch.bfloat16),  # a layer's r, k, v
    ([(100, 60, 12), (75, 33, 9)], (2, 2), torch.float16),
]


def group_id(c: tuple[list[tuple[int, int, int]], tuple[int, ...], torch.dtype]) -> str:
    segs, lead, dtype = c
    return "+".join(f"K{k}O{o}r{r}" for k, o, r in segs) + f"-{'x'.join(map(str, lead))}-{DTYPE_NAMES[dtype]}"


def group_inputs(
    segs: list[tuple[int, int, int]], lead: tuple[int, ...], dtype: torch.dtype, seed: int
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[float]]:
    """``(outs, xs, Ds, scales)``: outs random (the kernel reads and adds to them)."""
    per_seg = [inputs(lead, K, n_out, r, dtype, seed + i) for i, (K, n_out, r) in enumerate(segs)]
    scales = [0.75, -1.5, 0.25][: len(segs)]
    return [b for b, _, _ in per_seg], [x for _, x, _ in per_seg], [D for _, _, D in per_seg], scales


@pytest.mark.parametrize("case", GROUP_CASES, ids=[group_id(c) for c in GROUP_CASES])
def test_segments_match_the_truth(case: tuple[list[tuple[int, int, int]], tuple[int, ...], torch.dtype]) -> None:
    segs, lead, dtype = case
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs(segs, lead, dtype, seed)
    outs = [b.clone() for b in bases]
    with torch.no_grad():
        got = miss_terms_(outs, xs, Ds, scales, backend="triton")
        refs = miss_terms_ref([b.clone() for b in bases], xs, Ds, scales)
    assert len(got) == len(segs) and all(g is o for g, o in zip(got, outs, strict=True))  # in place
    for i, (g, b, x, D, s, ref) in enumerate(zip(got, bases, xs, Ds, scales, refs, strict=True)):
        assert g.dtype == dtype and g.shape == b.shape
        check_vs_truth(f"segment {i}", g, truth(b, x, D, s), ref, seed)


def test_segments_with_small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several output blocks per segment (the last partial) and several rank and x steps: the
    program-to-segment lookup gives every output element its term exactly once."""
    monkeypatch.setitem(TUNING, "block_o", 16)
    monkeypatch.setitem(TUNING, "block_r", 4)
    monkeypatch.setitem(TUNING, "block_x", 16)
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(97, 70, 10), (20, 16, 3), (45, 33, 6)], (3,), torch.float32, seed)
    got = miss_terms_([b.clone() for b in bases], xs, Ds, scales, backend="triton")
    for i, (g, b, x, D, s) in enumerate(zip(got, bases, xs, Ds, scales, strict=True)):
        err = rel_rms(g, truth(b, x, D, s))
        assert err <= 1e-5, f"segment {i}: rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_segments_read_strided_x() -> None:
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(50, 40, 6), (30, 20, 4)], (2, 3), torch.float32, seed)
    strided = [x.transpose(0, 1).contiguous().transpose(0, 1) for x in xs]  # [2, 3, K], not contiguous
    wide = torch.randn(6, 80)[:, 10:40].view(2, 3, 30)  # rows 80 apart: a view, no copy
    wide.copy_(xs[1])
    for x_in in ([strided[0], strided[1]], [xs[0], wide]):
        got = miss_terms_([b.clone() for b in bases], x_in, Ds, scales, backend="triton")
        for i, (g, b, x, D, s) in enumerate(zip(got, bases, xs, Ds, scales, strict=True)):
            err = rel_rms(g, truth(b, x, D, s))
            assert err <= 1e-5, f"segment {i}: rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_nan_stays_in_its_segment_and_row() -> None:
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(45, 30, 4), (40, 20, 7), (12, 18, 16)], (5,), torch.float32, seed)
    xs[1][2, 17] = float("nan")
    got = miss_terms_([b.clone() for b in bases], xs, Ds, scales, backend="triton")
    assert torch.isnan(got[1][2]).all(), f"seed {seed}"
    others = [0, 1, 3, 4]
    assert torch.isfinite(got[1][others]).all() and torch.isfinite(got[0]).all() and torch.isfinite(got[2]).all()
    for i, rows in ((0, slice(None)), (1, others), (2, slice(None))):
        want = truth(bases[i], xs[i], Ds[i], scales[i])[rows]
        err = rel_rms(got[i][rows], want)
        assert err <= 1e-5, f"segment {i}: rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


@pytest.mark.parametrize("n_seg", [1, 3])
def test_one_launch_for_all_segments(n_seg: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly one kernel and nothing else (no copy, no PyTorch op) for up to 3 segments, by "auto"."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(64, 64, 8)] * n_seg, (2,), torch.bfloat16, seed)
    outs = [b.clone() for b in bases]
    counts = count_launches(lambda: miss_terms_(outs, xs, Ds, scales))
    assert dict(counts) == {"triton:miss_term_kernel": 1}, f"{dict(counts)} (WKV7_TEST_SEED={seed})"
    counts = count_launches(lambda: miss_term_(outs[0], xs[0], Ds[0], 0.5))
    assert dict(counts) == {"triton:miss_term_kernel": 1}


def test_segments_auto_rule(calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    seed = new_seed()
    bases, xs, Ds, scales = group_inputs([(40, 24, 4), (30, 16, 5)], (7,), torch.float32, seed)
    wants = [truth(b, x, D, s) for b, x, D, s in zip(bases, xs, Ds, scales, strict=True)]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(TUNING, "max_rows", 6)
    for expected, backend, rows in (
        ("kernel", "auto", 6),
        ("reference", "auto", 7),  # above max_rows: cuBLAS's job
        ("kernel", "triton", 7),
        ("reference", "reference", 2),
    ):
        calls.clear()
        got = miss_terms_([b[:rows].clone() for b in bases], [x[:rows] for x in xs], Ds, scales, backend=backend)
        assert calls == [expected], (backend, rows)
        for g, w in zip(got, wants, strict=True):
            assert rel_rms(g, w[:rows]) <= 1e-5, f"{backend} rows={rows} (replay with WKV7_TEST_SEED={seed})"
    calls.clear()
    x_grad = xs[0].clone().requires_grad_(True)
    miss_terms_([b.clone() for b in bases], [x_grad, xs[1]], Ds, scales)
    assert calls == ["reference"]
    with pytest.raises(ValueError, match="forward-only"):
        miss_terms_([b.clone() for b in bases], [x_grad, xs[1]], Ds, scales, backend="triton")


def test_segments_with_no_rows_or_outputs() -> None:
    x, D = torch.randn(0, 10), torch.randn(8, 4)
    out = torch.zeros(0, 8)
    assert miss_terms_([out], [x], [D], [1.0], backend="triton")[0] is out
    outs = [torch.zeros(2, 0), torch.zeros(2, 5)]
    xs, Ds = [torch.randn(2, 7), torch.randn(2, 9)], [torch.randn(0, 3), torch.randn(5, 2)]
    got = miss_terms_(outs, xs, Ds, [1.0, 1.0], backend="triton")
    assert got[0].shape == (2, 0) and rel_rms(got[1], truth(torch.zeros(2, 5), xs[1], Ds[1], 1.0)) <= 1e-6


_SHARED = torch.zeros(4, 8)  # two overlapping [3, 8] views of it


def _group(n: int = 2, **over: object) -> dict[str, object]:
    args: dict[str, object] = {
        "outs": [torch.zeros(3, 8) for _ in range(n)],
        "xs": [torch.randn(3, 10) for _ in range(n)],
        "Ds": [torch.randn(8, 4) for _ in range(n)],
        "scales": [0.5] * n,
    }
    args.update(over)
    return args


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (_group(0), r"1 to 3 segments, got 0"),
        (_group(4), r"1 to 3 segments, got 4"),
        (_group(xs=[torch.randn(3, 10)]), r"one x, D and scale per out; got 2 outs, 1 xs, 2 Ds, 2 scales"),
        (_group(scales=[0.5] * 3), r"got 2 outs, 2 xs, 2 Ds, 3 scales"),
        (_group(outs=torch.zeros(2, 3, 8)), r"outs must be a sequence"),
        (_group(scales=0.5), r"scales must be a sequence"),
        (
            _group(outs=[torch.zeros(3, 8), torch.zeros(4, 8)], xs=[torch.randn(3, 10), torch.randn(4, 10)]),
            r"share their leading dimensions.*outs\[1\]=\[4, 8\]",
        ),
        (
            _group(
                outs=[torch.zeros(3, 8), torch.zeros(3, 8, dtype=torch.float16)],
                xs=[torch.randn(3, 10), torch.randn(3, 10, dtype=torch.float16)],
                Ds=[torch.randn(8, 4), torch.randn(8, 4, dtype=torch.float16)],
            ),
            r"share one dtype.*outs\[1\]=\[3, 8\] torch.float16",
        ),
        (_group(xs=[torch.randn(3, 10), torch.randn(2, 10)]), r"xs\[1\] \[..., K\] and outs\[1\] \[..., O\]"),
        (_group(Ds=[torch.randn(8, 4), torch.randn(9, 4)]), r"outs\[1\]'s last dimension must be Ds\[1\].shape"),
        (_group(xs=[torch.randn(3, 10), torch.randn(3, 10).double()]), r"one floating dtype.*xs\[1\] torch.float64"),
        (_group(scales=[0.5, torch.tensor(1.0)]), r"scales\[1\] must be a Python number"),
        (_group(outs=[torch.zeros(3, 8), torch.zeros(8, 3).t()]), r"outs\[1\] must be contiguous"),
        (_group(outs=[_SHARED[:3], _SHARED[1:]]), r"outs\[0\] and outs\[1\] overlap in memory"),
    ],
    ids=[
        "0-segments",
        "4-segments",
        "xs-short",
        "scales-long",
        "outs-tensor",
        "scales-number",
        "lead",
        "dtype",
        "x-rows",
        "D-rows",
        "x-dtype",
        "scale-tensor",
        "out-strided",
        "outs-overlap",
    ],
)
@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_bad_segments_are_value_errors(args: dict[str, object], match: str, backend: str) -> None:
    with pytest.raises(ValueError, match=match):
        miss_terms_(**args, backend=backend)  # type: ignore[arg-type]


def miss_term_signature(dtype: str) -> dict[str, str]:
    """``miss_term_kernel``'s runtime parameters, in order (3 segments' pointers, then the scalars)."""
    sig = {f"{p}{i}_ptr": f"*{dtype}" for p in ("x", "d", "out") for i in range(3)}
    sig |= {f"{p}{i}": "i32" for p in ("K", "N", "R", "SX") for i in range(3)}
    return sig | {f"scale{i}": "fp32" for i in range(3)} | {"B1": "i32", "B2": "i32"}


@pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 makes every kernel interpreted"
)
@pytest.mark.parametrize(
    ("dtype", "n_seg", "block_r", "block_n"),
    [("bf16", 3, 64, 64), ("fp16", 3, 64, 64), ("fp32", 3, 64, 64), ("bf16", 1, 64, 64), ("bf16", 2, 1, 4096)],
    ids=["bf16", "fp16", "fp32", "bf16-1seg", "bf16-2seg-r1"],
)
def test_kernel_compiles_for_sm90(dtype: str, n_seg: int, block_r: int, block_n: int) -> None:
    """Triton's front end, passes and bundled ptxas on the CPU: a kernel only the interpreter accepts fails."""
    kernel = miss_launch._kernels(False).miss_term_kernel
    signature = miss_term_signature(dtype)
    constants = {"N_SEG": n_seg, "BLOCK_O": TUNING["block_o"], "BLOCK_R": block_r, "BLOCK_N": block_n}
    assert [*signature, *constants] == list(kernel.arg_names), "the kernel's parameters changed: update this test"
    compiled = compile_for_sm90(kernel, signature, constants, TUNING["num_warps"])
    assert compiled.asm["cubin"]  # type: ignore[attr-defined]
