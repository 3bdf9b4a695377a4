"""The legacy two-file package (test helper): ``adapter.json`` + ``adapter.pth`` in a directory, ported from
``src/miss/adapter.cpp`` (43ceb30) ``save_package(dir, m, ts, data)``, which rwkv_miss_tune's
``Trainer::export_adapter`` called before it wrote one file (``src/miss/trainer.cpp`` at fc45586):

the fixed fields and ``targets`` as ``adapter_manifest`` sets them, one ``WriteTensor`` per target as in
``save_adapter_pth``, ``m["content_version"] = content_version(m, data)``, ``write_pth(temp + "/adapter.pth",
write)`` (no manifest entry) and ``f << json(m) << '\\n'`` into ``adapter.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.lightning_cpp import WriteTensor, json_compact, write_pth
from conformance.miss_adapter_cpp import HostTensor, adapter_manifest, tensor_name


def save_package(directory: Path, m: dict[str, Any], ts: list[HostTensor], data: bytes) -> Path:
    """Write ``directory``/adapter.pth and adapter.json as save_package does; returns ``directory``."""
    manifest = adapter_manifest(m, ts, data)  # the same fields, targets and content_version, in that order
    bf16 = manifest["dtype"] == "bfloat16"
    write = [
        WriteTensor(
            tensor_name(t), [t.out, t.rank], not bf16, data[t.offset * 2 : (t.offset + t.out * t.rank) * 2], bf16
        )
        for t in ts
    ]
    directory.mkdir(parents=True)
    (directory / "adapter.pth").write_bytes(write_pth(write))
    (directory / "adapter.json").write_bytes((json_compact(manifest) + "\n").encode())
    return directory
