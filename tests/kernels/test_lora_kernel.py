"""The grouped LoRA kernel (``lora_down``/``lora_up``) against its PyTorch reference, through Triton's
interpreter on the CPU: fresh random inputs every run (``WKV7_TEST_SEED=<n>`` replays one), fp64
truth, outputs allocated full of NaN so that an element the kernel forgets fails."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
import torch
from wkv7_helpers import DTYPE_NAMES, check_vs_truth, compile_for_sm90, nan_new_tensors, new_seed, rel_rms

pytest.importorskip("triton")

from rwkv_registry.kernels.launches import count_launches
from rwkv_registry.kernels.lora import TUNING, lora_down, lora_up
from rwkv_registry.kernels.lora import launch as lora_launch

# (K, D, act) of each segment's down-projection; its up-projection maps D back to K
SEGMENTS = {
    "1seg": [(40, 24, "tanh")],  # K and N not multiples of the tiles
    "2seg": [(40, 24, "sigmoid"), (33, 48, "none")],  # two input widths
    "3seg-layer0": [(128, 16, "tanh"), (128, 16, "none"), (128, 60, "sigmoid")],  # 7.2B's D = 128/128/480, /8
    "4seg": [(128, 16, "tanh"), (128, 16, "none"), (128, 60, "sigmoid"), (128, 12, "none")],
}
ROWS = {"M1": (1,), "M3": (3,), "M64": (64,), "B2T9": (2, 9)}  # M = 64: the dot path; [2, 9]: 3-D, partial blocks
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tensor the launcher allocates starts full of NaN."""
    nan_new_tensors(monkeypatch)


def make_inputs(
    segments: list[tuple[int, int, str]], lead: tuple[int, ...], dtype: torch.dtype, seed: int, device: str = "cpu"
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[str], list[torch.Tensor], list[torch.Tensor]]:
    """``(xs, down weights, acts, hs, up weights)``, weights scaled so that outputs are O(1)."""
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * scale).to(dtype).to(device)

    xs = [randn(*lead, k) for k, _, _ in segments]
    downs = [randn(k, d, scale=k**-0.5) for k, d, _ in segments]
    hs = [randn(*lead, d) for _, d, _ in segments]
    ups = [randn(d, k, scale=d**-0.5) for k, d, _ in segments]
    return xs, downs, [a for _, _, a in segments], hs, ups


def f64(ts: list[torch.Tensor]) -> list[torch.Tensor]:
    return [t.double() for t in ts]


def check_both(segments: list[tuple[int, int, str]], lead: tuple[int, ...], dtype: torch.dtype) -> None:
    seed = new_seed()
    xs, downs, acts, hs, ups = make_inputs(segments, lead, dtype, seed)
    got = lora_down(xs, downs, acts, backend="triton")
    truth = lora_down(f64(xs), f64(downs), acts, backend="reference")
    ref = lora_down(xs, downs, acts, backend="reference")
    assert len(got) == len(segments)
    for i, (g, t, r) in enumerate(zip(got, truth, ref, strict=True)):
        check_vs_truth(f"down[{i}] {acts[i]}", g, t, r, seed)
    got = lora_up(hs, ups, backend="triton")
    truth = lora_up(f64(hs), f64(ups), backend="reference")
    ref = lora_up(hs, ups, backend="reference")
    for i, (g, t, r) in enumerate(zip(got, truth, ref, strict=True)):
        check_vs_truth(f"up[{i}]", g, t, r, seed)


