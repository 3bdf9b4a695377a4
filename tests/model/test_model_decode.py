"""In-place ``RWKV7.advance`` and the fixed-batch :class:`Decoder` (eager on the CPU; the capture
logic is driven through a stand-in for ``GraphedStep``; real CUDA graphs in the GPU tests)."""

from __future__ import annotations

import pytest
import torch
from model_helpers import adapter_for, compiler_elementwise, rel_err

import rwkv_registry.model.decode as decode_mod
from rwkv_registry.model import RWKV7, ModelError, ShapeMismatchError
from rwkv_registry.model.decode import Decoder
from rwkv_registry.model.state import LayerState, RWKV7State

PROMPTS = [[1, 99, 65000, 4, 261], [7, 8, 9, 10, 11], [300, 301, 302, 303, 304]]


def _same_state(a: RWKV7State, b: RWKV7State) -> bool:
    return all(
        torch.equal(x.att_shift, y.att_shift) and torch.equal(x.wkv, y.wkv) and torch.equal(x.ffn_shift, y.ffn_shift)
        for x, y in zip(a.layers, b.layers, strict=True)
    )


@torch.no_grad()
def test_advance_equals_forward_and_writes_into_the_given_state(model: RWKV7) -> None:
    tokens = torch.tensor(PROMPTS)
    state = model.new_state(3)
    before = [(s.att_shift.data_ptr(), s.wkv.data_ptr(), s.ffn_shift.data_ptr()) for s in state.layers]
    want_logits, want_state = model.forward(tokens, model.new_state(3), full_output=True)
    logits = model.advance(tokens, state, full_output=True)
    assert torch.equal(logits, want_logits)
    assert _same_state(state, want_state)
    after = [(s.att_shift.data_ptr(), s.wkv.data_ptr(), s.ffn_shift.data_ptr()) for s in state.layers]
    assert after == before  # the same tensors, updated in place


@torch.no_grad()
def test_forward_returns_a_state_that_does_not_hold_the_activations(model: RWKV7) -> None:
    _, state = model.forward(torch.tensor([list(range(1, 40))]))
    for layer in state.layers:  # [B, C] tensors of their own, not views of [B, T, C] activations
        for t in (layer.att_shift, layer.ffn_shift):
            assert t.untyped_storage().nbytes() == t.numel() * t.element_size()


def test_advance_refuses_a_state_it_cannot_write_in_place(model: RWKV7) -> None:
    state = model.new_state(2)
    first = state.layers[0]
    state.layers[0] = LayerState(first.att_shift, first.wkv.transpose(-1, -2), first.ffn_shift)
    with pytest.raises(ShapeMismatchError, match=r"layer 0 wkv .*not contiguous"):
        model.advance(torch.tensor([[1], [2]]), state)
    with pytest.raises(ShapeMismatchError, match=r"batch 2, tokens need .* batch 3"):
        model.advance(torch.tensor([[1], [2], [3]]), model.new_state(2))


@torch.no_grad()
def test_decoder_steps_equal_forward_steps(model: RWKV7) -> None:
    logits, state = model.forward(torch.tensor(PROMPTS))
    decoder = Decoder(model, 3)
    assert not decoder.graphs and not decoder.captured  # a CPU model decodes eagerly
    decoder.load(state)
    tok = logits.argmax(-1)
    for _ in range(4):
        want, state = model.forward(tok.view(-1, 1), state)
        got = decoder.step(tok)  # [B] is accepted as well as [B, 1]
        assert torch.equal(got, want)
        tok = want.argmax(-1)
    assert _same_state(decoder.state, state)


def test_decoder_refuses_bad_tokens_and_states(model: RWKV7) -> None:
    decoder = Decoder(model, 2)
    with pytest.raises(ModelError, match=r"int64 \[2, 1\]"):
        decoder.step(torch.tensor([[1, 2], [3, 4]]))
    with pytest.raises(ModelError, match=r"token ids must lie in"):
        decoder.step(torch.tensor([[1], [70000]]))
    with pytest.raises(ShapeMismatchError, match=r"batch 2; the state to load .* batch 3"):
        decoder.load(model.new_state(3))
    with pytest.raises(ModelError, match=r"at least 1"):
        Decoder(model, 0)


class _FakeGraph:
    """Stands in for GraphedStep on the CPU: warms up like it (the state moves), then replays eagerly."""

    made = 0

    def __init__(self, fn, *example) -> None:
        _FakeGraph.made += 1
        self.fn, self.captured = fn, True
        for _ in range(3):
            fn(*example)

    def __call__(self, *args):
        return self.fn(*args)


