"""The MiSS on-the-fly term's Triton kernel against its PyTorch reference, through Triton's
interpreter on the CPU: fresh random inputs every run (the seed is in every failure message), an
fp64 truth, the dispatch rules of ``backend`` and the argument checks."""

from __future__ import annotations

import os

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, new_seed, rel_rms

pytest.importorskip("triton")

from rwkv_registry.kernels.miss import TUNING, miss_term_, miss_term_ref
from rwkv_registry.kernels.miss import launch as miss_launch

# relative RMS error allowed against the fp64 truth, per dtype (the kernel rounds once, at the store)
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}

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
    assert err <= TOL[dtype], f"rel. RMS {err:.3g} > {TOL[dtype]:g} (replay with WKV7_TEST_SEED={seed})"
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
    seen: list[str] = []
    real_kernels, real_ref = miss_launch._kernels, miss_launch.miss_term_ref

    def kernels(interpret: bool) -> object:
        seen.append("kernel")
        return real_kernels(interpret)

    def ref(*args: object) -> torch.Tensor:
        seen.append("reference")
        return real_ref(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(miss_launch, "_kernels", kernels)
    monkeypatch.setattr(miss_launch, "miss_term_ref", ref)
    return seen


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
    assert err <= TOL[torch.bfloat16], f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
    assert err <= 1.5 * ref_err + 1e-4, f"{err:.3g} vs cuBLAS's {ref_err:.3g} (WKV7_TEST_SEED={seed})"


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


@pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 makes every kernel interpreted"
)
@pytest.mark.parametrize(
    ("dtype", "block_r", "block_n"),
    [("bf16", 64, 64), ("fp16", 64, 64), ("fp32", 64, 64), ("bf16", 1, 4096)],
    ids=["bf16", "fp16", "fp32", "bf16-r1"],
)
def test_kernel_compiles_for_sm90(dtype: str, block_r: int, block_n: int) -> None:
    """Triton's front end, passes and bundled ptxas on the CPU: a kernel only the interpreter accepts fails."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = miss_launch._kernels(False).miss_term_kernel
    signature = {"x_ptr": f"*{dtype}", "d_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "K": "i32", "N_OUT": "i32"}
    signature.update({"R": "i32", "scale": "fp32", "BLOCK_O": "constexpr", "BLOCK_R": "constexpr"})
    signature["BLOCK_N"] = "constexpr"
    assert list(signature) == list(kernel.arg_names), "the kernel's parameters changed: update this test"
    constants = {"BLOCK_O": TUNING["block_o"], "BLOCK_R": block_r, "BLOCK_N": block_n}
    try:
        compiled = triton.compile(
            ASTSource(kernel, signature, constants),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": TUNING["num_warps"]},
        )
    except (RuntimeError, FileNotFoundError) as exc:  # no ptxas for this platform
        if "ptxas" in str(exc):
            pytest.skip(f"Triton cannot assemble for sm_90 here: {exc}")
        raise
    assert compiled.asm["cubin"]
