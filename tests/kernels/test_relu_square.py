"""The squared ReLU kernel, ``h = relu(h + scale * S(x) @ D^T) ** 2`` (a MiSS term first) or
``h = relu(h) ** 2``, against an fp64 truth and the PyTorch reference, through Triton's interpreter
on the CPU: fresh random inputs every run (the seed is in every failure message), in place, NaN
kept where it arises, the grad path, the dispatch rules of ``backend``, the argument checks and
offline sm_90 compiles of every kernel in ``kernels/miss/fused.py``."""

from __future__ import annotations

import os

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, check_vs_truth, compile_for_sm90, new_seed, rel_rms, spy_paths

pytest.importorskip("triton")

from rwkv_registry.kernels.launches import count_launches
from rwkv_registry.kernels.miss import TUNING, relu_square_, relu_square_ref
from rwkv_registry.kernels.miss import launch as miss_launch

DTYPES = [torch.float32, torch.float16, torch.bfloat16]

Miss = tuple[torch.Tensor, torch.Tensor, float]


def make(
    lead: tuple[int, ...], F: int, dtype: torch.dtype, seed: int, miss: tuple[int, int] | None = None
) -> tuple[torch.Tensor, Miss | None]:
    """``(h, miss)``: ``h`` [*lead, F]; with ``miss=(K, r)``, ``(x [*lead, K], D [F, r], scale)``
    scaled so that the term and ``h`` are of one magnitude."""
    gen = torch.Generator().manual_seed(seed)
    h = torch.randn(*lead, F, generator=gen).to(dtype)
    if miss is None:
        return h, None
    K, r = miss
    x = torch.randn(*lead, K, generator=gen).to(dtype)
    D = (torch.randn(F, r, generator=gen) * (r / K) ** 0.5).to(dtype)
    return h, (x, D, 0.75)


def truth(h: torch.Tensor, miss: Miss | None) -> torch.Tensor:
    """fp64 on the very values the kernel sees, with P written out (independent of the code under test)."""
    y = h.double()
    if miss is not None:
        x, D, scale = miss
        K, r = x.shape[-1], D.shape[1]
        P = torch.zeros(r, K, dtype=torch.float64)
        P[torch.arange(K) % r, torch.arange(K)] = 1.0
        y = y + scale * (x.double() @ P.t()) @ D.double().t()
    return torch.relu(y) ** 2


# ------------------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_NAMES.get)
@pytest.mark.parametrize(
    ("lead", "F"), [((1,), 96), ((7,), 2500), ((300,), 700), ((2, 3), 64)], ids=["M1", "M7", "M300", "2x3"]
)
def test_plain_matches_the_reference_bit_for_bit(lead: tuple[int, ...], F: int, dtype: torch.dtype) -> None:
    """No MiSS term: element-wise, any number of rows (300: prefill), several blocks per row
    (F = 2500: two full blocks of 1024 and a partial one); one rounding, as PyTorch's."""
    seed = new_seed()
    h, _ = make(lead, F, dtype, seed)
    out = h.clone()
    with torch.no_grad():
        assert relu_square_(out, backend="triton") is out  # in place
        ref = relu_square_ref(h.clone())
    assert out.dtype == dtype and out.shape == h.shape
    check_vs_truth("relu²", out, truth(h, None), ref, seed)
    assert torch.equal(out, ref), f"not the reference's values (replay with WKV7_TEST_SEED={seed})"


# (leading shape, F, K, r, dtype)
MISS_CASES = [
    ((1,), 96, 64, 8, torch.float32),  # one decode row, K a multiple of r
    ((7,), 200, 300, 7, torch.float32),  # K % r != 0: a partial last block
    ((3,), 40, 10, 16, torch.float32),  # r > K: S is x zero padded
    ((2,), 70, 260, 130, torch.float32),  # r above block_r: three rank steps
    ((2, 3), 64, 96, 4, torch.float32),  # h [B, T, F]
    ((1,), 160, 299, 32, torch.bfloat16),
    ((7,), 130, 256, 64, torch.bfloat16),
    ((7,), 100, 100, 12, torch.float16),
    ((2, 2), 60, 75, 9, torch.float16),
]


