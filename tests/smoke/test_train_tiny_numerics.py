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


_CALLER = """
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])  # the copy first, as a mutation tool puts it
from dataclasses import replace
from pathlib import Path
from rwkv_registry.model.smoke import train_tiny
assert Path(train_tiny.__file__).is_relative_to(sys.argv[1]), train_tiny.__file__
config = replace(train_tiny.TrainConfig(), n_layer=1, n_embd=64, state_steps=2, miss_steps=2)
out = {}
for parallel in (False, True):
    w = train_tiny.build_tiny_weights(Path(sys.argv[2]) / str(parallel), config=config, parallel=parallel)
    out[str(parallel)] = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (w.base, w.state, w.miss)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_caller_running_a_mutated_copy_of_the_package_and_its_workers_train_the_same_bytes(tmp_path):
    """The mutation audit's case: a copy of the package, mutated, first on the caller's ``sys.path``.
    The caller trained the mutant in-process while its workers imported the installed code."""
    import json
    import shutil
    import subprocess
    import sys

    import rwkv_registry
    import rwkv_registry.kernels
    import rwkv_registry.model
    import rwkv_registry.schemas
    import rwkv_registry.tui

    package = tmp_path / "copy" / "rwkv_registry"
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(rwkv_registry.__file__).parent, package, ignore=skip)
    for sub in (rwkv_registry.kernels, rwkv_registry.model, rwkv_registry.schemas, rwkv_registry.tui):
        shutil.copytree(Path(sub.__file__).parent, package / sub.__name__.split(".")[-1], ignore=skip)
    mutant = package / "model" / "smoke" / "train_tiny.py"
    source = mutant.read_text()
    assert source.count("torch.optim.Adam(params, lr=lr)") == 1
    mutant.write_text(source.replace("torch.optim.Adam(params, lr=lr)", "torch.optim.Adam(params, lr=lr / 2)"))
    done = subprocess.run(
        [sys.executable, "-c", _CALLER, str(package.parent), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    hashes = json.loads(done.stdout.splitlines()[-1])
    assert hashes["False"] == hashes["True"]
