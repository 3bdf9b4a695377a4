"""Residual add + LayerNorm (``kernels/add_norm``) against its PyTorch reference, through Triton's
interpreter on the CPU: fresh random inputs, fp64 truth, NaN-filled outputs."""

from __future__ import annotations

import os

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, FUSED_TOL, nan_new_tensors, new_seed, rel_rms

pytest.importorskip("triton")

from rwkv_registry.kernels.add_norm import MAX_WIDTH, TUNING, add_layer_norm, add_layer_norm_mix, add_layer_norm_ref
from rwkv_registry.kernels.add_norm import launch as an_launch
from rwkv_registry.kernels.miss import miss_term_ref

CASES = [((1, 1, 64), torch.float32), ((2, 5, 48), torch.float32), ((3, 1, 4096), torch.bfloat16),
         ((2, 3, 100), torch.bfloat16), ((7, 32), torch.float16)]  # fmt: skip


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tensor the launchers allocate starts full of NaN."""
    nan_new_tensors(monkeypatch)


def inputs(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    C = shape[-1]
    x = (torch.randn(*shape, generator=gen) * 3).to(dtype)
    dx = torch.randn(*shape, generator=gen).to(dtype)
    w = (1 + 0.3 * torch.randn(C, generator=gen)).to(dtype)
    b = (0.1 * torch.randn(C, generator=gen)).to(dtype)
    return x, dx, w, b


@pytest.mark.parametrize(("shape", "dtype"), CASES, ids=[f"{list(s)}-{DTYPE_NAMES[d]}" for s, d in CASES])
def test_matches_reference(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    """The stream ``x + dx`` equals the reference's bit for bit (one rounding of an exact sum);
    the norm is within the dtype's tolerance of the fp64 truth and no further than the reference."""
    seed = new_seed()
    x, dx, w, b = inputs(shape, dtype, seed)
    s, y = add_layer_norm(x, dx, w, b, 1e-5, backend="triton")
    s_ref, y_ref = add_layer_norm_ref(x, dx, w, b, 1e-5)
    _, y_true = add_layer_norm_ref(
        s_ref.double(), torch.zeros_like(s_ref, dtype=torch.float64), w.double(), b.double(), 1e-5
    )
    assert s.dtype == y.dtype == dtype and s.shape == y.shape == x.shape
    assert torch.equal(s, s_ref), f"seed {seed}"
    err, ref_err = rel_rms(y, y_true), rel_rms(y_ref, y_true)
    assert err <= FUSED_TOL[dtype], f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
    assert err <= 1.5 * ref_err + 1e-6, f"{err:.3g} vs the reference's {ref_err:.3g} (seed {seed})"


def test_non_contiguous_rows_and_a_nan_stays_in_its_row() -> None:
    x = torch.randn(4, 2, 32)[:, 1]  # [4, 32], row stride 64
    dx = torch.randn(4, 32)
    dx[2, 5] = float("nan")
    s, y = add_layer_norm(x, dx, torch.ones(32), torch.zeros(32), 1e-5, backend="triton")
    bad = torch.isnan(y).any(dim=-1).tolist()
    assert bad == [False, False, True, False]
    keep = [0, 1, 3]
    s_ref, y_ref = add_layer_norm_ref(x[keep], dx[keep], torch.ones(32), torch.zeros(32), 1e-5)
    assert torch.equal(s[keep], s_ref) and rel_rms(y[keep], y_ref) < 1e-6