@pytest.mark.parametrize(
    "case",
    MISS_CASES,
    ids=[f"{'x'.join(map(str, c[0]))}-F{c[1]}-K{c[2]}-r{c[3]}-{DTYPE_NAMES[c[4]]}" for c in MISS_CASES],
)
def test_with_miss_matches_the_truth(case: tuple[tuple[int, ...], int, int, int, torch.dtype]) -> None:
    lead, F, K, r, dtype = case
    seed = new_seed()
    h, miss = make(lead, F, dtype, seed, (K, r))
    out = h.clone()
    with torch.no_grad():
        assert relu_square_(out, miss, backend="triton") is out  # in place
        ref = relu_square_ref(h.clone(), miss)
    assert out.dtype == dtype and out.shape == h.shape
    exact = truth(h, miss)
    assert (exact == 0).any() and (exact > 0).any(), f"both sides of the ReLU (seed {seed})"
    check_vs_truth("relu²(h + term)", out, exact, ref, seed)


def test_with_miss_small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several output, rank and x blocks (the last of each partial): every element once."""
    monkeypatch.setitem(TUNING, "block_o", 16)
    monkeypatch.setitem(TUNING, "block_r", 4)
    monkeypatch.setitem(TUNING, "block_x", 16)
    seed = new_seed()
    h, miss = make((3,), 70, torch.float32, seed, (97, 10))
    out = relu_square_(h.clone(), miss, backend="triton")
    err = rel_rms(out, truth(h, miss))
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


def test_with_miss_reads_strided_x_and_D() -> None:
    seed = new_seed()
    h, miss = make((2, 3), 40, torch.float32, seed, (50, 6))
    assert miss is not None
    x, D, scale = miss
    x_t = x.transpose(0, 1).contiguous().transpose(0, 1)
    D_t = D.t().contiguous().t()
    assert not x_t.is_contiguous() and not D_t.is_contiguous()
    out = relu_square_(h.clone(), (x_t, D_t, scale), backend="triton")
    err = rel_rms(out, truth(h, miss))
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy, in the interpreter
def test_special_values_as_pytorch() -> None:
    """NaN stays NaN (a max would drop it on a GPU), -inf gives 0, inf stays inf, -0 gives 0."""
    h = torch.tensor([[float("nan"), float("-inf"), float("inf"), -0.0, 0.0, -2.0, 3.0, 1e30]])
    got = relu_square_(h.clone(), backend="triton")
    torch.testing.assert_close(got, relu_square_ref(h.clone()), rtol=0, atol=0, equal_nan=True)


def test_nan_stays_local() -> None:
    seed = new_seed()
    h, miss = make((5,), 30, torch.float32, seed, (45, 4))
    assert miss is not None
    h[1, 3] = float("nan")  # one element of h: that element only
    miss[0][3, 17] = float("nan")  # one element of x: its whole row
    out = relu_square_(h.clone(), miss, backend="triton")
    want = truth(h, miss)
    assert torch.isnan(out[1, 3]) and torch.isnan(out[3]).all(), f"seed {seed}"
    finite = torch.ones_like(out, dtype=torch.bool)
    finite[1, 3], finite[3] = False, False
    assert torch.isfinite(out[finite]).all(), f"seed {seed}"
    err = rel_rms(out[finite], want[finite])
    assert err <= 1e-5, f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
    plain = relu_square_(h.clone(), backend="triton")
    assert torch.isnan(plain[1, 3]) and int(torch.isnan(plain).sum()) == 1, f"seed {seed}"


def test_empty_and_fp64() -> None:
    empty = torch.zeros(0, 16)
    assert relu_square_(empty, (torch.zeros(0, 8), torch.zeros(16, 4), 1.0), backend="triton") is empty
    h, miss = make((2,), 20, torch.float64, new_seed(), (12, 3))  # fp64: the reference, in place
    out = h.clone()
    assert relu_square_(out, miss, backend="triton") is out
    assert torch.equal(out, relu_square_ref(h.clone(), miss))


# ------------------------------------------------------------------------------------- dispatch


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which path each call took: "kernel" (a Triton launch) or "reference"."""
    return spy_paths(monkeypatch, miss_launch, "relu_square_ref")


