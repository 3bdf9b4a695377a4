"""rwkv_miss_tune's training checkpoint ``checkpoint-N/{training.pth, checkpoint.json}`` (test helper), ported from
``Trainer::checkpoint(dir, step, epoch, row, initial, states)``:

- the records (every version): per target ``name(t) + "." + p`` for p in master, gradient, adam_m, adam_v, each
  ``WriteTensor{n, {t.out, t.rank}, false, fp32 bytes}``, then ``initial_state`` ``{states}``: 4 × targets + 1;
- the embedded manifest (``src/miss/trainer.cpp`` 949bfa8, fp16; ``src/bf16_training/trainer.cpp`` 43ceb30 with
  ``manifest["dtype"] = "bfloat16"``): ``rank``, ``alpha``, ``scale = alpha_ / rank_``, ``base_fingerprint``,
  ``adapter_manifest(manifest, targets_, forward)`` over ``forward``, the 16-bit copy of the masters the training
  used (``cast_master``: ``__float2half_rn``, ties to even, src/miss/kernels.cu ``cast``; the bf16 kernel's
  ``to_bf16`` is not in the files read: ties to even is assumed), then ``manifest["tensor_source"] = "master"``
  and ``write_pth(dir + ".tmp/training.pth", ts, Json::writeString(Json::StreamWriterBuilder{}, manifest))`` (the
  default writer: tabs and newlines);
- the legacy form (``src/miss/trainer.cpp`` fc45586): ``write_pth(dir + ".tmp/training.pth", ts)``, no manifest;
- ``checkpoint.json``: ``kind`` "miss_training_checkpoint", ``format_version`` 1, ``config`` (the run's config:
  its whole content is not in the files read; the server reads ``rank``, ``alpha`` and ``base_fingerprint``),
  ``step``, ``epoch``, ``row``, ``tensor_digest = fingerprint_file(training.pth)`` (sha256 hex, src/io/
  fingerprint.cpp), ``rng`` (the ``mt19937_64`` state as text), ``scheduler = config["planned_steps"]``, written
  ``f << m`` (the default StreamWriterBuilder, no final newline).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from conformance.lightning_cpp import WriteTensor, json_styled, write_pth
from conformance.miss_adapter_cpp import HostTensor, adapter_manifest, f32, tensor_name

PARTS = ("master", "gradient", "adam_m", "adam_v")


def cast_master(master: np.ndarray, *, bf16: bool) -> bytes:
    """The trainer's 16-bit copy of the fp32 masters (ties to even)."""
    x = np.ascontiguousarray(master, dtype="<f4")
    if not bf16:
        with np.errstate(over="ignore"):  # beyond ±65504: Inf, as __float2half_rn gives
            return x.astype("<f2").tobytes()
    bits = x.view("<u4").astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF) >> 16).astype("<u2").tobytes()


def checkpoint(
    directory: Path,
    ts: list[HostTensor],
    buffers: dict[str, np.ndarray],
    initial_state: np.ndarray,
    config: dict[str, Any],
    *,
    rank: int,
    alpha: float,
    bf16: bool = False,
    embedded: bool = True,
    step: int = 100,
    epoch: int = 0,
    row: int = 100,
) -> tuple[Path, Path]:
    """Write ``directory``/training.pth and checkpoint.json; ``buffers`` maps each of :data:`PARTS` to the flat fp32
    buffer (``count`` values) the trainer holds. Returns the two paths."""
    write = []
    for t in ts:
        n = t.out * t.rank
        for part in PARTS:
            data = np.ascontiguousarray(buffers[part][t.offset : t.offset + n], dtype="<f4").tobytes()
            write.append(WriteTensor(tensor_name(t) + "." + part, [t.out, t.rank], False, data))
    write.append(WriteTensor("initial_state", [int(initial_state.size)], False, initial_state.astype("<f4").tobytes()))
    manifest_text = ""
    if embedded:
        manifest: dict[str, Any] = {"dtype": "bfloat16"} if bf16 else {}
        manifest["rank"] = rank
        manifest["alpha"] = f32(alpha)
        manifest["scale"] = f32(f32(alpha) / rank)
        manifest["base_fingerprint"] = config["base_fingerprint"]
        manifest = adapter_manifest(manifest, ts, cast_master(buffers["master"], bf16=bf16))
        manifest["tensor_source"] = "master"
        manifest_text = json_styled(manifest)
    directory.mkdir(parents=True)
    pth = directory / "training.pth"
    pth.write_bytes(write_pth(write, manifest_text))
    meta = {
        "kind": "miss_training_checkpoint",
        "format_version": 1,
        "config": config,
        "step": step,
        "epoch": epoch,
        "row": row,
        "tensor_digest": hashlib.sha256(pth.read_bytes()).hexdigest(),
        "rng": " ".join(str(5489 + i) for i in range(313)),
        "scheduler": config.get("planned_steps"),
    }
    js = directory / "checkpoint.json"
    js.write_bytes(json_styled(meta).encode())
    return pth, js
