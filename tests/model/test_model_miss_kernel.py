"""A MiSS adapter applied on the fly: the model's kernels path (the fused MiSS kernel, interpreted
here) gives the reference path's logits, and ``add_miss_term_`` follows the model's backend choice."""

from __future__ import annotations

import pytest
import torch
from model_helpers import rel_err

from rwkv_registry.kernels.miss import launch as miss_launch
from rwkv_registry.model import RWKV7, MissAdapter, set_wkv_backend
from rwkv_registry.model.miss import add_miss_term_
from rwkv_registry.model.tiny import miss_in_out, tiny_miss_tensors

PROMPT = [1, 99, 65000, 4, 261, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
RANK = 5  # does not divide the widths (128, 512): a partial last block everywhere


@pytest.fixture
def miss_launches(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Triton's interpreter on; one entry per launch of the MiSS kernel."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seen: list[bool] = []
    real = miss_launch._kernels

    def spy(interpret: bool) -> object:
        seen.append(interpret)
        return real(interpret)

    monkeypatch.setattr(miss_launch, "_kernels", spy)
    return seen


def _run(model: RWKV7, backend: str) -> list[torch.Tensor]:
    """Prefill logits, then three in-place decode steps' logits, with the given backend."""
    previous = set_wkv_backend(backend)
    try:
        logits, state = model.forward(torch.tensor([PROMPT]))
        steps = [model.advance(torch.tensor([[t]]), state) for t in (5, 6, 7)]
    finally:
        set_wkv_backend(previous)
    return [t.float() for t in (logits, *steps)]


@torch.no_grad()
def test_on_the_fly_adapter_through_the_kernel_matches_the_reference(tiny_base, miss_launches: list[bool]) -> None:
    model = RWKV7.from_pth(tiny_base, dtype=torch.float32)
    d = tiny_miss_tensors(model.config, rank=RANK, seed=3, std=0.05)
    ins = {n: miss_in_out(model.config, n.split(".", 2)[2][:-2])[0] for n in d}
    model.apply_miss(MissAdapter.from_tensors(d, ins, rank=RANK, alpha=10.0), mode="fly", force=True)
    want = _run(model, "reference")
    assert miss_launches == []
    got = _run(model, "kernels")
    # prefill (19 rows) and 3 decode steps, per layer: the r/k/v terms in one launch and the FFN
    # key's inside relu² (kernels/miss); the output's and the FFN value's go into the next add +
    # LayerNorm (kernels/add_norm)
    assert len(miss_launches) == 4 * 2 * model.config.n_layer
    for g, w in zip(got, want, strict=True):
        assert rel_err(g, w) < 1e-4
    model.remove_miss()
    plain = _run(model, "reference")
    assert rel_err(plain[0], want[0]) > 1e-3  # the adapter does change the logits


def test_add_miss_term_follows_the_model_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr("rwkv_registry.model.miss.miss_term_", lambda *a, backend: seen.append(backend) or a[0])
    out, x, D = torch.zeros(2, 4), torch.ones(2, 6), torch.ones(4, 3)
    previous = set_wkv_backend("auto")
    try:
        for backend in ("auto", "kernels", "reference"):
            set_wkv_backend(backend)
            add_miss_term_(out, x, D, 1.0)
    finally:
        set_wkv_backend(previous)
    assert seen == ["reference", "auto", "reference"]  # "auto" sends CPU tensors to the reference