@torch.no_grad()
def test_capture_keeps_the_state_and_a_miss_change_captures_again(model: RWKV7, monkeypatch) -> None:
    monkeypatch.setattr(decode_mod, "GraphedStep", _FakeGraph)
    _FakeGraph.made = 0
    logits, state = model.forward(torch.tensor(PROMPTS))
    decoder = Decoder(model, 3)
    decoder.graphs = True  # as on CUDA
    decoder.load(state)
    tok = logits.argmax(-1, keepdim=True)
    want, state = model.forward(tok, state)
    assert torch.equal(decoder.step(tok), want)  # the warm-up steps did not leak into the state
    assert decoder.captured and decoder.captures == 1
    decoder.step(tok)
    assert _FakeGraph.made == 1  # replayed, not captured again
    model.apply_miss(adapter_for(model), mode="fly", force=True)
    decoder.load(state)
    want, _ = model.forward(tok, state)
    assert torch.equal(decoder.step(tok), want)  # new weights: captured again, state kept
    assert _FakeGraph.made == 2 and decoder.captures == 2
    model.remove_miss()
    decoder.step(tok)
    assert _FakeGraph.made == 3


@torch.no_grad()
def test_a_failed_capture_decodes_eagerly_with_a_warning(model: RWKV7, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(decode_mod, "GraphedStep", refuse)
    logits, state = model.forward(torch.tensor(PROMPTS))
    decoder = Decoder(model, 3, compile="aot_eager")
    decoder.graphs = True
    decoder.load(state)
    tok = logits.argmax(-1, keepdim=True)
    with pytest.warns(UserWarning, match="capturing the step failed, decoding eagerly"):
        got = decoder.step(tok)
    assert torch.equal(got, model.forward(tok, state)[0])
    assert not decoder.graphs and "not permitted" in (decoder.capture_error or "")
    assert decoder._fn == decoder._advance  # uncompiled as well: the plain eager step


@pytest.mark.parametrize("wkv", ["reference", "kernels"])
@torch.no_grad()
def test_compiled_decoder_equals_the_eager_one(model: RWKV7, wkv: str, monkeypatch) -> None:
    """``Decoder(compile=...)`` traces the whole step as one graph (fullgraph: no break), the WKV
    custom op included ("kernels": the interpreted Triton step kernel), and gives the eager steps
    (run with the element-wise work the compiler sees, see ``compiler_elementwise``)."""
    from rwkv_registry.model import set_wkv_backend

    if wkv == "kernels":
        pytest.importorskip("triton")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        compiler_elementwise(monkeypatch)
    previous = set_wkv_backend(wkv)
    try:
        logits, state = model.forward(torch.tensor(PROMPTS))
        eager, compiled = Decoder(model, 3), Decoder(model, 3, compile="aot_eager")
        eager.load(state)
        compiled.load(state)
        tok = logits.argmax(-1, keepdim=True)
        for _ in range(3):
            want = eager.step(tok)
            assert torch.equal(compiled.step(tok), want)
            tok = want.argmax(-1, keepdim=True)
        assert _same_state(compiled.state, eager.state)
    finally:
        set_wkv_backend(previous)


@pytest.mark.slow
@torch.no_grad()
def test_inductor_compiled_decoder_matches_on_the_cpu(model: RWKV7) -> None:
    """The real compiler (inductor, C++ on the CPU; Triton on a GPU) fuses the step: same logits."""
    import shutil

    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("inductor needs a C compiler on the CPU")
    logits, state = model.forward(torch.tensor(PROMPTS))
    eager, compiled = Decoder(model, 3), Decoder(model, 3, compile=True)
    eager.load(state)
    compiled.load(state)
    tok = logits.argmax(-1, keepdim=True)
    for _ in range(2):
        want = eager.step(tok)
        assert rel_err(compiled.step(tok), want) < 1e-4
        tok = want.argmax(-1, keepdim=True)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("compile", [False, True], ids=["graph", "compiled-graph"])
@torch.no_grad()
def test_cuda_graph_decoder_equals_eager_steps(tiny_base, compile: bool) -> None:
    """Replayed (and compiled) steps give the eager steps' logits; a MiSS change captures again."""
    model = RWKV7.from_pth(tiny_base, device="cuda", dtype=torch.bfloat16)
    logits, state = model.forward(torch.tensor(PROMPTS, device="cuda"))
    eager, decoder = Decoder(model, 3, graphs=False), Decoder(model, 3, compile=compile)
    eager.load(state)
    decoder.load(state)
    tok = logits.argmax(-1, keepdim=True)
    for _ in range(4):
        want = eager.step(tok)
        assert rel_err(decoder.step(tok), want) < 2e-2 and decoder.captured
        tok = want.argmax(-1, keepdim=True)
    model.apply_miss(adapter_for(model), mode="fly", force=True)
    try:
        assert rel_err(decoder.step(tok), eager.step(tok)) < 2e-2 and decoder.captures == 2
    finally:
        model.remove_miss()