def test_choice_of_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "auto": the reference on a plain CPU, for rows wider than MAX_WIDTH and when gradients are
    needed (then they flow); "triton" refuses inputs that need gradients."""
    monkeypatch.setattr(an_launch, "_kernels", lambda interpret: pytest.fail("a kernel was launched"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, dx, w, b = inputs((2, 16), torch.float32, 0)
    add_layer_norm(x, dx, w, b, 1e-5)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    wide = torch.zeros(1, MAX_WIDTH + 1)
    add_layer_norm(wide, wide, torch.ones(MAX_WIDTH + 1), torch.zeros(MAX_WIDTH + 1), 1e-5)
    x.requires_grad_(True)
    s, y = add_layer_norm(x, dx, w, b, 1e-5)
    (s.sum() + y.square().sum()).backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="forward-only"):
        add_layer_norm(x, dx, w, b, 1e-5, backend="triton")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((torch.zeros(2, 8), torch.zeros(2, 7), torch.ones(8), torch.zeros(8)), "share one shape"),
        ((torch.zeros(2, 8), torch.zeros(2, 8).double(), torch.ones(8), torch.zeros(8)), "share one shape"),
        ((torch.zeros(2, 8), torch.zeros(2, 8), torch.ones(7), torch.zeros(8)), "weight must hold C=8"),
        ((torch.zeros(2, 8), torch.zeros(2, 8), torch.ones(8), "0"), "bias must be a torch.Tensor"),
    ],
    ids=["shape", "dtype", "weight", "type"],
)
def test_bad_arguments_are_value_errors(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        add_layer_norm(*args, 1e-5)  # type: ignore[arg-type]


# ------------------------------------------------------------------- with a MiSS term (kernels/miss)


def miss_inputs(rows: int, C: int, K: int, r: int, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed + 1)
    xm = torch.randn(rows, K, generator=gen).to(dtype)
    D = (0.2 * torch.randn(C, r, generator=gen)).to(dtype)
    return xm, D


MISS_CASES = [(1, 64, 256, 16, torch.float32), (3, 48, 100, 7, torch.float32), (2, 128, 512, 4, torch.bfloat16),
              (5, 40, 30, 64, torch.float16)]  # fmt: skip


@pytest.mark.parametrize(
    ("rows", "C", "K", "r", "dtype"),
    MISS_CASES,
    ids=[f"M{c[0]}-C{c[1]}-K{c[2]}-r{c[3]}-{DTYPE_NAMES[c[4]]}" for c in MISS_CASES],
)
def test_with_a_miss_term_matches_reference(rows: int, C: int, K: int, r: int, dtype: torch.dtype) -> None:
    """``s = x + dx + scale * S(xm) @ D^T`` in one launch (K % r != 0 and r > K included): within
    the dtype's tolerance of the fp64 truth and no further from it than the reference; dx untouched."""
    seed = new_seed()
    x, dx, w, b = inputs((rows, C), dtype, seed)
    xm, D = miss_inputs(rows, C, K, r, dtype, seed)
    dx_before = dx.clone()
    s, y = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.5), backend="triton")
    s_ref, y_ref = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.5), backend="reference")
    d64 = miss_term_ref(dx.double().clone(), xm.double(), D.double(), 0.5)
    s_true, y_true = add_layer_norm_ref(x.double(), d64, w.double(), b.double(), 1e-5)
    assert torch.equal(dx, dx_before)
    for name, got, ref, true in (("s", s, s_ref, s_true), ("y", y, y_ref, y_true)):
        err, ref_err = rel_rms(got, true), rel_rms(ref, true)
        assert err <= FUSED_TOL[dtype], f"{name}: rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
        assert err <= 1.5 * ref_err + 1e-6, f"{name}: {err:.3g} vs the reference's {ref_err:.3g} (seed {seed})"


