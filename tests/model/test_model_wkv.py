"""The model's WKV dispatch: reference on the CPU, the Triton kernels when asked (interpreted here)."""

from __future__ import annotations

import pytest
import torch
from model_helpers import compiler_elementwise, rel_err

import rwkv_registry.model.wkv as wkv_mod
from rwkv_registry.kernels.wkv7 import launch, wkv7_naive
from rwkv_registry.model import RWKV7, set_wkv_backend


def inputs(B: int = 2, T: int = 5, H: int = 2, N: int = 16, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    r, k, v = (torch.randn(B, T, H, N, generator=g) for _ in range(3))
    w = -torch.nn.functional.softplus(torch.randn(B, T, H, N, generator=g)) - 0.5
    kk = torch.nn.functional.normalize(torch.randn(B, T, H, N, generator=g), dim=-1)
    gate = torch.rand(B, T, H, N, generator=g)
    state = torch.randn(B, H, N, N, generator=g)
    return r, w, k, v, -kk, kk * gate, state


def test_cpu_uses_the_reference_and_can_write_the_state_in_place() -> None:
    args = inputs()
    y_ref, s_ref = wkv7_naive(*args)
    y, s = wkv_mod.wkv7(*args)
    assert torch.equal(y, y_ref) and torch.equal(s, s_ref)
    state = args[-1].clone()
    y2, s2 = wkv_mod.wkv7(*args[:-1], state, state)
    assert s2 is state and torch.equal(state, s_ref) and torch.equal(y2, y_ref)


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="use one of auto, reference, kernels"):
        set_wkv_backend("fast")


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Triton's interpreter on, and the kinds of kernel launched ("chunk", "step") recorded."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    kinds: list[str] = []
    real = launch._launch

    def spy(kind: str, *args: object) -> object:
        kinds.append(kind)
        return real(kind, *args)

    monkeypatch.setattr(launch, "_launch", spy)
    return kinds


def rel_rms(ours: torch.Tensor, ref: torch.Tensor) -> float:
    ours, ref = ours.double(), ref.double()
    return float((ours - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt())


PROMPT = [1, 99, 65000, 4, 261, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]  # a full and a partial chunk


def _run(model: RWKV7, backend: str) -> list[torch.Tensor]:
    """Prefill logits, then three in-place decode steps' logits, with the given WKV backend."""
    previous = set_wkv_backend(backend)
    try:
        logits, state = model.forward(torch.tensor([PROMPT]))  # "kernels": the chunk kernel
        steps = [model.advance(torch.tensor([[t]]), state) for t in (5, 6, 7)]  # the step kernel, in place
    finally:
        set_wkv_backend(previous)
    return [t.float().cpu() for t in (logits, *steps, state.layers[-1].wkv)]


@torch.no_grad()
def test_model_through_the_triton_kernels_matches_the_reference(tiny_base, launches: list[str]) -> None:
    """The model's fast path (chunked prefill, in-place decode steps, fp32 decay beside the model
    dtype) gives the reference path's logits and state: within 1e-4 in fp32; in bf16 within bf16's
    own noise (1-2 % relative RMS) and no further from the fp32 logits than the bf16 reference is."""
    fp32 = RWKV7.from_pth(tiny_base, dtype=torch.float32)
    truth = _run(fp32, "reference")
    assert launches == []
    fast32 = _run(fp32, "kernels")
    layers = fp32.config.n_layer
    assert launches == ["chunk"] * layers + ["step"] * 3 * layers
    for got, want in zip(fast32, truth, strict=True):
        assert rel_err(got, want) < 1e-4
    bf16 = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    fast, ref = _run(bf16, "kernels"), _run(bf16, "reference")
    for got, want, exact in zip(fast, ref, truth, strict=True):
        assert rel_rms(got, want) < 2e-2
        assert rel_rms(got, exact) < 1.5 * rel_rms(want, exact) + 1e-3


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("shape", ["tiny", "7.2B-width"])
@torch.no_grad()
def test_cuda_fast_path_matches_the_reference(tiny_base, shape: str) -> None:
    """On CUDA ("auto": the compiled Triton kernels) against the reference loop on the same weights:
    the tiny checkpoint, and two layers of the 7.2B shape (width 4096, 64 heads, FFN 16384)."""
    if shape == "tiny":
        tensors = torch.load(tiny_base, weights_only=True)
    else:
        from rwkv_registry.model.tiny import tiny_base_tensors, tiny_config

        config = tiny_config(n_layer=2, n_embd=4096, dim_ffn=16384, d_decay=128, d_aaa=128, d_mv=96, d_gate=480)
        tensors = tiny_base_tensors(config, seed=0, device="cuda", dtype=torch.float32)
    fp32 = RWKV7.from_state_dict(tensors, device="cuda", dtype=torch.float32)
    truth = _run(fp32, "reference")
    for got, want in zip(_run(fp32, "auto"), truth, strict=True):
        assert rel_rms(got, want) < 1e-3  # tf32x3 matmuls in the chunk kernel
    bf16 = RWKV7.from_state_dict(tensors, device="cuda", dtype=torch.bfloat16)
    fast, ref = _run(bf16, "auto"), _run(bf16, "reference")
    for got, want, exact in zip(fast, ref, truth, strict=True):
        assert rel_rms(got, want) < 2e-2
        assert rel_rms(got, exact) < 1.5 * rel_rms(want, exact) + 1e-3


@torch.no_grad()
def test_compiled_forward_through_the_custom_op_leaves_the_given_state_alone(
    tiny_base, launches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under torch.compile the kernels run as the custom op; forward copies the state first."""
    compiler_elementwise(monkeypatch)
    model = RWKV7.from_pth(tiny_base, dtype=torch.float32)
    previous = set_wkv_backend("kernels")
    try:
        _, state = model.forward(torch.tensor([PROMPT[:5]]))
        before = state.copy()
        want, want_state = model.forward(torch.tensor([PROMPT[5:]]), state)
        compiled = torch.compile(model.forward, backend="aot_eager")
        got, got_state = compiled(torch.tensor([PROMPT[5:]]), state)
    finally:
        set_wkv_backend(previous)
    assert torch.equal(got, want)
    assert torch.equal(got_state.layers[-1].wkv, want_state.layers[-1].wkv)
    assert all(torch.equal(a.wkv, b.wkv) for a, b in zip(state.layers, before.layers, strict=True))
