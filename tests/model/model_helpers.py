"""Helpers shared by the model tests (imported by name: tests/model has no __init__.py)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import torch


def rel_err(ours: torch.Tensor, ref: torch.Tensor) -> float:
    """max |ours - ref| / std(ref), the comparison metric of the issue."""
    ref = ref.detach().double()
    return float((ours.detach().double() - ref).abs().max() / ref.std())


def rwkv_package(path: Path):
    """The `rwkv` PyPI package's RWKV_x070 on a checkpoint, strategy cpu fp32."""
    for k, v in (("RWKV_V7_ON", "1"), ("RWKV_JIT_ON", "0"), ("RWKV_CUDA_ON", "0")):
        os.environ[k] = v  # read by rwkv.model at import time
    # TorchScript's profiling executor would re-optimise the package's scripted functions for every
    # new input shape (seconds per call on CPU); functions scripted with optimisation off run plainly.
    # The package's use of torch.jit.script is deprecated in recent torch: not our warning to show.
    with torch.jit.optimized_execution(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import rwkv.model

        assert rwkv.model.RWKV is rwkv.model.RWKV_x070, "RWKV_V7_ON=1 was not set before rwkv.model was imported"
        return rwkv.model.RWKV(model=str(path)[: -len(".pth")], strategy="cpu fp32")


def compiler_elementwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eager blocks run the element-wise work as ``torch.compile`` sees it: the PyTorch reference
    (left for the compiler to fuse), whatever the WKV backend; for bit-for-bit compile checks."""
    import importlib

    for name in ("block", "channel_mix", "miss", "rwkv7", "time_mix"):
        module = importlib.import_module(f"rwkv_registry.model.{name}")
        if hasattr(module, "elementwise_backend"):
            monkeypatch.setattr(module, "elementwise_backend", lambda x: "reference")
