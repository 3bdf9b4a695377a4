"""The fused time-mix kernels (token mix, gates, output) against their PyTorch reference, through
Triton's interpreter on the CPU: fresh random inputs every run, fp64 truth, outputs allocated full
of NaN so that an element the kernel forgets fails."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, check_vs_truth, nan_new_tensors, new_seed, rel_rms

pytest.importorskip("triton")

from rwkv_registry.kernels.timemix import TUNING, tm_gates, tm_output, token_mix
from rwkv_registry.kernels.timemix import launch as tm_launch

CASES = [
    (1, 1, 4, 16, torch.float32),  # one decode token
    (2, 5, 4, 16, torch.float32),
    (3, 1, 2, 64, torch.bfloat16),
    (2, 7, 3, 32, torch.bfloat16),  # 3 heads: one head per program
    (2, 4, 6, 16, torch.float16),  # 6 heads: two per program
    (1, 2, 64, 64, torch.bfloat16),  # the 7.2B width, C = 4096
]


def case_id(c: tuple[int, int, int, int, torch.dtype]) -> str:
    B, T, H, N, dtype = c
    return f"B{B}-T{T}-H{H}-N{N}-{DTYPE_NAMES[dtype]}"


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tensor the launchers allocate starts full of NaN."""
    nan_new_tensors(monkeypatch)


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen) * scale).to(dtype)


def f64(ts: tuple[torch.Tensor | None, ...]) -> list[torch.Tensor | None]:
    return [None if t is None else t.double() for t in ts]


# ------------------------------------------------------------------------------------ token mix


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
@pytest.mark.parametrize("n_mix", [6, 1])
def test_token_mix_matches_reference(case: tuple[int, int, int, int, torch.dtype], n_mix: int) -> None:
    B, T, H, N, dtype = case
    C, seed = H * N, new_seed()
    gen = torch.Generator().manual_seed(seed)
    x, shift = randn(gen, B, T, C, dtype=dtype), randn(gen, B, C, dtype=dtype)
    mus = [torch.rand(1, 1, C, generator=gen).to(dtype) for _ in range(n_mix)]
    outs, new_shift = token_mix(x, shift, mus, backend="triton")
    truth, _ = token_mix(x.double(), shift.double(), [m.double() for m in mus], backend="reference")
    ref, _ = token_mix(x, shift, mus, backend="reference")
    assert len(outs) == n_mix and all(o.dtype == dtype and o.shape == x.shape for o in outs)
    for i, (got, want, same) in enumerate(zip(outs, truth, ref, strict=True)):
        check_vs_truth(f"mix {i}", got, want, same, seed)
    assert torch.equal(new_shift, x[:, -1]) and new_shift.data_ptr() != shift.data_ptr()


