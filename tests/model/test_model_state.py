"""The recurrent state: prefill equals steps, split runs, batches, State files."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from model_helpers import rel_err

from rwkv_registry.model import RWKV7, ShapeMismatchError, WeightsFormatError, load_state_weights
from rwkv_registry.model.tiny import make_tiny_state, save_tensors, tiny_config

TOKS = [3, 65000, 510, 11, 261, 40000, 7, 7, 1234, 99]


def test_prefill_equals_single_steps(model: RWKV7) -> None:
    with torch.no_grad():
        full, state_full = model.forward(torch.tensor([TOKS]), full_output=True)  # [1, T, V]
        state = None
        steps = []
        for t in TOKS:
            logits, state = model.forward(torch.tensor([[t]]), state)
            steps.append(logits[0])
    for i, step in enumerate(steps):
        assert rel_err(full[0, i], step) < 1e-5, i
    for a, b in zip(state_full.to_rwkv_list(), state.to_rwkv_list(), strict=True):
        assert rel_err(a, b) < 1e-5


def test_split_forward_equals_one_forward(model: RWKV7) -> None:
    with torch.no_grad():
        whole, _ = model.forward(torch.tensor([TOKS]))
        first, state = model.forward(torch.tensor([TOKS[:6]]))
        second, _ = model.forward(torch.tensor([TOKS[6:]]), state)
    assert rel_err(second, whole) < 1e-5
    assert rel_err(first, whole) > 1e-2  # different positions differ: the comparison has teeth


def test_forward_leaves_given_state_untouched_and_copy_is_independent(model: RWKV7) -> None:
    with torch.no_grad():
        _, state = model.forward(torch.tensor([TOKS[:4]]))
        saved = copy.deepcopy(state)
        dup = state.copy()
        a, _ = model.forward(torch.tensor([TOKS[4:]]), state)
        b, _ = model.forward(torch.tensor([TOKS[4:]]), dup)
        dup.layers[0].wkv.zero_()
    assert torch.equal(a, b)
    for x, y in zip(state.to_rwkv_list(), saved.to_rwkv_list(), strict=True):
        assert torch.equal(x, y)


def test_state_layout(model: RWKV7) -> None:
    cfg = model.config
    _, state = model.forward(torch.tensor([TOKS[:3], TOKS[3:6]]))
    assert state.batch_size == 2 and len(state.layers) == cfg.n_layer
    layer = state.layers[0]
    assert layer.att_shift.shape == (2, cfg.n_embd) and layer.ffn_shift.shape == (2, cfg.n_embd)
    assert layer.wkv.shape == (2, cfg.n_head, cfg.head_size, cfg.head_size)
    assert layer.wkv.dtype == torch.float32


def test_batch_rows_equal_separate_runs(model: RWKV7) -> None:
    rows = [TOKS[:5], TOKS[5:]]
    with torch.no_grad():
        batch, bstate = model.forward(torch.tensor(rows))
        for i, row in enumerate(rows):
            alone, astate = model.forward(torch.tensor([row]))
            assert rel_err(batch[i], alone[0]) < 1e-5
            for x, y in zip(bstate.select([i]).to_rwkv_list(), astate.to_rwkv_list(), strict=True):
                assert rel_err(x, y) < 1e-5


def test_cat_and_select_round_trip(model: RWKV7) -> None:
    from rwkv_registry.model import RWKV7State

    with torch.no_grad():
        _, s1 = model.forward(torch.tensor([TOKS[:3]]))
        _, s2 = model.forward(torch.tensor([TOKS[3:8]]))
    both = RWKV7State.cat([s1, s2])
    assert both.batch_size == 2
    swapped = both.select([1, 0])
    for x, y in zip(swapped.select([0]).to_rwkv_list(), s2.to_rwkv_list(), strict=True):
        assert torch.equal(x, y)


def test_new_state_applies_state_file(model: RWKV7, tiny_state: Path) -> None:
    weights = load_state_weights(tiny_state)
    raw = torch.load(tiny_state, weights_only=True)
    state = model.new_state(batch=3, time_state=weights)
    for i, layer in enumerate(state.layers):
        want = raw[f"blocks.{i}.att.time_state"].float()  # [H, V, K] bf16 on disk
        assert layer.wkv.dtype == torch.float32
        for b in range(3):
            assert torch.equal(layer.wkv[b], want)
        assert not layer.att_shift.any() and not layer.ffn_shift.any()


def test_bf16_and_fp32_state_files_give_the_same_state(model: RWKV7, tiny_base: Path, tmp_path: Path) -> None:
    p16 = make_tiny_state(tmp_path / "s16.pth", tiny_base, seed=4, dtype=torch.bfloat16)
    raw = torch.load(p16, weights_only=True)
    p32 = save_tensors(tmp_path / "s32.pth", {k: v.float() for k, v in raw.items()})
    a = model.new_state(1, load_state_weights(p16))
    b = model.new_state(1, load_state_weights(p32))
    for x, y in zip(a.to_rwkv_list(), b.to_rwkv_list(), strict=True):
        assert torch.equal(x, y)


def test_state_with_other_layer_count_is_refused(model: RWKV7, tmp_path: Path) -> None:
    cfg = tiny_config(n_layer=3)
    path = make_tiny_state(tmp_path / "three.pth", cfg)
    with pytest.raises(ShapeMismatchError) as e:
        model.new_state(1, load_state_weights(path))
    assert str(e.value) == (
        f"{path}: State shape [layers, H, V, K] = [3, 2, 64, 64] does not fit the model [2, 2, 64, 64]"
    )


def test_state_with_other_heads_is_refused(model: RWKV7, tmp_path: Path) -> None:
    path = make_tiny_state(tmp_path / "wide.pth", tiny_config(n_embd=256))
    with pytest.raises(ShapeMismatchError, match=r"\[2, 4, 64, 64\] does not fit the model \[2, 2, 64, 64\]"):
        model.new_state(1, load_state_weights(path))


def _write(path: Path, tensors: dict[str, torch.Tensor]) -> Path:
    return save_tensors(path, tensors)


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        (
            {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "blocks.2.att.time_state": torch.zeros(2, 64, 64)},
            "State file lacks layers [1] (has 2 of 3)",
        ),
        (
            {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "emb.weight": torch.zeros(4, 4)},
            "unexpected entry 'emb.weight' in a State file",
        ),
        (
            {"blocks.0.att.time_state": torch.zeros(2, 64, 32)},
            "blocks.0.att.time_state has shape [2, 64, 32], expected [H, V, K] like layer 0 [2, 64, 32]",
        ),
        (
            {"blocks.0.att.time_state": torch.zeros(2, 64, 64, dtype=torch.float64)},
            "blocks.0.att.time_state has dtype torch.float64, expected bfloat16, float16 or float32",
        ),
        ({}, "no blocks.N.att.time_state tensor; not a State file"),
    ],
    ids=["gap", "extra", "not-square", "float64", "empty"],
)
def test_bad_state_files_are_refused(tmp_path: Path, tensors: dict, message: str) -> None:
    path = _write(tmp_path / "bad.pth", tensors)
    with pytest.raises(WeightsFormatError) as e:
        load_state_weights(path)
    assert str(e.value) == f"{path}: {message}"


def test_lfs_pointer_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.pth"
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 16777216\n")
    with pytest.raises(WeightsFormatError, match="is a Git LFS pointer, not the weights") as e:
        load_state_weights(path)
    assert e.value.hint.startswith("Fetch the real file")


def test_state_written_by_the_trainer_layout_loads(model: RWKV7, tmp_path: Path) -> None:
    """rwkv_lightning_cuda's own zip writer (unaligned storages, protocol-2 plain dict) reads the same."""
    pthwrite = pytest.importorskip("rwkv_registry.formats.pthwrite")
    g = torch.Generator().manual_seed(8)
    tensors = {f"blocks.{i}.att.time_state": torch.randn(2, 64, 64, generator=g) for i in range(2)}
    raw = {k: pthwrite.RawTensor("float32", (2, 64, 64), v.numpy().tobytes()) for k, v in tensors.items()}
    path = tmp_path / "lightning-state.pth"
    pthwrite.write_pth(path, raw, layout="lightning")
    state = model.new_state(1, load_state_weights(path))
    for i, layer in enumerate(state.layers):
        assert torch.equal(layer.wkv[0], tensors[f"blocks.{i}.att.time_state"])


def test_a_state_holding_nan_is_refused_unless_asked_not_to(tmp_path: Path) -> None:
    """The model API refuses a NaN State by default; smoke runs it (check_finite=False) and reports it."""
    from rwkv_registry.model.errors import WeightsFormatError
    from rwkv_registry.model.state import load_state_weights

    path = tmp_path / "nan-state.pth"
    states = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64) for i in range(2)}
    states["blocks.1.att.time_state"][0, 3, 4] = float("nan")
    torch.save(states, path)
    with pytest.raises(WeightsFormatError, match=r"blocks\.1\.att\.time_state holds 1 NaN/Inf"):
        load_state_weights(path)
    assert load_state_weights(path, check_finite=False).shape[0] == 2
