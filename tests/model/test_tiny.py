"""The tiny-model factory: deterministic bytes, real layouts, matching State and MiSS files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from rwkv_registry.model import RWKV7, RWKV7Config, load_state_weights
from rwkv_registry.model.tiny import make_tiny_base, make_tiny_set, make_tiny_state, tiny_config


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_base_bytes_are_deterministic_and_name_independent(tmp_path: Path) -> None:
    a = make_tiny_base(tmp_path / "one" / "a.pth", n_embd=64, vocab=1000, seed=3)
    b = make_tiny_base(tmp_path / "two" / "other-name.pth", n_embd=64, vocab=1000, seed=3)
    c = make_tiny_base(tmp_path / "c.pth", n_embd=64, vocab=1000, seed=4)
    assert sha(a) == sha(b) != sha(c)


def test_state_bytes_are_deterministic(tmp_path: Path, tiny_base: Path) -> None:
    a = make_tiny_state(tmp_path / "a.pth", tiny_base, seed=9)
    b = make_tiny_state(tmp_path / "b.pth", tiny_base, seed=9)
    assert sha(a) == sha(b) != sha(make_tiny_state(tmp_path / "c.pth", tiny_base, seed=10))


def test_default_base_is_the_g1_layout_with_full_vocabulary(tiny_base: Path) -> None:
    raw = torch.load(tiny_base, weights_only=True)
    assert raw["emb.weight"].shape == (65536, 128) and raw["emb.weight"].dtype == torch.bfloat16
    assert raw["blocks.0.att.r_k"].shape == (2, 64)
    assert raw["blocks.1.att.x_r"].shape == (1, 1, 128) and raw["blocks.1.ffn.key.weight"].shape == (512, 128)
    cfg = RWKV7Config.from_shapes({k: tuple(v.shape) for k, v in raw.items()})
    assert cfg == tiny_config()


def test_state_matches_its_base(tiny_base: Path, tiny_state: Path) -> None:
    w = load_state_weights(tiny_state)
    assert w.shape == (2, 2, 64, 64) and w.time_state[0].dtype == torch.bfloat16
    RWKV7.from_pth(tiny_base).new_state(1, w)  # fits


def test_miss_bytes_are_deterministic(tmp_path: Path, tiny_base: Path) -> None:
    from rwkv_registry.model.tiny import make_tiny_miss

    a = make_tiny_miss(tmp_path / "a" / "adapter-final.pth", tiny_base, rank=4, seed=5)
    b = make_tiny_miss(tmp_path / "b" / "adapter-final.pth", tiny_base, rank=4, seed=5)
    c = make_tiny_miss(tmp_path / "c" / "adapter-final.pth", tiny_base, rank=4, seed=6)
    assert sha(a) == sha(b) != sha(c)


def test_miss_file_passes_the_registry_checks(tmp_path: Path, tiny_base: Path) -> None:
    import json

    from rwkv_registry.checks.miss import check_manifest
    from rwkv_registry.formats.ckpt import open_checkpoint
    from rwkv_registry.model.tiny import make_tiny_miss

    path = make_tiny_miss(tmp_path / "adapter-final.pth", tiny_base, rank=4, seed=5)
    with open_checkpoint(path) as ck:
        assert ck.miss_manifest is not None and ck.writer == "lightning"
        manifest = json.loads(ck.miss_manifest)
    findings, specs = check_manifest(manifest, str(path))
    assert [f for f in findings if str(f.severity) == "error"] == []
    assert manifest["base_fingerprint"] == sha(tiny_base) and len(specs) == 12
    assert {s.in_features for s in specs if s.target == "ffn.value.weight"} == {512}


def test_tiny_set(tmp_path: Path) -> None:
    from rwkv_registry.model import load_miss

    s = make_tiny_set(tmp_path, n_embd=64, vocab=500)
    assert s.miss is not None and s.miss.is_file()
    assert s.base.parent == s.state.parent == s.miss.parent == tmp_path
    model = RWKV7.from_pth(s.base)
    state = load_state_weights(s.state)
    tokens = torch.tensor([[5, 300, 12, 499, 7]])
    with torch.no_grad():
        before, _ = model.forward(tokens, model.new_state(1, state), full_output=True)
        model.apply_miss(load_miss(s.miss))  # fingerprint matches the base: no force needed
        assert model.miss is not None
        applied, _ = model.forward(tokens, model.new_state(1, state), full_output=True)
        model.remove_miss()
        after, _ = model.forward(tokens, model.new_state(1, state), full_output=True)
    assert before.shape == (1, 5, 500) and torch.isfinite(before).all()
    assert (applied - before).abs().max().item() > 1e-3  # the adapter changes the logits
    assert torch.equal(after, before)  # and removing it restores them exactly