# ------------------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("dtype", DTYPES, ids=[DTYPE_NAMES[d] for d in DTYPES])
@pytest.mark.parametrize("rows", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("segments", SEGMENTS.values(), ids=SEGMENTS.keys())
@torch.no_grad()
def test_kernel_matches_reference(
    segments: list[tuple[int, int, str]], rows: tuple[int, ...], dtype: torch.dtype
) -> None:
    check_both(segments, rows, dtype)


@pytest.mark.parametrize("dot_rows", [1, 64], ids=["dot", "row"])
@pytest.mark.parametrize("rows", [(1,), (3,), (18,)], ids=["M1", "M3", "M18"])
@torch.no_grad()
def test_small_tiles_many_blocks(monkeypatch: pytest.MonkeyPatch, rows: tuple[int, ...], dot_rows: int) -> None:
    """16x16 tiles: K = 40 and 33 in three steps (the last partial), N = 24 and 48 in 2 and 3 blocks,
    M = 3 and 18 padded to row blocks of 16 on the dot path (M = 1 always one row per program)."""
    monkeypatch.setitem(TUNING, "block_n", 16)
    monkeypatch.setitem(TUNING, "block_k", 16)
    monkeypatch.setitem(TUNING, "block_m", 16)
    monkeypatch.setitem(TUNING, "dot_rows", dot_rows)
    check_both([(40, 24, "tanh"), (33, 48, "sigmoid"), (40, 24, "none")], rows, torch.float32)


@torch.no_grad()
def test_activations_saturate_without_nan() -> None:
    """Large sums: tanh reaches +-1 and sigmoid 0 and 1 without overflow; tiny ones keep tanh(y) ~ y."""
    x = torch.tensor([[1.0, -1.0]]) * torch.tensor([[1e4], [-1e4], [1e-3], [0.3]])  # [4, 2]
    w = torch.eye(2)
    got = lora_down([x, x], [w, w], ["tanh", "sigmoid"], backend="triton")
    want = lora_down([x.double(), x.double()], [w.double(), w.double()], ["tanh", "sigmoid"], backend="reference")
    for g, t in zip(got, want, strict=True):
        assert torch.isfinite(g).all()
        assert torch.allclose(g.double(), t, rtol=1e-6, atol=1e-7), (g, t)


@torch.no_grad()
def test_strided_inputs_and_weights() -> None:
    """A row-strided input (passed as is), a column-strided input and a transposed weight (copied)."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    wide = torch.randn(2, 3, 80, generator=gen)
    xs = [wide[..., :40], wide[..., ::2]]  # [2, 3, 40] each: row stride 80; column stride 2
    ws = [torch.randn(24, 40, generator=gen).t(), torch.randn(40, 8, generator=gen)]
    got = lora_down(xs, ws, ["none", "tanh"], backend="triton")
    want = lora_down(xs, ws, ["none", "tanh"], backend="reference")
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and rel_rms(g, w) < 1e-6, f"seed {seed}"


# ------------------------------------------------------------------------------ choice and checks


@pytest.fixture
def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per launch of the kernel (through ``launch._kernels``)."""
    calls: list[bool] = []
    real = lora_launch._kernels

    def spy(interpret: bool) -> object:
        calls.append(interpret)
        return real(interpret)

    monkeypatch.setattr(lora_launch, "_kernels", spy)
    return calls


def _pair(lead: tuple[int, ...], requires_grad: bool = False) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    x = torch.randn(*lead, 32, requires_grad=requires_grad)
    w = torch.randn(32, 8, requires_grad=requires_grad)
    return [x], [w]


def test_auto_is_the_reference_on_a_plain_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(lora_launch, "_kernels", lambda interpret: pytest.fail("a kernel was launched"))
    xs, ws = _pair((1, 1))
    (h,) = lora_down(xs, ws, ["tanh"])
    (out,) = lora_up([h], [ws[0].t()])
    assert torch.equal(h, torch.tanh(xs[0] @ ws[0])) and torch.equal(out, h @ ws[0].t())


@pytest.mark.parametrize(("lead", "max_rows", "launched"), [((64,), 64, 2), ((5, 13), 64, 0), ((3,), 2, 0)])
@torch.no_grad()
def test_auto_uses_the_kernel_up_to_max_rows(
    monkeypatch: pytest.MonkeyPatch,
    kernel_calls: list[bool],
    lead: tuple[int, ...],
    max_rows: int,
    launched: int,
) -> None:
    """Under TRITON_INTERPRET=1, "auto" launches for M <= max_rows and leaves larger M to the reference."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(TUNING, "max_rows", max_rows)
    xs, ws = _pair(lead)
    (h,) = lora_down(xs, ws, ["sigmoid"])
    (out,) = lora_up([h], [ws[0].t()])
    assert len(kernel_calls) == launched
    assert rel_rms(h, torch.sigmoid(xs[0] @ ws[0])) < 1e-6 and rel_rms(out, h @ ws[0].t()) < 1e-6


def test_gradients_use_the_reference(monkeypatch: pytest.MonkeyPatch, kernel_calls: list[bool]) -> None:
    """ "auto" falls back to the differentiable reference; "triton" refuses (forward-only)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    xs, ws = _pair((2, 1), requires_grad=True)
    (h,) = lora_down(xs, ws, ["tanh"])
    (out,) = lora_up([h], [ws[0].t()])
    out.sum().backward()
    assert kernel_calls == [] and xs[0].grad is not None and ws[0].grad is not None
    with pytest.raises(ValueError, match="forward-only"):
        lora_down(xs, ws, ["tanh"], backend="triton")
    with torch.no_grad():  # the same tensors without grad mode: the kernel
        lora_down(xs, ws, ["tanh"], backend="triton")
    assert kernel_calls == [True]


def test_empty_rows_give_empty_outputs() -> None:
    (h,) = lora_down([torch.randn(0, 3, 16)], [torch.randn(16, 4)], ["tanh"], backend="triton")
    assert h.shape == (0, 3, 4)


def _bad_calls() -> Iterator[tuple[str, Callable[[], object], str]]:
    x, w = torch.randn(3, 40), torch.randn(40, 8)
    yield "no segment", lambda: lora_down([], [], []), "xs: 1 to 4 segments, got 0"
    yield "5 segments", lambda: lora_up([x] * 5, [w] * 5), "hs: 1 to 4 segments, got 5"
    yield "weights count", lambda: lora_down([x, x], [w], ["none", "none"]), "one weight and one act per segment"
    yield "acts count", lambda: lora_down([x, x], [w, w], ["none"]), "one weight and one act per segment"
    yield "acts string", lambda: lora_down([x], [w], "tanh"), "acts must be a sequence"
    yield "tensor not list", lambda: lora_up(x, [w]), "must be sequences of tensors"
    yield "not a tensor", lambda: lora_down([x, 3], [w, w], ["none"] * 2), r"xs\[1\] must be a torch.Tensor"
    yield "K", lambda: lora_down([x], [torch.randn(41, 8)], ["none"]), r"K = xs\[0\].shape\[-1\] = 40.*\[41, 8\]"
    yield "W rank", lambda: lora_up([x], [torch.randn(40)]), r"weights\[0\] must be \[K, N\].*hs\[0\]=\[3, 40\]"
    yield "scalar x", lambda: lora_down([torch.tensor(1.0)], [w], ["none"]), r"xs\[0\] must be \[\.\.\., K\]"
    yield "leading", lambda: lora_down([x, x[:2]], [w, w], ["none"] * 2), "share their leading dims.*\\[2, 40\\]"
    yield "dtypes", lambda: lora_down([x], [w.half()], ["none"]), "one floating dtype.*float16, float32"
    yield "integer", lambda: lora_up([x.long()], [w.long()]), "one floating dtype"
    yield "fp64 kernel", lambda: lora_up([x.double()], [w.double()], backend="triton"), "takes bf16, fp16 or fp32"
    yield "devices", lambda: lora_down([x], [w.to("meta")], ["none"]), "one device"
    yield "meta kernel", lambda: lora_up([x.to("meta")], [w.to("meta")], backend="triton"), "needs Triton and CUDA"
    yield "act", lambda: lora_down([x, x], [w, w], ["none", "relu"]), r"acts\[1\] = 'relu' is unknown"
    yield "backend", lambda: lora_up([x], [w], backend="cuda"), "unknown backend 'cuda'"


@pytest.mark.parametrize(("what", "call", "message"), list(_bad_calls()), ids=[c[0] for c in _bad_calls()])
def test_bad_arguments_are_value_errors(what: str, call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------------------------- in the model


def test_decode_step_launches_two_lora_kernels_per_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny model's decode step through the kernels (interpreted): one down and one up launch per
    layer, no LoRA matmul left to PyTorch, and the reference path's logits."""
    from rwkv_registry.model import RWKV7, set_wkv_backend
    from rwkv_registry.model.tiny import tiny_base_tensors, tiny_config

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    config = tiny_config(vocab=512)
    model = RWKV7.from_state_dict(tiny_base_tensors(config, seed=0), dtype=torch.float32)
    tok = torch.tensor([[5], [7]])
    logits: dict[str, torch.Tensor] = {}

    def step() -> None:
        logits[backend] = model.advance(tok, state, check=False)

    for backend in ("reference", "kernels"):
        previous = set_wkv_backend(backend)
        try:
            state = model.new_state(2)
            step()  # a first step, from the zero state
            counts = count_launches(step)
        finally:
            set_wkv_backend(previous)
    assert counts["triton:lora_kernel"] == 2 * config.n_layer
    assert not any(name.startswith(("aten.tanh", "aten.sigmoid")) for name in counts)
    assert rel_rms(logits["kernels"], logits["reference"]) < 1e-4


# ------------------------------------------------------------------------------------------ GPU


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 interprets")
@pytest.mark.parametrize(("dtype", "rows", "n_seg"), [("bf16", 1, 4), ("bf16", 64, 4), ("fp32", 64, 3)])
def test_kernel_compiles_for_sm90(dtype: str, rows: int, n_seg: int) -> None:
    """Triton's front end, passes and bundled ptxas on the CPU (a kernel only the interpreter accepts
    fails), with the tiles the launcher picks for the 7.2B down-projection."""
    kernel = lora_launch._kernels(False).lora_kernel
    signature = {f"{p}{i}_ptr": f"*{dtype}" for p in ("x", "w", "out") for i in range(4)}
    signature |= {"M": "i32"} | {f"{p}{i}": "i32" for p in ("K", "N", "SX") for i in range(4)}
    signature |= {"B1": "i32", "B2": "i32", "B3": "i32"}
    ns = (128, 128, 480, 96)[:n_seg]
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    block_m, block_n, block_k, _ = lora_launch._tiles(rows, [4096] * n_seg, ns, torch_dtype)
    constants = {"N_SEG": n_seg, "ACT0": 1, "ACT1": 0, "ACT2": 2, "ACT3": 0, "BLOCK_M": block_m}
    constants |= {"BLOCK_N": block_n, "BLOCK_K": block_k, "DOT_F32": dtype == "fp32"}
    compiled = compile_for_sm90(kernel, signature, constants, TUNING["num_warps"])
    assert compiled.asm["cubin"]


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 interprets")
def test_a_large_block_k_is_cut_to_fit_shared_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """block_k = 512 at 64 rows would need ~390 KB of shared memory (an H200 block has 227 KB): the
    launcher halves it until the compiled kernel fits, as ptxas's own count confirms."""
    monkeypatch.setitem(TUNING, "block_k", 512)
    ns = (128, 128, 480, 96)
    block_m, block_n, block_k, _ = lora_launch._tiles(64, [4096] * 4, ns, torch.bfloat16)
    assert lora_launch.tile_smem_bytes(block_m, block_n, 512, torch.bfloat16) > 227 * 1024
    assert block_m == 64 and block_k < 512
    assert lora_launch.tile_smem_bytes(block_m, block_n, block_k, torch.bfloat16) <= lora_launch.SMEM_BUDGET
    signature = {f"{p}{i}_ptr": "*bf16" for p in ("x", "w", "out") for i in range(4)}
    signature |= {"M": "i32"} | {f"{p}{i}": "i32" for p in ("K", "N", "SX") for i in range(4)}
    signature |= {"B1": "i32", "B2": "i32", "B3": "i32"}
    constants = {"N_SEG": 4, "ACT0": 1, "ACT1": 0, "ACT2": 2, "ACT3": 0, "BLOCK_M": block_m}
    constants |= {"BLOCK_N": block_n, "BLOCK_K": block_k, "DOT_F32": False}
    compiled = compile_for_sm90(lora_launch._kernels(False).lora_kernel, signature, constants, TUNING["num_warps"])
    assert 0 < compiled.metadata.shared <= 227 * 1024, compiled.metadata.shared


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("M", [1, 64])
@torch.no_grad()
def test_cuda_kernel_at_the_7b_shape(M: int) -> None:
    """The compiled kernel at the 7.2B shape (C = 4096, D = 128, 128, 480, 96), bf16, vs the fp64 truth."""
    segments = [(4096, 128, "tanh"), (4096, 128, "none"), (4096, 480, "sigmoid"), (4096, 96, "none")]
    seed = new_seed()
    xs, downs, acts, hs, ups = make_inputs(segments, (M, 1), torch.bfloat16, seed, device="cuda")
    assert lora_launch._use_triton("lora_down", "auto", xs[0].device, xs, M)
    for got, truth, ref in zip(
        lora_down(xs, downs, acts),
        lora_down(f64(xs), f64(downs), acts, backend="reference"),
        lora_down(xs, downs, acts, backend="reference"),
        strict=True,
    ):
        check_vs_truth("down", got, truth, ref, seed)
    for got, truth, ref in zip(
        lora_up(hs, ups),
        lora_up(f64(hs), f64(ups), backend="reference"),
        lora_up(hs, ups, backend="reference"),
        strict=True,
    ):
        check_vs_truth("up", got, truth, ref, seed)