def test_with_a_miss_term_over_several_channel_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small D tile: C = 100 walked in chunks of 16 (the last one partial), rank 7 in a block of 8."""
    monkeypatch.setitem(TUNING, "tile", 128)
    seed = new_seed()
    x, dx, w, b = inputs((3, 100), torch.float32, seed)
    xm, D = miss_inputs(3, 100, 70, 7, torch.float32, seed)
    got = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.3), backend="triton")
    want = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.3), backend="reference")
    for g, r in zip(got, want, strict=True):
        assert rel_rms(g, r) < 1e-6, f"seed {seed}"


def test_with_a_miss_term_one_launch_for_decode_rows_two_above(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "auto" (interpreted here): the fused kernel for at most max_rows rows; above, the MiSS
    term then the plain kernel, with the same result; a strided dx (the last position) is fine."""
    from rwkv_registry.kernels.launches import count_launches
    from rwkv_registry.kernels.miss import TUNING as MISS_TUNING

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seed = new_seed()
    x, dx, w, b = inputs((4, 3, 32), torch.float32, seed)
    xm, D = miss_inputs(12, 32, 50, 8, torch.float32, seed)
    xm = xm.view(4, 3, 50)
    fused = count_launches(lambda: add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.25)))
    poison = "aten.fill_.Scalar"  # the NaN fill of this file's output fixture
    assert {k: n for k, n in fused.items() if k != poison} == {"triton:add_layer_norm_kernel": 1}
    want = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.25), backend="reference")
    monkeypatch.setitem(MISS_TUNING, "max_rows", 4)
    split = count_launches(lambda: add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.25)))
    assert (
        split["aten.addmm_.default"] == 1 and split.triton() == 1
    )  # above max_rows: the term by cuBLAS, then the norm
    got = add_layer_norm(x, dx, w, b, 1e-5, miss=(xm, D, 0.25))
    for g, r in zip(got, want, strict=True):
        assert rel_rms(g, r) < 1e-6, f"seed {seed}"
    last = add_layer_norm(x[:, -1], dx[:, -1], w, b, 1e-5, miss=(xm[:, -1], D, 0.25))
    for g, r in zip(last, want, strict=True):
        assert rel_rms(g, r[:, -1]) < 1e-6, f"seed {seed}"


