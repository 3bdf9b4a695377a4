"""Logits against the `rwkv` PyPI package's RWKV_x070 (strategy cpu fp32) on tiny random bases."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from model_helpers import rel_err, rwkv_package

from rwkv_registry.model import RWKV7, load_state_weights
from rwkv_registry.model.tiny import make_tiny_base, make_tiny_state

# max |Δ| / std(reference), both sides fp32 with their own order of operations. The largest seen:
# 1.03e-5 on an Intel Xeon (AVX-512, test_full_output_matches_package[L2-C192-lora32-no-v0]; the other
# cases 1.6e-6 to 6.3e-6), below 1e-5 on an AMD EPYC. A wrong op, weight or state layout gives 1e-2 and
# more (test_state_file_matches_package_state_injection checks a missing State is seen at 1e-2).
TOL = 3e-5

# (n_layer, n_embd, d_decay, d_aaa, d_mv, d_gate, vocab, layer 0 has v0/v1/v2)
SHAPES = {
    "L2-C64-lora8": (2, 64, 8, 8, 4, 8, 4096, True),
    "L3-C128-lora16-V65536": (3, 128, 16, 16, 8, 32, 65536, True),
    "L2-C192-lora32-no-v0": (2, 192, 32, 16, 16, 64, 4096, False),
}


@pytest.fixture(scope="module", params=list(SHAPES), ids=list(SHAPES))
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RWKV7, object]:
    L, C, dw, da, dv, dg, V, v0 = SHAPES[request.param]
    path = make_tiny_base(
        tmp_path_factory.mktemp("ref") / "base.pth",
        n_layer=L,
        n_embd=C,
        vocab=V,
        d_decay=dw,
        d_aaa=da,
        d_mv=dv,
        d_gate=dg,
        layer0_v=v0,
        seed=L * 1000 + C,
    )
    return path, RWKV7.from_pth(path, dtype=torch.float32), rwkv_package(path)


def _tokens(n: int, vocab: int, seed: int) -> list[int]:
    return torch.randint(1, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_config_read_from_shapes(pair) -> None:
    _, model, ref = pair
    cfg = model.config
    assert (cfg.n_layer, cfg.n_embd, cfg.vocab_size) == (ref.n_layer, ref.n_embd, ref.args.vocab_size)
    assert (cfg.n_head, cfg.head_size) == (ref.n_head, ref.head_size)


def test_prefill_then_steps_match_package(pair) -> None:
    _, model, ref = pair
    toks = _tokens(20, model.config.vocab_size, seed=1)
    with torch.no_grad():
        ours, state = model.forward(torch.tensor([toks[:16]]))
        theirs, ref_state = ref.forward(toks[:16], None)
        errs = [rel_err(ours[0], theirs)]
        for t in toks[16:]:
            ours, state = model.forward(torch.tensor([[t]]), state)
            theirs, ref_state = ref.forward([t], ref_state)
            errs.append(rel_err(ours[0], theirs))
    assert max(errs) < TOL, errs
    # the states agree too (layout of the package's list: att shift, wkv [H, V, K], ffn shift)
    for ours_t, theirs_t in zip(state.to_rwkv_list(0), ref_state, strict=True):
        assert rel_err(ours_t, theirs_t) < TOL


def test_full_output_matches_package(pair) -> None:
    _, model, ref = pair
    toks = _tokens(12, model.config.vocab_size, seed=2)
    with torch.no_grad():
        ours, _ = model.forward(torch.tensor([toks]), full_output=True)
        theirs, _ = ref.forward(toks, None, full_output=True)
    assert ours.shape == (1, 12, model.config.vocab_size)
    assert rel_err(ours[0], theirs) < TOL


def test_state_file_matches_package_state_injection(pair, tmp_path: Path) -> None:
    path, model, ref = pair
    state_path = make_tiny_state(tmp_path / "state.pth", path, seed=7, dtype=torch.float32)
    weights = load_state_weights(state_path)
    ref_state = ref.generate_zero_state()
    for i in range(model.config.n_layer):
        ref_state[i * 3 + 1] = weights.time_state[i].float().clone()  # [H, V, K], no transpose
    toks = _tokens(10, model.config.vocab_size, seed=3)
    with torch.no_grad():
        ours, state = model.forward(torch.tensor([toks[:8]]), model.new_state(1, weights))
        theirs, ref_state = ref.forward(toks[:8], ref_state)
        errs = [rel_err(ours[0], theirs)]
        zero, _ = model.forward(torch.tensor([toks[:8]]))
        assert rel_err(zero[0], theirs) > 1e-2  # the State changes the logits: the injection is exercised
        for t in toks[8:]:
            ours, state = model.forward(torch.tensor([[t]]), state)
            theirs, ref_state = ref.forward([t], ref_state)
            errs.append(rel_err(ours[0], theirs))
    assert max(errs) < TOL, errs
