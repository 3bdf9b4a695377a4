"""State files byte for byte as the bf16 ``rwkv_state_tune`` writes them (test helper).

The bf16 trainer (Alic-Li/rwkv_lightning_cuda ``src/bf16_training/``, commit 43ceb306039f; its README: "State
exports (``state-step-*.pth``, ``state-final.pth``) contain BF16 ``blocks.N.att.time_state`` in ``[H,V,K]``
layout") writes a State through two functions, read whole:

- ``rwkv_bf16_training::save_state_checkpoint_pth_host(path, L, H, N, runtime)`` in
  ``src/bf16_training/model.cpp``: refuses ``L <= 0``, ``H <= 0``, ``N != 64`` or a runtime buffer of the wrong
  length ("state export dimensions"); per layer ``l`` a ``WriteTensor{"blocks.<l>.att.time_state", {H, N, N},
  fp16=false, bf16=true}`` whose data is, for each ``h, k, v``, the runtime value ``runtime[l*lane + (h*N + k)*N
  + v]`` (layout ``[H, K, V]``), refused when not finite ("nonfinite state export"), rounded by
  ``float_to_bf16_bits``, refused when the result is Inf/NaN ("BF16 state export overflow") and stored at
  ``((h*N + v)*N + k)*2`` (layout ``[H, V, K]``, little-endian ``memcpy``); then ``llm_infer::write_pth(path,
  ts)`` with no MiSS manifest;
- ``llm_infer::write_pth(path, tensors, miss_manifest)`` in ``src/io/pth_writer.cpp``: pickle ``{0x80, 2, '}',
  '('}``, per tensor ``i`` the record of :func:`lightning_prims.tensor_record` (``BFloat16Storage``, key
  ``str(i)``), ``'u'``, ``'.'``; the entries ``archive/data/0`` … ``archive/data/<n-1>``, ``archive/data.pkl``,
  ``archive/byteorder`` (``little``), ``archive/version`` (``3\\n``), and ``archive/miss.json`` only when a
  manifest is given (not for a State); ``write_zip`` to ``path + ".tmp"``, the self-check, ``rename``.

``llm_infer::float_to_bf16_bits`` (``src/io/pth_tensor.cpp``, commit 68daa7f958): the float's bits ``b``;
``b += 0x7fff + ((b >> 16) & 1)`` (uint32, round to nearest even); the top 16 bits.

File names: ``src/bf16_training/main.cpp`` ``checkpoint_name`` (``state-step-%08d.pth``) and ``state-final.pth``.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Sequence
from pathlib import Path

from lightning_prims import pickle_dict, tensor_record, write_zip


def float_to_bf16_bits(value: float) -> int:
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    lsb = (bits >> 16) & 1
    bits = (bits + 0x7FFF + lsb) & 0xFFFFFFFF
    return bits >> 16


def write_pth_bytes(tensors: Sequence[tuple[str, Sequence[int], bytes]]) -> bytes:
    """``write_pth``'s file for bf16 tensors ``(name, shape, raw little-endian bytes)`` and no manifest."""
    records = []
    entries = []
    for i, (name, shape, data) in enumerate(tensors):
        n = 1
        for d in shape:
            if d <= 0 or n > (2**31 - 1) // d:
                raise ValueError("invalid PTH shape")
            n *= d
        if len(data) != n * 2:
            raise ValueError("PTH data size mismatch")
        records.append(tensor_record(name, "BFloat16Storage", str(i), shape))
        entries.append((f"archive/data/{i}", data))
    entries.append(("archive/data.pkl", pickle_dict(records)))
    entries.append(("archive/byteorder", b"little"))
    entries.append(("archive/version", b"3\n"))
    return write_zip(entries)


def bf16_state_bytes(layers: int, heads: int, n: int, runtime: Sequence[float]) -> bytes:
    """The file ``save_state_checkpoint_pth_host`` writes for ``runtime`` (fp32 values, layout ``[L][H][K][V]``)."""
    lane = heads * n * n
    if layers <= 0 or heads <= 0 or n != 64 or len(runtime) != layers * lane:
        raise ValueError("state export dimensions")
    tensors = []
    for layer in range(layers):
        data = bytearray(lane * 2)
        for h in range(heads):
            for k in range(n):
                for v in range(n):
                    x = runtime[layer * lane + (h * n + k) * n + v]
                    if not math.isfinite(x):
                        raise ValueError("nonfinite state export")
                    bits = float_to_bf16_bits(x)
                    if bits & 0x7F80 == 0x7F80:
                        raise ValueError("BF16 state export overflow")
                    struct.pack_into("<H", data, ((h * n + v) * n + k) * 2, bits)
        tensors.append((f"blocks.{layer}.att.time_state", (heads, n, n), bytes(data)))
    return write_pth_bytes(tensors)


def write_bf16_state(
    directory: str | os.PathLike[str], layers: int, heads: int, n: int, runtime: Sequence[float], *, step: int | None
) -> Path:
    """``state-step-<step>.pth`` (``state-final.pth`` when ``step`` is None) in ``directory``, via ``.tmp``."""
    name = "state-final.pth" if step is None else f"state-step-{step:08d}.pth"
    target = Path(directory) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(str(target) + ".tmp")
    temporary.write_bytes(bf16_state_bytes(layers, heads, n, runtime))
    os.replace(temporary, target)
    return target
