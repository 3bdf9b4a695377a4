"""The demo's tiny training gives the same bytes in this process and in a worker process by
construction: both train under ``train_tiny.training_numerics()``, whatever the caller had set."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import rwkv_registry.model.wkv as wkv_module
from rwkv_registry.model.smoke import train_tiny
from rwkv_registry.model.smoke.train_tiny import TrainConfig, demo_base_tensors, training_numerics
from rwkv_registry.model.tiny import save_tensors

SHORT = replace(TrainConfig(), n_layer=1, n_embd=64, state_steps=2, miss_steps=2)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _settings() -> tuple[object, ...]:
    return (
        torch.get_num_threads(),
        torch.get_default_dtype(),
        torch.backends.mkldnn.matmul.fp32_precision,
        train_tiny._flushes_denormals(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_grad_enabled(),
    )


@pytest.fixture
def other_numerics(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What a caller may have set before training in-process, none of which a fresh worker inherits:
    bf16 fp32-matmuls (``torch.set_float32_matmul_precision("medium")`` on the CPU), fp64 as the
    default dtype, denormals flushed. Each of the first two alone changed the bytes."""
    before = torch.backends.mkldnn.matmul.fp32_precision
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    torch.set_default_dtype(torch.float64)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
        torch.set_default_dtype(torch.float32)
        torch.backends.mkldnn.matmul.fp32_precision = before


def test_in_process_and_worker_training_give_the_same_bytes_whatever_the_caller_set(tmp_path, other_numerics):
    base = save_tensors(tmp_path / "base.pth", {k: v.to(torch.bfloat16) for k, v in demo_base_tensors(SHORT).items()})
    jobs = [(part, str(base), str(tmp_path / f"worker-{part}.pth"), SHORT) for part in ("state", "miss")]
    train_tiny._run_parts_in_processes(jobs)  # fresh processes: default numerics
    settings = _settings()
    for part in ("state", "miss"):
        train_tiny._train_part(part, str(base), str(tmp_path / f"here-{part}.pth"), SHORT)
        assert _settings() == settings  # the caller's settings are back
        assert _sha(tmp_path / f"here-{part}.pth") == _sha(tmp_path / f"worker-{part}.pth"), part


def test_training_numerics_sets_one_set_of_conditions_and_restores_the_caller_s(other_numerics, monkeypatch):
    """Also the model's element-wise ops: the references, not the Triton kernels that ``set_wkv_backend
    ("kernels")`` with ``TRITON_INTERPRET=1`` picks for gradient-free passes (the MiSS's System turn):
    in-process, that changed the MiSS's bytes (and interpreted Triton is slow)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(wkv_module, "_BACKEND", "kernels")  # set_wkv_backend("kernels"), undone after
    monkeypatch.setattr(wkv_module, "_FUSED", True)
    torch.set_num_threads(2)  # the autouse fixture restores its own value afterwards
    import rwkv_registry.model.time_mix as time_mix
    from rwkv_registry.model.smoke.chunked import wkv7_chunked
    from rwkv_registry.model.wkv import elementwise_backend

    wkv = time_mix.wkv7
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        before = _settings()
        with torch.no_grad(), training_numerics():
            assert _settings() == (1, torch.float32, "ieee", False, False, True)
            assert time_mix.wkv7 is wkv7_chunked
            assert elementwise_backend(torch.zeros(1)) == "reference"  # not the Triton kernels
        assert _settings() == before and torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
    assert time_mix.wkv7 is wkv
    assert elementwise_backend(torch.zeros(1)) == "auto"  # the caller's choice is back
