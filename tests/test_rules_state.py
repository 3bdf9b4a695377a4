"""State rules (STA001, STA002, STA004, STA006, STA007): a missing layer, the shape of another base, non-finite
values, tensors besides the time states, and States saved as safetensors.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

import json
from pathlib import Path

from mutations import replace_state
from regtools import STATE, TINY_ARCH, TINY_BASE, edit_index, findings, messages_of, refresh, state_train, where

from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import add_entry

# --- STA001, STA002: the tensors a State holds and their shapes -----------------------------------------------------


def test_sta001_a_missing_layer_is_named(reg: Path) -> None:
    """Mutant: the expected names bounded by the file's own count, so that a missing last layer went unseen."""
    replace_state(reg, n_layer=1)
    assert messages_of(reg, "STA001") == ["1 state tensors for a 2-layer base; missing ['blocks.1.att.time_state']"]


def test_sta002_once_per_file_and_for_the_head_count(reg: Path) -> None:
    """Mutants: one STA002 per tensor instead of per file; the head count H not compared."""
    replace_state(reg, shape=(2, 32, 32))
    assert len(findings(reg, "STA002")) == 1
    replace_state(reg, shape=(3, 64, 64))
    assert messages_of(reg, "STA002") == [
        "blocks.0.att.time_state has shape [3, 64, 64], the base needs [2, 64, 64] [H, V, K]"
    ]


# --- STA004: values -------------------------------------------------------------------------------------------------


def test_sta004_an_infinite_float32_state_value(reg: Path) -> None:
    """Mutant: float32 States scanned for NaN only (`np.isnan`), so +Inf (a diverged run) passed."""
    import torch

    sd = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64) for i in range(2)}
    sd["blocks.1.att.time_state"][1, 2, 3] = float("inf")
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    assert messages_of(reg, "STA004") == ["blocks.1.att.time_state holds 1 NaN/Inf value(s)"]


# --- STA006: tensors besides the time states ------------------------------------------------------------------------


def test_sta006_a_state_file_with_one_more_tensor_is_a_state_with_a_warning(reg: Path) -> None:
    """Mutant: a file counted as a State only when every tensor is a `blocks.N.att.time_state`: the server takes a
    State with one tensor more (it skips the others), so the registry does, with STA006 naming the tensor, and the
    State rules run on its time states. A file that holds a whole model (emb.weight and head.weight) beside time
    states is no State: STA001 names the others (IDX003 for an entry that says miss)."""
    import torch

    sd = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64, dtype=torch.bfloat16) for i in range(2)}
    sd["blocks.0.att.time_shift"] = torch.zeros(128, dtype=torch.bfloat16)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    found = [f for f in findings(reg) if f.path == STATE]
    assert [(f.code, f.message) for f in found] == [
        ("STA006", "1 tensor(s) besides the time states: ['blocks.0.att.time_shift']")
    ]
    sd["blocks.1.att.time_state"] = torch.zeros(2, 32, 32, dtype=torch.bfloat16)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    assert {f.code for f in findings(reg) if f.path == STATE} == {"STA002", "STA006"}
    sd = {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "emb.weight": torch.zeros(4, 128)}
    sd["head.weight"] = torch.zeros(4, 128)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    found = [f for f in findings(reg) if f.path == STATE]
    assert [(f.code, f.message) for f in found] == [
        ("STA001", "1 state tensors and others besides: unexpected ['emb.weight', 'head.weight']")
    ]
    # an entry that says miss still gets IDX003: the file is no MiSS adapter either
    edit_index(reg, lambda ix: ix["entries"][0].update(method="miss"))
    assert "IDX003" in {f.code for f in findings(reg) if f.path == STATE}


# --- STA007: State files in safetensors format ----------------------------------------------------------------------


def _state_safetensors(path: Path, shape: tuple[int, ...] = (2, 64, 64)) -> Path:
    """A State as safetensors.torch.save_file writes it (bf16, one tensor per layer of the tiny base)."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(5)
    tensors = {
        f"blocks.{i}.att.time_state": (torch.randn(shape, generator=g) * 0.1).to(torch.bfloat16)
        for i in range(TINY_ARCH["n_layer"])
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, path, metadata={"format": "pt"})
    return path


def _add_safetensors_state(reg: Path, tmp_path: Path) -> str:
    src = _state_safetensors(tmp_path / "src" / "s2.safetensors")
    add_entry(reg, src, base=TINY_BASE, data_version="v1", train=state_train())
    return f"{TINY_BASE}/state/v1/s2.safetensors"


def test_safetensors_state_validates(reg: Path, tmp_path: Path) -> None:
    """A State saved as .safetensors is registered and validates like a .pth one, but for the STA007 warning
    (rwkv_lightning_cuda's upload reads torch .pth archives only)."""
    rel = _add_safetensors_state(reg, tmp_path)
    entry = next(e for e in json.loads((reg / "index.json").read_text())["entries"] if e["path"] == rel)
    assert entry["method"] == "state"
    report = validate_registry(reg, use_cache=False)
    assert [(f.code, f.path) for f in report.findings if f.path == rel] == [("STA007", rel)]
    assert not [f for f in report.findings if f.code[:3] in ("STA", "PTH", "LAY", "IDX") and f.code != "STA007"]
    assert report.ok


def test_safetensors_state_of_the_wrong_shape_is_sta002(reg: Path, tmp_path: Path) -> None:
    """The same State replaced by one trained for another base (heads of 32): STA002 on that file."""
    rel = _add_safetensors_state(reg, tmp_path)
    _state_safetensors(reg / rel, shape=(2, 32, 32))
    refresh(reg, rel)
    assert where(reg, "STA002") == {
        rel: ["blocks.0.att.time_state has shape [2, 32, 32], the base needs [2, 64, 64] [H, V, K]"]
    }
    assert where(reg, "PTH012") == {}
