"""An independent, minimal writer of rwkv_lightning_cuda's single-file checkpoints (test helper).

Written from /work/shared/FORMATS.md §4 (and the layout of ``src/io/pth_writer.cpp`` it
describes), with :mod:`struct` and :mod:`zlib` only; it shares no code with
``rwkv_registry.pthwrite`` so the two can check each other. Layout:

- zip entries ``archive/data/0..n-1`` (raw little-endian bytes, stored, not aligned),
  ``archive/data.pkl``, ``archive/byteorder`` (``little``), ``archive/version`` (``3\\n``),
  then ``archive/miss.json`` when a manifest is given; no data descriptors, no zip64, no
  ``.format_version``/``.storage_alignment``/``.data/serialization_id``;
- pickle protocol 2 over a plain dict, no memo opcodes::

    PROTO 2  EMPTY_DICT  MARK
      ( BINUNICODE name  GLOBAL torch._utils _rebuild_tensor_v2
        MARK MARK 'storage' GLOBAL torch <X>Storage '<i>' 'cpu' numel TUPLE BINPERSID
             0  MARK dims TUPLE  MARK strides TUPLE  NEWFALSE  EMPTY_DICT TUPLE REDUCE )*
    SETITEMS STOP

Other test files use it to make files like the trainer does (``tests/`` is on ``sys.path``
under pytest)::

    from lightning_writer import write_lightning
    write_lightning(path, {"blocks.0.att.key.weight.D": torch_tensor}, miss_json=b"{...}")
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

STORAGE_OF = {"bfloat16": "BFloat16Storage", "float16": "HalfStorage", "float32": "FloatStorage"}
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


def _pint(v: int) -> bytes:
    """Integer opcode as the C++ writer picks it: BININT1, BININT2, else BININT."""
    if 0 <= v < 0x100:
        return struct.pack("<cB", b"K", v)
    if 0 <= v < 0x10000:
        return struct.pack("<cH", b"M", v)
    return struct.pack("<cI", b"J", v & 0xFFFFFFFF)


def _pstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<cI", b"X", len(b)) + b


def _pglobal(module: str, name: str) -> bytes:
    return b"c%s\n%s\n" % (module.encode(), name.encode())


def _as_spec(value: Any) -> tuple[str, tuple[int, ...], bytes]:
    """(dtype, shape, raw bytes) from a torch tensor or a (dtype, shape, bytes) triple."""
    if isinstance(value, tuple):
        dtype, shape, raw = value
        return dtype, tuple(shape), bytes(raw)
    import torch

    t = value.detach().contiguous().cpu()
    dtype = str(t.dtype).replace("torch.", "")
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
    return dtype, tuple(t.shape), raw


def lightning_pickle(specs: Sequence[tuple[str, str, tuple[int, ...]]]) -> bytes:
    """data.pkl for (name, dtype, shape) items, storage i for item i."""
    parts = [b"\x80\x02", b"}", b"("]
    for i, (name, dtype, shape) in enumerate(specs):
        numel = 1
        for d in shape:
            numel *= d
        strides = []
        acc = 1
        for d in shape[::-1]:
            strides.insert(0, acc)
            acc *= d
        parts += [
            _pstr(name),
            _pglobal("torch._utils", "_rebuild_tensor_v2"),
            b"((",
            _pstr("storage"),
            _pglobal("torch", STORAGE_OF[dtype]),
            _pstr(str(i)),
            _pstr("cpu"),
            _pint(numel),
            b"t",
            b"Q",
            _pint(0),
            b"(" + b"".join(map(_pint, shape)) + b"t",
            b"(" + b"".join(map(_pint, strides)) + b"t",
            b"\x89",
            b"}",
            b"t",
            b"R",
        ]
    parts += [b"u", b"."]
    return b"".join(parts)


def lightning_zip(entries: Iterable[tuple[str, bytes]]) -> bytes:
    """A stored zip in the trainer's style: version 20, no flags, zero timestamps, no extras."""
    body = bytearray()
    directory = bytearray()
    count = 0
    for name, data in entries:
        fname = name.encode()
        crc = zlib.crc32(data) & 0xFFFFFFFF
        at = len(body)
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(data), len(data), len(fname), 0)
        body += fname + data
        directory += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(fname),
            0, 0, 0, 0, 0, at,
        )  # fmt: skip
        directory += fname
        count += 1
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(directory), len(body), 0)
    return bytes(body + directory + end)


def lightning_bytes(
    tensors: Mapping[str, Any], miss_json: bytes | None = None, *, pickle: bytes | None = None
) -> bytes:
    """The whole file. ``pickle`` replaces the generated data.pkl (for hostile tests)."""
    specs = [(name, *_as_spec(v)) for name, v in tensors.items()]
    for name, dtype, shape, raw in specs:
        if dtype not in STORAGE_OF:
            raise ValueError(f"{name}: the trainer writes only bf16/fp16/fp32, not {dtype}")
        n = 1
        for d in shape:
            n *= d
        if len(raw) != n * ITEMSIZE[dtype]:
            raise ValueError(f"{name}: {len(raw)} bytes for shape {shape} {dtype}")
    entries = [(f"archive/data/{i}", raw) for i, (_, _, _, raw) in enumerate(specs)]
    entries.append(("archive/data.pkl", pickle if pickle is not None else lightning_pickle([s[:3] for s in specs])))
    entries.append(("archive/byteorder", b"little"))
    entries.append(("archive/version", b"3\n"))
    if miss_json is not None:
        entries.append(("archive/miss.json", miss_json))
    return lightning_zip(entries)


def write_lightning(path: str | Path, tensors: Mapping[str, Any], miss_json: bytes | None = None) -> Path:
    """Write a checkpoint like rwkv_lightning_cuda to ``path``; values are torch tensors or
    ``(dtype, shape, raw little-endian bytes)`` triples."""
    p = Path(path)
    p.write_bytes(lightning_bytes(tensors, miss_json))
    return p
