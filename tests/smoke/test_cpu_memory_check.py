"""Mutation audit of smoke's CPU memory check (model/smoke/evaluate.py: fp32_bytes, check_cpu_memory), in process:
cases the CLI test (test_smoke_cli.py) left open."""

from __future__ import annotations

import pytest

from rwkv_registry.core.errors import UsageError
from rwkv_registry.model.smoke import evaluate

BASE = {"name": "b", "architecture": {"n_embd": 64, "n_layer": 2, "vocab_size": 100}}


def test_fp32_bytes_takes_the_channel_mix_as_4c_unless_recorded() -> None:
    """F = 4C when ffn_size is not recorded (kills the mutant F = C)."""
    c, layers, vocab = 64, 2, 100
    assert evaluate.fp32_bytes(BASE) == 4 * (layers * (4 * c * c + 2 * c * 4 * c) + 2 * vocab * c)
    arch = {**BASE["architecture"], "ffn_size": 96}  # type: ignore[dict-item]
    assert evaluate.fp32_bytes({"name": "b", "architecture": arch}) == 4 * (
        layers * (4 * c * c + 2 * c * 96) + 2 * vocab * c
    )


def test_only_a_cpu_run_with_a_known_memory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA run loads the base on the GPU, and a machine that does not say its memory is not judged: neither is
    refused (kills the mutants without ``device == "cpu"`` and without ``have``)."""
    need = evaluate.fp32_bytes(BASE)
    monkeypatch.setattr(evaluate, "physical_memory", lambda: need - 1)
    with pytest.raises(UsageError):
        evaluate.check_cpu_memory(BASE, "cpu")
    evaluate.check_cpu_memory(BASE, "cuda")
    monkeypatch.setattr(evaluate, "physical_memory", lambda: need)
    evaluate.check_cpu_memory(BASE, "cpu")
    monkeypatch.setattr(evaluate, "physical_memory", lambda: 0)
    evaluate.check_cpu_memory(BASE, "cpu")
