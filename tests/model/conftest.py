"""Fixtures of the model tests: tiny checkpoints, the `rwkv` package as the reference."""

from __future__ import annotations

import os

# The rwkv package reads these at import time: RWKV-7 on, no CUDA kernel build.
os.environ["RWKV_V7_ON"] = "1"
os.environ["RWKV_JIT_ON"] = "0"
os.environ["RWKV_CUDA_ON"] = "0"

from pathlib import Path

import pytest
import torch

from rwkv_registry.model import RWKV7
from rwkv_registry.model.tiny import make_tiny_base, make_tiny_state


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny")


@pytest.fixture(scope="session")
def tiny_base(tiny_dir: Path) -> Path:
    """2 layers, width 128, full 65536 vocabulary, bf16 on disk."""
    return make_tiny_base(tiny_dir / "rwkv7-tiny.pth", seed=0)


@pytest.fixture(scope="session")
def tiny_state(tiny_dir: Path, tiny_base: Path) -> Path:
    return make_tiny_state(tiny_dir / "state.pth", tiny_base, seed=1)


@pytest.fixture
def model(tiny_base: Path) -> RWKV7:
    """A fresh fp32 model per test (tests may apply adapters)."""
    return RWKV7.from_pth(tiny_base, dtype=torch.float32)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models gain nothing from intra-op threads, and CI runs two pytest workers on two cores:
    one thread per worker avoids oversubscription (spin-waiting threads made tests 10x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
