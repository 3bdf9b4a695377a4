"""The single-file adapter rwkv_miss_tune writes when training ends (test helper), ported from:

- ``src/miss/trainer.cpp`` (949bfa8) and ``src/bf16_training/trainer.cpp`` (43ceb30) ``Trainer::export_adapter``:
  ``m["rank"] = rank_; m["alpha"] = alpha_; m["scale"] = alpha_ / rank_; m["base_fingerprint"] = ...``
  (:func:`conformance.miss_adapter_cpp.export_input`), then ``save_adapter_pth(dir, m, targets_, data)``;
- ``src/miss/adapter.cpp`` (43ceb30) ``save_adapter_pth``: one ``WriteTensor{tensor_name(t), {t.out, t.rank},
  dtype != "bfloat16", data[t.offset, +out*rank]}`` with ``bf16 = dtype == "bfloat16"`` per target, then
  ``write_pth(path, write, json(adapter_manifest(m, ts, data)))``. The legacy fp16 form is the same with dtype
  float16 (the fp16 trainer sets no dtype: ``adapter_manifest`` makes it "float16").
"""

from __future__ import annotations

from typing import Any

from conformance.lightning_cpp import WriteTensor, json_compact, write_pth
from conformance.miss_adapter_cpp import HostTensor, adapter_manifest, tensor_name


def save_adapter_pth(m: dict[str, Any], ts: list[HostTensor], data: bytes) -> bytes:
    """The file ``save_adapter_pth(path, m, ts, data)`` writes; ``data`` is the 16-bit vector, little-endian."""
    bf16 = m.get("dtype") == "bfloat16"
    write = []
    for t in ts:
        n = t.out * t.rank
        if (t.offset + n) * 2 > len(data):
            raise ValueError("adapter data bounds")
        write.append(
            WriteTensor(tensor_name(t), [t.out, t.rank], not bf16, data[t.offset * 2 : (t.offset + n) * 2], bf16)
        )
    return write_pth(write, json_compact(adapter_manifest(m, ts, data)))