@pytest.mark.parametrize("T", [1, 4])
def test_token_mix_updates_the_shift_in_place(T: int) -> None:
    """shift_out=shift: every row reads the old shift and the new one is x[:, -1], for T == 1 and
    T > 1 (the program that reads a row's shift is the one that writes it)."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    x, shift = randn(gen, 3, T, 48), randn(gen, 3, 48)
    mus = [torch.rand(48, generator=gen) for _ in range(2)]
    want, _ = token_mix(x, shift.clone(), mus, backend="reference")
    outs, new_shift = token_mix(x, shift, mus, shift_out=shift, backend="triton")
    assert new_shift is shift and torch.equal(shift, x[:, -1])
    for got, ref in zip(outs, want, strict=True):
        assert rel_rms(got, ref) < 1e-6, f"seed {seed}"


def test_token_mix_partial_and_several_column_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TUNING, "block_c", 16)  # C = 40: blocks of 16, 16 and a masked 8
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    x, shift = randn(gen, 2, 3, 40), randn(gen, 2, 40)
    mus = [torch.rand(40, generator=gen) for _ in range(3)]
    want, _ = token_mix(x, shift, mus, backend="reference")
    outs, new_shift = token_mix(x, shift, mus, backend="triton")
    assert torch.equal(new_shift, x[:, -1])
    for got, ref in zip(outs, want, strict=True):
        assert rel_rms(got, ref) < 1e-6, f"seed {seed}"


def test_token_mix_reads_non_contiguous_input() -> None:
    gen = torch.Generator().manual_seed(new_seed())
    wide = randn(gen, 2, 3, 64)
    x = wide[..., ::2]  # [2, 3, 32], stride 2
    shift, mus = randn(gen, 2, 32), [torch.rand(32, generator=gen)]
    (got,), _ = token_mix(x, shift, mus, backend="triton")
    (want,), _ = token_mix(x, shift, mus, backend="reference")
    assert rel_rms(got, want) < 1e-6


def test_a_nan_stays_in_its_row_and_the_next() -> None:
    """A NaN in x[0, 1] reaches rows t=1 (its own) and t=2 (as the previous token) only."""
    x, shift = torch.ones(1, 4, 16), torch.zeros(1, 16)
    x[0, 1, 3] = float("nan")
    (out,), _ = token_mix(x, shift, [torch.full((16,), 0.5)], backend="triton")
    bad = torch.isnan(out[0]).any(dim=-1).tolist()
    assert bad == [False, True, True, False]


# ---------------------------------------------------------------------------------------- gates


def gate_inputs(
    B: int, T: int, H: int, N: int, dtype: torch.dtype, seed: int, with_v: bool
) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor | None]]:
    gen = torch.Generator().manual_seed(seed)
    C = H * N
    k, v, wz, az = (randn(gen, B, T, C, dtype=dtype) for _ in range(4))
    w0 = randn(gen, 1, 1, C, scale=2.0, dtype=dtype) - 1
    a0, k_k = randn(gen, 1, 1, C, dtype=dtype), torch.rand(1, 1, C, generator=gen).to(dtype)
    k_a = torch.rand(1, 1, C, generator=gen).to(dtype)
    extra: dict[str, torch.Tensor | None] = {"v_first": None, "vz": None, "v0": None}
    if with_v:
        extra = {
            "v_first": randn(gen, B, T, C, dtype=dtype),
            "vz": randn(gen, B, T, C, dtype=dtype),
            "v0": randn(gen, 1, 1, C, dtype=dtype),
        }
    return (k, v, wz, az, w0, a0, k_k, k_a), extra


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
@pytest.mark.parametrize("with_v", [False, True], ids=["layer0", "value-residual"])
def test_gates_match_reference(case: tuple[int, int, int, int, torch.dtype], with_v: bool) -> None:
    B, T, H, N, dtype = case
    seed = new_seed()
    args, extra = gate_inputs(B, T, H, N, dtype, seed, with_v)
    got = tm_gates(*args, H, **extra, backend="triton")
    ref = tm_gates(*args, H, **extra, backend="reference")
    truth = tm_gates(*f64(args), H, **dict(zip(extra, f64(tuple(extra.values())), strict=True)), backend="reference")
    assert got[0].dtype == torch.float32 and all(t.dtype == dtype for t in got[1:])
    for name, g, t, r in zip(("w", "k", "v", "a", "b"), got, truth, ref, strict=True):
        check_vs_truth(name, g, t, r, seed)
    assert (got[0] < -0.5).all(), "the decay must stay below -0.5"


def test_gates_keep_a_zero_key_finite() -> None:
    """normalize() clamps the norm at 1e-12: a head whose key is all zero gives kk = 0, not NaN."""
    args, _ = gate_inputs(1, 1, 2, 16, torch.float32, new_seed(), False)
    k = args[0].clone()
    k[..., :16] = 0
    w, k_new, v, a, b = tm_gates(k, *args[1:], 2, backend="triton")
    assert torch.isfinite(w).all()
    assert torch.isfinite(torch.stack([k_new, v, a, b])).all() and (a[..., :16] == 0).all()


# --------------------------------------------------------------------------------------- output


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_output_matches_reference(case: tuple[int, int, int, int, torch.dtype]) -> None:
    B, T, H, N, dtype = case
    C, seed = H * N, new_seed()
    gen = torch.Generator().manual_seed(seed)
    y, r, k, v, g = (randn(gen, B, T, C, dtype=dtype) for _ in range(5))
    ln_w, ln_b = randn(gen, C, dtype=dtype), randn(gen, C, scale=0.1, dtype=dtype)
    r_k = randn(gen, H, N, scale=0.3, dtype=dtype)
    args = (y.view(B, T, H, N), r, k, v, g, ln_w, ln_b, r_k)
    got = tm_output(*args, 64e-5, backend="triton")
    ref = tm_output(*args, 64e-5, backend="reference")
    truth = tm_output(*f64(args), 64e-5, backend="reference")  # type: ignore[arg-type]
    assert got.dtype == dtype and got.shape == (B, T, C)
    check_vs_truth("out", got, truth, ref, seed)


# ------------------------------------------------------------------------------ choice and checks


def test_auto_is_the_reference_on_a_plain_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(tm_launch, "_kernels", lambda interpret: pytest.fail("a kernel was launched"))
    x, shift = torch.randn(1, 2, 16), torch.randn(1, 16)
    (out,), _ = token_mix(x, shift, [torch.rand(16)])
    assert out.shape == x.shape


def test_gradients_use_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "auto" falls back to the differentiable reference; "triton" refuses (forward-only)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.randn(1, 2, 16, requires_grad=True)
    (out,), _ = token_mix(x, torch.zeros(1, 16), [torch.rand(16)])
    out.sum().backward()
    assert x.grad is not None
    with pytest.raises(ValueError, match="forward-only"):
        token_mix(x, torch.zeros(1, 16), [torch.rand(16)], backend="triton")
    with torch.no_grad():  # the same tensors without grad mode: the kernels
        token_mix(x, torch.zeros(1, 16), [torch.rand(16)], backend="triton")


def _bad_calls() -> Iterator[tuple[str, Callable[[], object], str]]:
    x, s, mu = torch.randn(2, 3, 32), torch.randn(2, 32), torch.rand(32)
    yield "mixes", lambda: token_mix(x, s, [mu] * 7), "1 to 6 mixes"
    yield "shift shape", lambda: token_mix(x, s[:1], [mu]), "shift must be"
    yield "shift dtype", lambda: token_mix(x, s.double(), [mu]), "shift must be"
    yield "mu size", lambda: token_mix(x, s, [torch.rand(31)]), r"mus\[0\] must hold C=32"
    yield "x rank", lambda: token_mix(x[0], s, [mu]), r"x must be a non-empty \[B, T, C\]"
    yield "backend", lambda: token_mix(x, s, [mu], backend="cuda"), "unknown backend"
    yield "shift_out", lambda: token_mix(x, s, [mu], shift_out=torch.empty(32, 2).t()), "contiguous"
    k = torch.randn(2, 3, 32)
    p = torch.rand(32)
    yield "gate shapes", lambda: tm_gates(k, k[:, :2], k, k, p, p, p, p, 2), "share one shape"
    yield "heads", lambda: tm_gates(k, k, k, k, p, p, p, p, 3), "not a multiple of heads"
    k24, p24 = torch.randn(1, 1, 24), torch.rand(24)
    yield "head size", lambda: tm_gates(k24, k24, k24, k24, p24, p24, p24, p24, 2), "N=12 must be a power of two"
    yield "v trio", lambda: tm_gates(k, k, k, k, p, p, p, p, 2, v_first=k), "together"
    yield "param", lambda: tm_gates(k, k, k, k, p[:4], p, p, p, 2), "w0 must hold C=32"
    yield "r_k", lambda: tm_output(k, k, k, k, k, p, p, torch.rand(3, 10), 1e-5), r"r_k must be \[H, N\]"
    yield "devices", lambda: tm_output(k, k, k.to("meta"), k, k, p, p, torch.rand(2, 16), 1e-5), "one device"


@pytest.mark.parametrize(("what", "call", "message"), list(_bad_calls()), ids=[c[0] for c in _bad_calls()])
def test_bad_arguments_are_value_errors(what: str, call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------------------------------ GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(("B", "T"), [(1, 1), (64, 1), (1, 2048)])
@torch.no_grad()
def test_cuda_kernels_at_the_7b_shape(B: int, T: int) -> None:
    """The compiled kernels at the 7.2B width (C = 4096, 64 heads of 64), bf16, vs the fp64 truth."""
    H, N, dtype = 64, 64, torch.bfloat16
    C, seed = H * N, new_seed()
    gen = torch.Generator().manual_seed(seed)
    x, shift = randn(gen, B, T, C, dtype=dtype).cuda(), randn(gen, B, C, dtype=dtype).cuda()
    mus = [torch.rand(C, generator=gen).to(dtype).cuda() for _ in range(6)]
    outs, _ = token_mix(x, shift, mus)
    truth, _ = token_mix(x.double(), shift.double(), [m.double() for m in mus], backend="reference")
    ref, _ = token_mix(x, shift, mus, backend="reference")
    for got, want, same in zip(outs, truth, ref, strict=True):
        check_vs_truth("mix", got, want, same, seed)
    args, extra = gate_inputs(B, T, H, N, dtype, seed, True)
    args, extra = tuple(a.cuda() for a in args), {k: v.cuda() for k, v in extra.items() if v is not None}
    got = tm_gates(*args, H, **extra)
    ref = tm_gates(*args, H, **extra, backend="reference")
    truth = tm_gates(*f64(args), H, **{k: v.double() for k, v in extra.items()}, backend="reference")
    for name, g, t, r in zip(("w", "k", "v", "a", "b"), got, truth, ref, strict=True):
        check_vs_truth(name, g, t, r, seed)
    y = args[0]
    out_args = (y, args[1], args[0], args[1], args[2], args[4].flatten(), args[5].flatten(), args[6].view(H, N))
    check_vs_truth(
        "out",
        tm_output(*out_args, 64e-5),
        tm_output(*f64(out_args), 64e-5, backend="reference"),  # type: ignore[arg-type]
        tm_output(*out_args, 64e-5, backend="reference"),
        seed,
    )
