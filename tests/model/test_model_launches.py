"""How many kernels one decode step launches (what a CUDA graph replays, each a few microseconds on
a GPU): counted on the CPU with the Triton kernels interpreted, so that a change that adds launches
to the fast path fails here rather than unnoticed on the GPU."""

from __future__ import annotations

import pytest
import torch

from rwkv_registry.kernels.launches import count_launches
from rwkv_registry.model import RWKV7, MissAdapter, set_fused_ops, set_wkv_backend
from rwkv_registry.model.miss import TARGET_MODULES
from rwkv_registry.model.tiny import miss_in_out, tiny_miss_tensors

pytest.importorskip("triton")

# per layer on the fast path: 6 matmuls (r, k, v, output, ffn key, ffn value), 2 grouped LoRA
# launches, gates, WKV step, output, 2 add + LayerNorm + token mix, relu²
PER_LAYER = {
    "aten.mm.default": 6,
    "triton:lora_kernel": 2,
    "triton:tm_gates_kernel": 1,
    "triton:wkv7_fused_recurrent_fwd_kernel": 1,
    "triton:tm_output_kernel": 1,
    "triton:add_layer_norm_kernel": 2,
    "triton:relu_square_kernel": 1,
}
# once per step: the embedding, ln0, layer 0's ln1 and its token mix (no residual add before them)
# and the head matmul; ln_out is fused with the last block's add, so add + LayerNorm runs exactly
# twice per layer
ONCE = {
    "aten.embedding.default": 1,
    "aten.native_layer_norm.default": 2,
    "triton:token_mix_kernel": 1,
    "aten.mm.default": 1,
}


def _step_counts(model: RWKV7, batch: int, backend: str) -> dict[str, int]:
    previous = set_wkv_backend(backend)
    try:
        state = model.new_state(batch)
        tokens = torch.full((batch, 1), 5, dtype=torch.long)
        model.advance(tokens, state)  # warm: kernels loaded, nothing left to initialise
        return dict(count_launches(lambda: model.advance(tokens, state, check=False)))
    finally:
        set_wkv_backend(previous)


@pytest.mark.parametrize("batch", [1, 4])
def test_a_decode_step_launches_14_kernels_per_layer(model: RWKV7, batch: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    L = model.config.n_layer
    want = {name: n * L + ONCE.get(name, 0) for name, n in PER_LAYER.items()}
    want.update({name: n for name, n in ONCE.items() if name not in want})
    assert _step_counts(model, batch, "kernels") == want
    reference = _step_counts(model, batch, "reference")  # the PyTorch path: ~75 per layer
    assert sum(reference.values()) > 3 * sum(want.values())


def test_miss_on_the_fly_adds_one_launch_per_layer(model: RWKV7, monkeypatch: pytest.MonkeyPatch) -> None:
    """All six targets adapted: the r/k/v terms take one grouped launch; the FFN key's goes into
    relu², the output's and the FFN value's into the add + LayerNorm after them (no launch)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    cfg = model.config
    tensors = tiny_miss_tensors(cfg, rank=4)
    in_features = {name: miss_in_out(cfg, name.split(".", 2)[2][: -len(".D")])[0] for name in tensors}
    adapter = MissAdapter.from_tensors(tensors, in_features, rank=4, alpha=4.0)
    base = _step_counts(model, 1, "kernels")
    model.apply_miss(adapter, mode="fly", force=True)
    try:
        fly = _step_counts(model, 1, "kernels")
    finally:
        model.remove_miss()
    added = {name: fly.get(name, 0) - base.get(name, 0) for name in set(fly) | set(base)}
    assert {k: v for k, v in added.items() if v} == {"triton:miss_term_kernel": cfg.n_layer}
    assert len(TARGET_MODULES) == 6 and len(adapter.targets) == 6 * cfg.n_layer


def test_fused_ops_can_be_turned_off(model: RWKV7, monkeypatch: pytest.MonkeyPatch) -> None:
    """``set_fused_ops(False)`` (or ``RWKV_REGISTRY_FUSED=0``): the WKV kernel only, the rest PyTorch."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    previous = set_fused_ops(False)
    try:
        counts = _step_counts(model, 1, "kernels")
    finally:
        set_fused_ops(previous)
    triton = {name: n for name, n in counts.items() if name.startswith("triton:")}
    assert triton == {"triton:wkv7_fused_recurrent_fwd_kernel": model.config.n_layer}
