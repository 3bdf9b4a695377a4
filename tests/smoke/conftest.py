"""Fixtures of the smoke tests: the demo's tiny trained weights, shared by every test process.

The weights are trained once into ``build/test-cache/smoke-tiny`` (keyed by their inputs, so a
changed training script retrains) under a file lock, so pytest-xdist workers and later runs
reuse them. Tiny models gain nothing from threads: each test runs with one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from filelock import FileLock

from rwkv_registry.model.smoke.train_tiny import TinyWeights, build_tiny_weights

REPO = Path(__file__).resolve().parents[2]
WEIGHTS_DIR = REPO / "build" / "test-cache" / "smoke-tiny"


@pytest.fixture(scope="session")
def tiny_weights() -> TinyWeights:
    """The demo's tiny base, State and MiSS (trained on first use, then reused)."""
    WEIGHTS_DIR.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(WEIGHTS_DIR) + ".lock"):
        return build_tiny_weights(WEIGHTS_DIR)


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
