"""Residual add + LayerNorm (``kernels/add_norm``) against its PyTorch reference, through Triton's
interpreter on the CPU: fresh random inputs, fp64 truth, NaN-filled outputs."""

from __future__ import annotations

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, new_seed, rel_rms

pytest.importorskip("triton")

from rwkv_registry.kernels.add_norm import MAX_WIDTH, add_layer_norm, add_layer_norm_ref
from rwkv_registry.kernels.add_norm import launch as an_launch

TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}
CASES = [((1, 1, 64), torch.float32), ((2, 5, 48), torch.float32), ((3, 1, 4096), torch.bfloat16),
         ((2, 3, 100), torch.bfloat16), ((7, 32), torch.float16)]  # fmt: skip


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    empty_like = torch.empty_like
    monkeypatch.setattr(an_launch.torch, "empty_like", lambda *a, **k: empty_like(*a, **k).fill_(float("nan")))


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
    assert err <= TOL[dtype], f"rel. RMS {err:.3g} (replay with WKV7_TEST_SEED={seed})"
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
