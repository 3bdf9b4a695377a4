"""Helpers shared by the model tests (imported by name: tests/model has no __init__.py)."""

from __future__ import annotations

import io
import json
import os
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from rwkv_registry.model import RWKV7, MissAdapter
from rwkv_registry.model.tiny import miss_in_out, tiny_miss_tensors

RANK, ALPHA = 4, 8.0  # the tiny MiSS adapters of the model tests


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


def adapter_for(model: RWKV7, *, seed: int = 2, fingerprint: str = "0" * 64) -> MissAdapter:
    d = tiny_miss_tensors(model.config, rank=RANK, seed=seed, std=0.05)
    ins = {n: miss_in_out(model.config, n.split(".", 2)[2][:-2])[0] for n in d}
    return MissAdapter.from_tensors(d, ins, rank=RANK, alpha=ALPHA, base_fingerprint=fingerprint)


def write_torch_save_package(
    path: Path, adapter: MissAdapter, *, drop: tuple[str, ...] = (), **manifest_over: object
) -> Path:
    """A MiSS package written by torch.save plus an `archive/miss.json` entry (the other writer);
    ``manifest_over`` replaces manifest keys, ``drop`` leaves keys out."""
    tensors = {t.name: t.D for t in adapter.targets}
    buf = io.BytesIO()
    torch.save(tensors, buf)
    manifest = {
        "format_version": 1,
        "method": "miss",
        "dtype": "bfloat16",
        "layout": "modulo_rank_zero_pad",
        "kind": "inference_adapter",
        "rank": adapter.rank,
        "alpha": adapter.alpha,
        "scale": adapter.scale,
        "base_fingerprint": adapter.base_fingerprint,
        "content_version": "f" * 64,
        "targets": [
            {
                "name": t.name,
                "layer": t.layer,
                "target": t.target,
                "in_features": t.in_features,
                "shape": list(t.D.shape),
            }
            for t in adapter.targets
        ],
    }
    manifest.update(manifest_over)
    for key in drop:
        del manifest[key]
    path.write_bytes(buf.getvalue())
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("archive/miss.json", json.dumps(manifest))
    return path
