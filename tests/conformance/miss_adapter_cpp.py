"""What rwkv_lightning_cuda's MiSS writers share, ported from ``src/miss/adapter.cpp`` (43ceb30) (test helper).

- ``target_names``: att.receptance|key|value|output.weight, ffn.key.weight, ffn.value.weight (TargetCount 6,
  FfnKey 4, FfnValue 5);
- ``HostTensor{layer, target, in, out, rank, offset}`` (include/rwkv/runtime/rwkv_adapter.hpp);
- ``tensor_name(t)``: ``"blocks." + std::to_string(t.layer) + "." + target_names[t.target] + ".D"``;
- ``content_version(manifest, data)``: ``m.removeMember("content_version")``, sha256 of ``json(m)`` then of the
  16-bit ``data`` (``data.size() * 2`` bytes, little-endian on the machines it runs on);
- ``adapter_manifest(m, ts, data)``: ``format_version`` 1, ``method`` "miss", ``dtype`` "float16" unless it is
  "bfloat16", ``layout`` "modulo_rank_zero_pad", ``kind`` "inference_adapter", ``targets`` one object per tensor
  ``{name: tensor_name(t), layer, target: target_names[t.target], in_features: t.in, shape: [t.out, t.rank]}``,
  then ``content_version``;
- the trainers' targets (``src/miss/trainer.cpp`` ``Trainer::Trainer``): for each layer, for each selected target
  in ``std::set`` order, ``HostTensor{l, i, i == FfnValue ? ffn : channels, i == FfnKey ? ffn : channels, rank,
  count}`` with ``count`` the running offset;
- float32 numbers (``float alpha_``; ``m["alpha"] = alpha_`` and ``m["scale"] = alpha_ / rank_`` store a float
  widened to a double): :func:`f32`.

Shares no code with rwkv_registry (its JSON writer is :mod:`conformance.lightning_cpp`).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from conformance.lightning_cpp import json_compact

TARGET_NAMES = (
    "att.receptance.weight",
    "att.key.weight",
    "att.value.weight",
    "att.output.weight",
    "ffn.key.weight",
    "ffn.value.weight",
)
FFN_KEY, FFN_VALUE = 4, 5


@dataclass
class HostTensor:
    layer: int
    target: int
    in_: int
    out: int
    rank: int
    offset: int = 0


def f32(x: float) -> float:
    """A C++ ``float`` holding ``x``, as the double a Json::Value gets from it."""
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


def tensor_name(t: HostTensor) -> str:
    return "blocks." + str(t.layer) + "." + TARGET_NAMES[t.target] + ".D"


def trainer_targets(
    layers: int, channels: int, ffn: int, rank: int, selected: tuple[int, ...] = tuple(range(6))
) -> list[HostTensor]:
    """``Trainer::Trainer``'s ``targets_``: layer-major, targets in ascending index."""
    out, count = [], 0
    for layer in range(layers):
        for i in sorted(set(selected)):
            t = HostTensor(
                layer, i, ffn if i == FFN_VALUE else channels, ffn if i == FFN_KEY else channels, rank, count
            )
            count += t.out * rank
            out.append(t)
    return out


def content_version(manifest: dict[str, Any], data: bytes) -> str:
    m = {k: v for k, v in manifest.items() if k != "content_version"}
    h = hashlib.sha256(json_compact(m).encode())
    h.update(data)
    return h.hexdigest()


def adapter_manifest(m: dict[str, Any], ts: list[HostTensor], data: bytes) -> dict[str, Any]:
    m = dict(m)
    m["format_version"] = 1
    m["method"] = "miss"
    if m.get("dtype") != "bfloat16":
        m["dtype"] = "float16"
    m["layout"] = "modulo_rank_zero_pad"
    m["kind"] = "inference_adapter"
    m["targets"] = [
        {
            "name": tensor_name(t),
            "layer": t.layer,
            "target": TARGET_NAMES[t.target],
            "in_features": t.in_,
            "shape": [t.out, t.rank],
        }
        for t in ts
    ]
    m["content_version"] = content_version(m, data)
    return m


def export_input(rank: int, alpha: float, base_fingerprint: str, *, bf16: bool) -> dict[str, Any]:
    """``Trainer::export_adapter``'s ``m``: ``dtype`` "bfloat16" in the bf16 trainer (src/bf16_training/trainer.cpp,
    43ceb30), none in the fp16 one (src/miss/trainer.cpp, 949bfa8); ``rank``, ``alpha`` and ``scale`` from the
    float ``alpha_`` and int ``rank_``; ``base_fingerprint`` from the run's config."""
    m: dict[str, Any] = {"dtype": "bfloat16"} if bf16 else {}
    m["rank"] = rank
    m["alpha"] = f32(alpha)
    m["scale"] = f32(f32(alpha) / rank)  # float / int: a float quotient
    m["base_fingerprint"] = base_fingerprint
    return m