def test_auto_rule(calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain CPU: the reference. Interpreted: the plain squared ReLU takes the kernel for any
    number of rows; with a MiSS term only up to max_rows (cuBLAS's job above), unless forced."""
    seed = new_seed()
    h, miss = make((7,), 48, torch.float32, seed, (40, 4))
    want_miss, want_plain = truth(h, miss), truth(h, None)
    relu_square_(h.clone(), miss)
    assert calls == ["reference"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(TUNING, "max_rows", 6)
    for expected, backend, rows, with_miss in (
        ("kernel", "auto", 7, False),  # element-wise: any number of rows
        ("kernel", "auto", 6, True),
        ("reference", "auto", 7, True),  # above max_rows, in place all the same
        ("kernel", "triton", 7, True),  # forced: any number of rows
        ("reference", "reference", 1, True),
        ("reference", "reference", 1, False),
    ):
        calls.clear()
        m = None if not with_miss or miss is None else (miss[0][:rows], miss[1], miss[2])
        out = h[:rows].clone()
        assert relu_square_(out, m, backend=backend) is out
        assert calls == [expected], (backend, rows, with_miss)
        want = want_miss if with_miss else want_plain
        assert rel_rms(out, want[:rows]) <= 1e-5, f"{backend} rows={rows} (replay with WKV7_TEST_SEED={seed})"


@pytest.mark.parametrize("with_miss", [False, True])
def test_one_launch(with_miss: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel and nothing else, instead of relu_ + square_ (+ the MiSS term's launch)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    h, miss = make((2,), 64, torch.bfloat16, new_seed(), (32, 8) if with_miss else None)
    assert dict(count_launches(lambda: relu_square_(h, miss))) == {"triton:relu_square_kernel": 1}


@pytest.mark.parametrize("with_miss", [False, True])
def test_grad_returns_a_new_differentiable_tensor(with_miss: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seed = new_seed()
    h, miss = make((3,), 24, torch.float32, seed, (30, 4) if with_miss else None)
    h_before = h.clone()
    h.requires_grad_(True)
    leaves = [h] if miss is None else [h, miss[0].requires_grad_(True), miss[1].requires_grad_(True)]
    out = relu_square_(h, miss)
    assert out is not h and torch.equal(h.detach(), h_before), "the grad path must not write h"
    out.pow(2).sum().backward()
    leaves64 = [t.detach().double().requires_grad_(True) for t in leaves]
    miss64 = None if miss is None else (leaves64[1], leaves64[2], miss[2])
    truth(leaves64[0], miss64).pow(2).sum().backward()
    for name, t, t64 in zip(("h", "x", "D"), leaves, leaves64, strict=False):
        err = rel_rms(t.grad, t64.grad)  # type: ignore[arg-type]
        assert err <= 1e-5, f"grad of {name}: rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
    with pytest.raises(ValueError, match="forward-only"):
        relu_square_(h, miss, backend="triton")
    with torch.no_grad():  # no grad wanted: in place, the kernel
        out = h.detach().clone()
        assert relu_square_(out, None if miss is None else (miss[0].detach(), miss[1].detach(), 0.75)) is out


def _bad(**over: object) -> dict[str, object]:
    args: dict[str, object] = {"h": torch.zeros(3, 8), "miss": (torch.randn(3, 10), torch.randn(8, 4), 0.5)}
    args.update(over)
    return args


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (_bad(h=torch.zeros(8, 3).t()), r"h must be contiguous.*\[3, 8\]"),
        (_bad(h=torch.zeros(3, 8, dtype=torch.int32), miss=None), r"h must be a floating tensor"),
        (_bad(h=torch.tensor(1.0), miss=None), r"h must be a floating tensor \[..., F\]; got \[\]"),
        (_bad(h=[[0.0] * 8] * 3), r"h must be a torch.Tensor, got list"),
        (_bad(miss=(torch.randn(3, 10), torch.randn(8, 4))), r"miss must be None or a tuple \(x, D, scale\)"),
        (_bad(miss=torch.randn(3, 10)), r"miss must be None or a tuple"),
        (_bad(miss=(torch.randn(3, 10), torch.randn(9, 4), 0.5)), r"h's last dimension must be D.shape\[0\] = 9"),
        (_bad(miss=(torch.randn(4, 10), torch.randn(8, 4), 0.5)), r"leading dimensions.*x=\[4, 10\]"),
        (_bad(miss=(torch.randn(3, 10).half(), torch.randn(8, 4), 0.5)), r"one floating dtype.*x torch.float16"),
        (_bad(miss=(torch.randn(3, 10), torch.randn(8, 4), torch.tensor(0.5))), r"scale must be a Python number"),
    ],
    ids=["h-strided", "h-int", "h-0d", "h-list", "miss-2", "miss-tensor", "D-rows", "x-rows", "x-dtype", "scale"],
)
@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_bad_arguments_are_value_errors(args: dict[str, object], match: str, backend: str) -> None:
    with pytest.raises(ValueError, match=match):
        relu_square_(args["h"], args["miss"], backend=backend)  # type: ignore[arg-type]


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        relu_square_(torch.zeros(2, 4), backend="cuda")


# ---------------------------------------------------------------------------------------- sm_90


@pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 makes every kernel interpreted"
)
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("has_miss", [False, True])
def test_relu_square_compiles_for_sm90(dtype: str, has_miss: bool) -> None:
    """Triton's front end, passes and bundled ptxas on the CPU, at the launcher's 7.2B tiles
    (``miss_term_kernel``: test_miss_kernel.py)."""
    kernel = miss_launch._kernels(False).relu_square_kernel
    signature = {"h_ptr": f"*{dtype}", "x_ptr": f"*{dtype}", "d_ptr": f"*{dtype}", "N_OUT": "i32", "K": "i32"}
    signature |= {"R": "i32", "SX": "i32", "scale": "fp32"}
    if has_miss:
        block_o, block_r, block_n = miss_launch._tiles([4096], [64], [16384])
    else:
        block_o, block_r, block_n = TUNING["block_e"], 1, 1
    constants = {"HAS_MISS": has_miss, "BLOCK_O": block_o, "BLOCK_R": block_r, "BLOCK_N": block_n}
    assert [*signature, *constants] == list(kernel.arg_names), "the kernel's parameters changed: update this test"
    assert compile_for_sm90(kernel, signature, constants, TUNING["num_warps"]).asm["cubin"]  # type: ignore[attr-defined]


def test_every_kernel_of_the_file_has_a_compile_test() -> None:
    """fused.py's public jit functions: miss_term_kernel (test_miss_kernel.py) and relu_square_kernel (above)."""
    from triton.runtime.jit import JITFunction

    fused = miss_launch._kernels(False)
    kernels = {n for n, v in vars(fused).items() if isinstance(v, JITFunction) and not n.startswith("_")}
    assert kernels == set(fused.__all__) == {"miss_term_kernel", "relu_square_kernel"}


# ------------------------------------------------------------------------------------------ GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("rows", [1, 64])
@pytest.mark.parametrize("r", [16, 64, None], ids=["r16", "r64", "plain"])
@torch.no_grad()
def test_7b_shape_on_cuda(r: int | None, rows: int) -> None:
    """The compiled kernel ("auto" on CUDA) at the 7.2B channel mix (C = 4096, F = 16384), bf16:
    within bf16's tolerance of the fp64 truth and no further from it than the cuBLAS reference."""
    seed = new_seed()
    h, miss = make((rows,), 16384, torch.bfloat16, seed, None if r is None else (4096, r))
    h = h.cuda()
    miss = None if miss is None else (miss[0].cuda(), miss[1].cuda(), miss[2])
    out = h.clone()
    assert relu_square_(out, miss) is out
    ref = relu_square_ref(h.clone(), miss)
    miss_cpu = None if miss is None else (miss[0].cpu(), miss[1].cpu(), miss[2])
    check_vs_truth("relu²", out.cpu(), truth(h.cpu(), miss_cpu), ref.cpu(), seed)
    if miss is None:
        assert torch.equal(out, ref), f"not the reference's values (replay with WKV7_TEST_SEED={seed})"