def test_a_bad_miss_term_is_a_value_error() -> None:
    x = torch.zeros(2, 8)
    with pytest.raises(ValueError, match=r"miss D's|miss D must be|dx's last dimension"):
        add_layer_norm(
            x,
            x,
            torch.ones(8),
            torch.zeros(8),
            1e-5,
            miss=(torch.zeros(2, 5), torch.zeros(7, 2), 1.0),
            backend="triton",
        )


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize(("rank", "n_mix"), [(0, 0), (0, 6), (0, 1), (16, 0), (64, 6)])
def test_kernel_compiles_for_sm90(dtype: str, rank: int, n_mix: int) -> None:
    """At the 7.2B width, with and without a MiSS term (K = 16384, the FFN value) and token mixes."""
    from wkv7_helpers import compile_for_sm90

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        pytest.skip("TRITON_INTERPRET=1 makes every kernel interpreted")
    kernel = an_launch._kernels(False).add_layer_norm_kernel
    ptrs = ["x_ptr", "dx_ptr", "w_ptr", "b_ptr", "s_ptr", "y_ptr", "xm_ptr", "d_ptr", "shift_ptr"]
    ptrs += [f"mu{i}_ptr" for i in range(6)] + [f"out{i}_ptr" for i in range(6)]
    sig = (
        {p: f"*{dtype}" for p in ptrs} | dict.fromkeys(("C", "K", "R", "SX"), "i32") | {"scale": "fp32", "eps": "fp32"}
    )
    block_r = rank or 1
    block_c = min(TUNING["block_c"], TUNING["tile"] // block_r) if rank else TUNING["block_c"]
    constants = {
        "BLOCK_C": block_c,
        "HAS_MISS": rank > 0,
        "BLOCK_R": block_r,
        "BLOCK_N": 4096 // block_r,
        "N_MIX": n_mix,
    }
    assert compile_for_sm90(kernel, sig, constants, TUNING["num_warps"])


# ------------------------------------------------------------- with the next token mix (decode)


@pytest.mark.parametrize("n_mix", [6, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("with_miss", [False, True], ids=["plain", "miss"])
def test_add_norm_mix_is_the_two_ops_in_one_launch(
    n_mix: int, dtype: torch.dtype, with_miss: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T == 1 (decode): one launch gives what add_layer_norm then token_mix give (bit for bit: the
    mixes are of the normed row as stored), the shift updated in place; T > 1: the two ops."""
    from rwkv_registry.kernels.launches import count_launches
    from rwkv_registry.kernels.timemix import token_mix

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed + 2)
    for T in (1, 3):
        x, dx, w, b = inputs((4, T, 96), dtype, seed)
        shift = torch.randn(4, 96, generator=gen).to(dtype)
        mus = [torch.rand(1, 1, 96, generator=gen).to(dtype) for _ in range(n_mix)]
        miss = None
        if with_miss:
            xm, D = miss_inputs(4 * T, 96, 40, 6, dtype, seed)
            miss = (xm.view(4, T, 40), D, 0.5)
        s_want, y = add_layer_norm(x, dx, w, b, 1e-5, miss=miss)
        want, shift_want = token_mix(y, shift.clone(), mus)
        args = (x, dx, w, b, 1e-5, shift.clone(), mus)
        counts = count_launches(lambda args=args, miss=miss: add_layer_norm_mix(*args, miss=miss, shift_out=args[5]))
        poison = "aten.fill_.Scalar"  # the NaN fill of this file's output fixture
        launches = {k: n for k, n in counts.items() if k != poison}
        assert launches == ({"triton:add_layer_norm_kernel": 1} if T == 1 else
                            {"triton:add_layer_norm_kernel": 1, "triton:token_mix_kernel": 1}), f"T={T}"  # fmt: skip
        state = shift.clone()
        s, mixed, new_shift = add_layer_norm_mix(x, dx, w, b, 1e-5, state, mus, miss=miss, shift_out=state)
        assert new_shift is state and torch.equal(new_shift, shift_want), f"T={T} seed {seed}"
        assert torch.equal(s, s_want), f"T={T} seed {seed}"
        for got, ref in zip(mixed, want, strict=True):
            assert torch.equal(got, ref), f"T={T} seed {seed}"


def test_add_norm_mix_reference_and_bad_arguments() -> None:
    x, dx, w, b = inputs((2, 1, 32), torch.float32, 0)
    shift, mus = torch.zeros(2, 32), [torch.full((32,), 0.5)]
    s, (mixed,), new_shift = add_layer_norm_mix(x, dx, w, b, 1e-5, shift, mus, backend="reference")
    assert torch.equal(s, x + dx)
    _, y = add_layer_norm_ref(x, dx, w, b, 1e-5)
    assert torch.equal(new_shift, y[:, -1]) and rel_rms(mixed, 0.5 * y) < 1e-6
    with pytest.raises(ValueError, match=r"x must be \[B, T, C\]"):
        add_layer_norm_mix(x[0], dx[0], w, b, 1e-5, shift, mus)
    with pytest.raises(ValueError, match="shift must be"):
        add_layer_norm_mix(x, dx, w, b, 1e-5, shift[:1], mus, backend="triton")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("rows", [1, 64, 2048])
def test_cuda_at_the_7b_width(rows: int) -> None:
    seed = new_seed()
    x, dx, w, b = (t.cuda() for t in inputs((rows, 4096), torch.bfloat16, seed))
    s, y = add_layer_norm(x, dx, w, b, 1e-5)
    s_ref, y_ref = add_layer_norm_ref(x, dx, w, b, 1e-5)
    _, y_true = add_layer_norm_ref(
        s_ref.double(), torch.zeros_like(s_ref, dtype=torch.float64), w.double(), b.double(), 1e-5
    )
    assert torch.equal(s, s_ref)
    assert rel_rms(y, y_true) <= 1.5 * rel_rms(y_ref, y_true) + 1e-6, f"seed {seed}"
