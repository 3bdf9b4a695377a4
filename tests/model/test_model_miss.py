"""MiSS: the modulo-rank math, merged vs on the fly vs the `rwkv` package on hand-merged weights."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
import torch
from model_helpers import ALPHA, RANK, adapter_for, rel_err, rwkv_package, write_torch_save_package

from rwkv_registry.model import (
    RWKV7,
    FingerprintMismatchError,
    MissAdapter,
    ModelError,
    ShapeMismatchError,
    WeightsFormatError,
    load_miss,
)
from rwkv_registry.model.miss import MissLinear, add_miss_term_, merged_weight
from rwkv_registry.model.tiny import save_tensors, tiny_miss_tensors

TOKS = [5, 300, 65000, 12, 261, 4444, 9]


def modulo_matrix(rank: int, in_features: int) -> torch.Tensor:
    """P [rank, in]: P[j, k] = 1 when k % rank == j (written out, independent of the code under test)."""
    P = torch.zeros(rank, in_features)
    for k in range(in_features):
        P[k % rank, k] = 1.0
    return P


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------------------- the math


@pytest.mark.parametrize("in_features", [8, 10, 13], ids=["exact-blocks", "partial-block", "odd"])
def test_miss_term_is_S_times_D_transposed(in_features: int) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, in_features, generator=g, dtype=torch.float64)
    D = torch.randn(6, RANK, generator=g, dtype=torch.float64)
    S = x @ modulo_matrix(RANK, in_features).double().t()  # [3, 5, r]: sums of x[k] with k % r == j
    base = torch.randn(3, 5, 6, generator=g, dtype=torch.float64)
    out = base.clone()
    assert add_miss_term_(out, x, D, 0.5) is out  # added in place
    assert torch.allclose(out, base + 0.5 * S @ D.t(), rtol=0, atol=1e-12)


@torch.no_grad()
def test_bf16_on_the_fly_term_matches_fp32_within_bf16() -> None:
    g = torch.Generator().manual_seed(4)
    lin = torch.nn.Linear(4096, 64, bias=False)
    D = torch.randn(64, RANK, generator=g) * 0.05
    x = torch.randn(2, 3, 4096, generator=g)
    want = MissLinear(lin, D, 0.7)(x)
    got = MissLinear(lin.to(torch.bfloat16), D, 0.7)(x.to(torch.bfloat16)).float()
    assert float((got - want).pow(2).mean().sqrt() / want.pow(2).mean().sqrt()) < 1e-2


def test_merged_weight_is_W_plus_scale_D_P() -> None:
    g = torch.Generator().manual_seed(1)
    W = torch.randn(6, 10, generator=g)
    D = torch.randn(6, RANK, generator=g)
    want = W + 2.0 * D @ modulo_matrix(RANK, 10)
    assert torch.allclose(merged_weight(W, D, 2.0), want, rtol=0, atol=1e-6)


def test_miss_linear_equals_merged_linear() -> None:
    g = torch.Generator().manual_seed(2)
    lin = torch.nn.Linear(10, 6, bias=False)
    D = torch.randn(6, RANK, generator=g)
    x = torch.randn(4, 10, generator=g)
    fly = MissLinear(lin, D, 0.7)(x)
    merged = x @ merged_weight(lin.weight.detach(), D, 0.7).t()
    assert torch.allclose(fly, merged, atol=1e-5)


# ------------------------------------------------------------------------------- on a tiny model


def test_merge_and_fly_agree_and_change_the_logits(model: RWKV7) -> None:
    tokens = torch.tensor([TOKS])
    with torch.no_grad():
        base, _ = model.forward(tokens)
        adapter = adapter_for(model)
        model.apply_miss(adapter, mode="merge", force=True)
        merged, _ = model.forward(tokens)
        model.remove_miss()
        model.apply_miss(adapter, mode="fly", force=True)
        fly, _ = model.forward(tokens)
        model.remove_miss()
    assert rel_err(merged, fly) < 1e-5
    assert rel_err(merged, base) > 1e-2


def test_merge_and_fly_equal_package_on_hand_merged_weights(model: RWKV7, tiny_base: Path, tmp_path: Path) -> None:
    adapter = adapter_for(model, seed=5)
    sd = {k: v.float() for k, v in torch.load(tiny_base, weights_only=True).items()}
    for t in adapter.targets:
        key = f"blocks.{t.layer}.{t.target}"
        P = modulo_matrix(adapter.rank, t.in_features)
        sd[key] = sd[key] + adapter.scale * t.D.float() @ P
    ref = rwkv_package(save_tensors(tmp_path / "merged-by-hand.pth", sd))
    theirs, _ = ref.forward(TOKS, None)
    with torch.no_grad():
        for mode in ("merge", "fly"):
            model.apply_miss(adapter, mode=mode, force=True)
            ours, _ = model.forward(torch.tensor([TOKS]))
            model.remove_miss()
            assert rel_err(ours[0], theirs) < 1e-5, mode


def test_remove_miss_restores_the_base_bit_for_bit(model: RWKV7) -> None:
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        base, _ = model.forward(torch.tensor([TOKS]))
    for mode in ("merge", "fly"):
        model.apply_miss(adapter_for(model), mode=mode, force=True)
        assert model.miss is not None
        model.remove_miss()
        assert model.miss is None
        after = model.state_dict()
        assert after.keys() == before.keys()
        for k, v in before.items():
            assert after[k].dtype == v.dtype and torch.equal(after[k], v), (mode, k)
        with torch.no_grad():
            again, _ = model.forward(torch.tensor([TOKS]))
        assert torch.equal(again, base)


def test_bf16_merge_restores_exactly(tiny_base: Path) -> None:
    model = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    w = model.blocks[1].ffn.value.weight
    before = w.detach().clone()
    model.apply_miss(adapter_for(model), mode="merge", force=True)
    assert not torch.equal(model.blocks[1].ffn.value.weight, before)
    model.remove_miss()
    assert model.blocks[1].ffn.value.weight is w and torch.equal(w, before)


def test_fingerprint_mismatch_is_refused_unless_forced(model: RWKV7, tiny_base: Path) -> None:
    adapter = adapter_for(model, fingerprint="ab" * 32)
    with pytest.raises(FingerprintMismatchError) as e:
        model.apply_miss(adapter)
    assert str(e.value) == (
        f"MiSS adapter: trained on base {'ab' * 32}, but the loaded base {tiny_base} is {sha256(tiny_base)}"
    )
    assert model.miss is None
    model.apply_miss(adapter, force=True)
    assert model.miss is adapter


def test_matching_fingerprint_is_accepted(model: RWKV7, tiny_base: Path) -> None:
    adapter = adapter_for(model, fingerprint=sha256(tiny_base))
    model.apply_miss(adapter, mode="fly")
    assert isinstance(model.blocks[0].att.key, MissLinear)


def test_model_without_file_needs_force(model: RWKV7) -> None:
    bare = RWKV7.from_state_dict(model.state_dict())
    with pytest.raises(FingerprintMismatchError, match="not loaded from a file"):
        bare.apply_miss(adapter_for(bare))


def test_second_adapter_and_bad_mode_are_refused(model: RWKV7) -> None:
    with pytest.raises(ModelError, match="mode must be 'merge' or 'fly'"):
        model.apply_miss(adapter_for(model), mode="both", force=True)  # type: ignore[arg-type]
    model.apply_miss(adapter_for(model), force=True)
    with pytest.raises(ModelError, match=r"already applied") as caught:
        model.apply_miss(adapter_for(model), force=True)
    assert "remove_miss() first" in caught.value.hint


def test_adapter_for_other_shapes_is_refused_without_change(model: RWKV7) -> None:
    d = {"blocks.0.att.key.weight.D": torch.zeros(64, RANK), "blocks.0.att.value.weight.D": torch.zeros(128, RANK)}
    adapter = MissAdapter.from_tensors(d, dict.fromkeys(d, 128), rank=RANK, alpha=ALPHA)
    key = model.blocks[0].att.key
    with pytest.raises(ShapeMismatchError) as e:
        model.apply_miss(adapter, mode="fly", force=True)
    assert str(e.value) == (
        "MiSS adapter: blocks.0.att.key.weight.D is D [64, 4] with in_features 128, "
        "the model's layer needs D [128, 4] with in_features 128"
    )
    assert model.blocks[0].att.key is key and model.miss is None
    deep = MissAdapter.from_tensors(
        {"blocks.5.att.key.weight.D": torch.zeros(128, RANK)},
        {"blocks.5.att.key.weight.D": 128},
        rank=RANK,
        alpha=ALPHA,
    )
    with pytest.raises(ShapeMismatchError, match=r"the model has 2 layers \(0..1\)"):
        model.apply_miss(deep, force=True)


def test_autograd_trains_a_miss_adapter_on_the_fly(model: RWKV7) -> None:
    model.apply_miss(adapter_for(model), mode="fly", force=True)
    params = [m.D for m in model.modules() if isinstance(m, MissLinear)]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.SGD(params, lr=0.05)
    x, y = torch.tensor([TOKS[:-1]]), torch.tensor(TOKS[1:])
    losses = []
    for _ in range(3):
        logits, _ = model.forward(x, full_output=True)
        loss = torch.nn.functional.cross_entropy(logits[0], y)
        opt.zero_grad()
        loss.backward()
        losses.append(loss.item())
        opt.step()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in params)
    assert losses[-1] < losses[0]


def test_autograd_trains_a_state(model: RWKV7, tiny_state: Path) -> None:
    from rwkv_registry.model import load_state_weights

    w = load_state_weights(tiny_state)
    s0 = torch.stack([t.float() for t in w.time_state]).requires_grad_(True)  # [L, H, V, K]
    from rwkv_registry.model import StateWeights

    logits, _ = model.forward(torch.tensor([TOKS[:-1]]), model.new_state(1, StateWeights(tuple(s0))), full_output=True)
    torch.nn.functional.cross_entropy(logits[0], torch.tensor(TOKS[1:])).backward()
    assert s0.grad is not None and s0.grad.abs().sum() > 0


# ------------------------------------------------------------------------------------ reading files


def test_load_miss_from_torch_save_package(model: RWKV7, tmp_path: Path) -> None:
    adapter = adapter_for(model, fingerprint="cd" * 32)
    path = write_torch_save_package(tmp_path / "adapter-final.pth", adapter)
    loaded = load_miss(path)
    assert (loaded.rank, loaded.alpha, loaded.scale) == (RANK, ALPHA, ALPHA / RANK)
    assert loaded.base_fingerprint == "cd" * 32 and loaded.content_version == "f" * 64
    assert [t.name for t in loaded.targets] == [t.name for t in adapter.targets]
    for a, b in zip(loaded.targets, adapter.targets, strict=True):
        assert torch.equal(a.D, b.D) and a.in_features == b.in_features


def test_load_miss_legacy_folder(model: RWKV7, tmp_path: Path) -> None:
    adapter = adapter_for(model)
    packed = write_torch_save_package(tmp_path / "x.pth", adapter)
    folder = tmp_path / "legacy"
    folder.mkdir()
    with zipfile.ZipFile(packed) as zf:
        (folder / "adapter.json").write_bytes(zf.read("archive/miss.json"))
    save_tensors(folder / "adapter.pth", {t.name: t.D for t in adapter.targets})
    assert len(load_miss(folder).targets) == len(adapter.targets)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"method": "lora"}, "method is 'lora', expected 'miss'"),
        ({"layout": "block"}, "layout is 'block', expected 'modulo_rank_zero_pad'"),
        ({"rank": 0}, "rank is 0, expected an integer in 1..1024"),
        ({"alpha": "8"}, "alpha is '8', expected a finite number"),
        ({"base_fingerprint": "ABC"}, "base_fingerprint is 'ABC', expected 64 lower-case hex digits"),
        ({"targets": []}, "targets is missing or empty"),
    ],
    ids=["method", "layout", "rank", "alpha", "fingerprint", "no-targets"],
)
def test_bad_manifests_are_refused(model: RWKV7, tmp_path: Path, over: dict, message: str) -> None:
    path = write_torch_save_package(tmp_path / "a.pth", adapter_for(model), **over)
    with pytest.raises(WeightsFormatError) as e:
        load_miss(path)
    assert str(e.value).startswith(f"{path}: MiSS manifest: {message}")


def test_package_without_manifest_is_refused(tmp_path: Path) -> None:
    path = save_tensors(tmp_path / "plain.pth", {"blocks.0.att.key.weight.D": torch.zeros(4, 4)})
    with pytest.raises(WeightsFormatError, match=r"no 'archive/miss\.json' entry"):
        load_miss(path)


def test_missing_tensor_is_refused(model: RWKV7, tmp_path: Path) -> None:
    adapter = adapter_for(model)
    path = write_torch_save_package(tmp_path / "a.pth", adapter)
    extra = {
        "name": "blocks.1.att.key.weight.D",
        "layer": 1,
        "target": "att.key.weight",
        "in_features": 128,
        "shape": [128, RANK],
    }
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("archive/miss.json"))
    manifest["targets"] = [*manifest["targets"][:1], dict(extra, layer=7, name="blocks.7.att.key.weight.D")]
    path = write_torch_save_package(tmp_path / "b.pth", adapter, targets=manifest["targets"])
    with pytest.raises(WeightsFormatError, match=r"tensor 'blocks.7.att.key.weight.D' listed in targets is missing"):
        load_miss(path)


# -------------------------------------------------------------------- the registry's writer


def test_tiny_miss_file_loads_and_applies(model: RWKV7, tiny_base: Path, tmp_path: Path) -> None:
    from rwkv_registry.model.tiny import make_tiny_miss

    path = make_tiny_miss(tmp_path / "adapter-final.pth", tiny_base, rank=RANK, seed=2)
    adapter = load_miss(path)
    assert adapter.base_fingerprint == sha256(tiny_base)
    assert len(adapter.targets) == 6 * model.config.n_layer
    want = tiny_miss_tensors(model.config, rank=RANK, seed=2)
    for t in adapter.targets:
        assert torch.equal(t.D, want[t.name])
    with torch.no_grad():
        base, _ = model.forward(torch.tensor([TOKS]))
        model.apply_miss(adapter, mode="merge")
        merged, _ = model.forward(torch.tensor([TOKS]))
        model.remove_miss()
        model.apply_miss(adapter, mode="fly")
        fly, _ = model.forward(torch.tensor([TOKS]))
    assert rel_err(merged, fly) < 1e-5 and rel_err(merged, base) > 1e-3
